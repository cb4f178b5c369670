"""The engine's part of a campaign's results document: what the planner computes from its live
engine (:func:`engine_results`) and stores as JSON (:func:`stored_json`, read back with
:func:`parse_stored` or, with the listening section stored beside it
(:mod:`mtcjudge.campaign_engine.listening`), :func:`parse_stored_parts`);
:mod:`mtcjudge.results.document` adds the curve and the assessors.

Every count of judgments here is of judged pool pairs (a pair judged by two assessors counts
once), the unit the engine and the projection count in.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from typing import Any, ClassVar

import numpy as np

from mtcjudge.campaign_engine.build import CampaignEngine
from mtcjudge.campaign_engine.listening import ListeningSection, section_from_dict
from mtcjudge.models import Campaign
from mtcjudge.mtc.measures import Evaluation
from mtcjudge.mtc.projection import Projection
from mtcjudge.mtc.significance import Outcome

#: targets the document always projects, besides the campaign's own
PROJECTION_TARGETS = (0.90, 0.95, 0.99)


#: the [U12] significance rules: power threshold on normalised differences and test level
SIGNIFICANCE_DELTA = 0.067


SIGNIFICANCE_ALPHA = 0.05


#: the stored JSON's layout; a row written by another layout is recomputed, not misread
#: (2: the ties, issue 23; 3: the assessors' disagreement)
_FORMAT = 3


@dataclass(frozen=True)
class SystemResult:
    """A system's estimated score (mean over queries), its variance and confidence interval
    (within the measure's range [0, 1]), and its place in the estimated ranking (1 = best).
    ``tied``: its score is known to equal another system's (the same run, or equal scores
    once every pair they differ on is judged); tied systems share their rank and the next
    rank skips (1, 1, 3)."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value (see plain)

    name: str
    mean: float
    var: float
    ci_low: float
    ci_high: float
    rank: int
    tied: bool = False


@dataclass(frozen=True)
class PairResult:
    """Systems ``a`` and ``b`` (by name order): the estimated ``mean(a) - mean(b)``, its
    variance, the confidence that the two are ordered as estimated, whether that reaches
    the campaign's target, and the verdict of the [U12] significance rules
    (``a_better``, ``b_better``, ``not_different``, ``undecided``; ``verdict_rule`` 1-4 or
    None; ``verdict_final``: rules 1-3, which no further judgment can change).

    ``tied``: the difference is known to be exactly 0 (docs/method.md §3.5). No order is
    claimed: the ranking gives both the same rank, ``confidence`` is that of the tie (1, it
    is known) and the pair counts as settled."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value (see plain)

    a: str
    b: str
    diff_mean: float
    diff_var: float
    confidence: float
    settled: bool
    verdict: str
    verdict_rule: int | None
    verdict_final: bool
    tied: bool = False


@dataclass(frozen=True)
class TargetProjection:
    """Further judged pairs needed to reach ``target`` ranking confidence, counted from
    when the projection was made: median and 10th-90th percentile range over simulated
    runs (None when most runs did not reach it within the pool); ``reached``: met then."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value (see plain)

    target: float
    reached: bool
    median: int | None
    low: int | None
    high: int | None


@dataclass(frozen=True)
class DisagreementInfo:
    """The assessor disagreement the confidence includes (docs/method.md §10): ``sd`` is the
    standard deviation of one assessor's score around what the campaign's assessors give
    the pair on average, on the results' scale (FINE points, or BROAD grades), measured from
    ``pairs`` pairs judged more than once (``degrees_of_freedom``: one per extra judgment);
    while not ``measured`` (fewer than 3), ``sd`` is 0 and the confidence assumes that
    another assessor would have given the same scores. ``offset_sd`` is the part of ``sd``
    that each assessor's judgments share (their leniency or harshness, §10.1), measured from
    the judgments of ``offset_assessors`` assessors; 0 when not measured."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value (see plain)

    measured: bool
    sd: float
    pairs: int
    degrees_of_freedom: int
    offset_sd: float = 0.0
    offset_assessors: int = 0


@dataclass(frozen=True)
class ProjectionInfo:
    """How the projections were made: at ``judgments`` judged pairs, from ``runs``
    simulated continuations of the loop (``method`` says how), taking ``seconds``."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value (see plain)

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
    system_pairs_tied: int
    projected_judgments_to_target: TargetProjection | None
    projections: list[TargetProjection]
    projection: ProjectionInfo | None
    systems: list[SystemResult]
    pairs: list[PairResult]
    assessor_disagreement: DisagreementInfo


_FIELDS: dict[type, tuple[str, ...]] = {}


def plain(value: Any) -> Any:
    """A document dataclass as JSON values: dicts, lists, ISO times. A dataclass whose fields
    are all plain JSON values declares ``json_flat = True`` and is copied as it is."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    kind = type(value)
    if is_dataclass(kind):
        names = _FIELDS.get(kind)
        if names is None:
            names = _FIELDS[kind] = tuple(f.name for f in fields(kind))
        if getattr(kind, "json_flat", False):  # thousands of pairs: fields as they are
            return value.__dict__.copy()
        return {name: plain(getattr(value, name)) for name in names}
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
            "assessor_disagreement": DisagreementInfo(**d["assessor_disagreement"]),
        }
    )


def stored_json(
    part: EngineResults, settings_key: str, listening: ListeningSection | None = None
) -> str:
    """What the planner stores in ``campaign_results.document``: the engine part and, beside
    it, the listening section (a document stored before it had one reads as without)."""
    stored: dict[str, Any] = {
        "format": _FORMAT,
        "settings_key": settings_key,
        "results": plain(part),
    }
    if listening is not None:
        stored["listening"] = plain(listening)
    return json.dumps(stored, allow_nan=False)


@dataclass(frozen=True)
class StoredParts:
    """What a stored document holds for the settings it was asked for: the engine part and
    the listening section, each None when not stored (or stored by other settings or
    another layout)."""

    results: EngineResults | None
    listening: ListeningSection | None


def parse_stored_parts(document: str, settings_key: str) -> StoredParts:
    """The stored engine part and listening section; neither when the document was made with
    other campaign settings (the planner has not caught up with a change yet) or by another
    layout."""
    try:
        stored = json.loads(document)
        if stored.get("format") != _FORMAT or stored.get("settings_key") != settings_key:
            return StoredParts(None, None)
        results = _engine_from_dict(stored["results"])
    except (ValueError, KeyError, TypeError):
        return StoredParts(None, None)
    try:
        listening = stored.get("listening")
        return StoredParts(results, None if listening is None else section_from_dict(listening))
    except (ValueError, KeyError, TypeError):
        return StoredParts(results, None)


def parse_stored(document: str, settings_key: str) -> EngineResults | None:
    """The stored engine part, or None when it was made with other campaign settings (the
    planner has not caught up with a change yet) or by another layout."""
    return parse_stored_parts(document, settings_key).results


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
    target = float(campaign.target)
    pairs = _pair_results(state, evaluation, target)
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
        system_pairs=len(pairs),
        system_pairs_settled=sum(p.settled for p in pairs),
        system_pairs_tied=sum(p.tied for p in pairs),
        projected_judgments_to_target=next(
            (p for p in projections if math.isclose(p.target, target)), None
        ),
        projections=projections,
        projection=None
        if projection is None
        else ProjectionInfo(
            projection.judged, projection.runs, projection.method, round(projection.seconds, 3)
        ),
        systems=_system_results(state, evaluation),
        pairs=pairs,
        assessor_disagreement=DisagreementInfo(
            measured=state.disagreement.measured,
            sd=state.disagreement.sd,
            pairs=state.disagreement.pairs,
            degrees_of_freedom=state.disagreement.df,
            offset_sd=state.assessor_offsets.sd if state.assessor_offsets is not None else 0.0,
            offset_assessors=(
                state.assessor_offsets.assessors if state.assessor_offsets is not None else 0
            ),
        ),
    )


def _system_results(state: CampaignEngine, evaluation: Evaluation) -> list[SystemResult]:
    """The systems in the estimated ranking, best first."""
    names = state.system_names
    rank = evaluation.ranks().tolist()
    has_tie = [bool(t) for t in evaluation.tied_systems]
    mean, var = evaluation.mean.tolist(), evaluation.var.tolist()
    low, high = evaluation.ci_low.tolist(), evaluation.ci_high.tolist()
    return [
        SystemResult(names[i], mean[i], var[i], low[i], high[i], rank[i], has_tie[i])
        for i in evaluation.ranking().tolist()
    ]


def _pair_results(state: CampaignEngine, evaluation: Evaluation, target: float) -> list[PairResult]:
    """Every pair of systems (``numpy.triu_indices`` order), settled at ``target``."""
    names = state.system_names
    a, b = np.triu_indices(evaluation.n_systems, 1)
    confidence = evaluation.pair_confidence[a, b]
    settled = confidence >= target
    outcomes, rules, final = _verdicts(state, a.shape[0])
    return [
        PairResult(names[i], names[j], dm, dv, c, s, o, r or None, f, t)
        for i, j, dm, dv, c, s, o, r, f, t in zip(
            a.tolist(),
            b.tolist(),
            evaluation.diff_mean[a, b].tolist(),
            evaluation.diff_var[a, b].tolist(),
            confidence.tolist(),
            settled.tolist(),
            outcomes,
            rules,
            final,
            evaluation.tied[a, b].tolist(),
            strict=True,
        )
    ]


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
