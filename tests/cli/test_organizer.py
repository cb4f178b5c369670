"""``mtcjudge organizer create|list|passwd|disable|enable``: exit statuses and messages."""

from __future__ import annotations

import io

import pytest
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.cli import main
from mtcjudge.organizers import service as organizers
from tests.cli import run
from tests.support import PASSWORD


@pytest.fixture
def database(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("MTCJUDGE_BASE_URL", raising=False)
    return empty_database_url


def with_stdin(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))


def answers(monkeypatch: pytest.MonkeyPatch, *typed: str) -> list[str]:
    """Make the terminal prompts answer ``typed`` in turn; returns the prompts shown."""
    prompts: list[str] = []
    replies = iter(typed)

    def getpass(prompt: str = "Password: ") -> str:
        prompts.append(prompt)
        try:
            return next(replies)
        except StopIteration:
            raise EOFError from None

    monkeypatch.setattr("getpass.getpass", getpass)
    return prompts


def test_create_asks_twice_and_the_account_signs_in(
    database: str, monkeypatch: pytest.MonkeyPatch, read_session: sessionmaker[Session]
) -> None:
    prompts = answers(monkeypatch, PASSWORD, PASSWORD)
    code, out, err = run("organizer", "create", "Ada", "--database-url", database)
    assert (code, err) == (0, "")
    assert prompts == ["Password: ", "Repeat the password: "]
    assert out == "created organizer ada: sign in at http://127.0.0.1:8000/login\n"
    assert PASSWORD not in out
    with read_session() as session:
        assert organizers.authenticate(session, "ada", PASSWORD) is not None


def test_create_reads_standard_input(
    database: str, monkeypatch: pytest.MonkeyPatch, read_session: sessionmaker[Session]
) -> None:
    with_stdin(monkeypatch, PASSWORD + "\r\nignored\n")
    code, _out, err = run(
        "organizer", "create", "ada", "--password-stdin", "--database-url", database
    )
    assert (code, err) == (0, "")
    with read_session() as session:
        assert organizers.authenticate(session, "ada", PASSWORD) is not None


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ((PASSWORD, PASSWORD + "!"), "the two passwords differ; nothing was changed"),
        (("short", "short"), "the password must have at least 10 characters, found 5"),
        ((), "no password given: type it when asked, or give it on standard input"),
    ],
)
def test_create_refuses_bad_passwords_with_status_2(
    database: str,
    monkeypatch: pytest.MonkeyPatch,
    read_session: sessionmaker[Session],
    typed: tuple[str, ...],
    message: str,
) -> None:
    answers(monkeypatch, *typed)
    code, out, err = run("organizer", "create", "ada", "--database-url", database)
    assert (code, out) == (2, "")
    assert err.startswith(f"mtcjudge: error: {message}")


def test_create_refuses_empty_standard_input(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_stdin(monkeypatch, "")
    code, _out, err = run(
        "organizer", "create", "ada", "--password-stdin", "--database-url", database
    )
    assert code == 2
    assert err == "mtcjudge: error: --password-stdin: standard input holds no password\n"


def test_create_refuses_a_taken_or_bad_name(database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with_stdin(monkeypatch, PASSWORD + "\n")
    assert run("organizer", "create", "ada", "--password-stdin", "--database-url", database)[0] == 0
    with_stdin(monkeypatch, PASSWORD + "\n")
    code, out, err = run(
        "organizer", "create", "ADA", "--password-stdin", "--database-url", database
    )
    assert (code, out, err) == (2, "", "mtcjudge: error: the username 'ada' is taken\n")
    prompts = answers(monkeypatch, PASSWORD, PASSWORD)
    code, _out, err = run("organizer", "create", "ada lovelace", "--database-url", database)
    assert code == 2
    assert "lowercase letters, digits and . _ @ -" in err
    assert prompts == []  # refused before asking for a password


def test_a_bad_database_is_status_2(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    prompts = answers(monkeypatch, PASSWORD, PASSWORD)
    code, _out, err = run("organizer", "create", "ada", "--database-url", "mysql+nope://x/y")
    assert code == 2
    assert err.startswith("mtcjudge: error: --database-url:")
    assert prompts == []  # refused before asking for a password
    with_stdin(monkeypatch, PASSWORD + "\n")
    code, _out, err = run(
        "organizer", "create", "ada", "--password-stdin",
        "--database-url", "postgresql+psycopg://postgres@127.0.0.1:1/x",
    )  # fmt: skip
    assert code == 2
    assert err.startswith("mtcjudge: error: database postgresql+psycopg://postgres@127.0.0.1:1/x")
    code, _out, err = run("organizer", "list", "--database-url", f"sqlite:///{tmp_path}/none.db")
    assert code == 2
    assert "no database at" in err


def test_list_passwd_disable_enable(
    database: str, monkeypatch: pytest.MonkeyPatch, read_session: sessionmaker[Session]
) -> None:
    db = ["--database-url", database]
    for name in ("bob", "ada"):
        with_stdin(monkeypatch, PASSWORD + "\n")
        assert run("organizer", "create", name, "--password-stdin", *db)[0] == 0
    with read_session() as session:
        organizer = organizers.authenticate(session, "ada", PASSWORD)
        assert organizer is not None
        from datetime import timedelta

        organizers.start_session(session, organizer, timedelta(hours=1))
        session.commit()
    code, out, err = run("organizer", "list", *db)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == ["USERNAME", "STATE", "SESSIONS", "CREATED"]
    assert lines[1].split()[:3] == ["ada", "active", "1"]
    assert lines[2].split()[:3] == ["bob", "active", "0"]

    with_stdin(monkeypatch, "a new long password\n")
    code, out, err = run("organizer", "passwd", "ada", "--password-stdin", *db)
    assert (code, out, err) == (0, "new password for ada; signed out of 1 session\n", "")
    with read_session() as session:
        assert organizers.authenticate(session, "ada", PASSWORD) is None
        assert organizers.authenticate(session, "ada", "a new long password") is not None

    assert run("organizer", "disable", "ada", *db)[1] == (
        "ada can no longer sign in (signed out everywhere)\n"
    )
    assert run("organizer", "disable", "ada", *db)[1] == "ada was already disabled\n"
    assert run("organizer", "list", *db)[1].splitlines()[1].split()[:2] == ["ada", "disabled"]
    with read_session() as session:
        assert organizers.authenticate(session, "ada", "a new long password") is None
    assert run("organizer", "enable", "ada", *db)[1] == "ada can sign in again\n"
    assert run("organizer", "enable", "ada", *db)[1] == "ada was already enabled\n"

    code, out, err = run("organizer", "disable", "zed", *db)
    assert (code, out, err) == (2, "", "mtcjudge: error: no organizer 'zed'\n")
    with_stdin(monkeypatch, PASSWORD + "\n")
    assert run("organizer", "passwd", "zed", "--password-stdin", *db)[0] == 2


def test_list_without_organizers(database: str, read_session: sessionmaker[Session]) -> None:
    from mtcjudge.db import upgrade_database

    upgrade_database(database)
    code, out, _err = run("organizer", "list", "--database-url", database)
    assert (code, out) == (
        0,
        "no organizers yet: create one with mtcjudge organizer create USERNAME\n",
    )


def test_the_help_lists_the_organizer_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["organizer", "--help"])
    shown = capsys.readouterr().out
    for action in ("create", "list", "passwd", "disable", "enable"):
        assert action in shown
