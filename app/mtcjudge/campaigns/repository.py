"""Queries of the campaigns feature. Repositories only ``flush()``; the caller commits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, insert, or_, select, update
from sqlalchemy.orm import Session

from mtcjudge.models import (
    TRIAL_KINDS,
    Assessor,
    AssessorReliability,
    Base,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    Result,
    System,
    counted_judgment,
)

__all__ = [
    "AssessorCounts",
    "CampaignCounts",
    "JudgmentOfPair",
    "add",
    "all_campaigns",
    "assessor_counts",
    "assessor_for_update",
    "assessors_of",
    "bulk_insert",
    "campaign_by_slug",
    "campaign_counts",
    "document_ids",
    "documents_without_audio",
    "live_lease_of",
    "no_trials",
    "pool_judgments_of",
    "query_ids",
    "recount_pair",
    "reliability_rows",
    "set_audio",
    "set_judgment_aside",
    "slugs_starting_with",
    "store_reliability_row",
    "system_ids",
    "uncount_pair",
]


@dataclass(frozen=True)
class CampaignCounts:
    systems: int
    queries: int
    documents: int
    results: int
    assessors: int
    judgments: int
    imported_judgments: int


def add(session: Session, row: Base) -> None:
    session.add(row)
    session.flush()


def bulk_insert(session: Session, model: type[Base], rows: Sequence[dict[str, Any]]) -> None:
    # one executemany (batched "insertmanyvalues" on Postgres) instead of a unit-of-work
    # flush per object: a MIREX-sized import is ~20,000 rows
    if rows:
        session.execute(insert(model), list(rows))


def campaign_by_slug(session: Session, slug: str) -> Campaign | None:
    return session.scalars(select(Campaign).where(Campaign.slug == slug)).one_or_none()


def all_campaigns(session: Session) -> list[Campaign]:
    return list(session.scalars(select(Campaign).order_by(Campaign.created_at, Campaign.id)))


def slugs_starting_with(session: Session, base: str) -> set[str]:
    """``base`` and the ``base-N`` slugs already taken (slugs hold no LIKE wildcards)."""
    taken = select(Campaign.slug).where(or_(Campaign.slug == base, Campaign.slug.like(f"{base}-%")))
    return set(session.scalars(taken))


def system_ids(session: Session, campaign_id: int) -> dict[str, int]:
    rows = session.execute(select(System.name, System.id).where(System.campaign_id == campaign_id))
    return dict(rows.all())


def document_ids(session: Session, campaign_id: int) -> dict[str, int]:
    rows = session.execute(
        select(Document.external_id, Document.id).where(Document.campaign_id == campaign_id)
    )
    return dict(rows.all())


def documents_without_audio(session: Session, campaign_id: int) -> set[str]:
    """External ids of the campaign's documents that have no clip."""
    return set(
        session.scalars(
            select(Document.external_id).where(
                Document.campaign_id == campaign_id, Document.audio_path.is_(None)
            )
        )
    )


def set_audio(session: Session, campaign_id: int, clips: dict[str, dict[str, Any]]) -> None:
    """Give stored documents (by external id) their clip: ``audio_path``, ``audio_type``,
    ``duration_seconds``."""
    for external_id, values in clips.items():
        session.execute(
            update(Document)
            .where(Document.campaign_id == campaign_id, Document.external_id == external_id)
            .values(**values)
            .execution_options(synchronize_session=False)
        )


def query_ids(session: Session, campaign_id: int) -> dict[int, int]:
    """Document id -> query id."""
    rows = session.execute(
        select(Query.document_id, Query.id).where(Query.campaign_id == campaign_id)
    )
    return dict(rows.all())


def assessors_of(session: Session, campaign_id: int) -> list[Assessor]:
    query = select(Assessor).where(Assessor.campaign_id == campaign_id).order_by(Assessor.id)
    return list(session.scalars(query))


def campaign_counts(session: Session, campaign_id: int) -> CampaignCounts:
    def count(model: type[System | Query | Document | Result | Assessor | Judgment]) -> Any:
        return (
            select(func.count())
            .select_from(model)
            .where(model.campaign_id == campaign_id)
            .scalar_subquery()
        )

    imported = (
        select(func.count())
        .select_from(Judgment)
        .where(Judgment.campaign_id == campaign_id, Judgment.source == "import")
        .scalar_subquery()
    )
    row = session.execute(
        select(
            count(System),
            count(Query),
            count(Document),
            count(Result),
            count(Assessor),
            count(Judgment),
            imported,
        )
    ).one()
    systems, queries, documents, results, assessors, judgments, n_imported = row
    return CampaignCounts(
        systems=systems,
        queries=queries,
        documents=documents,
        results=results,
        assessors=assessors,
        judgments=judgments - n_imported,
        imported_judgments=n_imported,
    )


# ------------------------------------------------------------------ assessors set aside, paused


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


@dataclass(frozen=True)
class JudgmentOfPair:
    """A pool judgment and the pool pair it counts on (None: a pair outside the pool)."""

    judgment_id: int
    pair_id: int | None


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


def no_trials() -> dict[str, int]:
    """Answers to quality trials by kind, none yet (every kind listed)."""
    return dict.fromkeys(TRIAL_KINDS, 0)


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
