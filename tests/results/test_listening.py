"""The results document's listening section (docs/method.md §11) through the planner, the API
and ``mtcjudge campaign status``: hours spent by assessor, hours to each projected target, a
hidden trial's answer, a document stored before the section existed, another measure."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from mtcjudge.cli.campaign_status import format_campaign_status, hours_span, hours_text
from mtcjudge.config import Settings
from mtcjudge.db import session_scope
from mtcjudge.main import create_app
from mtcjudge.models import Assessor, CampaignResults, Judgment, Lease, utcnow
from mtcjudge.planner.projector import Projector
from mtcjudge.planner.service import Planner
from mtcjudge.results import read as results
from tests.factories import PlanningClient, build_campaign
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN


@pytest.fixture
def app_client(session_factory):
    """An app on the test's transaction whose planner projects in the request's thread and
    computes the listening time at every tick that finds new judgments."""
    app = create_app(Settings(organizer_token=TOKEN), session_factory=session_factory)
    app.state.planner.projector = Projector(inline=True, runs=4, max_seconds=None)
    app.state.planner.listening_seconds = 0.0
    return PlanningClient(app)


def judge(client: TestClient, token: str, fine: float, *, listen_ms: int = 2000) -> None:
    pair = client.get(f"/api/a/{token}/next").json()
    assert pair["status"] == "pair", pair
    response = client.post(
        f"/api/a/{token}/judgments",
        json={
            "lease_id": pair["pair"]["lease_id"],
            "broad": 1,
            "fine": fine,
            "client_id": str(uuid.uuid4()),
            "query_listen_ms": listen_ms // 2,
            "candidate_listen_ms": listen_ms - listen_ms // 2,
        },
    )
    assert response.status_code == 201, response.text


def get_results(client: TestClient, slug: str, **params: str) -> dict:
    response = client.get(f"/api/campaigns/{slug}/results", params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


def stored_document(session, campaign_id: int) -> dict:
    session.expire_all()
    return json.loads(session.get(CampaignResults, campaign_id).document)


def test_the_document_says_the_hours_spent_and_to_each_target(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, n_assessors=3)
    for value in (90.0, 10.0, 55.0):
        judge(app_client, fx.tokens[0], value)
    judge(app_client, fx.tokens[1], 70.0)
    app_client.plan()
    document = get_results(app_client, fx.campaign.slug)
    assert list(document)[-1] == "listening"  # after every key the document had
    listening = document["listening"]
    assert listening["level"] == 0.8
    assert listening["spent"]["judgments"] == 4
    assert 0 < listening["spent"]["listening_hours"] <= listening["spent"]["hours"]
    # by assessor id, with the pseudonyms of the document's assessors
    named = {a["id"]: a["pseudonym"] for a in document["assessors"]}
    assert [(a["pseudonym"], a["judgments"]) for a in listening["assessors"]] == [
        ("A1", 3),
        ("A2", 1),
    ]
    assert all(named[a["id"]] == a["pseudonym"] for a in listening["assessors"])
    assert sum(a["hours"] for a in listening["assessors"]) == pytest.approx(
        listening["spent"]["hours"], abs=2e-4
    )
    # what the numbers rest on
    assert listening["defaults"]["decision_seconds"] == 10.0
    assert listening["parameters"]["judgments"] == 4
    assert listening["query_changes"]["prior"] == 0.2
    assert listening["pool"]["pairs"] == document["pool_pairs"]
    assert listening["pool"]["query_seconds"] == 1.0  # the test clips last a second
    # one entry per projected target, in the same order
    targets = listening["targets"]
    assert [t["target"] for t in targets] == [p["target"] for p in document["projections"]]
    for t, p in zip(targets, document["projections"], strict=True):
        assert t["reached"] == p["reached"]
        if p["reached"]:
            assert t["hours"] == 0
        elif p["median"] is None:
            assert t["hours"] is None
        else:
            assert t["judgments"] == p["median"]
            assert t["low"] <= t["hours"]
            assert t["high"] is None or t["hours"] <= t["high"]
    # the planner stored the section beside the engine part, without pseudonyms
    stored = stored_document(db_session, fx.campaign.id)
    assert [a["pseudonym"] for a in stored["listening"]["assessors"]] == [None, None]
    assert stored["listening"]["spent"] == listening["spent"]


def test_a_hidden_trial_s_answer_alone_brings_a_new_document(db_session, session_factory) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3)
    planner = Planner(session_factory, projector=Projector(inline=True, runs=2))
    planner.listening_seconds = 0.0
    planner.run_once()
    planner.run_once()  # the first projection lands
    db_session.expire_all()
    before = db_session.get(CampaignResults, fx.campaign.id).version
    planner.run_once(force=True)  # nothing new: no new document
    db_session.expire_all()
    assert db_session.get(CampaignResults, fx.campaign.id).version == before
    # a reference trial answered (no pool pair changes): the hours spent change
    assessor = db_session.scalar(
        select(func.min(Assessor.id)).where(Assessor.campaign_id == fx.campaign.id)
    )
    query = fx.queries[0]
    now = utcnow()
    lease = Lease(
        campaign_id=fx.campaign.id,
        pair_id=None,
        query_id=query.id,
        document_id=query.document_id,
        assessor_id=assessor,
        kind="reference",
        state="done",
        leased_at=now - timedelta(seconds=40),
        expires_at=now + timedelta(minutes=10),
    )
    db_session.add(lease)
    db_session.flush()
    db_session.add(
        Judgment(
            campaign_id=fx.campaign.id,
            query_id=query.id,
            document_id=query.document_id,
            assessor_id=lease.assessor_id,
            fine=90.0,
            kind="reference",
            source="assessor",
            lease_id=lease.id,
            query_listen_ms=1000,
            candidate_listen_ms=1000,
            created_at=now,
            updated_at=now,
        )
    )
    db_session.commit()
    planner.run_once()
    document = stored_document(db_session, fx.campaign.id)
    assert db_session.get(CampaignResults, fx.campaign.id).version == before + 1
    assert document["results"]["judgments"] == 0  # no pool pair judged
    assert document["listening"]["spent"]["judgments"] == 1
    assert document["listening"]["spent"]["hours"] > 0


def test_a_document_stored_before_the_section_existed_still_loads(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3)
    for value in (90.0, 10.0):
        judge(app_client, fx.tokens[0], value)
    app_client.plan()
    fresh = get_results(app_client, fx.campaign.slug)
    stored = stored_document(db_session, fx.campaign.id)
    del stored["listening"]
    db_session.execute(
        update(CampaignResults)
        .where(CampaignResults.campaign_id == fx.campaign.id)
        .values(document=json.dumps(stored))
    )
    db_session.commit()
    # a plain client: nothing plans, so nothing rewrites the document
    response = TestClient(app_client.app).get(
        f"/api/campaigns/{fx.campaign.slug}/results", headers=AUTH
    )
    assert response.status_code == 200
    old = response.json()
    # the engine part as stored; the section computed from the rows, with the hours to
    # each target of the stored projections
    assert old["version"] == fresh["version"]
    assert old["listening"] == fresh["listening"]
    with session_scope(app_client.app.state.session_factory) as session:
        document = results.results_for(session, fx.campaign.slug)
    assert document.listening.spent.judgments == 2


def test_another_measure_has_the_hours_spent_but_none_to_targets(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3)
    judge(app_client, fx.tokens[0], 90.0)
    app_client.plan()
    own = get_results(app_client, fx.campaign.slug)
    other = get_results(app_client, fx.campaign.slug, measure="ndcg", scale="broad")
    assert own["listening"]["targets"]
    assert other["listening"]["targets"] == []
    assert other["listening"]["spent"] == own["listening"]["spent"]
    assert other["listening"]["pool"] == own["listening"]["pool"]


def test_campaign_status_prints_the_hours(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, n_assessors=2)
    for i, value in enumerate((90.0, 10.0, 55.0, 30.0)):
        judge(app_client, fx.tokens[i % 2], value)
    app_client.plan()
    with session_scope(app_client.app.state.session_factory) as session:
        document = results.results_for(session, fx.campaign.slug)
    text = format_campaign_status(document)
    listening = document.listening
    lines = text.splitlines()
    spent = next(line for line in lines if line.startswith("  hours spent"))
    assert f"({listening.spent.judgments} judgment(s)" in spent
    assert "of it listening" in spent
    assert [line.split()[0] for line in lines if line.startswith("    A")] == ["A1", "A2"]
    to_target = [line for line in lines if line.startswith("  hours to 0.")]
    assert len(to_target) == len(listening.targets)
    assert sum(line.endswith(", this campaign's target") for line in to_target) == 1
    assert any(line.startswith("  whole pool once") for line in lines)


def test_hours_are_said_in_seconds_minutes_or_hours() -> None:
    assert [hours_text(h) for h in (None, 0.001, 0.1, 0.99, 1.0, 12.34)] == [
        "?",
        "4 s",
        "6 min",
        "59 min",
        "1.0 h",
        "12.3 h",
    ]
    assert hours_span(9.5, 22.0) == "9.5-22.0 h"
    assert hours_span(0.5, 1.5) == "30 min to 1.5 h"
    assert hours_span(21.0, None) == "21.0 h or more"


def test_the_planner_stores_each_assessors_pace_for_the_judging_path(
    db_session, app_client
) -> None:
    """The fitted model's paces (docs/method.md §12): the pool's on the planner's row, each
    assessor's in ``assessor_pace``; the judging path reads them with the context."""
    from mtcjudge.judging.repository.context import next_context
    from mtcjudge.models import AssessorPace, PlannerState

    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, n_assessors=3)
    for value in (90.0, 10.0, 55.0):
        judge(app_client, fx.tokens[0], value, listen_ms=1200)
    app_client.plan()
    db_session.expire_all()
    state = db_session.get(PlannerState, fx.campaign.id)
    pooled = (
        state.pace_query_new,
        state.pace_query_same,
        state.pace_candidate,
        state.pace_decision,
    )
    assert None not in pooled
    rows = db_session.scalars(
        select(AssessorPace).where(AssessorPace.campaign_id == fx.campaign.id)
    ).all()
    judged = db_session.scalar(select(Assessor.id).where(Assessor.id == rows[0].assessor_id))
    assert [(r.assessor_id, r.judgments) for r in rows] == [(judged, 3)]
    mine = rows[0]
    context, newcomer = (
        next_context(db_session, fx.tokens[0]),
        next_context(db_session, fx.tokens[2]),
    )
    assert context is not None
    assert newcomer is not None
    assert context.pace == pytest.approx(
        (mine.query_new, mine.query_same, mine.candidate, mine.decision)
    )
    # an assessor not fitted yet: the pool's pace
    assert newcomer.pace == pytest.approx(pooled)
