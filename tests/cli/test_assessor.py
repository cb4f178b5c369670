"""Assessor links printed by the command line point at the server, as the API's do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.cli import run

TOKEN = r"/a/[A-Za-z0-9_-]{32}"


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("MTCJUDGE_BASE_URL", raising=False)
    runs = tmp_path / "runs.tsv"
    runs.write_text("S1\tq1\td1\nS2\tq1\td2\n")
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    create = ["campaign", "create", "--name", "AMS", "--runs", str(runs), "--database-url", url]
    assert run(*create)[0] == 0
    return url


def test_invite_and_relink_use_the_given_base_url(database: str) -> None:
    code, out, err = run(
        "assessor", "invite", "ams", "--name", "Ada",
        "--base-url", "http://127.0.0.1:18901/", "--database-url", database,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert re.fullmatch(r"http://127\.0\.0\.1:18901" + TOKEN, out.splitlines()[-1])
    code, out, err = run(
        "assessor", "relink", "ams", "--name", "Ada",
        "--base-url", "https://judge.example.org", "--database-url", database,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert re.fullmatch(r"https://judge\.example\.org" + TOKEN, out.splitlines()[-1])


def test_the_environment_gives_the_base_url_as_it_does_to_the_server(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "http://127.0.0.1:18901")
    code, out, err = run("assessor", "invite", "ams", "--name", "Ada", "--database-url", database)
    assert (code, err) == (0, "")
    assert re.fullmatch(r"http://127\.0\.0\.1:18901" + TOKEN, out.splitlines()[-1])


def test_without_a_base_url_the_default_address_is_not_assumed_silently(database: str) -> None:
    code, out, err = run("assessor", "invite", "ams", "--name", "Ada", "--database-url", database)
    assert code == 0
    assert re.fullmatch(r"http://127\.0\.0\.1:8000" + TOKEN, out.splitlines()[-1])
    assert err.startswith("mtcjudge: note: the link assumes the server is at http://127.0.0.1:8000")
    assert "--base-url" in err


def test_a_base_url_must_be_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run("assessor", "invite", "a", "--name", "b", "--base-url", "18901")
    assert exit_info.value.code == 2
    assert "expected an address such as https://judge.example.org" in capsys.readouterr().err


def test_the_demo_tells_how_to_invite_with_its_own_address(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("MTCJUDGE_BASE_URL", raising=False)
    directory = tmp_path / "demo"
    code, out, err = run("demo", "--data-dir", str(directory), "--no-serve", "--port", "18901")
    assert code == 0, err
    hint = next(line for line in out.splitlines() if "mtcjudge assessor invite" in line)
    command = hint.split("Invite more assessors: ", 1)[1]
    assert "--base-url http://127.0.0.1:18901" in command
    invite = re.findall(r'"[^"]*"|\S+', command)[2:]  # drop "mtcjudge assessor"
    code, out, err = run("assessor", *[arg.strip('"') for arg in invite])
    assert (code, err) == (0, "")
    assert re.fullmatch(r"http://127\.0\.0\.1:18901" + TOKEN, out.splitlines()[-1])
