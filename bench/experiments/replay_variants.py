"""The replay experiments of docs/replay-mirex2011.md: estimator variants that no campaign runs.

:func:`replay_variant` replays the MTC loop (:func:`mtcjudge.mtc.replay.run_replay`) with an
estimator put together from switches: the ordinal models with or without M_jud, a variance
factor learnt from the residuals (one, or one per estimate source), refits of M_out/M_jud on
the judgments, and per-system offsets learnt from out-of-sample residuals. The estimators a
campaign or ``mtcjudge simulate`` names are built by :func:`mtcjudge.mtc.factory.build_engine`;
``VariantConfig(model="ordinal", use_m_jud=False, system_effect=True, shared_errors=True)`` is
``joint`` and gives the same numbers. Bench-only: not in the wheel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from bench.experiments.refit import refit_model
from bench.experiments.scaled_model import ScaledRelevanceModel, source_variance_factors
from bench.experiments.variants import (
    OutsideOffsetsEngine,
    WideningOffsetsEngine,
    design_matrices,
    with_models,
)
from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.effects import estimate_system_effect
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import N_SOURCES, RelevanceModel
from mtcjudge.mtc.joint import JOINT_ERRORS, SystemEffectEngine
from mtcjudge.mtc.replay import ReplayResult, run_replay
from mtcjudge.mtc.scales import Scale

__all__ = ["ResidualLog", "VariantConfig", "VariantResult", "replay_variant"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


@dataclass(frozen=True)
class VariantConfig:
    """What to replay.

    Attributes
    ----------
    engine : EngineConfig
    model : {"uniform", "historical", "ordinal"}
    batch : int
        Pairs judged between two selections (N concurrent assessors).
    seed : int
    max_judgments : int or None
        Give up after this many judgments (None: until the stopping rule).
    learn_variance_factor : bool
        Inflate the estimators' variance by the observed mean squared standardised
        error of their predictions on the pairs judged so far (see docs/replay).
    calibration_prior : float
        Pseudo-observations of a perfectly calibrated model shrinking that factor.
    refit_every : int
        Refit M_out/M_jud on the judgments every this many judgments (0 = never).
    system_effect : bool
        Model a per-system offset of the estimation errors learnt from the
        residuals of the judged pairs (:mod:`mtcjudge.mtc.effects`): shifts each
        system's expected score by its empirical-Bayes offset and adds the
        offset's posterior variance to its score variance.
    system_effect_icc : float
        Prior guess of the offsets' variance ``tau0^2`` as a share of the mean
        predicted variance of the pool's estimates (0 = no prior guess).
    system_effect_prior_weight : float
        How many systems' worth of evidence that prior guess is worth.
    system_effect_shift : bool
        Also shift the expected scores (False: only widen their variance).
    use_m_jud : bool
        With the ordinal model, switch to M_jud where its features are defined
        (False: M_out only, [T] Table 8.1's estimator throughout).
    learn_source_factors : bool
        Like ``learn_variance_factor`` but with one factor per estimate source
        (M_out, M_jud, prior), each from that source's own residuals.
    shared_errors : bool
        The joint error model (``joint``, docs/method.md §8): with ``system_effect``, also
        offsets shared by the pairs of a query, an artist and a genre cell, and a common
        variance factor learnt from a random audit (one judgment in 20), all re-estimated
        after each batch.
    """

    engine: EngineConfig = field(default_factory=EngineConfig)
    model: str = "ordinal"
    batch: int = 1
    seed: int = 0
    max_judgments: int | None = None
    learn_variance_factor: bool = False
    calibration_prior: float = 20.0
    refit_every: int = 0
    system_effect: bool = False
    system_effect_icc: float = 0.0
    system_effect_prior_weight: float = 0.0
    system_effect_shift: bool = True
    learn_source_factors: bool = False
    use_m_jud: bool = True
    shared_errors: bool = False

    def __post_init__(self) -> None:
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, found {self.batch}")
        if self.max_judgments is not None and self.max_judgments < 0:
            raise ValueError(f"max_judgments must be >= 0, found {self.max_judgments}")
        if self.refit_every < 0:
            raise ValueError(f"refit_every must be >= 0, found {self.refit_every}")
        if self.calibration_prior <= 0:
            raise ValueError("calibration_prior must be positive")
        if self.system_effect_icc < 0 or self.system_effect_prior_weight < 0:
            raise ValueError("system_effect_icc and system_effect_prior_weight must be >= 0")
        if self.shared_errors and not (self.system_effect and not self.use_m_jud):
            raise ValueError("shared_errors needs system_effect and M_out only (use_m_jud False)")


def replay_variant(
    collection: Collection,
    metadata: Metadata | None,
    truth: FloatArray,
    scale: Scale,
    config: VariantConfig,
    progress: Callable[[int, float], None] | None = None,
) -> VariantResult:
    """Replay the MTC loop with the estimator variant ``config`` describes, judging from
    ``truth`` (as :func:`mtcjudge.mtc.replay.replay`)."""
    truth = scale.check_values(truth, "true judgment")
    if truth.shape != (collection.n_pairs,):
        raise ValueError(
            f"truth must hold one judgment per pool pair ({collection.n_pairs}), found "
            f"shape {truth.shape}"
        )
    rng = np.random.default_rng(config.seed)
    model = ScaledRelevanceModel(
        collection, scale, config.model, metadata, use_m_jud=config.use_m_jud
    )
    engine, calibrations = _variant_engine(collection, model, truth, scale, config, rng)

    def observe(batch: IntArray) -> None:
        for calibration in calibrations:
            calibration.observe(batch)

    def update(batch: IntArray) -> None:
        for calibration in calibrations:
            calibration.update(batch)

    result = run_replay(
        engine,
        truth,
        batch=config.batch,
        max_judgments=config.max_judgments,
        progress=progress,
        before_judging=observe,
        after_judging=update,
    )
    return VariantResult(
        **{f.name: getattr(result, f.name) for f in fields(result)},
        variance_scale=model.variance_scale,
        source_variance_scale=(
            tuple(float(x) for x in model.source_variance_scale)
            if model.source_variance_scale is not None
            else ()
        ),
    )


@dataclass(frozen=True)
class VariantResult(ReplayResult):
    """A replay's figures with the variance factors the variant learnt (1 and none unless
    ``learn_variance_factor`` / ``learn_source_factors``)."""

    variance_scale: float = 1.0
    source_variance_scale: tuple[float, ...] = ()

    def summary(self) -> dict[str, object]:
        """JSON-ready dict of every figure, the learnt factors included."""
        return {
            **super().summary(),
            "variance_scale": self.variance_scale,
            "source_variance_scale": list(self.source_variance_scale),
        }


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


# ---------------------------------------------------------------- calibration experiments
class _Calibration:
    """One calibration experiment of :class:`VariantConfig`, run alongside the loop.

    Each batch is shown to :meth:`observe` before it is judged (while the engine still holds
    the predictions for it, so their errors are out of sample) and to :meth:`update` after.
    """

    def observe(self, batch: IntArray) -> None:
        """Note the predictions the engine holds for ``batch`` (before it is judged)."""

    def update(self, batch: IntArray) -> None:
        """Re-calibrate after ``batch`` was judged."""


def _variant_engine(
    collection: Collection,
    model: ScaledRelevanceModel,
    truth: FloatArray,
    scale: Scale,
    config: VariantConfig,
    rng: np.random.Generator,
) -> tuple[MTCEngine, list[_Calibration]]:
    """The engine ``config`` asks for and its calibration experiments, in the order they update."""
    calibrations: list[_Calibration] = []
    system_effect: _SystemEffect | None = None
    engine: MTCEngine
    if config.system_effect:
        engine_config = config.engine
        if engine_config.min_judgments == 0:
            # the offsets need residuals before the confidence they adjust means anything
            engine_config = replace(engine_config, min_judgments=2 * collection.n_systems)
        if config.shared_errors:  # the joint engine learns its offsets in every judge()
            engine = SystemEffectEngine(
                collection,
                model,
                engine_config,
                rng=rng,
                errors=JOINT_ERRORS,
                metadata=model.metadata,
            )
        else:  # the offsets of the residuals logged before each judgment, set from outside
            variant = OutsideOffsetsEngine if config.system_effect_shift else WideningOffsetsEngine
            effect_engine = variant(collection, model, engine_config, rng=rng)
            system_effect = _SystemEffect(effect_engine, truth, config)
            engine = effect_engine
    else:
        engine = MTCEngine(collection, model, config.engine, rng=rng)
    if config.learn_variance_factor:
        calibrations.append(_VarianceScale(engine, model, truth, config.calibration_prior))
    if config.learn_source_factors:
        calibrations.append(_SourceVarianceScales(engine, model, truth, config.calibration_prior))
    if config.refit_every:
        calibrations.append(_Refit(engine, scale, rng, config.refit_every))
    if system_effect is not None:
        calibrations.append(system_effect)
    return engine, calibrations


#: a new variance factor replaces the current one when they differ by more than this share
_FACTOR_TOLERANCE = 0.02


class _VarianceScale(_Calibration):
    """``learn_variance_factor``: one factor, the shrunk mean squared standardised error."""

    def __init__(
        self, engine: MTCEngine, model: ScaledRelevanceModel, truth: FloatArray, prior: float
    ) -> None:
        self.engine, self.model, self.truth, self.prior = engine, model, truth, prior
        self.z2_sum = 0.0
        self.z2_n = 0

    def observe(self, batch: IntArray) -> None:
        engine = self.engine
        variance = engine.var[batch] / self.model.variance_scale  # the model's own variance
        ok = variance > 0
        error2 = (self.truth[batch] - engine.mean[batch]) ** 2
        self.z2_sum += float((error2[ok] / variance[ok]).sum())
        self.z2_n += int(ok.sum())

    def update(self, batch: IntArray) -> None:  # noqa: ARG002
        if not self.z2_n:
            return
        model = self.model
        factor = max(1.0, (self.prior + self.z2_sum) / (self.prior + self.z2_n))
        if abs(factor / model.variance_scale - 1.0) > _FACTOR_TOLERANCE:
            model.variance_scale = factor
            self.engine.reestimate()


class _SourceVarianceScales(_Calibration):
    """``learn_source_factors``: one factor per estimate source, from its own residuals."""

    def __init__(
        self, engine: MTCEngine, model: ScaledRelevanceModel, truth: FloatArray, prior: float
    ) -> None:
        self.engine, self.model, self.truth, self.prior = engine, model, truth, prior
        # (source, residual, model variance) of every judged pair's prediction
        self.log: list[tuple[int, float, float]] = []

    def observe(self, batch: IntArray) -> None:
        engine = self.engine
        factors = self.model.variance_factor(engine.source[batch])
        self.log.extend(
            (int(engine.source[p]), float(self.truth[p] - engine.mean[p]), float(engine.var[p] / f))
            for p, f in zip(batch, factors, strict=True)
        )

    def update(self, batch: IntArray) -> None:  # noqa: ARG002
        if not self.log:
            return
        arr = np.array(self.log)
        factors = source_variance_factors(
            arr[:, 0].astype(np.intp), arr[:, 1], arr[:, 2], N_SOURCES, prior=self.prior
        )
        model = self.model
        old = model.source_variance_scale
        if old is None or np.any(np.abs(factors / old - 1.0) > _FACTOR_TOLERANCE):
            model.set_source_variance_scale(factors)
            self.engine.reestimate()


class _Refit(_Calibration):
    """``refit_every``: refit M_out and M_jud on the judgments every so many judgments."""

    def __init__(
        self, engine: MTCEngine, scale: Scale, rng: np.random.Generator, every: int
    ) -> None:
        self.engine, self.scale, self.rng, self.every = engine, scale, rng, every

    def update(self, batch: IntArray) -> None:
        if self.engine.n_judged % self.every < len(batch):
            _refit(self.engine, self.engine.model, self.scale, self.rng)


class _SystemEffect(_Calibration):
    """``system_effect``: per-system offsets learnt from the out-of-sample residuals."""

    def __init__(
        self, engine: SystemEffectEngine, truth: FloatArray, config: VariantConfig
    ) -> None:
        self.engine, self.truth = engine, truth
        self.prior_weight = config.system_effect_prior_weight
        self.log = ResidualLog.empty()
        open_var = engine.var[~engine.judged]
        self.tau2_prior = (
            config.system_effect_icc * float(open_var.mean()) if open_var.size else 0.0
        )
        self._estimate()

    def observe(self, batch: IntArray) -> None:
        self.log.record(self.engine, batch, self.truth)

    def update(self, batch: IntArray) -> None:  # noqa: ARG002
        self._estimate()

    def _estimate(self) -> None:
        """Re-estimate the per-system offsets from the residuals logged so far."""
        system, residual, variance, _ = self.log.arrays()
        self.engine.effect = estimate_system_effect(
            system,
            residual,
            variance,
            self.engine.collection.n_systems,
            tau2_prior=self.tau2_prior,
            prior_weight=self.prior_weight,
        )
        self.engine.invalidate()


def _refit(
    engine: MTCEngine, model: RelevanceModel, scale: Scale, rng: np.random.Generator
) -> None:
    """Refit M_out and M_jud on the judged pairs; keep a refit only if it predicts better."""
    if model.kind != "ordinal":
        return
    pairs = np.flatnonzero(engine.judged)
    x_out, x_jud = design_matrices(model, engine.judged, engine.values, pairs)
    y = engine.values[pairs]
    changed = False
    if x_out is not None:
        ok = ~np.isnan(x_out).any(axis=1)
        res = refit_model(model.m_out, x_out[ok], y[ok], scale, rng)
        if res.used:
            with_models(model, m_out=res.model)
            changed = True
    ok = ~np.isnan(x_jud).any(axis=1)
    res = refit_model(model.m_jud, x_jud[ok], y[ok], scale, rng)
    if res.used:
        with_models(model, m_jud=res.model)
        changed = True
    if changed:
        engine.reestimate()
