"""The results document at request time: what the organizer API, the live stream, the
command line and the campaign report send.

:func:`read_snapshot` reads, in one short transaction, the campaign, the engine part and
the listening section the planner stored (:mod:`mtcjudge.results.document`) when they
answer the question, the confidence curve and the assessors; :func:`complete` adds the
engine part when it has to be computed (another measure or scale, or nothing stored yet):
from an engine built from the database rows, cached per process by (campaign, measure,
scale, state of the judgments), without changing what drives the loop. A listening section
not stored (a document stored before it existed, a campaign not planned yet) is computed
from the rows (:func:`listening_from_rows`), cached the same way. :func:`results_for` does
both in one session (the command line).
"""

from __future__ import annotations

import statistics
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.assessors.overview import AssessorOverview, assessor_overview
from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.campaign_engine.build import CampaignRows, engine_from_rows, load_rows
from mtcjudge.campaign_engine.build import settings_key as campaign_settings_key
from mtcjudge.campaign_engine.document import EngineResults, engine_results, parse_stored_parts
from mtcjudge.campaign_engine.listening import (
    ListeningFacts,
    ListeningSection,
    listening_facts,
    listening_section,
    read_listening,
    with_pseudonyms,
)
from mtcjudge.campaigns import service
from mtcjudge.db import session_scope
from mtcjudge.errors import InvalidInput
from mtcjudge.models import Campaign, utcnow
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.scales import SCALES
from mtcjudge.pool.service import unplayable_clips
from mtcjudge.results import repository
from mtcjudge.results.document import AssessorSummary, Results, TrajectoryEntry

__all__ = [
    "ListeningSource",
    "ResultsSnapshot",
    "RowsLoader",
    "check_view",
    "complete",
    "listening_from_rows",
    "read_snapshot",
    "results_for",
    "rows_loader",
]

#: the curve is thinned to at most this many points (the first and the last always kept)
TRAJECTORY_POINTS = 500
#: assessors' medians are over their latest judgments: their pace now, not on day one
RECENT_JUDGMENTS = 100


@dataclass(frozen=True, eq=False)
class ListeningSource:
    """Where a document's listening section comes from: the section the planner stored
    (``stored``), or the facts computed from the rows (``facts``)."""

    stored: ListeningSection | None = None
    facts: ListeningFacts | None = None

    def section(self, part: EngineResults, stored_part: bool) -> ListeningSection:
        """The section of a document whose engine part is ``part`` (``stored_part``: the one
        the planner stored beside the section): a stored section's hours to each target are
        those of the stored projections, kept only with the stored part; from the facts,
        those of ``part``'s projections (none for a part computed on demand)."""
        if self.stored is not None:
            return self.stored if stored_part else replace(self.stored, targets=[])
        if self.facts is None:
            raise ValueError("a listening source holds a stored section or facts")
        return listening_section(self.facts, part.projections)


@dataclass(frozen=True, eq=False)
class ResultsSnapshot:
    """What one short transaction reads for a document: the campaign, the stored engine part
    when it answers the question, the curve and the assessors. :func:`complete` adds the
    engine part when it has to be computed."""

    campaign: Campaign
    measure: str
    scale: str
    driving: bool
    version: int
    computed_at: datetime | None
    stored: EngineResults | None
    judgment_rows: int
    judgments_changed_at: datetime | None
    unplayable_clips: list[str]
    trajectory: list[TrajectoryEntry]
    assessors: list[AssessorSummary]
    listening: ListeningSource

    @property
    def needs_engine(self) -> bool:
        """The engine part is not stored: :func:`complete` builds an engine (or finds one in
        the cache), seconds of work on a large campaign."""
        return self.stored is None


def check_view(measure: str | None, scale: str | None) -> None:
    """400 for a measure or scale that does not exist."""
    if measure is not None and measure not in MEASURES:
        raise InvalidInput(f"measure must be one of {', '.join(MEASURES)}; found {measure!r}")
    if scale is not None and scale not in SCALES:
        raise InvalidInput(f"scale must be one of {', '.join(SCALES)}; found {scale!r}")


def read_snapshot(
    session: Session, slug: str, measure: str | None = None, scale: str | None = None
) -> ResultsSnapshot:
    """Read everything of a campaign's document but an engine part to compute.

    Raises
    ------
    CampaignNotFound
    InvalidInput
        An unknown measure or scale.
    """
    check_view(measure, scale)
    campaign = service.get_campaign(session, slug)
    measure = measure or campaign.measure
    scale = scale or campaign.scale
    driving = measure == campaign.measure and scale == campaign.scale
    row = engine_repository.stored_results(session, campaign.id)
    stored = stored_listening = None
    if row is not None:
        parts = parse_stored_parts(row.document, campaign_settings_key(campaign))
        stored = parts.results if driving else None
        stored_listening = parts.listening
    now = utcnow()
    n_rows, changed_at = engine_repository.judgment_rows(session, campaign.id)
    listening = (
        ListeningSource(stored=stored_listening)
        if stored_listening is not None
        else listening_from_rows(session, campaign, (n_rows, changed_at))
    )
    return ResultsSnapshot(
        campaign=campaign,
        measure=measure,
        scale=scale,
        driving=driving,
        version=row.version if row is not None else 0,
        computed_at=row.computed_at if row is not None and stored is not None else None,
        stored=stored,
        judgment_rows=n_rows,
        judgments_changed_at=changed_at,
        unplayable_clips=unplayable_clips(session, campaign.id),
        trajectory=_trajectory(repository.trajectory(session, campaign.id)) if driving else [],
        assessors=_assessors(
            repository.assessor_activity(session, campaign.id, now, recent=RECENT_JUDGMENTS),
            assessor_overview(session, campaign),
        ),
        listening=listening,
    )


def listening_from_rows(
    session: Session, campaign: Campaign, judgments: tuple[int, datetime | None] | None = None
) -> ListeningSource:
    """The listening facts computed from the campaign's rows, cached per process by the
    campaign, its settings and the state of its judgments (``judgments``: the count and
    last change of its judgment rows, if already read)."""
    n_rows, changed_at = judgments or engine_repository.judgment_rows(session, campaign.id)
    key = (
        campaign.id,
        campaign.slug,
        campaign_settings_key(campaign),
        float(campaign.listen_seconds),
        int(campaign.judgments_per_pair),
        float(campaign.quality_rate),
        n_rows,
        changed_at,
    )
    return ListeningSource(facts=_LISTENING.get(key, lambda: read_listening(session, campaign)))


#: reads the rows an engine is built from: (campaign, scale) -> rows
RowsLoader = Callable[[Campaign, str], CampaignRows]


def complete(snapshot: ResultsSnapshot, load: RowsLoader) -> Results:
    """The document: the stored engine part, or one computed from the rows ``load`` reads
    (cached per process by campaign, measure, scale, settings and state of the judgments)."""
    part = snapshot.stored
    computed_at = snapshot.computed_at
    if part is None:
        part, computed_at = _ON_DEMAND.get(snapshot, load)
    listening = snapshot.listening.section(part, part is snapshot.stored)
    return Results(
        campaign=snapshot.campaign.slug,
        status=snapshot.campaign.status,
        keep_collecting=snapshot.campaign.keep_collecting,
        version=snapshot.version,
        computed_at=computed_at,
        driving=snapshot.driving,
        **vars(part),
        judgment_rows=snapshot.judgment_rows,
        unplayable_clips=snapshot.unplayable_clips,
        trajectory=snapshot.trajectory,
        assessors=snapshot.assessors,
        listening=with_pseudonyms(listening, {a.id: a.pseudonym for a in snapshot.assessors}),
    )


def rows_loader(session_factory: sessionmaker[Session]) -> RowsLoader:
    """Reads the rows in a transaction of their own: the engine is then built, for seconds on
    a large campaign, with no connection held (on SQLite every transaction takes the lock
    the assessors' writes need)."""

    def load(campaign: Campaign, scale: str) -> CampaignRows:
        with session_scope(session_factory) as session:
            return load_rows(session, campaign, scale=scale)

    return load


def results_for(
    session: Session, slug: str, measure: str | None = None, scale: str | None = None
) -> Results:
    """The document, everything read in ``session`` (the command line)."""
    snapshot = read_snapshot(session, slug, measure, scale)
    return complete(snapshot, lambda campaign, sc: load_rows(session, campaign, scale=sc))


def _trajectory(points: Sequence[tuple[int, float, int]]) -> list[TrajectoryEntry]:
    if len(points) > TRAJECTORY_POINTS:
        keep = np.unique(np.linspace(0, len(points) - 1, TRAJECTORY_POINTS).round().astype(int))
        points = [points[i] for i in keep.tolist()]
    return [TrajectoryEntry(n, c, s) for n, c, s in points]


def _assessors(
    activity: Sequence[repository.AssessorActivity], overview: Sequence[AssessorOverview]
) -> list[AssessorSummary]:
    shown = {o.id: o for o in overview}
    return [
        _summary(position, a, shown[a.assessor_id])
        for position, a in enumerate(activity, start=1)
        if a.assessor_id in shown
    ]


def _summary(position: int, a: repository.AssessorActivity, o: AssessorOverview) -> AssessorSummary:
    return AssessorSummary(
        pseudonym=f"A{position}",
        judged=a.judged,
        median_seconds_per_judgment=round(statistics.median(a.recent_seconds), 1)
        if a.recent_seconds
        else None,
        median_listen_ms=float(statistics.median(a.recent_listen_ms))
        if a.recent_listen_ms
        else None,
        last_active=a.last_active,
        live_lease=a.lease_expires_at is not None,
        lease_expires_at=a.lease_expires_at,
        revoked=a.revoked,
        id=a.assessor_id,
        counted_judgments=o.judgments,
        set_aside_judgments=o.set_aside_judgments,
        quality_trials=o.quality_trials,
        trials_by_kind=dict(o.trials_by_kind),
        set_aside=o.set_aside,
        paused=o.paused,
        pause_reason=o.pause_reason,
        reliability=o.reliability,
    )


class _OnDemand:
    """Engine parts computed on demand (other measures and scales, or a campaign whose
    planner has stored nothing yet), once per process and state of the judgments.

    Keyed by the judgment rows' count and last change rather than the results version: a
    new projection makes a new version without changing these parts. A small LRU;
    concurrent requests for the same part wait for the one computing it."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._parts: OrderedDict[tuple[Any, ...], tuple[EngineResults, datetime]] = OrderedDict()
        self._lock = threading.Lock()
        self._computing: dict[tuple[Any, ...], threading.Lock] = {}

    def get(self, snapshot: ResultsSnapshot, load: RowsLoader) -> tuple[EngineResults, datetime]:
        campaign = snapshot.campaign
        key = (
            campaign.id,
            campaign.slug,
            snapshot.measure,
            snapshot.scale,
            campaign_settings_key(campaign),
            snapshot.judgment_rows,
            snapshot.judgments_changed_at,
        )
        with self._lock:
            if key in self._parts:
                self._parts.move_to_end(key)
                return self._parts[key]
            computing = self._computing.setdefault(key, threading.Lock())
        with computing:
            with self._lock:
                if key in self._parts:
                    return self._parts[key]
            try:
                rows = load(campaign, snapshot.scale)
                state = engine_from_rows(rows, campaign, measure=snapshot.measure)
                entry = (engine_results(state, campaign, scale=snapshot.scale), utcnow())
            finally:
                with self._lock:
                    self._computing.pop(key, None)
            with self._lock:
                self._parts[key] = entry
                while len(self._parts) > self.max_entries:
                    self._parts.popitem(last=False)
            return entry

    def clear(self) -> None:
        with self._lock:
            self._parts.clear()


_ON_DEMAND = _OnDemand()


class _ListeningOnDemand:
    """Listening facts computed from the rows, once per process and state of a campaign's
    judgments (a small LRU): what a document the planner stored without a listening section
    (or has not stored yet) reads instead."""

    def __init__(self, max_entries: int = 8) -> None:
        self.max_entries = max_entries
        self._facts: OrderedDict[tuple[Any, ...], ListeningFacts] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...], read: Callable[[], Any]) -> ListeningFacts:
        with self._lock:
            if key in self._facts:
                self._facts.move_to_end(key)
                return self._facts[key]
        facts = listening_facts(read())
        with self._lock:
            self._facts[key] = facts
            while len(self._facts) > self.max_entries:
                self._facts.popitem(last=False)
        return facts

    def clear(self) -> None:
        with self._lock:
            self._facts.clear()


_LISTENING = _ListeningOnDemand()
