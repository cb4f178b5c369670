"""Queries of the judging feature: the campaign's collection, judgments and leases."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Row, and_, func, select, union, update
from sqlalchemy.orm import Session

from app.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Query,
    Result,
    System,
    utcnow,
)

__all__ = [
    "active_lease_of",
    "active_leases",
    "assessor_by_token",
    "assessor_judgment_count",
    "assessor_pairs",
    "bump_judgment_version",
    "collection_rows",
    "documents_with_audio",
    "judgment_by_client_id",
    "judgment_of",
    "judgments_since",
    "lease_row",
    "lock_campaign",
    "mark_consented",
    "pair_judgment_counts",
    "pair_means",
    "playable_document",
    "recent_judgments",
]


def assessor_by_token(session: Session, token: str) -> Assessor | None:
    return session.scalars(select(Assessor).where(Assessor.token == token)).one_or_none()


def lock_campaign(session: Session, campaign_id: int) -> Campaign:
    """The campaign row, locked for the transaction on Postgres (serialises lease allocation)."""
    stmt = select(Campaign).where(Campaign.id == campaign_id)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return session.scalars(stmt).one()


def collection_rows(
    session: Session, campaign_id: int
) -> tuple[
    Sequence[Row[int, str, str | None, str | None]],
    Sequence[Row[int, int]],
    Sequence[Row[int, str, str | None]],
    Sequence[Row[int, int, int, int]],
]:
    """Documents, queries, systems and results of a campaign, as plain rows."""
    documents = session.execute(
        select(Document.id, Document.external_id, Document.artist, Document.genre).where(
            Document.campaign_id == campaign_id
        )
    ).all()
    queries = session.execute(
        select(Query.id, Query.document_id).where(Query.campaign_id == campaign_id)
    ).all()
    systems = session.execute(
        select(System.id, System.name, System.team).where(System.campaign_id == campaign_id)
    ).all()
    results = session.execute(
        select(Result.system_id, Result.query_id, Result.rank, Result.document_id)
        .where(Result.campaign_id == campaign_id)
        .order_by(Result.system_id, Result.query_id, Result.rank)
    ).all()
    return documents, queries, systems, results


def documents_with_audio(session: Session, campaign_id: int) -> set[int]:
    return set(
        session.scalars(
            select(Document.id).where(
                Document.campaign_id == campaign_id, Document.audio_path.is_not(None)
            )
        )
    )


def pair_means(
    session: Session, campaign_id: int, scale: str, pairs: Sequence[tuple[int, int]] | None = None
) -> dict[tuple[int, int], float]:
    """Mean judgment on ``scale`` of each judged (query_id, document_id) pair (all assessors)."""
    column = Judgment.fine if scale == "fine" else Judgment.broad
    stmt = (
        select(Judgment.query_id, Judgment.document_id, func.avg(column))
        .where(Judgment.campaign_id == campaign_id, column.is_not(None))
        .group_by(Judgment.query_id, Judgment.document_id)
    )
    if pairs is not None:
        if not pairs:
            return {}
        wanted = {(q, d) for q, d in pairs}
        queries = {q for q, _ in wanted}
        stmt = stmt.where(Judgment.query_id.in_(queries))
        return {(q, d): float(v) for q, d, v in session.execute(stmt).all() if (q, d) in wanted}
    return {(q, d): float(v) for q, d, v in session.execute(stmt).all()}


def judgments_since(session: Session, campaign_id: int, version: int) -> list[tuple[int, int]]:
    """Pairs whose judgments were written after ``version`` of the campaign."""
    rows = session.execute(
        select(Judgment.query_id, Judgment.document_id)
        .where(Judgment.campaign_id == campaign_id, Judgment.version > version)
        .distinct()
    ).all()
    return [(q, d) for q, d in rows]


def pair_judgment_counts(session: Session, campaign_id: int) -> dict[tuple[int, int], int]:
    rows = session.execute(
        select(Judgment.query_id, Judgment.document_id, func.count())
        .where(Judgment.campaign_id == campaign_id)
        .group_by(Judgment.query_id, Judgment.document_id)
    ).all()
    return {(q, d): int(n) for q, d, n in rows}


def active_leases(session: Session, campaign_id: int, now: datetime) -> list[Lease]:
    return list(
        session.scalars(
            select(Lease).where(Lease.campaign_id == campaign_id, Lease.expires_at > now)
        )
    )


def active_lease_of(session: Session, assessor_id: int, now: datetime) -> Lease | None:
    return session.scalars(
        select(Lease)
        .where(Lease.assessor_id == assessor_id, Lease.expires_at > now)
        .order_by(Lease.leased_at.desc())
        .limit(1)
    ).first()


def lease_row(
    session: Session, campaign_id: int, query_id: int, document_id: int, assessor_id: int
) -> Lease | None:
    return session.scalars(
        select(Lease).where(
            Lease.campaign_id == campaign_id,
            Lease.query_id == query_id,
            Lease.document_id == document_id,
            Lease.assessor_id == assessor_id,
        )
    ).one_or_none()


def assessor_pairs(session: Session, assessor_id: int) -> set[tuple[int, int]]:
    """Pairs this assessor has judged."""
    rows = session.execute(
        select(Judgment.query_id, Judgment.document_id).where(Judgment.assessor_id == assessor_id)
    ).all()
    return {(q, d) for q, d in rows}


def assessor_judgment_count(session: Session, assessor_id: int) -> int:
    return int(session.scalar(select(func.count()).where(Judgment.assessor_id == assessor_id)) or 0)


def judgment_by_client_id(session: Session, assessor_id: int, client_id: str) -> Judgment | None:
    return session.scalars(
        select(Judgment).where(
            and_(Judgment.assessor_id == assessor_id, Judgment.client_id == client_id)
        )
    ).one_or_none()


def judgment_of(
    session: Session, assessor_id: int, query_id: int, document_id: int
) -> Judgment | None:
    return session.scalars(
        select(Judgment).where(
            Judgment.assessor_id == assessor_id,
            Judgment.query_id == query_id,
            Judgment.document_id == document_id,
        )
    ).one_or_none()


def recent_judgments(session: Session, assessor_id: int, limit: int) -> list[Judgment]:
    return list(
        session.scalars(
            select(Judgment)
            .where(Judgment.assessor_id == assessor_id)
            .order_by(Judgment.created_at.desc(), Judgment.id.desc())
            .limit(limit)
        )
    )


def bump_judgment_version(session: Session, campaign_id: int) -> int:
    """Atomically increment and return the campaign's judgment version."""
    version = session.execute(
        update(Campaign)
        .where(Campaign.id == campaign_id)
        .values(judgment_version=Campaign.judgment_version + 1)
        .returning(Campaign.judgment_version)
    ).scalar_one()
    return int(version)


def mark_consented(session: Session, assessor: Assessor) -> None:
    """Record consent once; giving it again keeps the first time."""
    if assessor.consented_at is None:
        assessor.consented_at = utcnow()
        session.flush()


def playable_document(session: Session, assessor_id: int, document_id: int) -> Document | None:
    """The document if it is the query or the candidate of one of the assessor's leases or
    judgments, else None: an invitation token opens no other clip."""
    reachable = union(
        select(Lease.document_id).where(Lease.assessor_id == assessor_id),
        select(Query.document_id)
        .join(Lease, Lease.query_id == Query.id)
        .where(Lease.assessor_id == assessor_id),
        select(Judgment.document_id).where(Judgment.assessor_id == assessor_id),
        select(Query.document_id)
        .join(Judgment, Judgment.query_id == Query.id)
        .where(Judgment.assessor_id == assessor_id),
    ).subquery()
    return session.scalars(
        select(Document).where(Document.id == document_id, Document.id.in_(select(reachable.c[0])))
    ).one_or_none()
