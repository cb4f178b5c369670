"""The planner: keeps each campaign's MTC engine up to date and writes what to hand out next.

Requests never run the engine. One process at a time plans a campaign (a lease on its
``planner_state`` row, renewed while the process lives, taken over when it lapses); every
tick it reads the pairs whose judgments changed since it last looked, feeds them to its
engine, ranks the pairs free to hand out and replaces the campaign's ``plan_entry`` rows,
and stores the figures the pages show (ranking confidence, whether judging can stop).
Nothing is shared between processes but the database, so the processes may run on
different machines. See docs/reliability.md.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from app.db import session_scope
from app.models import Campaign, utcnow
from app.planner import repository
from app.planner.build import CampaignEngine, build_engine, playable_mask, pool_pairs, settings_key

__all__ = [
    "PLAN_SIZE",
    "Planner",
    "ensure_pool",
    "plan_campaign",
    "unplayable_pairs",
    "unplayable_summary",
]

log = logging.getLogger("mtcjudge.planner")

#: pairs kept in a campaign's plan; assessors who find them all taken fall back to any free pair
PLAN_SIZE = 256
#: re-plan at least this often even when no judgment arrived (leases come and go)
IDLE_REPLAN_SECONDS = 5.0


def ensure_pool(session: Session, campaign: Campaign) -> int:
    """Store the campaign's pool of pairs once (the pool is fixed by the runs and ``k``).

    Safe to run from several processes at once: the unique key keeps one copy.
    Returns the number of pairs.
    """
    existing = repository.pair_count(session, campaign.id)
    if existing:
        return existing
    pairs = pool_pairs(session, campaign)
    playable = playable_mask(session, campaign.id, pairs)
    counts = repository.judgment_counts(session, campaign.id)
    rows = [
        {
            "campaign_id": campaign.id,
            "query_id": q,
            "document_id": d,
            "playable": bool(playable[i]),
            "judged": counts.get((q, d), 0),
            "leased": 0,
            "changes": counts.get((q, d), 0),
        }
        for i, (q, d) in enumerate(pairs)
    ]
    if rows:
        repository.insert_pairs(session, rows)
    return repository.pair_count(session, campaign.id)


def unplayable_pairs(session: Session, campaign_id: int) -> int:
    """Pool pairs that are never handed out because a clip has no readable audio."""
    return repository.unplayable_count(session, campaign_id)


def unplayable_summary(session: Session, campaign: Campaign) -> str | None:
    """One line for organizers about pairs that cannot be judged, or None when all can."""
    ensure_pool(session, campaign)
    n_pairs = repository.unplayable_count(session, campaign.id)
    if not n_pairs:
        return None
    clips = repository.unplayable_clips(session, campaign.id)
    shown = ", ".join(clips[:8]) + (f", ... ({len(clips)} clips)" if len(clips) > 8 else "")
    return (
        f"{n_pairs} pair(s) cannot be judged: no readable audio for {shown}; "
        "assessors are not given them"
    )


@dataclass
class _CampaignPlan:
    """What the planner process keeps in memory for one campaign it plans."""

    state: CampaignEngine
    row_ids: list[int]  # pair row id of each engine pair (-1: not stored)
    row_index: dict[int, int]  # pair row id -> engine pair
    seen: dict[int, int] = field(default_factory=dict)  # pair row id -> changes applied
    planned_at: float = 0.0


def _figures(plan: _CampaignPlan, campaign: Campaign, now: datetime) -> dict[str, object]:
    engine = plan.state.engine
    ev = engine.evaluation()
    n = ev.n_systems
    upper = np.triu_indices(n, 1)
    settled = int(np.sum(ev.pair_confidence[upper] >= campaign.target))
    return {
        "planned_at": now,
        "judged_pairs": int(engine.n_judged),
        "pool_pairs": plan.state.n_pairs,
        "playable_pairs": int(plan.state.playable.sum()),
        "ranking_confidence": float(ev.ranking_confidence),
        "stop_reason": engine.stop_reason(),
        "system_pairs": int(n * (n - 1) // 2),
        "system_pairs_settled": settled,
        "settings_key": settings_key(campaign),
        "error": None,
    }


def plan_campaign(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    cached: _CampaignPlan | None,
    *,
    owner: str | None = None,
    plan_size: int = PLAN_SIZE,
    force: bool = False,
) -> _CampaignPlan | None:
    """One planning step for a campaign: read, compute, write (two short transactions,
    the computation in between holds no connection). Returns the state to keep."""
    now = utcnow()
    with session_scope(session_factory) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            return None
        ensure_pool(session, campaign)
        changes = repository.pair_changes(session, campaign.id)
        key = settings_key(campaign)
        rebuilt = cached is None or cached.state.settings_key != key
        if rebuilt:
            state = build_engine(session, campaign)
            stored = repository.pair_ids(session, campaign.id)
            row_ids = [stored.get(ids, -1) for ids in state.pair_ids]
            cached = _CampaignPlan(
                state, row_ids, {pid: p for p, pid in enumerate(row_ids) if pid >= 0}
            )
            cached.seen = {pid: n for pid, (_, _, n) in changes.items()}
            fresh: dict[tuple[int, int], float] = {}
        else:
            assert cached is not None
            moved = {pid: v for pid, v in changes.items() if cached.seen.get(pid) != v[2]}
            fresh = repository.pair_means(
                session, campaign.id, campaign.scale, [(q, d) for q, d, _ in moved.values()]
            )
            for pid, (_, _, n) in moved.items():
                cached.seen[pid] = n
        idle = (
            not rebuilt and not fresh and time.monotonic() - cached.planned_at < IDLE_REPLAN_SECONDS
        )
        if idle and not force:
            return cached
        busy = repository.busy_pairs(session, campaign.id, campaign.judgments_per_pair, now)
        session.expunge(campaign)
    state = cached.state
    if fresh:
        state.apply(fresh)
    candidates = state.playable & (np.asarray(cached.row_ids) >= 0)
    busy_index = [cached.row_index[pid] for pid in busy if pid in cached.row_index]
    candidates[busy_index] = False
    rows: list[dict[str, object]] = []
    if candidates.any():
        ranked, weights = state.engine.ranked(plan_size, candidates)
        rows = [
            {
                "pair_id": cached.row_ids[int(p)],
                "campaign_id": campaign_id,
                "query_id": state.pair_ids[int(p)][0],
                "rank": rank,
                "weight": float(w),
            }
            for rank, (p, w) in enumerate(zip(ranked, weights, strict=True))
        ]
    figures = _figures(cached, campaign, utcnow())
    with session_scope(session_factory) as session:
        if owner is not None and not repository.still_planner(session, campaign_id, owner):
            return None  # another process took over while we computed
        repository.replace_plan(session, campaign_id, rows)
        repository.save_figures(session, campaign_id, figures)
        if rebuilt:  # the first plan of this process: the tables have just changed a lot
            repository.refresh_statistics(session)
    cached.planned_at = time.monotonic()
    return cached


class Planner:
    """Plans every open campaign this process is the planner of, on a background thread.

    Parameters
    ----------
    session_factory : sessionmaker
    interval : float
        Seconds between ticks.
    lease_seconds : float
        How long a planner's claim on a campaign lasts without renewal: the time another
        process waits before taking over from one that died.
    """

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        interval: float = 0.5,
        lease_seconds: float = 10.0,
        owner: str | None = None,
    ) -> None:
        self.session_factory = session_factory
        self.interval = interval
        self.lease_seconds = lease_seconds
        self.owner = owner or f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._plans: dict[int, _CampaignPlan] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self, *, force: bool = False) -> list[int]:
        """One tick: claim what can be claimed, plan it. Returns the campaigns planned."""
        planned: list[int] = []
        now = utcnow()
        until = now + timedelta(seconds=self.lease_seconds)
        with session_scope(self.session_factory) as session:
            campaign_ids = repository.campaigns_to_plan(session)
        for campaign_id in campaign_ids:
            with session_scope(self.session_factory) as session:
                mine = repository.claim_planning(session, campaign_id, self.owner, now, until)
            if not mine:
                self._plans.pop(campaign_id, None)
                continue
            result = plan_campaign(
                self.session_factory,
                campaign_id,
                self._plans.get(campaign_id),
                owner=self.owner,
                force=force,
            )
            if result is None:
                self._plans.pop(campaign_id, None)
            else:
                self._plans[campaign_id] = result
                planned.append(campaign_id)
        for gone in set(self._plans) - set(campaign_ids):
            del self._plans[gone]
        return planned

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.run_once()
            except Exception:  # the planner must outlive a bad tick (database down, ...)
                log.exception("planner tick failed; retrying")
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="mtc-planner", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop the thread and hand the campaigns over at once (no lease to wait out)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        try:
            with session_scope(self.session_factory) as session:
                repository.release_planning(session, self.owner)
        except Exception:  # shutting down with the database gone: the lease lapses
            log.warning("could not release the planner's campaigns", exc_info=True)
