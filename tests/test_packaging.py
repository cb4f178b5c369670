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
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port, start_server

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment: about 15 s

REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE = REPO_ROOT / "app"  # the source folder of the import package mtcjudge
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
    bin_dir = _new_venv(tmp_path_factory)
    env = _clean_environment()
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            bin_dir / "python",
            "install",
            "--no-deps",
            "-q",
            wheel,
        ],
        cwd=bin_dir,
        env=env,
    )
    return bin_dir


def _new_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a new venv that borrows this venv's dependencies."""
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


RESOURCES = ("templates", "static", "migrations", "docs")


def test_the_wheel_carries_templates_static_files_migrations_and_docs(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "mtcjudge/_resources/docs/reuse.md" in names
    for folder in RESOURCES:
        in_checkout = {
            path.relative_to(REPO_ROOT).as_posix()
            for path in (REPO_ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert in_checkout
        assert {f"mtcjudge/_resources/{name}" for name in in_checkout} <= names
    assert not [name for name in names if name.endswith(".pyc")]
    # nothing else: no module deleted since an earlier build
    resources = tuple(f"mtcjudge/_resources/{folder}/" for folder in RESOURCES)
    modules = {
        name for name in names if name.startswith("mtcjudge/") and not name.startswith(resources)
    }
    assert modules == {
        path.relative_to(SOURCE).as_posix() for path in (SOURCE / "mtcjudge").rglob("*.py")
    }


def test_the_wheel_adds_one_top_level_name(wheel: Path) -> None:
    """Only ``mtcjudge`` (and its metadata) lands in site-packages: nothing generic like ``app``."""
    with zipfile.ZipFile(wheel) as archive:
        top = {name.split("/", 1)[0] for name in archive.namelist()}
    (metadata,) = [name for name in top if name.endswith(".dist-info")]
    assert top == {"mtcjudge", metadata}
    assert metadata.startswith("mtcjudge-")


def test_another_package_named_app_leaves_mtcjudge_working(
    wheel: Path, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """A distribution shipping its own top-level ``app`` package, installed beside the wheel
    (before and after it), and a working directory with an ``app/`` folder of its own, change
    nothing: ``mtcjudge --version`` and the demo run."""
    other_wheel = _wheel_with_an_app_package(tmp_path_factory.mktemp("other-dist"))
    bin_dir = _new_venv(tmp_path_factory)
    python = bin_dir / "python"
    env = _clean_environment()
    for package in (other_wheel, wheel):
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                python,
                "install",
                "--no-deps",
                "-q",
                package,
            ],
            cwd=tmp_path,
            env=env,
        )
    workdir = tmp_path / "notebook"
    (workdir / "app").mkdir(parents=True)
    (workdir / "app" / "__init__.py").write_text("")
    (workdir / "app" / "config.py").write_text("")
    assert _run([bin_dir / "mtcjudge", "--version"], cwd=workdir, env=env).startswith("mtcjudge ")
    located = _run(
        [python, "-c", "import mtcjudge.config, app.config; print(app.config.__file__)"],
        cwd=workdir,
        env=env,
    )
    assert Path(located.strip()).parent == workdir / "app"
    setup = _run(
        [bin_dir / "mtcjudge", "demo", "--no-serve", "--data-dir", "demo", "--port", "8765"],
        cwd=workdir,
        env=env,
    )
    assert re.findall(r"http://127\.0\.0\.1:8765/a/\S+", setup), setup
    # uninstalling the other package leaves every file of mtcjudge in place
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            python,
            "uninstall",
            "-y",
            "-q",
            "someone-elses-app",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert _run([python, "-m", "mtcjudge", "--version"], cwd=tmp_path, env=env).startswith(
        "mtcjudge "
    )


def _wheel_with_an_app_package(folder: Path) -> Path:
    """A minimal wheel of another distribution whose one package is a top-level ``app``."""
    dist_info = "someone_elses_app-1.0.dist-info"
    files = {
        "app/__init__.py": '"""Somebody else\'s app."""\n',
        "app/config.py": "SETTING = 1\n",
        "app/main.py": "",
        f"{dist_info}/METADATA": "Metadata-Version: 2.1\nName: someone-elses-app\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in files) + f"{dist_info}/RECORD,,\n"
    path = folder / "someone_elses_app-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in {**files, f"{dist_info}/RECORD": record}.items():
            archive.writestr(name, text)
    return path


def test_the_installed_package_serves_the_demo_from_any_directory(
    installed: Path, tmp_path: Path
) -> None:
    env = _clean_environment()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    located = _run(
        [installed / "python", "-c", "import mtcjudge; print(mtcjudge.__file__)"],
        cwd=elsewhere,
        env=env,
    )
    assert Path(located.strip()).is_relative_to(installed.parent), "the checkout was imported"

    port = free_port()
    setup = _run(
        [installed / "mtcjudge", "demo", "--no-serve", "--data-dir", "demo", "--port", str(port)],
        cwd=elsewhere,
        env=env,
    )
    links = re.findall(rf"http://127\.0\.0\.1:{port}/a/\S+", setup)
    assert links, setup
    database_url = f"sqlite:///{elsewhere / 'demo' / 'mtcjudge.sqlite3'}"

    log = tmp_path / "serve.log"
    server = start_server(
        database_url, log, port=port, program=[installed / "mtcjudge"], env=env, cwd=elsewhere
    )
    try:
        server.wait_ready()
        with httpx.Client(timeout=5) as client:
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
        server.stop(grace=30)
    assert "Traceback" not in log.read_text(), log.read_text()


def test_the_installed_help_links_installed_docs_and_bench_says_where_it_is(
    installed: Path, tmp_path: Path
) -> None:
    env = {**_clean_environment(), "COLUMNS": "200"}
    page = Path(_run([installed / "mtcjudge", "docs", "reuse"], cwd=tmp_path, env=env).strip())
    assert page.is_relative_to(installed.parent), "the checkout's docs were used"
    assert page.read_bytes() == (REPO_ROOT / "docs" / "reuse.md").read_bytes()
    text = _run([installed / "mtcjudge", "campaign", "add-runs", "--help"], cwd=tmp_path, env=env)
    assert page.as_uri() in text
    assert "https://github.com/mtcjudge/mtcjudge/blob/main/docs/reuse.md" in text

    bench = subprocess.run(
        [installed / "mtcjudge", "bench", "engine"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (bench.returncode, bench.stdout) == (2, "")
    assert bench.stderr.startswith("mtcjudge: error: bench engine: no bench/ folder")
    assert "git clone https://github.com/mtcjudge/mtcjudge" in bench.stderr
