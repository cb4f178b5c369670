"""What stale selection costs: concurrent assessors fed by a periodic planner.

In the allocation design of the web app a background *planner* owns a campaign's
engine: every tick it reads the judgments submitted since the last tick, updates
the engine and stores the ``M`` best pairs in the engine's selection order with
their weights. An assessor's ``next`` request claims the best *free* pair of that
stored plan (not judged, not leased to someone else), preferring the query it was
on when that query's best free pair weighs at least ``locality`` times the best
free pair (the rule of :func:`mtcjudge.mtc.selection.best_pairs`). Selection is stale
twice over: ``W`` assessors hold ``W`` pairs while they listen, and the plan only
knows the judgments submitted before the last tick.

:func:`sequential` is the reference: one assessor, the plan recomputed after
every judgment (``engine.select(1, prefer_query=...)``). :func:`simulate` is a
deterministic discrete-event simulation of ``W`` assessors and a planner ticking
every ``T`` seconds (``T = 0``: re-plan after every submission). Both judge with
the true values of a completely judged collection, build the engine as a
campaign does (:func:`engine_for_settings`) and stop when the engine's stopping rule
holds; the simulation notices it only at a tick, so judgments submitted between
the moment it holds and that tick count as work done.

Remedies (``SimConfig.remedy``):

``"inflight"``
    The planner treats every leased pair as judged at its current expected value
    (variance 0, the offsets not re-learnt) before it ranks the pairs, so the plan values
    what the in-flight judgments will not already tell it ("kriging believer" in
    batch Bayesian optimisation).
``"spread"``
    Claim-time rule: a free pair is skipped while another assessor listens to a
    pair of the same query, unless nothing else is free (the assessor's own query
    stays preferred by the locality rule).
"""

from __future__ import annotations

import copy
import heapq
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import kendalltau

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, engine_for_settings
from mtcjudge.mtc.measures import evaluate
from mtcjudge.mtc.replay import sign_accuracy
from mtcjudge.mtc.scales import Scale
from mtcjudge.mtc.selection import _order_candidates, best_pairs

__all__ = [
    "REMEDIES",
    "RunResult",
    "SimConfig",
    "plan_size",
    "sequential",
    "simulate",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
REMEDIES = ("none", "inflight", "spread")


def _feed(engine: MTCEngine, pairs: list[int], truth: FloatArray) -> None:
    """Apply judgments as the campaign's engine cache does."""
    if pairs:
        p = np.asarray(pairs, dtype=np.intp)
        engine.judge(p, truth[p])


def plan_size(assessors: int) -> int:
    """Pairs the planner stores: ``max(64, 4 W)``."""
    return max(64, 4 * assessors)


@dataclass(frozen=True)
class SimConfig:
    """One concurrent setting.

    Attributes
    ----------
    assessors : int
        ``W``, assessors judging at once.
    tick : float
        Seconds between two planner runs; 0 re-plans after every submission.
    plan : int or None
        Pairs in the stored plan (None: :func:`plan_size`).
    listen : (float, float)
        A judgment takes a time drawn uniformly from this range (seconds).
    arrival : float
        Assessors arrive uniformly over ``[0, arrival)`` seconds.
    seed : int
        Seeds the arrival and listening times.
    remedy : {"none", "inflight", "spread"}
        See the module docstring.
    max_judgments : int or None
        Give up after this many submitted judgments.
    jitter : float
        Multiply the weights by ``1 + jitter * u`` (``u`` uniform in [-1, 1]) at every
        plan, as :func:`sequential` does: samples the path noise of one assessor.
    """

    assessors: int = 10
    tick: float = 2.0
    plan: int | None = None
    listen: tuple[float, float] = (20.0, 60.0)
    arrival: float = 60.0
    seed: int = 0
    remedy: str = "none"
    max_judgments: int | None = None
    jitter: float = 0.0

    def __post_init__(self) -> None:
        if self.assessors < 1:
            raise ValueError(f"assessors must be at least 1, found {self.assessors}")
        if self.tick < 0:
            raise ValueError(f"tick must be >= 0, found {self.tick}")
        if self.plan is not None and self.plan < 1:
            raise ValueError(f"plan must be at least 1, found {self.plan}")
        low, high = self.listen
        if not 0 < low <= high:
            raise ValueError(f"listen must be a range 0 < low <= high, found {self.listen}")
        if self.arrival < 0:
            raise ValueError(f"arrival must be >= 0, found {self.arrival}")
        if self.jitter < 0:
            raise ValueError(f"jitter must be >= 0, found {self.jitter}")
        if self.remedy not in REMEDIES:
            raise ValueError(f"unknown remedy {self.remedy!r}: expected one of {REMEDIES}")

    @property
    def plan_size(self) -> int:
        return self.plan if self.plan is not None else plan_size(self.assessors)


@dataclass(frozen=True)
class RunResult:
    """Effort and outcome of one run.

    ``judgments`` counts every judgment submitted up to the moment the stop was
    noticed; ``abandoned`` the pairs still being listened to then (their work is
    lost, not counted). ``hours`` is the simulated campaign duration (0 for the
    sequential reference, which has no clock).
    """

    judgments: int
    abandoned: int
    confidence: float
    accuracy: float
    kendall_tau: float
    stop_reason: str
    plans: int
    hours: float
    seconds: float
    order: tuple[int, ...]
    fallbacks: int = 0

    def summary(self) -> dict[str, object]:
        return {
            "judgments": self.judgments,
            "abandoned": self.abandoned,
            "confidence": self.confidence,
            "accuracy": self.accuracy,
            "kendall_tau": self.kendall_tau,
            "stop_reason": self.stop_reason,
            "plans": self.plans,
            "hours": self.hours,
            "seconds": self.seconds,
            "fallbacks": self.fallbacks,
        }


def _truth_means(
    collection: Collection, truth: FloatArray, scale: Scale, config: EngineConfig
) -> FloatArray:
    ev = evaluate(
        collection,
        truth,
        np.zeros_like(truth),
        config.measure,
        scale,
        rbp_p=config.rbp_p,
        distribution=config.distribution,
    )
    return ev.mean


def _tau(estimated: FloatArray, true_means: FloatArray) -> float:
    if np.ptp(estimated) == 0 or np.ptp(true_means) == 0:
        return 0.0
    return float(kendalltau(estimated, true_means).statistic)


def _result(
    engine: MTCEngine,
    true_means: FloatArray,
    reason: str,
    order: list[int],
    *,
    abandoned: int,
    plans: int,
    hours: float,
    started: float,
    fallbacks: int = 0,
) -> RunResult:
    ev = engine.evaluation()
    return RunResult(
        judgments=len(order),
        abandoned=abandoned,
        confidence=float(ev.ranking_confidence),
        accuracy=sign_accuracy(ev.mean, true_means),
        kendall_tau=_tau(ev.mean, true_means),
        stop_reason=reason,
        plans=plans,
        hours=hours,
        seconds=time.perf_counter() - started,
        order=tuple(order),
        fallbacks=fallbacks,
    )


def sequential(
    collection: Collection,
    metadata: Metadata | None,
    truth: FloatArray,
    scale: Scale,
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    locality: bool = True,
    jitter: float = 0.0,
    seed: int = 0,
    max_judgments: int | None = None,
    measure: str = "cg",
) -> RunResult:
    """One assessor, the engine consulted after every judgment.

    With ``locality`` the assessor's previous query is preferred as the app does
    (``select(1, prefer_query=...)``); without it this is the plain replay loop.
    ``jitter`` > 0 multiplies every selection weight by ``1 + jitter * u`` with
    ``u`` uniform in [-1, 1] (seeded by ``seed``) before each choice: near-ties
    then fall differently, which measures how far the count moves when the path
    changes for no good reason.
    """
    started = time.perf_counter()
    truth = scale.check_values(truth, "true judgment")
    engine, _ = engine_for_settings(collection, metadata, scale, estimator, measure=measure)
    true_means = _truth_means(collection, truth, scale, engine.config)
    limit = collection.n_pairs if max_judgments is None else max_judgments
    order: list[int] = []
    previous: int | None = None
    reason = engine.stop_reason()
    rng = _jitter_rng(seed)
    prefer = engine.config.locality
    while reason is None and len(order) < limit:
        if jitter > 0:
            w = engine.weights() * (1.0 + jitter * rng.uniform(-1.0, 1.0, collection.n_pairs))
            picked = best_pairs(
                w,
                ~engine.judged,
                engine.var,
                collection.mean_rank,
                collection.pair_query,
                1,
                prefer_query=previous if locality else None,
                locality=prefer,
                stored=engine.stored_over(w, ~engine.judged),
            )
        else:
            picked = engine.select(1, prefer_query=previous if locality else None)
        p = int(picked[0])
        previous = int(collection.pair_query[p])
        order.append(p)
        _feed(engine, [p], truth)
        reason = engine.stop_reason()
    return _result(
        engine,
        true_means,
        reason or "max_judgments",
        order,
        abandoned=0,
        plans=len(order) + 1,
        hours=0.0,
        started=started,
    )


def _jitter_rng(seed: int) -> np.random.Generator:
    """The weight-jitter stream of a seed (the same in :func:`sequential` and :func:`simulate`)."""
    return np.random.default_rng([seed, 1])


class _Planner:
    """The stored plan: every unjudged pair in selection order, and its weights."""

    def __init__(
        self,
        engine: MTCEngine,
        model: RelevanceModel,
        truth: FloatArray,
        jitter: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.engine = engine
        self.model = model
        self.truth = truth
        self.jitter = jitter
        self.rng = _jitter_rng(seed)
        self.order: IntArray = np.empty(0, dtype=np.intp)
        self.weights: FloatArray = np.empty(0)
        self.plans = 0

    def feed(self, pairs: list[int]) -> None:
        _feed(self.engine, pairs, self.truth)

    def replan(self, leased: NDArray[np.bool_] | None = None) -> None:
        """Rank the unjudged pairs; with ``leased``, as if those were judged at their mean."""
        self.plans += 1
        engine = self.engine
        if leased is not None and leased.any():
            c = engine.collection
            # the collection, the model and the co-retrieval index are shared, not copied
            memo = {id(c): c, id(self.model): self.model, id(engine.model): engine.model}
            if engine._co is not None:
                memo[id(engine._co)] = engine._co
            believer = copy.deepcopy(engine, memo)
            pairs = np.flatnonzero(leased & ~engine.judged)
            # pretended judgments at the estimates: nothing to learn from them
            believer.record(pairs, engine.scale.check_values(engine.mean[pairs]))
            engine = believer
        w = engine.weights()
        if self.jitter > 0:
            w = w * (1.0 + self.jitter * self.rng.uniform(-1.0, 1.0, w.shape[0]))
        candidates = np.flatnonzero(~engine.judged)
        self.order = _order_candidates(w, candidates, engine.var, engine.collection.mean_rank)
        # as the app's planner stores them: the audit's pairs at the best real weight
        self.weights = engine.stored_over(w, ~engine.judged)


def _claim(
    planner: _Planner,
    size: int,
    free: NDArray[np.bool_],
    pair_query: IntArray,
    previous: int | None,
    locality: float,
    busy_queries: NDArray[np.bool_] | None,
) -> tuple[int | None, bool]:
    """The pair an assessor claims from the stored plan (None: nothing is free), and
    whether the stored plan was used up (the claim fell back to the full order)."""
    order = planner.order
    top = order[:size]
    options = top[free[top]]
    fallback = options.size == 0
    if fallback:  # the stored plan is used up: the full order of the last plan
        options = order[free[order]]
    if options.size == 0:
        return None, fallback
    if busy_queries is not None:
        quiet = options[~busy_queries[pair_query[options]] | (pair_query[options] == previous)]
        if quiet.size:
            options = quiet
    best = int(options[0])
    if previous is not None and int(pair_query[best]) != previous:
        own = options[pair_query[options] == previous]
        if own.size and planner.weights[own[0]] >= locality * planner.weights[best]:
            return int(own[0]), fallback
    return best, fallback


def simulate(
    collection: Collection,
    metadata: Metadata | None,
    truth: FloatArray,
    scale: Scale,
    config: SimConfig,
    estimator: str = DEFAULT_ESTIMATOR,
    *,
    measure: str = "cg",
) -> RunResult:
    """Discrete-event simulation of ``config.assessors`` assessors and a ticking planner.

    Events are processed in time order; a tick and a submission at the same instant
    are processed tick first. At a tick with new submissions the planner feeds them
    to the engine, checks the stopping rule (the campaign closes there) and ranks the
    pairs again; a tick with nothing new keeps the plan (with the ``inflight``
    remedy it also re-plans when the leases changed). After submitting, an assessor
    claims its next pair at once from the stored plan.
    """
    return _Simulation(collection, metadata, truth, scale, config, estimator, measure).run()


class _Simulation:
    """The state of one :func:`simulate` run: the engine and its planner, the leases, the
    assessors and the event queue."""

    def __init__(
        self,
        collection: Collection,
        metadata: Metadata | None,
        truth: FloatArray,
        scale: Scale,
        config: SimConfig,
        estimator: str,
        measure: str,
    ) -> None:
        self.started = time.perf_counter()
        truth = scale.check_values(truth, "true judgment")
        engine, model = engine_for_settings(collection, metadata, scale, estimator, measure=measure)
        self.engine = engine
        self.true_means = _truth_means(collection, truth, scale, engine.config)
        self.config = config
        self.pair_query = collection.pair_query
        self.rng = np.random.default_rng(config.seed)
        self.limit = collection.n_pairs if config.max_judgments is None else config.max_judgments
        self.believe = config.remedy == "inflight"
        self.planner = _Planner(engine, model, truth, config.jitter, config.seed)
        self.free = np.ones(collection.n_pairs, dtype=bool)  # neither judged nor leased
        self.leased = np.zeros(collection.n_pairs, dtype=bool)
        self.busy = np.zeros(collection.n_queries, dtype=np.intp)  # in-flight pairs per query
        self.previous: list[int | None] = [None] * config.assessors
        self.holding = [-1] * config.assessors
        self.order: list[int] = []
        self.pending: list[int] = []
        self.lease_changed = False
        self.fallbacks = 0
        # (time, sequence, assessor): a request (arrival) or a submission of holding[assessor]
        self.events: list[tuple[float, int, int]] = []
        self.seq = 0
        for a in range(config.assessors):
            arrive = float(self.rng.uniform(0.0, config.arrival)) if config.arrival > 0 else 0.0
            self.events.append((arrive, self.seq, a))
            self.seq += 1
        heapq.heapify(self.events)

    def close(self, reason: str, now: float) -> RunResult:
        return _result(
            self.engine,
            self.true_means,
            reason,
            self.order,
            abandoned=int(self.leased.sum()),
            plans=self.planner.plans,
            hours=now / 3600.0,
            started=self.started,
            fallbacks=self.fallbacks,
        )

    def absorb(self, now: float) -> RunResult | None:
        """Feed the pending judgments, stop if the rule holds, else re-plan."""
        self.planner.feed(self.pending)
        self.pending = []
        reason = self.engine.stop_reason()
        if reason is not None:
            return self.close(reason, now)
        if len(self.order) >= self.limit:
            return self.close("max_judgments", now)
        self.planner.replan(self.leased if self.believe else None)
        self.lease_changed = False
        return None

    def run(self) -> RunResult:
        """The events in time order until the campaign closes (module docstring)."""
        reason = self.engine.stop_reason()
        if reason is not None:
            return self.close(reason, 0.0)
        self.planner.replan(self.leased if self.believe else None)
        tick = self.config.tick
        next_tick = tick if tick > 0 else float("inf")
        now = 0.0
        while True:
            if tick > 0 and (not self.events or next_tick <= self.events[0][0]):
                if not self.events and not self.pending:
                    return self.close("no free pair", now)
                now = next_tick
                next_tick += tick
                if self.pending:
                    if (finished := self.absorb(now)) is not None:
                        return finished
                elif self.believe and self.lease_changed:
                    self.planner.replan(self.leased)
                    self.lease_changed = False
                continue
            if not self.events:
                return self.close("no free pair", now)
            now, _, a = heapq.heappop(self.events)
            if self.holding[a] >= 0:  # submission
                self.submit(a)
                if tick == 0 and (finished := self.absorb(now)) is not None:
                    return finished
            self.claim(a, now)

    def submit(self, a: int) -> None:
        """Assessor ``a`` submits the pair they hold."""
        p = self.holding[a]
        self.holding[a] = -1
        self.leased[p] = False
        self.busy[self.pair_query[p]] -= 1
        self.order.append(p)
        self.pending.append(p)
        self.lease_changed = True

    def claim(self, a: int, now: float) -> None:
        """Assessor ``a`` claims their next pair from the stored plan (or leaves when nothing
        is free), and their submission of it joins the events."""
        config = self.config
        nxt, fell_back = _claim(
            self.planner,
            config.plan_size,
            self.free,
            self.pair_query,
            self.previous[a],
            self.engine.config.locality,
            self.busy > 0 if config.remedy == "spread" else None,
        )
        self.fallbacks += fell_back and nxt is not None
        if nxt is None:
            return  # nothing free: the assessor leaves
        self.free[nxt] = False
        self.leased[nxt] = True
        self.busy[self.pair_query[nxt]] += 1
        self.holding[a] = nxt
        self.previous[a] = int(self.pair_query[nxt])
        self.lease_changed = True
        low, high = config.listen
        heapq.heappush(self.events, (now + float(self.rng.uniform(low, high)), self.seq, a))
        self.seq += 1
