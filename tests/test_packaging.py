"""The wheel is a working program on its own.

Built from this checkout, installed into a new virtual environment and run from an empty
directory, ``mtcjudge demo`` migrates its database and ``mtcjudge serve`` serves the pages and
their static files: templates, static files and migrations all come from inside the installed
package, not from the checkout. The new environment borrows the dependencies of the one running
the tests (a ``.pth`` file) so that nothing is downloaded.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment: about 15 s

REPO_ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis")


def _run(command: list[str | Path], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Built from a copy: setuptools builds in the source folder and never empties build/lib,
    # so a module deleted since an earlier build would still end up in the wheel.
    source = tmp_path_factory.mktemp("source") / "mtcjudge"
    shutil.copytree(REPO_ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    dist = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", dist, "."],
        cwd=source,
        env=dict(os.environ),
    )
    (built,) = dist.glob("mtcjudge-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a new venv holding the wheel (and this venv's dependencies)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path line: the dependencies are importable, but the .pth files over there (the
    # editable install's finder of this checkout) are not run.
    Path(purelib, "borrowed_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    env = _clean_environment()
    _run(
        [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "-q", wheel],
        cwd=venv,
        env=env,
    )
    return venv / "bin"


def _clean_environment() -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PYTHONPATH", "DATABASE_URL", "VIRTUAL_ENV")
        and not name.startswith("MTCJUDGE_")
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_the_wheel_carries_templates_static_files_and_migrations(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    for folder in ("templates", "static", "migrations"):
        in_checkout = {
            path.relative_to(REPO_ROOT).as_posix()
            for path in (REPO_ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert in_checkout
        assert {f"app/_resources/{name}" for name in in_checkout} <= names
    assert not [name for name in names if name.endswith(".pyc")]
    # nothing else: no module deleted since an earlier build
    resources = tuple(
        f"app/_resources/{folder}/" for folder in ("templates", "static", "migrations")
    )
    modules = {name for name in names if name.startswith("app/") and not name.startswith(resources)}
    assert modules == {
        path.relative_to(REPO_ROOT).as_posix() for path in (REPO_ROOT / "app").rglob("*.py")
    }


def test_the_installed_package_serves_the_demo_from_any_directory(
    installed: Path, tmp_path: Path
) -> None:
    env = _clean_environment()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    located = _run(
        [installed / "python", "-c", "import app; print(app.__file__)"], cwd=elsewhere, env=env
    )
    assert Path(located.strip()).is_relative_to(installed.parent), "the checkout was imported"

    port = _free_port()
    setup = _run(
        [installed / "mtcjudge", "demo", "--no-serve", "--data-dir", "demo", "--port", str(port)],
        cwd=elsewhere,
        env=env,
    )
    links = re.findall(rf"http://127\.0\.0\.1:{port}/a/\S+", setup)
    assert links, setup
    database_url = f"sqlite:///{elsewhere / 'demo' / 'mtcjudge.sqlite3'}"

    log = tmp_path / "serve.log"
    with log.open("w") as output:
        server = subprocess.Popen(
            [installed / "mtcjudge", "serve", "--port", str(port), "--database-url", database_url],
            cwd=elsewhere,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        with httpx.Client(timeout=5) as client:
            _wait_until_ready(client, f"http://127.0.0.1:{port}/healthz", server, log)
            page = client.get(links[0])
            assert page.status_code == 200
            assert "Welcome, Volunteer 1" in page.text
            stylesheets = re.findall(r'href="([^"]+\.css)"', page.text)
            assert stylesheets, page.text
            css = client.get(httpx.URL(links[0]).join(stylesheets[0]))
            assert css.status_code == 200
            assert css.headers["content-type"].startswith("text/css")
            assert css.content == (REPO_ROOT / "static" / "css" / "app.css").read_bytes()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert "Traceback" not in log.read_text(), log.read_text()


def _wait_until_ready(
    client: httpx.Client, url: str, server: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"mtcjudge serve exited ({server.returncode}):\n{log.read_text()}")
        try:
            if client.get(url).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail("mtcjudge serve did not answer within 60 s")
