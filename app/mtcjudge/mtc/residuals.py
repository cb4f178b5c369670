"""What the error offsets are learnt from: the judged pairs' residuals against their
judgment-free estimates (docs/method.md §8.1, §8.2).

:func:`judged_residuals` makes them once per learning step; ``joint``'s variance factors (one
per variance stratum, :mod:`mtcjudge.mtc.strata`) are the shrunk mean squared standardised
residual (:func:`standardised_squares`, :data:`VARIANCE_PRIOR`) of a fair sample of the pairs
left on estimates (:func:`variance_sample`). The functions read an engine through
:class:`LearningEngine` and change nothing.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.collection import Collection
from mtcjudge.mtc.effects import SystemEffect
from mtcjudge.mtc.engine_config import EngineConfig
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.masses import judged_entries

__all__ = [
    "VARIANCE_PRIOR",
    "JudgedResiduals",
    "LearningEngine",
    "judged_residuals",
    "standardised_squares",
    "variance_sample",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


class LearningEngine(Protocol):
    """What the learning reads of an engine (:class:`mtcjudge.mtc.joint.SystemEffectEngine`):
    its judgments, its relevance model, its audit and the levels its offsets are shared
    at."""

    @property
    def collection(self) -> Collection: ...
    @property
    def config(self) -> EngineConfig: ...
    @property
    def judged(self) -> NDArray[np.bool_]: ...
    @property
    def values(self) -> FloatArray: ...
    @property
    def audit_every(self) -> int: ...
    @property
    def audit_drawn(self) -> NDArray[np.bool_] | None: ...
    @property
    def variance_stratum(self) -> IntArray | None: ...
    @property
    def result_groups(self) -> IntArray | None: ...
    @property
    def factors(self) -> tuple[tuple[str, IntArray], ...]: ...
    @property
    def model(self) -> RelevanceModel: ...


class JudgedResiduals(NamedTuple):
    """The judged entries (sorted by pair), their pairs, the residual of each against its
    judgment-free estimate, and that estimate's variance (the model's own, without a
    variance factor): what every offset is learnt from, made once per learning step."""

    entries: IntArray
    pairs: IntArray
    residual: FloatArray
    variance: FloatArray

    def first_of_pair(self) -> IntArray:
        """Index of each judged pair's first entry (the entries are sorted by pair)."""
        p = self.pairs
        return np.flatnonzero(np.concatenate(([True], p[1:] != p[:-1]))) if p.size else p


def judged_residuals(
    engine: LearningEngine, model: RelevanceModel, kept: NDArray[np.bool_] | None = None
) -> JudgedResiduals:
    """:class:`JudgedResiduals` of the engine's judgments under ``model``; with ``kept`` (a
    mask over the pool), of the judgments of those pairs only (the others left out)."""
    c = engine.collection
    base_mean, base_var = model.prior_estimates()
    entries = judged_entries(c, engine.judged if kept is None else kept)
    pairs = c.entry_pair[entries]
    residual = engine.values[pairs] - base_mean[pairs]
    return JudgedResiduals(entries, pairs, residual, base_var[pairs])


#: pseudo-observations of a calibrated model (z² = 1) behind every variance factor
VARIANCE_PRIOR = 20.0


def variance_sample(engine: LearningEngine, pairs: IntArray) -> slice | NDArray[np.bool_]:
    """Which of the judged entries (of ``pairs``) the variance factors are learnt from: with an
    audit, the audit sample alone, since the pairs the policy chose for being informative are
    not a fair sample of those left on estimates; under the random policy every judgment is a
    random draw among them, and all of them count."""
    if engine.audit_every and engine.audit_drawn is not None and engine.config.policy != "random":
        return engine.audit_drawn[pairs]
    return slice(None)


def standardised_squares(
    residual: FloatArray,
    variance: FloatArray,
    systems: IntArray,
    pairs: IntArray,
    effect: SystemEffect,
) -> tuple[IntArray, FloatArray]:
    """Each judged pair once (its entries share one residual), and its squared residual once
    its systems' offsets are taken out (their mean), over its variance. The entries come as
    the judged residuals hold them, sorted by pair."""
    if pairs.size == 0:
        return pairs, np.empty(0)
    first = np.flatnonzero(np.concatenate(([True], pairs[1:] != pairs[:-1])))
    count = np.diff(np.append(first, pairs.shape[0]))
    offset = np.add.reduceat(effect.bias[systems], first) / count
    z2 = (residual[first] - offset) ** 2 / np.maximum(variance[first], 1e-9)
    return pairs[first], np.asarray(z2, dtype=np.float64)
