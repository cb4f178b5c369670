"""Queries of the results: the document the planner stores, its confidence curve, and what
the dashboard reads of the judgments and the assessors' leases."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session

from mtcjudge.models import Assessor, Judgment, Lease, TrajectoryPoint, as_utc

__all__ = [
    "AssessorActivity",
    "assessor_activity",
    "trajectory",
]


def trajectory(session: Session, campaign_id: int) -> list[tuple[int, float, int]]:
    """(judged pairs, ranking confidence, system pairs settled) of every point of the curve,
    in the order the judgments came."""
    rows = session.execute(
        select(
            TrajectoryPoint.judged_pairs,
            TrajectoryPoint.ranking_confidence,
            TrajectoryPoint.system_pairs_settled,
        )
        .where(TrajectoryPoint.campaign_id == campaign_id)
        .order_by(TrajectoryPoint.at, TrajectoryPoint.id)
    ).all()
    return [(int(n), float(c), int(s)) for n, c, s in rows]


@dataclass(frozen=True)
class AssessorActivity:
    """What the organizer's summary says about one assessor (times in UTC).

    ``recent_seconds`` are the times from lease to judgment of the assessor's latest
    judgments, ``recent_listen_ms`` the listening time of each (query and candidate).
    """

    assessor_id: int
    revoked: bool
    judged: int
    last_active: datetime | None
    lease_expires_at: datetime | None
    recent_seconds: list[float]
    recent_listen_ms: list[int]


def assessor_activity(
    session: Session, campaign_id: int, now: datetime, *, recent: int = 100
) -> list[AssessorActivity]:
    """Every assessor of the campaign (in the order they were invited) with their judgment
    count, last activity, live lease, and the timings of their ``recent`` latest judgments.

    Four grouped reads of the campaign's assessor, judgment and lease rows, whatever the
    number of assessors."""
    assessors = session.execute(
        select(Assessor.id, Assessor.revoked_at)
        .where(Assessor.campaign_id == campaign_id)
        .order_by(Assessor.id)
    ).all()
    if not assessors:
        return []
    judged = _judged_counts(session, campaign_id)
    leases = _lease_times(session, campaign_id, now)
    seconds, listened = _recent_timings(session, campaign_id, recent)
    activity = []
    for assessor_id, revoked_at in assessors:
        count, last_judged = judged.get(assessor_id, (0, None))
        last_leased, lease_until = leases.get(assessor_id, (None, None))
        moments = [m for m in (last_judged, last_leased) if m is not None]
        activity.append(
            AssessorActivity(
                assessor_id=int(assessor_id),
                revoked=revoked_at is not None,
                judged=count,
                last_active=max(moments) if moments else None,
                lease_expires_at=lease_until,
                recent_seconds=seconds.get(assessor_id, []),
                recent_listen_ms=listened.get(assessor_id, []),
            )
        )
    return activity


def _judged_counts(session: Session, campaign_id: int) -> dict[int, tuple[int, datetime]]:
    """Assessor id -> their judgments and the last time one changed."""
    return {
        int(a or 0): (int(n), as_utc(last))
        for a, n, last in session.execute(
            select(Judgment.assessor_id, func.count(), func.max(Judgment.updated_at))
            .where(Judgment.campaign_id == campaign_id, Judgment.assessor_id.is_not(None))
            .group_by(Judgment.assessor_id)
        ).all()
    }


def _lease_times(
    session: Session, campaign_id: int, now: datetime
) -> dict[int, tuple[datetime, datetime | None]]:
    """Assessor id -> when they were last handed a pair, and until when they hold one now."""
    live_until = func.max(
        case((and_(Lease.state == "live", Lease.expires_at > now), Lease.expires_at))
    )
    return {
        int(a): (as_utc(leased), None if until is None else as_utc(until))
        for a, leased, until in session.execute(
            select(Lease.assessor_id, func.max(Lease.leased_at), live_until)
            .where(Lease.campaign_id == campaign_id)
            .group_by(Lease.assessor_id)
        ).all()
    }


def _recent_timings(
    session: Session, campaign_id: int, recent: int
) -> tuple[dict[int, list[float]], dict[int, list[int]]]:
    """Assessor id -> the seconds from lease to judgment of their ``recent`` latest judgments,
    and the listening time of each (query and candidate)."""
    latest = (
        select(
            Judgment.assessor_id.label("assessor_id"),
            Judgment.created_at.label("judged_at"),
            Lease.leased_at.label("leased_at"),
            Judgment.query_listen_ms.label("query_ms"),
            Judgment.candidate_listen_ms.label("candidate_ms"),
            func.row_number()
            .over(partition_by=Judgment.assessor_id, order_by=Judgment.id.desc())
            .label("nth"),
        )
        .outerjoin(Lease, Lease.id == Judgment.lease_id)
        .where(Judgment.campaign_id == campaign_id, Judgment.assessor_id.is_not(None))
        .subquery()
    )
    seconds: dict[int, list[float]] = {}
    listened: dict[int, list[int]] = {}
    for a, judged_at, leased_at, query_ms, candidate_ms in session.execute(
        select(
            latest.c.assessor_id,
            latest.c.judged_at,
            latest.c.leased_at,
            latest.c.query_ms,
            latest.c.candidate_ms,
        ).where(latest.c.nth <= recent)
    ).all():
        if leased_at is not None:
            took = (as_utc(judged_at) - as_utc(leased_at)).total_seconds()
            if took >= 0:
                seconds.setdefault(int(a), []).append(took)
        if query_ms is not None or candidate_ms is not None:
            listened.setdefault(int(a), []).append(int(query_ms or 0) + int(candidate_ms or 0))
    return seconds, listened
