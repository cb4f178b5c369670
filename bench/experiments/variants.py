"""Engine and estimator variants that no campaign runs, for the experiments of bench/.

The product builds one engine per estimator (:func:`mtcjudge.mtc.factory.build_engine`);
the experiments need a few more, put together here from the product's own pieces:

* :class:`OutsideOffsetsEngine`: the system-effect engine whose per-system offsets an
  experiment sets itself (the replay variants' offsets of out-of-sample residuals,
  :mod:`bench.experiments.replay_variants`): it learns nothing from its judgments.
* :class:`WideningOffsetsEngine`: the same, with offsets that only widen the score
  distributions (the expected scores stay those of the estimates).
* :class:`OneKappaEngine`: ``joint`` of before its variance strata, one variance factor κ
  for every pair (:data:`ONE_KAPPA_ERRORS`; bench/calibration.py's ``joint-one-kappa``).
* :func:`build_engine_with_errors`: ``calibrated`` or ``joint`` with another error model
  (and another engine class, such as :class:`OneKappaEngine`).
* :func:`design_matrices` and :func:`with_models`: refits of M_out and M_jud on the
  judgments, swapped into a relevance model (the replay variants' ``refit_every``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.effects import EntryOffsets, ErrorOffsets, SystemEffect, estimate_system_effect
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.estimators import OrdinalModel, RelevanceModel
from mtcjudge.mtc.factory import CALIBRATED, JOINT, build_engine
from mtcjudge.mtc.joint import JOINT_ERRORS, ErrorModel, SystemEffectEngine
from mtcjudge.mtc.offset_learning import (
    LearntOffsets,
    offsets_around,
    pair_offsets,
    system_effect_from_judgments,
)
from mtcjudge.mtc.residuals import (
    VARIANCE_PRIOR,
    JudgedResiduals,
    judged_residuals,
    standardised_squares,
    variance_sample,
)
from mtcjudge.mtc.scales import Scale

__all__ = [
    "ONE_KAPPA_ERRORS",
    "OneKappaEngine",
    "OutsideOffsetsEngine",
    "WideningOffsetsEngine",
    "build_engine_with_errors",
    "design_matrices",
    "one_kappa_effect",
    "variance_scale",
    "with_models",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


class OutsideOffsetsEngine(SystemEffectEngine):
    """A :class:`~mtcjudge.mtc.joint.SystemEffectEngine` that learns nothing from its
    judgments: the experiment sets :attr:`effect` itself and calls :meth:`invalidate`."""

    def learn_from_judgments(self) -> None:
        """Nothing to learn: the offsets are set from outside."""


class WideningOffsetsEngine(OutsideOffsetsEngine):
    """An :class:`OutsideOffsetsEngine` whose offsets only widen the score distributions: each
    system's variance grows by ``f_A^2 Var[b_A]`` (and by the shared offsets' terms), its
    expected score stays the estimates' (the offsets have mean 0 in the distributions)."""

    @property
    def offsets(self) -> ErrorOffsets | None:
        """The offsets the distributions include: those set, at mean 0."""
        offsets = super().offsets
        if offsets is None:
            return None
        system = replace(offsets.system, mu=0.0, bias=np.zeros_like(offsets.system.bias))
        return replace(offsets, system=system)

    def entry_shift(self) -> FloatArray:
        """No entry moves: 0 for every entry."""
        return np.zeros(self.collection.entry_pair.shape[0])

    def entry_offsets(self) -> EntryOffsets:
        """The factors and their posteriors, with no entry's expectation moved."""
        offsets = super().entry_offsets()
        return replace(offsets, offset=np.zeros_like(offsets.offset))

    def moments(self) -> tuple[FloatArray, FloatArray]:
        """The estimates' expected scores, and their covariance with the offsets' posterior
        variances added (:meth:`~mtcjudge.mtc.joint.SystemEffectEngine.offset_covariance`)."""
        nq = self.collection.n_queries
        mean = self.score_sum / nq
        cov = self.t_mat / nq**2
        if self.effect is None:
            return mean, cov
        return mean, self.offset_covariance(cov, self.offset_masses(self.unjudged_mass()))

    def expectation_from(
        self, judged: NDArray[np.bool_], pairs: slice | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """The judgment-free estimate, with the variance of the offsets learnt from
        ``judged`` added to its own."""
        parts = pair_offsets(self, self.learnt_offsets(judged), pairs)
        return parts.mean, parts.var + parts.offset_var


#: ``joint``'s error model without variance strata, for :class:`OneKappaEngine`
ONE_KAPPA_ERRORS = replace(JOINT_ERRORS, variance_strata=0)


def variance_scale(
    residual: FloatArray,
    variance: FloatArray,
    systems: IntArray,
    pairs: IntArray,
    effect: SystemEffect,
    *,
    prior: float = VARIANCE_PRIOR,
) -> float:
    """Common factor on the estimation variances (the one κ): the shrunk mean squared
    standardised residual of the judged pairs once their systems' offsets are taken out
    (:func:`~mtcjudge.mtc.residuals.standardised_squares`; the entries sorted by pair).

    ``prior`` pseudo-observations of a calibrated model (z^2 = 1) keep a few early surprises
    from exploding the factor, and the factor is never below 1: judgments may widen the
    distributions, not narrow them. (``joint``'s variance strata learn one such factor per
    stratum, :func:`mtcjudge.mtc.strata.stratum_factors`.)
    """
    z2 = standardised_squares(residual, variance, systems, pairs, effect)[1]
    return float(max(1.0, (prior + z2.sum()) / (prior + z2.size)))


def one_kappa_effect(engine: SystemEffectEngine, judged: JudgedResiduals) -> SystemEffect:
    """The per-system offsets from the judged residuals ``judged``, with one variance factor
    κ for every pair (:attr:`~mtcjudge.mtc.effects.SystemEffect.variance_scale`): κ is
    :func:`variance_scale` over the judged pairs of the audit (every judged pair under the
    random policy, :func:`~mtcjudge.mtc.residuals.variance_sample`) once the offsets are
    taken out, and the offsets are estimated again with the residuals' variances times κ."""
    c = engine.collection
    effect = system_effect_from_judgments(engine, engine.model, judged=judged)
    entries, pairs, residual, variance = judged
    if pairs.size == 0:
        return effect
    systems = c.entry_system[entries]
    keep = variance_sample(engine, pairs)
    kappa = variance_scale(residual[keep], variance[keep], systems[keep], pairs[keep], effect)
    if kappa == 1.0:  # the common case: the offsets just estimated stand
        return effect
    effect = estimate_system_effect(systems, residual, kappa * variance, c.n_systems)
    return replace(effect, variance_scale=kappa)


class OneKappaEngine(SystemEffectEngine):
    """``joint`` of before its variance strata (docs/experiments/2026-11-27-packed-suite.md):
    one variance factor κ for every pair, learnt from the audit (:func:`one_kappa_effect`),
    scales the estimates' variances in the score distributions
    (:attr:`~mtcjudge.mtc.effects.SystemEffect.variance_scale`) and in what the result
    groups' and the further factors' offsets are learnt from. Built with an error model
    without strata (:data:`ONE_KAPPA_ERRORS`): κ takes their place."""

    def learnt_offsets(self, judged: NDArray[np.bool_]) -> LearntOffsets:
        """The offsets learnt from the judgments of ``judged``, with the one κ in the system
        offsets' :attr:`~mtcjudge.mtc.effects.SystemEffect.variance_scale`."""
        if self.variance_stratum is not None:
            raise ValueError("the one κ takes the place of the variance strata: variance_strata=0")
        residuals = judged_residuals(self, self.model, judged)
        return offsets_around(self, residuals, one_kappa_effect(self, residuals))


def build_engine_with_errors(
    collection: Collection,
    metadata: Metadata | None,
    scale: Scale,
    estimator: str,
    config: EngineConfig | None = None,
    *,
    errors: ErrorModel,
    engine_class: type[SystemEffectEngine] = SystemEffectEngine,
    seed: int = 0,
    judged_values: NDArray[np.float64] | None = None,
    audit_drawn: NDArray[np.bool_] | None = None,
) -> tuple[SystemEffectEngine, RelevanceModel]:
    """The engine of ``calibrated`` or ``joint`` (``estimator``) with the error model
    ``errors`` in place of the estimator's, an ``engine_class`` (:class:`OneKappaEngine`:
    what it learns differs too): the relevance model and the settings
    :func:`~mtcjudge.mtc.factory.build_engine` gives the estimator, so that only the error
    model (and the engine class) differs."""
    if estimator not in (CALIBRATED, JOINT):
        raise ValueError(f"only {CALIBRATED} and {JOINT} have an error model, not {estimator!r}")
    built, model = build_engine(collection, metadata, scale, estimator, config, seed=seed)
    engine = engine_class(
        collection,
        model,
        built.config,
        judged_values=judged_values,
        rng=np.random.default_rng(seed),
        errors=errors,
        metadata=metadata,
        audit_drawn=audit_drawn,
    )
    return engine, model


def with_models(
    model: RelevanceModel, m_out: OrdinalModel | None = None, m_jud: OrdinalModel | None = None
) -> None:
    """Swap refitted models into ``model`` (its next estimates use them)."""
    if m_out is not None:
        model.m_out = m_out
        if model.features is not None:
            model._apply_m_out()  # the judgment-free estimates of the new M_out
    if m_jud is not None:
        model.m_jud = m_jud


def design_matrices(
    model: RelevanceModel, judged: NDArray[np.bool_], values: FloatArray, pairs: IntArray
) -> tuple[FloatArray | None, FloatArray]:
    """M_out and M_jud design rows of ``pairs`` computed with each pair left out.

    For M_jud the judged value of the pair itself is hidden, so the features
    are those the model saw (or would have seen) before judging it. Rows where
    a model does not apply are NaN.
    """
    x_out = model.features.matrix()[pairs] if model.features is not None else None
    if x_out is not None and model.features is not None:
        x_out[~model.features.applicable[pairs]] = np.nan
    x_jud = np.full((pairs.shape[0], 3), np.nan)
    hidden = judged.copy()
    for i, p in enumerate(pairs):
        q = int(model.collection.pair_query[p])
        hidden[p] = False
        x, ok = model.jud_design(hidden, values, q)
        hidden[p] = judged[p]
        local = p - int(model.collection.query_start[q])
        if ok[local]:
            x_jud[i] = x[local]
    return x_out, x_jud
