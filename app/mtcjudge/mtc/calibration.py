"""Honest ranking confidence: a system-level error term for the relevance estimators.

Why the ordinal models are over-confident (docs/replay-mirex2011.md)
-------------------------------------------------------------------
The MTC measures treat the estimation errors ``r_d - E[R_d]`` of different
documents as independent. Per document the published M_out is well calibrated
on MIREX 2011 (mean squared standardised residual 1.07), but the errors of the
documents one *system* retrieves are not independent: a system that finds
better (or worse) clips than the features fSYS, OV, fART, sGEN and fGEN
suggest has residuals of one sign on most of its 500 results. Averaged over
the results, independent errors cancel and this shared part does not, so the
error of a system's score is about three times the claimed standard deviation.

The model
---------
Every unjudged entry (result of system A for query q, document d) carries an
offset ``b_A`` common to the system::

    r_d - E[R_d] = b_A + e_d,   e_d ~ (0, V_d) independent,   b_A ~ N(mu, tau^2) iid.

``b_A`` is learnt from the residuals of the predictions made *before* each
judgment (so they are honest out-of-sample errors). With ``m_A`` the
precision-weighted mean residual over the judged entries of A and ``s_A^2`` its
sampling variance, ``tau^2`` is the DerSimonian-Laird moment estimate, pooled
with a prior guess ``tau0^2`` worth ``prior_weight`` systems, and ``b_A`` has
the empirical-Bayes (BLUP) posterior::

    E[b_A | data]   = mu + (m_A - mu) * tau^2 / (tau^2 + s_A^2)
    Var[b_A | data] = tau^2 * s_A^2 / (tau^2 + s_A^2)            (= tau^2 with no data)

In score space the offset enters through the coefficient mass that is still
estimated: ``f_A = (1/n_Q) sum_q sum_{unjudged entries (A,q,d)} c_A(d) / E[Y_q]``.
The system's expected score moves by ``f_A E[b_A]`` and its variance grows by
``f_A^2 Var[b_A]``; the offsets of different systems are independent, so the
variance of a difference grows by ``f_A^2 Var[b_A] + f_B^2 Var[b_B]``.
Judging A's documents shrinks both ``f_A`` and ``Var[b_A]``.

:class:`SystemEffectEngine` applies this to :class:`mtcjudge.mtc.engine.MTCEngine`
without changing it: it overrides ``evaluation()``, which the stopping rule and
the confidence-weighted selection read, and the engine's variant hooks
(``recalibrate()`` after judgments, ``system_tau2``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import ESTIMATOR_KINDS, RelevanceModel
from mtcjudge.mtc.measures import Evaluation, finish, inverse_denominators
from mtcjudge.mtc.scales import Scale

#: the estimator of the system-effect configuration: ordinal M_out (no M_jud) whose score
#: distributions include per-system error offsets learnt from the judgments
CALIBRATED = "calibrated"
#: the joint error model: ``calibrated`` plus offsets of each system's shared and unshared
#: results, offsets shared by the pairs of a query, of an artist and of a (query genre,
#: document genre) cell, and a common variance factor, all learnt from the judgments
#: (docs/method.md §8)
JOINT = "joint"
#: every estimator a campaign or a replay can name
ESTIMATOR_CHOICES = (*ESTIMATOR_KINDS, CALIBRATED, JOINT)
#: the estimator of a new campaign and of ``mtcjudge simulate`` without ``--model``: one
#: default, so that a replay shows what a campaign would do (docs/calibration.md measures it)
DEFAULT_ESTIMATOR = JOINT
#: ``joint`` gives one judgment in this many to the audit: a random pair among those left
#: unjudged, from whose judgments alone it learns its variance factor (docs/method.md §8.2)
AUDIT_EVERY = 20
#: the seed of the random order of the pool the audit draws in: the same in every process
_AUDIT_SEED = 20261125

__all__ = [
    "DEFAULT_ESTIMATOR",
    "JOINT",
    "ResidualLog",
    "SystemEffect",
    "SystemEffectEngine",
    "campaign_engine",
    "dersimonian_laird",
    "estimate_system_effect",
    "source_variance_factors",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True)
class SystemEffect:
    """Posterior of the per-system offsets ``b_A`` (relevance units).

    Attributes
    ----------
    tau2 : float
        Between-system variance used (after pooling with the prior).
    tau2_data : float
        DerSimonian-Laird estimate from the residuals alone (0 when too few).
    mu : float
        Common mean of the offsets.
    bias, post_var : ndarray of shape (n_systems,)
        ``E[b_A | data]`` and ``Var[b_A | data]``.
    n_entries : ndarray of shape (n_systems,)
        Judged entries behind each system's estimate.
    """

    tau2: float
    tau2_data: float
    mu: float
    bias: FloatArray
    post_var: FloatArray
    n_entries: FloatArray
    #: factor on every estimation variance, learnt from the judged residuals (1: as modelled)
    variance_scale: float = 1.0

    @classmethod
    def none(cls, n_systems: int) -> SystemEffect:
        """No system effect at all (the independence assumption of [T])."""
        z = np.zeros(n_systems)
        return cls(0.0, 0.0, 0.0, z, z.copy(), z.copy())


def dersimonian_laird(means: ArrayLike, variances: ArrayLike) -> tuple[float, float]:
    """Between-group variance and pooled mean of group means with known variances.

    The DerSimonian-Laird moment estimate of statsmodels' meta-analysis module:
    ``Q = sum_i w_i (m_i - m_w)^2`` with ``w_i = 1/s_i^2``;
    ``tau^2 = max(0, (Q - (K - 1)) / (sum w - sum w^2 / sum w))``. Groups with an
    infinite or non-positive variance are ignored. Returns ``(tau2, mu)`` where
    ``mu`` is the random-effects weighted mean ``sum m_i/(s_i^2+tau^2) /
    sum 1/(s_i^2+tau^2)`` (0 and 0 with fewer than two groups).
    """
    # imported here: statsmodels takes most of a second to load, and the web app and the
    # command line import this module for its constants. ``_fit_tau_mm`` is the moment
    # step that ``combine_effects(method_re="dl")`` runs; called alone it skips the
    # confidence intervals and tables we do not use (0.06 ms instead of 0.2-0.4 ms, four
    # calls per loop iteration of ``joint``). tests/mtc/test_calibration.py checks it
    # against ``combine_effects`` so that a change in statsmodels is caught.
    from statsmodels.stats.meta_analysis import _fit_tau_mm

    m = np.asarray(means, dtype=np.float64)
    s2 = np.asarray(variances, dtype=np.float64)
    ok = np.isfinite(m) & np.isfinite(s2) & (s2 > 0)
    m, s2 = m[ok], s2[ok]
    if m.shape[0] < 2:
        return 0.0, float(m[0]) if m.shape[0] else 0.0
    w = 1.0 / s2
    # weights so unequal that sum w - sum w^2 / sum w rounds to 0 leave tau^2 undefined: 0
    with np.errstate(divide="ignore", invalid="ignore"):
        tau2 = float(_fit_tau_mm(m, s2, w))
    if np.isfinite(tau2) and tau2 > 0:
        w = 1.0 / (s2 + tau2)
        return tau2, float(w @ m / w.sum())
    # the moment estimate is not truncated at 0; with tau^2 = 0 the mean is the fixed-effect one
    return 0.0, float(w @ m / w.sum())


def estimate_system_effect(
    system: ArrayLike,
    residual: ArrayLike,
    variance: ArrayLike,
    n_systems: int,
    *,
    tau2_prior: float = 0.0,
    prior_weight: float = 0.0,
    min_variance: float = 1e-9,
) -> SystemEffect:
    """Empirical-Bayes posterior of the per-system offsets from judged residuals.

    Parameters
    ----------
    system : array_like of int, shape (n,)
        System of each judged entry (a document retrieved by three systems gives
        three entries with the same residual).
    residual : array_like, shape (n,)
        ``r_d - E[R_d]`` with the estimate held before the judgment.
    variance : array_like, shape (n,)
        Its predicted variance ``V_d`` (the within-system noise of the entry).
    n_systems : int
    tau2_prior : float
        Prior guess of ``tau^2`` (relevance units squared).
    prior_weight : float
        How many systems' worth of evidence the prior is worth: the ``tau^2`` used
        is ``(prior_weight * tau2_prior + (K - 1) * tau2_DL) / (prior_weight + K - 1)``
        with ``K`` the systems that have judged entries.
    min_variance : float
        Floor of ``V_d`` (a judged-looking prediction with zero variance).
    """
    sy = np.asarray(system, dtype=np.intp)
    r = np.asarray(residual, dtype=np.float64)
    v = np.maximum(np.asarray(variance, dtype=np.float64), min_variance)
    if not sy.shape == r.shape == v.shape:
        raise ValueError("system, residual and variance must have the same shape")
    if tau2_prior < 0 or prior_weight < 0:
        raise ValueError("tau2_prior and prior_weight must be non-negative")
    w = 1.0 / v
    wsum = np.bincount(sy, weights=w, minlength=n_systems)
    n = np.bincount(sy, minlength=n_systems).astype(np.float64)
    has = wsum > 0
    m = np.divide(
        np.bincount(sy, weights=w * r, minlength=n_systems),
        wsum,
        out=np.zeros(n_systems),
        where=has,
    )
    s2 = np.divide(1.0, wsum, out=np.full(n_systems, np.inf), where=has)
    tau2_dl, mu = dersimonian_laird(m[has], s2[has])
    k_eff = max(int(has.sum()) - 1, 0)
    if prior_weight + k_eff > 0:
        tau2 = (prior_weight * tau2_prior + k_eff * tau2_dl) / (prior_weight + k_eff)
    else:
        tau2 = tau2_prior
    if tau2 <= 0:
        return SystemEffect(0.0, tau2_dl, mu, np.full(n_systems, mu), np.zeros(n_systems), n)
    shrink = np.where(has, tau2 / (tau2 + np.where(has, s2, 1.0)), 0.0)
    bias = mu + shrink * (m - mu)
    post_var = np.where(has, tau2 * np.where(has, s2, 0.0) / (tau2 + np.where(has, s2, 1.0)), tau2)
    return SystemEffect(float(tau2), tau2_dl, mu, bias, post_var, n)


def source_variance_factors(
    source: ArrayLike,
    residual: ArrayLike,
    variance: ArrayLike,
    n_sources: int,
    *,
    prior: float = 20.0,
    floor: float = 1.0,
) -> FloatArray:
    """Per-source variance factor: shrunk mean squared standardised residual.

    ``factor_s = max(floor, (prior + sum z^2) / (prior + n_s))`` over the
    predictions of source ``s`` with ``z = residual / sqrt(variance)``: ``prior``
    pseudo-observations of a calibrated model (z^2 = 1) keep a few surprises from
    exploding the factor. Predictions with zero variance are skipped.
    """
    src = np.asarray(source, dtype=np.intp)
    r = np.asarray(residual, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    ok = v > 0
    z2 = np.bincount(src[ok], weights=r[ok] ** 2 / v[ok], minlength=n_sources)
    cnt = np.bincount(src[ok], minlength=n_sources).astype(np.float64)
    return np.asarray(np.maximum(floor, (prior + z2) / (prior + cnt)), dtype=np.float64)


@dataclass
class ResidualLog:
    """Residuals of the predictions held before each judgment, per entry."""

    system: list[IntArray]
    residual: list[FloatArray]
    variance: list[FloatArray]
    source: list[NDArray[np.int8]]

    @classmethod
    def empty(cls) -> ResidualLog:
        return cls([], [], [], [])

    def record(
        self,
        engine: MTCEngine,
        pairs: IntArray,
        truth: FloatArray,
        variance_factor: ArrayLike = 1.0,
    ) -> None:
        """Log the residuals of ``pairs`` (call before ``engine.judge``).

        ``variance_factor`` (scalar or one per pair) divides the engine's variance
        back to the model's own.
        """
        c = engine.collection
        pairs = np.atleast_1d(np.asarray(pairs, dtype=np.intp))
        factor = np.broadcast_to(np.asarray(variance_factor, dtype=np.float64), pairs.shape)
        for p, fac in zip(pairs, factor, strict=True):
            lo, hi = int(c.entry_start[p]), int(c.entry_start[p + 1])
            n = hi - lo
            self.system.append(c.entry_system[lo:hi])
            self.residual.append(np.full(n, float(truth[p] - engine.mean[p])))
            self.variance.append(np.full(n, float(engine.var[p]) / float(fac)))
            self.source.append(np.full(n, engine.source[p], dtype=np.int8))

    def arrays(self) -> tuple[IntArray, FloatArray, FloatArray, NDArray[np.int8]]:
        if not self.system:
            return (
                np.empty(0, dtype=np.intp),
                np.empty(0),
                np.empty(0),
                np.empty(0, dtype=np.int8),
            )
        return (
            np.concatenate(self.system),
            np.concatenate(self.residual),
            np.concatenate(self.variance),
            np.concatenate(self.source),
        )


def _entry_ranges(start: IntArray, index: IntArray) -> IntArray:
    """The entries ``start[i]:start[i + 1]`` of every ``i`` in ``index``, concatenated."""
    lo = start[index]
    counts = start[index + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.intp)
    first = np.cumsum(counts) - counts  # where each range starts in the output
    return np.asarray(np.arange(total) + np.repeat(lo - first, counts), dtype=np.intp)


def _judged_entries(collection: Collection, judged: NDArray[np.bool_]) -> IntArray:
    """Indices of the entries of the judged pairs, in entry order: the entries are sorted by
    pair, so this is ``numpy.flatnonzero(judged[collection.entry_pair])`` without a pass over
    every entry."""
    return _entry_ranges(collection.entry_start, np.flatnonzero(judged))


def _open_weights(engine: MTCEngine) -> FloatArray:
    """Every entry's coefficient over ``E[Y_q]`` of its query; 0 once its pair is judged."""
    c = engine.collection
    return np.asarray(
        engine.coef
        * inverse_denominators(engine.ey)[c.pair_query[c.entry_pair]]
        * ~engine.judged[c.entry_pair],
        dtype=np.float64,
    )


def _level_cells(
    collection: Collection, level: IntArray, n_levels: int
) -> tuple[IntArray, IntArray]:
    """The entries whose pair has a level (not -1), and their (system, level) cell."""
    entry_level = level[collection.entry_pair]
    valid = np.flatnonzero(entry_level >= 0)
    return valid, collection.entry_system[valid] * n_levels + entry_level[valid]


def _mass_by_cell(
    engine: MTCEngine,
    weights: FloatArray,
    valid: IntArray | slice,
    cell: IntArray,
    n_levels: int,
) -> FloatArray:
    """Systems x levels sums of the ``valid`` entries' weights, in score units."""
    c = engine.collection
    mass = np.bincount(cell, weights=weights[valid], minlength=c.n_systems * n_levels)
    return np.asarray(mass.reshape(c.n_systems, n_levels) / c.n_queries, dtype=np.float64)


class _UnjudgedMass:
    """``f_A`` of :meth:`SystemEffectEngine.unjudged_mass`, kept up to date by difference.

    The weight of every entry (its coefficient over ``E[Y_q]``, 0 once its pair is judged)
    is kept in system order. When pairs are judged, or ``E[Y_q]`` changes (ratio measures),
    only their entries are recomputed and only the systems that retrieve them are summed
    again, over their entries in entry order from 0, as :func:`numpy.bincount` sums them in a
    full pass: the masses are bit for bit those of a full pass. The index arrays depend on
    the collection only and are shared by copies of the engine.
    """

    def __init__(self, engine: SystemEffectEngine) -> None:
        c = engine.collection
        self.order = np.argsort(c.entry_system, kind="stable").astype(np.intp)
        self.position = np.empty_like(self.order)
        self.position[self.order] = np.arange(self.order.shape[0], dtype=np.intp)
        counts = np.bincount(c.entry_system, minlength=c.n_systems)
        self.start = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
        self.zeros = np.zeros(int(counts.max(initial=0)), dtype=np.intp)
        self._full(engine)

    def __deepcopy__(self, memo: dict[int, object]) -> _UnjudgedMass:
        clone = object.__new__(_UnjudgedMass)
        clone.__dict__.update(self.__dict__)
        for name in ("judged", "ey", "weight", "mass"):  # the rest is fixed by the collection
            setattr(clone, name, getattr(self, name).copy())
        return clone

    def _full(self, engine: SystemEffectEngine) -> None:
        c = engine.collection
        self.judged = engine.judged.copy()
        self.ey = engine.ey.copy()
        w = _open_weights(engine)
        self.mass = np.bincount(c.entry_system, weights=w, minlength=c.n_systems)
        self.weight = w[self.order]

    def mass_of(self, engine: SystemEffectEngine) -> FloatArray:
        c = engine.collection
        pairs = np.flatnonzero(engine.judged != self.judged)
        queries = np.flatnonzero(engine.ey != self.ey)
        if pairs.size or queries.size:
            entries = _entry_ranges(c.entry_start, pairs)
            if queries.size:
                entries = np.union1d(entries, _entry_ranges(c.query_entry_start, queries))
            if 4 * entries.shape[0] > c.entry_pair.shape[0]:
                self._full(engine)
            else:
                self.judged[pairs] = engine.judged[pairs]
                self.ey[queries] = engine.ey[queries]
                ep = c.entry_pair[entries]
                inv = inverse_denominators(self.ey)[c.pair_query[ep]]
                self.weight[self.position[entries]] = engine.coef[entries] * inv * ~self.judged[ep]
                for s in np.unique(c.entry_system[entries]):
                    lo, hi = int(self.start[s]), int(self.start[s + 1])
                    own = self.weight[lo:hi]
                    self.mass[s] = np.bincount(self.zeros[: hi - lo], weights=own, minlength=1)[0]
        return np.asarray(self.mass / c.n_queries, dtype=np.float64)


class SystemEffectEngine(MTCEngine):
    """:class:`MTCEngine` whose score distributions include the system offsets.

    Set :attr:`effect` (see :func:`estimate_system_effect`) and call
    :meth:`invalidate`; ``evaluation()`` then adds ``f_A E[b_A]`` to each system's
    expected score and ``f_A^2 Var[b_A]`` to its variance (module docstring).
    With ``shift_means=False`` only the variance is added.
    """

    effect: SystemEffect | None = None
    shift_means: bool = True
    #: also learn a common factor on the estimation variances (:func:`variance_scale`)
    learn_variance: bool = False
    #: further random effects shared by pairs: (name, level of every pool pair, -1 for none)
    factors: tuple[tuple[str, IntArray], ...] = ()
    #: their posteriors, by name, set by :meth:`recalibrate`
    factor_effects: dict[str, SystemEffect] | None = None
    #: one judgment in this many goes to the audit sample (0: no audit), see :meth:`draw_audit`
    audit_every: int = 0
    #: the pairs drawn into the audit sample so far, a mask over the pool (set with the audit)
    audit_drawn: NDArray[np.bool_] | None = None
    #: the pairs the audit may draw (those an assessor can be given); None: every pair
    audit_allowed: NDArray[np.bool_] | None = None
    #: the fixed random order of the pool the audit draws in, made on first use
    _audit_order: IntArray | None = None
    #: per entry, its system's group: ``2 A + 1`` when other systems retrieved the pair too,
    #: ``2 A`` when only A did (:func:`shared_groups`); None: no group offsets
    result_groups: IntArray | None = None
    #: the posterior of the group offsets (around their system's), set by :meth:`recalibrate`
    group_effect: SystemEffect | None = None

    def audit_pairs(self) -> IntArray:
        """The pairs drawn into the audit sample so far, judged or not (empty without an
        audit)."""
        if not self.audit_every or self.audit_drawn is None:
            return np.empty(0, dtype=np.intp)
        return np.flatnonzero(self.audit_drawn)

    def draw_audit(self) -> IntArray:
        """Draw the audit's due pairs, and return them (empty when none is due).

        The audit holds ``n_judged // audit_every + 1`` pairs: whenever it holds fewer, it
        draws the next pair of a fixed random order of the pool that is neither judged nor
        drawn already (nor excluded by :attr:`audit_allowed`). That is a uniformly random
        pick among the pairs left unjudged, whichever the policy chose before, so the
        residuals of the audit's pairs say how far off the estimates are where nobody has
        looked. Which pairs were drawn depends on the order of the judgments: a campaign
        stores them (the planner writes its draws with its plan) and an engine rebuilt
        from the database takes them back (:attr:`audit_drawn`) rather than drawing again.
        """
        if not self.audit_every or self.audit_drawn is None:
            return np.empty(0, dtype=np.intp)
        due = self.n_judged // self.audit_every + 1 - int(np.count_nonzero(self.audit_drawn))
        if due <= 0:
            return np.empty(0, dtype=np.intp)
        order = self.audit_order()
        free = ~(self.judged | self.audit_drawn)
        if self.audit_allowed is not None:
            free &= self.audit_allowed
        picks = order[free[order]][:due]
        self.audit_drawn[picks] = True
        return picks

    def take_audit(self, drawn: ArrayLike) -> None:
        """Set the audit sample to the pairs ``drawn`` (a mask over the pool) that a
        campaign stored: the draws of an earlier engine of the same judgments."""
        self.audit_drawn = np.array(drawn, dtype=bool)

    def audit_order(self) -> IntArray:
        """The fixed random order of the pool that the audit draws in (the same in every
        process: its seed is fixed)."""
        if self._audit_order is None:
            rng = np.random.default_rng(_AUDIT_SEED)
            self._audit_order = rng.permutation(self.collection.n_pairs).astype(np.intp)
        return self._audit_order

    def weights(self) -> FloatArray:
        """The policy's weights, with the audit's due pairs (drawn first, if any is due) above
        all others."""
        w = super().weights()
        self.draw_audit()
        if self.audit_drawn is None:
            return w
        due = np.flatnonzero(self.audit_drawn & ~self.judged)
        if due.size:
            w = w.copy()
            w[due] = 2.0 * max(float(w.max(initial=0.0)), 1.0)
        return w

    def stored_weights(self, pairs: IntArray, weights: FloatArray) -> FloatArray:
        """The audit's unjudged pairs, which :meth:`weights` puts first with a made-up
        weight above every other, at the best weight of the other pairs: a plan keeps them
        first, and the preference for the query an assessor is on (worth at least half the
        best) weighs that query against the best pair the policy chose, so the audit's pair
        goes to an assessor who changes query anyway."""
        if self.audit_drawn is None:
            return weights
        audit = self.audit_drawn[pairs] & ~self.judged[pairs]
        if not audit.any():
            return weights
        stored = np.array(weights, dtype=np.float64)
        stored[audit] = float(stored[~audit].max()) if (~audit).any() else 1.0
        return stored

    def invalidate(self) -> None:
        """Forget the cached evaluation (after changing :attr:`effect`)."""
        self._evaluation = None

    def recalibrate(self) -> None:
        """Re-estimate the offsets from every judgment (:func:`system_effect_from_judgments`)."""
        recalibrate(self, self.model)

    @property
    def system_tau2(self) -> float:
        """``tau^2`` of the current offsets (0 before any are set)."""
        return self.effect.tau2 if self.effect is not None else 0.0

    def share_errors(self, metadata: Metadata | None) -> None:
        """Turn this engine into the joint error model (``JOINT``): offsets shared by the
        pairs of a query, an artist and a genre cell (:func:`metadata_factors`) besides the
        system offsets, an offset of each system's shared and unshared results around its
        own (:func:`shared_groups`), and a variance factor learnt from an audit sample (one
        judgment in :data:`AUDIT_EVERY`, :meth:`draw_audit`); the confidence weights take the
        variance of each pair's estimate into account (:attr:`MTCEngine.selection_var`).
        Call :meth:`recalibrate` after."""
        self.learn_variance = True
        self.audit_every = AUDIT_EVERY
        self.audit_drawn = np.zeros(self.collection.n_pairs, dtype=bool)
        self.factors = metadata_factors(self.collection, metadata)
        self.result_groups = shared_groups(self.collection)
        nothing = np.zeros(self.collection.n_pairs, dtype=bool)
        self.selection_var = self.model.estimate_all(nothing, np.zeros(nothing.size))[1]

    def unjudged_mass_by(self, level: IntArray, n_levels: int) -> FloatArray:
        """Coefficient mass of each system still on estimates, split by the level of the
        pairs (systems x levels, score units); pairs at level -1 are left out."""
        valid, cell = _level_cells(self.collection, level, n_levels)
        return _mass_by_cell(self, _open_weights(self), valid, cell, n_levels)

    #: per factor: its entries with a level, their (system, level) cell, the number of levels
    _cells: list[tuple[IntArray, IntArray, int]] | None = None

    def _factor_masses(self, weights: FloatArray) -> list[FloatArray]:
        """:meth:`unjudged_mass_by` of every factor, from the entries' weights
        (:func:`_open_weights`; the cells depend on the collection only and are made once)."""
        if self._cells is None:
            self._cells = []
            for _, level in self.factors:
                n_levels = max(int(level.max(initial=-1)) + 1, 1)
                self._cells.append((*_level_cells(self.collection, level, n_levels), n_levels))
        return [_mass_by_cell(self, weights, valid, cell, n) for valid, cell, n in self._cells]

    #: the bookkeeping of :meth:`unjudged_mass`, made on its first call
    _unjudged: _UnjudgedMass | None = None

    def unjudged_mass(self) -> FloatArray:
        """``f_A``: coefficient mass of A still on estimates, in score units.

        ``(1/n_Q) sum_{unjudged entries e of A} c_e / E[Y_q(e)]``, updated for the pairs
        judged since the last call (:class:`_UnjudgedMass`), exactly as a full pass."""
        if self._unjudged is None:
            self._unjudged = _UnjudgedMass(self)
        return self._unjudged.mass_of(self)

    def evaluation(self) -> Evaluation:
        if self._evaluation is None:
            nq = self.collection.n_queries
            mean = self.score_sum / nq
            cov = self.t_mat / nq**2
            if self.effect is not None:
                cov = cov * self.effect.variance_scale
                f = self.unjudged_mass()
                if self.shift_means:
                    mean = mean + f * self.effect.bias
                cov = cov + np.diag(f**2 * self.effect.post_var)
            weights = (
                _open_weights(self)
                if self.factor_effects or self.group_effect is not None
                else None
            )
            if self.group_effect is not None and self.result_groups is not None:
                assert weights is not None
                # every entry is in a group: systems x (unshared, shared) masses
                mass = _mass_by_cell(self, weights, slice(None), self.result_groups, 2)
                group = self.group_effect
                if self.shift_means:
                    mean = mean + (mass * group.bias.reshape(mass.shape)).sum(axis=1)
                cov = cov + np.diag((mass**2 * group.post_var.reshape(mass.shape)).sum(axis=1))
            masses = (
                self._factor_masses(weights) if weights is not None and self.factor_effects else []
            )
            for (name, _), mass in zip(self.factors, masses, strict=True):
                effect = self.factor_effects[name]  # type: ignore[index]
                if self.shift_means:
                    mean = mean + mass @ effect.bias
                cov = cov + (mass * effect.post_var) @ mass.T
            self._evaluation = finish(mean, cov, nq, self.config.distribution, self.config.ci_level)
        return self._evaluation


class _JudgedResiduals(NamedTuple):
    """The judged entries (sorted by pair), their pairs, the residual of each against its
    judgment-free estimate, and that estimate's variance (the model's own, without a
    variance factor): what every offset is learnt from, made once per recalibration."""

    entries: IntArray
    pairs: IntArray
    residual: FloatArray
    variance: FloatArray

    def first_of_pair(self) -> IntArray:
        """Index of each judged pair's first entry (the entries are sorted by pair)."""
        p = self.pairs
        return np.flatnonzero(np.concatenate(([True], p[1:] != p[:-1]))) if p.size else p


def _judged_residuals(engine: SystemEffectEngine, model: RelevanceModel) -> _JudgedResiduals:
    """:class:`_JudgedResiduals` of the engine's judgments under ``model``."""
    c = engine.collection
    base_mean, base_var = model.prior_estimates()
    entries = _judged_entries(c, engine.judged)
    pairs = c.entry_pair[entries]
    residual = engine.values[pairs] - base_mean[pairs]
    return _JudgedResiduals(entries, pairs, residual, base_var[pairs])


def system_effect_from_judgments(
    engine: SystemEffectEngine,
    model: RelevanceModel,
    *,
    tau2_prior: float = 0.0,
    prior_weight: float = 0.0,
    learn_variance: bool = False,
    judged: _JudgedResiduals | None = None,
) -> SystemEffect:
    """Per-system offsets from every judged pair, against its judgment-free estimate.

    Valid when the estimates do not depend on other judgments (M_out or a prior,
    no M_jud): the estimate a pair had just before its judgment is then its
    judgment-free one whatever the order of the judgments, so processes that
    replay the same judgments in different orders agree. ``judged``: the residuals if
    already made (:func:`recalibrate` makes them once for every offset).
    """
    c = engine.collection
    entries, pairs, residual, variance = judged or _judged_residuals(engine, model)
    systems = c.entry_system[entries]
    effect = estimate_system_effect(
        systems,
        residual,
        variance,
        c.n_systems,
        tau2_prior=tau2_prior,
        prior_weight=prior_weight,
    )
    if not learn_variance or pairs.size == 0:
        return effect
    # with an audit, the variance factor of the audit sample alone: the pairs the policy
    # chose for being informative are not a fair sample of those left on estimates (under
    # the random policy every judgment is a random draw among them, and all of them count)
    keep: slice | NDArray[np.bool_] = slice(None)
    if engine.audit_every and engine.audit_drawn is not None and engine.config.policy != "random":
        keep = engine.audit_drawn[pairs]
    kappa = variance_scale(
        engine, residual[keep], variance[keep], systems[keep], pairs[keep], effect
    )
    if kappa == 1.0:  # the common case: the offsets just estimated stand
        return effect
    effect = estimate_system_effect(
        systems,
        residual,
        kappa * variance,
        c.n_systems,
        tau2_prior=tau2_prior,
        prior_weight=prior_weight,
    )
    return replace(effect, variance_scale=kappa)


def variance_scale(
    engine: MTCEngine,
    residual: FloatArray,
    variance: FloatArray,
    systems: IntArray,
    pairs: IntArray,
    effect: SystemEffect,
    *,
    prior: float = 20.0,
) -> float:
    """Common factor on the estimation variances: the shrunk mean squared standardised
    residual of the judged pairs once their systems' offsets are taken out.

    Each judged pair counts once (its entries share one residual); its offset is the mean
    of the offsets of the systems that retrieved it. ``prior`` pseudo-observations of a
    calibrated model (z^2 = 1) keep a few early surprises from exploding the factor, and
    the factor is never below 1: judgments may widen the distributions, not narrow them.
    """
    n_pairs = engine.collection.n_pairs
    count = np.bincount(pairs, minlength=n_pairs).astype(np.float64)
    offset_sum = np.bincount(pairs, weights=effect.bias[systems], minlength=n_pairs)
    first = np.unique(pairs, return_index=True)[1]
    p = pairs[first]
    z2 = (residual[first] - offset_sum[p] / count[p]) ** 2 / np.maximum(variance[first], 1e-9)
    return float(max(1.0, (prior + z2.sum()) / (prior + z2.size)))


def recalibrate(engine: SystemEffectEngine, model: RelevanceModel) -> None:
    """Re-estimate the engine's system offsets from all its judgments."""
    judged = _judged_residuals(engine, model)
    engine.effect = system_effect_from_judgments(
        engine, model, learn_variance=engine.learn_variance, judged=judged
    )
    if engine.result_groups is not None:
        engine.group_effect = group_effect_from_judgments(engine, judged, engine.effect)
    if engine.factors:
        engine.factor_effects = factor_effects_from_judgments(
            engine, judged, engine.effect, engine.group_effect
        )
    engine.invalidate()


def shared_groups(collection: Collection) -> IntArray:
    """Per entry, the group of its result among its system's: ``2 A + 1`` when other systems
    retrieved the same document for the query too, ``2 A`` when system A alone did (the
    (system, level) cell of :func:`_level_cells` with the level "shared")."""
    shared = (np.diff(collection.entry_start) > 1).astype(np.intp)
    return _level_cells(collection, shared, 2)[1]


def group_effect_from_judgments(
    engine: SystemEffectEngine, judged: _JudgedResiduals, system_effect: SystemEffect
) -> SystemEffect:
    """Empirical-Bayes offsets of each system's shared and unshared results around the
    system's own offset (docs/method.md §8.2).

    The judged entries' residuals, less their system's offset, grouped by
    :attr:`SystemEffectEngine.result_groups`; the between-group variance is learnt from
    them (DerSimonian-Laird) and is 0 when a system's shared and unshared results err
    alike, so the groups then add nothing. Each entry counts as in the system offsets."""
    assert engine.result_groups is not None
    c = engine.collection
    return estimate_system_effect(
        engine.result_groups[judged.entries],
        judged.residual - system_effect.bias[c.entry_system[judged.entries]],
        system_effect.variance_scale * judged.variance,
        2 * c.n_systems,
    )


def factor_effects_from_judgments(
    engine: SystemEffectEngine,
    judged: _JudgedResiduals,
    system_effect: SystemEffect,
    group_effect: SystemEffect | None = None,
) -> dict[str, SystemEffect]:
    """Empirical-Bayes offsets of every further factor (query, artist, genre pair, ...)
    from the judged residuals, once the system (and group) offsets and the factors before it
    are taken out (one backfitting pass); each judged pair counts once."""
    c = engine.collection
    entries, pairs = judged.entries, judged.pairs
    count = np.bincount(pairs, minlength=c.n_pairs).astype(np.float64)
    entry_offset = system_effect.bias[c.entry_system[entries]]
    if group_effect is not None and engine.result_groups is not None:
        entry_offset = entry_offset + group_effect.bias[engine.result_groups[entries]]
    offset = np.bincount(pairs, weights=entry_offset, minlength=c.n_pairs)
    first = judged.first_of_pair()
    judged_pairs = pairs[first]
    residual = judged.residual[first] - offset[judged_pairs] / count[judged_pairs]
    variance = system_effect.variance_scale * judged.variance[first]
    effects: dict[str, SystemEffect] = {}
    for name, level in engine.factors:
        n_levels = int(level.max()) + 1 if level.size else 0
        lv = level[judged_pairs]
        has = lv >= 0
        effect = estimate_system_effect(lv[has], residual[has], variance[has], max(n_levels, 1))
        effects[name] = effect
        residual = residual - np.where(has, effect.bias[np.maximum(lv, 0)], 0.0)
    return effects


def metadata_factors(
    collection: Collection, metadata: Metadata | None
) -> tuple[tuple[str, IntArray], ...]:
    """The shared random effects the metadata allows: query, artist, (query genre, document
    genre) cell; -1 where a pair's document has no artist or no genre."""
    factors: list[tuple[str, IntArray]] = [("query", collection.pair_query.astype(np.intp))]
    if metadata is None:
        return tuple(factors)
    artist = metadata.doc_artist[collection.pair_doc]
    factors.append(("artist", np.where(artist >= 0, artist, -1).astype(np.intp)))
    genre = metadata.doc_genre[collection.pair_doc]
    qgenre = metadata.query_genre[collection.pair_query]
    n_genres = (
        int(max(metadata.doc_genre.max(initial=-1), metadata.query_genre.max(initial=-1))) + 1
    )
    cell = np.where((genre >= 0) & (qgenre >= 0), qgenre * max(n_genres, 1) + genre, -1)
    factors.append(("genre pair", cell.astype(np.intp)))
    return tuple(factors)


def campaign_engine(
    collection: Collection,
    metadata: Metadata | None,
    scale: Scale,
    estimator: str,
    *,
    measure: str = "cg",
    policy: str = "confidence",
    target: float = 0.95,
    seed: int = 0,
    judged_values: ArrayLike | None = None,
    audit_drawn: ArrayLike | None = None,
    audit_allowed: ArrayLike | None = None,
) -> tuple[MTCEngine, RelevanceModel]:
    """The engine a campaign runs, and its relevance model: the one place that turns a
    campaign's estimator setting into an engine (the web app's planner, the staleness
    simulation and the projection use it).

    ``calibrated`` is M_out plus per-system error offsets learnt from the judgments
    (docs/method.md); every other estimator is a :class:`RelevanceModel` kind on the plain
    engine. ``judged_values`` (NaN where unjudged) are the judgments known at the start;
    ``audit_drawn`` the pairs ``joint``'s audit drew before (a mask over the pool, as a
    campaign stored them: :meth:`SystemEffectEngine.draw_audit`) and ``audit_allowed`` those
    it may draw from.
    """
    rng = np.random.default_rng(seed)
    engine: MTCEngine
    if estimator in (CALIBRATED, JOINT):
        model = RelevanceModel(collection, scale, "ordinal", metadata, use_m_jud=False)
        config = EngineConfig(
            measure=measure, policy=policy, target=target, min_judgments=2 * collection.n_systems
        )
        engine = SystemEffectEngine(collection, model, config, judged_values=judged_values, rng=rng)
        if estimator == JOINT:
            engine.share_errors(metadata)
            if audit_drawn is not None:
                engine.take_audit(audit_drawn)
            if audit_allowed is not None:
                engine.audit_allowed = np.asarray(audit_allowed, dtype=bool)
        engine.recalibrate()
    else:
        model = RelevanceModel(collection, scale, estimator, metadata)
        config = EngineConfig(measure=measure, policy=policy, target=target)
        engine = MTCEngine(collection, model, config, judged_values=judged_values, rng=rng)
    return engine, model
