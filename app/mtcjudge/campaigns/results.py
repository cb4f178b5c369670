"""A campaign's results: one service for the organizer API, the command line and the pages.

The document says where a campaign stands: judgments, the estimated ranking with each
system's interval, every system pair's difference, confidence and [U12] significance
verdict, the ranking confidence and its curve, the judgments still needed to reach the
target (and other targets), and what each assessor is doing. Nothing here is re-derived
by a route or a command: they call :func:`read_snapshot` and :func:`complete` (or
:func:`results_for`, both in one session) and print or send :func:`results_json`.

Where the numbers come from:

* the engine part (:class:`EngineResults`) of the campaign's own measure and scale is built
  by the campaign's planner from its live engine (:func:`engine_results`, called in
  :mod:`mtcjudge.planner.service`) and stored as JSON in ``campaign_results`` with a version
  that grows with every new document; reading it is one indexed row;
* another measure or scale (``?measure=dcg&scale=broad``) is computed on demand from an
  engine built from the database rows, cached per process by (campaign, measure, scale,
  state of the judgments), without changing what drives the loop;
* the curve (``trajectory_point``) and the assessors (judgment and lease rows) are read
  when the document is asked for: the assessors' leases change without new judgments.

``unplayable_clips`` are the clips (external ids) whose missing or unreadable audio keeps
``pool_pairs - playable_pairs`` pairs from being judged.

Every count of judgments in the document is of judged pool pairs (a pair judged by two
assessors counts once), the unit the engine and the projection count in;
``judgment_rows`` counts the stored judgments (every assessor's and imported ones).
"""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaigns import service
from mtcjudge.db import session_scope
from mtcjudge.errors import InvalidInput
from mtcjudge.models import Campaign, utcnow
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.projection import Projection
from mtcjudge.mtc.significance import Outcome
from mtcjudge.planner import repository
from mtcjudge.planner.build import CampaignEngine, CampaignRows, engine_from_rows, load_rows
from mtcjudge.planner.build import settings_key as campaign_settings_key

__all__ = [
    "PROJECTION_TARGETS",
    "SCALES",
    "AssessorSummary",
    "EngineResults",
    "PairResult",
    "ProjectionInfo",
    "Results",
    "ResultsSnapshot",
    "SystemResult",
    "TargetProjection",
    "TrajectoryEntry",
    "check_view",
    "complete",
    "engine_results",
    "projection_targets",
    "read_snapshot",
    "results_for",
    "results_json",
    "rows_loader",
    "stored_json",
]

#: targets the document always projects, besides the campaign's own
PROJECTION_TARGETS = (0.90, 0.95, 0.99)
SCALES = ("broad", "fine")
#: the [U12] significance rules: power threshold on normalised differences and test level
SIGNIFICANCE_DELTA = 0.067
SIGNIFICANCE_ALPHA = 0.05
#: the curve is thinned to at most this many points (the first and the last always kept)
TRAJECTORY_POINTS = 500
#: assessors' medians are over their latest judgments: their pace now, not on day one
RECENT_JUDGMENTS = 100
#: the stored JSON's layout; a row written by another layout is recomputed, not misread
_FORMAT = 1


# ------------------------------------------------------------------ the document


@dataclass(frozen=True)
class SystemResult:
    """A system's estimated score (mean over queries), its variance and confidence interval,
    and its place in the estimated ranking (1 = best)."""

    name: str
    mean: float
    var: float
    ci_low: float
    ci_high: float
    rank: int


@dataclass(frozen=True)
class PairResult:
    """Systems ``a`` and ``b`` (by name order): the estimated ``mean(a) - mean(b)``, its
    variance, the confidence that the two are ordered as estimated, whether that reaches
    the campaign's target, and the verdict of the [U12] significance rules
    (``a_better``, ``b_better``, ``not_different``, ``undecided``; ``verdict_rule`` 1-4 or
    None; ``verdict_final``: rules 1-3, which no further judgment can change)."""

    a: str
    b: str
    diff_mean: float
    diff_var: float
    confidence: float
    settled: bool
    verdict: str
    verdict_rule: int | None
    verdict_final: bool


@dataclass(frozen=True)
class TargetProjection:
    """Further judged pairs needed to reach ``target`` ranking confidence, counted from
    when the projection was made: median and 10th-90th percentile range over simulated
    runs (None when most runs did not reach it within the pool); ``reached``: met then."""

    target: float
    reached: bool
    median: int | None
    low: int | None
    high: int | None


@dataclass(frozen=True)
class ProjectionInfo:
    """How the projections were made: at ``judgments`` judged pairs, from ``runs``
    simulated continuations of the loop (``method`` says how), taking ``seconds``."""

    judgments: int
    runs: int
    method: str
    seconds: float


@dataclass(frozen=True)
class EngineResults:
    """What the engine says on one measure and scale: the part the planner stores."""

    measure: str
    scale: str
    k: int
    estimator: str
    policy: str
    target: float
    judgments: int
    pool_pairs: int
    playable_pairs: int
    ranking_confidence: float
    can_stop: bool
    stop_reason: str | None
    system_pairs: int
    system_pairs_settled: int
    projected_judgments_to_target: TargetProjection | None
    projections: list[TargetProjection]
    projection: ProjectionInfo | None
    systems: list[SystemResult]
    pairs: list[PairResult]


@dataclass(frozen=True)
class TrajectoryEntry:
    """The ranking confidence and the system pairs settled after ``judgments`` judged pairs."""

    judgments: int
    ranking_confidence: float
    settled: int


@dataclass(frozen=True)
class AssessorSummary:
    """One assessor, by pseudonym (A1, A2, ... in the order they were invited): judged
    pairs, median seconds from being handed a pair to judging it and median listening
    time (query and candidate) over their latest judgments, last activity (a pair handed
    out or a judgment, UTC), and the pair they hold now, if any."""

    pseudonym: str
    judged: int
    median_seconds_per_judgment: float | None
    median_listen_ms: float | None
    last_active: datetime | None
    live_lease: bool
    lease_expires_at: datetime | None
    revoked: bool


@dataclass(frozen=True)
class Results:
    """The results document (see the module docstring)."""

    campaign: str
    status: str
    keep_collecting: bool
    version: int
    computed_at: datetime | None
    driving: bool
    measure: str
    scale: str
    k: int
    estimator: str
    policy: str
    target: float
    judgments: int
    judgment_rows: int
    pool_pairs: int
    playable_pairs: int
    unplayable_clips: list[str]
    ranking_confidence: float
    can_stop: bool
    stop_reason: str | None
    system_pairs: int
    system_pairs_settled: int
    projected_judgments_to_target: TargetProjection | None
    projections: list[TargetProjection]
    projection: ProjectionInfo | None
    systems: list[SystemResult]
    pairs: list[PairResult]
    trajectory: list[TrajectoryEntry]
    assessors: list[AssessorSummary]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (times as ISO 8601 with their UTC offset)."""
        return _plain(self)  # type: ignore[no-any-return]


def results_json(results: Results) -> str:
    """The document as the API sends it and ``campaign status --json`` prints it."""
    return json.dumps(results.to_dict(), allow_nan=False)


#: dataclasses of the document whose fields are all plain JSON values (no time, no nesting)
_FLAT = (SystemResult, PairResult, TargetProjection, ProjectionInfo, TrajectoryEntry)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """A document dataclass as JSON values: dicts, lists, ISO times."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    kind = type(value)
    if is_dataclass(kind):
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in fields(kind))
        if kind in _FLAT:  # thousands of pairs: their fields, as they are, in their order
            return value.__dict__.copy()
        return {name: _plain(getattr(value, name)) for name in names}
    return value


def _engine_from_dict(d: dict[str, Any]) -> EngineResults:
    info = d["projection"]
    to_target = d["projected_judgments_to_target"]
    return EngineResults(
        **{
            **d,
            "projected_judgments_to_target": None
            if to_target is None
            else TargetProjection(**to_target),
            "projections": [TargetProjection(**p) for p in d["projections"]],
            "projection": None if info is None else ProjectionInfo(**info),
            "systems": [SystemResult(**s) for s in d["systems"]],
            "pairs": [PairResult(**p) for p in d["pairs"]],
        }
    )


def stored_json(part: EngineResults, settings_key: str) -> str:
    """What the planner stores in ``campaign_results.document``."""
    return json.dumps(
        {"format": _FORMAT, "settings_key": settings_key, "results": _plain(part)},
        allow_nan=False,
    )


def _parse_stored(document: str, settings_key: str) -> EngineResults | None:
    """The stored engine part, or None when it was made with other campaign settings (the
    planner has not caught up with a change yet) or by another layout."""
    try:
        stored = json.loads(document)
        if stored.get("format") != _FORMAT or stored.get("settings_key") != settings_key:
            return None
        return _engine_from_dict(stored["results"])
    except (ValueError, KeyError, TypeError):
        return None


# ------------------------------------------------------------------ from the engine


def projection_targets(target: float) -> list[float]:
    """The targets projected for a campaign: :data:`PROJECTION_TARGETS` and its own."""
    return sorted({*PROJECTION_TARGETS, float(target)})


def engine_results(
    state: CampaignEngine,
    campaign: Campaign,
    *,
    scale: str | None = None,
    projection: Projection | None = None,
) -> EngineResults:
    """The engine part of the document, read off a campaign's engine (on the measure the
    engine was built with; ``scale`` is the one it was built on, by default the campaign's).

    ``projection`` is the last projection made for this engine, if any (it may be a few
    seconds old: :class:`ProjectionInfo` says at how many judgments it was made)."""
    engine = state.engine
    evaluation = engine.evaluation()
    n = evaluation.n_systems
    names = state.system_names
    order = evaluation.ranking()
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(1, n + 1)
    mean, var = evaluation.mean.tolist(), evaluation.var.tolist()
    low, high = evaluation.ci_low.tolist(), evaluation.ci_high.tolist()
    systems = [
        SystemResult(names[i], mean[i], var[i], low[i], high[i], int(rank[i]))
        for i in order.tolist()
    ]
    a, b = np.triu_indices(n, 1)
    confidence = evaluation.pair_confidence[a, b]
    target = float(campaign.target)
    settled = confidence >= target
    outcomes, rules, final = _verdicts(state, a.shape[0])
    pairs = [
        PairResult(names[i], names[j], dm, dv, c, s, o, r or None, f)
        for i, j, dm, dv, c, s, o, r, f in zip(
            a.tolist(),
            b.tolist(),
            evaluation.diff_mean[a, b].tolist(),
            evaluation.diff_var[a, b].tolist(),
            confidence.tolist(),
            settled.tolist(),
            outcomes,
            rules,
            final,
            strict=True,
        )
    ]
    stop_reason = engine.stop_reason()
    projections = _projections(projection)
    return EngineResults(
        measure=engine.config.measure,
        scale=scale or campaign.scale,
        k=campaign.k,
        estimator=campaign.estimator,
        policy=campaign.policy,
        target=target,
        judgments=int(engine.n_judged),
        pool_pairs=state.n_pairs,
        playable_pairs=int(state.playable.sum()),
        ranking_confidence=float(evaluation.ranking_confidence),
        can_stop=stop_reason is not None,
        stop_reason=stop_reason,
        system_pairs=int(a.shape[0]),
        system_pairs_settled=int(settled.sum()),
        projected_judgments_to_target=next(
            (p for p in projections if math.isclose(p.target, target)), None
        ),
        projections=projections,
        projection=None
        if projection is None
        else ProjectionInfo(
            projection.judged, projection.runs, projection.method, round(projection.seconds, 3)
        ),
        systems=systems,
        pairs=pairs,
    )


def _verdicts(state: CampaignEngine, n_pairs: int) -> tuple[list[str], list[int], list[bool]]:
    """The [U12] rules for every system pair (``numpy.triu_indices`` order); a collection of
    one query cannot be tested: every pair is undecided."""
    if n_pairs == 0 or state.engine.collection.n_queries < 2:
        return [Outcome.UNDECIDED.value] * n_pairs, [0] * n_pairs, [False] * n_pairs
    verdicts = state.engine.significance(delta=SIGNIFICANCE_DELTA, alpha=SIGNIFICANCE_ALPHA)
    # an Outcome is a str: it is its own name in the document
    return list(verdicts.outcome), verdicts.rule.tolist(), verdicts.final.tolist()


def _projections(projection: Projection | None) -> list[TargetProjection]:
    if projection is None:
        return []
    return [
        TargetProjection(t.target, t.reached, t.judgments_median, t.judgments_low, t.judgments_high)
        for t in projection.targets
    ]


# ------------------------------------------------------------------ reading


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
    row = repository.stored_results(session, campaign.id)
    stored = None
    if driving and row is not None:
        stored = _parse_stored(row.document, campaign_settings_key(campaign))
    now = utcnow()
    n_rows, changed_at = repository.judgment_rows(session, campaign.id)
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
        unplayable_clips=repository.unplayable_clips(session, campaign.id),
        trajectory=_trajectory(repository.trajectory(session, campaign.id)) if driving else [],
        assessors=_assessors(repository.assessor_activity(session, campaign.id, now)),
    )


#: reads the rows an engine is built from: (campaign, scale) -> rows
RowsLoader = Callable[[Campaign, str], CampaignRows]


def complete(snapshot: ResultsSnapshot, load: RowsLoader) -> Results:
    """The document: the stored engine part, or one computed from the rows ``load`` reads
    (cached per process by campaign, measure, scale, settings and state of the judgments)."""
    part = snapshot.stored
    computed_at = snapshot.computed_at
    if part is None:
        part, computed_at = _ON_DEMAND.get(snapshot, load)
    return Results(
        campaign=snapshot.campaign.slug,
        status=snapshot.campaign.status,
        keep_collecting=snapshot.campaign.keep_collecting,
        version=snapshot.version,
        computed_at=computed_at,
        driving=snapshot.driving,
        measure=part.measure,
        scale=part.scale,
        k=part.k,
        estimator=part.estimator,
        policy=part.policy,
        target=part.target,
        judgments=part.judgments,
        judgment_rows=snapshot.judgment_rows,
        pool_pairs=part.pool_pairs,
        playable_pairs=part.playable_pairs,
        unplayable_clips=snapshot.unplayable_clips,
        ranking_confidence=part.ranking_confidence,
        can_stop=part.can_stop,
        stop_reason=part.stop_reason,
        system_pairs=part.system_pairs,
        system_pairs_settled=part.system_pairs_settled,
        projected_judgments_to_target=part.projected_judgments_to_target,
        projections=part.projections,
        projection=part.projection,
        systems=part.systems,
        pairs=part.pairs,
        trajectory=snapshot.trajectory,
        assessors=snapshot.assessors,
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


def _assessors(activity: Sequence[repository.AssessorActivity]) -> list[AssessorSummary]:
    return [
        AssessorSummary(
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
        )
        for position, a in enumerate(activity, start=1)
    ]


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
