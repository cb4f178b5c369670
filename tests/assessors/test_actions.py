"""Organizers act on an assessor's reliability: set their judgments aside and bring them
back, pause and resume them, and what the planner stores about them (the automatic pause)."""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import func, select, update

from mtcjudge import audit
from mtcjudge.assessors import actions as actions
from mtcjudge.assessors import overview as overview
from mtcjudge.assessors import reliability as reliability
from mtcjudge.config import Settings
from mtcjudge.main import create_app
from mtcjudge.models import (
    Assessor,
    AssessorReliability,
    AuditEvent,
    Judgment,
    Lease,
    Pair,
    TrajectoryPoint,
)
from tests.factories import PlanningClient, build_campaign
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN, judged_and_counted

ACTOR = audit.Actor("tester")


@pytest.fixture
def client(session_factory):
    settings = Settings(organizer_token=ORGANIZER_TOKEN, base_url="http://testserver")
    return PlanningClient(create_app(settings, session_factory=session_factory))


def judge_some(client, token: str, n: int) -> list[int]:
    """The assessor judges ``n`` pairs through the API; their judgment ids."""
    ids = []
    for _ in range(n):
        nxt = client.get(f"/api/a/{token}/next").json()
        assert nxt["status"] == "pair", nxt
        body = {
            "lease_id": nxt["pair"]["lease_id"],
            "broad": 2,
            "fine": 90.0,
            "client_id": str(uuid.uuid4()),
            "query_listen_ms": 5000,
            "candidate_listen_ms": 5000,
        }
        response = client.post(f"/api/a/{token}/judgments", json=body)
        assert response.status_code == 201, response.text
        ids.append(response.json()["judgment"]["id"])
    return ids


def check_counters(session, campaign_id: int) -> None:
    """Every pair's ``judged`` equals its counted judgments (docs/judging-at-scale.md)."""
    judged, counted = judged_and_counted(session, campaign_id)
    assert judged == counted


def results(client, slug: str) -> dict:
    response = client.get(f"/api/campaigns/{slug}/results", headers=ORGANIZER_HEADERS)
    assert response.status_code == 200, response.text
    return response.json()


def assessors(client, slug: str) -> list[dict]:
    response = client.get(f"/api/campaigns/{slug}/assessors", headers=ORGANIZER_HEADERS)
    assert response.status_code == 200, response.text
    return response.json()


def post(client, slug: str, assessor_id: int, action: str, **kwargs):
    url = f"/api/campaigns/{slug}/assessors/{assessor_id}/{action}"
    return client.post(url, headers=ORGANIZER_HEADERS, **kwargs)


def test_set_aside_returns_pairs_to_the_pool_and_the_results_follow(db_session, client):
    fx = build_campaign(db_session, n_assessors=2)
    slug = fx.campaign.slug
    db_session.commit()
    judge_some(client, fx.tokens[0], 3)
    judge_some(client, fx.tokens[1], 2)
    # assessor 1 holds a pair when set aside
    held = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert held["status"] == "pair"
    before = results(client, slug)
    assert before["judgments"] == 5
    people = assessors(client, slug)
    first = people[0]
    assert (first["judgments"], first["set_aside"], first["paused"]) == (3, False, False)
    assert first["reliability"] == {
        "assessed": False,
        "flagged": False,
        "reasons": [],
        "metrics": {},
        "computed_at": None,
    }

    response = post(client, slug, first["id"], "set-aside")
    assert response.status_code == 200, response.text
    assert response.json() == {
        "assessor_id": first["id"],
        "name": "Volunteer 1",
        "set_aside": 3,
        "already": 0,
        "lease_released": True,
    }
    db_session.expire_all()
    check_counters(db_session, fx.campaign.id)
    assert db_session.scalar(select(Lease.state).where(Lease.id == held["pair"]["lease_id"])) == (
        "released"
    )
    # the planner replans at once (the client plans before each request)
    after = results(client, slug)
    assert after["judgments"] == 2
    assert after["version"] > before["version"]
    points = db_session.scalars(
        select(TrajectoryPoint.judged_pairs)
        .where(TrajectoryPoint.campaign_id == fx.campaign.id)
        .order_by(TrajectoryPoint.id)
    ).all()
    assert points[-1] == 2
    people = assessors(client, slug)
    assert (people[0]["judgments"], people[0]["set_aside_judgments"]) == (0, 3)
    assert people[0]["set_aside"] is True
    # the results document's assessors carry it too
    assert after["assessors"][0]["set_aside"] is True
    # the assessor is handed nothing more, kindly
    nxt = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert nxt["status"] == "done"
    assert nxt["pair"] is None
    assert nxt["message"].startswith("Thank you for your help")
    # nor can they judge the pair they held
    late = client.post(
        f"/api/a/{fx.tokens[0]}/judgments",
        json={
            "lease_id": held["pair"]["lease_id"],
            "broad": 1,
            "fine": 50.0,
            "client_id": str(uuid.uuid4()),
        },
    )
    assert late.status_code == 409
    # idempotent
    again = post(client, slug, first["id"], "set-aside").json()
    assert (again["set_aside"], again["already"]) == (0, 3)

    back = post(client, slug, first["id"], "bring-back")
    assert back.status_code == 200, back.text
    assert back.json()["brought_back"] == 3
    assert back.json()["stayed_aside"] == 0
    assert back.json()["reason"] is None
    db_session.expire_all()
    check_counters(db_session, fx.campaign.id)
    assert results(client, slug)["judgments"] == 5
    assert client.get(f"/api/a/{fx.tokens[0]}/next").json()["status"] == "pair"
    assert post(client, slug, first["id"], "bring-back").json()["brought_back"] == 0

    logged = db_session.execute(
        select(AuditEvent.actor, AuditEvent.action, AuditEvent.detail)
        .where(AuditEvent.campaign_id == fx.campaign.id)
        .order_by(AuditEvent.id)
    ).all()
    assert [(a, act) for a, act, _ in logged] == [
        ("API token", audit.ASSESSOR_SET_ASIDE),
        ("API token", audit.ASSESSOR_BROUGHT_BACK),
    ]
    assert "3 judgments set aside" in logged[0][2]


def test_bring_back_leaves_aside_what_was_judged_again(db_session, client):
    fx = build_campaign(db_session, n_assessors=2, keep_collecting=True)
    slug = fx.campaign.slug
    db_session.commit()
    judge_some(client, fx.tokens[0], 2)
    first = assessors(client, slug)[0]
    assert post(client, slug, first["id"], "set-aside").json()["set_aside"] == 2
    # the freed pairs are handed to the other assessor and judged again
    total = db_session.scalar(select(func.count()).where(Pair.campaign_id == fx.campaign.id))
    judge_some(client, fx.tokens[1], total)
    db_session.expire_all()
    check_counters(db_session, fx.campaign.id)
    back = post(client, slug, first["id"], "bring-back").json()
    assert (back["brought_back"], back["stayed_aside"]) == (0, 2)
    assert "judged again" in back["reason"]
    db_session.expire_all()
    check_counters(db_session, fx.campaign.id)
    assert max(db_session.scalars(select(Pair.judged)).all()) == 1
    assert assessors(client, slug)[0]["set_aside_judgments"] == 2


def test_unknown_assessor_and_other_campaigns(db_session, client):
    fx = build_campaign(db_session)
    other = build_campaign(db_session)
    db_session.commit()
    foreign = db_session.scalar(
        select(Assessor.id).where(Assessor.campaign_id == other.campaign.id)
    )
    for action in ("set-aside", "bring-back", "pause", "resume"):
        assert post(client, fx.campaign.slug, foreign, action).status_code == 404
        assert post(client, fx.campaign.slug, 2**31 - 1, action).status_code == 404
        assert post(client, fx.campaign.slug, 0, action).status_code == 404
        assert post(client, "no-such", 1, action).status_code == 404
        url = f"/api/campaigns/{fx.campaign.slug}/assessors/{foreign}/{action}"
        assert client.post(url).status_code == 401


def test_pause_with_a_message_and_resume(db_session, client):
    fx = build_campaign(db_session)
    slug = fx.campaign.slug
    db_session.commit()
    judge_some(client, fx.tokens[0], 1)
    client.get(f"/api/a/{fx.tokens[0]}/next")
    first = assessors(client, slug)[0]
    response = post(client, slug, first["id"], "pause", json={"message": "  Back on Monday!  "})
    assert response.status_code == 200, response.text
    assert response.json()["message"] == "Back on Monday!"
    assert response.json()["lease_released"] is True
    nxt = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert (nxt["status"], nxt["message"]) == ("done", "Back on Monday!")
    shown = assessors(client, slug)[0]
    assert (shown["paused"], shown["pause_reason"], shown["judgments"]) == (
        True,
        "Back on Monday!",
        1,
    )
    assert post(client, slug, first["id"], "pause", json={"message": "x" * 1001}).status_code == 400
    assert post(client, slug, first["id"], "pause", json={"message": "a\x00b"}).status_code == 400
    assert post(client, slug, first["id"], "pause", json={"nope": 1}).status_code == 422
    resumed = post(client, slug, first["id"], "resume").json()
    assert (resumed["paused"], resumed["changed"]) == (False, True)
    assert client.get(f"/api/a/{fx.tokens[0]}/next").json()["status"] == "pair"
    assert post(client, slug, first["id"], "resume").json()["changed"] is False
    # without a body: the default message
    post(client, slug, first["id"], "pause")
    assert client.get(f"/api/a/{fx.tokens[0]}/next").json()["message"] == (
        actions.DEFAULT_PAUSE_MESSAGE
    )


def test_store_reliability_and_the_automatic_pause(db_session):
    fx = build_campaign(db_session, n_assessors=3, auto_pause=True)
    campaign = fx.campaign
    ids = db_session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == campaign.id).order_by(Assessor.id)
    ).all()
    failed = {"failed_trials": True, "reference_accuracy": 0.2, "drift": float("nan")}
    paused = reliability.store_reliability(
        db_session,
        campaign,
        {
            ids[0]: (True, ["Got 1 of 5 reference trials right."], failed),
            ids[1]: (False, [], {"failed_trials": False, "agreement": 0.8}),
            987654: (True, ["not of this campaign"], {}),
        },
    )
    assert paused == [ids[0]]
    rows = {
        r.assessor_id: r
        for r in db_session.scalars(
            select(AssessorReliability).where(AssessorReliability.campaign_id == campaign.id)
        )
    }
    assert set(rows) == {ids[0], ids[1]}
    assert json.loads(rows[ids[0]].metrics) == {
        "drift": None,
        "failed_trials": True,
        "reference_accuracy": 0.2,
    }
    assert json.loads(rows[ids[0]].reasons) == ["Got 1 of 5 reference trials right."]
    first = db_session.get(Assessor, ids[0])
    assert first.paused_at is not None
    assert first.pause_reason is None  # told the default message
    assert db_session.get(Assessor, ids[1]).paused_at is None
    event = db_session.scalars(
        select(AuditEvent).where(AuditEvent.action == audit.ASSESSOR_PAUSED)
    ).one()
    assert event.actor == actions.AUTO_PAUSE_ACTOR.name

    # an organizer resumes them: the next conclusion, still failed, does not overrule it
    actions.resume(db_session, campaign, ids[0], ACTOR)
    assert reliability.store_reliability(db_session, campaign, {ids[0]: (True, [], failed)}) == []
    assert db_session.get(Assessor, ids[0]).paused_at is None
    # a pass and then a new failure pause them again
    reliability.store_reliability(
        db_session, campaign, {ids[0]: (False, [], {"failed_trials": False})}
    )
    assert reliability.store_reliability(db_session, campaign, {ids[0]: (True, [], failed)}) == [
        ids[0]
    ]

    shown = {a.id: a for a in overview.assessor_overview(db_session, campaign)}
    assert shown[ids[0]].reliability.assessed is True
    assert shown[ids[0]].reliability.flagged is True
    assert shown[ids[2]].reliability == reliability.NOT_ASSESSED


def test_no_automatic_pause_when_the_campaign_does_not_ask(db_session):
    fx = build_campaign(db_session, n_assessors=1, auto_pause=False)
    (assessor_id,) = db_session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == fx.campaign.id)
    ).all()
    metrics = {"failed_trials": True}
    paused = reliability.store_reliability(
        db_session, fx.campaign, {assessor_id: (True, [], metrics)}
    )
    assert paused == []
    assert db_session.get(Assessor, assessor_id).paused_at is None


def test_set_aside_without_judgments_and_imported_judgments_stay(db_session, client):
    fx = build_campaign(db_session, n_assessors=1)
    db_session.commit()
    first = assessors(client, fx.campaign.slug)[0]
    report = post(client, fx.campaign.slug, first["id"], "set-aside").json()
    assert (report["set_aside"], report["lease_released"]) == (0, False)
    assert assessors(client, fx.campaign.slug)[0]["set_aside"] is True


def test_a_pair_taken_in_a_race_with_the_pause_is_given_back(db_session, client):
    fx = build_campaign(db_session, n_assessors=1)
    db_session.commit()
    lease_id = client.get(f"/api/a/{fx.tokens[0]}/next").json()["pair"]["lease_id"]
    # as if the pair was handed out just after the organizer's pause released the last one
    db_session.execute(update(Assessor).values(paused_at=func.now()))
    db_session.commit()
    nxt = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert (nxt["status"], nxt["pair"]) == ("done", None)
    db_session.expire_all()
    assert db_session.get(Lease, lease_id).state == "released"
    check_counters(db_session, fx.campaign.id)
    assert db_session.scalar(select(func.sum(Pair.leased))) == 0


def test_quality_trials_are_counted_by_kind_for_organizers(db_session, client):
    """Each assessor's answers to hidden trials by kind (every kind listed, second opinions
    among them) in GET .../assessors, the results document (the dashboard) and the report."""
    from mtcjudge.reports import service as reports

    fx = build_campaign(db_session, n_assessors=2)
    slug = fx.campaign.slug
    db_session.commit()
    ids = judge_some(client, fx.tokens[0], 2)
    second_of = db_session.get(Judgment, ids[0])
    assert second_of is not None
    b = db_session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == fx.campaign.id).order_by(Assessor.id)
    ).all()[1]
    query = fx.queries[0]
    for kind, document, repeat_of in (
        ("second", second_of.document_id, second_of.id),
        ("reference", query.document_id, None),
    ):
        db_session.add(
            Judgment(
                campaign_id=fx.campaign.id,
                query_id=second_of.query_id if kind == "second" else query.id,
                document_id=document,
                assessor_id=b,
                broad=1,
                fine=50.0,
                kind=kind,
                repeat_of=repeat_of,
            )
        )
    db_session.commit()
    none = {"reference": 0, "anchor": 0, "repeat": 0, "second": 0}
    both = {**none, "reference": 1, "second": 1}
    people = assessors(client, slug)
    assert [(p["quality_trials"], p["trials_by_kind"]) for p in people] == [(0, none), (2, both)]
    shown = results(client, slug)["assessors"]
    assert [(a["quality_trials"], a["trials_by_kind"]) for a in shown] == [(0, none), (2, both)]
    report = reports.build_report(db_session, slug)
    rows = report["assessors"]["assessors"]
    assert [r["trials_by_kind"] for r in rows] == [none, both]
    html = reports.render_html(report)
    assert "1 reference, 1 second opinion" in html
    # the second opinion counts nowhere: A1's pair is judged once
    assert results(client, slug)["judgments"] == 2
