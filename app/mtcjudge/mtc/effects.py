"""Random-effects statistics of the estimation errors: the offsets the error models learn.

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

``b_A`` is learnt from the residuals of the judged pairs. With ``m_A`` the
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

This module holds the statistics only (no engine): :mod:`mtcjudge.mtc.joint` is the engine
that applies them, :mod:`mtcjudge.mtc.offset_learning` learns them from its judgments.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq

__all__ = [
    "EntryOffsets",
    "ErrorOffsets",
    "OffsetFactor",
    "SystemEffect",
    "dersimonian_laird",
    "estimate_system_effect",
    "paule_mandel",
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
    # calls per loop iteration of ``joint``). tests/mtc/test_effects.py checks it
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


def paule_mandel(means: ArrayLike, variances: ArrayLike, upper: float = np.inf) -> float:
    """Between-group variance of group means with known variances, by Paule and Mandel.

    The ``tau^2`` at which the generalised ``Q(tau^2) = sum_i w_i (m_i - m_w)^2``, with
    ``w_i = 1 / (s_i^2 + tau^2)`` and ``m_w`` their weighted mean, equals its expectation
    ``K - 1`` (0 when ``Q(0) <= K - 1``; ``upper`` when ``Q(upper) >= K - 1``). ``Q`` falls
    as ``tau^2`` grows, so the root is found by bracketing (statsmodels'
    ``combine_effects(method_re="iterated")`` solves the same equation by Newton steps,
    which may stop short). Unlike DerSimonian-Laird's one moment step, which weighs the
    groups by ``1 / s_i^2`` alone, it weighs them as the random-effects model does: with a
    few groups of unequal precision the moment step follows the most precise ones and
    underestimates ``tau^2`` (Veroniki et al. 2016, Res. Synth. Methods 7(1), recommend
    Paule-Mandel for this reason). Groups with an infinite or non-positive variance are
    ignored; fewer than two leave 0.
    """
    m = np.asarray(means, dtype=np.float64)
    s2 = np.asarray(variances, dtype=np.float64)
    ok = np.isfinite(m) & np.isfinite(s2) & (s2 > 0)
    m, s2 = m[ok], s2[ok]
    k = m.shape[0]
    if k < 2 or not upper > 0:
        return 0.0

    def excess(tau2: float) -> float:
        w = 1.0 / (s2 + tau2)
        centred = m - w @ m / w.sum()
        return float(w @ (centred * centred) - (k - 1))

    if excess(0.0) <= 0:
        return 0.0
    high = float(upper)
    if not np.isfinite(high):
        # as tau^2 grows, tau^2 Q(tau^2) tends to the unweighted sum of squares: a bracket
        high = max(float(np.sum((m - m.mean()) ** 2)), float(s2.max()))
        while excess(high) > 0:
            high *= 2.0
    elif excess(high) >= 0:
        return high
    return float(brentq(excess, 0.0, high, xtol=1e-12 * max(high, 1.0), rtol=1e-10))


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


@dataclass(frozen=True)
class ErrorOffsets:
    """The error offsets an engine's score distributions include beyond the estimates
    (:attr:`mtcjudge.mtc.engine.MTCEngine.offsets`).

    Attributes
    ----------
    system : SystemEffect
        The per-system offsets ``b_A`` (and the common variance factor); the expected scores
        move by ``f_A E[b_A]``.
    shared_by : tuple of str
        What else shares offsets besides the system (``"query"``, ``"artist"``,
        ``"genre pair"``), in the order they are learnt; empty for the system offsets alone.
    """

    system: SystemEffect
    shared_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class OffsetFactor:
    """One factor of offsets that entries share (docs/method.md §8.1): the level each entry is
    at and the posterior of every level.

    Attributes
    ----------
    name : str
        ``"system"``, ``"result group"`` (a system's shared or unshared results),
        ``"query"``, ``"artist"`` or ``"genre pair"``.
    level : ndarray of int, shape (n_entries,)
        The level of every entry of the collection, -1 for none (a document without artist).
    mean, variance : ndarray of shape (n_levels,)
        ``E[b_l | data]`` and ``Var[b_l | data]`` of every level (relevance units).
    """

    name: str
    level: IntArray
    mean: FloatArray
    variance: FloatArray


@dataclass(frozen=True)
class EntryOffsets:
    """What an engine adds to the estimates of its pairs when it scores each entry (a result
    of one system): :meth:`mtcjudge.mtc.engine.MTCEngine.entry_offsets`.

    The expected relevance of entry ``e`` (system A, pair p) is ``E[R_p] + offset[e]``, so a
    system's expected score is the measure's weighted sum of its entries' expectations. Its
    covariance with another system's is ``variance_scale`` times that of the independent
    estimates (§3) plus, for every factor and level l, ``Var[b_l] m_{A,l} m_{B,l}``, with
    ``m_{A,l}`` the coefficient mass of A's unjudged entries at level l in score units
    (§8.3). Judged entries carry no offset.

    Attributes
    ----------
    offset : ndarray of shape (n_entries,)
        The sum of the means of the entry's levels (0 once its pair is judged, and when the
        offsets do not move the means).
    variance_scale : float
        The common factor on every Var[R] (``joint``'s κ; 1 otherwise).
    factors : tuple of OffsetFactor
        Empty for an engine that learns no offsets.
    """

    offset: FloatArray
    variance_scale: float = 1.0
    factors: tuple[OffsetFactor, ...] = ()

    @classmethod
    def none(cls, n_entries: int) -> EntryOffsets:
        """No offsets: every entry expects what its pair's estimate says."""
        return cls(np.zeros(n_entries))
