"""mtcjudge campaign create|list|open|close and mtcjudge assessor invite|list (SQLite files)."""

from __future__ import annotations

import re
import sqlite3
import wave
from pathlib import Path

import pytest

from tests.cli import run

BASE_URL = "https://judge.example.org"


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTCJUDGE_BASE_URL", BASE_URL)
    monkeypatch.delenv("DATABASE_URL", raising=False)


@pytest.fixture
def database(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'fresh' / 'mtcjudge.sqlite3'}"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    runs = tmp_path / "runs.tsv"
    lines = [
        f"S{s}\tq{q}\td{(q * 7 + s * 3 + r) % 30}"
        for s in (1, 2, 3)
        for q in (1, 2)
        for r in range(5)
    ]
    runs.write_text("\n".join(lines) + "\n")
    metadata = tmp_path / "metadata.tsv"
    metadata.write_text("doc\tartist\tgenre\nq1\tA1\tG1\nd1\tA2\tG2\n")
    fine = tmp_path / "fine.tsv"
    fine.write_text("q1\td1\t50\nq1\td1\t70\n")
    return {"runs": runs, "metadata": metadata, "fine": fine}


def campaign_rows(database: str) -> list[tuple[str, str]]:
    path = database.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT slug, status FROM campaign ORDER BY id").fetchall()


def test_create_list_open_close_invite(files: dict[str, Path], database: str) -> None:
    code, out, err = run(
        "campaign", "create", "--name", "AMS 2011", "--runs", str(files["runs"]),
        "--metadata", str(files["metadata"]), "--judgments", str(files["fine"]),
        "--k", "3", "--target", "0.9", "--model", "uniform", "--database-url", database,
    )  # fmt: skip
    assert code == 0, err
    assert "created campaign ams-2011 (draft): AMS 2011" in out
    assert "systems x queries   3 x 2" in out
    assert "results             30" in out
    assert "imported judgments  1" in out
    # without audio no pair can be played: said at creation, and opening needs a confirmation
    assert "audio               none (no --audio directory)" in out
    assert re.search(r"cannot be judged\s+all \d+ pool pairs: without audio no pair", out)
    assert "mtcjudge campaign open ams-2011 --confirm-unplayable" in out
    assert campaign_rows(database) == [("ams-2011", "draft")]

    code, out, _ = run("campaign", "list", "--database-url", database)
    assert code == 0
    assert re.search(r"ams-2011\s+draft\s+fine\s+3\s+AMS 2011", out)

    code, out, err = run("campaign", "open", "ams-2011", "--database-url", database)
    assert (code, out) == (2, "")
    assert re.search(r"none of the \d+ pool pairs can be judged: no readable audio for", err)
    assert "--confirm-unplayable" in err
    assert campaign_rows(database) == [("ams-2011", "draft")]
    code, out, err = run(
        "campaign", "open", "ams-2011", "--confirm-unplayable", "--database-url", database
    )
    assert code == 0, err
    assert out.startswith("campaign ams-2011 is open\nwarning: none of the")
    assert campaign_rows(database) == [("ams-2011", "open")]
    assert run("campaign", "close", "ams-2011", "--database-url", database)[0] == 0
    assert campaign_rows(database) == [("ams-2011", "closed")]

    code, out, err = run(
        "assessor", "invite", "ams-2011", "--name", "Ann",
        "--email", "ann@example.org", "--database-url", database,
    )  # fmt: skip
    assert code == 0, err
    link = out.splitlines()[-1]
    assert re.fullmatch(re.escape(BASE_URL) + r"/a/[A-Za-z0-9_-]{32}", link)
    code, out, _ = run("assessor", "list", "ams-2011", "--database-url", database)
    assert code == 0
    # the link is shown once: only a hash of its token is stored
    assert out == "Ann <ann@example.org>  invited\n"
    token = link.rsplit("/", 1)[1]
    assert token not in Path(database.removeprefix("sqlite:///")).read_bytes().decode("latin-1")
    code, out, _ = run(
        "assessor", "relink", "ams-2011", "--name", "Ann", "--database-url", database
    )
    assert code == 0
    new_link = out.splitlines()[-1]
    assert re.fullmatch(re.escape(BASE_URL) + r"/a/[A-Za-z0-9_-]{32}", new_link)
    assert new_link != link
    code, out, _ = run(
        "assessor", "revoke", "ams-2011", "--name", "Ann", "--database-url", database
    )
    assert (code, out) == (0, "the link of Ann no longer works\n")
    code, out, _ = run("assessor", "list", "ams-2011", "--database-url", database)
    assert out == "Ann <ann@example.org>  revoked\n"
    code, _, err = run(
        "assessor", "revoke", "ams-2011", "--name", "Bob", "--database-url", database
    )
    assert code == 2
    assert "no assessor named 'Bob'" in err


def test_create_open_with_audio_report(
    files: dict[str, Path], database: str, tmp_path: Path
) -> None:
    audio = tmp_path / "audio"
    audio.mkdir()
    with wave.open(str(audio / "q1.wav"), "wb") as clip:
        clip.setnchannels(1)
        clip.setsampwidth(2)
        clip.setframerate(8000)
        clip.writeframes(b"\x00\x00" * 100)
    (audio / "q2.wav").write_bytes(b"not a wav")
    create = [
        "campaign", "create", "--name", "With audio", "--runs", str(files["runs"]),
        "--audio", str(audio), "--open", "--slug", "audio", "--database-url", database,
    ]  # fmt: skip
    # created open with pairs that cannot be played: refused until confirmed, nothing saved
    code, out, err = run(*create)
    assert (code, out) == (2, "")
    assert "none of the" in err
    assert "--confirm-unplayable" in err
    code, out, err = run(*create, "--confirm-unplayable")
    assert code == 0, err
    assert "created campaign audio (open): With audio" in out
    documents = re.search(r"documents\s+(\d+)", out)
    assert documents is not None
    missing = int(documents.group(1)) - 2
    assert f"1 found, {missing} missing, 1 unreadable" in out
    assert f"and {missing - 10} more" in out  # the first ten missing are listed
    assert "q2: q2.wav: not readable as a WAV file (" in out
    assert "campaign open" not in out
    assert campaign_rows(database) == [("audio", "open")]
    # the pairs that cannot be judged are reported at import, at opening and in the status
    assert re.search(r"cannot be judged\s+all \d+ pool pairs \(no clip found", out)
    assert run("campaign", "close", "audio", "--database-url", database)[0] == 0
    code, out, err = run("campaign", "open", "audio", "--database-url", database)
    assert code == 2
    assert "(19 clips)" in err
    code, out, _ = run(
        "campaign", "open", "audio", "--confirm-unplayable", "--database-url", database
    )
    assert code == 0
    assert re.search(r"warning: none of the \d+ pool pairs can be judged: no readable audio", out)
    assert "(19 clips)" in out
    code, out, _ = run("campaign", "status", "audio", "--database-url", database)
    assert code == 0
    assert re.search(r"cannot be judged\s+\d+ pair\(s\)", out)


def test_bad_input_exits_2_and_saves_nothing(files: dict[str, Path], database: str) -> None:
    bad = files["fine"].with_name("bad.tsv")
    bad.write_text("q1\td1\t50\nq1\td2\t500\n")
    code, out, err = run(
        "campaign", "create", "--name", "x", "--runs", str(files["runs"]),
        "--judgments", str(bad), "--database-url", database,
    )  # fmt: skip
    assert code == 2
    assert out == ""
    assert err == (f"mtcjudge: error: {bad}:2: FINE scores must be between 0 and 100, found 500\n")
    assert not Path(database.removeprefix("sqlite:///")).exists()


def test_domain_errors_exit_2_and_save_nothing(files: dict[str, Path], database: str) -> None:
    create = ["campaign", "create", "--name", "x", "--runs", str(files["runs"])]
    assert run(*create, "--slug", "taken", "--database-url", database)[0] == 0
    code, _, err = run(*create, "--slug", "taken", "--database-url", database)
    assert (code, err) == (
        2,
        "mtcjudge: error: slug 'taken' is already taken by another campaign\n",
    )
    code, _, err = run(*create, "--audio", "/no/such/dir", "--database-url", database)
    assert (code, err) == (
        2,
        "mtcjudge: error: audio directory: /no/such/dir: no such directory\n",
    )
    assert campaign_rows(database) == [("taken", "draft")]
    code, _, err = run("campaign", "open", "nope", "--database-url", database)
    assert (code, err) == (2, "mtcjudge: error: no campaign 'nope'\n")
    code, _, err = run("assessor", "invite", "taken", "--name", " ", "--database-url", database)
    assert code == 2
    assert "assessor name must be" in err


SAVE_AS = "save the file as UTF-8 text"


def test_a_nul_in_a_file_exits_2_naming_file_and_line(
    files: dict[str, Path], database: str
) -> None:
    runs = files["runs"].with_name("nul.tsv")
    runs.write_bytes(b"S1\tq1\td1\nS2\tq1\td\x002\n")
    code, out, err = run("campaign", "create", "--name", "x", "--runs", str(runs))
    assert (code, out) == (2, "")
    assert err == f"mtcjudge: error: {runs}:2: contains a NUL character (byte 0x00); {SAVE_AS}\n"
    assert not Path(database.removeprefix("sqlite:///")).exists()


def test_control_characters_in_names_are_printed_escaped(
    files: dict[str, Path], database: str
) -> None:
    runs = files["runs"].with_name("escape.tsv")
    text = files["runs"].read_text().replace("S1\t", "S1\x1b[2J\t")
    runs.write_text(text.replace("\td12\n", "\td12\x1b[K\n"))
    code, out, err = run(
        "campaign", "create", "--name", "Red \x1b[31mAlert", "--slug", "red", "--runs", str(runs),
        "--audio", str(files["runs"].parent), "--database-url", database,
    )  # fmt: skip
    assert code == 0, err
    assert "Red \\x1b[31mAlert" in out
    assert "d12\\x1b[K" in out  # the clips missing in --audio: document ids from the runs
    assert "\x1b" not in out
    code, out, _ = run("campaign", "list", "--database-url", database)
    assert (code, "Red \\x1b[31mAlert" in out) == (0, True)
    code, out, err = run("campaign", "status", "red", "--database-url", database)
    assert code == 0, err
    assert "S1\\x1b[2J" in out
    assert "\x1b" not in out
    code, out, _ = run(
        "assessor", "invite", "red", "--name", "Eve\u202e\x07",
        "--email", "eve@example.org", "--database-url", database,
    )  # fmt: skip
    assert (code, out.startswith("invited Eve\\u202e\\x07 to red;")) == (0, True)
    code, out, _ = run("assessor", "list", "red", "--database-url", database)
    assert (code, out.startswith("Eve\\u202e\\x07 <eve@example.org>  invited")) == (0, True)


def test_list_on_a_fresh_database(database: str) -> None:
    from mtcjudge.db import upgrade_database

    upgrade_database(database)  # a missing database is an error (tests/cli/test_database.py)
    code, out, _ = run("campaign", "list", "--database-url", database)
    assert (code, out) == (0, "no campaigns yet: create one with mtcjudge campaign create\n")


def test_default_database_comes_from_the_environment(
    files: dict[str, Path], database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", database)
    assert run("campaign", "create", "--name", "env", "--runs", str(files["runs"]))[0] == 0
    assert campaign_rows(database) == [("env", "draft")]


@pytest.mark.parametrize(
    "argv",
    [
        ["campaign", "create", "--name", "x"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--k", "0"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--k", "1001"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--seed", "2147483648"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--seed", "-1"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--lease-minutes", "10081"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--judgments-per-pair", "101"],
        ["campaign", "set", "x", "--lease-minutes", "0"],
        ["campaign", "set", "x", "--judgments-per-pair", "99999999999"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--target", "0.2"],
        ["campaign", "create", "--name", "x", "--runs", "r", "--scale", "coarse"],
        ["assessor", "invite", "--name", "x"],
        ["campaign"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run(*argv)
    assert exit_info.value.code == 2
