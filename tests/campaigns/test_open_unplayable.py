"""The organizer is told which pairs cannot be played, and opens such a campaign only on
purpose: at preview, on the management page (whose Open asks for a confirmation), and the
settings of the listening rule and quality trials on the pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.models import AuditEvent, Campaign
from tests.factories import write_clips
from tests.support import ORGANIZER_HEADERS, session_csrf

RUNS = "system\tquery\tdoc\n" + "".join(
    f"S{s}\tq{q}\td{(q * 7 + s * 2 + i) % 20}\n"
    for s in range(3)
    for q in range(4)
    for i in range(5)
)
DOCS = [f"d{i}" for i in range(20)] + [f"q{q}" for q in range(4)]


def create(make_client, slug: str, **fields: object) -> None:
    created = make_client().post(
        "/api/campaigns",
        json={"name": slug.title(), "slug": slug, "runs": RUNS, **fields},
        headers=ORGANIZER_HEADERS,
    )
    assert created.status_code == 201, created.text


def campaign(session_factory: sessionmaker[Session], slug: str) -> Campaign:
    with session_factory() as session:
        return session.scalars(select(Campaign).where(Campaign.slug == slug)).one()


def status_events(session_factory: sessionmaker[Session], slug: str) -> list[str]:
    with session_factory() as session:
        found = campaign(session_factory, slug)
        return [
            e.detail
            for e in session.scalars(
                select(AuditEvent).where(
                    AuditEvent.campaign_id == found.id,
                    AuditEvent.action == audit.STATUS_CHANGED,
                )
            )
        ]


def test_opening_without_audio_asks_for_a_confirmation(
    signed_in: TestClient, make_client, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    # an audio folder that matches none of the clips, as a MIREX folder given by mistake
    create(make_client, "silent", audio_dir=str(write_clips(tmp_path / "other", ["x1", "x2"])))
    csrf = session_csrf(signed_in)
    page = signed_in.get("/campaigns/silent/manage").text
    assert 'id="open-warning"' in page
    assert re.search(r"none of the \d+ pool pairs can be judged: no readable audio for d\d", page)

    # Open: the confirmation, nothing changed
    answer = signed_in.post(
        "/campaigns/silent/manage/status", data={"csrf_token": csrf, "status": "open"}
    )
    assert answer.status_code == 409
    assert "Open with pairs that cannot be played?" in answer.text
    assert "They will never be handed out or judged" in answer.text
    form = re.search(r'<div class="notice notice--warn confirm-open".*?</form>', answer.text, re.S)
    assert form is not None
    assert 'name="confirm_unplayable" value="yes"' in form.group(0)
    assert 'name="csrf_token"' in form.group(0)
    assert "Open anyway" in form.group(0)
    assert campaign(session_factory, "silent").status == "draft"
    assert status_events(session_factory, "silent") == []

    # Open anyway: open, and the log keeps what was confirmed
    answer = signed_in.post(
        "/campaigns/silent/manage/status",
        data={"csrf_token": csrf, "status": "open", "confirm_unplayable": "yes"},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
    assert campaign(session_factory, "silent").status == "open"
    [detail] = status_events(session_factory, "silent")
    assert detail.startswith("draft → open (confirmed: none of the")
    # an open campaign's page warns no more of opening (the dashboard keeps the warning)
    assert 'id="open-warning"' not in signed_in.get("/campaigns/silent/manage").text


def test_a_campaign_whose_clips_are_all_there_opens_at_once(
    signed_in: TestClient, make_client, session_factory: sessionmaker[Session], tmp_path: Path
) -> None:
    create(make_client, "heard", audio_dir=str(write_clips(tmp_path / "audio", DOCS)))
    csrf = session_csrf(signed_in)
    assert 'id="open-warning"' not in signed_in.get("/campaigns/heard/manage").text
    answer = signed_in.post(
        "/campaigns/heard/manage/status",
        data={"csrf_token": csrf, "status": "open"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    assert campaign(session_factory, "heard").status == "open"
    assert status_events(session_factory, "heard") == ["draft → open"]


def test_some_clips_missing_says_how_many_pairs(
    signed_in: TestClient, make_client, tmp_path: Path
) -> None:
    create(make_client, "partly", audio_dir=str(write_clips(tmp_path / "a", DOCS[1:])))
    page = signed_in.get("/campaigns/partly/manage").text
    found = re.search(
        r"(\d+) of (\d+) pool pairs cannot be judged: no readable audio for d0;", page
    )
    assert found is not None
    assert 0 < int(found.group(1)) < int(found.group(2))
    api = make_client().patch(
        "/api/campaigns/partly", json={"status": "open"}, headers=ORGANIZER_HEADERS
    )
    assert api.status_code == 409
    assert api.json()["error"] == "unplayable_pairs"
    assert f"{found.group(1)} of {found.group(2)} pool pairs" in api.json()["detail"]


@pytest.mark.parametrize("audio", ["nothing matches", "no folder"])
def test_the_preview_says_no_pair_can_be_played(
    signed_in: TestClient, tmp_path: Path, audio: str
) -> None:
    body: dict[str, object] = {"runs": [{"name": "runs.tsv", "text": RUNS}], "k": 3}
    if audio == "nothing matches":
        body["audio_dir"] = str(write_clips(tmp_path / "other", ["x1"]))
    answer = signed_in.post(
        "/api/campaigns/preview", json=body, headers={"X-CSRF-Token": session_csrf(signed_in)}
    )
    assert answer.status_code == 200, answer.text
    preview = answer.json()
    pool = preview["pool_pairs"]
    if audio == "nothing matches":
        assert preview["audio"]["found"] == 0
        assert preview["audio"]["unplayable_pairs"] == pool
    else:
        assert preview["audio"] is None
    [note] = [n for n in preview["notes"] if "can be played" in n]
    assert note.startswith(f"none of the {pool} pool pairs can be played")
    assert "assessors would be given nothing to judge" in note
    assert "opening the campaign asks you to confirm" in note


def test_the_preview_counts_the_pairs_of_missing_clips(
    signed_in: TestClient, tmp_path: Path
) -> None:
    body = {
        "runs": [{"name": "runs.tsv", "text": RUNS}],
        "k": 3,
        "audio_dir": str(write_clips(tmp_path / "a", DOCS[1:])),
    }
    answer = signed_in.post(
        "/api/campaigns/preview", json=body, headers={"X-CSRF-Token": session_csrf(signed_in)}
    )
    preview = answer.json()
    unplayable = preview["audio"]["unplayable_pairs"]
    assert 0 < unplayable < preview["pool_pairs"]
    assert f"{unplayable} of the {preview['pool_pairs']} pool pairs cannot be played" in " ".join(
        preview["notes"]
    )


def test_the_pages_show_and_change_the_listening_and_trial_settings(
    signed_in: TestClient, make_client, session_factory: sessionmaker[Session]
) -> None:
    form = signed_in.get("/new-campaign").text
    assert re.search(r'id="field-listen_seconds"[^>]*value="5.0"[^>]*min="0.0" max="120.0"', form)
    assert re.search(r'id="field-quality_rate"[^>]*value="0.1"[^>]*min="0.0" max="0.3"', form)
    assert 'id="field-auto_pause"' in form

    create(make_client, "set")
    csrf = session_csrf(signed_in)
    page = signed_in.get("/campaigns/set/manage").text
    assert re.search(r'id="setting-listen_seconds" name="listen_seconds" value="5.0"', page)
    assert re.search(r'id="setting-quality_rate" name="quality_rate" value="0.1"', page)
    assert 'id="setting-auto_pause"' in page
    data = {
        "csrf_token": csrf,
        "name": "Set",
        "description": "",
        "target": "0.95",
        "lease_minutes": "10",
        "judgments_per_pair": "1",
        "listen_seconds": "0",
        "quality_rate": "0.25",
        "auto_pause": "yes",
    }
    answer = signed_in.post("/campaigns/set/manage/settings", data=data, follow_redirects=False)
    assert answer.status_code == 303, answer.text
    stored = campaign(session_factory, "set")
    assert (stored.listen_seconds, stored.quality_rate, stored.auto_pause) == (0.0, 0.25, True)
    for field, value, message in (
        ("listen_seconds", "200", "listen_seconds must be a number from 0 to 120"),
        ("listen_seconds", "soon", "Give a number from 0 to 120 (0 turns it off)."),
        ("quality_rate", "0.5", "quality_rate must be a number from 0 to 0.3"),
    ):
        answer = signed_in.post("/campaigns/set/manage/settings", data={**data, field: value})
        assert answer.status_code == 400, field
        error = re.search(rf'id="setting-{field}-error">([^<]*)<', answer.text)
        assert error is not None, field
        assert message in error.group(1)
    stored = campaign(session_factory, "set")
    assert (stored.listen_seconds, stored.quality_rate, stored.auto_pause) == (0.0, 0.25, True)
