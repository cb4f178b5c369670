"""The planner measures the assessors' disagreement from the pairs judged more than once and
lets every judged pair keep it: the results say so, and the confidence includes it."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import select, update

from mtcjudge import audit
from mtcjudge.assessors import actions
from mtcjudge.campaign_engine.build import load_campaign_engine
from mtcjudge.cli.campaign_status import format_campaign_status
from mtcjudge.models import Assessor, Judgment, Pair, utcnow
from mtcjudge.planner.service import Planner
from mtcjudge.reports.service import build_report, render_html
from mtcjudge.results.read import results_for
from tests.factories import make_campaign


def _judge(session, campaign_id, assessor, pair, fine, kind, when, repeat_of=None):
    judgment = Judgment(
        campaign_id=campaign_id,
        query_id=pair.query_id,
        document_id=pair.document_id,
        assessor_id=assessor.id,
        broad=0 if fine < 34 else 1 if fine < 67 else 2,
        fine=float(fine),
        kind=kind,
        repeat_of=repeat_of,
        source="assessor",
        created_at=when,
        updated_at=when,
    )
    session.add(judgment)
    session.flush()
    return judgment


def _two_assessors(db_session, share: float):
    """A ``joint`` campaign with the first ``share`` of its pool imported, assessors A and B,
    and its pool pairs in order."""
    fx = make_campaign(db_session, share=share, estimator="joint")
    a = Assessor(campaign_id=fx.campaign.id, name="A", token_hash="a" * 64)
    b = Assessor(campaign_id=fx.campaign.id, name="B", token_hash="b" * 64)
    db_session.add_all([a, b])
    db_session.flush()
    pairs = db_session.scalars(
        select(Pair).where(Pair.campaign_id == fx.campaign.id).order_by(Pair.id)
    ).all()
    return fx, a, b, pairs


@pytest.fixture
def judged(db_session):
    """Every pool pair judged (imported): a complete campaign, exact until pairs are judged
    twice."""
    fx, a, b, pairs = _two_assessors(db_session, share=1.0)
    originals = {
        (j.query_id, j.document_id): j
        for j in db_session.scalars(
            select(Judgment).where(Judgment.campaign_id == fx.campaign.id, Judgment.kind == "pool")
        )
    }
    return fx.campaign, a, b, pairs, originals


def test_second_opinions_widen_the_confidence_of_a_complete_campaign(
    db_session, session_factory, judged
):
    campaign, a, _, pairs, originals = judged
    planner = Planner(session_factory, disagreement_seconds=0.0)
    planner.run_once()
    db_session.expire_all()
    before = results_for(db_session, campaign.slug)
    assert before.stop_reason == "complete"
    assert not before.assessor_disagreement.measured
    assert before.assessor_disagreement.sd == 0.0
    assert all(s.var == pytest.approx(0.0, abs=1e-12) for s in before.systems)
    # assessor A gives second opinions on 6 pairs, each 10 FINE points off the original
    when = utcnow() - timedelta(minutes=5)
    shifts = [10.0, -10.0, 10.0, -10.0, 10.0, -10.0]
    for pair, shift in zip(pairs[:6], shifts, strict=True):
        original = originals[(pair.query_id, pair.document_id)]
        fine = float(np.clip(original.fine + shift, 0, 100))
        _judge(db_session, campaign.id, a, pair, fine, "second", when, repeat_of=original.id)
    db_session.commit()
    planner.run_once()  # the planner's own engine takes it in (no pool pair moved)
    db_session.expire_all()
    after = results_for(db_session, campaign.slug)
    d = after.assessor_disagreement
    assert d.measured
    assert d.pairs == 6
    assert d.degrees_of_freedom == 6
    # each pair: (x1 - x2)^2 / 2 = 50 (unless clipped at 0 or 100); S / (d - 2)
    diffs = [
        float(np.clip(originals[(p.query_id, p.document_id)].fine + s, 0, 100))
        - originals[(p.query_id, p.document_id)].fine
        for p, s in zip(pairs[:6], shifts, strict=True)
    ]
    expected = sum(x * x / 2 for x in diffs) / (6 - 2)
    assert d.sd == pytest.approx(np.sqrt(expected))
    # the second opinions count nowhere else: the means are the same, the spread is not
    assert after.judgments == before.judgments
    before_means = {s.name: s.mean for s in before.systems}
    assert {s.name: s.mean for s in after.systems} == pytest.approx(before_means)
    assert all(s.var > 0 for s in after.systems)
    assert after.ranking_confidence <= before.ranking_confidence
    # an engine built afresh from the rows (reports, exports, the on-demand results) agrees
    state = load_campaign_engine(db_session, campaign)
    assert state.disagreement.pairs == 6
    assert state.engine.judged_var[state.engine.judged] == pytest.approx(expected)


def test_set_aside_second_opinions_are_not_counted(db_session, session_factory, judged):
    campaign, a, _, pairs, originals = judged
    when = utcnow() - timedelta(minutes=5)
    for pair in pairs[:5]:
        original = originals[(pair.query_id, pair.document_id)]
        fine = 100.0 - original.fine
        _judge(db_session, campaign.id, a, pair, fine, "second", when, repeat_of=original.id)
    db_session.commit()
    assert load_campaign_engine(db_session, campaign).disagreement.measured
    # the organizer's action marks the assessor (their second opinions keep their flag)
    actions.set_aside(db_session, campaign, a.id, audit.Actor("tester"))
    db_session.commit()
    state = load_campaign_engine(db_session, campaign)
    assert not state.disagreement.measured
    assert state.disagreement.pairs == 0
    assert np.all(state.engine.judged_var == 0)
    # a second opinion flagged set aside does not count either
    actions.bring_back(db_session, campaign, a.id, audit.Actor("tester"))
    db_session.execute(update(Judgment).where(Judgment.assessor_id == a.id).values(set_aside=True))
    db_session.commit()
    assert load_campaign_engine(db_session, campaign).disagreement.pairs == 0


def test_pairs_judged_twice_in_the_pool_count_and_their_mean_keeps_half(
    db_session, session_factory, judged
):
    campaign, a, b, pairs, originals = judged
    when = utcnow() - timedelta(minutes=5)
    # the imported judgment plus A's and B's pool judgments of the same 4 pairs: 3 each
    for pair in pairs[:4]:
        original = originals[(pair.query_id, pair.document_id)].fine
        _judge(db_session, campaign.id, a, pair, min(100.0, original + 12), "pool", when)
        _judge(db_session, campaign.id, b, pair, max(0.0, original - 12), "pool", when)
    db_session.commit()
    state = load_campaign_engine(db_session, campaign)
    d = state.disagreement
    assert d.pairs == 4
    assert d.df == 8
    engine = state.engine
    first = state.pair_index[(pairs[0].query_id, pairs[0].document_id)]
    other = state.pair_index[(pairs[10].query_id, pairs[10].document_id)]
    assert engine.judged_var[first] == pytest.approx(d.variance / 3)
    assert engine.judged_var[other] == pytest.approx(d.variance)
    assert engine.var[first] == pytest.approx(d.variance / 3)


def test_the_report_and_campaign_status_say_the_intervals_hold_the_disagreement(
    db_session, session_factory, judged
):
    campaign, a, _, pairs, originals = judged
    when = utcnow() - timedelta(minutes=5)
    for pair in pairs[:6]:
        original = originals[(pair.query_id, pair.document_id)]
        fine = 100.0 - original.fine
        _judge(db_session, campaign.id, a, pair, fine, "second", when, repeat_of=original.id)
    db_session.commit()
    document = build_report(db_session, campaign.slug)
    assert document["judgments"]["assessor_disagreement"]["measured"] is True
    html = " ".join(render_html(document).split())
    # a complete campaign whose intervals keep a width: not "exact", not "no width"
    assert "Every pool pair is judged on FINE." in html
    assert "keep a width even once every pair is judged" in html
    assert "includes the assessors' disagreement" in html
    status = format_campaign_status(results_for(db_session, campaign.slug))
    assert "intervals also hold the assessors' disagreement" in status
    assert "included" in status


@pytest.fixture
def volunteers(db_session):
    """A campaign judged by two volunteers, A lenient and B harsh, nothing imported."""
    fx, a, b, pairs = _two_assessors(db_session, share=0.0)
    when = utcnow() - timedelta(minutes=10)
    judgments = {}
    for i, pair in enumerate(pairs[:40]):
        who, fine = (a, 85.0 + i % 10) if i % 2 == 0 else (b, 5.0 + i % 10)
        judgments[(pair.query_id, pair.document_id)] = (
            who,
            _judge(db_session, fx.campaign.id, who, pair, fine, "pool", when),
        )
    db_session.commit()
    return fx.campaign, a, b, pairs, judgments


def test_each_assessor_s_own_offset_is_measured_and_shared_by_their_judgments(
    db_session, session_factory, volunteers
):
    """A lenient and a harsh volunteer: once their disagreement is measured, most of it is
    theirs (shared by all their judgments), the planner and an engine built afresh say so,
    and the judged pairs keep only the rest of it on their own."""
    campaign, a, b, pairs, judgments = volunteers
    planner = Planner(session_factory, disagreement_seconds=0.0)
    planner.run_once()
    db_session.expire_all()
    before = results_for(db_session, campaign.slug).assessor_disagreement
    assert not before.measured
    assert before.offset_sd == 0.0  # nothing to split before the disagreement is measured
    # A gives second opinions on four of B's pairs, 60 points above B
    when = utcnow() - timedelta(minutes=5)
    of_b = [p for p in pairs[:40] if judgments[(p.query_id, p.document_id)][0] is b][:4]
    for pair in of_b:
        original = judgments[(pair.query_id, pair.document_id)][1]
        _judge(db_session, campaign.id, a, pair, original.fine + 60, "second", when, original.id)
    db_session.commit()
    planner.run_once()
    db_session.expire_all()
    after = results_for(db_session, campaign.slug).assessor_disagreement
    assert after.measured
    assert 0 < after.offset_sd <= after.sd
    assert after.offset_assessors == 2
    state = load_campaign_engine(db_session, campaign)
    offsets = state.assessor_offsets
    assert offsets is not None
    assert offsets.sd == pytest.approx(after.offset_sd)
    judged = np.flatnonzero(state.engine.judged)
    assert judged.size == 40
    own = state.disagreement.variance - offsets.variance
    np.testing.assert_allclose(state.engine.judged_var[judged], own)
    assert offsets.shares.judgments == 40  # the pool judgments, not the second opinions
    status = format_campaign_status(results_for(db_session, campaign.slug))
    assert "each one's own, shared by all their judgments (2 assessors)" in status
    html = " ".join(render_html(build_report(db_session, campaign.slug)).split())
    assert "each assessor's own leniency or harshness" in html
