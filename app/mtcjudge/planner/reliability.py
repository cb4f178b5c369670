"""Each assessor's reliability, assessed off the request path by the campaign's planner.

From time to time (after new answers, at most every :data:`RELIABILITY_SECONDS`) the planner
turns every assessor's judgments and quality-trial answers into
:class:`mtcjudge.mtc.reliability.Answer` values, in the order they were given, with what the
campaign's engine expects of each pool pair *without that assessor's judgments*
(:func:`mtcjudge.mtc.reliability.expected_moments`, leave one assessor out) and what the
other judges said of it, and stores the :func:`~mtcjudge.mtc.reliability.assess` verdict
(:func:`mtcjudge.assessors.actions.store_reliability`, which also pauses automatically
when the campaign asks). docs/quality.md describes the signals and the flag rule.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.assessors.reliability import store_reliability
from mtcjudge.campaign_engine.build import CampaignEngine
from mtcjudge.db import session_scope
from mtcjudge.models import DEFAULT_LISTEN_SECONDS, Campaign, as_utc
from mtcjudge.mtc.reliability import POOL_KINDS, Answer, Reliability, assess, expected_moments
from mtcjudge.planner import repository

__all__ = ["RELIABILITY_SECONDS", "assess_assessors", "refresh_reliability"]

log = logging.getLogger("mtcjudge.planner")

#: the assessors' reliability is assessed again at most this often while answers come in
RELIABILITY_SECONDS = 10.0

#: judged pairs it takes to check that the estimator's expectations follow the judges
MIN_YARDSTICK_PAIRS = 30
#: ... and the one-sided 5 % point of the normal that their correlation must pass
YARDSTICK_Z = 1.645
#: other judges of a pair it takes for their mean to stand for the pair (Answer.others)
MIN_OTHER_JUDGES = 2

Verdicts = dict[int, tuple[bool, Sequence[str], dict[str, Any]]]


def _listen_fraction(row: Any, query_heard_ms: float, listen_seconds: float) -> float | None:
    """Reported listening over what a rule would ask (the smaller of the two clips', capped
    at 1). None when the campaign has a rule: the server enforces it, so the reported
    figure says nothing more. Without one, the product's default rule is the yardstick;
    the query clip counts what was heard of it on the assessor's earlier pairs of the same
    query in a row (a careful assessor need not replay a query they have just heard)."""
    if listen_seconds > 0 or row.candidate_listen_ms is None or row.query_listen_ms is None:
        return None
    fractions = []
    for heard_ms, seconds in (
        (query_heard_ms, row.query_seconds),
        (float(row.candidate_listen_ms), row.candidate_seconds),
    ):
        needed = DEFAULT_LISTEN_SECONDS if seconds is None else min(DEFAULT_LISTEN_SECONDS, seconds)
        fractions.append(1.0 if needed <= 0 else min(1.0, heard_ms / 1000.0 / needed))
    return min(fractions)


def _score(value: float | None) -> float | None:
    return None if value is None else min(1.0, max(0.0, float(value) / 100.0))


def _yardstick(
    state: CampaignEngine, by_pair: dict[tuple[int, int], list[tuple[int | None, float]]]
) -> float:
    """Whether the estimator's expectations can serve as a yardstick in this campaign, and
    how much wider than it claims its error is: 0 when they cannot, else the factor (at
    least 1) to widen their variances by.

    Checked on the pairs judged so far (each against its expectation without the judgments
    of its query): the expectations must be shown to follow the judges — a correlation
    with the judgments above zero at the one-sided 5 % level, over at least
    :data:`MIN_YARDSTICK_PAIRS` pairs — else an assessor's scores would be held against an
    expectation that says nothing of the music, and a careful assessor could not be told
    from a careless one by them. Their mean squared error over their mean claimed variance
    is the factor."""
    judged = [
        (state.pair_index[key], sum(f for _, f in scores) / len(scores) / 100.0)
        for key, scores in by_pair.items()
        if key in state.pair_index and scores
    ]
    if len(judged) < MIN_YARDSTICK_PAIRS:
        return 0.0
    mean, var = expected_moments(state.engine)
    index = np.array([p for p, _ in judged], dtype=np.intp)
    y = np.array([v for _, v in judged])
    e, v = mean[index], var[index]
    if np.std(y) == 0 or np.std(e) == 0:
        return 0.0
    r = float(np.corrcoef(y, e)[0, 1])
    n = len(y)
    # one-sided test of r > 0 (Fisher's z)
    if not np.isfinite(r) or np.arctanh(min(r, 0.999999)) * np.sqrt(n - 3) < YARDSTICK_Z:
        return 0.0
    claimed = float(np.mean(v))
    if claimed <= 0:
        return 0.0
    return max(1.0, float(np.mean((y - e) ** 2)) / claimed)


def assess_assessors(
    state: CampaignEngine,
    rows: Sequence[Any],
    imported: Sequence[Any],
    listen_seconds: float,
) -> dict[int, Reliability]:
    """The verdict on every assessor with answers, from :func:`repository.answer_rows` and
    :func:`repository.imported_scores`; the engine is only read."""
    by_pair: dict[tuple[int, int], list[tuple[int | None, float]]] = defaultdict(list)
    for q, d, fine in imported:
        by_pair[(int(q), int(d))].append((None, float(fine)))
    scores: dict[int, float | None] = {}
    by_assessor: dict[int, list[Any]] = defaultdict(list)
    for row in rows:
        scores[int(row.id)] = _score(row.fine)
        by_assessor[int(row.assessor_id)].append(row)
        if row.kind == "pool" and not row.set_aside and row.fine is not None:
            by_pair[(int(row.query_id), int(row.document_id))].append(
                (int(row.assessor_id), float(row.fine))
            )
    engine = state.engine
    yardstick = _yardstick(state, by_pair)
    verdicts: dict[int, Reliability] = {}
    for assessor_id, own in by_assessor.items():
        pairs = [
            state.pair_index[(int(r.query_id), int(r.document_id))]
            for r in own
            if r.kind == "pool" and (int(r.query_id), int(r.document_id)) in state.pair_index
        ]
        mean = var = None
        if pairs:
            leave_out = np.zeros(engine.collection.n_pairs, dtype=bool)
            leave_out[pairs] = True
            mean, var = expected_moments(engine, leave_out)
        answers = []
        heard_query_ms = 0.0
        last_query: int | None = None
        for r in own:
            query = int(r.query_id)
            heard_query_ms = (heard_query_ms if query == last_query else 0.0) + float(
                r.query_listen_ms or 0
            )
            last_query = query
            expected = expected_var = others = repeat_of = None
            # a second opinion (another assessor's pool pair, handed blind) is weighed as a
            # pool answer: against the other judges of the pair, else the expectation
            if r.kind in POOL_KINDS:
                key = (query, int(r.document_id))
                p = state.pair_index.get(key)
                if p is not None and mean is not None and var is not None and yardstick:
                    expected = float(min(1.0, max(0.0, mean[p])))
                    expected_var = float(max(0.0, var[p])) * yardstick
                judged = [f for who, f in by_pair.get(key, []) if who != assessor_id]
                # one other judge cannot say which of the two is wrong: their disagreement
                # would count against both, so it takes two (else the expectation speaks)
                if len(judged) >= MIN_OTHER_JUDGES:
                    others = _score(sum(judged) / len(judged))
            elif r.kind == "repeat" and r.repeat_of is not None:
                repeat_of = scores.get(int(r.repeat_of))
            seconds = None
            if r.leased_at is not None and r.created_at is not None:
                seconds = max(0.0, (as_utc(r.created_at) - as_utc(r.leased_at)).total_seconds())
            answers.append(
                Answer(
                    kind=str(r.kind),
                    score=_score(r.fine),
                    broad=None if r.broad is None else int(r.broad),
                    expected=expected,
                    expected_var=expected_var,
                    others=others,
                    repeat_of=repeat_of,
                    listen_fraction=_listen_fraction(r, heard_query_ms, listen_seconds),
                    seconds=seconds,
                    query=query,
                )
            )
        verdicts[assessor_id] = assess(answers)
    return verdicts


def refresh_reliability(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    state: CampaignEngine,
    *,
    still_mine: Any = None,
) -> list[int] | None:
    """Assess every assessor of the campaign and store the verdicts; the assessors paused
    automatically (None when the campaign is gone or the planner lost its claim). Reads in
    one transaction, computes holding no connection, writes in another."""
    with session_scope(session_factory) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            return None
        listen_seconds = float(campaign.listen_seconds)
        rows = repository.answer_rows(session, campaign_id)
        imported = repository.imported_scores(session, campaign_id)
    verdicts = assess_assessors(state, rows, imported, listen_seconds)
    results: Verdicts = {
        assessor_id: (
            v.flagged,
            list(v.reasons),
            {**v.metrics, "failed_trials": v.failed_trials},
        )
        for assessor_id, v in verdicts.items()
    }
    with session_scope(session_factory) as session:
        if still_mine is not None and not still_mine(session):
            return None
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            return None
        paused = store_reliability(session, campaign, results)
    if paused:
        log.info(
            "campaign %s: assessor(s) %s paused after failed quality trials", campaign_id, paused
        )
    return paused
