"""Queries of the exports: every one streams its rows (``yield_per``: a server-side cursor on
Postgres), ordered by external ids so that an export is the same bytes on SQLite and Postgres.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, aliased

from app.models import Assessor, Document, Judgment, Lease, Pair, Query, Result, System

__all__ = [
    "assessor_pseudonyms",
    "counts",
    "judgment_rows",
    "max_rank",
    "pair_values",
    "result_rows",
]

#: rows fetched at a time from the cursor
CHUNK = 1000


def _sorted(session: Session, column: Any) -> Any:
    """``column`` ordered byte-wise on both databases (Postgres would otherwise use the
    locale's collation, which ignores case and punctuation)."""
    if session.get_bind().dialect.name == "postgresql":
        return column.collate("C")
    return column


def assessor_pseudonyms(session: Session, campaign_id: int) -> dict[int, str]:
    """A1, A2, ... in the order assessors were invited: the results document's pseudonyms."""
    ids = session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == campaign_id).order_by(Assessor.id)
    ).all()
    return {int(a): f"A{n}" for n, a in enumerate(ids, start=1)}


def judgment_rows(session: Session, campaign_id: int) -> Iterator[Any]:
    """Every judgment of the campaign with its pair's external ids and its lease, by query,
    document, assessor (imported judgments first) and judgment."""
    query_doc = aliased(Document)
    candidate = aliased(Document)
    stmt = (
        select(
            query_doc.external_id.label("query"),
            candidate.external_id.label("document"),
            Judgment.broad,
            Judgment.fine,
            Judgment.assessor_id,
            Judgment.source,
            Judgment.created_at,
            Judgment.updated_at,
            Judgment.revision,
            Judgment.query_listen_ms,
            Judgment.candidate_listen_ms,
            Judgment.lease_id,
            Lease.leased_at,
            Lease.selection_rank,
            Lease.selection_weight,
            Lease.selection_rule,
        )
        .join(Query, Query.id == Judgment.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate, candidate.id == Judgment.document_id)
        .outerjoin(Lease, Lease.id == Judgment.lease_id)
        .where(Judgment.campaign_id == campaign_id)
        .order_by(
            _sorted(session, query_doc.external_id),
            _sorted(session, candidate.external_id),
            func.coalesce(Judgment.assessor_id, 0),
            Judgment.id,
        )
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def pair_values(session: Session, campaign_id: int, scale: str) -> Iterator[Any]:
    """(query, document, value) of every judgment with a value on ``scale``, by pair: the
    judgments of one pair come one after the other."""
    column = Judgment.fine if scale == "fine" else Judgment.broad
    query_doc = aliased(Document)
    candidate = aliased(Document)
    stmt = (
        select(
            query_doc.external_id.label("query"),
            candidate.external_id.label("document"),
            column.label("value"),
        )
        .join(Query, Query.id == Judgment.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate, candidate.id == Judgment.document_id)
        .where(Judgment.campaign_id == campaign_id, column.is_not(None))
        .order_by(
            _sorted(session, query_doc.external_id),
            _sorted(session, candidate.external_id),
            Judgment.id,
        )
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def max_rank(session: Session, campaign_id: int) -> int:
    return int(
        session.scalar(select(func.max(Result.rank)).where(Result.campaign_id == campaign_id)) or 0
    )


def result_rows(session: Session, campaign_id: int) -> Iterator[Any]:
    """(system, query, document, rank, query artist, document artist) of every result, by
    system name, query and rank."""
    query_doc = aliased(Document)
    candidate = aliased(Document)
    stmt = (
        select(
            System.name.label("system"),
            query_doc.external_id.label("query"),
            candidate.external_id.label("document"),
            Result.rank,
            query_doc.artist.label("query_artist"),
            candidate.artist.label("document_artist"),
            (candidate.id == query_doc.id).label("is_query"),
        )
        .join(System, System.id == Result.system_id)
        .join(Query, Query.id == Result.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate, candidate.id == Result.document_id)
        .where(Result.campaign_id == campaign_id)
        .order_by(
            _sorted(session, System.name), _sorted(session, query_doc.external_id), Result.rank
        )
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def counts(session: Session, campaign_id: int) -> dict[str, int]:
    """Judgment rows, judged pairs (any), pool pairs and judged pool pairs."""
    judgment_rows_n = session.scalar(
        select(func.count()).where(Judgment.campaign_id == campaign_id)
    )
    judged = (
        select(Judgment.query_id, Judgment.document_id)
        .where(Judgment.campaign_id == campaign_id)
        .group_by(Judgment.query_id, Judgment.document_id)
        .subquery()
    )
    judged_pairs = session.scalar(select(func.count()).select_from(judged))
    pool_pairs = session.scalar(select(func.count()).where(Pair.campaign_id == campaign_id))
    judged_pool = session.scalar(
        select(func.count())
        .select_from(judged)
        .join(
            Pair,
            (Pair.campaign_id == campaign_id)
            & (Pair.query_id == judged.c.query_id)
            & (Pair.document_id == judged.c.document_id),
        )
    )
    return {
        "judgment_rows": int(judgment_rows_n or 0),
        "judged_pairs": int(judged_pairs or 0),
        "pool_pairs": int(pool_pairs or 0),
        "judged_pool_pairs": int(judged_pool or 0),
    }
