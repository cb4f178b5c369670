"""Helpers shared by the test modules: scratch databases, short audio clips, the pool's
counters against its judgments, the planner's plan, a volunteer's next hand-out, the
organizer's credentials and signing in.

The builders of test data (campaigns, assessors) are in :mod:`tests.factories`, real servers in
:mod:`tests.servers`, the browser tests' set-up in :mod:`tests.browser`."""

from __future__ import annotations

import os
import re
import uuid
import wave
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import Connection, func, select, text, update
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from mtcjudge.clips.rendition import clip_source, rendition
from mtcjudge.db import make_database_engine
from mtcjudge.models import Document, Judgment, Lease, Pair, PlanEntry, counted_judgment


def postgres_schema_url(url: str, schema: str) -> str:
    """``url`` with its search path set to ``schema``."""
    parsed = make_url(url)
    return parsed.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


@contextmanager
def empty_database(directory: Path, name: str) -> Iterator[str]:
    """URL of a new, empty database: an SQLite file in ``directory``, or a fresh Postgres
    schema (dropped afterwards) when ``TEST_DATABASE_URL`` is set."""
    base = os.environ.get("TEST_DATABASE_URL")
    if not base:
        yield f"sqlite:///{directory / f'{name}.sqlite3'}"
        return
    schema = f"mtcjudge_{name}_{uuid.uuid4().hex[:10]}"
    admin = make_database_engine(base)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield postgres_schema_url(base, schema)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def write_tone(
    path: Path, frequency: float, seconds: float = 4.0, rate: int = 16000, amplitude: float = 0.25
) -> None:
    """A sine tone as 16-bit mono WAV, faded at both ends so it does not click."""
    t = np.arange(int(seconds * rate)) / rate
    envelope = np.minimum(1.0, np.minimum(t, seconds - t) * 20)
    samples = (amplitude * envelope * np.sin(2 * np.pi * frequency * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())


def judged_and_counted(
    connection: Connection | Session, campaign_id: int
) -> tuple[dict[int, int], dict[int, int]]:
    """Each pool pair's ``judged`` counter and how many of its judgments count, by pair id:
    the two must agree (docs/reliability.md)."""
    counted = dict(
        connection.execute(
            select(Pair.id, func.count(Judgment.id))
            .outerjoin(
                Judgment,
                (Judgment.campaign_id == Pair.campaign_id)
                & (Judgment.query_id == Pair.query_id)
                & (Judgment.document_id == Pair.document_id)
                & counted_judgment(),
            )
            .where(Pair.campaign_id == campaign_id)
            .group_by(Pair.id)
        ).all()
    )
    judged = dict(
        connection.execute(
            select(Pair.id, Pair.judged).where(Pair.campaign_id == campaign_id)
        ).all()
    )
    return judged, counted


def plan_rows(connection: Connection | Session, campaign_id: int) -> list[tuple[int, int]]:
    """The planner's plan of the campaign, first hand-out first: (query id, document id)."""
    rows = connection.execute(
        select(Pair.query_id, Pair.document_id)
        .join(PlanEntry, PlanEntry.pair_id == Pair.id)
        .where(PlanEntry.campaign_id == campaign_id)
        .order_by(PlanEntry.rank)
    ).all()
    return [(q, d) for q, d in rows]


#: the organizer API's bearer token in tests: the API answers nobody without it (or a session)
ORGANIZER_TOKEN = "test-organizer-token"
ORGANIZER_HEADERS = {"Authorization": f"Bearer {ORGANIZER_TOKEN}"}
#: the content type of a form the tests post
FORM_HEADERS = {"content-type": "application/x-www-form-urlencoded"}

#: the password of the organizer accounts the tests create
PASSWORD = "correct horse battery"
#: argon2's smallest sensible parameters: these tests sign in often (the real ones take ~0.1 s)
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
_CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_field(html: str) -> str:
    """The first CSRF token of a page's forms."""
    found = _CSRF_FIELD.search(html)
    assert found, "no csrf_token field on the page"
    return found.group(1)


def sign_in(client: TestClient, username: str, password: str = PASSWORD, **extra: str) -> Any:
    """Open the sign-in page and send its form, as a browser does; returns the answer to the
    form (not followed)."""
    form = client.get("/login")
    assert form.status_code == 200, form.text
    data = {"username": username, "password": password, "csrf_token": csrf_field(form.text)}
    data.update(extra)
    return client.post("/login", data=data, follow_redirects=False)


def next_body(client: TestClient, token: str) -> dict[str, Any]:
    """The answer to the volunteer's ``GET /api/a/{token}/next`` (asserted 200)."""
    response = client.get(f"/api/a/{token}/next")
    assert response.status_code == 200, response.text
    return dict(response.json())


def session_csrf(client: TestClient) -> str:
    """The CSRF token of the client's signed-in session, from the landing page's sign-out
    form."""
    page = client.get("/")
    assert "Signed in as" in page.text, page.text
    return csrf_field(page.text)


def served_clip(document: Any) -> bytes:
    """The bytes the clip route serves for a document: its MP3 rendition."""
    clip = clip_source(
        document.audio_path,
        document.content_sha256,
        document.excerpt_start,
        document.duration_seconds,
        document.source_seconds,
    )
    return rendition(clip).read_bytes()


def lease_of(db_session, pair: dict[str, Any]) -> Lease:
    lease = db_session.get(Lease, pair["lease_id"])
    db_session.refresh(lease)
    return lease


def judge_pool(db_session, client, token, n: int) -> list[dict[str, Any]]:
    """Judge ``n`` hand-outs, asserting they are pool pairs; the pairs as the API gave them."""
    pairs = []
    for _ in range(n):
        pair = next_body(client, token)["pair"]
        assert lease_of(db_session, pair).kind == "pool"
        body = {"lease_id": pair["lease_id"], "broad": 1, "fine": 40.0}
        response = client.post(
            f"/api/a/{token}/judgments", json={**body, "client_id": str(uuid.uuid4())}
        )
        assert response.status_code == 201, response.text
        pairs.append(pair)
    return pairs


def no_genres(db_session, fx: Any) -> None:
    """No document of the campaign ``fx`` has a genre (no anchor trial can be drawn)."""
    db_session.execute(
        update(Document).where(Document.campaign_id == fx.campaign.id).values(genre=None)
    )
    db_session.flush()
