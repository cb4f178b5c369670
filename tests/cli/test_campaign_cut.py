"""How clips are cut, from the command line (``campaign create --clip-cut``, ``--excerpt-*``,
``--clip-offsets``; docs/audio.md, "Excerpts")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import Campaign, Document
from tests.audio_files import write_clip
from tests.cli import run

RUNS = "".join(f"S{s}\tq\td{(s + r) % 3}\n" for s in range(2) for r in range(2))


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "https://judge.example.org")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    audio = tmp_path / "audio"
    audio.mkdir()
    for i, doc in enumerate(("q", "d0", "d1", "d2")):
        write_clip(audio / f"{doc}.flac", 8.0, channels=1, rate=8000, seed=i)
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS, encoding="utf-8")
    return {"runs": runs, "audio": audio, "dir": tmp_path}


def create(files: dict[str, Path], *options: object) -> tuple[int, str, str, str]:
    database = f"sqlite:///{files['dir'] / 'db.sqlite3'}"
    code, out, err = run(
        "campaign", "create", "--name", "Cut", "--runs", files["runs"], "--audio",
        files["audio"], "--database-url", database, *options,
    )  # fmt: skip
    return code, out, err, database


def stored(database: str) -> tuple[tuple[str, float, float], dict[str, Any]]:
    """The campaign's cut, and each document's (excerpt start, duration, source seconds)."""
    engine = make_database_engine(database)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            c = session.scalars(select(Campaign)).one()
            documents = {
                d.external_id: (d.excerpt_start, d.duration_seconds, d.source_seconds)
                for d in session.scalars(select(Document))
            }
            return (c.clip_cut, c.excerpt_seconds, c.excerpt_start_fraction), documents
    finally:
        engine.dispose()


def test_excerpts_by_default_and_their_length_and_start(files) -> None:
    code, _, err, database = create(files, "--excerpt-seconds", "4", "--excerpt-start", "0.25")
    assert code == 0, err
    cut, documents = stored(database)
    assert cut == ("excerpt", 4.0, 0.25)
    for start, duration, source in documents.values():
        assert start == pytest.approx(2.0)  # a quarter of 8 s
        assert duration == pytest.approx(4.0)
        assert source == pytest.approx(8.0)


def test_whole_files(files) -> None:
    code, _, err, database = create(files, "--clip-cut", "whole")
    assert code == 0, err
    _, documents = stored(database)
    assert [duration for _, duration, _ in documents.values()] == [pytest.approx(8.0)] * 4


def test_an_offsets_file_gives_each_document_its_start(files) -> None:
    offsets = files["dir"] / "offsets.tsv"
    offsets.write_text("doc\tstart_seconds\nq\t1.5\nd0\t7\n", encoding="utf-8")
    code, _, err, database = create(files, "--excerpt-seconds", "3", "--clip-offsets", offsets)
    assert code == 0, err
    cut, documents = stored(database)
    assert cut[0] == "offsets"
    assert documents["q"][0] == pytest.approx(1.5)
    assert documents["d0"][0] == pytest.approx(5.0)  # moved back: the file ends at 8 s
    assert documents["d1"][0] == pytest.approx(0.3 * 8)  # not named: the default start


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--excerpt-seconds", "1"), "an excerpt must last 3 to 600 seconds, found 1"),
        (("--excerpt-start", "1"), "from 0 to below 1, found 1"),
        (("--clip-cut", "halves"), "invalid choice: 'halves'"),
    ],
)
def test_bad_cut_options_are_usage_errors(files, options, message, capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        create(files, *options)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_a_bad_offsets_file_names_its_line_and_field(files) -> None:
    offsets = files["dir"] / "offsets.tsv"
    offsets.write_text("q\t1.5\nd0\tsoon\n", encoding="utf-8")
    code, out, err, _ = create(files, "--clip-offsets", offsets)
    assert (code, out) == (2, "")
    assert f"{offsets}:2: start_seconds: must be a number of seconds from 0, found 'soon'" in err
