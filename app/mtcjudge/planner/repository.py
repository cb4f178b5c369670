"""Queries of the planner: the collection as plain rows, the pool, the plan, the figures."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Float, Row, and_, case, delete, func, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    PlannerState,
    Query,
    Result,
    System,
    counted_judgment,
)

__all__ = [
    "answer_rows",
    "audio_paths",
    "busy_pairs",
    "campaigns_to_plan",
    "claim_planning",
    "collection_rows",
    "disagreement_rows",
    "documents_with_audio",
    "ensure_planner_state",
    "imported_scores",
    "insert_pairs",
    "judgment_counts",
    "pair_changes",
    "pair_clips",
    "pair_count",
    "pair_ids",
    "pair_means",
    "planner_state",
    "query_documents",
    "refresh_statistics",
    "release_claim",
    "release_planning",
    "replace_plan",
    "save_figures",
    "set_playable",
    "still_planner",
    "unplayable_clip_paths",
    "unplayable_clips",
    "unplayable_count",
    "unplayable_pairs",
]


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


def audio_paths(session: Session, campaign_id: int) -> dict[int, str]:
    """document id -> its clip's path, for the documents that have one."""
    rows = session.execute(
        select(Document.id, Document.audio_path).where(
            Document.campaign_id == campaign_id, Document.audio_path.is_not(None)
        )
    ).all()
    return {int(d): str(path) for d, path in rows}


def pair_clips(session: Session, campaign_id: int) -> list[tuple[int, int, int, bool]]:
    """(pair id, query clip's document id, candidate's document id, playable) of the pool."""
    rows = session.execute(
        select(Pair.id, Query.document_id, Pair.document_id, Pair.playable)
        .join(Query, Query.id == Pair.query_id)
        .where(Pair.campaign_id == campaign_id)
    ).all()
    return [(int(p), int(q), int(d), bool(ok)) for p, q, d, ok in rows]


#: ids per statement when marking pairs (SQLite allows 32,766 parameters)
_CHUNK = 500


def set_playable(session: Session, turned_off: Sequence[int], turned_on: Sequence[int]) -> int:
    """Mark pairs (row ids) unplayable and playable again. An unplayable pair leaves the plan
    and its live leases end ("released"), so that nobody holds it; returns how many leases
    ended. The pair rows are updated first: their locks order this against the judging
    path, which takes a pair's row before its leases."""
    ended = 0
    for start in range(0, len(turned_off), _CHUNK):
        chunk = list(turned_off[start : start + _CHUNK])
        session.execute(
            update(Pair)
            .where(Pair.id.in_(chunk))
            .values(playable=False)
            .execution_options(synchronize_session=False)
        )
        session.execute(delete(PlanEntry).where(PlanEntry.pair_id.in_(chunk)))
        released = session.scalars(
            update(Lease)
            .where(Lease.pair_id.in_(chunk), Lease.state == "live")
            .values(state="released")
            .returning(Lease.pair_id)
            .execution_options(synchronize_session=False)
        ).all()
        per_pair: dict[int, int] = {}
        for pair_id in released:
            if pair_id is not None:
                per_pair[pair_id] = per_pair.get(pair_id, 0) + 1
        for pair_id, n in per_pair.items():
            session.execute(
                update(Pair)
                .where(Pair.id == pair_id)
                .values(leased=Pair.leased - n)
                .execution_options(synchronize_session=False)
            )
        ended += len(released)
    for start in range(0, len(turned_on), _CHUNK):
        session.execute(
            update(Pair)
            .where(Pair.id.in_(list(turned_on[start : start + _CHUNK])))
            .values(playable=True)
            .execution_options(synchronize_session=False)
        )
    return ended


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


def pair_count(session: Session, campaign_id: int) -> int:
    return int(session.scalar(select(func.count()).where(Pair.campaign_id == campaign_id)) or 0)


def insert_pairs(session: Session, rows: list[dict[str, Any]]) -> bool:
    """Insert the pool of a campaign; False when another process did it first."""
    try:
        with session.begin_nested():
            session.execute(insert(Pair), rows)
    except IntegrityError:
        return False
    return True


def pair_changes(session: Session, campaign_id: int) -> dict[int, tuple[int, int, int]]:
    """pair id -> (query_id, document_id, changes) of every pair judged at least once."""
    rows = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id, Pair.changes).where(
            Pair.campaign_id == campaign_id, Pair.changes > 0
        )
    ).all()
    return {pid: (q, d, n) for pid, q, d, n in rows}


def pair_ids(session: Session, campaign_id: int) -> dict[tuple[int, int], int]:
    """Pair ids by (query_id, document_id): the pool never changes once stored."""
    rows = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign_id)
    ).all()
    return {(q, d): pid for pid, q, d in rows}


def audit_draws(session: Session, campaign_id: int) -> set[tuple[int, int]]:
    """(query_id, document_id) of the pairs drawn into the audit sample."""
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(
            Pair.campaign_id == campaign_id, Pair.audit.is_(True)
        )
    ).all()
    return {(q, d) for q, d in rows}


def mark_audit(session: Session, pair_ids: Sequence[int]) -> None:
    """Store that the pairs ``pair_ids`` (row ids) were drawn into the audit sample."""
    if pair_ids:
        session.execute(update(Pair).where(Pair.id.in_(pair_ids)).values(audit=True))


def busy_pairs(session: Session, campaign_id: int, per_pair: int, now: datetime) -> set[int]:
    """Pairs that cannot be handed out now: judged enough times, or held by live leases up
    to the limit. Only those rows are read, not the pool."""
    rows = session.scalars(
        select(Pair.id).where(
            Pair.campaign_id == campaign_id,
            or_(
                Pair.judged >= per_pair,
                and_(Pair.judged + Pair.leased >= per_pair, Pair.leased_until > now),
            ),
        )
    ).all()
    return set(rows)


def replace_plan(session: Session, campaign_id: int, rows: list[dict[str, Any]]) -> None:
    session.execute(delete(PlanEntry).where(PlanEntry.campaign_id == campaign_id))
    if rows:
        session.execute(insert(PlanEntry), rows)


def planner_state(session: Session, campaign_id: int) -> PlannerState | None:
    return session.get(PlannerState, campaign_id)


def campaigns_to_plan(session: Session) -> list[int]:
    """Open campaigns (and drafts, so their figures are ready when they open)."""
    return list(
        session.scalars(
            select(Campaign.id).where(Campaign.status.in_(("open", "draft"))).order_by(Campaign.id)
        )
    )


def claim_planning(
    session: Session, campaign_id: int, owner: str, now: datetime, until: datetime
) -> bool:
    """Become (or stay) the planner of a campaign: one atomic UPDATE decides between
    processes; the row is created the first time."""
    ensure_planner_state(session, campaign_id)
    taken = session.execute(
        update(PlannerState)
        .where(
            PlannerState.campaign_id == campaign_id,
            or_(
                PlannerState.owner == owner,
                PlannerState.owner.is_(None),
                PlannerState.lease_until.is_(None),
                PlannerState.lease_until < now,
            ),
        )
        .values(owner=owner, lease_until=until)
        .execution_options(synchronize_session=False)
    )
    return bool(taken.rowcount)  # type: ignore[attr-defined]


def ensure_planner_state(session: Session, campaign_id: int) -> None:
    """The campaign's ``planner_state`` row, created when no planner has run yet."""
    if session.get(PlannerState, campaign_id) is None:
        try:
            with session.begin_nested():
                session.add(PlannerState(campaign_id=campaign_id))
        except IntegrityError:
            pass


def release_claim(session: Session, campaign_id: int) -> None:
    """Whoever plans the campaign loses the claim (its next write is dropped; its next tick
    claims the campaign again)."""
    session.execute(
        update(PlannerState)
        .where(PlannerState.campaign_id == campaign_id)
        .values(owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )


def release_planning(session: Session, owner: str) -> None:
    session.execute(
        update(PlannerState)
        .where(PlannerState.owner == owner)
        .values(owner=None, lease_until=None)
        .execution_options(synchronize_session=False)
    )


def save_figures(session: Session, campaign_id: int, values: dict[str, Any]) -> None:
    session.execute(
        update(PlannerState)
        .where(PlannerState.campaign_id == campaign_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def refresh_statistics(session: Session) -> None:
    """Postgres: update the planner statistics of the judging tables. A campaign is imported
    and then judged at once; until autovacuum runs, stale row counts make the claim query
    join the whole pool (100 ms instead of 0.3 ms)."""
    if session.get_bind().dialect.name == "postgresql":
        for table in ("pair", "plan_entry", "lease", "judgment"):
            session.execute(text(f"ANALYZE {table}"))


def judgment_counts(session: Session, campaign_id: int) -> dict[tuple[int, int], int]:
    rows = session.execute(
        select(Judgment.query_id, Judgment.document_id, func.count())
        .where(Judgment.campaign_id == campaign_id, counted_judgment())
        .group_by(Judgment.query_id, Judgment.document_id)
    ).all()
    return {(q, d): int(n) for q, d, n in rows}


def still_planner(session: Session, campaign_id: int, owner: str) -> bool:
    """True when ``owner`` still plans the campaign; locks the row until the write commits
    so that a takeover cannot interleave with it."""
    stmt = select(PlannerState.owner).where(PlannerState.campaign_id == campaign_id)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return session.scalar(stmt) == owner


def unplayable_clips(session: Session, campaign_id: int) -> list[str]:
    """External ids of the clips (queries or candidates) that keep pairs from being played."""
    in_pairs = (
        select(Pair.document_id.label("doc"))
        .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        .union(
            select(Query.document_id)
            .join(Pair, Pair.query_id == Query.id)
            .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        )
        .subquery()
    )
    return list(
        session.scalars(
            select(Document.external_id)
            .where(Document.id.in_(select(in_pairs.c.doc)), Document.audio_path.is_(None))
            .order_by(Document.external_id)
        )
    )


def unplayable_pairs(session: Session, campaign_id: int) -> set[tuple[int, int]]:
    """(query_id, document_id) of the stored pool pairs that cannot be played."""
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(
            Pair.campaign_id == campaign_id, Pair.playable.is_(False)
        )
    ).all()
    return {(int(q), int(d)) for q, d in rows}


def unplayable_clip_paths(session: Session, campaign_id: int) -> list[tuple[str, str]]:
    """(external id, path) of the clips with a stored path in pairs that cannot be played:
    those whose file may have gone since the import (or the other clip of their pair)."""
    in_pairs = (
        select(Pair.document_id.label("doc"))
        .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        .union(
            select(Query.document_id)
            .join(Pair, Pair.query_id == Query.id)
            .where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        )
        .subquery()
    )
    rows = session.execute(
        select(Document.external_id, Document.audio_path).where(
            Document.id.in_(select(in_pairs.c.doc)), Document.audio_path.is_not(None)
        )
    ).all()
    return [(str(ext), str(path)) for ext, path in rows]


def unplayable_count(session: Session, campaign_id: int) -> int:
    return int(
        session.scalar(
            select(func.count()).where(Pair.campaign_id == campaign_id, Pair.playable.is_(False))
        )
        or 0
    )


def answer_rows(session: Session, campaign_id: int) -> list[Any]:
    """Every judgment of the campaign's assessors (pool pairs and quality trials, set aside
    or not), each with its lease's hand-out time and its two clips' durations, by assessor
    and in the order given: what the reliability of each assessor is assessed from."""
    query_doc, candidate_doc = aliased(Document), aliased(Document)
    return list(
        session.execute(
            select(
                Judgment.id,
                Judgment.assessor_id,
                Judgment.kind,
                Judgment.fine,
                Judgment.broad,
                Judgment.query_id,
                Judgment.document_id,
                Judgment.repeat_of,
                Judgment.query_listen_ms,
                Judgment.candidate_listen_ms,
                Judgment.set_aside,
                Judgment.created_at,
                Lease.leased_at,
                query_doc.duration_seconds.label("query_seconds"),
                candidate_doc.duration_seconds.label("candidate_seconds"),
            )
            .join(Query, Query.id == Judgment.query_id)
            .join(query_doc, query_doc.id == Query.document_id)
            .join(candidate_doc, candidate_doc.id == Judgment.document_id)
            .outerjoin(Lease, Lease.id == Judgment.lease_id)
            .where(Judgment.campaign_id == campaign_id, Judgment.assessor_id.is_not(None))
            .order_by(Judgment.assessor_id, Judgment.created_at, Judgment.id)
        ).all()
    )


def imported_scores(session: Session, campaign_id: int) -> list[Any]:
    """(query id, document id, FINE) of the campaign's imported pool judgments: the other
    judges an assessor's scores are compared with, beside the other assessors."""
    return list(
        session.execute(
            select(Judgment.query_id, Judgment.document_id, Judgment.fine).where(
                Judgment.campaign_id == campaign_id,
                Judgment.assessor_id.is_(None),
                Judgment.fine.is_not(None),
                counted_judgment(),
            )
        ).all()
    )
