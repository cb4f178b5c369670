"""The assessor API: the judging round trip and every rejection (docs/web-architecture.md)."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from mtcjudge.models import (
    Assessor,
    AssessorPace,
    Document,
    Judgment,
    Lease,
    Pair,
    PlannerState,
    utcnow,
)
from mtcjudge.mtc import cost_aware
from tests.factories import build_campaign
from tests.support import next_body


def judge(client, token, lease_id, broad=2, fine=80.0, client_id=None, **extra):
    body = {
        "lease_id": lease_id,
        "broad": broad,
        "fine": fine,
        "client_id": client_id or str(uuid.uuid4()),
        "query_listen_ms": 1200,
        "candidate_listen_ms": 900,
        **extra,
    }
    return client.post(f"/api/a/{token}/judgments", json=body)


def judgment_count(db_session) -> int:
    return db_session.scalar(select(func.count()).select_from(Judgment))


def clips_of(db_session, pair) -> tuple[int, int]:
    """(query id, candidate document id) of a handed-out pair: its clip URLs name only its
    lease, so the test reads the lease."""
    lease = db_session.get(Lease, pair["lease_id"])
    return lease.query_id, lease.document_id


def test_full_round_trip(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    first = next_body(client, token)
    assert first["status"] == "pair"
    assert first["progress"]["assessor_judged"] == 0
    assert first["progress"]["campaign_pairs"] > 0
    # asking again keeps the same lease
    assert next_body(client, token)["pair"]["lease_id"] == first["pair"]["lease_id"]
    response = judge(client, token, first["pair"]["lease_id"], broad=2, fine=83.5)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["judgment"]["broad"] == 2
    assert body["judgment"]["fine"] == 83.5
    assert body["progress"]["assessor_judged"] == 1
    assert body["progress"]["campaign_judged"] == 1
    stored = db_session.scalars(select(Judgment)).one()
    assert (stored.query_listen_ms, stored.candidate_listen_ms) == (1200, 900)
    second = next_body(client, token)
    assert second["status"] == "pair"
    assert second["pair"]["lease_id"] != first["pair"]["lease_id"]
    history = client.get(f"/api/a/{token}/history").json()
    assert [h["fine"] for h in history] == [83.5]


def test_the_api_is_blind(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    pair = next_body(client, token)
    judge(client, token, pair["pair"]["lease_id"])
    texts = [
        json.dumps(next_body(client, token)),
        client.get(f"/api/a/{token}/history").text,
        client.get(f"/api/a/{token}/progress").text,
    ]
    for text in texts:
        for system in fx.systems:
            assert system.name not in text
        for external_id in fx.external_ids:
            assert external_id not in text
        assert '"rank"' not in text
        assert "SYS-" not in text


def test_the_same_client_id_stores_one_judgment(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    cid = str(uuid.uuid4())
    first = judge(client, token, lease_id, client_id=cid)
    again = judge(client, token, lease_id, client_id=cid)
    assert first.status_code == 201
    assert again.status_code == 200
    assert again.json()["judgment"]["id"] == first.json()["judgment"]["id"]
    assert judgment_count(db_session) == 1


@pytest.mark.parametrize(
    ("broad", "fine", "message"),
    [
        (3, 50.0, "broad must be 0"),
        (-1, 50.0, "broad must be 0"),
        (1, 100.5, "fine must be between 0 and 100"),
        (1, -2.0, "fine must be between 0 and 100"),
    ],
)
def test_out_of_range_scores_are_rejected(db_session, client, broad, fine, message) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    response = judge(client, token, lease_id, broad=broad, fine=fine)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_input"
    assert message in response.json()["detail"]
    assert judgment_count(db_session) == 0


def test_a_malformed_body_is_422(db_session, client) -> None:
    fx = build_campaign(db_session)
    response = client.post(f"/api/a/{fx.tokens[0]}/judgments", json={"broad": 1})
    assert response.status_code == 422
    assert "lease_id" in response.json()["detail"]


def test_a_pair_leased_to_someone_else_is_409(db_session, client) -> None:
    fx = build_campaign(db_session)
    other_lease = next_body(client, fx.tokens[1])["pair"]["lease_id"]
    response = judge(client, fx.tokens[0], other_lease)
    assert response.status_code == 409
    assert response.json()["error"] == "pair_not_leased"


def test_judging_the_same_pair_twice_is_409(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    assert judge(client, token, lease_id).status_code == 201
    assert judge(client, token, lease_id).status_code == 409


def expire(db_session, lease_id: int) -> None:
    """Let the lease's time run out (its pair row records the same expiry)."""
    past = utcnow() - timedelta(minutes=1)
    lease = db_session.get(Lease, lease_id)
    db_session.execute(update(Lease).where(Lease.id == lease_id).values(expires_at=past))
    db_session.execute(update(Pair).where(Pair.id == lease.pair_id).values(leased_until=past))
    db_session.flush()


def test_an_expired_lease_returns_to_the_pool_and_late_answers_get_410(db_session, client):
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, estimator="uniform")
    a, b = fx.tokens
    lease = next_body(client, a)["pair"]
    # the only other pair goes to b; then a's lease runs out and b gets it too
    b_first = next_body(client, b)["pair"]
    assert judge(client, b, b_first["lease_id"]).status_code == 201
    expire(db_session, lease["lease_id"])
    b_next = next_body(client, b)
    assert b_next["status"] == "pair"
    response = judge(client, a, lease["lease_id"])
    assert response.status_code == 410
    assert response.json()["error"] == "lease_expired"


def test_a_late_answer_on_a_pair_nobody_took_is_kept(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    expire(db_session, lease_id)
    assert judge(client, token, lease_id).status_code == 201


def test_a_closed_campaign_rejects_judgments_and_thanks_assessors(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    fx.campaign.status = "closed"
    db_session.flush()
    response = judge(client, token, lease_id)
    assert response.status_code == 409
    assert response.json()["error"] == "campaign_closed"
    assert next_body(client, token)["status"] == "done"


def test_assessors_see_thank_you_once_the_ranking_is_confident(db_session, client) -> None:
    # with target 0.5 every ranking is already confident enough
    fx = build_campaign(db_session, target=0.5)
    body = next_body(client, fx.tokens[0])
    assert body["status"] == "done"
    assert body["progress"]["can_stop"] is True
    assert "thank" in body["message"].lower()
    fx.campaign.keep_collecting = True
    db_session.flush()
    assert next_body(client, fx.tokens[0])["status"] == "pair"


def test_every_pair_judged_means_done(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, target=1.0, n_assessors=1)
    token = fx.tokens[0]
    for _ in range(2):
        body = next_body(client, token)
        assert body["status"] == "pair"
        assert judge(client, token, body["pair"]["lease_id"]).status_code == 201
    final = next_body(client, token)
    assert final["status"] == "done"
    assert final["progress"]["campaign_judged"] == final["progress"]["campaign_pairs"] == 2


def test_wait_when_the_rest_is_leased(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, target=1.0)
    a, b = fx.tokens
    next_body(client, a)
    next_body(client, b)
    assert judge(client, a, next_body(client, a)["pair"]["lease_id"]).status_code == 201
    body = next_body(client, a)
    assert body["status"] == "wait"


def test_the_next_pair_stays_on_the_same_query(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, target=1.0)
    token = fx.tokens[0]
    first = next_body(client, token)
    judge(client, token, first["pair"]["lease_id"])
    second = next_body(client, token)
    assert second["pair"]["same_query_as_previous"] is True
    assert clips_of(db_session, second["pair"])[0] == clips_of(db_session, first["pair"])[0]
    assert {k: v for k, v in second["pair"]["query"].items() if k != "audio_url"} == {
        k: v for k, v in first["pair"]["query"].items() if k != "audio_url"
    }


def test_pause_gives_the_pair_back(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, target=1.0)
    a, b = fx.tokens
    lease_a = next_body(client, a)["pair"]
    lease_b = next_body(client, b)["pair"]
    clip = lambda pair: clips_of(db_session, pair)[1]  # noqa: E731
    assert clip(lease_b) != clip(lease_a)
    assert client.post(f"/api/a/{a}/pause").status_code == 204
    assert judge(client, b, lease_b["lease_id"]).status_code == 201
    # the paused pair is the only one left, and it is free again
    assert clip(next_body(client, b)["pair"]) == clip(lease_a)


def test_revising_a_recent_judgment(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    lease_id = next_body(client, token)["pair"]["lease_id"]
    judgment_id = judge(client, token, lease_id, broad=0, fine=10).json()["judgment"]["id"]
    response = client.put(f"/api/a/{token}/judgments/{judgment_id}", json={"broad": 1, "fine": 45})
    assert response.status_code == 200, response.text
    assert response.json()["judgment"]["revision"] == 1
    stored = db_session.get(Judgment, judgment_id)
    db_session.refresh(stored)
    assert (stored.broad, stored.fine) == (1, 45.0)
    other = client.put(
        f"/api/a/{fx.tokens[1]}/judgments/{judgment_id}", json={"broad": 1, "fine": 45}
    )
    assert other.status_code == 404
    bad = client.put(f"/api/a/{token}/judgments/{judgment_id}", json={"broad": 1, "fine": 450})
    assert bad.status_code == 400


def test_unknown_token_is_404(client) -> None:
    response = client.get("/api/a/not-a-token/next")
    assert response.status_code == 404
    assert "invitation" in response.json()["detail"]


def test_two_processes_sharing_the_database_agree(db_session, make_client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3, target=1.0)
    app1, app2 = make_client(), make_client()
    token = fx.tokens[0]
    assert next_body(app2, fx.tokens[1])["progress"]["campaign_judged"] == 0
    lease_id = next_body(app1, token)["pair"]["lease_id"]
    judged = judge(app1, token, lease_id, broad=2, fine=90).json()
    seen_by_2 = app2.get(f"/api/a/{fx.tokens[1]}/progress").json()
    assert seen_by_2["campaign_judged"] == 1
    # one planner for the campaign, whichever process asks: both show its figures
    owners = db_session.scalars(select(PlannerState.owner)).all()
    assert len(owners) == 1
    assert owners[0] in {app1.app.state.planner.owner, app2.app.state.planner.owner}
    # a revision through process 2 reaches the planner
    jid = judged["judgment"]["id"]
    changes = db_session.scalar(select(func.sum(Pair.changes)))
    assert app2.put(f"/api/a/{token}/judgments/{jid}", json={"broad": 0, "fine": 5}).is_success
    assert db_session.scalar(select(func.sum(Pair.changes))) == changes + 1
    p1 = app1.get(f"/api/a/{token}/progress").json()
    p2 = app2.get(f"/api/a/{token}/progress").json()
    assert p1 == p2


def test_several_judgments_per_pair(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, judgments_per_pair=2, target=1.0)
    a, b = fx.tokens
    pa = next_body(client, a)["pair"]
    pb = next_body(client, b)["pair"]
    judge(client, a, pa["lease_id"], fine=20)
    judge(client, b, pb["lease_id"], fine=60)
    # each assessor continues with pairs they have not judged
    assert clips_of(db_session, next_body(client, a)["pair"])[1] != clips_of(db_session, pa)[1]


def test_pairs_without_audio_are_not_handed_out(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=1, k=1, target=1.0, n_assessors=1)
    token = fx.tokens[0]
    # one candidate lost its clip: only the other pair can be judged
    silent = next(d for ext, d in fx.documents.items() if ext.startswith("cand"))
    silent.audio_path = None
    db_session.flush()
    db_session.execute(update(Pair).where(Pair.document_id == silent.id).values(playable=False))
    db_session.flush()
    first = next_body(client, token)
    assert first["pair"]["candidate"]["audio_url"] is not None
    assert judge(client, token, first["pair"]["lease_id"]).status_code == 201
    last = next_body(client, token)
    # done, and told the truth: not "every pair has been judged"
    assert last["status"] == "done"
    assert "cannot be played" in last["message"]
    assert "Every pair has been judged" not in last["message"]


def test_pairs_are_named_and_times_carry_their_timezone(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=2, n_queries=2, k=2)
    token = fx.tokens[0]
    pair = next_body(client, token)["pair"]
    assert pair["query_number"] in (1, 2)
    assert pair["candidate_number"] >= 1
    assert pair["expires_at"].endswith(("Z", "+00:00"))
    judgment = judge(client, token, pair["lease_id"]).json()["judgment"]
    assert judgment["created_at"].endswith(("Z", "+00:00"))
    (listed,) = client.get(f"/api/a/{token}/history").json()
    assert (listed["query_number"], listed["candidate_number"]) == (
        pair["query_number"],
        pair["candidate_number"],
    )
    # another assessor's view of the same numbering agrees
    other = next_body(client, fx.tokens[1])["pair"]
    assert (other["query_number"], other["candidate_number"]) != (
        pair["query_number"],
        pair["candidate_number"],
    )


def test_the_api_refuses_assessors_who_have_not_consented(db_session, client) -> None:
    fx = build_campaign(db_session, consented=False)
    for method, path in (("GET", "next"), ("GET", "progress"), ("GET", "history")):
        response = client.request(method, f"/api/a/{fx.tokens[0]}/{path}")
        assert response.status_code == 403, path
        assert response.json()["error"] == "consent_required"
    assert db_session.scalar(select(func.count()).select_from(Lease)) == 0


def test_a_lease_records_why_mtc_chose_its_pair(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=3)
    token = fx.tokens[0]
    first = next_body(client, token)["pair"]
    lease = db_session.get(Lease, first["lease_id"])
    # the first pair of a newcomer is the planner's best free pair
    assert (lease.selection_rule, lease.selection_rank) == ("plan", 0)
    assert lease.selection_weight is not None
    assert lease.selection_weight > 0
    assert judge(client, token, first["lease_id"]).status_code == 201
    second = db_session.get(Lease, next_body(client, token)["pair"]["lease_id"])
    assert second.selection_rule in ("plan", "own_query")
    assert second.selection_rank is not None


def test_a_pair_from_outside_the_plan_says_so(db_session, session_factory) -> None:
    from fastapi.testclient import TestClient
    from sqlalchemy import delete

    from mtcjudge.config import Settings
    from mtcjudge.main import create_app
    from mtcjudge.models import PlanEntry

    fx = build_campaign(db_session)
    db_session.execute(delete(PlanEntry))  # the plan is used up, or not made yet
    db_session.flush()
    app = create_app(Settings(run_planner=False), session_factory=session_factory)
    plain = TestClient(app)
    pair = next_body(plain, fx.tokens[0])["pair"]
    lease = db_session.get(Lease, pair["lease_id"])
    assert (lease.selection_rule, lease.selection_rank, lease.selection_weight) == (
        "any_free",
        None,
        None,
    )


def test_a_paused_campaign_does_not_claim_it_never_opened(db_session, client) -> None:
    fx = build_campaign(db_session)
    token = fx.tokens[0]
    assert next_body(client, token)["status"] == "pair"  # it was open
    fx.campaign.status = "draft"  # paused by the organizers (the management page's "Pause")
    db_session.flush()
    paused = next_body(client, token)
    assert paused["status"] == "done"
    assert paused["pair"] is None
    assert paused["message"] == (
        "This campaign is not open for judging right now. Please come back later."
    )


@pytest.mark.parametrize("case", ["default pace", "replays query", "past the horizon", "within it"])
def test_the_audits_pair_goes_to_an_assessor_who_moves_on_not_one_mid_query(
    db_session, session_factory, case: str
) -> None:
    """``joint``'s audit pair heads the plan, but an assessor whose query still has a pair
    that gains as much per second of theirs as the best (their query is not heard again: by
    the stated defaults 40 s against 70 s for 30 s clips) keeps that query; a newcomer takes
    the audit's pair, and the lease says it was the audit's random draw. An assessor whose
    fitted pace says they hear their query again in full on every pair (``assessor_pace``)
    gains nothing by staying: they move to the best pair, the audit's. So does one whose query's
    pair ranks past the judgments the campaign still needs (``planner_state.horizon``); one
    within them stays."""
    from fastapi.testclient import TestClient

    from mtcjudge.config import Settings
    from mtcjudge.main import create_app
    from mtcjudge.models import PlanEntry
    from mtcjudge.planner.service import Planner

    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, estimator="joint", target=1.0)
    # half-minute clips, as in MIREX (the fixture's are one second long: a query costs little)
    db_session.execute(
        update(Document).where(Document.campaign_id == fx.campaign.id).values(duration_seconds=30.0)
    )
    db_session.flush()
    assert Planner(session_factory).run_once() == [fx.campaign.id]
    plan = db_session.execute(
        select(
            PlanEntry.pair_id,
            PlanEntry.query_id,
            PlanEntry.weight,
            Pair.audit,
            PlanEntry.query_seconds,
            PlanEntry.candidate_seconds,
        )
        .join(Pair, Pair.id == PlanEntry.pair_id)
        .where(PlanEntry.campaign_id == fx.campaign.id)
        .order_by(PlanEntry.rank)
    ).all()
    audit_pair, audit_query, _, is_audit, *clips = plan[0]
    assert is_audit
    best_real = plan[1].weight
    pace = cost_aware.Pace.default()
    # a query other than the audit's whose best pair gains as much per second as the best
    # (stored at the best real weight) for a volunteer who stays on it, but is not the best
    best_of: dict[int, Any] = {}
    for row in plan[1:]:
        best_of.setdefault(row.query_id, row)
    own = next(
        row
        for query, row in best_of.items()
        if query != audit_query
        and row.weight < best_real
        and cost_aware.stays(row.weight, row[4:6], best_real, tuple(clips), pace)
    )
    # the assessor's last judgment is of that query (another of its pairs)
    mine = db_session.get(Pair, next(r.pair_id for r in plan[::-1] if r.query_id == own.query_id))
    assert mine.id != own.pair_id
    assessor_id = db_session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == fx.campaign.id).order_by(Assessor.id)
    ).all()[1]
    db_session.add(
        Judgment(
            campaign_id=fx.campaign.id,
            query_id=mine.query_id,
            document_id=mine.document_id,
            assessor_id=assessor_id,
            broad=1,
            fine=50.0,
            source="assessor",
        )
    )
    db_session.execute(update(Pair).where(Pair.id == mine.id).values(judged=1, changes=1))
    db_session.flush()
    replays_query = case == "replays query"
    if case in ("past the horizon", "within it"):
        rank = next(i for i, row in enumerate(plan) if row.pair_id == own.pair_id)
        horizon = rank if case == "past the horizon" else rank + 1
        db_session.execute(
            update(PlannerState)
            .where(PlannerState.campaign_id == fx.campaign.id)
            .values(horizon=horizon)
        )
        db_session.flush()
    if replays_query:
        db_session.add(
            AssessorPace(
                assessor_id=assessor_id,
                campaign_id=fx.campaign.id,
                query_new=1.0,
                query_same=1.0,
                candidate=1.0,
                decision=10.0,
                judgments=20,
            )
        )
        db_session.flush()
    plain = TestClient(create_app(Settings(run_planner=False), session_factory=session_factory))
    if case in ("replays query", "past the horizon"):
        moved = db_session.get(Lease, next_body(plain, fx.tokens[1])["pair"]["lease_id"])
        assert (moved.pair_id, moved.selection_rule) == (audit_pair, "audit")
        return
    stays = next_body(plain, fx.tokens[1])["pair"]
    assert stays["same_query_as_previous"] is True
    kept = db_session.get(Lease, stays["lease_id"])
    assert (kept.selection_rule, kept.selection_weight) == ("own_query", pytest.approx(own.weight))
    # a newcomer takes the audit's pair
    fresh = db_session.get(Lease, next_body(plain, fx.tokens[0])["pair"]["lease_id"])
    assert fresh.pair_id == audit_pair
    assert (fresh.selection_rule, fresh.selection_rank, fresh.selection_weight) == (
        "audit",
        0,
        None,
    )
