"""Hostile input, database faults, security headers and logs: what production throws at the app.

Most tests run in the test's rolled-back transaction (SQLite, or Postgres with
``TEST_DATABASE_URL``); the fault tests point ``create_app`` at databases that are not there
(a closed Postgres port, an SQLite path that cannot be opened, a locked SQLite file) and, on
Postgres, at a proxy that is stopped and started again under a running app.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import select
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import db
from mtcjudge.config import Settings
from mtcjudge.db import upgrade_database
from mtcjudge.main import create_app
from mtcjudge.middleware import (
    CONTENT_SECURITY_POLICY,
    BodySizeLimit,
    RedactAssessorTokens,
    redact_tokens,
)
from tests.factories import TEST_AUDIO, write_clips
from tests.factories import TINY_RUNS as RUNS
from tests.support import FORM_HEADERS as FORM
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN, write_tone

INT32_MAX = 2**31 - 1
UNREACHABLE_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:1/mtcjudge"


@pytest.fixture
def client(session_factory: sessionmaker[Session]) -> TestClient:
    return TestClient(
        create_app(Settings(organizer_token=ORGANIZER_TOKEN), session_factory=session_factory),
        headers=ORGANIZER_HEADERS,
    )


def invite(client: TestClient, audio_dir: Path | None = None) -> str:
    """An open campaign (with a clip for every document, or those of ``audio_dir``) with an
    assessor who consented; returns the token."""
    if audio_dir is None:
        audio_dir = write_clips(TEST_AUDIO / "hardening", ["q1", "d1", "d2"])
    body: dict[str, Any] = {"name": "Hardening", "slug": "h", "runs": RUNS, "status": "open"}
    body["audio_dir"] = str(audio_dir)
    assert client.post("/api/campaigns", json=body).status_code == 201
    token: str = client.post("/api/campaigns/h/assessors", json={"name": "Ann"}).json()["token"]
    consent = client.post(f"/a/{token}/consent", content="consent=yes", headers=FORM)
    assert consent.status_code == 200  # followed the 303 to the judging page
    return token


def judgment(**fields: Any) -> dict[str, Any]:
    return {"lease_id": 1, "broad": 1, "fine": 50.0, "client_id": "c-1", **fields}


def assert_envelope(response: Any, status: int, error: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error", "detail"}
    assert body["error"] == error


# ---------------------------------------------------------------- body size


def test_a_body_over_the_limit_is_413_before_anything_reads_it(client: TestClient) -> None:
    response = client.post("/api/a/bogus/judgments", content=b"x" * (64 * 1024 + 1), headers=FORM)
    assert_envelope(response, 413, "payload_too_large")
    assert response.json()["detail"] == "the request body is larger than the 64 KiB allowed here"
    assert response.headers["connection"] == "close"
    # exactly at the limit it reaches the app (and is not JSON)
    at_limit = client.post("/api/a/bogus/judgments", content=b"x" * (64 * 1024), headers=FORM)
    assert at_limit.status_code == 422


def test_the_limit_comes_before_any_database_work() -> None:
    # the database is not there: any work would be a 503
    app = create_app(Settings(database_url=UNREACHABLE_POSTGRES))
    response = TestClient(app).post(
        "/api/a/bogus/judgments", content=b"{" * 100_000, headers={"content-type": "text/plain"}
    )
    assert_envelope(response, 413, "payload_too_large")


def test_a_body_without_content_length_is_counted(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(3):
            yield b" " * (32 * 1024)

    response = client.post("/api/a/bogus/judgments", content=chunks())  # chunked
    assert_envelope(response, 413, "payload_too_large")


def test_the_import_has_its_own_configurable_limit(session_factory: sessionmaker[Session]) -> None:
    big_runs = RUNS + "".join(f"S3\tq1\tx{i:06d}\n" for i in range(8000))  # ~100 KB
    assert len(big_runs) > 64 * 1024
    default = TestClient(
        create_app(Settings(organizer_token=ORGANIZER_TOKEN), session_factory=session_factory),
        headers=ORGANIZER_HEADERS,
    )
    created = default.post("/api/campaigns", json={"name": "Big", "runs": big_runs})
    assert created.status_code == 201, created.text
    # the small limit still applies to the organizer's other bodies
    response = default.patch("/api/campaigns/big", json={"description": "d" * 70_000})
    assert_envelope(response, 413, "payload_too_large")

    small = Settings(max_import_bytes=10_000, organizer_token=ORGANIZER_TOKEN)
    limited = TestClient(
        create_app(small, session_factory=session_factory), headers=ORGANIZER_HEADERS
    )
    response = limited.post("/api/campaigns", json={"name": "Big 2", "runs": big_runs})
    assert_envelope(response, 413, "payload_too_large")
    assert "9 KiB" not in response.json()["detail"]
    assert "10000 bytes" in response.json()["detail"]


def test_max_import_bytes_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings.from_env().max_import_bytes == 64 * 1024 * 1024
    monkeypatch.setenv("MTCJUDGE_MAX_IMPORT_BYTES", "1048576")
    assert Settings.from_env().max_import_bytes == 1 << 20
    monkeypatch.setenv("MTCJUDGE_MAX_IMPORT_BYTES", "64M")
    with pytest.raises(ValueError, match="MTCJUDGE_MAX_IMPORT_BYTES must be a positive number"):
        Settings.from_env()


def _run_limited(headers: list[tuple[bytes, bytes]], chunks: list[bytes]) -> dict[str, Any]:
    """Drive :class:`BodySizeLimit` (limit 10 bytes) around an app that reads the whole body."""
    seen: dict[str, Any] = {"app_called": False, "chunks_read": 0, "sent": []}
    pending = list(chunks)

    async def receive() -> dict[str, Any]:
        seen["chunks_read"] += 1
        body = pending.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message: MutableMapping[str, Any]) -> None:
        seen["sent"].append(message)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen["app_called"] = True
        try:
            while (await receive()).get("more_body"):
                pass
        except Exception:
            # a framework turns a failed read into its own error response: it must not get out
            await send({"type": "http.response.start", "status": 400, "headers": []})
            await send({"type": "http.response.body", "body": b"bad body"})
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    scope = {"type": "http", "method": "POST", "path": "/x", "headers": headers}
    limited = BodySizeLimit(app, default_limit=10, limits={})
    asyncio.run(limited(scope, receive, send))
    return seen


def test_the_body_limit_middleware_on_its_own() -> None:
    announced = _run_limited([(b"content-length", b"11")], [b"x" * 11])
    assert (announced["app_called"], announced["chunks_read"]) == (False, 0)
    assert announced["sent"][0]["status"] == 413

    streamed = _run_limited([], [b"x" * 6, b"x" * 6, b"x" * 6])
    assert (streamed["app_called"], streamed["chunks_read"]) == (True, 2)
    assert [m["status"] for m in streamed["sent"] if "status" in m] == [413]
    assert json.loads(streamed["sent"][1]["body"])["error"] == "payload_too_large"

    within = _run_limited([], [b"x" * 5, b"x" * 5])
    assert within["sent"][0]["status"] == 200


# ---------------------------------------------------------------- integers and texts


@pytest.mark.parametrize("judgment_id", ["0", "-1", str(INT32_MAX + 1), str(2**63), "abc"])
def test_a_judgment_id_that_cannot_exist_is_404(client: TestClient, judgment_id: str) -> None:
    token = invite(client)
    response = client.put(f"/api/a/{token}/judgments/{judgment_id}", json={"broad": 1, "fine": 5})
    assert_envelope(response, 404, "not_found")


def test_the_largest_id_is_an_ordinary_unknown_one(client: TestClient) -> None:
    token = invite(client)
    response = client.put(f"/api/a/{token}/judgments/{INT32_MAX}", json={"broad": 1, "fine": 5})
    assert_envelope(response, 404, "not_found")
    clip = client.get(f"/a/{token}/lease/{INT32_MAX}/candidate")
    assert clip.status_code == 404


@pytest.mark.parametrize("lease_id", ["0", str(INT32_MAX + 1), str(10**30)])
def test_a_clip_id_that_cannot_exist_is_a_404_page(client: TestClient, lease_id: str) -> None:
    token = invite(client)
    response = client.get(f"/a/{token}/lease/{lease_id}/candidate")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "not part of your pairs" in response.text


@pytest.mark.parametrize(
    "fields",
    [
        {"lease_id": INT32_MAX + 1},
        {"lease_id": 2**63},
        {"lease_id": 0},
        {"query_listen_ms": INT32_MAX + 1},
        {"candidate_listen_ms": -1},
        {"client_id": "c\x00"},
        {"client_id": ""},
        {"client_id": "x" * 65},
    ],
)
def test_a_body_value_the_database_cannot_hold_is_422(
    client: TestClient, fields: dict[str, Any]
) -> None:
    token = invite(client)
    response = client.post(f"/api/a/{token}/judgments", json=judgment(**fields))
    assert_envelope(response, 422, "malformed_request")
    assert next(iter(fields)) in response.json()["detail"]


def test_an_unpaired_surrogate_is_422(client: TestClient) -> None:
    token = invite(client)
    raw = json.dumps(judgment(client_id="SURROGATE")).replace("SURROGATE", "a\\ud800")
    response = client.post(
        f"/api/a/{token}/judgments", content=raw, headers={"content-type": "application/json"}
    )
    assert_envelope(response, 422, "malformed_request")
    assert "client_id" in response.json()["detail"]


@pytest.mark.parametrize("bad_token", ["a%00b", "a%20b", "x" * 65, "%ED%A0%80"])
def test_a_token_that_cannot_exist_is_404(client: TestClient, bad_token: str) -> None:
    assert_envelope(client.get(f"/api/a/{bad_token}/next"), 404, "not_found")
    assert_envelope(client.post(f"/api/a/{bad_token}/pause"), 404, "not_found")
    page = client.get(f"/a/{bad_token}/judge")
    assert page.status_code == 404
    assert "invitation link is not valid" in page.text


@pytest.mark.parametrize("slug", ["bad%00slug", "UPPER", "x" * 65])
def test_a_slug_that_cannot_exist_is_404(client: TestClient, slug: str) -> None:
    response = client.patch(f"/api/campaigns/{slug}", json={"status": "open"})
    assert_envelope(response, 404, "campaign_not_found")


# ---------------------------------------------------------------- database faults


def _valid_requests() -> dict[tuple[str, str], dict[str, Any]]:
    """A well-formed request for every /api route: only the database can refuse it."""
    return {
        ("GET", "/api/campaigns"): {},
        ("POST", "/api/campaigns"): {"json": {"name": "x", "runs": RUNS}},
        ("GET", "/api/campaigns/{slug}"): {},
        ("PATCH", "/api/campaigns/{slug}"): {"json": {"status": "open"}},
        ("POST", "/api/campaigns/{slug}/assessors"): {"json": {"name": "Ann"}},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/revoke"): {},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/relink"): {},
        ("GET", "/api/campaigns/{slug}/assessors"): {},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/set-aside"): {},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/bring-back"): {},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/pause"): {"json": {"message": "x"}},
        ("POST", "/api/campaigns/{slug}/assessors/{assessor_id}/resume"): {},
        ("POST", "/api/campaigns/import"): {"json": {"name": "x", "runs": [RUN_FILE]}},
        ("GET", "/api/campaigns/{slug}/results"): {},
        ("GET", "/api/campaigns/{slug}/events"): {},
        ("GET", "/api/campaigns/{slug}/export/{what}"): {},
        ("GET", "/api/campaigns/{slug}/report"): {},
        ("GET", "/api/a/{token}/next"): {},
        ("POST", "/api/a/{token}/judgments"): {"json": judgment()},
        ("PUT", "/api/a/{token}/judgments/{judgment_id}"): {"json": {"broad": 1, "fine": 5}},
        ("GET", "/api/a/{token}/history"): {},
        ("GET", "/api/a/{token}/progress"): {},
        ("POST", "/api/a/{token}/pause"): {},
        ("POST", "/api/campaigns/import-bundle"): {"content": b"PK", "params": {"slug": "x"}},
        ("POST", "/api/campaigns/{slug}/runs"): {"json": {"runs": [RUN_FILE]}},
        ("POST", "/api/audio-uploads"): {},
        ("GET", "/api/audio-uploads/{upload_token}"): {},
        ("PUT", "/api/audio-uploads/{upload_token}/files/{file_name}"): {"content": b"RIFF"},
        ("PUT", "/api/audio-uploads/{upload_token}/zip"): {"content": b"PK"},
        ("POST", "/api/audio-uploads/{upload_token}/complete"): {},
        ("DELETE", "/api/audio-uploads/{upload_token}"): {},
    }


RUN_FILE = {"name": "runs.tsv", "text": RUNS}
#: routes that never touch the database (the preview reads files and simulates)
_WITHOUT_DATABASE: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/api/campaigns/preview"): {"json": {"runs": [RUN_FILE]}},
}


def _concrete(path: str) -> str:
    return path.format(
        slug="some-campaign",
        token="some-token",
        judgment_id=7,
        assessor_id=1,
        what="qrels",
        upload_token="u" * 43,
        file_name="a.wav",
    )


@pytest.fixture(params=["postgres-closed-port", "sqlite-cannot-open"])
def unavailable(request: pytest.FixtureRequest, tmp_path: Path) -> TestClient:
    url = UNREACHABLE_POSTGRES if request.param.startswith("postgres") else f"sqlite:///{tmp_path}"
    return TestClient(
        create_app(Settings(database_url=url, organizer_token=ORGANIZER_TOKEN)),
        headers=ORGANIZER_HEADERS,
    )


def test_every_api_route_answers_503_when_the_database_is_unreachable(
    unavailable: TestClient,
) -> None:
    requests = _valid_requests()
    schema = unavailable.app.openapi()  # type: ignore[attr-defined]
    api_routes = {(method.upper(), path) for path, ops in schema["paths"].items() for method in ops}
    # a new route needs a request here
    assert api_routes == set(requests) | set(_WITHOUT_DATABASE)
    for (method, path), kwargs in requests.items():
        response = unavailable.request(method, _concrete(path), **kwargs)
        assert_envelope(response, 503, "database_unavailable")
        assert response.headers["retry-after"] == "5"
        assert response.headers["cache-control"] == "no-store"
    for (method, path), kwargs in _WITHOUT_DATABASE.items():
        response = unavailable.request(method, _concrete(path), **kwargs)
        assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    ("method", "path", "kwargs"),
    [
        ("GET", "/a/some-token", {}),
        ("POST", "/a/some-token/consent", {"content": "consent=yes", "headers": FORM}),
        ("GET", "/a/some-token/judge", {}),
        ("GET", "/a/some-token/query/" + "0" * 32, {}),
    ],
)
def test_pages_show_a_friendly_503_when_the_database_is_unreachable(
    unavailable: TestClient, method: str, path: str, kwargs: dict[str, Any]
) -> None:
    response = unavailable.request(method, path, **kwargs)
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["retry-after"] == "5"
    assert "We are having trouble right now" in response.text


def test_readiness_needs_the_database_liveness_does_not(unavailable: TestClient) -> None:
    response = unavailable.get("/readyz")
    assert (response.status_code, response.json()) == (503, {"status": "not ready"})
    assert response.headers["retry-after"] == "5"
    assert unavailable.get("/healthz").json() == {"status": "ok"}


def test_readiness_with_the_database(client: TestClient) -> None:
    assert client.get("/readyz").json() == {"status": "ready"}


def test_a_locked_sqlite_database_is_503_until_the_lock_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "SQLITE_LOCK_WAIT_SECONDS", 0.3)  # 60 s in production
    path = tmp_path / "locked.sqlite3"
    upgrade_database(f"sqlite:///{path}")
    app = create_app(Settings(database_url=f"sqlite:///{path}", organizer_token=ORGANIZER_TOKEN))
    engine = app.state.session_factory.kw["bind"]

    @event.listens_for(engine, "connect")
    def impatient(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA busy_timeout=50")  # after the app's 5 s

    client = TestClient(app, headers=ORGANIZER_HEADERS)
    assert client.get("/api/campaigns").json() == []
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        assert_envelope(client.get("/api/campaigns"), 503, "database_unavailable")
        assert client.get("/readyz").status_code == 503
        writer.execute("ROLLBACK")
        assert client.get("/api/campaigns").json() == []  # no restart needed
        assert client.get("/readyz").status_code == 200
    finally:
        writer.close()
        engine.dispose()


class TcpProxy:
    """A loopback TCP proxy that can be cut (every connection dropped) and restored."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = 0
        self._listener: socket.socket | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        if self._listener is not None:
            try:  # wakes the thread blocked in accept(): close() alone would not (Linux)
                self._listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._listener.close()
            self._listener = None
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                downstream, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target, timeout=5)
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [downstream, upstream]
            for source, sink in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


@pytest.mark.skipif(
    not os.environ.get("TEST_DATABASE_URL"), reason="a Postgres outage needs TEST_DATABASE_URL"
)
def test_a_postgres_outage_is_503_and_the_app_recovers_without_restart(database_url: str) -> None:
    url = make_url(database_url)
    proxy = TcpProxy((url.host or "127.0.0.1", url.port or 5432))
    proxy.start()
    through_proxy = url.set(host="127.0.0.1", port=proxy.port)
    proxied = through_proxy.render_as_string(hide_password=False)
    app = create_app(Settings(database_url=proxied, organizer_token=ORGANIZER_TOKEN))
    client = TestClient(app, headers=ORGANIZER_HEADERS)
    try:
        assert client.get("/api/campaigns").status_code == 200
        assert client.get("/readyz").status_code == 200
        proxy.stop()  # the pooled connection dies, and no new one can be made
        assert_envelope(client.get("/api/campaigns"), 503, "database_unavailable")
        assert client.get("/readyz").status_code == 503
        proxy.start()  # the same port again
        assert client.get("/api/campaigns").status_code == 200
        assert client.get("/readyz").status_code == 200
    finally:
        proxy.stop()
        app.state.session_factory.kw["bind"].dispose()


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (
            sa_exc.OperationalError("SELECT", {}, Exception("server closed the connection")),
            503,
            "database_unavailable",
        ),
        (
            sa_exc.DBAPIError("SELECT", {}, Exception("gone"), connection_invalidated=True),
            503,
            "database_unavailable",
        ),
        (sa_exc.IntegrityError("INSERT", {}, Exception("duplicate key")), 500, "internal_error"),
        (RuntimeError("a bug"), 500, "internal_error"),
    ],
)
def test_only_an_unavailable_database_is_a_503_and_a_bug_is_still_a_500_envelope(
    session_factory: sessionmaker[Session],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    status: int,
    code: str,
) -> None:
    from mtcjudge.campaigns import service

    def fail(*args: Any) -> Any:
        raise error

    monkeypatch.setattr(service, "list_campaigns", fail)
    app = create_app(Settings(organizer_token=ORGANIZER_TOKEN), session_factory=session_factory)
    client = TestClient(app, raise_server_exceptions=False, headers=ORGANIZER_HEADERS)
    response = client.get("/api/campaigns")
    assert_envelope(response, status, code)


# ---------------------------------------------------------------- headers, docs, errors

SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


def test_every_response_carries_the_security_headers(client: TestClient, tmp_path: Path) -> None:
    for name in ("d1", "d2", "q1"):
        write_tone(tmp_path / f"{name}.wav", 220.0, seconds=0.5)
    token = invite(client, audio_dir=tmp_path)
    pair = client.get(f"/api/a/{token}/next").json()["pair"]
    responses = {
        "welcome page": client.get(f"/a/{token}"),
        "judging page": client.get(f"/a/{token}/judge"),
        "unknown page": client.get("/nope"),
        "api": client.get(f"/api/a/{token}/progress"),
        "api error": client.get("/api/a/nope/progress"),
        "413": client.post("/api/a/x/pause", content=b"x" * 70_000),
        "static": client.get("/static/css/app.css"),
        "clip": client.get(pair["query"]["audio_url"]),
        "health": client.get("/healthz"),
    }
    for what, response in responses.items():
        for name, value in SECURITY_HEADERS.items():
            assert response.headers.get(name) == value, (what, name)
    for what in ("welcome page", "judging page", "api", "api error", "413"):
        assert responses[what].headers["cache-control"] == "no-store", what
    assert responses["clip"].headers["cache-control"] == "private, max-age=3600"
    assert "no-store" not in responses["static"].headers.get("cache-control", "")


TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
#: files to download and open offline (sent as attachments, never shown under the app's
#: policy): their CSS has to be inline (docs/reports.md); everything else still applies
OFFLINE_FILES = {"report.html"}


@pytest.mark.parametrize(
    ("what", "pattern"),
    [
        ("an inline script", r"<script(?![^>]*\ssrc=)[^>]*>"),
        ("an inline event handler", r"<[^>]*\son[a-z]+\s*="),
        ("an inline style attribute", r"<[^>]*\sstyle\s*="),
        ("a style element", r"<style[\s>]"),
        ("a javascript: URL", r"javascript:"),
    ],
)
def test_templates_need_nothing_the_content_security_policy_forbids(
    what: str, pattern: str
) -> None:
    offenders = [
        f"{path.relative_to(TEMPLATES)}: {match.group(0)}"
        for path in sorted(TEMPLATES.rglob("*.html"))
        if not (what == "a style element" and path.name in OFFLINE_FILES)
        for match in re.finditer(pattern, path.read_text(), re.IGNORECASE)
    ]
    assert offenders == [], f"{what} in templates/"


def test_errors_outside_the_routes_use_the_envelope(client: TestClient) -> None:
    assert_envelope(client.get("/api/nope"), 404, "not_found")
    wrong_method = client.delete("/api/campaigns")
    assert_envelope(wrong_method, 405, "method_not_allowed")
    assert "POST" in wrong_method.headers["allow"]
    page = client.get("/nope")
    assert (page.status_code, page.headers["content-type"][:9]) == (404, "text/html")
    assert "There is no page at this address." in page.text


@pytest.mark.parametrize("path", ["/docs", "/redoc", "/openapi.json"])
def test_api_docs_are_for_organizers_only(
    session_factory: sessionmaker[Session], path: str
) -> None:
    # no exemption for this machine: without a token, only a signed-in organizer (see
    # tests/organizers) reads the docs
    local = TestClient(create_app(Settings(), session_factory=session_factory))
    assert local.get(path).status_code == 401
    guarded = TestClient(
        create_app(Settings(organizer_token="s3cret"), session_factory=session_factory)
    )
    assert guarded.get(path).status_code == 401
    assert guarded.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert guarded.get(path, headers={"Authorization": "Bearer s3cret"}).status_code == 200


def test_swagger_ui_runs_under_its_own_policy_without_unsafe_inline_scripts(
    client: TestClient,
) -> None:
    page = client.get("/docs")
    policy = page.headers["content-security-policy"]
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src
    assert re.search(r"'sha256-[A-Za-z0-9+/]+=*'", script_src)
    assert "frame-ancestors 'none'" in policy


def test_the_openapi_schema_documents_errors_and_ranges(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    envelope = schema["components"]["schemas"]["ErrorOut"]
    assert set(envelope["required"]) == {"error", "detail"}
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            documented = set(operation["responses"])
            where = f"{method.upper()} {path}"
            assert {"422", "503"} <= documented, where
            if "requestBody" in operation:
                assert "413" in documented, where
            if path.startswith("/api/campaigns"):
                assert "401" in documented, where
            if "{" in path:
                assert "404" in documented, where
            for status in documented - {"200", "201", "204"}:
                content = operation["responses"][status]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorOut"}, where
            assert "Retry-After" in operation["responses"]["503"]["headers"], where
    revise = schema["paths"]["/api/a/{token}/judgments/{judgment_id}"]["put"]
    params = {p["name"]: p["schema"] for p in revise["parameters"]}
    assert (params["judgment_id"]["minimum"], params["judgment_id"]["maximum"]) == (1, INT32_MAX)
    assert params["token"]["pattern"] == "^[A-Za-z0-9_-]{1,64}$"
    create = schema["components"]["schemas"]["CampaignCreate"]["properties"]
    assert (create["k"]["minimum"], create["k"]["maximum"]) == (1, 1000)
    assert create["lease_minutes"]["maximum"] == 7 * 24 * 60
    assert create["seed"]["maximum"] == INT32_MAX


# ---------------------------------------------------------------- access log


def test_tokens_are_redacted_from_paths() -> None:
    assert redact_tokens("/a/AbC-12_x/judge") == "/a/<redacted>/judge"
    assert redact_tokens("/api/a/AbC/next?x=1") == "/api/a/<redacted>/next?x=1"
    assert redact_tokens("/a/AbC") == "/a/<redacted>"
    assert (
        redact_tokens('"GET /a/tok/lease/3/query HTTP/1.1"')
        == '"GET /a/<redacted>/lease/3/query HTTP/1.1"'
    )
    assert redact_tokens("/static/a/b.css") == "/static/a/b.css"
    assert redact_tokens("/api/campaigns/a") == "/api/campaigns/a"


def test_create_app_installs_the_filter_on_the_access_log_once(
    session_factory: sessionmaker[Session],
) -> None:
    access = logging.getLogger("uvicorn.access")
    for existing in [f for f in access.filters if isinstance(f, RedactAssessorTokens)]:
        access.removeFilter(existing)
    create_app(Settings(), session_factory=session_factory)
    create_app(Settings(), session_factory=session_factory)
    assert sum(isinstance(f, RedactAssessorTokens) for f in access.filters) == 1


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _upload_chunked(port: int, path: str, megabytes: int) -> tuple[int, bytes]:
    """Stream a chunked body until the server answers or hangs up; (bytes sent, answer)."""
    chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"  # 64 KiB
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            for _ in range(megabytes * 16):
                if select.select([conn], [], [], 0)[0]:
                    break  # the answer is there
                conn.sendall(chunk)
                sent += 0x10000
        except OSError:
            pass  # the server closed the connection
        answer = b""
        try:
            while data := conn.recv(65536):
                answer += data
        except OSError:
            pass
    return sent, answer


def test_a_real_server_logs_no_token_and_refuses_a_huge_body_at_once(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'empty.sqlite3'}"))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="info", lifespan="off"))
    records = _Records()
    logging.getLogger("uvicorn.access").addHandler(records)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started:
            assert thread.is_alive(), "uvicorn did not start"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(
                b"POST /api/a/SeCrEtToKeN/judgments HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: 200000000\r\n\r\n" + b"{" * 1000
            )
            started = time.monotonic()
            answer = b""
            while chunk := conn.recv(65536):  # the server closes the connection
                answer += chunk
            assert time.monotonic() - started < 5
        assert answer.startswith(b"HTTP/1.1 413 ")
        assert b'"error":"payload_too_large"' in answer
        sent, answer = _upload_chunked(port, "/api/a/SeCrEtToKeN/judgments", megabytes=200)
        assert sent < 16 << 20  # what socket buffers hold, not 200 MB
        assert answer.startswith(b"HTTP/1.1 413 ")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(
                b"GET /a/SeCrEtToKeN/judge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            while conn.recv(65536):
                pass
        deadline = time.monotonic() + 5
        while len(records.lines) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
        logging.getLogger("uvicorn.access").removeHandler(records)
    assert len(records.lines) == 3, records.lines
    assert all("SeCrEtToKeN" not in line for line in records.lines)
    assert "/api/a/<redacted>/judgments" in records.lines[0]
    assert "/a/<redacted>/judge" in records.lines[2]
