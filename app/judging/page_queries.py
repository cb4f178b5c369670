"""Database reads and writes behind the assessor's HTML pages (welcome, consent, judging, audio)."""

from __future__ import annotations

from sqlalchemy import select, union
from sqlalchemy.orm import Session

from app.models import Assessor, Campaign, Document, Judgment, Lease, Query, utcnow

__all__ = [
    "assessor_by_token",
    "campaign_by_id",
    "mark_consented",
    "playable_document",
]


def assessor_by_token(session: Session, token: str) -> Assessor | None:
    return session.scalars(select(Assessor).where(Assessor.token == token)).one_or_none()


def campaign_by_id(session: Session, campaign_id: int) -> Campaign:
    return session.get_one(Campaign, campaign_id)


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
