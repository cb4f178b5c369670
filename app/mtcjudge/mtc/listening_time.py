"""Listening time: what a judgment costs the volunteer, learnt from the campaign (method §11).

A judgment takes

    seconds = query listening (the whole query when it changes, a replay when it does not)
            + candidate listening
            + the decision (reading, choosing the scores, submitting, the next page loading)

Listening is modelled as a *share* of each clip's duration (so short clips cost less than
long ones), the decision in seconds. Each of the four parameters (query share when the query
changes, query share on a pair of the same query, candidate share, decision seconds) is
estimated per assessor and pooled, robustly:

- a judgment's listening is what the page reported it played (the audio clock); when the page
  sent nothing, what the server sent of the clip (``bytes / 16,000`` seconds: every clip is
  served as 128 kbit/s CBR MP3), heard once (not for the query of a pair of the same query:
  its bytes count over all the assessor's pairs of it); a report above :data:`MAX_PLAYS`
  plays of the clip (a loop left running in an idle tab) is missing, not listening;
- a judgment's wall time is the shorter of lease→submit and previous submit→submit (so two
  tabs of one assessor are never counted twice); a negative one (a clock stepped back) is
  missing, and one longer than :func:`break_cap_seconds` (3 × the clips + 5 minutes: a
  coffee, a night with the tab open, a clock stepped forward) is a break, not judging;
- the decision is wall time minus listening, on judgments with neither a break, nor a
  missing value, nor another lease of the assessor open (two tabs);
- each parameter is a median (robust to the idle tabs and breaks the caps miss), shrunk
  toward the pooled value with a prior weight of :data:`PRIOR_WEIGHT` judgments (an
  assessor with 3 judgments is 3/13 their own), and the pooled value toward the stated
  default with the same weight (so before anything is measured, the defaults hold).

Defaults (:class:`Defaults`): 30 s clips; the whole query once when it changes, the whole
candidate, nothing of the query again on a pair of the same query (but never less than the
campaign's listening rule asks of each clip); a 10 s decision. Source of the scale: [U12] §1,
"6,322 of these judgments were needed, meaning that at least 53 hours of assessor time"
(30 s clips, about 30.2 s per judgment: one clip heard per judgment, nothing else counted).
The 10 s decision is our assumption, replaced by the campaign's own measure as judgments come.

Pure: numpy and the standard library only; observations in, plain dataclasses out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

__all__ = [
    "BREAK_MINUTES",
    "BYTES_PER_SECOND",
    "MAX_PLAYS",
    "PRIOR_WEIGHT",
    "QUERY_CHANGE_PRIOR",
    "QUERY_CHANGE_WEIGHT",
    "Cleaned",
    "Component",
    "Defaults",
    "Expected",
    "Forecast",
    "HoursSpent",
    "ListeningModel",
    "Observation",
    "PairToCome",
    "PoolHours",
    "QueryChanges",
    "Speeds",
    "TimeSpent",
    "break_cap_seconds",
    "clean",
    "fit",
    "forecast_hours",
    "forecast_judgments",
    "hours_spent",
    "pool_hours",
    "query_changes",
]

#: bytes per second of every served clip: 128 kbit/s constant-bitrate MP3
#: (mtcjudge.clips.rendition.BITRATE / 8; the engine does not import the app)
BYTES_PER_SECOND = 16_000
#: a clip's reported listening above this many plays of it is an idle tab, not listening
MAX_PLAYS = 4.0
#: a judgment whose wall time exceeds 3 × its clips plus these minutes is a break
BREAK_MINUTES = 5.0
#: judgments' worth of weight of the value an estimate is shrunk toward
PRIOR_WEIGHT = 10.0
#: the share of judgments that change query before a campaign measures it: our assumption,
#: a volunteer judging about five pairs of a query before the next (the planner keeps an
#: assessor on their query while its pairs are worth it)
QUERY_CHANGE_PRIOR = 0.2
#: judgments' worth of weight of that prior
QUERY_CHANGE_WEIGHT = 20.0
#: a decision more negative than this (listening longer than the wall time) is inconsistent
_SLACK_SECONDS = 5.0
#: assessors with at least this many values inform the between-assessor spread
_MIN_FOR_SPREAD = 5
#: fewest such assessors for the spread to be measured rather than the default's
_MIN_ASSESSORS_FOR_SPREAD = 3
#: MAD → standard deviation under normality; a median's standard error factor (sqrt(pi/2))
_MAD_TO_SD = 1.4826
_MEDIAN_SE = math.sqrt(math.pi / 2)


@dataclass(frozen=True)
class Observation:
    """One submitted judgment of one assessor, as the app records it.

    Pass each assessor's observations in the order they were submitted (judgment id order),
    not sorted by timestamp: a clock stepped back then shows as a negative time. Times are
    seconds on the server's clock (e.g. POSIX timestamps).
    """

    assessor: int
    query: int
    submitted_at: float | None
    leased_at: float | None = None
    query_seconds: float | None = None  # the clips' durations; None: unknown
    candidate_seconds: float | None = None
    query_listen_ms: int | None = None  # what the page reported it played
    candidate_listen_ms: int | None = None
    served_query_bytes: int | None = None  # what the server sent
    served_candidate_bytes: int | None = None
    #: whether the query differs from the assessor's previous judgment's; None: from the order
    query_changed: bool | None = None


@dataclass(frozen=True)
class Cleaned:
    """One observation after the robustness rules (seconds; None: missing)."""

    assessor: int
    query_changed: bool
    query_duration: float | None  # known, or read from the bytes sent
    candidate_duration: float | None
    query_listen: float | None
    candidate_listen: float | None
    #: min(lease→submit, previous submit→submit); None when unknown or negative
    wall: float | None
    is_break: bool
    #: leased before the assessor's previous judgment was submitted (two tabs)
    overlapped: bool
    #: wall − listening, on a clean judgment
    decision: float | None


@dataclass(frozen=True)
class Component:
    """One parameter: its estimate, the estimate's standard error, the spread of one
    judgment's value around it, and how many measured values it rests on."""

    value: float
    se: float
    sd: float
    n: int


@dataclass(frozen=True)
class Defaults:
    """What holds before anything is measured (docs/method.md §11)."""

    clip_seconds: float = 30.0
    query_new_share: float = 1.0
    query_same_share: float = 0.0
    candidate_share: float = 1.0
    decision_seconds: float = 10.0
    #: one judgment's spread, and the spread between assessors, of each parameter
    share_sd: float = 0.3
    share_tau: float = 0.2
    decision_sd: float = 8.0
    decision_tau: float = 5.0
    #: the campaign's listening rule: each clip played at least this long (or to its end)
    listen_rule_seconds: float = 0.0


@dataclass(frozen=True)
class Speeds:
    """One assessor's (or the pool's) parameters."""

    query_new: Component  # share of the query clip heard when the query changes
    query_same: Component  # share of the query clip heard again on a pair of the same query
    candidate: Component  # share of the candidate clip heard
    decision: Component  # seconds
    judgments: int


@dataclass(frozen=True)
class Expected:
    """Expected seconds of one pair to come: the mean, an interval for the mean at
    ``level``, its standard error, and the spread of one judgment around the mean."""

    seconds: float
    low: float
    high: float
    se: float
    sd: float
    listening: float  # of which listening


@dataclass(frozen=True)
class PairToCome:
    """``count`` pairs to come alike (fractional counts allowed: an expected number)."""

    assessor: int | None  # None: an assessor not seen yet
    query_changes: bool
    query_seconds: float | None = None
    candidate_seconds: float | None = None
    count: float = 1.0


@dataclass(frozen=True)
class Forecast:
    hours: float
    low: float
    high: float
    level: float


@dataclass(frozen=True)
class TimeSpent:
    judgments: int = 0
    listening_seconds: float = 0.0
    decision_seconds: float = 0.0
    #: judgments part of whose time came from the model (break, clock, missing report)
    imputed: int = 0

    @property
    def seconds(self) -> float:
        return self.listening_seconds + self.decision_seconds

    @property
    def hours(self) -> float:
        return self.seconds / 3600.0

    @property
    def listening_hours(self) -> float:
        return self.listening_seconds / 3600.0


@dataclass(frozen=True)
class HoursSpent:
    total: TimeSpent
    assessors: Mapping[int, TimeSpent]


def _z(level: float) -> float:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def _positive(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) and x > 0 else None


def _duration(seconds: float | None, served_bytes: int | None) -> float | None:
    """The clip's duration; when unknown, read from the bytes sent for the lease (the page
    fetches a clip whole; CBR, so bytes / 16,000 is about its seconds)."""
    known = _positive(seconds)
    if known is not None:
        return known
    if served_bytes is not None and served_bytes > 0:
        return served_bytes / BYTES_PER_SECOND
    return None


def _listen(
    reported_ms: int | None, duration: float | None, served_bytes: int | None, clip: float
) -> float | None:
    cap = MAX_PLAYS * (duration if duration is not None else clip)
    if reported_ms is not None:
        seconds = reported_ms / 1000.0
        if not math.isfinite(seconds) or seconds < 0 or seconds > cap:
            return None
        return seconds
    if served_bytes is not None and served_bytes > 0:
        sent = served_bytes / BYTES_PER_SECOND
        return min(sent, duration) if duration is not None else min(sent, cap)
    return None


def break_cap_seconds(
    query_seconds: float | None, candidate_seconds: float | None, clip_seconds: float = 30.0
) -> float:
    """Wall time above which a judgment is a break: 3 × (query + candidate) + 5 minutes
    (8 minutes for two 30 s clips)."""
    q = query_seconds if query_seconds is not None else clip_seconds
    c = candidate_seconds if candidate_seconds is not None else clip_seconds
    return 3.0 * (q + c) + 60.0 * BREAK_MINUTES


def clean(observations: Sequence[Observation], defaults: Defaults | None = None) -> list[Cleaned]:
    """The observations after the robustness rules, in the same order."""
    d = defaults or Defaults()
    previous: dict[int, Observation] = {}
    out: list[Cleaned] = []
    for o in observations:
        before = previous.get(o.assessor)
        previous[o.assessor] = o
        changed = o.query_changed
        if changed is None:
            changed = before is None or before.query != o.query
        # a query's bytes count over all the assessor's pairs of it: no duration from them
        qd = _duration(o.query_seconds, None)
        cd = _duration(o.candidate_seconds, o.served_candidate_bytes)
        # ... nor, on a pair of the same query, any listening: it was sent for an earlier pair
        query_bytes = o.served_query_bytes if changed else None
        ql = _listen(o.query_listen_ms, qd, query_bytes, d.clip_seconds)
        cl = _listen(o.candidate_listen_ms, cd, o.served_candidate_bytes, d.clip_seconds)
        spans: list[float] = []
        overlapped = False
        if o.submitted_at is not None and o.leased_at is not None:
            spans.append(o.submitted_at - o.leased_at)
        if o.submitted_at is not None and before is not None and before.submitted_at is not None:
            spans.append(o.submitted_at - before.submitted_at)
            if o.leased_at is not None and o.leased_at < before.submitted_at:
                overlapped = True
        wall: float | None = None
        if spans and all(math.isfinite(s) and s >= 0 for s in spans):
            wall = min(spans)
        if wall is None:
            overlapped = False  # nothing on the clock to trust
        is_break = wall is not None and wall > break_cap_seconds(qd, cd, d.clip_seconds)
        decision: float | None = None
        if (
            wall is not None
            and not is_break
            and not overlapped
            and ql is not None
            and cl is not None
        ):
            rest = wall - ql - cl
            if rest >= -_SLACK_SECONDS:
                decision = max(0.0, rest)
        out.append(
            Cleaned(o.assessor, changed, qd, cd, ql, cl, wall, is_break, overlapped, decision)
        )
    return out


def _robust(values: Sequence[float]) -> tuple[float, float, int]:
    """Median, MAD-based spread (nan below 2 values) and count."""
    x = np.asarray(values, dtype=float)
    n = int(x.size)
    if n == 0:
        return math.nan, math.nan, 0
    m = float(np.median(x))
    sd = float(_MAD_TO_SD * np.median(np.abs(x - m))) if n >= 2 else math.nan
    return m, sd, n


def _shrunk(values: Sequence[float], prior: Component, prior_sd: float, tau: float) -> Component:
    """``values``' median shrunk toward ``prior`` with :data:`PRIOR_WEIGHT` judgments' weight.

    The spread of one judgment blends the measured MAD with ``prior_sd`` by the same weights;
    the standard error adds the median's own error and, for the prior's share, the spread
    between assessors ``tau`` and the prior's error."""
    m, sd_x, n = _robust(values)
    k = PRIOR_WEIGHT
    if n == 0:
        return Component(prior.value, math.sqrt(tau**2 + prior.se**2), prior_sd, 0)
    sd_x = prior_sd if math.isnan(sd_x) else sd_x
    value = (n * m + k * prior.value) / (n + k)
    sd = math.sqrt((n * sd_x**2 + k * prior_sd**2) / (n + k))
    own = n / (n + k)
    se = math.sqrt(own**2 * _MEDIAN_SE**2 * sd**2 / n + (1 - own) ** 2 * (tau**2 + prior.se**2))
    return Component(value, se, sd, n)


@dataclass
class _Values:
    """The measured values of each parameter (one assessor's, or all)."""

    query_new: list[float] = field(default_factory=list)
    query_same: list[float] = field(default_factory=list)
    candidate: list[float] = field(default_factory=list)
    decision: list[float] = field(default_factory=list)
    judgments: int = 0

    def add(self, c: Cleaned) -> None:
        self.judgments += 1
        if c.query_listen is not None and c.query_duration is not None:
            share = c.query_listen / c.query_duration
            (self.query_new if c.query_changed else self.query_same).append(share)
        if c.candidate_listen is not None and c.candidate_duration is not None:
            self.candidate.append(c.candidate_listen / c.candidate_duration)
        if c.decision is not None:
            self.decision.append(c.decision)


def _clip_seconds(component: Component, duration: float, rule: float) -> tuple[float, float, float]:
    """Seconds of a clip of ``duration``: (mean, se, sd), the mean floored by the listening
    rule (``rule`` seconds or the whole clip)."""
    mean = max(component.value * duration, min(rule, duration))
    return mean, component.se * duration, component.sd * duration


def _speeds(c: Mapping[str, Component], judgments: int) -> Speeds:
    return Speeds(c["query_new"], c["query_same"], c["candidate"], c["decision"], judgments)


_NAMES = ("query_new", "query_same", "candidate", "decision")


def _spread(per_assessor: Iterable[_Values], name: str, default: float) -> float:
    """The spread between assessors' medians (assessors with enough values), or the default."""
    medians = [
        float(np.median(vs)) for v in per_assessor if len(vs := getattr(v, name)) >= _MIN_FOR_SPREAD
    ]
    if len(medians) < _MIN_ASSESSORS_FOR_SPREAD:
        return default
    m = np.asarray(medians)
    return float(_MAD_TO_SD * np.median(np.abs(m - np.median(m))))


@dataclass(frozen=True)
class ListeningModel:
    """Per-assessor and pooled speeds; :meth:`expected_seconds` for pairs to come."""

    pooled: Speeds
    assessors: Mapping[int, Speeds]
    defaults: Defaults

    def speeds(self, assessor: int | None) -> Speeds:
        """The assessor's speeds; the pool's for an assessor not seen yet."""
        if assessor is None:
            return self.pooled
        return self.assessors.get(assessor, self.pooled)

    def expected_seconds(
        self,
        assessor: int | None,
        query_changes: bool,
        query_seconds: float | None = None,
        candidate_seconds: float | None = None,
        level: float = 0.8,
    ) -> Expected:
        """Expected seconds a pair costs ``assessor``: the query (share by whether it changes)
        + the candidate + the decision; unknown durations count as the default clip."""
        s = self.speeds(assessor)
        clip = self.defaults.clip_seconds
        qd = _positive(query_seconds) or clip
        cd = _positive(candidate_seconds) or clip
        rule = self.defaults.listen_rule_seconds
        q = _clip_seconds(s.query_new if query_changes else s.query_same, qd, rule)
        c = _clip_seconds(s.candidate, cd, rule)
        listening = q[0] + c[0]
        mean = listening + max(0.0, s.decision.value)
        se = math.sqrt(q[1] ** 2 + c[1] ** 2 + s.decision.se**2)
        sd = math.sqrt(q[2] ** 2 + c[2] ** 2 + s.decision.sd**2)
        z = _z(level)
        return Expected(mean, max(0.0, mean - z * se), mean + z * se, se, sd, listening)


def fit(observations: Sequence[Observation], defaults: Defaults | None = None) -> ListeningModel:
    """The model learnt from a campaign's observations (docs/method.md §11)."""
    d = defaults or Defaults()
    pooled_values = _Values()
    per: dict[int, _Values] = {}
    for c in clean(observations, d):
        pooled_values.add(c)
        per.setdefault(c.assessor, _Values()).add(c)
    priors = {
        "query_new": (d.query_new_share, d.share_sd, d.share_tau),
        "query_same": (d.query_same_share, d.share_sd, d.share_tau),
        "candidate": (d.candidate_share, d.share_sd, d.share_tau),
        "decision": (d.decision_seconds, d.decision_sd, d.decision_tau),
    }
    pooled: dict[str, Component] = {}
    taus: dict[str, float] = {}
    for name, (value, sd, tau) in priors.items():
        default = Component(value, _MEDIAN_SE * sd / math.sqrt(PRIOR_WEIGHT), sd, 0)
        # the pool is shrunk toward the default as an assessor is toward the pool; the
        # default's own error is the spread between campaigns we cannot know: tau
        pooled[name] = _shrunk(getattr(pooled_values, name), default, sd, 0.0)
        taus[name] = _spread(per.values(), name, tau)
    pooled_speeds = _speeds(pooled, pooled_values.judgments)
    assessors = {
        a: _speeds(
            {n: _shrunk(getattr(v, n), pooled[n], pooled[n].sd, taus[n]) for n in _NAMES},
            v.judgments,
        )
        for a, v in per.items()
    }
    return ListeningModel(pooled_speeds, assessors, d)


def forecast_hours(
    model: ListeningModel, pairs: Iterable[PairToCome], level: float = 0.8
) -> Forecast:
    """Hours the pairs will take, with an interval at ``level``: each judgment's spread
    adds in quadrature, the parameters' errors add as if fully correlated (one assessor's
    pace errs the same way on all their pairs)."""
    mean = 0.0
    noise = 0.0
    error = 0.0
    for p in pairs:
        if not (math.isfinite(p.count) and p.count >= 0):
            raise ValueError(f"a count of pairs must be finite and >= 0, got {p.count}")
        if p.count == 0:
            continue
        e = model.expected_seconds(
            p.assessor, p.query_changes, p.query_seconds, p.candidate_seconds
        )
        mean += p.count * e.seconds
        noise += p.count * e.sd**2
        error += p.count * e.se
    half = _z(level) * math.sqrt(noise + error**2)
    return Forecast(mean / 3600, max(0.0, mean - half) / 3600, (mean + half) / 3600, level)


def hours_spent(
    observations: Sequence[Observation], model: ListeningModel | None = None
) -> HoursSpent:
    """The time the observations took, per assessor and in total.

    A clean judgment counts its wall time (its listening, the rest decision). Where the clock
    cannot be trusted (a break, a clock change, no lease time) the decision is the assessor's
    modelled one, and a listening report that is missing or absurd is the modelled listening.
    A judgment counts no more than its wall time when that is known and not a break (the
    shorter of lease→submit and the time since the assessor's previous submit), so two tabs
    are never counted twice."""
    m = model or fit(observations)
    d = m.defaults
    spent: dict[int, list[float]] = {}
    for c in clean(observations, d):
        e = m.expected_seconds(c.assessor, c.query_changed, c.query_duration, c.candidate_duration)
        s = m.speeds(c.assessor)
        imputed = False
        ql, cl = c.query_listen, c.candidate_listen
        if ql is None or cl is None:
            imputed = True
            qd = c.query_duration or d.clip_seconds
            cd = c.candidate_duration or d.clip_seconds
            if ql is None:
                share = s.query_new if c.query_changed else s.query_same
                ql = _clip_seconds(share, qd, d.listen_rule_seconds)[0]
            if cl is None:
                cl = _clip_seconds(s.candidate, cd, d.listen_rule_seconds)[0]
        listening = ql + cl
        if c.decision is not None:
            decision = c.decision
        else:
            imputed = True
            decision = max(0.0, e.seconds - e.listening)
            if c.wall is not None and not c.is_break:
                span = min(listening + decision, c.wall)
                listening = min(listening, span)
                decision = span - listening
        row = spent.setdefault(c.assessor, [0, 0.0, 0.0, 0])
        row[0] += 1
        row[1] += listening
        row[2] += decision
        row[3] += int(imputed)
    per = {a: TimeSpent(int(r[0]), float(r[1]), float(r[2]), int(r[3])) for a, r in spent.items()}
    total = TimeSpent(
        sum(t.judgments for t in per.values()),
        sum(t.listening_seconds for t in per.values()),
        sum(t.decision_seconds for t in per.values()),
        sum(t.imputed for t in per.values()),
    )
    return HoursSpent(total, per)


@dataclass(frozen=True)
class QueryChanges:
    """How often a judgment changes query: ``changes`` of ``judgments`` measured, and the
    ``share`` shrunk toward :data:`QUERY_CHANGE_PRIOR` with :data:`QUERY_CHANGE_WEIGHT`
    judgments' weight."""

    changes: int
    judgments: int
    share: float


def query_changes(observations: Sequence[Observation]) -> QueryChanges:
    """The share of judgments whose query differs from the assessor's previous judgment's
    (an assessor's first judgment changes query), in the order given (submit order):
    ``(changes + 20 * 0.2) / (judgments + 20)``, so 0.2 before anything is measured."""
    last: dict[int, int] = {}
    changes = 0
    for o in observations:
        changed = o.query_changed
        if changed is None:
            changed = last.get(o.assessor) != o.query
        last[o.assessor] = o.query
        changes += int(changed)
    n = len(observations)
    share = (changes + QUERY_CHANGE_WEIGHT * QUERY_CHANGE_PRIOR) / (n + QUERY_CHANGE_WEIGHT)
    return QueryChanges(changes, n, share)


def forecast_judgments(
    model: ListeningModel,
    judgments: float,
    query_change_share: float,
    query_seconds: float | None = None,
    candidate_seconds: float | None = None,
    level: float = 0.8,
) -> Forecast:
    """Hours ``judgments`` judgments to come will take (:func:`forecast_hours`), by
    assessors not known in advance (the pool's speeds), ``query_change_share`` of them
    changing query, every clip of the durations given (None: the default clip).

    Raises
    ------
    ValueError
        A negative or infinite count, a share outside [0, 1], a level outside (0, 1).
    """
    if not (math.isfinite(judgments) and judgments >= 0):
        raise ValueError(f"judgments must be finite and >= 0, got {judgments}")
    if not 0.0 <= query_change_share <= 1.0:
        raise ValueError(f"query_change_share must be in [0, 1], got {query_change_share}")
    changing = judgments * query_change_share
    pairs = (
        PairToCome(None, True, query_seconds, candidate_seconds, changing),
        PairToCome(None, False, query_seconds, candidate_seconds, judgments - changing),
    )
    return forecast_hours(model, pairs, level)


@dataclass(frozen=True)
class PoolHours:
    """Hours of judging a whole pool once, with an interval at ``level`` and the part of
    the mean that is listening."""

    hours: float
    low: float
    high: float
    listening_hours: float
    level: float


def pool_hours(
    model: ListeningModel,
    n_queries: int,
    n_pairs: int,
    query_seconds: float | None = None,
    candidate_seconds: float | None = None,
    level: float = 0.8,
) -> PoolHours:
    """Hours of judging every one of ``n_pairs`` pool pairs once, by assessors not known in
    advance, each query's pairs in a row: each of the ``n_queries`` queries heard once
    (its first pair changes query), its other pairs at the same query's replay share (0
    by default, the listening rule as a floor), every candidate and every decision once.

    Raises
    ------
    ValueError
        Negative counts, fewer pairs than queries (each query has a pair), a level outside
        (0, 1).
    """
    if n_queries < 0 or n_pairs < 0:
        raise ValueError(f"counts must be >= 0, got {n_queries} queries and {n_pairs} pairs")
    if n_pairs < n_queries:
        raise ValueError(f"every query has a pair: {n_pairs} pairs for {n_queries} queries")
    first = PairToCome(None, True, query_seconds, candidate_seconds, float(n_queries))
    rest = PairToCome(None, False, query_seconds, candidate_seconds, float(n_pairs - n_queries))
    forecast = forecast_hours(model, (first, rest), level)
    listening = sum(
        p.count
        * model.expected_seconds(
            None, p.query_changes, query_seconds, candidate_seconds, level
        ).listening
        for p in (first, rest)
    )
    return PoolHours(forecast.hours, forecast.low, forecast.high, listening / 3600, level)
