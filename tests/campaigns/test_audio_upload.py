"""Audio from the browser (POST/PUT /api/audio-uploads): files one by one and zips, with real
encoded files and the bad ones an upload can go wrong with; a per-file report; a campaign
created from a complete upload only, its clips stored in the database and served by a machine
whose cache is empty.
"""

from __future__ import annotations

import hashlib
import io
import unicodedata
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.clips import repository as clip_store
from mtcjudge.clips.sources import blob_of, blob_path, sources_directory
from mtcjudge.config import Settings
from mtcjudge.models import AudioBlob, Campaign, Document
from tests.audio_files import text_named, truncated, write_clip, zero_length
from tests.support import ORGANIZER_HEADERS

SECONDS = 2.0
CAFE = "café"
#: small enough for a 2-second stereo WAV (353 kB) to be over it, not the FLAC (275 kB)
FILE_LIMIT = 300_000

RUNS = "".join(
    f"{system}\t{query}\t{doc}\n"
    for system, query, docs in [
        ("S1", "q1", ["a", "b", "broken", "empty"]),
        ("S2", "q1", [CAFE, "notes", "big", "a"]),
    ]
    for doc in docs
)


@pytest.fixture
def settings(app_settings: Settings) -> Settings:
    return replace(app_settings, max_audio_file_bytes=FILE_LIMIT)


@pytest.fixture
def api(make_client: Callable[..., TestClient], settings: Settings) -> TestClient:
    return make_client(settings, headers=ORGANIZER_HEADERS)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Name -> bytes: good clips of three formats, and the bad ones."""
    folder = tmp_path_factory.mktemp("upload")
    write_clip(folder / "q1.mp3", SECONDS, seed=1)
    write_clip(folder / "a.flac", SECONDS, seed=2)
    write_clip(folder / "b.ogg", SECONDS, seed=3)
    write_clip(folder / f"{CAFE}.mp3", SECONDS, seed=4)
    truncated(write_clip(folder / "broken.mp3", SECONDS, seed=5))
    zero_length(folder / "empty.wav")
    text_named(folder / "notes.wav")
    write_clip(folder / "big.wav", SECONDS, seed=6)  # over FILE_LIMIT
    return {path.name: path.read_bytes() for path in folder.iterdir()}


def start(api: TestClient) -> str:
    response = api.post("/api/audio-uploads")
    assert response.status_code == 201, response.text
    data = response.json()
    assert data["max_file_bytes"] == FILE_LIMIT
    assert len(data["token"]) == 43
    return str(data["token"])


def put(api: TestClient, token: str, name: str, data: bytes) -> Any:
    return api.put(
        f"/api/audio-uploads/{token}/files/{quote(name)}",
        content=data,
        headers={"Content-Type": "application/octet-stream"},
    )


def problems(report: dict[str, Any]) -> dict[str, str]:
    return {f["file_name"]: f["problem"] for f in report["files"] if not f["usable"]}


def test_files_one_by_one_are_reported_each_with_its_reason(
    api: TestClient, files: dict[str, bytes]
) -> None:
    token = start(api)
    answers = {}
    for name, data in files.items():
        # a name given on macOS is decomposed
        sent = unicodedata.normalize("NFD", name) if name.startswith(CAFE) else name
        answers[name] = put(api, token, sent, data)
    assert answers["big.wav"].status_code == 413
    assert answers["big.wav"].json()["detail"] == (
        "big.wav: larger than the 293 KiB allowed for one file"
    )
    for name in ("q1.mp3", "a.flac", "b.ogg", f"{CAFE}.mp3"):
        assert answers[name].status_code == 200, answers[name].text
        assert answers[name].json()["usable"] is True
        assert answers[name].json()["size"] == len(files[name])
    assert answers[f"{CAFE}.mp3"].json()["name"] == CAFE  # NFC

    report = api.get(f"/api/audio-uploads/{token}").json()
    assert (report["n_files"], report["n_usable"], report["state"]) == (8, 4, "receiving")
    found = problems(report)
    assert found.pop("broken.mp3").startswith("truncated or damaged: it decodes to ")
    assert found == {
        "empty.wav": "empty file",
        "notes.wav": "not readable as a WAV file (Format not recognised.)",
        "big.wav": "larger than the 293 KiB allowed for one file",
    }
    stored = sum(len(files[n]) for n in ("q1.mp3", "a.flac", "b.ogg", f"{CAFE}.mp3"))
    assert report["total_bytes"] == stored


def test_a_file_sent_again_is_the_same_file_and_another_of_its_name_a_duplicate(
    api: TestClient, files: dict[str, bytes], tmp_path: Path
) -> None:
    token = start(api)
    first = put(api, token, "a.flac", files["a.flac"]).json()
    again = put(api, token, "a.flac", files["a.flac"]).json()
    assert first == again
    another = write_clip(tmp_path / "a.flac", 1.0, seed=9).read_bytes()
    other = put(api, token, "a.flac", another).json()
    assert other["usable"] is False
    assert other["problem"] == "duplicate name: a.flac was received first and is the one used"
    # another extension of the same document is no duplicate (the import chooses)
    assert put(api, token, "a.mp3", files["q1.mp3"]).json()["usable"] is True
    report = api.get(f"/api/audio-uploads/{token}").json()
    assert (report["n_files"], report["n_usable"]) == (3, 2)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("notes", "no extension"),
        ("cover.jpg", "unsupported extension .jpg (accepted: flac, mp3, ogg, opus, wav)"),
        ("song.m4a", "M4A/AAC cannot be decoded here: convert it to FLAC, MP3 or Ogg"),
        (".wav", "the name has no document id before its extension"),
        ("x" * 300 + ".wav", "the name is longer than 255 bytes"),
    ],
)
def test_a_name_that_cannot_be_a_clip_is_reported_without_reading_it(
    api: TestClient, name: str, problem: str
) -> None:
    token = start(api)
    answer = put(api, token, name, b"whatever")
    assert answer.status_code == 200, answer.text
    assert (answer.json()["usable"], answer.json()["problem"]) == (False, problem)


def test_the_upload_limit_is_kept_by_the_database(
    make_client: Callable[..., TestClient], settings: Settings, files: dict[str, bytes]
) -> None:
    limit = len(files["q1.mp3"]) + len(files["a.flac"]) // 2
    api = make_client(replace(settings, max_audio_upload_bytes=limit), headers=ORGANIZER_HEADERS)
    token = start(api)
    assert put(api, token, "q1.mp3", files["q1.mp3"]).json()["usable"] is True
    refused = put(api, token, "a.flac", files["a.flac"]).json()
    assert refused["problem"].startswith("not stored: the upload would pass the ")


def zipped(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_zip_takes_its_audio_by_base_name_and_reports_the_rest(
    api: TestClient, files: dict[str, bytes]
) -> None:
    token = start(api)
    body = zipped(
        {
            "collection/q1.mp3": files["q1.mp3"],
            "collection/sub/a.flac": files["a.flac"],
            "collection/other/a.flac": files["b.ogg"],  # the same base name again
            "../b.ogg": files["b.ogg"],  # leads outside the zip
            "collection/notes.wav": files["notes.wav"],
            "collection/empty.wav": b"",
            f"collection/{unicodedata.normalize('NFD', CAFE)}.mp3": files[f"{CAFE}.mp3"],
            "collection/cover.jpg": b"jpeg",  # not audio: skipped
            "__MACOSX/collection/._q1.mp3": b"resource fork",  # skipped
            "collection/bomb.wav": bytes(FILE_LIMIT + 1),  # unpacks past the file limit
        }
    )
    response = api.put(f"/api/audio-uploads/{token}/zip", content=body)
    assert response.status_code == 200, response.text
    report = response.json()
    usable = sorted(f["name"] for f in report["files"] if f["usable"])
    assert usable == sorted(["q1", "a", CAFE])
    assert problems(report) == {
        "collection/other/a.flac".rpartition("/")[2]: (
            "duplicate name in the zip: collection/sub/a.flac comes first and is the one used"
        ),
        "../b.ogg": "unsafe path in the zip (it leads outside the zip): not read",
        "notes.wav": "not readable as a WAV file (Format not recognised.)",
        "empty.wav": "empty file",
        "bomb.wav": "larger than the 293 KiB allowed for one file (unpacked)",
    }


def test_a_zip_larger_than_an_upload_is_refused_before_it_is_read(
    make_client: Callable[..., TestClient], settings: Settings
) -> None:
    api = make_client(replace(settings, max_audio_upload_bytes=1000), headers=ORGANIZER_HEADERS)
    token = start(api)
    response = api.put(f"/api/audio-uploads/{token}/zip", content=bytes(5000))
    assert response.status_code == 413
    assert "larger than" in response.json()["detail"]


def test_not_a_zip_is_a_400(api: TestClient) -> None:
    token = start(api)
    response = api.put(f"/api/audio-uploads/{token}/zip", content=b"PK no zip")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("zip: not a zip file")


def test_an_unknown_upload_is_a_404_and_a_complete_one_takes_no_more_files(
    api: TestClient, files: dict[str, bytes]
) -> None:
    assert api.get("/api/audio-uploads/" + "x" * 43).status_code == 404
    assert api.get("/api/audio-uploads/short").status_code == 404
    token = start(api)
    assert api.post(f"/api/audio-uploads/{token}/complete").json()["state"] == "complete"
    assert put(api, token, "a.flac", files["a.flac"]).status_code == 409


def test_uploads_are_the_organizers_only(
    make_client: Callable[..., TestClient], settings: Settings, api: TestClient
) -> None:
    token = start(api)
    anonymous = make_client(settings)
    assert anonymous.post("/api/audio-uploads").status_code == 401
    assert anonymous.get(f"/api/audio-uploads/{token}").status_code == 401
    assert put(anonymous, token, "a.wav", b"x").status_code == 401


def test_a_signed_in_organizer_sends_the_csrf_token(signed_in: TestClient, organizer: str) -> None:
    assert signed_in.post("/api/audio-uploads").status_code == 403


def upload_all(api: TestClient, files: dict[str, bytes]) -> str:
    token = start(api)
    for name, data in files.items():
        put(api, token, name, data)
    return token


def test_a_campaign_from_a_complete_upload_stores_its_clips_in_the_database(
    api: TestClient, files: dict[str, bytes], session_factory: sessionmaker[Session]
) -> None:
    token = upload_all(api, files)
    body = {"name": "Uploaded", "runs": RUNS, "audio_upload": token}
    early = api.post("/api/campaigns", json=body)
    assert early.status_code == 400
    assert early.json()["detail"] == "audio_upload: the audio upload is not complete yet"
    assert api.get("/api/campaigns").json() == []  # nothing half written

    api.post(f"/api/audio-uploads/{token}/complete")
    both = api.post("/api/campaigns", json={**body, "audio_dir": "/tmp"})
    assert both.json()["detail"] == "give an audio folder or an audio upload, not both"
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 201, response.text
    report = response.json()["report"]
    assert report["audio_found"] == 4
    assert report["audio_missing"] == []
    unreadable = {p["doc"]: p["reason"] for p in report["audio_unreadable"]}
    assert unreadable.pop("broken").startswith("broken.mp3: truncated or damaged")
    assert unreadable == {
        "empty": "empty.wav: empty file",
        "notes": "notes.wav: not readable as a WAV file (Format not recognised.)",
        "big": "big.wav: larger than the 293 KiB allowed for one file",
    }
    with session_factory() as session:
        campaign = session.scalars(select(Campaign).where(Campaign.slug == "uploaded")).one()
        rows = session.scalars(select(Document).where(Document.campaign_id == campaign.id))
        stored = {row.external_id: row for row in rows}
        for doc, name in (("q1", "q1.mp3"), ("a", "a.flac"), ("b", "b.ogg"), (CAFE, "café.mp3")):
            sha = hashlib.sha256(files[name]).hexdigest()
            assert stored[doc].audio_path == blob_path(sha, name.rpartition(".")[2])
            assert stored[doc].content_sha256 == sha
            assert stored[doc].loudness_lufs is not None
            assert clip_store.blob_data(session, sha) == files[name]
        assert stored["broken"].audio_path is None
        assert session.scalar(select(func.count()).select_from(AudioBlob)) == 4


def test_the_preview_counts_the_uploaded_clips(api: TestClient, files: dict[str, bytes]) -> None:
    token = upload_all(api, files)
    body = {"name": "P", "runs": [{"name": "runs.tsv", "text": RUNS}], "audio_upload": token}
    early = api.post("/api/campaigns/preview", json=body).json()
    assert "the audio upload is not complete yet" in early["detail"]
    api.post(f"/api/audio-uploads/{token}/complete")
    preview = api.post("/api/campaigns/preview", json=body).json()
    audio = preview["audio"]
    assert (audio["needed"], audio["found"], audio["missing"]) == (8, 4, 0)
    assert len(audio["unreadable"]) == 4
    created = api.post("/api/campaigns/import", json={**body, "clip_cut": "whole"})
    assert created.status_code == 201, created.text
    assert created.json()["clip_cut"] == "whole"


def test_a_machine_with_an_empty_cache_serves_an_uploaded_clip(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    api: TestClient,
    files: dict[str, bytes],
    session_factory: sessionmaker[Session],
) -> None:
    from mtcjudge.clips.sources import factory_loader
    from mtcjudge.judging.clip_pages import _ClipWanted, _rendition_of

    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "first"))
    token = upload_all(api, {"q1.mp3": files["q1.mp3"], "a.flac": files["a.flac"]})
    api.post(f"/api/audio-uploads/{token}/complete")
    runs = "S1\tq1\ta\nS2\tq1\ta\n"
    response = api.post("/api/campaigns", json={"name": "C", "runs": runs, "audio_upload": token})
    assert response.status_code == 201, response.text
    with session_factory() as session:
        row = session.scalars(select(Document).where(Document.external_id == "a")).one()
    assert row.audio_path is not None
    wanted = _ClipWanted(
        row.audio_path,
        row.content_sha256,
        row.excerpt_start,
        row.duration_seconds,
        row.source_seconds,
    )
    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "fresh"))  # another machine
    assert not (tmp_path / "fresh").exists()
    mp3 = _rendition_of(wanted, factory_loader(session_factory))
    assert mp3.read_bytes()[:2] == b"\xff\xfb"  # an MP3 frame
    found = blob_of(row.audio_path)
    assert found is not None
    copy = sources_directory() / found[0][:2] / f"{found[0]}.flac"
    assert copy.read_bytes() == files["a.flac"]  # written from the database
