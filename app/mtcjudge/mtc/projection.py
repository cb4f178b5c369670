"""How many more judgments until the ranking reaches a target confidence (docs/projection.md).

The projection is a *simulated continuation* of the MTC loop. In each run the
unjudged pairs get a value drawn from the estimator's own predictive
distribution (what the engine believes about them now), and a copy of the
engine keeps judging: same selection policy, same estimator, the system-effect
offsets re-learnt after every batch as a campaign's engine does (in ``judge``). The
run records after how many further judgments each target's ranking confidence
is first reached; the projection reports the median and the 10th/90th
percentiles over runs.

The drawn values respect the scale: on BROAD a distribution on {0, 1, 2} with
the estimate's mean and variance, on FINE a beta distribution on [0, 100] with
that mean and variance. With the system-effect engine
(:class:`mtcjudge.mtc.joint.SystemEffectEngine`) every run also draws one
offset per system from its posterior and gives the unjudged pairs the smallest
shifts that move each system's score by its own offset, so the simulated
judgments carry the between-system spread the engine's confidence accounts for
(from the engine's minimum number of judgments on, when it starts trusting it).

Batches grow with the simulated judgments (a share ``resolution`` of them,
never fewer than ``batch``) so a run costs ``O(log n)`` engine steps; the count
at which a target is crossed is interpolated within the batch that crossed it.
docs/projection.md has the measured accuracy (good at 0.99, poor at 0.95, where
the first crossing of a nearly flat confidence curve depends on the exact path).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.sparse import coo_matrix

from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.measures import inverse_denominators

__all__ = ["Projection", "TargetProjection", "draw_unjudged", "project"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.intp]

#: percentiles of the reported range
LOW_PERCENTILE, HIGH_PERCENTILE = 10.0, 90.0
#: runs always completed, whatever the time budget
MIN_RUNS = 2
#: default batch growth (share of the run's judgments so far) ...
BASE_RESOLUTION = 0.05
#: ... up to this many retrieved results; larger collections get proportionally larger
#: batches (a step costs about one pass over the results), at most MAX_RESOLUTION
RESOLUTION_ENTRIES = 50_000
MAX_RESOLUTION = 0.5
#: a simulated batch touching more queries than this re-estimates everything at once
#: (one pass) instead of updating query by query
BULK_QUERIES = 8


@dataclass(frozen=True)
class TargetProjection:
    """Further judgments needed to reach one target ranking confidence.

    Attributes
    ----------
    target : float
    reached : bool
        The target is met now: the ranking confidence is at least ``target`` and the
        engine's minimum number of judgments is done (or nothing is left to judge).
    judgments_median : int or None
        Further judged pairs needed, median over the simulated runs (0 when reached);
        None when most runs did not reach the target within the pool.
    judgments_low, judgments_high : int or None
        10th and 90th percentiles over the runs (None as above).
    runs_reached : int
        Runs that reached the target.
    """

    target: float
    reached: bool
    judgments_median: int | None
    judgments_low: int | None
    judgments_high: int | None
    runs_reached: int = 0


@dataclass(frozen=True)
class Projection:
    """Projections for several targets from the same simulated runs.

    Attributes
    ----------
    targets : tuple of TargetProjection
        In the order the targets were given.
    runs : int
        Simulated runs done (at least 2; fewer than asked when the time ran out).
    method : str
        One line saying how the numbers were obtained.
    judged : int
        Judged pairs when the projection was made.
    ranking_confidence : float
        Ranking confidence when the projection was made.
    seconds : float
        Time the projection took.
    """

    targets: tuple[TargetProjection, ...]
    runs: int
    method: str
    judged: int = 0
    ranking_confidence: float = 0.0
    seconds: float = 0.0

    def for_target(self, target: float) -> TargetProjection:
        """The projection of ``target`` (ValueError if it was not asked for)."""
        for t in self.targets:
            if abs(t.target - target) < 1e-12:
                return t
        raise ValueError(f"no projection for target {target}")


def _check(targets: Sequence[float], runs: int, max_seconds: float | None, batch: int) -> None:
    if len(targets) == 0:
        raise ValueError("at least one target is needed")
    for t in targets:
        if not 0.5 <= float(t) <= 1.0:
            raise ValueError(f"a target confidence must be in [0.5, 1], found {t}")
    if runs < MIN_RUNS:
        raise ValueError(f"runs must be at least {MIN_RUNS}, found {runs}")
    if max_seconds is not None and not max_seconds > 0:
        raise ValueError(f"max_seconds must be positive (or None), found {max_seconds}")
    if batch < 1:
        raise ValueError(f"batch must be at least 1, found {batch}")


def _met(engine: MTCEngine, confidence: float, target: float) -> bool:
    """The stopping rule at ``target``: confidence reached after the minimum judgments."""
    if engine.n_unjudged == 0:
        return True
    return engine.n_judged >= engine.config.min_judgments and confidence >= target


# ------------------------------------------------------------------ predictive draws
def _system_shift(engine: MTCEngine, rng: np.random.Generator) -> FloatArray:
    """Per pair, a shift that moves every system's score by its drawn offset.

    The system-effect engine claims that system A's score is off by ``f_A b_A`` with
    ``b_A ~ N(E[b_A], Var[b_A])`` independent across systems
    (app/mtcjudge/mtc/joint.py, effects.py).
    One offset is drawn per system, and the unjudged pairs get the smallest shifts
    (least squares) whose coefficient-weighted average over A's unjudged results is
    ``b_A`` for every A, so the drawn scores carry exactly that between-system spread.
    Zero for an engine without system offsets.
    """
    c = engine.collection
    offsets = engine.offsets
    if offsets is None:
        return np.zeros(c.n_pairs)
    effect = offsets.system
    # before its minimum of judgments the engine does not trust its confidence, whose offsets
    # rest on a handful of residuals (tau^2 swings from 0 to hundreds): neither do the draws
    if effect.tau2 <= 0 or engine.n_judged < engine.config.min_judgments:
        return np.zeros(c.n_pairs)
    drawn = np.sqrt(effect.post_var) * rng.standard_normal(c.n_systems) + effect.bias
    # w[A, p]: weight of unjudged pair p in A's score (its share of f_A)
    open_entry = ~engine.judged[c.entry_pair]
    weight = engine.coef * inverse_denominators(engine.ey)[c.pair_query[c.entry_pair]] * open_entry
    w = coo_matrix(
        (weight[open_entry], (c.entry_system[open_entry], c.entry_pair[open_entry])),
        shape=(c.n_systems, c.n_pairs),
    ).tocsr()
    mass = np.asarray(w.sum(axis=1)).ravel()
    gram = (w @ w.T).toarray()
    # minimum-norm shifts s with W s = mass * b: s = W^T lambda, (W W^T) lambda = mass * b
    lam = np.linalg.lstsq(gram, mass * drawn, rcond=None)[0]
    return np.asarray(w.T @ lam, dtype=np.float64)


def draw_unjudged(engine: MTCEngine, rng: np.random.Generator) -> FloatArray:
    """One draw of every pool pair's value from the engine's predictive distribution.

    Judged pairs keep their value. An unjudged pair with estimate (E, V) gets, on a
    scale with values 0..L: on BROAD (L = 2) the distribution on {0, 1, 2} with mean E
    and variance V; otherwise a beta distribution scaled to [0, L] with mean E and
    variance V (V is capped at 95 % of the largest variance a distribution on [0, L]
    with mean E can have). With error offsets (:attr:`MTCEngine.offsets`) the mean
    first moves by the average drawn offset of the systems retrieving the pair.

    Parameters
    ----------
    engine : MTCEngine
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (n_pairs,)
        Values on the engine's scale.
    """
    lmax = float(engine.scale.lmax)
    out = engine.values.copy()
    open_ = ~engine.judged
    if not open_.any():
        return out
    shift = _system_shift(engine, rng)[open_]
    eps = 1e-6 * lmax
    mean = np.clip(engine.mean[open_] + shift, eps, lmax - eps)
    var = np.minimum(np.maximum(engine.var[open_], 0.0), 0.95 * mean * (lmax - mean))
    if engine.scale.name == "broad":
        # P(2) = (E[R^2] - E) / 2, P(1) = E - 2 P(2) on {0, 1, 2}; clipped to a distribution
        second = var + mean**2
        p2 = np.clip((second - mean) / 2.0, 0.0, 1.0)
        p1 = np.clip(mean - 2.0 * p2, 0.0, 1.0 - p2)
        u = rng.random(mean.shape[0])
        out[open_] = np.where(u < p2, 2.0, np.where(u < p2 + p1, 1.0, 0.0))
        return out
    m = mean / lmax
    v = var / lmax**2
    zero = v <= 1e-12
    common = np.where(zero, 1.0, m * (1.0 - m) / np.where(zero, 1.0, v) - 1.0)
    a = np.maximum(m * common, 1e-3)
    b = np.maximum((1.0 - m) * common, 1e-3)
    drawn = rng.beta(a, b) * lmax
    out[open_] = np.clip(np.where(zero, mean, drawn), 0.0, lmax)
    return out


# ------------------------------------------------------------------ one run
def default_resolution(engine: MTCEngine) -> float:
    """Batch growth of the simulated runs: 5 %, more on collections of over 50,000 results.

    A simulated step costs about one pass over the retrieved results, and a run takes
    ``O(log(n) / resolution)`` steps: the share grows with the number of results so that a
    run of a 100 systems x 1,000 queries x k = 10 campaign stays at a few dozen steps.
    """
    entries = engine.collection.entry_pair.shape[0]
    return float(min(MAX_RESOLUTION, BASE_RESOLUTION * max(1.0, entries / RESOLUTION_ENTRIES)))


def _judge(sim: MTCEngine, pairs: IntArray, values: FloatArray) -> None:
    """``sim.judge``; a batch over many queries re-estimates in one pass (and re-learns).

    Updating query by query costs ``O(n_systems^2 * pool_q)`` per query touched, so a wide
    batch is cheaper as one re-estimate and rebuild, which gives the same statistics.
    """
    queries = np.unique(sim.collection.pair_query[pairs])
    if queries.shape[0] > BULK_QUERIES:
        new = ~sim.judged[pairs]
        sim.judged[pairs] = True
        sim.values[pairs] = values
        sim.n_judged += int(new.sum())
        sim.reestimate()
        sim.learn_from_judgments()
    else:
        sim.judge(pairs, values)


def _offsets_text(engine: MTCEngine) -> str:
    """What the simulated continuations learn besides the estimates, for the method line."""
    offsets = engine.offsets
    if offsets is None:
        return ""
    if offsets.shared_by:
        shared = ", ".join(["system", *offsets.shared_by])
        return f" and the error offsets shared by pairs of a {shared}"
    return " and per-system offsets"


def _copy_engine(engine: MTCEngine, rng: np.random.Generator) -> MTCEngine:
    """A copy that judging does not propagate back (collection and model shared, read only)."""
    memo: dict[int, object] = {
        id(engine.collection): engine.collection,
        id(engine.model): engine.model,
    }
    clone = copy.deepcopy(engine, memo)
    clone.rng = rng
    return clone


def _simulate(
    engine: MTCEngine,
    targets: FloatArray,
    rng: np.random.Generator,
    batch: int,
    resolution: float,
    judgeable: BoolArray | None = None,
) -> FloatArray:
    """Further judgments at which each target is first met in one simulated run (inf: never);
    only ``judgeable`` pairs (all by default) are judged."""
    sim = _copy_engine(engine, rng)
    truth = draw_unjudged(sim, rng)
    start = sim.n_judged
    found = np.full(targets.shape[0], np.inf)
    confidence = sim.ranking_confidence()
    for i, t in enumerate(targets):
        if _met(sim, confidence, float(t)):
            found[i] = 0.0

    def open_pairs() -> BoolArray | None:
        return None if judgeable is None else judgeable & ~sim.judged

    def left() -> int:
        still = open_pairs()
        return sim.n_unjudged if still is None else int(np.count_nonzero(still))

    while np.isinf(found).any() and left() > 0:
        done = sim.n_judged - start
        size = max(batch, math.ceil(resolution * done))
        pairs = sim.select(min(size, left()), candidates=open_pairs())
        if pairs.size == 0:
            break
        before, previous = done, confidence
        _judge(sim, pairs, truth[pairs])
        confidence = sim.ranking_confidence()
        after = sim.n_judged - start
        floor = max(before + 1, sim.config.min_judgments - start)
        for i, t in enumerate(targets):
            if np.isinf(found[i]) and _met(sim, confidence, float(t)):
                found[i] = _crossing(before, after, previous, confidence, float(t), floor)
    return found


def _crossing(
    before: int, after: int, c_before: float, c_after: float, target: float, floor: int
) -> float:
    """Judgment count where the confidence crosses ``target`` within one batch (linear)."""
    if after - before <= 1 or c_after <= c_before:
        return float(after)
    share = (target - c_before) / (c_after - c_before)
    at = before + math.ceil(np.clip(share, 0.0, 1.0) * (after - before))
    return float(min(after, max(at, floor)))


def _summary(values: FloatArray, target: float, reached: bool) -> TargetProjection:
    if reached:
        return TargetProjection(target, True, 0, 0, 0, int(values.shape[0]))
    finite = np.isfinite(values)
    n_reached = int(finite.sum())

    def pct(p: float) -> int | None:
        # unreached runs sort last: a percentile that falls on one is "not within the pool"
        ordered = np.sort(values)
        x = float(np.percentile(np.where(np.isfinite(ordered), ordered, 1e300), p))
        return None if x >= 1e299 else round(x)

    return TargetProjection(
        target, False, pct(50.0), pct(LOW_PERCENTILE), pct(HIGH_PERCENTILE), n_reached
    )


def _checked_scope(
    engine: MTCEngine, judgeable: ArrayLike | None, resolution: float | None
) -> tuple[BoolArray | None, float]:
    """:func:`project`'s ``judgeable`` as a mask (None: every pair) and its ``resolution``
    (:func:`default_resolution` when not given), checked."""
    mask: BoolArray | None = None
    if judgeable is not None:
        mask = np.asarray(judgeable, dtype=bool)
        if mask.shape != (engine.collection.n_pairs,):
            raise ValueError(
                f"judgeable must have shape ({engine.collection.n_pairs},), found {mask.shape}"
            )
    if resolution is None:
        resolution = default_resolution(engine)
    if not 0.0 <= resolution < 1.0:
        raise ValueError(f"resolution must be in [0, 1), found {resolution}")
    return mask, resolution


class _RunSettings(NamedTuple):
    """How many simulated runs :func:`project` makes, from which seed, until when."""

    seed: int
    runs: int
    max_seconds: float | None
    started: float


def _simulate_runs(
    snapshot: MTCEngine,
    wanted: FloatArray,
    settings: _RunSettings,
    batch: int,
    resolution: float,
    mask: BoolArray | None,
) -> list[FloatArray]:
    """The simulated runs (:func:`_simulate`), run ``i`` drawing from
    ``numpy.random.default_rng([seed, i])``; none starts once ``max_seconds`` are spent
    since ``started``, but :data:`MIN_RUNS` are always done."""
    results: list[FloatArray] = []
    for i in range(settings.runs):
        spent = time.perf_counter() - settings.started
        if i >= MIN_RUNS and settings.max_seconds is not None and spent >= settings.max_seconds:
            break
        rng = np.random.default_rng([settings.seed, i])
        results.append(_simulate(snapshot, wanted, rng, batch, resolution, mask))
    return results


def _method_line(
    engine: MTCEngine,
    done: int,
    batch: int,
    resolution: float,
    mask: BoolArray | None,
    *,
    met: bool,
) -> str:
    """:attr:`Projection.method` of ``done`` simulated runs (none needed when every target
    is ``met`` now)."""
    if met:
        return "the targets are met now: no simulation needed"
    method = (
        f"simulated continuation: {done} runs judging values drawn from the estimator's "
        f"predictive distribution with the engine's {engine.config.policy} selection"
        + _offsets_text(engine)
        + f", batches of max({batch}, {resolution:.0%} of the run's judgments)"
    )
    if mask is not None and not mask.all():
        method += f", judging only the {int(np.count_nonzero(mask))} pairs that can be played"
    return method


def project(
    engine: MTCEngine,
    targets: Sequence[float],
    *,
    runs: int = 16,
    seed: int = 0,
    max_seconds: float | None = 2.0,
    batch: int = 1,
    resolution: float | None = None,
    judgeable: ArrayLike | None = None,
) -> Projection:
    """Project the further judgments needed to reach each target ranking confidence.

    Simulated continuation (module docstring, docs/projection.md): ``runs`` copies of the
    engine judge values drawn from its predictive distribution (:func:`draw_unjudged`)
    with the engine's own selection policy until every target is met.

    Parameters
    ----------
    engine : MTCEngine
        The campaign's engine (any variant); it is not modified.
    targets : sequence of float
        Ranking confidences in [0.5, 1].
    runs : int
        Simulated runs wanted (at least 2).
    seed : int
        Run ``i`` draws from ``numpy.random.default_rng([seed, i])``: the result depends
        only on the seed, the engine and the number of runs done.
    max_seconds : float or None
        No new run starts once this much time is spent (2 runs are always done); None:
        all ``runs``, fully reproducible.
    batch : int
        Pairs the campaign judges between two selections (its concurrent assessors);
        the smallest simulated batch.
    resolution : float, optional
        Simulated batches hold this share of the run's judgments so far (at least
        ``batch``), so a run takes ``O(log n)`` steps; by default
        :func:`default_resolution` (5 %, more above 50,000 retrieved results).
    judgeable : array_like of bool, shape (n_pairs,), optional
        The pairs the campaign can have judged (both clips playable); the simulated runs
        judge only those, and a target they cannot reach is not reached. By default every
        pair.

    Returns
    -------
    Projection

    Examples
    --------
    >>> p = project(engine, [0.90, 0.95, 0.99])          # doctest: +SKIP
    >>> p.for_target(0.95).judgments_median               # doctest: +SKIP
    412
    """
    _check(targets, runs, max_seconds, batch)
    mask, resolution = _checked_scope(engine, judgeable, resolution)
    started = time.perf_counter()
    wanted = np.asarray([float(t) for t in targets], dtype=np.float64)
    # one snapshot: every run starts from the same state even if the caller's engine moves on
    snapshot = _copy_engine(engine, np.random.default_rng(seed))
    confidence = snapshot.ranking_confidence()
    reached = [_met(snapshot, confidence, float(t)) for t in wanted]
    results: list[FloatArray] = []
    if not all(reached):
        settings = _RunSettings(seed, runs, max_seconds, started)
        results = _simulate_runs(snapshot, wanted, settings, batch, resolution, mask)
    table = np.array(results) if results else np.zeros((0, wanted.shape[0]))
    projections = tuple(_summary(table[:, j], float(t), reached[j]) for j, t in enumerate(wanted))
    done = len(results)
    method = _method_line(engine, done, batch, resolution, mask, met=all(reached))
    return Projection(
        targets=projections,
        runs=done,
        method=method,
        judged=snapshot.n_judged,
        ranking_confidence=float(confidence),
        seconds=time.perf_counter() - started,
    )
