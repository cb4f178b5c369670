"""Audio from the browser at its edges: a two-hour file and a 96 kHz 8-channel file sent as
uploads (usable, analysed, cut as a folder's files are: the long one refused whole, cut to an
excerpt or from its start in the offsets), and a body that ends before its Content-Length
(the client gives up or is cut off): nothing is half written, nothing is left on disk, and the
server answers the next file as usual.
"""

from __future__ import annotations

import json
import logging
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.models import Campaign, Document
from tests.audio_files import long_silence_flac, many_channels, write_clip
from tests.browser import Site, organizer_site
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN

RUNS = "S1\tq\tlong\nS1\tq\tsurround\nS2\tq\tsurround\nS2\tq\tlong\n"
TOO_LONG = "long.flac: 120 minutes long: whole files are clips up to 15 minutes; cut excerpts"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("edges")
    long_silence_flac(folder / "long.flac")  # two hours, 8 kHz mono
    many_channels(folder / "surround.flac", rate=96_000, channels=8, seconds=2)
    write_clip(folder / "q.flac", 4.0, channels=1, rate=8000)
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.fixture
def api(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(headers=ORGANIZER_HEADERS)


def uploaded(api: TestClient, files: dict[str, bytes]) -> str:
    token = str(api.post("/api/audio-uploads").json()["token"])
    for name, data in files.items():
        answer = api.put(
            f"/api/audio-uploads/{token}/files/{name}",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert answer.status_code == 200, answer.text
        assert answer.json()["usable"] is True, answer.json()
        assert answer.json()["size"] == len(data)
    assert api.post(f"/api/audio-uploads/{token}/complete").status_code == 200
    return token


def documents(session_factory: sessionmaker[Session], slug: str) -> dict[str, Document]:
    with session_factory() as session:
        campaign_id = session.scalars(select(Campaign.id).where(Campaign.slug == slug)).one()
        rows = session.scalars(select(Document).where(Document.campaign_id == campaign_id))
        return {row.external_id: row for row in rows}


@pytest.mark.parametrize(
    ("cut", "long_start"),
    [
        ({}, 0.3 * 7200),  # 30 s from 30 % of the way in
        ({"clip_cut": "offsets", "clip_offsets": {"long": 3600}}, 3600.0),
        ({"clip_cut": "offsets", "clip_offsets": "long\t7190\n"}, 7170.0),  # moved back
    ],
    ids=["excerpt", "offsets", "offsets-past-the-last-30-s"],
)
def test_a_two_hour_file_and_a_96_khz_8_channel_file_uploaded_are_cut_as_a_folder_s(
    api: TestClient,
    files: dict[str, bytes],
    session_factory: sessionmaker[Session],
    cut: dict[str, Any],
    long_start: float,
) -> None:
    token = uploaded(api, files)
    body = {"name": "Edges", "runs": RUNS, "audio_upload": token, **cut}
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 201, response.text
    assert response.json()["report"]["audio_unreadable"] == []
    stored = documents(session_factory, "edges")
    long, surround = stored["long"], stored["surround"]
    assert long.source_seconds == pytest.approx(7200.0)
    assert (long.excerpt_start, long.duration_seconds) == (pytest.approx(long_start), 30.0)
    assert (long.sample_rate, long.channels) == (8000, 1)
    assert (surround.sample_rate, surround.channels) == (96_000, 8)
    assert surround.duration_seconds == pytest.approx(2.0)  # shorter than the excerpt: whole
    assert surround.loudness_lufs is not None  # the long one is silence: no loudness
    assert all(d.audio_path and d.audio_path.startswith("blob:") for d in stored.values())


def test_a_two_hour_upload_is_refused_whole_and_its_start_past_the_end_named(
    api: TestClient, files: dict[str, bytes]
) -> None:
    token = uploaded(api, files)
    body = {"name": "Whole", "runs": RUNS, "audio_upload": token, "clip_cut": "whole"}
    response = api.post("/api/campaigns", json=body)
    assert response.status_code == 201, response.text
    unreadable = {p["doc"]: p["reason"] for p in response.json()["report"]["audio_unreadable"]}
    assert unreadable["long"].startswith(TOO_LONG)
    assert response.json()["report"]["n_unplayable_pairs"] == 1  # q's pair with long

    late = {**body, "name": "Late", "clip_cut": "offsets", "clip_offsets": {"long": 7200}}
    refused = api.post("/api/campaigns", json=late)
    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "clip_offsets: doc 'long': start_seconds: 7200 s is at or past the end of its file, "
        "which lasts 7200.0 s"
    )
    assert [c["slug"] for c in api.get("/api/campaigns").json()] == ["whole"]


# --------------------------------------------------------------------------- a body cut short


@pytest.fixture
def site(
    empty_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Site]:
    """The app on a real server (uvicorn: a connection that closes early reaches the app as
    a disconnect), its temporary files in a folder of the test's own."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    with organizer_site(empty_database_url, organizer_token=ORGANIZER_TOKEN) as served:
        yield served


def send_part(
    url: str,
    path: str,
    declared: int,
    data: bytes,
    method: str = "PUT",
    content_type: str = "application/octet-stream",
) -> bytes:
    """Send ``data`` to ``path`` announcing ``declared`` bytes, then close the connection
    (a browser whose page was closed, a network cut); whatever the server answered first."""
    where = urlsplit(url)
    with socket.create_connection((where.hostname, where.port), timeout=10) as conn:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {where.netloc}\r\n"
            f"Authorization: Bearer {ORGANIZER_TOKEN}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {declared}\r\n\r\n"
        )
        conn.sendall(head.encode() + data)
        conn.shutdown(socket.SHUT_WR)
        try:
            return conn.recv(65536)
        except OSError:
            return b""


def leftovers(folder: Path, wait: float = 10.0) -> list[Path]:
    """The upload temporary files in ``folder`` once the server has had up to ``wait``
    seconds to remove them: a client that hangs up is answered (its connection closed)
    before the request's task has seen the disconnect and cleaned up, so an immediate look
    races the server's own cleanup."""
    deadline = time.monotonic() + wait
    while True:
        found = sorted(folder.glob("mtcjudge-upload-*"))
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def server_errors() -> Iterator[list[str]]:
    """What the server logs as its own errors (uvicorn's "Exception in ASGI application")."""
    found: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(record.getMessage())

    handler = Collect(level=logging.ERROR)
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield found
    finally:
        logger.removeHandler(handler)


def test_a_body_that_ends_early_leaves_nothing_half_written(
    site: Site, files: dict[str, bytes], tmp_path: Path, server_errors: list[str]
) -> None:
    data = files["q.flac"]
    with httpx.Client(base_url=site.url, headers=ORGANIZER_HEADERS, timeout=20) as client:
        token = client.post("/api/audio-uploads").json()["token"]
        answered = send_part(
            site.url, f"/api/audio-uploads/{token}/files/q.flac", len(data), data[:1000]
        )
        assert not answered.startswith(b"HTTP/1.1 5"), answered[:200]

        # the upload holds nothing of it, and no temporary file is left behind
        report = client.get(f"/api/audio-uploads/{token}").json()
        assert (report["n_files"], report["total_bytes"], report["state"]) == (0, 0, "receiving")
        assert leftovers(tmp_path / "tmp") == []

        # the server answers the next file as usual, and the whole file is stored
        sent = client.put(
            f"/api/audio-uploads/{token}/files/q.flac",
            content=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["usable"] is True
        report = client.get(f"/api/audio-uploads/{token}").json()
        assert (report["n_files"], report["total_bytes"]) == (1, len(data))

        # a zip cut short: the same
        zipped = send_part(site.url, f"/api/audio-uploads/{token}/zip", 50_000, b"PK\x03\x04" * 100)
        assert not zipped.startswith(b"HTTP/1.1 5"), zipped[:200]
        report = client.get(f"/api/audio-uploads/{token}").json()
        assert (report["n_files"], report["total_bytes"]) == (1, len(data))
        assert leftovers(tmp_path / "tmp") == []
    assert server_errors == []  # a client's doing, not an error of the server's


def test_a_new_campaign_whose_body_ends_early_is_not_created(
    site: Site, server_errors: list[str]
) -> None:
    body = json.dumps({"name": "Cut short", "runs": RUNS}).encode()
    with httpx.Client(base_url=site.url, headers=ORGANIZER_HEADERS, timeout=20) as client:
        assert client.post("/api/campaigns", json={"name": "Kept", "runs": RUNS}).status_code == 201
        answered = send_part(
            site.url,
            "/api/campaigns",
            len(body),
            body[: len(body) // 2],
            "POST",
            "application/json",
        )
        assert not answered.startswith(b"HTTP/1.1 5"), answered[:200]
        assert [c["slug"] for c in client.get("/api/campaigns").json()] == ["kept"]
    assert server_errors == []
