"""The demo campaign (its organizer's sign-in, a new password at every run), ``mtcjudge demo`` /
``mtcjudge serve``, and the deployment files.

The demo always brings its own SQLite database (unless DATABASE_URL is set), so these tests use
temporary SQLite files whatever TEST_DATABASE_URL says.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import urllib.request
import wave
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from mtcjudge.campaigns import repository
from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.demo.setup import DEMO_ORGANIZER, DEMO_SLUG, DemoInfo, demo_collection, ensure_demo
from mtcjudge.errors import InvalidInput
from mtcjudge.ingest.formats import Runs
from mtcjudge.main import create_app
from mtcjudge.models import Campaign, Document
from tests.cli import run
from tests.servers import running_server
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN, sign_in


@pytest.fixture(autouse=True)
def _no_environment_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DATABASE_URL", "MTCJUDGE_BASE_URL", "MTCJUDGE_ORGANIZER_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'mtcjudge.sqlite3'}"


def stored(url: str) -> tuple[list[str], repository.CampaignCounts, dict[str, str | None]]:
    """Slugs of all campaigns, the demo's counts and its documents' audio paths."""
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            slugs = list(session.scalars(select(Campaign.slug)))
            campaign = repository.campaign_by_slug(session, DEMO_SLUG)
            assert campaign is not None
            counts = repository.campaign_counts(session, campaign.id)
            rows = session.execute(
                select(Document.external_id, Document.audio_path).where(
                    Document.campaign_id == campaign.id
                )
            )
            return slugs, counts, dict(rows.all())
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, DemoInfo]:
    directory = tmp_path_factory.mktemp("demo")
    return directory, ensure_demo(sqlite_url(directory), directory)


def test_the_demo_campaign_is_open_with_its_collection_audio_and_volunteers(
    demo: tuple[Path, DemoInfo],
) -> None:
    directory, info = demo
    assert info.created
    assert info.campaign_slug == DEMO_SLUG
    assert info.assessor_names == ["Volunteer 1", "Volunteer 2"]
    assert len(set(info.assessor_links)) == 2
    assert all(link.startswith("http://127.0.0.1:8000/a/") for link in info.assessor_links)
    assert "mtcjudge assessor invite demo " in info.organizer_hint
    assert "/api/campaigns/demo" in info.organizer_hint

    slugs, counts, audio = stored(sqlite_url(directory))
    assert slugs == ["demo"]
    assert (counts.systems, counts.queries, counts.assessors) == (6, 10, 2)
    assert counts.results == 6 * 10 * 5
    assert counts.judgments == counts.imported_judgments == 0  # the volunteers judge
    collection = demo_collection()
    assert len(set(collection.teams.values())) == 3
    # a clip for every query and every document of the runs, and for nothing else
    pool = set(collection.queries) | {
        doc for per_query in collection.runs.values() for docs in per_query.values() for doc in docs
    }
    assert set(audio) == pool
    assert info.audio_written == len(pool)
    assert sorted(p.name for p in (directory / "audio").iterdir()) == sorted(
        f"{doc}.wav" for doc in pool
    )
    for doc, path in audio.items():
        assert path == str((directory / "audio" / f"{doc}.wav").resolve())
    with wave.open(str(audio[collection.queries[0]]), "rb") as handle:
        assert handle.getnframes() == 8 * handle.getframerate()


def test_running_the_demo_again_reuses_everything_and_rewrites_only_missing_clips(
    demo: tuple[Path, DemoInfo],
) -> None:
    directory, first = demo
    url = sqlite_url(directory)
    before = stored(url)
    clips = directory / "audio"
    untouched = {p.name: p.stat().st_mtime_ns for p in clips.iterdir()}

    again = ensure_demo(url, directory)
    assert not again.created
    assert again.audio_written == 0
    # tokens are stored hashed: the same volunteers get new links, and the old ones stop working
    assert again.assessor_names == first.assessor_names
    assert len(set(again.assessor_links) | set(first.assessor_links)) == 4
    assert stored(url) == before
    assert {p.name: p.stat().st_mtime_ns for p in clips.iterdir()} == untouched

    lost = sorted(clips.iterdir())[3]
    lost.unlink()
    repaired = ensure_demo(url, directory)
    assert repaired.audio_written == 1
    assert lost.exists()
    assert stored(url) == before
    assert {p.name: p.stat().st_mtime_ns for p in clips.iterdir() if p != lost} == {
        name: mtime for name, mtime in untouched.items() if name != lost.name
    }


def test_a_moved_demo_points_its_documents_at_the_new_directory(
    demo: tuple[Path, DemoInfo], tmp_path: Path
) -> None:
    directory, first = demo
    moved = tmp_path / "moved"
    shutil.copytree(directory, moved)
    info = ensure_demo(sqlite_url(moved), moved)
    assert info.assessor_names == first.assessor_names
    _, _, audio = stored(sqlite_url(moved))
    assert all(
        path is not None and path.startswith(str(moved.resolve())) for path in audio.values()
    )


def test_a_real_campaign_called_demo_is_left_alone(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            runs = Runs({"S1": {"q": ["a", "b"]}, "S2": {"q": ["b", "a"]}}, "tsv")
            create_campaign(session, CampaignSpec(name="Mine", slug="demo", k=2), runs)
    finally:
        engine.dispose()
    with pytest.raises(InvalidInput, match="is not the demo"):
        ensure_demo(url, tmp_path)
    assert list((tmp_path / "audio").iterdir()) == []


def test_the_demo_organizer_signs_in_with_the_printed_password(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    first = ensure_demo(url, tmp_path)
    assert first.organizer_username == DEMO_ORGANIZER == "organizer"
    assert len(first.organizer_password) >= 16
    login_line = first.organizer_hint.splitlines()[0]
    assert login_line == (
        "Sign in at http://127.0.0.1:8000/login with username organizer and password "
        f"{first.organizer_password} (a new password at every run of the demo)."
    )
    settings = Settings(database_url=url, run_planner=False, login_failure_delay=0.0)
    with TestClient(create_app(settings)) as client:
        assert sign_in(client, DEMO_ORGANIZER, first.organizer_password).status_code == 303
        landing = client.get("/")
        assert "Demo: synthetic music similarity" in landing.text
        assert "mtcjudge demo" in landing.text  # the audit log names who created it

        second = ensure_demo(url, tmp_path)
        assert second.organizer_password != first.organizer_password
        # the new password ended the old sessions
        assert client.get("/api/campaigns").status_code == 401
        other = TestClient(create_app(settings))
        assert sign_in(other, DEMO_ORGANIZER, first.organizer_password).status_code == 401
        assert sign_in(other, DEMO_ORGANIZER, second.organizer_password).status_code == 303


def test_mtcjudge_demo_no_serve_prints_the_links_and_can_run_again(tmp_path: Path) -> None:
    directory = tmp_path / "demo"
    code, out, err = run("demo", "--data-dir", str(directory), "--no-serve", "--port", "8123")
    assert code == 0, err
    assert "created campaign 'demo'" in out
    links = [line.split()[-1] for line in out.splitlines() if "/a/" in line]
    assert len(links) == 2
    assert all(link.startswith("http://127.0.0.1:8123/a/") for link in links)
    assert "mtcjudge assessor invite demo " in out
    assert f"--database-url sqlite:///{directory.resolve()}/mtcjudge.sqlite3" in out
    assert (directory / "mtcjudge.sqlite3").exists()
    # the server is started with 'serve' on this database: 'demo' again would change the links
    start = out.splitlines()[-1]
    assert start.startswith("start the server with: mtcjudge serve --database-url sqlite:///")
    assert start.endswith("--host 127.0.0.1 --port 8123")

    code, again, err = run("demo", "--data-dir", str(directory), "--no-serve", "--port", "8123")
    assert code == 0, err
    assert "reused campaign 'demo'" in again
    # the same two volunteers, with new links (their tokens are stored hashed)
    new_links = [line.split()[-1] for line in again.splitlines() if "/a/" in line]
    assert len(new_links) == 2
    assert not set(new_links) & set(links)


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        yield other.getsockname()[1]


def test_serve_on_a_taken_port_exits_2_and_says_so(taken_port: int, tmp_path: Path) -> None:
    code, _, err = run("serve", "--port", str(taken_port), "--database-url", sqlite_url(tmp_path))
    assert code == 2
    assert f"port {taken_port} on 127.0.0.1 is already in use" in err
    assert "--port" in err
    assert not (tmp_path / "mtcjudge.sqlite3").exists()  # it failed before any work


def test_demo_on_a_taken_port_exits_2_before_setting_anything_up(
    taken_port: int, tmp_path: Path
) -> None:
    code, out, err = run("demo", "--data-dir", str(tmp_path / "demo"), "--port", str(taken_port))
    assert code == 2
    assert "already in use" in err
    assert out == ""
    assert not (tmp_path / "demo").exists()


def test_serve_migrates_and_answers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env["MTCJUDGE_ORGANIZER_TOKEN"] = ORGANIZER_TOKEN
    log = tmp_path / "serve.log"
    with running_server(sqlite_url(tmp_path), log, env=env, timeout=20) as server:
        with urllib.request.urlopen(f"{server.url}/healthz", timeout=1) as r:
            assert r.status == 200
        request = urllib.request.Request(f"{server.url}/api/campaigns", headers=ORGANIZER_HEADERS)
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.status == 200  # the schema is there: migrations ran


# ---------------------------------------------------------------- deployment files
ROOT = Path(__file__).resolve().parents[2]


def test_docker_compose_runs_postgres_and_the_app() -> None:
    # Docker is not available to the tests: check the structure the deployment relies on.
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (not a dependency)")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    db, app = compose["services"]["db"], compose["services"]["app"]

    assert db["image"] == "postgres:16"
    assert any(v.endswith(":/var/lib/postgresql/data") for v in db["volumes"])
    volume = db["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]
    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert {"POSTGRES_DB", "POSTGRES_USER", "POSTGRES_PASSWORD"} <= set(db["environment"])

    assert app["build"] == "."
    assert app["depends_on"]["db"]["condition"] == "service_healthy"
    env = app["environment"]
    assert env["DATABASE_URL"].startswith("postgresql+psycopg://mtcjudge:")
    assert env["DATABASE_URL"].endswith("@db:5432/mtcjudge")
    assert {"MTCJUDGE_ORGANIZER_TOKEN", "MTCJUDGE_BASE_URL"} <= set(env)
    audio = [v for v in app["volumes"] if ":/audio" in v]
    assert len(audio) == 1
    assert audio[0].endswith(":ro")
    assert any(str(p).endswith(":8000") for p in app["ports"])
    assert "/healthz" in " ".join(app["healthcheck"]["test"])


def test_the_image_copies_what_exists_and_runs_serve_as_a_non_root_user() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    lines = [line.strip() for line in dockerfile.splitlines()]
    assert lines[[line.startswith("FROM") for line in lines].index(True)] == (
        "FROM python:3.11-slim"
    )
    copies = [line.split()[1:-1] for line in lines if line.startswith("COPY")]
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for sources in copies:
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
            assert source not in ignored, f".dockerignore leaves {source} out of the context"
    # every folder setup.py maps into the package (templates, static, migrations, docs) is in
    # the image, or its editable install lacks it
    folders = re.search(r"for folder in \(([^)]*)\)", (ROOT / "setup.py").read_text())
    assert folders, "setup.py no longer lists the folders it maps"
    mapped = re.findall(r'"(\w+)"', folders.group(1))
    copied = {source for sources in copies for source in sources}
    assert {"templates", "static", "migrations", "docs"} <= set(mapped)
    assert set(mapped) <= copied, f"the Dockerfile does not copy {set(mapped) - copied}"
    user = [line.split()[1] for line in lines if line.startswith("USER")]
    assert user
    assert user[-1] not in ("root", "0")
    cmd = next(line for line in lines if line.startswith("CMD"))
    assert '"serve", "--host", "0.0.0.0"' in cmd

    entrypoint = ROOT / "docker" / "entrypoint.sh"
    assert os.access(entrypoint, os.X_OK)
    subprocess.run(["sh", "-n", str(entrypoint)], check=True)  # syntax
    script = entrypoint.read_text()
    assert "upgrade_database" in script
    assert script.rstrip().endswith('exec "$@"')
