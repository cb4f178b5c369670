"""Queries of the campaign engine: the collection and judgments as plain rows, the assessors'
judgments with their times for the listening-time model, and the stored results document the
planner writes and results read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Float, Row, and_, case, func, insert, or_, select, update
from sqlalchemy.orm import Session, aliased

from mtcjudge.models import (
    Assessor,
    CampaignResults,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    Result,
    System,
    TrajectoryPoint,
    as_utc,
    counted_judgment,
)
from mtcjudge.mtc.listening_time import Observation


def collection_rows(
    session: Session, campaign_id: int
) -> tuple[
    Sequence[Row[int, str, str | None, str | None]],
    Sequence[Row[int, int]],
    Sequence[Row[int, str]],
    Sequence[Row[int, int, int, int]],
]:
    """Documents, queries, systems and results (ordered by system, query, rank) as rows."""
    documents = session.execute(
        select(Document.id, Document.external_id, Document.artist, Document.genre).where(
            Document.campaign_id == campaign_id
        )
    ).all()
    queries = session.execute(
        select(Query.id, Query.document_id).where(Query.campaign_id == campaign_id)
    ).all()
    systems = session.execute(
        select(System.id, System.name).where(System.campaign_id == campaign_id)
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


def query_documents(session: Session, campaign_id: int) -> dict[int, int]:
    rows = session.execute(
        select(Query.id, Query.document_id).where(Query.campaign_id == campaign_id)
    ).all()
    return {int(q): int(d) for q, d in rows}


def _value_column(scale: str) -> Any:
    return Judgment.fine if scale == "fine" else Judgment.broad


def pair_means(
    session: Session,
    campaign_id: int,
    scale: str,
    pairs: Sequence[tuple[int, int]] | None = None,
) -> dict[tuple[int, int], float]:
    """Mean judgment on ``scale`` of each judged (query_id, document_id) (all assessors).

    BROAD is a scale of three grades: when assessors disagree (1 and 2), the pair counts as
    their mean rounded half up (2), the rule imported judgments and exported qrels follow
    (docs/exports.md); FINE keeps the mean."""
    column = _value_column(scale)
    if scale == "broad":
        return {
            pair: float(math.floor(value + 0.5))
            for pair, value in _means(session, campaign_id, column, pairs).items()
        }
    return _means(session, campaign_id, column, pairs)


def _means(
    session: Session,
    campaign_id: int,
    column: Any,
    pairs: Sequence[tuple[int, int]] | None,
) -> dict[tuple[int, int], float]:
    stmt = (
        select(Judgment.query_id, Judgment.document_id, func.avg(column))
        .where(Judgment.campaign_id == campaign_id, column.is_not(None), counted_judgment())
        .group_by(Judgment.query_id, Judgment.document_id)
    )
    if pairs is None:
        return {(q, d): float(v) for q, d, v in session.execute(stmt).all()}
    if not pairs:
        return {}
    wanted = set(pairs)
    stmt = stmt.where(Judgment.query_id.in_({q for q, _ in wanted}))
    return {(q, d): float(v) for q, d, v in session.execute(stmt).all() if (q, d) in wanted}


def counted_judgment_rows(session: Session, campaign_id: int, scale: str) -> list[Any]:
    """Every counted judgment on ``scale``: (query_id, document_id, assessor_id, value), in
    the order of their ids; ``assessor_id`` is None for an imported judgment. Who made
    each judgment behind a pair's value (mtcjudge.mtc.assessor_offsets)."""
    column = _value_column(scale)
    return list(
        session.execute(
            select(
                Judgment.query_id,
                Judgment.document_id,
                Judgment.assessor_id,
                func.cast(column, Float).label("value"),
            )
            .where(Judgment.campaign_id == campaign_id, column.is_not(None), counted_judgment())
            .order_by(Judgment.id)
        ).all()
    )


def disagreement_rows(session: Session, campaign_id: int, scale: str) -> list[Any]:
    """Every pair judged more than once on ``scale`` by the campaign's counted judgments and
    its second opinions (hidden trials of a pool pair another assessor judged; neither set
    aside): (query_id, document_id, counted, n, sum, sum of squares), where ``counted`` is the
    number of counted judgments (what the pair's judged value is the mean of) and the rest is
    over all ``n`` values (mtcjudge.mtc.disagreement)."""
    column = _value_column(scale)
    value = func.cast(column, Float)
    counted = func.sum(case((Judgment.kind == "pool", 1), else_=0))
    return list(
        session.execute(
            select(
                Judgment.query_id,
                Judgment.document_id,
                counted.label("counted"),
                func.count().label("n"),
                func.sum(value).label("total"),
                func.sum(value * value).label("squares"),
            )
            .outerjoin(Assessor, Assessor.id == Judgment.assessor_id)
            .where(
                Judgment.campaign_id == campaign_id,
                column.is_not(None),
                or_(
                    counted_judgment(),
                    # setting an assessor aside marks their pool judgments only
                    and_(
                        Judgment.kind == "second",
                        Judgment.set_aside.is_(False),
                        Assessor.set_aside_at.is_(None),
                    ),
                ),
            )
            .group_by(Judgment.query_id, Judgment.document_id)
            .having(func.count() > 1)
        ).all()
    )


def audit_draws(session: Session, campaign_id: int) -> set[tuple[int, int]]:
    """(query_id, document_id) of the pairs drawn into the audit sample."""
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(
            Pair.campaign_id == campaign_id, Pair.audit.is_(True)
        )
    ).all()
    return {(q, d) for q, d in rows}


def unplayable_pairs(session: Session, campaign_id: int) -> set[tuple[int, int]]:
    """(query_id, document_id) of the stored pool pairs that cannot be played."""
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(
            Pair.campaign_id == campaign_id, Pair.playable.is_(False)
        )
    ).all()
    return {(int(q), int(d)) for q, d in rows}


@dataclass(frozen=True)
class StoredResults:
    """The ``campaign_results`` row: the planner's last document (JSON text) and its version."""

    version: int
    judged_pairs: int
    computed_at: datetime
    document: str


def stored_results(session: Session, campaign_id: int) -> StoredResults | None:
    row = session.execute(
        select(
            CampaignResults.version,
            CampaignResults.judged_pairs,
            CampaignResults.computed_at,
            CampaignResults.document,
        ).where(CampaignResults.campaign_id == campaign_id)
    ).one_or_none()
    if row is None:
        return None
    return StoredResults(int(row[0]), int(row[1]), as_utc(row[2]), str(row[3]))


def results_version(session: Session, campaign_id: int) -> int:
    """The version of the campaign's stored results (0: none yet); one indexed read, what the
    live-update pollers ask twice a second."""
    version = session.scalar(
        select(CampaignResults.version).where(CampaignResults.campaign_id == campaign_id)
    )
    return int(version or 0)


def save_results(
    session: Session,
    campaign_id: int,
    document: str,
    *,
    judged_pairs: int,
    ranking_confidence: float,
    system_pairs_settled: int,
    now: datetime,
) -> int:
    """Store a new results document (version + 1) and, when the number of judged pairs
    changed since the last one, a point of the confidence curve. Returns the new version.

    Only the campaign's planner writes, under its lease (and, on Postgres, the lock of
    :func:`mtcjudge.planner.repository.still_planner`), so a read-then-write is enough here."""
    before = session.execute(
        select(CampaignResults.version, CampaignResults.judged_pairs).where(
            CampaignResults.campaign_id == campaign_id
        )
    ).one_or_none()
    if before is None or int(before[1]) != judged_pairs or _no_points(session, campaign_id):
        session.execute(
            insert(TrajectoryPoint).values(
                campaign_id=campaign_id,
                judged_pairs=judged_pairs,
                ranking_confidence=ranking_confidence,
                system_pairs_settled=system_pairs_settled,
                at=now,
            )
        )
    values = {"judged_pairs": judged_pairs, "computed_at": now, "document": document}
    if before is None:
        session.execute(
            insert(CampaignResults).values(campaign_id=campaign_id, version=1, **values)
        )
        return 1
    version = int(before[0]) + 1
    session.execute(
        update(CampaignResults)
        .where(CampaignResults.campaign_id == campaign_id)
        .values(version=version, **values)
        .execution_options(synchronize_session=False)
    )
    return version


def _no_points(session: Session, campaign_id: int) -> bool:
    return (
        session.scalar(
            select(TrajectoryPoint.id).where(TrajectoryPoint.campaign_id == campaign_id).limit(1)
        )
        is None
    )


def judgment_rows(session: Session, campaign_id: int) -> tuple[int, datetime | None]:
    """How many judgment rows the campaign has (every assessor's, and the imported ones),
    and when one last changed: together they change with every judgment and revision."""
    count, last = session.execute(
        select(func.count(), func.max(Judgment.updated_at)).where(
            Judgment.campaign_id == campaign_id
        )
    ).one()
    return int(count or 0), None if last is None else as_utc(last)


def _seconds(moment: datetime | None) -> float | None:
    return None if moment is None else as_utc(moment).timestamp()


def listening_observations(session: Session, campaign_id: int) -> list[Observation]:
    """Every judgment the campaign's assessors gave (pool pairs and hidden quality trials, set
    aside or not: each took the volunteer's time; not imported judgments), in the order they
    were submitted (judgment id), as the listening-time model's observations: its lease's
    hand-out time (None without a lease), its submit time, its two clips' durations (None
    when unknown), what the page reported it played of each clip and what the server sent.
    One SELECT, whatever the number of judgments."""
    query_doc, candidate_doc = aliased(Document), aliased(Document)
    rows = session.execute(
        select(
            Judgment.assessor_id,
            Judgment.query_id,
            Judgment.created_at,
            Lease.leased_at,
            query_doc.duration_seconds,
            candidate_doc.duration_seconds,
            Judgment.query_listen_ms,
            Judgment.candidate_listen_ms,
            Judgment.served_query_bytes,
            Judgment.served_candidate_bytes,
        )
        .join(Query, Query.id == Judgment.query_id)
        .join(query_doc, query_doc.id == Query.document_id)
        .join(candidate_doc, candidate_doc.id == Judgment.document_id)
        .outerjoin(Lease, Lease.id == Judgment.lease_id)
        .where(
            Judgment.campaign_id == campaign_id,
            Judgment.assessor_id.is_not(None),
            Judgment.source == "assessor",
        )
        .order_by(Judgment.id)
    ).all()
    return [
        Observation(
            assessor=int(a or 0),  # never None: filtered above
            query=int(q),
            submitted_at=_seconds(submitted),
            leased_at=_seconds(leased),
            query_seconds=None if qs is None else float(qs),
            candidate_seconds=None if cs is None else float(cs),
            query_listen_ms=qms,
            candidate_listen_ms=cms,
            served_query_bytes=qb,
            served_candidate_bytes=cb,
        )
        for a, q, submitted, leased, qs, cs, qms, cms, qb, cb in rows
    ]


@dataclass(frozen=True)
class PoolClips:
    """The pool's clips: ``queries`` queries with pairs, ``queries_timed`` of them of known
    duration adding up to ``query_seconds``; ``pairs`` pool pairs, the candidates of
    ``pairs_timed`` of known duration adding up to ``candidate_seconds``."""

    queries: int
    queries_timed: int
    query_seconds: float
    pairs: int
    pairs_timed: int
    candidate_seconds: float


def pool_clips(session: Session, campaign_id: int) -> PoolClips:
    """Counts and durations of the pool's clips, summed in the database (two SELECTs)."""

    def known(column: Any) -> Any:
        return case((column > 0, column))

    seconds = known(Document.duration_seconds)
    pairs, pairs_timed, candidate_seconds = session.execute(
        select(func.count(Pair.id), func.count(seconds), func.sum(seconds))
        .join(Document, Document.id == Pair.document_id)
        .where(Pair.campaign_id == campaign_id)
    ).one()
    pool_queries = select(Pair.query_id).where(Pair.campaign_id == campaign_id).distinct()
    queries, queries_timed, query_seconds = session.execute(
        select(func.count(Query.id), func.count(seconds), func.sum(seconds))
        .join(Document, Document.id == Query.document_id)
        .where(Query.campaign_id == campaign_id, Query.id.in_(pool_queries))
    ).one()
    return PoolClips(
        queries=int(queries or 0),
        queries_timed=int(queries_timed or 0),
        query_seconds=float(query_seconds or 0.0),
        pairs=int(pairs or 0),
        pairs_timed=int(pairs_timed or 0),
        candidate_seconds=float(candidate_seconds or 0.0),
    )
