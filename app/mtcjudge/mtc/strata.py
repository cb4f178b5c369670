"""``joint``'s variance strata (docs/method.md §8.2): the pool split by how sure the model is
of each estimate, one variance factor learnt per stratum.

The strata are the quantiles of the estimates' own (judgment-free) variances
(:func:`variance_strata`), fixed when the engine is built; each stratum's factor is the shrunk
mean squared standardised residual of the judged audit pairs in it (:func:`stratum_factors`),
held on a 5 % grid (:func:`on_factor_grid`) so that what an engine holds depends on its
judgments alone.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.effects import estimate_system_effect
from mtcjudge.mtc.residuals import (
    VARIANCE_PRIOR,
    JudgedResiduals,
    LearningEngine,
    standardised_squares,
    variance_sample,
)

__all__ = ["FACTOR_STEP", "on_factor_grid", "stratum_factors", "variance_strata"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: the strata's variance factors are applied on a grid of this ratio (5 %), so that what an
#: engine holds depends on its judgments alone, not on the order they came in
FACTOR_STEP = 1.05


def variance_strata(variance: FloatArray, n: int) -> IntArray:
    """The stratum of every pair by the quantiles of its estimate's variance, numbered from 0
    (the lowest variances) without gaps; tied quantiles merge strata (every variance equal:
    one stratum)."""
    edges = np.unique(np.quantile(variance, np.arange(1, n) / n))
    strata = np.searchsorted(edges, variance, side="right")
    return np.unique(strata, return_inverse=True)[1].astype(np.intp).reshape(strata.shape)


def on_factor_grid(factor: FloatArray) -> FloatArray:
    """Factors of at least 1 rounded to the nearest power of :data:`FACTOR_STEP`."""
    step = np.log(FACTOR_STEP)
    return np.asarray(np.exp(np.round(np.log(np.maximum(factor, 1.0)) / step) * step))


def stratum_factors(engine: LearningEngine, judged: JudgedResiduals) -> FloatArray:
    """Every pool pair's variance factor: one per stratum of the engine's
    :attr:`~mtcjudge.mtc.engine.MTCEngine.variance_stratum`, learnt from the judged audit
    pairs of the stratum (every judged pair under the random policy) once the system offsets
    are taken out, and rounded to a 5 % grid (:func:`on_factor_grid`), so that an engine that
    saw the judgments one by one and one built from them at once hold the same.

    The factor is ``max(1, (P + sum z²) / (P + n))`` over the stratum's ``n`` pairs' squared
    standardised residuals ``z²`` (:func:`~mtcjudge.mtc.residuals.standardised_squares`):
    ``P`` (:data:`~mtcjudge.mtc.residuals.VARIANCE_PRIOR`) pseudo-observations of a calibrated
    model (z² = 1) keep a few early surprises from exploding it, and it is never below 1:
    judgments may widen the distributions, not narrow them."""
    assert engine.variance_stratum is not None
    c = engine.collection
    stratum = engine.variance_stratum
    n_strata = int(stratum.max(initial=0)) + 1
    scale = np.ones(n_strata)
    if judged.pairs.size:
        systems = c.entry_system[judged.entries]
        effect = estimate_system_effect(systems, judged.residual, judged.variance, c.n_systems)
        keep = variance_sample(engine, judged.pairs)
        pairs, z2 = standardised_squares(
            judged.residual[keep], judged.variance[keep], systems[keep], judged.pairs[keep], effect
        )
        level = stratum[pairs]
        z2_sum = np.bincount(level, weights=z2, minlength=n_strata)
        n = np.bincount(level, minlength=n_strata)
        scale = np.maximum(1.0, (VARIANCE_PRIOR + z2_sum) / (VARIANCE_PRIOR + n))
    return np.asarray(on_factor_grid(scale)[stratum], dtype=np.float64)
