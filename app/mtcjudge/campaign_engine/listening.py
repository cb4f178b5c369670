"""The listening part of a campaign's results document: what judging has cost the volunteers
so far, and what the whole pool and each target would cost, in hours (docs/method.md §11).

The campaign's planner reads the assessors' judgments and the pool's clips
(:func:`read_listening`: one SELECT of the judgments, one of the pool), fits
:mod:`mtcjudge.mtc.listening_time` to them holding no connection (:func:`listening_facts`),
and every time it writes the document turns the facts and the projection of the judged pairs
still needed into a :class:`ListeningSection` (:func:`listening_section`), stored beside the
engine part (:func:`mtcjudge.campaign_engine.document.stored_json`). A document stored
without the section is not misread: the section is computed again from the rows when it is
read (:mod:`mtcjudge.results.read`).

What the figures count:

* *hours spent*: every judgment an assessor gave, pool pairs and hidden quality trials, set
  aside or not (they took the volunteer's time all the same); not imported judgments;
* *the whole pool*: every pool pair judged once, each query's pairs in a row (each query
  heard once), by the pool's speeds;
* *to a target*: the projected judged pairs (median, 10th and 90th percentile) times the
  campaign's judgments per pair, plus the hidden trials handed out among them (a share
  ``quality_rate`` of the hand-outs), the share of them that change query measured so far
  (shrunk toward 0.2), every clip of the pool's mean duration. The interval runs from the
  model's low end of the low count to its high end of the high count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from sqlalchemy.orm import Session

from mtcjudge.campaign_engine import repository
from mtcjudge.campaign_engine.repository import PoolClips
from mtcjudge.models import Campaign
from mtcjudge.mtc.listening_time import (
    QUERY_CHANGE_PRIOR,
    QUERY_CHANGE_WEIGHT,
    Component,
    Defaults,
    Forecast,
    HoursSpent,
    ListeningModel,
    Observation,
    PoolHours,
    QueryChanges,
    fit,
    forecast_judgments,
    hours_spent,
    pool_hours,
    query_changes,
)

__all__ = [
    "LEVEL",
    "AssessorHours",
    "HoursSpentInfo",
    "ListeningDefaults",
    "ListeningFacts",
    "ListeningInput",
    "ListeningParameter",
    "ListeningParameters",
    "ListeningSection",
    "PoolHoursInfo",
    "QueryChangeShare",
    "TargetHours",
    "listening_facts",
    "listening_section",
    "read_listening",
    "section_from_dict",
    "with_pseudonyms",
]

#: the level of every interval of the section
LEVEL = 0.8


# ------------------------------------------------------------------ the section


@dataclass(frozen=True)
class ListeningDefaults:
    """What holds before anything is measured (docs/method.md §11): the clip of unknown
    duration, the shares of each clip heard, the decision in seconds, and the campaign's
    listening rule (each clip played at least this long, or whole; 0: no rule)."""

    json_flat: ClassVar[bool] = True

    clip_seconds: float
    query_new_share: float
    query_same_share: float
    candidate_share: float
    decision_seconds: float
    listen_rule_seconds: float


@dataclass(frozen=True)
class ListeningParameter:
    """One parameter of the pooled model: its estimate, the estimate's standard error, the
    spread of one judgment around it, and how many measured values it rests on (0: the
    default alone)."""

    json_flat: ClassVar[bool] = True

    value: float
    se: float
    sd: float
    n: int


@dataclass(frozen=True)
class ListeningParameters:
    """The pooled model: shares of the query heard when it changes and on a pair of the same
    query, share of the candidate heard, and the decision in seconds, learnt from
    ``judgments`` judgments and shrunk toward the defaults."""

    judgments: int
    query_new: ListeningParameter
    query_same: ListeningParameter
    candidate: ListeningParameter
    decision: ListeningParameter


@dataclass(frozen=True)
class QueryChangeShare:
    """The share of judgments to come that change query: ``changes`` of ``judgments``
    measured, shrunk toward ``prior`` with ``prior_weight`` judgments' weight."""

    json_flat: ClassVar[bool] = True

    share: float
    changes: int
    judgments: int
    prior: float
    prior_weight: float


@dataclass(frozen=True)
class HoursSpentInfo:
    """Time judging has taken so far: ``judgments`` given, ``hours`` in all, of which
    ``listening_hours`` listening; ``imputed``: judgments part of whose time is the model's
    (a break, a clock change, a missing lease time or listening report)."""

    json_flat: ClassVar[bool] = True

    judgments: int
    hours: float
    listening_hours: float
    imputed: int


@dataclass(frozen=True)
class AssessorHours:
    """One assessor's time so far, by id and by the pseudonym the document gives them (filled
    in when the document is read; None in the stored section)."""

    json_flat: ClassVar[bool] = True

    id: int
    pseudonym: str | None
    judgments: int
    hours: float
    listening_hours: float
    imputed: int


@dataclass(frozen=True)
class PoolHoursInfo:
    """Judging the whole pool once: ``pairs`` pool pairs of ``queries`` queries, clips of
    ``query_seconds`` and ``candidate_seconds`` on average (unknown durations counted as the
    default clip), ``hours`` with an interval, and the listening part of the hours."""

    json_flat: ClassVar[bool] = True

    pairs: int
    queries: int
    query_seconds: float
    candidate_seconds: float
    hours: float
    low: float
    high: float
    listening_hours: float


@dataclass(frozen=True)
class TargetHours:
    """The volunteers' hours still needed to reach ``target``: ``judgments`` to come (the
    projected judged pairs' median, times the judgments per pair, plus the hidden trials
    among the hand-outs) and their ``hours``, with an interval. All None when most simulated
    runs did not reach the target within the pool; ``high`` None when the 90th percentile
    did not; 0 when ``reached``."""

    json_flat: ClassVar[bool] = True

    target: float
    reached: bool
    judgments: float | None
    hours: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class ListeningSection:
    """The ``listening`` section of the results document (see the module docstring); every
    interval at ``level``."""

    level: float
    defaults: ListeningDefaults
    parameters: ListeningParameters
    query_changes: QueryChangeShare
    judgments_per_pair: int
    quality_rate: float
    spent: HoursSpentInfo
    assessors: list[AssessorHours]
    pool: PoolHoursInfo
    targets: list[TargetHours]


def section_from_dict(d: Mapping[str, Any]) -> ListeningSection:
    """The section from its JSON form.

    Raises
    ------
    KeyError, TypeError
        Not a section's JSON form.
    """
    p = d["parameters"]
    return ListeningSection(
        level=d["level"],
        defaults=ListeningDefaults(**d["defaults"]),
        parameters=ListeningParameters(
            judgments=p["judgments"],
            **{
                name: ListeningParameter(**p[name])
                for name in ("query_new", "query_same", "candidate", "decision")
            },
        ),
        query_changes=QueryChangeShare(**d["query_changes"]),
        judgments_per_pair=d["judgments_per_pair"],
        quality_rate=d["quality_rate"],
        spent=HoursSpentInfo(**d["spent"]),
        assessors=[AssessorHours(**a) for a in d["assessors"]],
        pool=PoolHoursInfo(**d["pool"]),
        targets=[TargetHours(**t) for t in d["targets"]],
    )


def with_pseudonyms(section: ListeningSection, pseudonyms: Mapping[int, str]) -> ListeningSection:
    """The section with each assessor's pseudonym (as the document's assessors have it)."""
    return dataclasses.replace(
        section,
        assessors=[
            dataclasses.replace(a, pseudonym=pseudonyms.get(a.id)) for a in section.assessors
        ],
    )


# ------------------------------------------------------------------ from the rows


@dataclass(frozen=True, eq=False)
class ListeningInput:
    """What the facts are computed from, read in one transaction."""

    observations: list[Observation]
    clips: PoolClips
    defaults: Defaults
    judgments_per_pair: int
    quality_rate: float


@dataclass(frozen=True, eq=False)
class ListeningFacts:
    """The fitted model and what it says of the campaign so far: the hours spent, the share
    of judgments that change query, and the whole pool; :func:`listening_section` adds the
    targets."""

    model: ListeningModel
    spent: HoursSpent
    changes: QueryChanges
    query_seconds: float
    candidate_seconds: float
    pool: PoolHours
    pool_pairs: int
    pool_queries: int
    judgments_per_pair: int
    quality_rate: float


def read_listening(session: Session, campaign: Campaign) -> ListeningInput:
    """The campaign's assessors' judgments as observations, and its pool's clips."""
    return ListeningInput(
        observations=repository.listening_observations(session, campaign.id),
        clips=repository.pool_clips(session, campaign.id),
        defaults=Defaults(listen_rule_seconds=float(campaign.listen_seconds)),
        judgments_per_pair=int(campaign.judgments_per_pair),
        quality_rate=float(campaign.quality_rate),
    )


def _mean_seconds(count: int, timed: int, total: float, clip: float) -> float:
    """Mean duration of ``count`` clips, ``timed`` of which add up to ``total`` seconds, the
    others counted as ``clip``; ``clip`` when there is none."""
    if count <= 0:
        return clip
    return (total + (count - timed) * clip) / count


def listening_facts(rows: ListeningInput) -> ListeningFacts:
    """Fit the model and say what it says of the campaign so far (no database)."""
    model = fit(rows.observations, rows.defaults)
    clips = rows.clips
    clip = rows.defaults.clip_seconds
    query_seconds = _mean_seconds(clips.queries, clips.queries_timed, clips.query_seconds, clip)
    candidate_seconds = _mean_seconds(clips.pairs, clips.pairs_timed, clips.candidate_seconds, clip)
    return ListeningFacts(
        model=model,
        spent=hours_spent(rows.observations, model),
        changes=query_changes(rows.observations),
        query_seconds=query_seconds,
        candidate_seconds=candidate_seconds,
        pool=pool_hours(model, clips.queries, clips.pairs, query_seconds, candidate_seconds, LEVEL),
        pool_pairs=clips.pairs,
        pool_queries=clips.queries,
        judgments_per_pair=rows.judgments_per_pair,
        quality_rate=rows.quality_rate,
    )


# ------------------------------------------------------------------ the section from the facts


class Projected(Protocol):
    """A projection of the judged pairs still needed to reach a target
    (:class:`mtcjudge.campaign_engine.document.TargetProjection`)."""

    @property
    def target(self) -> float: ...
    @property
    def reached(self) -> bool: ...
    @property
    def median(self) -> int | None: ...
    @property
    def low(self) -> int | None: ...
    @property
    def high(self) -> int | None: ...


def _hours(x: float) -> float:
    return round(x, 4)  # 0.36 s


def _parameter(c: Component) -> ListeningParameter:
    return ListeningParameter(round(c.value, 4), round(c.se, 4), round(c.sd, 4), c.n)


def _target(facts: ListeningFacts, projected: Projected) -> TargetHours:
    if projected.reached:
        return TargetHours(projected.target, True, 0.0, 0.0, 0.0, 0.0)
    if projected.median is None:
        return TargetHours(projected.target, False, None, None, None, None)
    # each judged pair is judged judgments_per_pair times, and a share quality_rate of the
    # hand-outs are hidden trials besides
    per_pair = facts.judgments_per_pair / (1.0 - min(facts.quality_rate, 0.99))

    def forecast(pairs: int) -> Forecast:
        return forecast_judgments(
            facts.model,
            pairs * per_pair,
            facts.changes.share,
            facts.query_seconds,
            facts.candidate_seconds,
            LEVEL,
        )

    median = forecast(projected.median)
    low = median.low if projected.low is None else forecast(projected.low).low
    high = None if projected.high is None else forecast(projected.high).high
    return TargetHours(
        projected.target,
        False,
        round(projected.median * per_pair, 1),
        _hours(median.hours),
        _hours(min(low, median.hours)),
        None if high is None else _hours(max(high, median.hours)),
    )


def listening_section(
    facts: ListeningFacts, projections: Sequence[Projected] = ()
) -> ListeningSection:
    """The document's section: the facts, and the hours to each of ``projections``' targets."""
    d = facts.model.defaults
    pooled = facts.model.pooled
    spent = facts.spent
    return ListeningSection(
        level=LEVEL,
        defaults=ListeningDefaults(
            d.clip_seconds,
            d.query_new_share,
            d.query_same_share,
            d.candidate_share,
            d.decision_seconds,
            d.listen_rule_seconds,
        ),
        parameters=ListeningParameters(
            pooled.judgments,
            _parameter(pooled.query_new),
            _parameter(pooled.query_same),
            _parameter(pooled.candidate),
            _parameter(pooled.decision),
        ),
        query_changes=QueryChangeShare(
            round(facts.changes.share, 4),
            facts.changes.changes,
            facts.changes.judgments,
            QUERY_CHANGE_PRIOR,
            QUERY_CHANGE_WEIGHT,
        ),
        judgments_per_pair=facts.judgments_per_pair,
        quality_rate=facts.quality_rate,
        spent=HoursSpentInfo(
            spent.total.judgments,
            _hours(spent.total.hours),
            _hours(spent.total.listening_hours),
            spent.total.imputed,
        ),
        assessors=[
            AssessorHours(
                a, None, t.judgments, _hours(t.hours), _hours(t.listening_hours), t.imputed
            )
            for a, t in sorted(spent.assessors.items())
        ],
        pool=PoolHoursInfo(
            facts.pool_pairs,
            facts.pool_queries,
            round(facts.query_seconds, 2),
            round(facts.candidate_seconds, 2),
            _hours(facts.pool.hours),
            _hours(facts.pool.low),
            _hours(facts.pool.high),
            _hours(facts.pool.listening_hours),
        ),
        targets=[_target(facts, p) for p in projections],
    )
