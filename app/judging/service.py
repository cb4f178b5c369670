"""The assessor's loop: lease the most useful pair, store the judgment, report progress.

Services only flush; the request's transaction commits. Lease allocation is serialised per
campaign: a process-wide lock (threads of one server, SQLite) plus a row lock on the campaign
(several servers on Postgres).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session

from app.errors import CampaignClosed, Conflict, InvalidInput, LeaseExpired, NotFound, PairNotLeased
from app.judging import repository
from app.judging.engine_cache import CampaignEngine, EngineCache
from app.models import Assessor, Campaign, Judgment, Lease, utcnow

__all__ = [
    "HISTORY_SIZE",
    "NextPair",
    "Progress",
    "assessor_for_token",
    "next_pair",
    "pause",
    "progress",
    "recent",
    "revise_judgment",
    "submit_judgment",
]

HISTORY_SIZE = 10
_allocation_locks: dict[int, threading.Lock] = {}
_allocation_guard = threading.Lock()


def _allocation_lock(campaign_id: int) -> threading.Lock:
    with _allocation_guard:
        return _allocation_locks.setdefault(campaign_id, threading.Lock())


def _aware(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes; they were stored in UTC
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Progress:
    assessor_judged: int
    campaign_judged: int
    campaign_pairs: int
    ranking_confidence: float
    target: float
    can_stop: bool


@dataclass(frozen=True)
class NextPair:
    """What the assessor should do next: judge ``lease``, or stop ("done"), or wait."""

    status: str  # "pair" | "done" | "wait"
    lease: Lease | None
    same_query_as_previous: bool
    progress: Progress
    message: str = ""


def assessor_for_token(session: Session, token: str) -> tuple[Assessor, Campaign]:
    assessor = repository.assessor_by_token(session, token)
    if assessor is None:
        raise NotFound("this invitation link is not valid (unknown token)")
    campaign = session.get(Campaign, assessor.campaign_id)
    if campaign is None:  # pragma: no cover - foreign key
        raise NotFound("the campaign of this invitation no longer exists")
    return assessor, campaign


def _progress(
    session: Session, state: CampaignEngine, campaign: Campaign, assessor: Assessor
) -> Progress:
    engine = state.engine
    return Progress(
        assessor_judged=repository.assessor_judgment_count(session, assessor.id),
        campaign_judged=engine.n_judged,
        campaign_pairs=state.n_pairs,
        ranking_confidence=engine.ranking_confidence,
        target=campaign.target,
        can_stop=engine.stop_reason() is not None,
    )


def progress(session: Session, cache: EngineCache, token: str) -> Progress:
    assessor, campaign = assessor_for_token(session, token)
    state = cache.get(session, campaign)
    with state.lock:
        return _progress(session, state, campaign, assessor)


def _closed_message(campaign: Campaign) -> str | None:
    if campaign.status == "closed":
        return "This campaign is closed. Thank you for your help!"
    if campaign.status != "open":
        return "This campaign has not opened yet. Please come back later."
    return None


def _previous_query(session: Session, assessor: Assessor) -> int | None:
    last = repository.recent_judgments(session, assessor.id, 1)
    return last[0].query_id if last else None


def next_pair(session: Session, cache: EngineCache, token: str) -> NextPair:
    """The assessor's current lease, or a new lease on the most useful available pair."""
    assessor, campaign = assessor_for_token(session, token)
    now = utcnow()
    previous_query = _previous_query(session, assessor)
    state = cache.get(session, campaign)
    closed = _closed_message(campaign)
    if closed is not None:
        with state.lock:
            return NextPair(
                "done", None, False, _progress(session, state, campaign, assessor), closed
            )
    current = repository.active_lease_of(session, assessor.id, now)
    if current is not None:
        with state.lock:
            return NextPair(
                "pair",
                current,
                current.query_id == previous_query,
                _progress(session, state, campaign, assessor),
            )
    with _allocation_lock(campaign.id):
        campaign = repository.lock_campaign(session, campaign.id)
        state = cache.get(session, campaign)
        with state.lock:
            prog = _progress(session, state, campaign, assessor)
            if prog.can_stop and not campaign.keep_collecting:
                return NextPair(
                    "done",
                    None,
                    False,
                    prog,
                    "The organizers have enough judgments to rank the systems. Thank you!",
                )
            pair = _choose_pair(session, state, campaign, assessor, now, previous_query)
            if pair is None:
                counts = repository.pair_judgment_counts(session, campaign.id)
                mine = repository.assessor_pairs(session, assessor.id)
                # nothing left for this assessor: every pair is complete or already theirs
                finished = all(
                    ids in mine or counts.get(ids, 0) >= campaign.judgments_per_pair
                    for p, ids in enumerate(state.pair_ids)
                    if state.playable[p]
                )
                if finished:
                    return NextPair(
                        "done", None, False, prog, "Every pair has been judged. Thank you!"
                    )
                return NextPair(
                    "wait",
                    None,
                    False,
                    prog,
                    "The remaining pairs are with other assessors right now.",
                )
        query_id, document_id = pair
        lease = repository.lease_row(session, campaign.id, query_id, document_id, assessor.id)
        expires = now + timedelta(minutes=campaign.lease_minutes)
        if lease is None:
            lease = Lease(
                campaign_id=campaign.id,
                query_id=query_id,
                document_id=document_id,
                assessor_id=assessor.id,
                leased_at=now,
                expires_at=expires,
            )
            session.add(lease)
        else:
            lease.leased_at = now
            lease.expires_at = expires
        session.flush()
    return NextPair("pair", lease, query_id == previous_query, prog)


def _choose_pair(
    session: Session,
    state: CampaignEngine,
    campaign: Campaign,
    assessor: Assessor,
    now: datetime,
    previous_query: int | None,
) -> tuple[int, int] | None:
    """The engine's best available pair for this assessor (prefers the query they are on)."""
    n = state.n_pairs
    counts = repository.pair_judgment_counts(session, campaign.id)
    taken = np.zeros(n, dtype=np.intp)
    for ids, count in counts.items():
        p = state.pair_index.get(ids)
        if p is not None:
            taken[p] += count
    available = np.ones(n, dtype=bool)
    for lease in repository.active_leases(session, campaign.id, now):
        p = state.pair_index.get((lease.query_id, lease.document_id))
        if p is not None:
            taken[p] += 1
            if lease.assessor_id == assessor.id:
                available[p] = False
    for ids in repository.assessor_pairs(session, assessor.id):
        p = state.pair_index.get(ids)
        if p is not None:
            available[p] = False
    available &= (taken < campaign.judgments_per_pair) & state.playable
    if not available.any():
        return None
    prefer = state.query_index.get(previous_query) if previous_query is not None else None
    picked = state.engine.select(1, candidates=available, prefer_query=prefer)
    return state.pair_ids[int(picked[0])]


def _check_scores(broad: int, fine: float) -> None:
    if broad not in (0, 1, 2):
        raise InvalidInput(
            f"broad must be 0 (not similar), 1 (somewhat) or 2 (very), found {broad}"
        )
    if not 0.0 <= fine <= 100.0:
        raise InvalidInput(f"fine must be between 0 and 100, found {fine}")


def submit_judgment(
    session: Session,
    token: str,
    *,
    lease_id: int,
    broad: int,
    fine: float,
    client_id: str,
    query_listen_ms: int | None = None,
    candidate_listen_ms: int | None = None,
) -> tuple[Judgment, bool]:
    """Store a judgment of a leased pair. Returns (judgment, created).

    The same ``client_id`` again returns the stored judgment (created = False).
    """
    assessor, campaign = assessor_for_token(session, token)
    existing = repository.judgment_by_client_id(session, assessor.id, client_id)
    if existing is not None:
        return existing, False
    closed = _closed_message(campaign)
    if closed is not None:
        raise CampaignClosed(closed)
    _check_scores(broad, fine)
    lease = session.get(Lease, lease_id)
    if lease is None or lease.assessor_id != assessor.id:
        raise PairNotLeased("this pair is not leased to you: load the next pair")
    if repository.judgment_of(session, assessor.id, lease.query_id, lease.document_id):
        raise Conflict("you have already judged this pair: revise it from your recent judgments")
    now = utcnow()
    if _aware(lease.expires_at) <= now:
        others = [
            other
            for other in repository.active_leases(session, campaign.id, now)
            if (other.query_id, other.document_id) == (lease.query_id, lease.document_id)
            and other.assessor_id != assessor.id
        ]
        judged = repository.pair_judgment_counts(session, campaign.id).get(
            (lease.query_id, lease.document_id), 0
        )
        if others or judged >= campaign.judgments_per_pair:
            raise LeaseExpired(
                "your time on this pair ran out and it was given to someone else: here is a new one"
            )
    version = repository.bump_judgment_version(session, campaign.id)
    judgment = Judgment(
        campaign_id=campaign.id,
        query_id=lease.query_id,
        document_id=lease.document_id,
        assessor_id=assessor.id,
        broad=broad,
        fine=float(fine),
        client_id=client_id,
        source="assessor",
        query_listen_ms=query_listen_ms,
        candidate_listen_ms=candidate_listen_ms,
        version=version,
        created_at=now,
        updated_at=now,
    )
    session.add(judgment)
    lease.expires_at = now  # the pair is no longer held
    session.flush()
    return judgment, True


def revise_judgment(
    session: Session, token: str, judgment_id: int, *, broad: int, fine: float
) -> Judgment:
    """Change one of the assessor's last ``HISTORY_SIZE`` judgments."""
    assessor, campaign = assessor_for_token(session, token)
    closed = _closed_message(campaign)
    if closed is not None:
        raise CampaignClosed(closed)
    _check_scores(broad, fine)
    recent_ids = {j.id for j in repository.recent_judgments(session, assessor.id, HISTORY_SIZE)}
    judgment = session.get(Judgment, judgment_id)
    if judgment is None or judgment.assessor_id != assessor.id:
        raise NotFound("no such judgment of yours")
    if judgment.id not in recent_ids:
        raise Conflict(f"only your last {HISTORY_SIZE} judgments can be revised")
    judgment.broad = broad
    judgment.fine = float(fine)
    judgment.revision += 1
    judgment.version = repository.bump_judgment_version(session, campaign.id)
    judgment.updated_at = utcnow()
    session.flush()
    return judgment


def recent(session: Session, token: str) -> list[Judgment]:
    assessor, _ = assessor_for_token(session, token)
    return repository.recent_judgments(session, assessor.id, HISTORY_SIZE)


def pause(session: Session, token: str) -> None:
    """Give the assessor's current pair back to the pool."""
    assessor, _ = assessor_for_token(session, token)
    now = utcnow()
    lease = repository.active_lease_of(session, assessor.id, now)
    if lease is not None:
        lease.expires_at = now
        session.flush()
