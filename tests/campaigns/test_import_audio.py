"""A campaign imported with bad audio among good: every bad file named with its reason, the
campaign created all the same, the good clips stored with their analysis, the bad documents'
pairs never handed out. Through the API (POST /api/campaigns) and the command line.

The folder holds a clip of every format, a truncated MP3, an empty file, a text file named
.wav, an M4A file, a two-hour FLAC, a 96 kHz 8-channel FLAC, a document with two files, and
two documents with accented ids (one file named as the runs spell it, one named in decomposed
Unicode, as macOS names files).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.clips.loudness import PEAK_BINS
from mtcjudge.models import Campaign, Document
from tests.audio_files import (
    fake_m4a,
    long_silence_flac,
    many_channels,
    text_named,
    truncated,
    write_clip,
    zero_length,
)
from tests.cli import run
from tests.support import ORGANIZER_HEADERS

SECONDS = 4.0  # every good clip but the long one: shorter than the excerpt, so played whole
CAFE = "café-ñ"
SENORA = "señora"  # its file is named in decomposed Unicode (NFD)

RUNS = "".join(
    f"{system}\t{query}\t{doc}\n"
    for system, query, docs in [
        ("S1", "q1", ["wav1", "flac1", "broken", "ogg1", "empty"]),
        ("S1", "q2", ["opus1", "mp3good", "notes", CAFE, "aac"]),
        ("S2", "q1", [SENORA, "surround", "long", "x", "broken"]),
        ("S2", "q2", ["x", "wav1", "empty", CAFE, "notes"]),
    ]
    for doc in docs
)
# the distinct (query, document) pairs of the top 5 (k), and those with a bad document
POOL = {
    "q1": {"wav1", "flac1", "broken", "ogg1", "empty", SENORA, "surround", "long", "x"},
    "q2": {"opus1", "mp3good", "notes", CAFE, "aac", "x", "wav1", "empty"},
}
BAD = {"broken", "empty", "notes", "aac"}
N_POOL = sum(len(docs) for docs in POOL.values())
N_UNPLAYABLE = sum(len(docs & BAD) for docs in POOL.values())

GOOD = ["q1", "q2", "wav1", "flac1", "ogg1", "opus1", "mp3good", CAFE, SENORA, "surround", "x"]
TRUNCATED = re.compile(
    r"broken\.mp3: truncated or damaged: it decodes to \d+\.\d s of the 4\.0 s its header "
    r"declares"
)
REASONS = {
    "empty": "empty.wav: empty file",
    "notes": "notes.wav: not readable as a WAV file (Format not recognised.)",
    "aac": "aac.m4a: M4A/AAC cannot be decoded here: convert it to FLAC, MP3 or Ogg",
}
TOO_LONG = (
    "long.flac: 120 minutes long: whole files are clips up to 15 minutes; cut excerpts instead"
)
NOTE = "x: using x.wav, not x.mp3"


@pytest.fixture(scope="module")
def audio_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("audio")
    for seed, (doc, ext) in enumerate(
        [
            ("q1", "wav"),
            ("q2", "flac"),
            ("wav1", "wav"),
            ("flac1", "flac"),
            ("ogg1", "ogg"),
            ("opus1", "opus"),
            ("mp3good", "mp3"),
            (CAFE, "mp3"),
            (unicodedata.normalize("NFD", SENORA), "ogg"),
            ("x", "wav"),
            ("x", "mp3"),  # passed over: x.wav comes first
        ]
    ):
        write_clip(folder / f"{doc}.{ext}", SECONDS, seed=seed)
    many_channels(folder / "surround.flac", rate=96_000, channels=8, seconds=SECONDS)
    long_silence_flac(folder / "long.flac")
    truncated(write_clip(folder / "broken.mp3", SECONDS))
    zero_length(folder / "empty.wav")
    text_named(folder / "notes.wav", "doc\tartist\nnotes\tnobody\n")
    fake_m4a(folder / "aac.m4a")
    return folder


def documents(session_factory: sessionmaker[Session], slug: str) -> dict[str, Document]:
    with session_factory() as session:
        campaign_id = session.scalars(select(Campaign.id).where(Campaign.slug == slug)).one()
        rows = session.scalars(select(Document).where(Document.campaign_id == campaign_id))
        return {row.external_id: row for row in rows}


@pytest.fixture
def api(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(headers=ORGANIZER_HEADERS)


def create(api: TestClient, audio_dir: Path, **fields: Any) -> Any:
    body = {"name": "Bad input", "runs": RUNS, "audio_dir": str(audio_dir), **fields}
    return api.post("/api/campaigns", json=body)


def unreadable_of(report: dict[str, Any]) -> dict[str, str]:
    return {problem["doc"]: problem["reason"] for problem in report["audio_unreadable"]}


def test_every_bad_file_is_named_with_its_reason_and_the_campaign_is_created(
    api: TestClient, audio_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    response = create(api, audio_dir)  # the default cut: 30 s from 30 % of the way in
    assert response.status_code == 201, response.text
    data = response.json()
    assert (data["slug"], data["status"], data["clip_cut"]) == ("bad-input", "draft", "excerpt")
    report = data["report"]
    unreadable = unreadable_of(report)
    assert sorted(unreadable) == sorted(BAD)
    assert TRUNCATED.fullmatch(unreadable.pop("broken")), report["audio_unreadable"]
    assert unreadable == REASONS
    assert report["audio_missing"] == []  # aac.m4a is reported with the way out, not missed
    assert report["audio_notes"] == [NOTE]
    assert report["audio_found"] == len(GOOD) + 1  # and the long one, cut
    assert report["n_pool_pairs"] == N_POOL
    assert report["n_unplayable_pairs"] == N_UNPLAYABLE

    stored = documents(session_factory, "bad-input")
    assert set(stored) == {doc for docs in POOL.values() for doc in docs} | set(POOL)
    for doc in GOOD:
        row = stored[doc]
        assert row.audio_path is not None
        assert row.content_sha256 == hashlib.sha256(Path(row.audio_path).read_bytes()).hexdigest()
        assert row.loudness_lufs is not None
        # the tone at 0.3 in each channel: about -14.5 LUFS in stereo, 6 LU more in 8 channels
        loudness = -8.5 if doc == "surround" else -14.5
        assert row.loudness_lufs == pytest.approx(loudness, abs=1.5), doc
        assert row.peaks is not None
        assert len(row.peaks) == PEAK_BINS
        assert row.duration_seconds == pytest.approx(SECONDS, abs=0.05), doc
        assert row.excerpt_start == 0.0  # shorter than the excerpt: played whole
    assert Path(stored["x"].audio_path or "").name == "x.wav"
    assert Path(stored[CAFE].audio_path or "").name == f"{CAFE}.mp3"
    assert Path(stored[SENORA].audio_path or "").name == unicodedata.normalize(
        "NFD", f"{SENORA}.ogg"
    )
    assert (stored["surround"].sample_rate, stored["surround"].channels) == (96_000, 8)
    long = stored["long"]
    assert (long.source_seconds, long.excerpt_start, long.duration_seconds) == (7200, 2160, 30)
    assert long.loudness_lufs is None  # silence
    assert long.peaks == bytes(PEAK_BINS)
    for doc in BAD:
        row = stored[doc]
        assert (row.audio_path, row.content_sha256, row.loudness_lufs, row.peaks) == (None,) * 4


def test_played_whole_the_two_hour_file_is_refused_too(
    api: TestClient, audio_dir: Path, session_factory: sessionmaker[Session]
) -> None:
    response = create(api, audio_dir, clip_cut="whole")
    assert response.status_code == 201, response.text
    report = response.json()["report"]
    unreadable = unreadable_of(report)
    assert unreadable["long"] == TOO_LONG
    assert sorted(unreadable) == sorted(BAD | {"long"})
    assert report["n_unplayable_pairs"] == N_UNPLAYABLE + 1  # (q1, long)
    assert documents(session_factory, "bad-input")["long"].audio_path is None


def test_created_open_the_bad_files_ask_for_a_confirmation_first(
    api: TestClient, audio_dir: Path
) -> None:
    refused = create(api, audio_dir, status="open")
    assert refused.status_code == 409, refused.text
    detail = refused.json()["detail"]
    assert (
        f"{N_UNPLAYABLE} of {N_POOL} pool pairs cannot be judged: no readable audio for aac, "
        "broken, empty, notes;"
    ) in detail, detail
    assert api.get("/api/campaigns").json() == []
    confirmed = create(api, audio_dir, status="open", confirm_unplayable=True)
    assert confirmed.status_code == 201, confirmed.text
    assert confirmed.json()["report"]["n_unplayable_pairs"] == N_UNPLAYABLE


# ------------------------------------------------------------------ the command line


@pytest.fixture
def command_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """The command line's environment, a fresh SQLite file and the runs as a file."""
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "https://judge.example.org")
    monkeypatch.delenv("DATABASE_URL", raising=False)
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS, encoding="utf-8")
    return {"runs": str(runs), "database": f"sqlite:///{tmp_path / 'db' / 'mtcjudge.sqlite3'}"}


def test_the_command_line_prints_every_bad_file_with_its_reason(
    command_line: dict[str, str], audio_dir: Path
) -> None:
    code, out, err = run(
        "campaign", "create", "--name", "Bad input", "--runs", command_line["runs"],
        "--audio", audio_dir, "--database-url", command_line["database"],
    )  # fmt: skip
    assert code == 0, err
    assert "created campaign bad-input (draft): Bad input" in out
    found = len(GOOD) + 1
    assert f"audio               {found} found, 0 missing, 4 unreadable in {audio_dir}" in out
    for doc, reason in REASONS.items():
        assert f"      {doc}: {reason}\n" in out, out
    assert re.search(rf"\n      broken: {TRUNCATED.pattern}\n", out), out
    assert f"    several files: {NOTE}\n" in out
    assert (
        f"  cannot be judged    {N_UNPLAYABLE} of {N_POOL} pool pairs (a clip has no readable "
        "audio): assessors are not given them"
    ) in out
    assert "mtcjudge campaign open bad-input --confirm-unplayable" in out


def test_the_command_line_refuses_an_audio_folder_that_does_not_exist(
    command_line: dict[str, str], tmp_path: Path
) -> None:
    nowhere = tmp_path / "no-such-folder"
    code, out, err = run(
        "campaign", "create", "--name", "Bad input", "--runs", command_line["runs"],
        "--audio", nowhere, "--database-url", command_line["database"],
    )  # fmt: skip
    assert (code, out) == (2, "")
    assert f"audio directory: {nowhere}: no such directory" in err, err
