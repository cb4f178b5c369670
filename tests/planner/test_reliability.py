"""The planner assesses each assessor's reliability off the request path and stores it; with
the campaign's automatic pause, an assessor who fails the hidden trials is paused kindly."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import select

from mtcjudge.models import (
    Assessor,
    AssessorReliability,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    utcnow,
)
from mtcjudge.planner.service import Planner
from tests.factories import make_campaign


def _answer(
    session, campaign_id, assessor, query_id, document_id, fine, when, kind="pool", broad=None
):
    if broad is None:
        broad = 0 if fine < 34 else 1 if fine < 67 else 2
    lease = Lease(
        campaign_id=campaign_id,
        pair_id=None,
        query_id=query_id,
        document_id=document_id,
        assessor_id=assessor.id,
        kind=kind,
        state="done",
        leased_at=when - timedelta(seconds=20),
        expires_at=when + timedelta(minutes=10),
    )
    session.add(lease)
    session.flush()
    session.add(
        Judgment(
            campaign_id=campaign_id,
            query_id=query_id,
            document_id=document_id,
            assessor_id=assessor.id,
            broad=broad,
            fine=float(fine),
            kind=kind,
            source="assessor",
            query_listen_ms=20_000,
            candidate_listen_ms=20_000,
            lease_id=lease.id,
            created_at=when,
            updated_at=when,
        )
    )


def _campaign_with_two_assessors(session, *, auto_pause: bool):
    """A careful assessor (the truth plus modest noise) and a random clicker judge 40 pool
    pairs each, one by one, with a reference trial (the query against itself) on each
    query they judge."""
    fx = make_campaign(session, share=0.5, estimator="joint", auto_pause=auto_pause)
    campaign = fx.campaign
    careful = Assessor(campaign_id=campaign.id, name="Careful", token_hash="c" * 64)
    clicker = Assessor(campaign_id=campaign.id, name="Clicker", token_hash="r" * 64)
    session.add_all([careful, clicker])
    session.flush()
    query_doc = dict(
        session.execute(
            select(Query.id, Document.external_id)
            .join(Document, Document.id == Query.document_id)
            .where(Query.campaign_id == campaign.id)
        ).all()
    )
    doc_id = dict(
        session.execute(
            select(Document.external_id, Document.id).where(Document.campaign_id == campaign.id)
        ).all()
    )
    pairs = session.execute(
        select(Pair.query_id, Pair.document_id, Document.external_id)
        .join(Document, Document.id == Pair.document_id)
        .where(Pair.campaign_id == campaign.id)
        .order_by(Pair.query_id, Pair.id)
    ).all()
    rng = np.random.default_rng(7)
    start = utcnow() - timedelta(hours=1)
    for n, (who, noisy) in enumerate(((careful, False), (clicker, True))):
        referenced: set[int] = set()
        for i, (q, d, ext) in enumerate(pairs[40 * n : 40 * (n + 1)]):
            truth = fx.synthetic.fine[(query_doc[q], ext)]
            fine = rng.uniform(0, 100) if noisy else np.clip(truth + rng.normal(0, 8), 0, 100)
            when = start + timedelta(seconds=30 * i)
            # a random clicker presses any BROAD key too
            broad = int(rng.integers(0, 3)) if noisy else None
            _answer(session, campaign.id, who, q, d, round(float(fine)), when, broad=broad)
            if i % 4 == 3 and q not in referenced:
                referenced.add(q)
                ref = doc_id[query_doc[q]]
                fine = rng.uniform(0, 100) if noisy else 96.0
                _answer(
                    session, campaign.id, who, q, ref, round(float(fine)), when, kind="reference"
                )
    session.commit()
    return campaign, careful, clicker


@pytest.mark.parametrize("auto_pause", [False, True])
def test_the_planner_flags_a_random_clicker_and_not_a_careful_assessor(
    db_session, session_factory, auto_pause
) -> None:
    campaign, careful, clicker = _campaign_with_two_assessors(db_session, auto_pause=auto_pause)
    assert Planner(session_factory).run_once() == [campaign.id]
    db_session.expire_all()
    rows = {
        r.assessor_id: r
        for r in db_session.scalars(
            select(AssessorReliability).where(AssessorReliability.campaign_id == campaign.id)
        )
    }
    assert set(rows) == {careful.id, clicker.id}
    assert rows[clicker.id].flagged is True
    assert json.loads(rows[clicker.id].reasons)  # in words
    assert rows[careful.id].flagged is False
    assert json.loads(rows[careful.id].reasons) == []
    metrics = json.loads(rows[clicker.id].metrics)
    assert "failed_trials" in metrics
    # the clicker's pause follows the campaign's setting (and their failed trials)
    clicker_row = db_session.get(Assessor, clicker.id)
    careful_row = db_session.get(Assessor, careful.id)
    assert careful_row is not None
    assert careful_row.paused_at is None
    assert clicker_row is not None
    if auto_pause and metrics["failed_trials"]:
        assert clicker_row.paused_at is not None  # told the default kind words
    else:
        assert clicker_row.paused_at is None


def test_reliability_is_assessed_again_only_when_answers_change(db_session, session_factory):
    campaign, careful, _ = _campaign_with_two_assessors(db_session, auto_pause=False)
    planner = Planner(session_factory, reliability_seconds=0.0)
    planner.run_once()
    first = db_session.scalars(
        select(AssessorReliability.computed_at).where(AssessorReliability.assessor_id == careful.id)
    ).one()
    planner.run_once(force=True)
    db_session.expire_all()
    again = db_session.scalars(
        select(AssessorReliability.computed_at).where(AssessorReliability.assessor_id == careful.id)
    ).one()
    assert again == first  # nothing new: the verdicts stand
    # a new answer (a quality trial moves no pair, yet it is evidence)
    query = db_session.scalars(select(Query).where(Query.campaign_id == campaign.id)).first()
    assert query is not None
    _answer(db_session, campaign.id, careful, query.id, query.document_id, 5.0, utcnow(), "anchor")
    db_session.commit()
    planner.run_once(force=True)
    db_session.expire_all()
    latest = db_session.scalars(
        select(AssessorReliability.computed_at).where(AssessorReliability.assessor_id == careful.id)
    ).one()
    assert latest > first


def test_a_second_opinion_is_weighed_as_a_pool_answer(db_session, session_factory):
    """A second opinion (a pair another assessor judged, handed blind) is assessed as a pool
    answer of its assessor (mtc.reliability knows no such kind): it adds to their pool
    answers, not to their trials, and never counts as the other judge of the original."""
    campaign, careful, clicker = _campaign_with_two_assessors(db_session, auto_pause=False)
    planner = Planner(session_factory, reliability_seconds=0.0)
    planner.run_once()

    def metrics(who) -> dict:
        db_session.expire_all()
        row = db_session.scalars(
            select(AssessorReliability).where(AssessorReliability.assessor_id == who.id)
        ).one()
        return json.loads(row.metrics)

    before = {who.id: metrics(who) for who in (careful, clicker)}
    original = db_session.scalars(
        select(Judgment)
        .where(Judgment.assessor_id == clicker.id, Judgment.kind == "pool")
        .order_by(Judgment.id)
    ).first()
    assert original is not None
    _answer(
        db_session,
        campaign.id,
        careful,
        original.query_id,
        original.document_id,
        55.0,
        utcnow(),
        kind="second",
    )
    db_session.flush()
    second = db_session.scalars(select(Judgment).where(Judgment.kind == "second")).one()
    second.repeat_of = original.id
    db_session.commit()
    planner.run_once(force=True)
    after = metrics(careful)
    assert after["n_answers"] == before[careful.id]["n_answers"] + 1
    assert after["n_pool"] == before[careful.id]["n_pool"] + 1
    assert after["n_trials"] == before[careful.id]["n_trials"]
    # the clicker's verdict rests on what it rested on (their pair's other judges unchanged)
    assert metrics(clicker)["agreement"] == before[clicker.id]["agreement"]
    assert metrics(clicker)["n_answers"] == before[clicker.id]["n_answers"]
