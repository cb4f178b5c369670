"""What an assessor's pool answers are weighed against (:mod:`mtcjudge.mtc.reliability`):
the estimator's expectation of every pool pair without the judgments left out.

:func:`expected_scores` (and :func:`expected_moments`, which adds the variances) give it: for
``joint`` and ``calibrated``, the judgment-free M_out estimate (or the prior) plus the error
offsets (system, shared/unshared group, query, artist, genre cell) re-learnt from the other
judgments only (the engine hook :meth:`~mtcjudge.mtc.engine.MTCEngine.expectation_from`); for
the plain estimators the judgment-free estimate itself. By default each judged pair's
expectation leaves out every judgment of its *query* (leave one query out): its own judgment
certainly, and also those of the assessor who was on that query, whose offset would
otherwise pass for the query's. The planner calls it with ``leave_out`` set to the pairs an
assessor judged (leave one assessor out), which is what
:attr:`mtcjudge.mtc.reliability.Answer.expected` asks for.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.engine import MTCEngine

__all__ = ["expected_moments", "expected_scores"]

FloatArray = NDArray[np.float64]


def expected_moments(
    engine: MTCEngine, leave_out: ArrayLike | None = None
) -> tuple[FloatArray, FloatArray]:
    """The estimator's expectation of every pool pair and its variance, on [0, 1].

    Parameters
    ----------
    engine : MTCEngine
        A campaign's engine (:func:`mtcjudge.mtc.factory.build_engine`).
    leave_out : array_like of bool, shape (n_pairs,), optional
        Pairs whose judgments are left out: every expectation is made without them (the
        planner passes the pairs one assessor judged). None: each judged pair's
        expectation leaves out every judgment of its query (its own among them); unjudged
        pairs get the engine's current expectation.

    For ``joint`` and ``calibrated`` the expectation is the judgment-free estimate (M_out
    or the prior) plus the error offsets learnt from the judgments kept; the variance is
    the estimate's (with the learnt variance factor) plus the offsets' posterior variance.
    For the plain estimators it is the judgment-free estimate and its variance (M_jud,
    which reads other judgments of the query, is not used).
    """
    c = engine.collection
    lmax = float(engine.scale.lmax)
    if engine.offsets is None:  # nothing learnt from the judgments: none to leave out
        mean, var = engine.model.prior_estimates()
        return mean / lmax, var / lmax**2
    judged = engine.judged
    if leave_out is not None:
        mask = np.asarray(leave_out, dtype=bool)
        if mask.shape != (c.n_pairs,):
            raise ValueError(f"leave_out must have shape ({c.n_pairs},), found {mask.shape}")
        mean, var = engine.expectation_from(judged & ~mask)
        return mean / lmax, var / lmax**2
    mean, var = engine.expectation_from(judged)
    queries = np.unique(c.pair_query[judged])
    for q in queries:
        sl = c.pairs_of_query(int(q))
        keep = judged.copy()
        keep[sl] = False
        m, v = engine.expectation_from(keep, sl)
        mean[sl], var[sl] = m, v
    return mean / lmax, var / lmax**2


def expected_scores(engine: MTCEngine, leave_out: ArrayLike | None = None) -> FloatArray:
    """The expectation part of :func:`expected_moments` (what
    :attr:`mtcjudge.mtc.reliability.Answer.expected` holds)."""
    return expected_moments(engine, leave_out)[0]
