"""Queries of the planner: the collection as plain rows, the pool, the plan, the figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, insert, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from mtcjudge.models import (
    AssessorPace,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    PlannerState,
    Query,
    counted_judgment,
)
from mtcjudge.mtc.cost_aware import Pace

__all__ = [
    "Paces",
    "answer_rows",
    "busy_pairs",
    "campaigns_to_plan",
    "claim_planning",
    "clip_seconds",
    "ensure_planner_state",
    "imported_scores",
    "pair_changes",
    "planner_state",
    "refresh_statistics",
    "release_claim",
    "release_planning",
    "replace_plan",
    "save_figures",
    "save_paces",
    "still_planner",
]


def pair_changes(session: Session, campaign_id: int) -> dict[int, tuple[int, int, int]]:
    """pair id -> (query_id, document_id, changes) of every pair judged at least once."""
    rows = session.execute(
        select(Pair.id, Pair.query_id, Pair.document_id, Pair.changes).where(
            Pair.campaign_id == campaign_id, Pair.changes > 0
        )
    ).all()
    return {pid: (q, d, n) for pid, q, d, n in rows}


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


def still_planner(session: Session, campaign_id: int, owner: str) -> bool:
    """True when ``owner`` still plans the campaign; locks the row until the write commits
    so that a takeover cannot interleave with it."""
    stmt = select(PlannerState.owner).where(PlannerState.campaign_id == campaign_id)
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return session.scalar(stmt) == owner


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


_QUERY_CLIP, _CANDIDATE_CLIP = aliased(Document), aliased(Document)


def clip_seconds(
    session: Session, campaign_id: int
) -> dict[tuple[int, int], tuple[float | None, float | None]]:
    """The served durations of each pair's query and candidate clip, by (query_id,
    document_id); None where a clip's duration is unknown."""
    rows = session.execute(
        select(
            Pair.query_id,
            Pair.document_id,
            _QUERY_CLIP.duration_seconds,
            _CANDIDATE_CLIP.duration_seconds,
        )
        .join(Query, Query.id == Pair.query_id)
        .outerjoin(_QUERY_CLIP, _QUERY_CLIP.id == Query.document_id)
        .outerjoin(_CANDIDATE_CLIP, _CANDIDATE_CLIP.id == Pair.document_id)
        .where(Pair.campaign_id == campaign_id)
    ).all()
    return {(int(q), int(d)): (qs, cs) for q, d, qs, cs in rows}


class Paces(NamedTuple):
    """A campaign's fitted listening paces (docs/method.md §12): the pool's, and each
    assessor's with the judgments it rests on."""

    pooled: Pace
    assessors: Mapping[int, tuple[Pace, int]]


def save_paces(session: Session, campaign_id: int, paces: Paces) -> None:
    """Store the campaign's pooled pace and each assessor's (query share when it changes,
    when it does not, candidate share, decision seconds; and their judgments), replacing
    what was stored."""
    pooled = paces.pooled
    session.execute(
        update(PlannerState)
        .where(PlannerState.campaign_id == campaign_id)
        .values(
            pace_query_new=pooled.query_new,
            pace_query_same=pooled.query_same,
            pace_candidate=pooled.candidate,
            pace_decision=pooled.decision,
        )
    )
    session.execute(delete(AssessorPace).where(AssessorPace.campaign_id == campaign_id))
    if paces.assessors:
        session.execute(
            insert(AssessorPace),
            [
                {
                    "assessor_id": assessor,
                    "campaign_id": campaign_id,
                    "query_new": pace.query_new,
                    "query_same": pace.query_same,
                    "candidate": pace.candidate,
                    "decision": pace.decision,
                    "judgments": judgments,
                }
                for assessor, (pace, judgments) in sorted(paces.assessors.items())
            ],
        )
