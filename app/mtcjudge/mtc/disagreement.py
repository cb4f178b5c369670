"""Assessor disagreement: how far one assessor's score lies from what assessors give on average.

MTC's confidence is about the ranking the systems would get if every pool pair were judged
(docs/method.md §1). With volunteers, "judged" means judged by *an* assessor, and another
assessor would have given another score: the thesis this project implements measured a root
mean squared difference of 0.31 (FINE, on [0, 1]) between two MIREX 2006 assessors of the
same pair. The ranking a campaign can claim is the one its assessors agree on on average, so
a judged pair is not known exactly: its judged value (the mean of its ``m`` judgments) keeps
a variance ``sigma^2 / m`` around the assessors' mean score, where ``sigma^2`` is the variance
of one assessor's score around it (docs/method.md §10).

``sigma^2`` is measured, never assumed, from the pairs the campaign has judged by more than
one assessor: pool pairs judged several times (``judgments_per_pair`` > 1) and the hidden
"second opinion" trials (a pool pair judged before by another assessor). Each such pair with
judgments ``x_1 .. x_m`` gives a sum of squares ``sum (x_i - mean)^2`` with ``m - 1`` degrees
of freedom; pooled, ``S`` over ``d`` degrees of freedom. If the judgments were normal around
the pair's mean, ``S / sigma^2`` would be chi-squared with ``d`` degrees of freedom, and the
posterior mean of ``sigma^2`` under the scale-invariant prior ``1 / sigma^2`` is
``S / (d - 2)``: the estimate used, a little above the unbiased ``S / d`` so that a small
sample does not understate the noise. Below :data:`MIN_DF` degrees of freedom that mean is
not defined and nothing is measured: the variance is then 0, and every surface says that the
confidence assumes the assessors agree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MIN_DF",
    "Disagreement",
    "disagreement",
    "disagreement_from_sums",
    "judged_variance",
]

#: fewest degrees of freedom (pairs judged twice) before the disagreement counts as measured
MIN_DF = 3


@dataclass(frozen=True)
class Disagreement:
    """Pooled assessor disagreement on one scale (values in the scale's units)."""

    sum_squares: float = 0.0
    #: degrees of freedom: one per extra judgment of a pair
    df: int = 0
    #: pairs with more than one judgment
    pairs: int = 0

    @property
    def measured(self) -> bool:
        """Whether enough pairs were judged more than once for an estimate."""
        return self.df >= MIN_DF

    @property
    def variance(self) -> float:
        """sigma^2: the variance of one assessor's score around the assessors' mean score
        (posterior mean ``S / (d - 2)``); 0 while not :attr:`measured`."""
        if not self.measured:
            return 0.0
        return self.sum_squares / (self.df - 2)

    @property
    def sd(self) -> float:
        return math.sqrt(self.variance)

    @property
    def unbiased_variance(self) -> float | None:
        """``S / d``, the plain estimate, for reports; None without any pair judged twice."""
        return self.sum_squares / self.df if self.df else None


def disagreement(groups: Iterable[ArrayLike]) -> Disagreement:
    """Pool the judgments of pairs judged by several assessors.

    Parameters
    ----------
    groups : iterable of array_like
        For each pair, the values its assessors gave (on one scale). Pairs with fewer than
        two values contribute nothing.
    """
    ss = 0.0
    df = 0
    pairs = 0
    for group in groups:
        x = np.asarray(group, dtype=np.float64).ravel()
        if x.size < 2:
            continue
        if not np.all(np.isfinite(x)):
            raise ValueError("judged values must be finite")
        ss += float(((x - x.mean()) ** 2).sum())
        df += x.size - 1
        pairs += 1
    return Disagreement(ss, df, pairs)


def disagreement_from_sums(counts: ArrayLike, sums: ArrayLike, squares: ArrayLike) -> Disagreement:
    """:func:`disagreement` from each pair's number of values, their sum and the sum of
    their squares (what a database aggregates); pairs with fewer than two values are
    skipped."""
    n = np.asarray(counts, dtype=np.float64).ravel()
    total = np.asarray(sums, dtype=np.float64).ravel()
    sq = np.asarray(squares, dtype=np.float64).ravel()
    if not n.shape == total.shape == sq.shape:
        raise ValueError("counts, sums and squares must have the same length")
    keep = n >= 2
    if not np.all(np.isfinite(total[keep])) or not np.all(np.isfinite(sq[keep])):
        raise ValueError("judged values must be finite")
    n, total, sq = n[keep], total[keep], sq[keep]
    # each pair's sum of squares about its mean; rounding can take an exact 0 below it
    ss = np.maximum(sq - total * total / np.where(n > 0, n, 1.0), 0.0)
    return Disagreement(float(ss.sum()), int((n - 1).sum()), int(n.size))


def judged_variance(measured: Disagreement, judgments: ArrayLike) -> NDArray[np.float64]:
    """The variance of each pair's judged value: ``sigma^2 / m`` for a pair judged ``m``
    times (the engine's value is their mean), 0 for unjudged pairs."""
    m = np.asarray(judgments, dtype=np.float64)
    if np.any(m < 0):
        raise ValueError("judgment counts must be >= 0")
    out = np.zeros(m.shape)
    np.divide(measured.variance, m, out=out, where=m > 0)
    return out
