"""Queries of the assessors: their rows, their counts of judgments and trials, their pool
judgments set aside or counted, and their stored reliability."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from mtcjudge.models import (
    TRIAL_KINDS,
    Assessor,
    AssessorReliability,
    Judgment,
    Lease,
    Pair,
    counted_judgment,
)


def no_trials() -> dict[str, int]:
    """Answers to quality trials by kind, none yet (every kind listed)."""
    return dict.fromkeys(TRIAL_KINDS, 0)


def assessors_of(session: Session, campaign_id: int) -> list[Assessor]:
    query = select(Assessor).where(Assessor.campaign_id == campaign_id).order_by(Assessor.id)
    return list(session.scalars(query))


def assessor_for_update(session: Session, campaign_id: int, assessor_id: int) -> Assessor | None:
    """The campaign's assessor, its row locked until the transaction ends (Postgres: FOR NO
    KEY UPDATE, which waits for another organizer's change of the same assessor but not for
    the key-share locks a judgment or lease insert takes on it)."""
    return session.scalars(
        select(Assessor)
        .where(Assessor.id == assessor_id, Assessor.campaign_id == campaign_id)
        .with_for_update(key_share=True)
        .execution_options(populate_existing=True)  # as committed now, under the lock
    ).one_or_none()


def pool_judgments_of(
    session: Session, assessor_id: int, *, set_aside: bool
) -> list[JudgmentOfPair]:
    """The assessor's pool judgments that are (``set_aside``) or are not set aside, by pair
    id: the order the pair rows are locked in, so two changes cannot deadlock."""
    rows = session.execute(
        select(Judgment.id, Pair.id)
        .outerjoin(
            Pair,
            (Pair.campaign_id == Judgment.campaign_id)
            & (Pair.query_id == Judgment.query_id)
            & (Pair.document_id == Judgment.document_id),
        )
        .where(
            Judgment.assessor_id == assessor_id,
            Judgment.kind == "pool",
            Judgment.set_aside.is_(set_aside),
        )
        .order_by(Pair.id, Judgment.id)
    ).all()
    return [JudgmentOfPair(int(j), None if p is None else int(p)) for j, p in rows]


def set_judgment_aside(session: Session, judgment_id: int, aside: bool) -> bool:
    """Set a pool judgment aside (or bring it back) unless it is so already; whether it
    changed. The caller holds its pair's row."""
    changed = session.execute(
        update(Judgment)
        .where(
            Judgment.id == judgment_id,
            Judgment.kind == "pool",
            Judgment.set_aside.is_(not aside),
        )
        .values(set_aside=aside)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    return bool(changed)


def uncount_pair(session: Session, pair_id: int) -> None:
    """One judgment of the pair no longer counts: the pair has room again and the planner
    re-reads it (the caller holds the pair's row)."""
    session.execute(
        update(Pair)
        .where(Pair.id == pair_id, Pair.judged > 0)
        .values(judged=Pair.judged - 1, changes=Pair.changes + 1)
        .execution_options(synchronize_session=False)
    )


def recount_pair(session: Session, pair_id: int, per_pair: int) -> bool:
    """Count one judgment of the pair again if it has room for it (``judged < per_pair``):
    the statement that keeps a pair from being judged more often than the campaign asks,
    as a submission's. The caller holds the pair's row."""
    counted = session.execute(
        update(Pair)
        .where(Pair.id == pair_id, Pair.judged < per_pair)
        .values(judged=Pair.judged + 1, changes=Pair.changes + 1)
        .execution_options(synchronize_session=False)
    ).rowcount  # type: ignore[attr-defined]
    return bool(counted)


def live_lease_of(session: Session, assessor_id: int) -> Lease | None:
    return session.scalars(
        select(Lease).where(Lease.assessor_id == assessor_id, Lease.state == "live")
    ).one_or_none()


@dataclass(frozen=True)
class AssessorCounts:
    """An assessor's judgments: pool ones counted, pool ones set aside, quality trials (in
    all, and by kind: every kind of :data:`~mtcjudge.models.TRIAL_KINDS`, in its order)."""

    counted: int = 0
    set_aside: int = 0
    trials: int = 0
    trials_by_kind: dict[str, int] = field(default_factory=no_trials)


def assessor_counts(session: Session, campaign_id: int) -> dict[int, AssessorCounts]:
    """Assessor id -> :class:`AssessorCounts`, in one grouped read."""
    pool = Judgment.kind == "pool"
    rows = session.execute(
        select(
            Judgment.assessor_id,
            func.count().filter(counted_judgment()),
            func.count().filter(pool & Judgment.set_aside.is_(True)),
            func.count().filter(Judgment.kind != "pool"),
            *(func.count().filter(Judgment.kind == kind) for kind in TRIAL_KINDS),
        )
        .where(Judgment.campaign_id == campaign_id, Judgment.assessor_id.is_not(None))
        .group_by(Judgment.assessor_id)
    ).all()
    return {
        int(row[0] or 0): AssessorCounts(
            int(row[1]),
            int(row[2]),
            int(row[3]),
            {kind: int(n) for kind, n in zip(TRIAL_KINDS, row[4:], strict=True)},
        )
        for row in rows
    }


def reliability_rows(session: Session, campaign_id: int) -> dict[int, AssessorReliability]:
    """Assessor id -> what the planner last concluded about them."""
    rows = session.scalars(
        select(AssessorReliability).where(AssessorReliability.campaign_id == campaign_id)
    )
    return {row.assessor_id: row for row in rows}


def store_reliability_row(
    session: Session, row: AssessorReliability | None, values: dict[str, Any]
) -> AssessorReliability:
    """Update the stored row, or add one (its assessor's row is the key)."""
    if row is None:
        row = AssessorReliability(**values)
        session.add(row)
    else:
        for name, value in values.items():
            setattr(row, name, value)
    session.flush()
    return row


@dataclass(frozen=True)
class JudgmentOfPair:
    """A pool judgment and the pool pair it counts on (None: a pair outside the pool)."""

    judgment_id: int
    pair_id: int | None
