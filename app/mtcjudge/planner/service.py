"""The planner: keeps each campaign's MTC engine up to date and writes what to hand out next.

Requests never run the engine. One process at a time plans a campaign (a lease on its
``planner_state`` row, renewed while the process lives, taken over when it lapses); every
tick it reads the pairs whose judgments changed since it last looked, feeds them to its
engine, ranks the pairs free to hand out and replaces the campaign's ``plan_entry`` rows,
and stores the figures the pages show (ranking confidence, whether judging can stop) and,
after new judgments, the campaign's results document (:mod:`mtcjudge.results.document`) with a
point of its confidence curve. The projection of the judgments still needed runs on a
thread of its own (:class:`~mtcjudge.planner.projector.Projector`), at most every few
seconds, so that a tick never waits for it. The document's listening section (hours spent,
hours to each target) is computed again at most every few seconds after judgments change
(:mod:`mtcjudge.planner.listening`). Nothing is shared between processes but the
database, so the processes may run on different machines. See docs/judging-at-scale.md.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.campaign_engine.build import (
    CampaignEngine,
    apply_disagreement,
    load_campaign_engine,
    settings_key,
)
from mtcjudge.campaign_engine.document import (
    EngineResults,
    engine_results,
    projection_targets,
    stored_json,
)
from mtcjudge.campaign_engine.listening import ListeningInput, ListeningSection
from mtcjudge.db import session_scope
from mtcjudge.models import Campaign, utcnow
from mtcjudge.mtc.cost_aware import Pace, horizon
from mtcjudge.mtc.projection import Projection
from mtcjudge.mtc.selection import top_candidates
from mtcjudge.planner import repository
from mtcjudge.planner.listening import LISTENING_SECONDS, ListeningWatch
from mtcjudge.planner.projector import Projector
from mtcjudge.planner.reliability import RELIABILITY_SECONDS, refresh_reliability
from mtcjudge.pool import repository as pool_repository
from mtcjudge.pool.service import ensure_pool, refresh_playable

__all__ = [
    "PLAN_SIZE",
    "Planner",
    "plan_campaign",
    "plan_in_session",
]

log = logging.getLogger("mtcjudge.planner")

#: pairs kept in a campaign's plan; assessors who find them all taken fall back to any free pair
PLAN_SIZE = 256
#: re-plan at least this often even when no judgment arrived (leases come and go)
IDLE_REPLAN_SECONDS = 5.0
#: look at a campaign's clips again this often: a pair whose file went missing or unreadable
#: stops being handed out (and judged), one whose files came back is handed out again
AUDIO_CHECK_SECONDS = 10.0
#: how often, at most, the assessor disagreement (pairs judged more than once) and the
#: assessors' offsets are measured again (mtcjudge.mtc.disagreement, .assessor_offsets);
#: newly judged pairs take the last measure of the disagreement at once, all of it
#: independent until the next measure names their assessor
DISAGREEMENT_SECONDS = 5.0
#: a new projection of the judgments still needed at most this often while judgments come
#: in (at once when judging becomes able to stop, or no longer)
PROJECTION_INTERVAL_SECONDS = 10.0
#: ... and at most one fifth of the time on projections, however long one takes
PROJECTION_DUTY_FACTOR = 5.0


@dataclass
class _CampaignPlan:
    """What the planner process keeps in memory for one campaign it plans."""

    state: CampaignEngine
    row_ids: list[int]  # pair row id of each engine pair (-1: not stored)
    row_index: dict[int, int]  # pair row id -> engine pair
    # seconds of each engine pair's query and candidate clip as served (NaN: unknown)
    query_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    candidate_seconds: np.ndarray = field(default_factory=lambda: np.empty(0))
    # the campaign's pooled pace (docs/method.md §11-12): the plan's order per second
    pace: Pace = field(default_factory=Pace.default)
    seen: dict[int, int] = field(default_factory=dict)  # pair row id -> changes applied
    # engine pairs whose audit draw is stored (``pair.audit``)
    audit_saved: set[int] = field(default_factory=set)
    planned_at: float = 0.0
    # the last projection, the one being made, and the state it was asked in
    projection: Projection | None = None
    pending: Future[Projection] | None = None
    projection_asked_at: float = -math.inf
    projection_judged: int = -1
    projection_stop: str | None = None
    # the documents whose clip could not be played at the last look, and when that was
    bad_clips: frozenset[int] | None = None
    audio_checked_at: float = -math.inf
    # the judgment rows (count, last change) the assessors' reliability was last assessed
    # on, and when that was looked at
    reliability_key: tuple[int, datetime | None] | None = None
    reliability_checked_at: float = -math.inf
    # the pairs judged more than once and the counted judgments the disagreement and the
    # assessors' offsets were last measured from, and when
    disagreement_key: tuple[tuple[object, ...], ...] | None = None
    disagreement_checked_at: float = -math.inf
    # the volunteers' listening time: the facts of the document's listening section
    listening: ListeningWatch = field(default_factory=ListeningWatch)

    def projection_landed(self) -> bool:
        """Take in a projection that has finished since the last tick; True if one did."""
        if self.pending is None or not self.pending.done():
            return False
        future, self.pending = self.pending, None
        try:
            self.projection = future.result()
        except Exception:  # a failed projection leaves the document without one
            log.exception("projection of campaign %s failed", self.state.campaign_id)
            return False
        return True

    def projection_due(self, stop_reason: str | None) -> bool:
        if self.pending is not None:
            return False
        if self.projection_asked_at == -math.inf or stop_reason != self.projection_stop:
            return True
        # a projection that took long (minutes on a very large campaign: it always completes
        # two simulated runs) waits several times as long before the next: the projection
        # thread never keeps a core busy for more than a share of the time
        took = self.projection.seconds if self.projection is not None else 0.0
        wait = max(PROJECTION_INTERVAL_SECONDS, PROJECTION_DUTY_FACTOR * took)
        return (
            self.state.engine.n_judged != self.projection_judged
            and time.monotonic() - self.projection_asked_at >= wait
        )


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
        "horizon": _horizon(plan, campaign),
    }


def _horizon(plan: _CampaignPlan, campaign: Campaign) -> int | None:
    """The judgments the campaign still needs to its target (mtc.cost_aware.horizon), from
    the last projection made on this engine's collection (None without one, and once the
    target is reached: a campaign that keeps collecting has no stop to be near)."""
    projection = plan.projection
    if projection is None:
        return None
    try:
        target = projection.for_target(campaign.target)
    except ValueError:  # projected before the target changed: wait for the next
        return None
    if target.reached:  # a campaign that keeps collecting past its target: no horizon
        return None
    return horizon(target.judgments_high, plan.state.engine.n_judged - projection.judged)


def _plan_rows(
    plan: _CampaignPlan, busy: set[int], campaign_id: int, plan_size: int
) -> list[dict[str, object]]:
    """The plan: the ``plan_size`` playable pairs free now that gain the most per second of
    a volunteer who starts afresh (the query heard anew, the pooled pace; docs/method.md
    §12), each with its clips' durations for the judging path's choice."""
    state = plan.state
    candidates = state.playable & (np.asarray(plan.row_ids, dtype=np.intp) >= 0)
    busy_index = [plan.row_index[pid] for pid in busy if pid in plan.row_index]
    candidates[busy_index] = False
    if not candidates.any():
        return []
    ranked, weights = _ranked(plan, candidates, plan_size)
    # the audit's pairs at the best real weight (what the judging path's choice compares)
    weights = state.engine.stored_weights(ranked, weights)
    qs, cs = plan.query_seconds, plan.candidate_seconds
    return [
        {
            "pair_id": plan.row_ids[int(p)],
            "campaign_id": campaign_id,
            "query_id": state.pair_ids[int(p)][0],
            "rank": rank,
            "weight": float(w),
            "query_seconds": _seconds(qs, int(p)),
            "candidate_seconds": _seconds(cs, int(p)),
        }
        for rank, (p, w) in enumerate(zip(ranked, weights, strict=True))
    ]


def _seconds(durations: np.ndarray, pair: int) -> float | None:
    if pair >= durations.shape[0] or not math.isfinite(durations[pair]):
        return None
    return float(durations[pair])


def _ranked(
    plan: _CampaignPlan, candidates: np.ndarray, plan_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """The best candidates per second and their weights. When every candidate costs the
    same (clips of one length, or of unknown lengths) that is the engine's own order."""
    engine = plan.state.engine
    n = candidates.shape[0]
    if engine.config.policy == "random" or plan.query_seconds.shape[0] != n:
        return engine.ranked(plan_size, candidates)
    seconds = plan.pace.pair_seconds(plan.query_seconds, plan.candidate_seconds, changes=True)
    cost = seconds[candidates]
    if float(cost.max() - cost.min()) <= 1e-9 * float(cost.max()):
        return engine.ranked(plan_size, candidates)
    weights = engine.weights()
    cand = np.flatnonzero(candidates)
    top = top_candidates(
        weights / seconds, cand, engine.var, engine.collection.mean_rank, plan_size
    )[:plan_size]
    return top, weights[top]


def _new_plan(session: Session, campaign: Campaign) -> _CampaignPlan:
    state = load_campaign_engine(session, campaign)
    stored = pool_repository.pair_ids(session, campaign.id)
    row_ids = [stored.get(ids, -1) for ids in state.pair_ids]
    plan = _CampaignPlan(state, row_ids, {pid: p for p, pid in enumerate(row_ids) if pid >= 0})
    clips = repository.clip_seconds(session, campaign.id)
    unknown = (None, None)
    pairs = [clips.get((int(q), int(d)), unknown) for q, d in state.pair_ids]
    plan.query_seconds = np.array([np.nan if q is None else q for q, _ in pairs], dtype=float)
    plan.candidate_seconds = np.array([np.nan if c is None else c for _, c in pairs], dtype=float)
    plan.pace = replace(plan.pace, rule=max(0.0, float(campaign.listen_seconds or 0.0)))
    plan.audit_saved = set(state.engine.audit_pairs().tolist())
    return plan


def _unsaved_audit(plan: _CampaignPlan) -> list[int]:
    """Row ids of the pairs the audit drew (while ranking) that are not stored yet: they
    are written with the plan that hands them out, so that an engine built later (another
    process, a restart) holds the same audit sample."""
    return [
        plan.row_ids[p]
        for p in plan.state.engine.audit_pairs().tolist()
        if p not in plan.audit_saved and plan.row_ids[p] >= 0
    ]


def _unjudged(
    plan: _CampaignPlan,
    moved: dict[int, tuple[int, int, int]],
    fresh: dict[tuple[int, int], float],
) -> bool:
    """Whether a pair the engine holds as judged has no counted judgment any more."""
    judged = plan.state.engine.judged
    index = plan.state.pair_index
    return any(
        (q, d) not in fresh and (q, d) in index and bool(judged[index[(q, d)]])
        for q, d, _ in moved.values()
    )


def plan_in_session(session: Session, campaign: Campaign, *, plan_size: int = PLAN_SIZE) -> None:
    """Plan ``campaign`` in the caller's transaction, after its collection changed (systems
    added): the plan, the figures the judging pages read (whether judging can stop) and the
    results document are those of the new collection from the moment it commits, so no
    assessor is told "all done" (or handed a pair) on the old ones meanwhile.

    The campaign's planner process, if any, loses its claim: a plan it computed on the old
    collection is then dropped instead of written (:func:`plan_campaign` checks its claim
    before writing), and its next tick claims the campaign again and rebuilds its engine
    (the campaign's settings key holds the collection's version)."""
    plan = _new_plan(session, campaign)
    now = utcnow()
    busy = repository.busy_pairs(session, campaign.id, campaign.judgments_per_pair, now)
    repository.ensure_planner_state(session, campaign.id)
    repository.release_claim(session, campaign.id)
    repository.replace_plan(session, campaign.id, _plan_rows(plan, busy, campaign.id, plan_size))
    repository.mark_audit(session, _unsaved_audit(plan))
    repository.save_figures(session, campaign.id, _figures(plan, campaign, now))
    part = engine_results(plan.state, campaign)
    listening = plan.listening.read(session, campaign, 0.0)
    if listening is not None:
        plan.listening.take(listening)
    engine_repository.save_results(
        session,
        campaign.id,
        stored_json(part, plan.state.settings_key, plan.listening.section(part.projections)),
        judged_pairs=part.judgments,
        ranking_confidence=part.ranking_confidence,
        system_pairs_settled=part.system_pairs_settled,
        now=now,
    )


def plan_campaign(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    cached: _CampaignPlan | None,
    *,
    owner: str | None = None,
    plan_size: int = PLAN_SIZE,
    force: bool = False,
    projector: Projector | None = None,
    audio_check_seconds: float = AUDIO_CHECK_SECONDS,
    reliability_seconds: float = RELIABILITY_SECONDS,
    disagreement_seconds: float = DISAGREEMENT_SECONDS,
    listening_seconds: float = LISTENING_SECONDS,
) -> _CampaignPlan | None:
    """One planning step for a campaign (:func:`_plan_step`), then, at most every
    ``reliability_seconds`` and only when judgments or quality-trial answers changed, the
    assessors' reliability (:func:`mtcjudge.planner.reliability.refresh_reliability`)."""
    plan = _plan_step(
        session_factory,
        campaign_id,
        cached,
        owner=owner,
        plan_size=plan_size,
        force=force,
        projector=projector,
        audio_check_seconds=audio_check_seconds,
        disagreement_seconds=disagreement_seconds,
        listening_seconds=listening_seconds,
    )
    if plan is not None and time.monotonic() - plan.reliability_checked_at >= reliability_seconds:
        _assess_reliability(session_factory, campaign_id, plan, owner)
    return plan


def _assess_reliability(
    session_factory: sessionmaker[Session], campaign_id: int, plan: _CampaignPlan, owner: str | None
) -> None:
    plan.reliability_checked_at = time.monotonic()
    with session_scope(session_factory) as session:
        key = engine_repository.judgment_rows(session, campaign_id)
    if key == plan.reliability_key:
        return

    def still_mine(session: Session) -> bool:
        return owner is None or repository.still_planner(session, campaign_id, owner)

    try:
        refresh_reliability(session_factory, campaign_id, plan.state, still_mine=still_mine)
    except Exception:  # the plan goes on; the pages keep the last verdicts
        log.exception("assessing the assessors of campaign %s failed", campaign_id)
        return
    plan.reliability_key = key


def _plan_step(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    cached: _CampaignPlan | None,
    *,
    owner: str | None,
    plan_size: int,
    force: bool,
    projector: Projector | None,
    audio_check_seconds: float,
    disagreement_seconds: float = DISAGREEMENT_SECONDS,
    listening_seconds: float = LISTENING_SECONDS,
) -> _CampaignPlan | None:
    """One planning step for a campaign: read, compute, write (two short transactions,
    the computation in between holds no connection). Returns the state to keep.

    The results document is rewritten after new judgments (and on the first plan, and when
    a projection lands); ``projector`` projects the judgments still needed (none without).
    Every ``audio_check_seconds`` (and on the first plan) the campaign's clips are looked at
    again (:func:`mtcjudge.pool.service.refresh_playable`); when pairs became unplayable or
    playable again, the engine is rebuilt on the pairs that can be played. Every
    ``listening_seconds``, when the judgments changed, the listening section is computed
    again (and the document rewritten with it)."""
    cached, bad_clips = _look_at_clips(session_factory, campaign_id, cached, audio_check_seconds)
    now = utcnow()
    with session_scope(session_factory) as session:
        campaign = session.get(Campaign, campaign_id)
        if campaign is None:
            return None
        ensure_pool(session, campaign)
        read = _read_changes(session, campaign, cached, bad_clips, disagreement_seconds)
        listening = read.plan.listening.read(session, campaign, listening_seconds)
        idle = (
            not read.rebuilt
            and not read.fresh
            and read.disagreement is None
            and not read.landed
            and listening is None
            and time.monotonic() - read.plan.planned_at < IDLE_REPLAN_SECONDS
        )
        if idle and not force:
            return read.plan
        busy = repository.busy_pairs(session, campaign.id, campaign.judgments_per_pair, now)
        session.expunge(campaign)
    cached, state = read.plan, read.plan.state
    if read.fresh:
        state.apply(read.fresh)
    if read.disagreement is not None:
        apply_disagreement(state, *read.disagreement)
    written = _Written(
        rows=_plan_rows(cached, busy, campaign_id, plan_size),
        audit_rows=_unsaved_audit(cached),
        figures=_figures(cached, campaign, utcnow()),
        part=(
            engine_results(state, campaign, projection=cached.projection)
            if read.rebuilt
            or read.fresh
            or read.landed
            or read.disagreement is not None
            or listening is not None
            else None
        ),
    )
    written = _with_listening(cached, written, listening)
    if not _write_plan(session_factory, campaign_id, owner, state, written, rebuilt=read.rebuilt):
        return None  # another process took over while we computed
    cached.audit_saved.update(cached.row_index[pid] for pid in written.audit_rows)
    cached.planned_at = time.monotonic()
    if projector is not None:
        _ask_projection(cached, campaign, projector)
    return cached


def _look_at_clips(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    cached: _CampaignPlan | None,
    audio_check_seconds: float,
) -> tuple[_CampaignPlan | None, frozenset[int] | None]:
    """Look at the campaign's clips again when it is time (on the first plan too): the plan
    to keep (None when pairs became unplayable or playable again: the engine is built again)
    and the documents whose clip cannot be played (None when not looked at)."""
    if cached is not None and time.monotonic() - cached.audio_checked_at < audio_check_seconds:
        return cached, None
    change = refresh_playable(session_factory, campaign_id)
    if change.changed:
        if cached is not None and cached.pending is not None:
            cached.pending.cancel()
        log.info(
            "campaign %s: %d pair(s) became unplayable, %d playable again (%d lease(s) ended)",
            campaign_id,
            change.turned_off,
            change.turned_on,
            change.leases_ended,
        )
        return None, change.bad_documents  # the engine's playable pairs changed
    if cached is not None:
        cached.bad_clips = change.bad_documents
        cached.audio_checked_at = time.monotonic()
    return cached, change.bad_documents


@dataclass
class _Read:
    """What a planning step read: the plan (built again when ``rebuilt``), the judged values
    of pairs whose judgments changed since (``fresh``), the rows to measure the disagreement
    from again if it changed, and whether a projection landed."""

    plan: _CampaignPlan
    rebuilt: bool
    fresh: dict[tuple[int, int], float]
    disagreement: tuple[list[Any], list[Any]] | None
    landed: bool


def _read_changes(
    session: Session,
    campaign: Campaign,
    cached: _CampaignPlan | None,
    bad_clips: frozenset[int] | None,
    disagreement_seconds: float,
) -> _Read:
    changes = repository.pair_changes(session, campaign.id)
    rebuilt = cached is None or cached.state.settings_key != settings_key(campaign)
    fresh: dict[tuple[int, int], float] = {}
    if rebuilt:
        cached = _new_plan(session, campaign)
        cached.seen = {pid: n for pid, (_, _, n) in changes.items()}
        if bad_clips is not None:
            cached.bad_clips = bad_clips
            cached.audio_checked_at = time.monotonic()
    else:
        assert cached is not None
        moved = {pid: v for pid, v in changes.items() if cached.seen.get(pid) != v[2]}
        fresh = engine_repository.pair_means(
            session, campaign.id, campaign.scale, [(q, d) for q, d, _ in moved.values()]
        )
        for pid, (_, _, n) in moved.items():
            cached.seen[pid] = n
        if _unjudged(cached, moved, fresh):
            # a pair's every judgment was set aside: the engine cannot forget a
            # judgment, so it is rebuilt from the rows (rare: an organizer's action)
            cached = _new_plan(session, campaign)
            cached.seen = {pid: n for pid, (_, _, n) in changes.items()}
            fresh = {}
            rebuilt = True
    disagreement = _changed_disagreement(session, campaign, cached, rebuilt, disagreement_seconds)
    return _Read(cached, rebuilt, fresh, disagreement, cached.projection_landed())


def _changed_disagreement(
    session: Session,
    campaign: Campaign,
    plan: _CampaignPlan,
    rebuilt: bool,
    disagreement_seconds: float,
) -> tuple[list[Any], list[Any]] | None:
    """The rows to measure the disagreement and the assessors' offsets from again
    (:func:`apply_disagreement`) when it is time and they changed (None otherwise, and for
    an engine just built, which has them already)."""
    if not rebuilt and time.monotonic() - plan.disagreement_checked_at < disagreement_seconds:
        return None
    plan.disagreement_checked_at = time.monotonic()
    rows = engine_repository.disagreement_rows(session, campaign.id, campaign.scale)
    judgments = engine_repository.counted_judgment_rows(session, campaign.id, campaign.scale)
    measured = (*(tuple(r) for r in rows), *(tuple(r) for r in judgments))
    if measured == plan.disagreement_key:
        return None
    plan.disagreement_key = measured
    return None if rebuilt else (rows, judgments)


@dataclass(frozen=True)
class _Written:
    """What a planning step writes: the plan's rows, the audit draws not stored yet, the
    planner's figures and (after changes) the engine's part of the results document and its
    listening section."""

    rows: list[dict[str, object]]
    audit_rows: list[int]
    figures: dict[str, object]
    part: EngineResults | None
    listening: ListeningSection | None = None
    # the paces fitted anew (pooled; per assessor with their judgments), to store
    paces: repository.Paces | None = None


def _paces(plan: _CampaignPlan) -> repository.Paces | None:
    """The fitted model's paces (docs/method.md §12): the pool's, and each assessor's with
    the judgments it rests on."""
    facts = plan.listening.facts
    if facts is None:
        return None
    model = facts.model
    assessors = {
        int(assessor): (Pace.of(speeds, model.defaults), speeds.judgments)
        for assessor, speeds in model.assessors.items()
    }
    return repository.Paces(Pace.of(model.pooled, model.defaults), assessors)


def _with_listening(
    plan: _CampaignPlan, written: _Written, rows: ListeningInput | None
) -> _Written:
    """Fit the listening time to the rows read (if any), holding no connection, and give a
    document to be written its listening section."""
    if rows is not None:
        plan.listening.take(rows)
        paces = _paces(plan)
        if paces is not None:
            plan.pace = paces.pooled  # the plan's order takes the pool's pace at once
        written = replace(written, paces=paces)
    if written.part is None:
        return written
    return replace(written, listening=plan.listening.section(written.part.projections))


def _write_plan(
    session_factory: sessionmaker[Session],
    campaign_id: int,
    owner: str | None,
    state: CampaignEngine,
    written: _Written,
    *,
    rebuilt: bool,
) -> bool:
    """Write the step's plan, audit draws, figures and document; False when another process
    took the campaign over while this one computed (nothing is written)."""
    part = written.part
    document = None if part is None else stored_json(part, state.settings_key, written.listening)
    with session_scope(session_factory) as session:
        if owner is not None and not repository.still_planner(session, campaign_id, owner):
            return False
        repository.replace_plan(session, campaign_id, written.rows)
        repository.mark_audit(session, written.audit_rows)
        repository.save_figures(session, campaign_id, written.figures)
        if written.paces is not None:
            repository.save_paces(session, campaign_id, written.paces)
        if part is not None and document is not None:
            engine_repository.save_results(
                session,
                campaign_id,
                document,
                judged_pairs=part.judgments,
                ranking_confidence=part.ranking_confidence,
                system_pairs_settled=part.system_pairs_settled,
                now=utcnow(),
            )
        if rebuilt:  # the first plan of this process: the tables have just changed a lot
            repository.refresh_statistics(session)
    return True


def _ask_projection(plan: _CampaignPlan, campaign: Campaign, projector: Projector) -> None:
    """Ask for a projection of the judgments still needed, when one is due."""
    state = plan.state
    stop_reason = state.engine.stop_reason()
    if not plan.projection_due(stop_reason):
        return
    plan.projection_asked_at = time.monotonic()
    plan.projection_judged = state.engine.n_judged
    plan.projection_stop = stop_reason
    # the simulated continuations judge only the pairs that can be played
    judgeable = None if state.playable.all() else state.playable.copy()
    plan.pending = projector.submit(
        state.engine, projection_targets(campaign.target), campaign.seed, judgeable
    )


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
    projector : Projector, optional
        Projects the judgments still needed (by default on a thread of its own).
    audio_check_seconds : float
        How often each campaign's clips are looked at again (pairs whose file went missing
        or unreadable stop being handed out; 0: every tick).
    reliability_seconds : float
        How often, at most, the assessors' reliability is assessed again while answers come
        in (:mod:`mtcjudge.planner.reliability`; 0: every tick that finds new answers).
    disagreement_seconds : float
        How often, at most, the assessors' disagreement is measured again from the pairs
        judged more than once (:mod:`mtcjudge.mtc.disagreement`; 0: every tick).
    listening_seconds : float
        How often, at most, the volunteers' listening time is computed again while
        judgments come in (:mod:`mtcjudge.planner.listening`; 0: every tick that finds the
        judgments changed).
    """

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        interval: float = 0.5,
        lease_seconds: float = 10.0,
        owner: str | None = None,
        projector: Projector | None = None,
        audio_check_seconds: float = AUDIO_CHECK_SECONDS,
        reliability_seconds: float = RELIABILITY_SECONDS,
        disagreement_seconds: float = DISAGREEMENT_SECONDS,
        listening_seconds: float = LISTENING_SECONDS,
    ) -> None:
        self.session_factory = session_factory
        self.reliability_seconds = reliability_seconds
        self.disagreement_seconds = disagreement_seconds
        self.listening_seconds = listening_seconds
        self.interval = interval
        self.lease_seconds = lease_seconds
        self.audio_check_seconds = audio_check_seconds
        self.projector = projector or Projector()
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
                projector=self.projector,
                audio_check_seconds=self.audio_check_seconds,
                reliability_seconds=self.reliability_seconds,
                disagreement_seconds=self.disagreement_seconds,
                listening_seconds=self.listening_seconds,
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
        self.projector.close()
        try:
            with session_scope(self.session_factory) as session:
                repository.release_planning(session, self.owner)
        except Exception:  # shutting down with the database gone: the lease lapses
            log.warning("could not release the planner's campaigns", exc_info=True)
