"""The planner: one process plans a campaign, another takes over when it dies, and the plan
follows the MTC engine's selection order."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import select, update

from mtcjudge.campaign_engine.build import load_campaign_engine
from mtcjudge.models import Document, Judgment, Pair, PlanEntry, PlannerState, utcnow
from mtcjudge.mtc.cost_aware import Pace
from mtcjudge.mtc.joint import SystemEffectEngine
from mtcjudge.planner.service import Planner
from tests.factories import build_campaign
from tests.support import plan_rows


def test_the_plan_is_the_engines_selection_order(db_session, session_factory) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, estimator="uniform")
    assert Planner(session_factory).run_once() == [fx.campaign.id]
    state = load_campaign_engine(db_session, fx.campaign)
    order = plan_rows(db_session, fx.campaign.id)
    assert len(order) == state.n_pairs
    best = state.engine.select(1, candidates=np.ones(state.n_pairs, dtype=bool))
    assert order[0] == state.pair_ids[int(best[0])]
    figures = db_session.get(PlannerState, fx.campaign.id)
    assert figures.pool_pairs == state.n_pairs
    assert figures.ranking_confidence == pytest.approx(state.engine.ranking_confidence())
    assert figures.system_pairs == 6


def test_a_joint_campaigns_plan_starts_with_the_audits_pair(db_session, session_factory) -> None:
    """``joint`` hands out the audit's pair before any other (docs/method.md §8.2), in the
    plan every process reads; the planner stores its draws, so an engine built later
    (another process, a restart) holds the same audit sample although the draws depend on
    the order judgments came in."""
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, estimator="joint", target=1.0)
    planner = Planner(session_factory)
    assert planner.run_once() == [fx.campaign.id]
    state = load_campaign_engine(db_session, fx.campaign)
    assert isinstance(state.engine, SystemEffectEngine)
    first = state.engine.audit_pairs()  # read back from the database, not drawn again
    assert first.size == 1
    assert plan_rows(db_session, fx.campaign.id)[0] == state.pair_ids[int(first[0])]
    # it heads the plan at the best real weight, not at the made-up one that ranks it first,
    # so the judging path's locality rule weighs an assessor's own query against the best
    # pair the policy chose
    weights = db_session.scalars(
        select(PlanEntry.weight)
        .where(PlanEntry.campaign_id == fx.campaign.id)
        .order_by(PlanEntry.rank)
        .limit(2)
    ).all()
    assert weights[0] == pytest.approx(weights[1])
    assert weights[1] > 0
    # the audit's pair is judged: an engine drawing afresh would now pass it over (it is
    # judged) and draw another; the stored sample keeps it, so its judgment teaches the
    # variance factor in every process
    _judge_elsewhere(db_session, fx.campaign.id, *state.pair_ids[int(first[0])])
    assert planner.run_once(force=True) == [fx.campaign.id]
    again = load_campaign_engine(db_session, fx.campaign)
    assert isinstance(again.engine, SystemEffectEngine)
    np.testing.assert_array_equal(again.engine.audit_pairs(), first)
    assert again.engine.judged[first].all()


def test_the_plan_ranks_pairs_by_gain_per_second_and_carries_their_clips(
    db_session, session_factory
) -> None:
    """With clips of different lengths the plan orders pairs by weight per second of a
    volunteer starting afresh (docs/method.md §12): a short clip's pair goes before a long
    one's of the same weight; each entry carries its clips' durations, unknown ones None."""
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, estimator="uniform")
    documents = db_session.scalars(
        select(Document).where(Document.campaign_id == fx.campaign.id).order_by(Document.id)
    ).all()
    for i, document in enumerate(documents):
        document.duration_seconds = None if i == 0 else (5.0 if i % 2 else 120.0)
    db_session.flush()
    assert Planner(session_factory).run_once() == [fx.campaign.id]
    rows = db_session.execute(
        select(PlanEntry.weight, PlanEntry.query_seconds, PlanEntry.candidate_seconds)
        .where(PlanEntry.campaign_id == fx.campaign.id)
        .order_by(PlanEntry.rank)
    ).all()
    pace = Pace.default()
    rates = [w / pace.seconds_of(q, c, changes=True) for w, q, c in rows]
    assert rates == sorted(rates, reverse=True)
    # not the order of the weights alone: the lengths changed it
    weights = [w for w, _, _ in rows]
    assert weights != sorted(weights, reverse=True)
    known = {d.id: d.duration_seconds for d in documents}
    assert {c for _, _, c in rows} <= set(known.values())
    assert None in {q for _, q, _ in rows} | {c for _, _, c in rows}


def test_one_planner_per_campaign_and_takeover_when_it_lapses(db_session, session_factory):
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2)
    first, second = Planner(session_factory), Planner(session_factory)
    assert first.run_once() == [fx.campaign.id]
    assert second.run_once() == []  # the campaign is first's while its lease runs
    assert db_session.get(PlannerState, fx.campaign.id).owner == first.owner
    # first dies without a word: once its lease has lapsed, second plans
    db_session.execute(update(PlannerState).values(lease_until=utcnow() - timedelta(seconds=1)))
    db_session.flush()
    assert second.run_once() == [fx.campaign.id]
    assert first.run_once() == []
    # a planner that stops hands its campaigns over at once
    second.stop()
    assert first.run_once() == [fx.campaign.id]


def _judge_elsewhere(db_session, campaign_id: int, query_id: int, document_id: int) -> None:
    """A judgment written by another process: a row and its pair's counters."""
    db_session.add(
        Judgment(
            campaign_id=campaign_id,
            query_id=query_id,
            document_id=document_id,
            broad=2,
            fine=95.0,
            source="assessor",
        )
    )
    db_session.execute(
        update(Pair)
        .where(Pair.query_id == query_id, Pair.document_id == document_id)
        .values(judged=Pair.judged + 1, changes=Pair.changes + 1)
    )
    db_session.flush()


def test_the_planner_takes_in_judgments_made_anywhere(db_session, session_factory) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2, target=1.0)
    planner = Planner(session_factory)
    planner.run_once()
    before = db_session.get(PlannerState, fx.campaign.id)
    assert before.judged_pairs == 0
    top = plan_rows(db_session, fx.campaign.id)[0]
    _judge_elsewhere(db_session, fx.campaign.id, *top)
    planner.run_once()
    db_session.expire_all()
    after = db_session.get(PlannerState, fx.campaign.id)
    assert after.judged_pairs == 1
    assert top not in plan_rows(db_session, fx.campaign.id)  # judged: no longer handed out


def test_the_planner_writes_the_judgments_still_needed_when_a_projection_lands(
    db_session, session_factory
) -> None:
    """``planner_state.horizon`` (docs/method.md §12): none before a projection; then the
    projection's high end to the campaign's target less the judgments made since, at least 1."""
    from mtcjudge.planner.projector import Projector

    fx = build_campaign(db_session, n_systems=4, n_queries=4, k=3, target=0.99)
    planner = Planner(session_factory, projector=Projector(inline=True, runs=2, max_seconds=None))
    planner.run_once()
    db_session.expire_all()
    assert db_session.get(PlannerState, fx.campaign.id).horizon is None
    planner.run_once()  # the projection asked after the first plan lands
    db_session.expire_all()
    state = db_session.get(PlannerState, fx.campaign.id)
    cached = planner._plans[fx.campaign.id]
    projection = cached.projection
    assert projection is not None
    high = projection.for_target(0.99).judgments_high
    assert high is not None
    assert state.horizon == max(high - (cached.state.engine.n_judged - projection.judged), 1)


def test_a_campaign_past_its_target_has_no_horizon(db_session, session_factory) -> None:
    """Once the target is reached (a campaign that keeps collecting), nothing limits the
    volunteers' staying on their query: ``horizon`` is None, not the greedy 1."""
    from mtcjudge.planner.projector import Projector

    fx = build_campaign(db_session, n_systems=3, n_queries=3, k=2, target=0.5, estimator="uniform")
    planner = Planner(session_factory, projector=Projector(inline=True, runs=2, max_seconds=None))
    planner.run_once()
    planner.run_once()
    projection = planner._plans[fx.campaign.id].projection
    assert projection is not None
    assert projection.for_target(0.5).reached
    db_session.expire_all()
    assert db_session.get(PlannerState, fx.campaign.id).horizon is None
