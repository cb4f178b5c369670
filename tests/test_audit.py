"""The audit log: every organizer change, through the API or the command line, with its actor."""

from __future__ import annotations

import getpass
import socket
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.models import AuditEvent, Campaign
from tests.cli import run
from tests.factories import TINY_RUNS as RUNS
from tests.support import ORGANIZER_HEADERS, PASSWORD, session_csrf

#: what opening a campaign of RUNS confirms: it has no audio
NO_AUDIO = (
    "none of the 2 pool pairs can be judged: no readable audio for d1, d2, q1; assessors "
    "will be given nothing to judge"
)


def logged(session: Session, slug: str) -> list[tuple[str, str, str]]:
    """(actor, action, detail) of the campaign's events, oldest first."""
    campaign = session.scalars(select(Campaign).where(Campaign.slug == slug)).one()
    return [(e.actor, e.action, e.detail) for e in reversed(audit.events(session, campaign.id))]


def test_api_changes_are_recorded_with_the_bearer_token_as_actor(
    client: TestClient, db_session: Session
) -> None:
    client.headers.update(ORGANIZER_HEADERS)
    assert client.post("/api/campaigns", json={"name": "AMS", "runs": RUNS}).status_code == 201
    patch = {"status": "open", "target": 0.99, "keep_collecting": True, "name": "AMS 2"}
    # the campaign has no audio: opening it is confirmed, and the log keeps what was confirmed
    assert client.patch("/api/campaigns/ams", json=patch).status_code == 409
    confirmed = {**patch, "confirm_unplayable": True}
    assert client.patch("/api/campaigns/ams", json=confirmed).status_code == 200
    assert client.patch("/api/campaigns/ams", json={"target": 0.99}).status_code == 200  # no-op
    invite = client.post("/api/campaigns/ams/assessors", json={"name": "Ann"})
    assert invite.status_code == 201
    assert logged(db_session, "ams") == [
        (
            "API token",
            "campaign_created",
            "draft; 2 systems × 1 queries, 2 pool pairs, 2 pairs without playable audio",
        ),
        ("API token", "status_changed", f"draft → open (confirmed: {NO_AUDIO})"),
        (
            "API token",
            "settings_changed",
            "keep collecting no → yes, target 0.95 → 0.99, name 'AMS' → 'AMS 2'",
        ),
        ("API token", "assessor_invited", "Ann"),
    ]
    event = db_session.scalars(select(AuditEvent)).first()
    assert event is not None
    assert event.organizer_id is None


def test_api_changes_of_a_signed_in_organizer_name_them(
    signed_in: TestClient, db_session: Session
) -> None:
    signed_in.headers["X-CSRF-Token"] = session_csrf(signed_in)
    body = {"name": "AMS", "runs": RUNS, "status": "open", "confirm_unplayable": True}
    assert signed_in.post("/api/campaigns", json=body).status_code == 201
    assert signed_in.patch("/api/campaigns/ams", json={"status": "closed"}).status_code == 200
    assert logged(db_session, "ams") == [
        (
            "ada",
            "campaign_created",
            "open; 2 systems × 1 queries, 2 pool pairs, 2 pairs without playable audio",
        ),
        ("ada", "status_changed", "open → closed"),
    ]
    events = db_session.scalars(select(AuditEvent).where(AuditEvent.campaign_id.is_not(None)))
    assert {e.organizer_id for e in events} != {None}


def test_refused_changes_record_nothing(client: TestClient, db_session: Session) -> None:
    client.headers.update(ORGANIZER_HEADERS)
    assert client.post("/api/campaigns", json={"name": "AMS", "runs": RUNS}).status_code == 201
    assert client.patch("/api/campaigns/ams", json={"target": 0.2}).status_code == 400
    assert client.patch("/api/campaigns/ams", json={"scale": "broad"}).status_code == 422
    assert client.post("/api/campaigns/ams/assessors", json={"name": " "}).status_code == 400
    no_token = client.patch(
        "/api/campaigns/ams", json={"status": "open"}, headers={"Authorization": "Bearer no"}
    )
    assert no_token.status_code == 401
    assert [action for _, action, _ in logged(db_session, "ams")] == ["campaign_created"]


def test_events_are_newest_first_and_limited(db_session: Session) -> None:
    campaign = Campaign(slug="c", name="C")
    db_session.add(campaign)
    db_session.flush()
    for i in range(5):
        audit.record(db_session, campaign.id, audit.Actor("x"), audit.SETTINGS_CHANGED, f"{i}")
    audit.record(db_session, None, "someone", audit.ORGANIZER_CREATED, "bob")
    assert [e.detail for e in audit.events(db_session, campaign.id, limit=3)] == ["4", "3", "2"]
    assert [e.detail for e in audit.events(db_session, None)] == ["bob"]
    shown = audit.recent_events(db_session, limit=2)
    assert [(e.detail, e.campaign_name, e.label) for e in shown] == [
        ("bob", None, "created an organizer account"),
        ("4", "C", "changed settings"),
    ]


def test_the_command_line_actor_names_the_account_and_machine() -> None:
    actor = audit.command_line_actor()
    assert actor == audit.Actor(f"command line ({getpass.getuser()}@{socket.gethostname()})")


# ---------------------------------------------------------------- the command line


@pytest.fixture
def database(empty_database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("MTCJUDGE_BASE_URL", "http://127.0.0.1:8000")
    return empty_database_url


def test_command_line_changes_are_recorded(
    database: str, tmp_path: Path, read_session: sessionmaker[Session]
) -> None:
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS)
    db = ["--database-url", database]
    confirm = ["--confirm-unplayable"]  # no audio: no pair can be played
    commands = [
        ["campaign", "create", "--name", "AMS", "--runs", str(runs), "--open", *confirm, *db],
        ["campaign", "close", "ams", *db],
        ["campaign", "open", "ams", *confirm, *db],
        ["campaign", "set", "ams", "--target", "0.9", "--lease-minutes", "20", *db],
        ["assessor", "invite", "ams", "--name", "Ada", *db],
        ["assessor", "relink", "ams", "--name", "Ada", *db],
        ["assessor", "revoke", "ams", "--name", "Ada", *db],
    ]
    for command in commands:
        code, _out, err = run(*command)
        assert code == 0, (command, err)
    # a failing command records nothing
    assert run("campaign", "set", "ams", "--target", "0.9", *db)[0] == 0  # unchanged: nothing
    assert run("assessor", "revoke", "ams", "--name", "Bob", *db)[0] == 2
    actor = audit.command_line_actor().name
    with read_session() as session:
        assert logged(session, "ams") == [
            (
                actor,
                "campaign_created",
                "open; 2 systems × 1 queries, 2 pool pairs, 2 pairs without playable audio",
            ),
            (actor, "status_changed", "open → closed"),
            (actor, "status_changed", f"closed → open (confirmed: {NO_AUDIO})"),
            (actor, "settings_changed", "target 0.95 → 0.9, lease minutes 10 → 20"),
            (actor, "assessor_invited", "Ada"),
            (actor, "assessor_relinked", "Ada"),
            (actor, "assessor_revoked", "Ada"),
        ]


def test_organizer_account_changes_are_recorded(
    database: str, read_session: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    db = ["--database-url", database]
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert run("organizer", "create", "ada", "--password-stdin", *db)[0] == 0
    assert run("organizer", "disable", "ada", *db)[0] == 0
    actor = audit.command_line_actor().name
    with read_session() as session:
        assert [(e.actor, e.action, e.detail) for e in audit.events(session, None)] == [
            (actor, "organizer_disabled", "ada"),
            (actor, "organizer_created", "ada"),
        ]
