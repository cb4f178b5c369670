"""Queries of the exports: every one streams its rows (``yield_per``: a server-side cursor on
Postgres), ordered by external ids so that an export is the same bytes on SQLite and Postgres.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, aliased

from mtcjudge.models import (
    Assessor,
    AssessorReliability,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    Result,
    System,
    TrajectoryPoint,
    counted_judgment,
)

__all__ = [
    "assessor_pseudonyms",
    "counts",
    "documents",
    "judgment_ids",
    "judgment_rows",
    "judgment_tally",
    "max_rank",
    "pair_values",
    "query_documents",
    "recount_pairs",
    "repeated_lease_numbers",
    "result_rows",
    "state_assessors",
    "state_audit",
    "state_documents",
    "state_judgments",
    "state_leases",
    "state_reliability",
    "state_systems",
    "state_trajectory",
]

#: rows fetched at a time from the cursor
CHUNK = 1000


def _sorted(session: Session, column: Any) -> Any:
    """``column`` ordered byte-wise on both databases (Postgres would otherwise use the
    locale's collation, which ignores case and punctuation)."""
    if session.get_bind().dialect.name == "postgresql":
        return column.collate("C")
    return column


def _pair_ids(table: Any, *columns: Any) -> tuple[Any, Any, Any]:
    """SELECT the external ids of the pair (``query``, ``document``) of each row of ``table``
    (any table with ``query_id`` and ``document_id``), then ``columns``; with the two
    documents' aliases, for the caller's conditions and order."""
    query_doc = aliased(Document)
    candidate = aliased(Document)
    stmt = (
        select(
            query_doc.external_id.label("query"), candidate.external_id.label("document"), *columns
        )
        .select_from(table)
        .join(Query, Query.id == table.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate, candidate.id == table.document_id)
    )
    return stmt, query_doc, candidate


def assessor_pseudonyms(session: Session, campaign_id: int) -> dict[int, str]:
    """A1, A2, ... in the order assessors were invited: the results document's pseudonyms."""
    ids = session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == campaign_id).order_by(Assessor.id)
    ).all()
    return {int(a): f"A{n}" for n, a in enumerate(ids, start=1)}


def judgment_rows(session: Session, campaign_id: int) -> Iterator[Any]:
    """Every judgment of the campaign with its pair's external ids and its lease, by query,
    document, assessor (imported judgments first) and judgment."""
    stmt, query_doc, candidate, lease = _judgments(campaign_id)
    stmt = stmt.add_columns(
        lease.c.number.label("lease_id"),
        lease.c.leased_at,
        lease.c.selection_rank,
        lease.c.selection_weight,
        lease.c.selection_rule,
    ).order_by(
        _sorted(session, query_doc.external_id),
        _sorted(session, candidate.external_id),
        func.coalesce(Judgment.assessor_id, 0),
        Judgment.id,
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def _judgments(campaign_id: int) -> tuple[Any, Any, Any, Any]:
    """The campaign's judgments with their pair's external ids (``query``, ``document``)
    joined to their numbered lease, unordered; with the two documents' aliases and the
    leases, for the caller's columns and order."""
    lease = _numbered_leases(campaign_id)
    stmt, query_doc, candidate = _pair_ids(
        Judgment,
        Judgment.broad,
        Judgment.fine,
        Judgment.assessor_id,
        Judgment.source,
        Judgment.created_at,
        Judgment.updated_at,
        Judgment.revision,
        Judgment.query_listen_ms,
        Judgment.candidate_listen_ms,
        Judgment.id.label("judgment_id"),
        Judgment.kind,
        Judgment.repeat_of,
        Judgment.set_aside,
        Judgment.served_query_bytes,
        Judgment.served_candidate_bytes,
    )
    stmt = stmt.outerjoin(lease, lease.c.id == Judgment.lease_id).where(
        Judgment.campaign_id == campaign_id
    )
    return stmt, query_doc, candidate, lease


def _numbered_leases(campaign_id: int) -> Any:
    """The campaign's leases with their number in it (1 = the first pair handed out): what
    the exports call a lease, the database id being shared by every campaign."""
    return (
        select(
            Lease.id,
            Lease.leased_at,
            Lease.selection_rank,
            Lease.selection_weight,
            Lease.selection_rule,
            func.row_number().over(order_by=Lease.id).label("number"),
        )
        .where(Lease.campaign_id == campaign_id)
        .subquery()
    )


def judgment_ids(session: Session, campaign_id: int) -> list[int]:
    """The campaign's judgment ids in the order they were stored."""
    return [
        int(i)
        for i in session.scalars(
            select(Judgment.id).where(Judgment.campaign_id == campaign_id).order_by(Judgment.id)
        )
    ]


def repeated_lease_numbers(session: Session, campaign_id: int) -> dict[int, int]:
    """Judgment id -> the number of the lease it answered, for the judgments a repeat trial
    repeats (the exports name a judgment by its lease)."""
    lease = _numbered_leases(campaign_id)
    repeated = select(Judgment.repeat_of).where(
        Judgment.campaign_id == campaign_id, Judgment.repeat_of.is_not(None)
    )
    rows = session.execute(
        select(Judgment.id, lease.c.number)
        .join(lease, lease.c.id == Judgment.lease_id)
        .where(Judgment.campaign_id == campaign_id, Judgment.id.in_(repeated))
    ).all()
    return {int(j): int(n) for j, n in rows}


def pair_values(session: Session, campaign_id: int, scale: str) -> Iterator[Any]:
    """(query, document, value) of every judgment with a value on ``scale``, by pair: the
    judgments of one pair come one after the other."""
    column = Judgment.fine if scale == "fine" else Judgment.broad
    stmt, query_doc, candidate = _pair_ids(Judgment, column.label("value"))
    stmt = stmt.where(
        Judgment.campaign_id == campaign_id, column.is_not(None), counted_judgment()
    ).order_by(
        _sorted(session, query_doc.external_id),
        _sorted(session, candidate.external_id),
        Judgment.id,
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
        .where(Judgment.campaign_id == campaign_id, counted_judgment())
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


def judgment_tally(session: Session, campaign_id: int) -> dict[str, int]:
    """How many judgments the campaign has (``rows``), how many count (pool pairs, not set
    aside) with a FINE value (``fine``) and with a BROAD one (``broad``), how many pool
    judgments are set aside (``set_aside``), how many assessors and results it has: what
    an export without rows says about why."""
    counted = counted_judgment()
    row = session.execute(
        select(
            func.count(),
            func.count().filter(counted, Judgment.fine.is_not(None)),
            func.count().filter(counted, Judgment.broad.is_not(None)),
            func.count().filter(Judgment.kind == "pool", Judgment.set_aside.is_(True)),
        ).where(Judgment.campaign_id == campaign_id)
    ).one()
    assessors = session.scalar(
        select(func.count()).select_from(Assessor).where(Assessor.campaign_id == campaign_id)
    )
    results = session.scalar(
        select(func.count()).select_from(Result).where(Result.campaign_id == campaign_id)
    )
    return {
        "rows": int(row[0] or 0),
        "fine": int(row[1] or 0),
        "broad": int(row[2] or 0),
        "set_aside": int(row[3] or 0),
        "assessors": int(assessors or 0),
        "results": int(results or 0),
    }


# ------------------------------------------------------------------ the bundle's state members


def documents(session: Session, campaign_id: int) -> dict[int, tuple[str, str | None, str | None]]:
    """Database id -> (external id, artist, genre) of every clip of the campaign."""
    stmt = select(Document.id, Document.external_id, Document.artist, Document.genre).where(
        Document.campaign_id == campaign_id
    )
    return {int(i): (str(e), a, g) for i, e, a, g in session.execute(stmt)}


def query_documents(session: Session, campaign_id: int) -> dict[int, int]:
    """Query id -> the id of its clip."""
    stmt = select(Query.id, Query.document_id).where(Query.campaign_id == campaign_id)
    return {int(q): int(d) for q, d in session.execute(stmt)}


def state_systems(session: Session, campaign_id: int) -> Iterator[Any]:
    """(system, team) by name."""
    stmt = (
        select(System.name.label("system"), System.team)
        .where(System.campaign_id == campaign_id)
        .order_by(_sorted(session, System.name))
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def state_documents(session: Session, campaign_id: int) -> Iterator[Any]:
    """(document, artist, genre, query: whether it is a query) by external id."""
    stmt = (
        select(
            Document.external_id.label("document"),
            Document.artist,
            Document.genre,
            (Query.id.is_not(None)).label("query"),
        )
        .outerjoin(Query, Query.document_id == Document.id)
        .where(Document.campaign_id == campaign_id)
        .order_by(_sorted(session, Document.external_id))
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def state_assessors(session: Session, campaign_id: int) -> list[Any]:
    """(id, created_at, revoked_at, set_aside_at, paused_at, pause_reason) in the order they
    were invited (their pseudonyms')."""
    return list(
        session.execute(
            select(
                Assessor.id,
                Assessor.created_at,
                Assessor.revoked_at,
                Assessor.set_aside_at,
                Assessor.paused_at,
                Assessor.pause_reason,
            )
            .where(Assessor.campaign_id == campaign_id)
            .order_by(Assessor.id)
        ).all()
    )


def state_leases(session: Session, campaign_id: int) -> Iterator[Any]:
    """Every lease of the campaign in the order they were handed out, with its pair's
    external ids (a quality trial's query and candidate clips)."""
    stmt, _query_doc, _candidate = _pair_ids(
        Lease,
        Lease.id,
        Lease.kind,
        Lease.repeat_of,
        Lease.served_query_bytes,
        Lease.served_candidate_bytes,
        Lease.assessor_id,
        Lease.state,
        Lease.leased_at,
        Lease.expires_at,
        Lease.selection_rank,
        Lease.selection_weight,
        Lease.selection_rule,
    )
    stmt = stmt.where(Lease.campaign_id == campaign_id).order_by(Lease.id)
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def state_audit(session: Session, campaign_id: int) -> Iterator[Any]:
    """The pairs drawn into the audit sample, by external ids, sorted byte-wise."""
    stmt, query_doc, candidate = _pair_ids(Pair)
    stmt = stmt.where(Pair.campaign_id == campaign_id, Pair.audit.is_(True)).order_by(
        _sorted(session, query_doc.external_id), _sorted(session, candidate.external_id)
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def state_judgments(session: Session, campaign_id: int) -> Iterator[Any]:
    """Every judgment in the order it was stored, with its lease's number."""
    stmt, _query_doc, _candidate, lease = _judgments(campaign_id)
    stmt = stmt.add_columns(lease.c.number.label("lease")).order_by(Judgment.id)
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def state_reliability(session: Session, campaign_id: int) -> list[Any]:
    """What the planner last concluded about each assessor, in the order they were invited."""
    return list(
        session.execute(
            select(
                AssessorReliability.assessor_id,
                AssessorReliability.computed_at,
                AssessorReliability.flagged,
                AssessorReliability.reasons,
                AssessorReliability.metrics,
            )
            .where(AssessorReliability.campaign_id == campaign_id)
            .order_by(AssessorReliability.assessor_id)
        ).all()
    )


def state_trajectory(session: Session, campaign_id: int) -> Iterator[Any]:
    """The confidence curve's points in the order they were made."""
    stmt = (
        select(
            TrajectoryPoint.judged_pairs,
            TrajectoryPoint.ranking_confidence,
            TrajectoryPoint.system_pairs_settled,
            TrajectoryPoint.at,
        )
        .where(TrajectoryPoint.campaign_id == campaign_id)
        .order_by(TrajectoryPoint.at, TrajectoryPoint.id)
    )
    yield from session.execute(stmt.execution_options(yield_per=CHUNK))


def recount_pairs(session: Session, campaign_id: int) -> None:
    """Set each pool pair's counters from the judgment and lease rows (after a restore):
    ``judged`` and ``changes`` from its judgments (and their revisions), ``leased`` and
    ``leased_until`` from its live leases."""
    same_pair = (
        (Judgment.campaign_id == Pair.campaign_id)
        & (Judgment.query_id == Pair.query_id)
        & (Judgment.document_id == Pair.document_id)
        & counted_judgment()
    )
    live = (Lease.pair_id == Pair.id) & (Lease.state == "live")
    judged = select(func.count()).where(same_pair).scalar_subquery()
    revisions = select(func.coalesce(func.sum(Judgment.revision), 0)).where(same_pair)
    session.execute(
        update(Pair)
        .where(Pair.campaign_id == campaign_id)
        .values(
            judged=judged,
            changes=judged + revisions.scalar_subquery(),
            leased=select(func.count()).where(live).scalar_subquery(),
            leased_until=select(func.max(Lease.expires_at)).where(live).scalar_subquery(),
        )
        .execution_options(synchronize_session=False)
    )
