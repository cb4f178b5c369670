"""Assessor offsets: the part of an assessor's disagreement that all their judgments share
(docs/method.md §10.1).

The measured disagreement ``sigma^2`` (:mod:`mtcjudge.mtc.disagreement`) is the variance of
one assessor's score around the assessors' mean score. Part of it is the assessor's own: a
lenient volunteer scores most pairs a little high, a harsh one a little low. That part,
the assessor's *offset* ``o_a`` of variance ``tau^2``, is shared by every judgment they
make; the rest, ``sigma^2 - tau^2``, is independent from judgment to judgment. Taken as
independent, the shared part averages out over a system's judged pairs when different
volunteers judge them; it does not when one volunteer judges many pairs that separate the
same systems (a volunteer who stays on a query judges several of its pairs, docs/method.md
§12), and the confidence is then too high.

So a judged pair's value (the mean of its ``m`` counted judgments) has the error::

    sum_a (1/m) o_a  +  independent part of variance (sigma^2 - tau^2) / m

and a system's score gains ``sum_a M_{A,a} o_a``, where ``M_{A,a}`` is the coefficient mass
of A's judged results in assessor a's shares: the covariance of the scores gains
``tau^2 M M^T`` (:func:`judged_masses`).

``tau^2`` is measured from the judgments: each assessor's precision-weighted mean residual
(their scores less the pairs' judgment-free estimates) over the pairs they judged, and the
Paule-Mandel estimate of the variance between those means beyond what the residuals' own
variances explain (:func:`offset_variance`, :func:`~mtcjudge.mtc.effects.paule_mandel`).
With a handful of assessors of very unequal output (one volunteer who judged half the
campaign) the moment step the error offsets of systems use weighs the means by their
precision alone, follows the most prolific assessor and finds too little (docs/method.md
§10.1 has what that cost). The residuals also carry the estimates' shared errors,
which can only widen the spread between assessors; it never exceeds ``sigma^2`` (an offset
is a part of the disagreement) and is 0 while the disagreement is not measured or fewer than
two assessors have judged :data:`MIN_JUDGMENTS` pairs.

Pure: numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, entry_ranges
from mtcjudge.mtc.disagreement import Disagreement, judged_variance
from mtcjudge.mtc.effects import paule_mandel
from mtcjudge.mtc.estimators import RelevanceModel

__all__ = [
    "MIN_JUDGMENTS",
    "AssessorOffsets",
    "JudgmentShares",
    "apply_judged_noise",
    "judged_masses",
    "offset_variance",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: judgments an assessor needs before their mean residual counts in the estimate of tau^2
MIN_JUDGMENTS = 5


@dataclass(frozen=True)
class JudgmentShares:
    """Who made the counted judgments behind the judged pairs' values: one row per judgment,
    its pool pair, its assessor (numbered from 0), its share of the pair's value (1/m for a
    pair judged ``m`` times) and its score."""

    pair: IntArray
    assessor: IntArray
    weight: FloatArray
    value: FloatArray
    n_assessors: int

    @classmethod
    def of(cls, pairs: ArrayLike, assessors: Sequence[object], values: ArrayLike) -> JudgmentShares:
        """The shares of the counted judgments of ``pairs`` by ``assessors`` (any hashable
        ids, numbered in order of appearance) scoring ``values``. A judgment of no known
        assessor (None: an imported one) counts in its pair's ``m`` but has no share."""
        p = np.asarray(pairs, dtype=np.intp).ravel()
        x = np.asarray(values, dtype=np.float64).ravel()
        if not len(assessors) == p.shape[0] == x.shape[0]:
            raise ValueError("one assessor and one value per judgment")
        if not np.all(np.isfinite(x)):
            raise ValueError("judged values must be finite")
        counts = np.bincount(p, minlength=int(p.max(initial=-1)) + 1)
        known = np.array([a is not None for a in assessors], dtype=bool)
        number: dict[object, int] = {}
        a = np.array(
            [number.setdefault(x, len(number)) for x in assessors if x is not None],
            dtype=np.intp,
        )
        kept = p[known]
        weight = 1.0 / counts[kept] if kept.size else np.zeros(0)
        return cls(kept, a, np.asarray(weight, dtype=np.float64), x[known], len(number))

    @property
    def judgments(self) -> int:
        return int(self.pair.shape[0])

    def named(self, n_pairs: int) -> NDArray[np.bool_]:
        """The pool pairs some share names."""
        return np.bincount(self.pair, minlength=n_pairs) > 0


@dataclass(frozen=True)
class AssessorOffsets:
    """The offsets' variance ``tau^2`` (scale units squared) and the shares it enters the
    scores by; what an engine adds to its covariance (:func:`judged_masses`)."""

    variance: float
    shares: JudgmentShares
    #: assessors whose mean residual the estimate rests on
    assessors: int = 0

    @property
    def sd(self) -> float:
        return float(np.sqrt(self.variance))


def offset_variance(
    shares: JudgmentShares,
    base_mean: ArrayLike,
    base_var: ArrayLike,
    disagreement_variance: float,
) -> tuple[float, int]:
    """``(tau^2, assessors it rests on)``: the variance of the assessors' offsets.

    ``base_mean`` and ``base_var`` are the judgment-free estimates of every pool pair and
    their variances; ``disagreement_variance`` the measured ``sigma^2``, which bounds the
    result."""
    sigma2 = float(disagreement_variance)
    if not np.isfinite(sigma2) or sigma2 <= 0 or shares.judgments == 0:
        return 0.0, 0
    mean = np.asarray(base_mean, dtype=np.float64)[shares.pair]
    var = np.asarray(base_var, dtype=np.float64)[shares.pair] + sigma2
    residual = shares.value - mean
    k = shares.n_assessors
    n = np.bincount(shares.assessor, minlength=k)
    w = np.bincount(shares.assessor, weights=1.0 / var, minlength=k)
    wr = np.bincount(shares.assessor, weights=residual / var, minlength=k)
    enough = (n >= MIN_JUDGMENTS) & (w > 0)
    if int(enough.sum()) < 2:
        return 0.0, int(enough.sum())
    # within [0, sigma^2] by construction: an offset is a part of the disagreement
    return paule_mandel(wr[enough] / w[enough], 1.0 / w[enough], upper=sigma2), int(enough.sum())


def judged_masses(
    collection: Collection,
    entry_weights: FloatArray,
    judged: NDArray[np.bool_],
    shares: JudgmentShares,
) -> FloatArray:
    """``M``, systems x assessors: the coefficient mass (score units) of each system's judged
    results in each assessor's shares. ``entry_weights``: every entry's coefficient over its
    query's denominator; shares of pairs not ``judged`` are left out."""
    c = collection
    keep = judged[shares.pair]
    pair = shares.pair[keep]
    # the entries of every kept share's pair, share after share
    entries = entry_ranges(c.entry_start, pair)
    count = c.entry_start[pair + 1] - c.entry_start[pair]
    weights = entry_weights[entries] * np.repeat(shares.weight[keep], count)
    k = max(shares.n_assessors, 1)
    cell = c.entry_system[entries] * k + np.repeat(shares.assessor[keep], count)
    mass = np.bincount(cell, weights=weights, minlength=c.n_systems * k)
    return np.asarray(mass.reshape(c.n_systems, k) / c.n_queries, dtype=np.float64)


class NoisyEngine(Protocol):
    """What :func:`apply_judged_noise` uses of an engine (an :class:`MTCEngine`)."""

    @property
    def collection(self) -> Collection: ...
    @property
    def model(self) -> RelevanceModel: ...
    def set_judged_variance(self, variance: ArrayLike) -> None: ...
    def set_assessor_offsets(self, offsets: AssessorOffsets | None) -> None: ...


def apply_judged_noise(
    engine: NoisyEngine,
    measured: Disagreement,
    counts: ArrayLike,
    shares: JudgmentShares | None = None,
) -> AssessorOffsets | None:
    """Let every judged pair keep the measured disagreement (docs/method.md §10), the part
    its assessors' offsets share with their other judgments as such (§10.1); the offsets set
    on the engine, or None.

    ``counts``: the counted judgments of each pool pair (its value is their mean); ``shares``:
    who made each counted judgment and its score. A pair ``shares`` names
    keeps ``(sigma^2 - tau^2) / m`` of its own and its assessors' offsets; any other pair
    (judged since the shares were read, or without them) keeps ``sigma^2 / m``, all of it
    independent."""
    n = engine.collection.n_pairs
    m = np.broadcast_to(np.asarray(counts, dtype=np.float64), (n,))
    variance = judged_variance(measured, m)
    offsets: AssessorOffsets | None = None
    if shares is not None and shares.judgments:
        base_mean, base_var = engine.model.prior_estimates()
        tau2, assessors = offset_variance(shares, base_mean, base_var, measured.variance)
        if tau2 > 0:
            named = shares.named(n) & (m > 0)
            variance[named] = (measured.variance - tau2) / m[named]
            offsets = AssessorOffsets(tau2, shares, assessors)
    engine.set_judged_variance(variance)
    engine.set_assessor_offsets(offsets)
    return offsets
