"""The listening rule, the share of quality trials and automatic pausing: set at creation
(API, command line), changed later (API, command line) with a line in the audit log, shown
with the campaign, checked with clear messages. Stored and shown only here: the judging
path enforces them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.main import create_app
from mtcjudge.models import DEFAULT_LISTEN_SECONDS, DEFAULT_QUALITY_RATE, AuditEvent, Campaign
from tests.cli import run
from tests.factories import TINY_RUNS as RUNS
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN


@pytest.fixture
def client(session_factory: sessionmaker[Session]) -> Iterator[TestClient]:
    settings = Settings(organizer_token=ORGANIZER_TOKEN)
    app = create_app(settings, session_factory=session_factory)
    with TestClient(app, headers=ORGANIZER_HEADERS) as test_client:
        yield test_client


def create(client: TestClient, **fields: Any) -> Any:
    return client.post("/api/campaigns", json={"name": "AMS", "runs": RUNS, **fields})


def test_a_new_campaign_listens_and_checks_by_default(client: TestClient) -> None:
    created = create(client)
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["listen_seconds"], body["quality_rate"], body["auto_pause"]) == (
        DEFAULT_LISTEN_SECONDS,
        DEFAULT_QUALITY_RATE,
        False,
    )
    assert (DEFAULT_LISTEN_SECONDS, DEFAULT_QUALITY_RATE) == (5.0, 0.1)
    detail = client.get("/api/campaigns/ams").json()
    assert (detail["listen_seconds"], detail["quality_rate"], detail["auto_pause"]) == (
        5.0,
        0.1,
        False,
    )
    listed = client.get("/api/campaigns").json()
    assert listed[0]["listen_seconds"] == 5.0


def test_settings_given_at_creation(client: TestClient) -> None:
    created = create(client, listen_seconds=0, quality_rate=0.3, auto_pause=True)
    assert created.status_code == 201, created.text
    body = created.json()
    assert (body["listen_seconds"], body["quality_rate"], body["auto_pause"]) == (0.0, 0.3, True)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("listen_seconds", -1),
        ("listen_seconds", 120.5),
        ("listen_seconds", "five"),
        ("quality_rate", 0.31),
        ("quality_rate", -0.1),
        ("auto_pause", "sometimes"),
    ],
)
def test_out_of_range_settings_are_refused_by_name(
    client: TestClient, field: str, value: object
) -> None:
    refused = create(client, **{field: value})
    assert refused.status_code == 422, refused.text
    assert refused.json()["error"] == "malformed_request"
    assert field in refused.json()["detail"]
    assert client.get("/api/campaigns").json() == []
    create(client)
    patched = client.patch("/api/campaigns/ams", json={field: value})
    assert patched.status_code == 422, patched.text
    assert field in patched.json()["detail"]


def test_not_a_number_is_refused(client: TestClient) -> None:
    body = '{"name": "AMS", "runs": "S1\\tq1\\td1\\n", "listen_seconds": NaN}'
    refused = client.post(
        "/api/campaigns", content=body, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 422, refused.text
    assert "listen_seconds" in refused.json()["detail"]


def test_changed_later_and_recorded(client: TestClient, db_session: Session) -> None:
    create(client)
    patched = client.patch(
        "/api/campaigns/ams", json={"listen_seconds": 8, "quality_rate": 0, "auto_pause": True}
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert (body["listen_seconds"], body["quality_rate"], body["auto_pause"]) == (8.0, 0.0, True)
    campaign = db_session.scalars(select(Campaign).where(Campaign.slug == "ams")).one()
    assert (campaign.listen_seconds, campaign.quality_rate, campaign.auto_pause) == (
        8.0,
        0.0,
        True,
    )
    [event] = db_session.scalars(
        select(AuditEvent).where(AuditEvent.action == audit.SETTINGS_CHANGED)
    ).all()
    assert event.detail == ("listen seconds 5.0 → 8.0, quality rate 0.1 → 0.0, auto pause no → yes")


def test_the_browser_form_sends_them_too(client: TestClient) -> None:
    body = {
        "name": "Form",
        "runs": [{"name": "runs.tsv", "text": RUNS}],
        "listen_seconds": 2.5,
        "quality_rate": 0.05,
        "auto_pause": True,
    }
    created = client.post("/api/campaigns/import", json=body)
    assert created.status_code == 201, created.text
    answer = created.json()
    assert (answer["listen_seconds"], answer["quality_rate"], answer["auto_pause"]) == (
        2.5,
        0.05,
        True,
    )
    refused = client.post("/api/campaigns/import", json={**body, "quality_rate": 0.9})
    assert refused.status_code == 422
    assert "quality_rate" in refused.json()["detail"]


# ---------------------------------------------------------------- the command line


@pytest.fixture
def database(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    return empty_database_url


def stored(database: str) -> tuple[float, float, bool]:
    from mtcjudge.db import make_database_engine, make_sessionmaker

    engine = make_database_engine(database)
    try:
        with make_sessionmaker(engine)() as session:
            c = session.scalars(select(Campaign)).one()
            return c.listen_seconds, c.quality_rate, c.auto_pause
    finally:
        engine.dispose()


def test_the_command_line_sets_them(database: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS)
    db = ["--database-url", database]
    code, _, err = run("campaign", "create", "--name", "AMS", "--runs", str(runs), *db)
    assert code == 0, err
    assert stored(database) == (5.0, 0.1, False)
    code, out, err = run(
        "campaign", "set", "ams", "--listen-seconds", "0", "--quality-rate", "0.2",
        "--auto-pause", *db,
    )  # fmt: skip
    assert code == 0, err
    assert "listen seconds 0.0, quality rate 0.2, auto pause True" in out
    assert stored(database) == (0.0, 0.2, True)
    assert run("campaign", "set", "ams", "--no-auto-pause", *db)[0] == 0
    assert stored(database)[2] is False
    assert stored(database) == (0.0, 0.2, False)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--listen-seconds", "121", "listen seconds must be a number from 0 to 120"),
        ("--listen-seconds", "nan", "listen seconds must be a number from 0 to 120"),
        ("--quality-rate", "0.5", "quality rate must be a number from 0 to 0.3"),
        ("--quality-rate", "often", "expected a number, found 'often'"),
    ],
)
def test_the_command_line_refuses_out_of_range(
    option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        run("campaign", "set", "ams", option, value)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_the_command_line_creates_with_them(database: str, tmp_path: Path) -> None:
    runs = tmp_path / "runs.tsv"
    runs.write_text(RUNS)
    code, _, err = run(
        "campaign", "create", "--name", "AMS", "--runs", str(runs), "--listen-seconds", "3",
        "--quality-rate", "0", "--auto-pause", "--database-url", database,
    )  # fmt: skip
    assert code == 0, err
    assert stored(database) == (3.0, 0.0, True)


def test_the_help_says_what_they_do(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run("campaign", "create", "--help")
    flat = " ".join(capsys.readouterr().out.split())
    assert "--listen-seconds S" in flat
    assert "0 turns the listening rule off (default 5.0)" in flat
    assert "--quality-rate R" in flat
    assert "--auto-pause" in flat
    assert "--confirm-unplayable" in flat
    with pytest.raises(SystemExit):
        run("campaign", "set", "--help")
    assert "--no-auto-pause" in capsys.readouterr().out
