"""Simulated volunteers: the MTC loop replayed with listening time (docs/method.md §12).

Several volunteers judge at once. Each has their own pace (how much of each clip they hear,
how long they take to decide), drawn around stated assumptions; they hear a new query in
full when they move to it, replay a little of the query on its later pairs, and take a break
after a session (and hear their query anew after it). Each volunteer's next pair is chosen
when they finish the previous one, among the pairs nobody is judging, by a *selection*:

* ``greedy`` — the engine's best pair, whatever its query (judgment-greedy MTC);
* ``locality`` — the best pair of the volunteer's query when it weighs at least half the best
  pair overall, else the best pair (the rule of the product before cost-aware selection);
* ``cost`` — the most weight per expected second for that volunteer
  (:mod:`mtcjudge.mtc.cost_aware`), with the pace the planner would believe: the
  listening-time model (:mod:`mtcjudge.mtc.listening_time`) fitted to the judgments so far,
  and the horizon of the judgments still needed (:func:`~mtcjudge.mtc.projection.project`).

The audit's random pairs (the ``joint`` estimator's) go first under every selection: the
next volunteer to move to another query takes one when it is due.

Judgments are applied when they are submitted; the stop rule is the engine's. Judgments in
progress at the stop still count: their listening was spent. Pure: numpy and the mtc
modules, no database.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.cost_aware import Pace, horizon, stays
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.factory import build_engine
from mtcjudge.mtc.listening_time import Defaults, ListeningModel, Observation, fit
from mtcjudge.mtc.projection import project
from mtcjudge.mtc.scales import Scale
from mtcjudge.mtc.selection import top_candidates

__all__ = [
    "SELECTIONS",
    "HoursPoint",
    "VolunteerRun",
    "VolunteerSetup",
    "VolunteerTime",
    "replay_volunteers",
    "simulate_volunteers",
]

FloatArray = NDArray[np.float64]
SELECTIONS = ("cost", "greedy", "locality")
#: the cost-aware volunteers' planner projects the judgments to the target after at least
#: this many judgments ...
PROJECT_EVERY = 25
#: ... with this many simulated runs (reproducible: no time budget)
PROJECTION_RUNS = 4


@dataclass(frozen=True)
class VolunteerSetup:
    """How many volunteers, how they choose, and how they really behave.

    The behaviour is an assumption of the simulation, not a measure (docs/method.md §12.3):
    a new query heard in full, 10 % of it replayed on its later pairs, the whole candidate,
    10 s to decide; each volunteer's shares and decision time scaled by a factor of
    log-standard deviation ``pace_spread``, each judgment's by one of ``judgment_spread``;
    a break of ``break_minutes`` after every ``session_minutes`` of judging."""

    volunteers: int = 4
    selection: str = "cost"
    query_new_share: float = 1.0
    query_same_share: float = 0.1
    candidate_share: float = 1.0
    decision_seconds: float = 10.0
    pace_spread: float = 0.25
    judgment_spread: float = 0.2
    session_minutes: float = 45.0
    break_minutes: float = 15.0
    #: the planner refits its listening-time model after this many judgments
    refit_every: int = 25
    #: the campaign's listening rule (seconds of each clip, or to its end)
    listen_rule_seconds: float = 0.0
    #: the share of hand-outs that are hidden quality trials (made on the volunteer's query:
    #: they cost a pair of it, and judge nothing in the pool)
    trial_rate: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.volunteers < 1:
            raise ValueError(f"volunteers must be at least 1, found {self.volunteers}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"unknown selection {self.selection!r}: expected one of {SELECTIONS}")
        for name in ("pace_spread", "judgment_spread", "session_minutes", "break_minutes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, found {getattr(self, name)}")
        if not 0.0 <= self.trial_rate < 1.0:
            raise ValueError(f"trial_rate must be in [0, 1), found {self.trial_rate}")
        if self.refit_every < 1:
            raise ValueError(f"refit_every must be at least 1, found {self.refit_every}")

    def pool_hours(self, n_queries: int, n_pairs: int, clip_seconds: float = 30.0) -> float:
        """Hours of judging every one of ``n_pairs`` pool pairs once by these assumptions,
        each of the ``n_queries`` queries heard once (clips of ``clip_seconds``)."""
        seconds = n_queries * self.query_new_share * clip_seconds + n_pairs * (
            self.candidate_share * clip_seconds + self.decision_seconds
        )
        return seconds / 3600.0

    def assumptions(self) -> dict[str, float | int | str]:
        """The setup as JSON-ready figures (what a report states it assumed)."""
        return {
            "volunteers": self.volunteers,
            "selection": self.selection,
            "query_new_share": self.query_new_share,
            "query_same_share": self.query_same_share,
            "candidate_share": self.candidate_share,
            "decision_seconds": self.decision_seconds,
            "pace_spread": self.pace_spread,
            "judgment_spread": self.judgment_spread,
            "session_minutes": self.session_minutes,
            "break_minutes": self.break_minutes,
            "listen_rule_seconds": self.listen_rule_seconds,
            "trial_rate": self.trial_rate,
        }


@dataclass
class _Volunteer:
    index: int
    factor: float
    query: int | None = None
    clock: float = 0.0
    session_start: float = 0.0
    listening: float = 0.0
    seconds: float = 0.0
    judgments: int = 0
    trials: int = 0
    queries_heard: int = 0


@dataclass(frozen=True)
class VolunteerTime:
    """One volunteer's judgments, listening and total seconds, and queries heard anew."""

    judgments: int
    listening_seconds: float
    seconds: float
    queries_heard: int
    trials: int = 0


@dataclass(frozen=True)
class HoursPoint:
    judgments: int
    hours: float
    ranking_confidence: float


@dataclass(frozen=True)
class VolunteerRun:
    """What a simulated campaign cost: judgments, hours (listening + deciding), listening
    hours, query changes, per volunteer; the wall-clock hours the campaign lasted; the stop."""

    judgments: int
    hours: float
    listening_hours: float
    queries_heard: int
    wall_hours: float
    volunteers: list[VolunteerTime]
    stop_reason: str
    trajectory: list[HoursPoint] = field(default_factory=list)

    def summary(self) -> dict[str, object]:
        return {
            "judgments": self.judgments,
            "hours": self.hours,
            "listening_hours": self.listening_hours,
            "queries_heard": self.queries_heard,
            "wall_hours": self.wall_hours,
            "stop_reason": self.stop_reason,
            "volunteers": [
                {
                    "judgments": v.judgments,
                    "hours": v.seconds / 3600.0,
                    "listening_hours": v.listening_seconds / 3600.0,
                    "queries_heard": v.queries_heard,
                    "trials": v.trials,
                }
                for v in self.volunteers
            ],
        }


def _durations(seconds: ArrayLike | None, n: int, clip: float) -> FloatArray:
    if seconds is None:
        return np.full(n, clip)
    d = np.asarray(seconds, dtype=np.float64)
    if d.shape != (n,):
        raise ValueError(f"durations must have one value per pool pair ({n}), found {d.shape}")
    return d


class _Chooser:
    """Picks a volunteer's next pair under the setup's selection."""

    def __init__(
        self,
        engine: MTCEngine,
        setup: VolunteerSetup,
        query_duration: FloatArray,
        candidate_duration: FloatArray,
        defaults: Defaults,
    ) -> None:
        self.engine = engine
        self.setup = setup
        self.qd = query_duration
        self.cd = candidate_duration
        self.defaults = defaults
        self.model: ListeningModel | None = None
        # the last projection's high end of the judgments to the target, and when it was made
        self.high: int | None = None
        self.projected_at = -1

    def pick(self, v: _Volunteer, available: NDArray[np.bool_]) -> int | None:
        engine = self.engine
        if not available.any():
            return None
        if self.setup.selection == "greedy":
            return int(engine.ranked(1, available)[0][0])
        if self.setup.selection == "locality":
            return int(engine.select(1, candidates=available, prefer_query=v.query)[0])
        return self._cost_aware(v, available)

    def _cost_aware(self, v: _Volunteer, available: NDArray[np.bool_]) -> int:
        engine = self.engine
        weights = engine.weights()  # draws the audit's due pairs
        stored = engine.stored_over(weights, available)
        cand = np.flatnonzero(available)
        pq = engine.collection.pair_query
        drawn = getattr(engine, "audit_drawn", None)
        due = np.empty(0, dtype=np.intp) if drawn is None else np.flatnonzero(drawn & available)
        if v.query is not None and due.size:
            mine = due[pq[due] == v.query]
            if mine.size:
                return int(mine[0])
        pace = self.pace(v.index)
        # ties as the engine breaks them (higher Var[R], lower mean rank, lower index: A13)
        var, mean_rank = engine.var, engine.collection.mean_rank
        rate = np.zeros_like(stored)
        rate[cand] = stored[cand] / pace.pair_seconds(self.qd[cand], self.cd[cand], changes=True)
        best = int(top_candidates(rate, cand, var, mean_rank, 1)[0])
        if v.query is not None:
            own = cand[pq[cand] == v.query]
            if own.size:
                o = int(top_candidates(weights, own, var, mean_rank, 1)[0])
                clips = (float(self.qd[o]), float(self.cd[o]))
                # its rank in the plan's order (per second of a fresh start)
                rank = int((rate[cand] > rate[o]).sum())
                within = horizon(self.high, engine.n_judged - self.projected_at)
                best_clips = self.clips(best)
                if stays(
                    float(stored[o]),
                    clips,
                    float(stored[best]),
                    best_clips,
                    pace,
                    own_rank=rank,
                    within=within,
                ):
                    return o
        # the audit's pair goes to a volunteer who changes query anyway
        return int(due[0]) if due.size else best

    def reproject(self, done: int) -> None:
        """Project the judgments to the target again (as the planner does while judgments
        come): after :data:`PROJECT_EVERY` judgments, or a tenth of the horizon when that is
        more (a run of thousands of judgments projects a few dozen times); without a horizon,
        a tenth of the judgments made."""
        if self.projected_at >= 0:
            # a tenth of the judgments still needed, or of those made when the target looked
            # out of the pool's reach
            within = horizon(self.high, done - self.projected_at)
            scale = done if within is None else within
            if done - self.projected_at < max(PROJECT_EVERY, 0.1 * scale):
                return
        self.projected_at = done
        target = self.engine.config.target
        self.high = (
            project(
                self.engine,
                [target],
                runs=PROJECTION_RUNS,
                max_seconds=None,
                batch=self.setup.volunteers,
                seed=self.setup.seed + done,
            )
            .for_target(target)
            .judgments_high
        )

    def clips(self, pair: int) -> tuple[float, float]:
        return float(self.qd[pair]), float(self.cd[pair])

    def pace(self, volunteer: int) -> Pace:
        if self.model is None:
            return Pace.default(self.defaults)
        return Pace.for_assessor(self.model, volunteer)


def simulate_volunteers(
    engine: MTCEngine,
    answer: Callable[[int, int], float],
    setup: VolunteerSetup,
    *,
    query_duration: ArrayLike | None = None,
    candidate_duration: ArrayLike | None = None,
    max_judgments: int | None = None,
    after_judgment: Callable[[int, int, float], None] | None = None,
    on_trial: Callable[[int], None] | None = None,
    trajectory_every: int = 0,
) -> VolunteerRun:
    """Run the MTC loop with simulated volunteers until the engine's stop rule holds.

    Parameters
    ----------
    engine : MTCEngine
    answer : callable
        ``answer(volunteer, pair)``: the judgment the volunteer gives (the truth, or the truth
        with the volunteer's own view of it).
    setup : VolunteerSetup
    query_duration, candidate_duration : array_like, optional
        Seconds of each pool pair's query and candidate clip (NaN: unknown; default: every
        clip is the default's 30 s).
    max_judgments : int, optional
    after_judgment : callable, optional
        ``after_judgment(volunteer, pair, value)`` after the engine judged it.
    on_trial : callable, optional
        ``on_trial(volunteer)`` when a volunteer finishes a hidden quality trial (a benchmark
        that measures the disagreement from second opinions, say).
    trajectory_every : int
        Record (judgments, hours, confidence) every this many judgments (0: never).
    """
    collection = engine.collection
    n = collection.n_pairs
    defaults = Defaults(listen_rule_seconds=setup.listen_rule_seconds)
    qd = _durations(query_duration, n, defaults.clip_seconds)
    cd = _durations(candidate_duration, n, defaults.clip_seconds)
    rng = np.random.default_rng(np.random.SeedSequence([setup.seed, 0x1157E7]))
    people = [
        _Volunteer(i, float(math.exp(rng.normal(0.0, setup.pace_spread))))
        for i in range(setup.volunteers)
    ]
    chooser = _Chooser(engine, setup, qd, cd, defaults)
    observations: list[Observation] = []
    busy = np.zeros(n, dtype=bool)
    limit = n if max_judgments is None else min(n, max_judgments)
    # (finish time, volunteer, pair, listening seconds, total seconds, query changed)
    events: list[tuple[float, int, int, float, float, bool]] = []
    trajectory: list[HoursPoint] = []
    started = 0

    def clip(duration: float) -> float:
        return duration if math.isfinite(duration) and duration > 0 else defaults.clip_seconds

    def start(v: _Volunteer) -> bool:
        nonlocal started
        if started >= limit:
            return False
        if setup.session_minutes > 0 and v.clock - v.session_start >= 60 * setup.session_minutes:
            v.clock += 60 * setup.break_minutes
            v.session_start = v.clock
            v.query = None  # heard anew after the break
        noise = float(math.exp(rng.normal(0.0, setup.judgment_spread)))
        rule = setup.listen_rule_seconds

        def heard(share: float, duration: float) -> float:
            return max(min(share * v.factor * noise, 4.0) * duration, min(rule, duration))

        decision = setup.decision_seconds * v.factor * noise
        if v.query is not None and setup.trial_rate > 0 and rng.uniform() < setup.trial_rate:
            # a hidden trial on the volunteer's query: a pair of it to hear, nothing judged
            d = defaults.clip_seconds
            listened = heard(setup.query_same_share, d) + heard(setup.candidate_share, d)
            total = listened + decision
            heapq.heappush(events, (v.clock + total, v.index, -1, listened, total, False))
            return True
        pair = chooser.pick(v, ~engine.judged & ~busy)
        if pair is None:
            return False
        query = int(collection.pair_query[pair])
        changed = v.query != query
        share_q = setup.query_new_share if changed else setup.query_same_share
        q_sec, c_sec = clip(float(qd[pair])), clip(float(cd[pair]))
        q_heard = heard(share_q, q_sec)
        c_heard = heard(setup.candidate_share, c_sec)
        total = q_heard + c_heard + decision
        busy[pair] = True
        started += 1
        v.query = query
        v.queries_heard += int(changed)
        observations.append(
            Observation(
                v.index,
                query,
                submitted_at=v.clock + total,
                leased_at=v.clock,
                query_seconds=float(qd[pair]),
                candidate_seconds=float(cd[pair]),
                query_listen_ms=round(1000 * q_heard),
                candidate_listen_ms=round(1000 * c_heard),
                query_changed=changed,
            )
        )
        heapq.heappush(events, (v.clock + total, v.index, pair, q_heard + c_heard, total, changed))
        return True

    for v in people:
        start(v)
    reason = engine.stop_reason()
    while reason is None and events:
        finish, who, pair, listening, total, _ = heapq.heappop(events)
        v = people[who]
        v.clock = finish
        v.listening += listening
        v.seconds += total
        if pair < 0:
            v.trials += 1
            if on_trial is not None:
                on_trial(who)
            start(v)
            continue
        v.judgments += 1
        busy[pair] = False
        value = answer(who, pair)
        engine.judge(np.array([pair], dtype=np.intp), np.array([value]))
        if after_judgment is not None:
            after_judgment(who, pair, value)
        done = engine.n_judged
        if setup.selection == "cost":
            if done % setup.refit_every == 0:
                chooser.model = fit(observations, defaults)
            chooser.reproject(done)
        reason = engine.stop_reason()
        if trajectory_every and done % trajectory_every == 0:
            trajectory.append(
                HoursPoint(
                    done,
                    sum(p.seconds for p in people) / 3600,
                    engine.evaluation().ranking_confidence,
                )
            )
        if reason is None:
            start(v)
    # judgments in progress at the stop: their listening was spent
    for _, who, _, listening, total, _ in events:
        people[who].listening += listening
        people[who].seconds += total
    wall = max((p.clock for p in people), default=0.0)
    times = [
        VolunteerTime(p.judgments, p.listening, p.seconds, p.queries_heard, p.trials)
        for p in people
    ]
    return VolunteerRun(
        judgments=engine.n_judged,
        hours=sum(t.seconds for t in times) / 3600,
        listening_hours=sum(t.listening_seconds for t in times) / 3600,
        queries_heard=sum(t.queries_heard for t in times),
        wall_hours=wall / 3600,
        volunteers=times,
        stop_reason=reason or ("max_judgments" if started >= limit else "complete"),
        trajectory=trajectory,
    )


def replay_volunteers(
    collection: Collection,
    metadata: Metadata | None,
    truth: ArrayLike,
    scale: Scale,
    engine_config: EngineConfig,
    estimator: str,
    setup: VolunteerSetup,
    *,
    query_duration: ArrayLike | None = None,
    candidate_duration: ArrayLike | None = None,
) -> VolunteerRun:
    """:func:`simulate_volunteers` on the engine a campaign with ``estimator`` runs, the
    volunteers answering from ``truth`` (a fully judged collection, as a replay)."""
    engine, _ = build_engine(collection, metadata, scale, estimator, engine_config, seed=setup.seed)
    values = scale.check_values(np.asarray(truth, dtype=np.float64), "true judgment")
    return simulate_volunteers(
        engine,
        lambda _volunteer, pair: float(values[pair]),
        setup,
        query_duration=query_duration,
        candidate_duration=candidate_duration,
    )
