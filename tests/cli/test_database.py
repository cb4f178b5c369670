"""Which database a command works on: a mistyped one is exit status 2, and nothing is created."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import pytest

from tests.cli import run

NEEDS_A_DATABASE = [
    ["campaign", "list"],
    ["campaign", "status", "ams"],
    ["campaign", "open", "ams"],
    ["campaign", "close", "ams"],
    ["campaign", "set", "ams", "--target", "0.9"],
    ["assessor", "list", "ams"],
    ["assessor", "invite", "ams", "--name", "Ada"],
    ["assessor", "relink", "ams", "--name", "Ada"],
    ["assessor", "revoke", "ams", "--name", "Ada"],
]
IDS = [" ".join(argv[:2]) for argv in NEEDS_A_DATABASE]


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "https://judge.example.org")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    path = tmp_path / "runs.tsv"
    path.write_text("S1\tq1\td1\nS2\tq1\td2\n")
    return path


@pytest.mark.parametrize("argv", NEEDS_A_DATABASE, ids=IDS)
def test_a_missing_sqlite_file_is_an_error_and_is_not_created(
    argv: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "typo" / "mtcjudge.sqlite3"
    code, out, err = run(*argv, "--database-url", f"sqlite:///{path}")
    assert (code, out) == (2, "")
    assert err == (
        f"mtcjudge: error: --database-url: no database at {path}: check the path, or create "
        "a campaign first with 'mtcjudge campaign create'\n"
    )
    assert not (tmp_path / "typo").exists()


def test_the_default_database_is_not_created_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = run("campaign", "list")
    assert code == 2
    assert err.startswith("mtcjudge: error: the default database: no database at ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", NEEDS_A_DATABASE[:2], ids=IDS[:2])
def test_a_database_mtcjudge_never_set_up_is_left_alone(argv: list[str], tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite3"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    code, _, err = run(*argv, "--database-url", f"sqlite:///{path}")
    assert code == 2
    assert "holds no mtcjudge database" in err
    with sqlite3.connect(path) as connection:
        tables = connection.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
    connection.close()
    assert tables == [("notes",)]


def test_an_empty_mtcjudge_database_has_no_campaigns(runs: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    assert (
        run("campaign", "create", "--name", "x", "--runs", str(runs), "--database-url", url)[0] == 0
    )
    code, out, _ = run("campaign", "list", "--database-url", url)
    assert code == 0
    assert out.splitlines()[1].startswith("x ")


@pytest.mark.parametrize(
    ("url", "found"),
    [("garbage://x", "an unknown kind of database 'garbage'"), ("not a url", "no URL")],
    ids=["unknown-kind", "not-a-url"],
)
@pytest.mark.parametrize(
    "argv",
    [["campaign", "list"], ["campaign", "create", "--name", "x", "--runs", "RUNS"], ["serve"]],
    ids=["list", "create", "serve"],
)
def test_an_unusable_url_is_one_line_and_exit_2(
    argv: list[str], url: str, found: str, runs: Path
) -> None:
    argv = [str(runs) if a == "RUNS" else a for a in argv]
    code, out, err = run(*argv, "--database-url", url)
    assert (code, out) == (2, "")
    assert err == (
        "mtcjudge: error: --database-url: expected sqlite:///PATH or "
        f"postgresql+psycopg://USER:PASSWORD@HOST:PORT/NAME, found {found}\n"
    )


def test_an_unusable_database_url_in_the_environment_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", "garbage://x")
    code, _, err = run("campaign", "list")
    assert code == 2
    assert err.startswith("mtcjudge: error: DATABASE_URL: expected sqlite:///PATH")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once the probe is closed


@pytest.mark.parametrize(
    "argv",
    [["campaign", "list"], ["campaign", "create", "--name", "x", "--runs", "RUNS"]],
    ids=["list", "create"],
)
def test_a_refused_postgres_connection_is_one_line_and_exit_2(argv: list[str], runs: Path) -> None:
    pytest.importorskip("psycopg")
    argv = [str(runs) if a == "RUNS" else a for a in argv]
    url = f"postgresql+psycopg://mtcjudge:secret@127.0.0.1:{_closed_port()}/mtcjudge"
    code, out, err = run(*argv, "--database-url", url)
    assert (code, out) == (2, "")
    assert err.startswith("mtcjudge: error: database postgresql+psycopg://mtcjudge:***@127.0.0.1")
    assert "refused" in err.lower()
    assert err.count("\n") == 1
    assert "secret" not in err
