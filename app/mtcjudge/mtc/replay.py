"""Offline replay of the MTC loop on a fully judged collection ([T] 8.3, [U12] 6).

The loop judges pairs in the order the engine asks for them, reading the answer
from the known judgments, until the stopping rule holds. At every step it
records the ranking confidence the engine *claims* and the sign accuracy it
*achieves* against the ranking under complete judgments, so the two can be
compared: a trustworthy configuration reaches the target confidence with few
judgments while its accuracy at the stop is at least the confidence claimed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray
from scipy.stats import kendalltau

from mtcjudge.mtc.calibration import (
    ResidualLog,
    SystemEffectEngine,
    estimate_system_effect,
    source_variance_factors,
)
from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import N_SOURCES, RelevanceModel, refit_model
from mtcjudge.mtc.measures import Evaluation, evaluate
from mtcjudge.mtc.scales import Scale

__all__ = [
    "CONFIDENCE_BINS",
    "TIE_TOLERANCE",
    "CalibrationBin",
    "ReplayConfig",
    "ReplayResult",
    "TrajectoryPoint",
    "calibration_table",
    "correct_signs",
    "replay",
    "sign_accuracy",
    "true_ties",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
#: confidence bins of [T] Tables 8.2 and 8.4
CONFIDENCE_BINS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0)


@dataclass(frozen=True)
class ReplayConfig:
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
    calibrate_variance : bool
        Inflate the estimators' variance by the observed mean squared standardised
        error of their predictions on the pairs judged so far (see docs/replay).
    calibration_prior : float
        Pseudo-observations of a perfectly calibrated model shrinking that factor.
    refit_every : int
        Refit M_out/M_jud on the judgments every this many judgments (0 = never).
    system_effect : bool
        Model a per-system offset of the estimation errors learnt from the
        residuals of the judged pairs (:mod:`mtcjudge.mtc.calibration`): shifts each
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
    calibrate_by_source : bool
        Like ``calibrate_variance`` but with one factor per estimate source
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
    calibrate_variance: bool = False
    calibration_prior: float = 20.0
    refit_every: int = 0
    system_effect: bool = False
    system_effect_icc: float = 0.0
    system_effect_prior_weight: float = 0.0
    system_effect_shift: bool = True
    calibrate_by_source: bool = False
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


@dataclass(frozen=True)
class TrajectoryPoint:
    """State after ``judgments`` judgments."""

    judgments: int
    ranking_confidence: float
    sign_accuracy: float


@dataclass(frozen=True)
class CalibrationBin:
    """Pairs whose confidence lies in [low, high): how many, and how many were right."""

    low: float
    high: float
    count: int
    accuracy: float
    mean_confidence: float


@dataclass(frozen=True)
class ReplayResult:
    """Effort and accuracy of one replay.

    ``judgments_to_target`` is the number of judgments made when the stopping
    rule held (``stop_reason``); ``sign_accuracy`` is the share of system pairs
    whose estimated order equals the order under complete judgments.
    """

    pool_size: int
    judgments_to_target: int
    fraction_judged: float
    final_confidence: float
    sign_accuracy: float
    kendall_tau: float
    mean_abs_error: float
    rmse_difference: float
    stop_reason: str
    initial_confidence: float
    initial_accuracy: float
    trajectory: list[TrajectoryPoint]
    calibration: list[CalibrationBin]
    estimated_means: FloatArray
    true_means: FloatArray
    variance_scale: float
    seconds: float
    system_tau2: float = 0.0
    source_variance_scale: tuple[float, ...] = ()

    def summary(self) -> dict[str, object]:
        """JSON-ready dict of every figure."""
        return {
            "pool_size": self.pool_size,
            "judgments_to_target": self.judgments_to_target,
            "fraction_judged": self.fraction_judged,
            "final_confidence": self.final_confidence,
            "sign_accuracy": self.sign_accuracy,
            "kendall_tau": self.kendall_tau,
            "mean_abs_error": self.mean_abs_error,
            "rmse_difference": self.rmse_difference,
            "stop_reason": self.stop_reason,
            "initial_confidence": self.initial_confidence,
            "initial_accuracy": self.initial_accuracy,
            "variance_scale": self.variance_scale,
            "system_tau2": self.system_tau2,
            "source_variance_scale": list(self.source_variance_scale),
            "seconds": self.seconds,
            "trajectory": [
                {
                    "judgments": t.judgments,
                    "ranking_confidence": t.ranking_confidence,
                    "sign_accuracy": t.sign_accuracy,
                }
                for t in self.trajectory
            ],
            "calibration": [
                {
                    "low": b.low,
                    "high": b.high,
                    "count": b.count,
                    "accuracy": None if np.isnan(b.accuracy) else b.accuracy,
                    "mean_confidence": None if np.isnan(b.mean_confidence) else b.mean_confidence,
                }
                for b in self.calibration
            ],
        }


#: two scores closer than this are a tie (sums of the same values in another order differ
#: by a few units in the last place; distinct scores of a collection differ by far more)
TIE_TOLERANCE = 1e-12


def _signs(scores: FloatArray) -> NDArray[np.int8]:
    """Sign of ``scores[i] - scores[j]`` for every unordered pair, 0 for a tie."""
    iu = np.triu_indices(scores.shape[0], 1)
    d = scores[iu[0]] - scores[iu[1]]
    return np.where(np.abs(d) <= TIE_TOLERANCE, 0, np.sign(d)).astype(np.int8)


def correct_signs(estimated: FloatArray, truth: FloatArray) -> NDArray[np.bool_]:
    """Per unordered system pair (``numpy.triu_indices`` order): is the estimated order
    the true one?

    Ties are counted strictly (docs/calibration.md): a pair whose true scores are equal
    is right only if the estimated scores are equal too, and a pair estimated as a tie
    is right only if it truly is one.
    """
    return np.asarray(_signs(estimated) == _signs(truth), dtype=np.bool_)


def true_ties(truth: FloatArray) -> NDArray[np.bool_]:
    """Per unordered system pair: are the true scores equal (within :data:`TIE_TOLERANCE`)?"""
    return np.asarray(_signs(truth) == 0, dtype=np.bool_)


def _tau(estimated: FloatArray, truth: FloatArray) -> float:
    """Kendall's tau-b; 0 when one ranking is constant (no agreement to measure)."""
    if np.ptp(estimated) == 0 or np.ptp(truth) == 0:
        return 0.0
    return float(kendalltau(estimated, truth).statistic)


def sign_accuracy(estimated: FloatArray, truth: FloatArray) -> float:
    """Share of system pairs ordered as under complete judgments ([T] "Acc"), true ties
    counted strictly (:func:`correct_signs`)."""
    correct = correct_signs(estimated, truth)
    return float(correct.mean()) if correct.size else 1.0


def calibration_table(
    evaluation: Evaluation, truth: FloatArray, bins: tuple[float, ...] = CONFIDENCE_BINS
) -> list[CalibrationBin]:
    """Pairs binned by claimed confidence with their actual accuracy ([T] Table 8.4)."""
    iu = np.triu_indices(truth.shape[0], 1)
    conf = evaluation.pair_confidence[iu]
    correct = correct_signs(evaluation.mean, truth)
    table = []
    for i, (low, high) in enumerate(itertools.pairwise(bins)):
        last = i == len(bins) - 2
        inside = (conf >= low) & ((conf <= high) if last else (conf < high))
        n = int(inside.sum())
        table.append(
            CalibrationBin(
                low,
                high,
                n,
                float(correct[inside].mean()) if n else float("nan"),
                float(conf[inside].mean()) if n else float("nan"),
            )
        )
    return table


def replay(
    collection: Collection,
    metadata: Metadata | None,
    truth: FloatArray,
    scale: Scale,
    config: ReplayConfig,
    progress: Callable[[int, float], None] | None = None,
) -> ReplayResult:
    """Replay the MTC loop, judging from ``truth``.

    Parameters
    ----------
    collection : Collection
    metadata : Metadata or None
    truth : ndarray of shape (n_pairs,)
        The judgment of every pool pair (no NaN).
    scale : Scale
    config : ReplayConfig
    progress : callable, optional
        Called as ``progress(n_judged, ranking_confidence)`` after every batch.
    """
    truth = scale.check_values(truth, "true judgment")
    if truth.shape != (collection.n_pairs,):
        raise ValueError(
            f"truth must hold one judgment per pool pair ({collection.n_pairs}), found "
            f"shape {truth.shape}"
        )
    started = time.perf_counter()
    rng = np.random.default_rng(config.seed)
    complete = _complete_evaluation(collection, truth, scale, config.engine)
    model = RelevanceModel(collection, scale, config.model, metadata, use_m_jud=config.use_m_jud)
    engine, calibrations = _replay_engine(collection, model, truth, scale, config, rng)
    trajectory = [_trajectory_point(engine, complete.mean)]
    limit = config.max_judgments if config.max_judgments is not None else collection.n_pairs
    reason = engine.stop_reason()
    while reason is None and engine.n_judged < limit:
        batch = engine.select(min(config.batch, limit - engine.n_judged))
        for calibration in calibrations:
            calibration.observe(batch)
        engine.judge(batch, truth[batch])
        for calibration in calibrations:
            calibration.update(batch)
        trajectory.append(_trajectory_point(engine, complete.mean))
        if progress is not None:
            progress(engine.n_judged, trajectory[-1].ranking_confidence)
        reason = engine.stop_reason()
    return _replay_result(engine, complete, trajectory, reason or "max_judgments", started)


def _complete_evaluation(
    collection: Collection, truth: FloatArray, scale: Scale, config: EngineConfig
) -> Evaluation:
    """The scores under complete judgments: what the replay's estimates are compared with."""
    return evaluate(
        collection,
        truth,
        np.zeros_like(truth),
        config.measure,
        scale,
        rbp_p=config.rbp_p,
        distribution=config.distribution,
    )


def _trajectory_point(engine: MTCEngine, true_means: FloatArray) -> TrajectoryPoint:
    evaluation = engine.evaluation()
    return TrajectoryPoint(
        engine.n_judged,
        evaluation.ranking_confidence,
        sign_accuracy(evaluation.mean, true_means),
    )


def _replay_result(
    engine: MTCEngine,
    complete: Evaluation,
    trajectory: list[TrajectoryPoint],
    reason: str,
    started: float,
) -> ReplayResult:
    collection, model = engine.collection, engine.model
    final = engine.evaluation()
    true_means = complete.mean
    iu = np.triu_indices(collection.n_systems, 1)
    return ReplayResult(
        pool_size=collection.n_pairs,
        judgments_to_target=engine.n_judged,
        fraction_judged=engine.n_judged / collection.n_pairs,
        final_confidence=final.ranking_confidence,
        sign_accuracy=sign_accuracy(final.mean, true_means),
        kendall_tau=_tau(final.mean, true_means),
        mean_abs_error=float(np.abs(final.mean - true_means).mean()),
        rmse_difference=float(
            np.sqrt(np.mean((final.diff_mean[iu] - complete.diff_mean[iu]) ** 2))
        ),
        stop_reason=reason,
        initial_confidence=trajectory[0].ranking_confidence,
        initial_accuracy=trajectory[0].sign_accuracy,
        trajectory=trajectory,
        calibration=calibration_table(final, true_means),
        estimated_means=final.mean,
        true_means=true_means,
        variance_scale=model.variance_scale,
        seconds=time.perf_counter() - started,
        system_tau2=engine.system_tau2,
        source_variance_scale=(
            tuple(float(x) for x in model.source_variance_scale)
            if model.source_variance_scale is not None
            else ()
        ),
    )


# ---------------------------------------------------------------- calibration experiments
class _Calibration:
    """One calibration experiment of :class:`ReplayConfig`, run alongside the loop.

    Each batch is shown to :meth:`observe` before it is judged (while the engine still holds
    the predictions for it, so their errors are out of sample) and to :meth:`update` after.
    """

    def observe(self, batch: IntArray) -> None:
        """Note the predictions the engine holds for ``batch`` (before it is judged)."""

    def update(self, batch: IntArray) -> None:
        """Re-calibrate after ``batch`` was judged."""


def _replay_engine(
    collection: Collection,
    model: RelevanceModel,
    truth: FloatArray,
    scale: Scale,
    config: ReplayConfig,
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
        effect_engine = SystemEffectEngine(collection, model, engine_config, rng=rng)
        if config.shared_errors:
            effect_engine.share_errors(model.metadata)
            calibrations.append(_Recalibrate(effect_engine))
        else:
            system_effect = _SystemEffect(effect_engine, truth, config)
        engine = effect_engine
    else:
        engine = MTCEngine(collection, model, config.engine, rng=rng)
    if config.calibrate_variance:
        calibrations.append(_VarianceScale(engine, truth, config.calibration_prior))
    if config.calibrate_by_source:
        calibrations.append(_SourceVarianceScales(engine, truth, config.calibration_prior))
    if config.refit_every:
        calibrations.append(_Refit(engine, scale, rng, config.refit_every))
    if system_effect is not None:
        calibrations.append(system_effect)
    return engine, calibrations


#: a new variance factor replaces the current one when they differ by more than this share
_FACTOR_TOLERANCE = 0.02


class _VarianceScale(_Calibration):
    """``calibrate_variance``: one factor, the shrunk mean squared standardised error."""

    def __init__(self, engine: MTCEngine, truth: FloatArray, prior: float) -> None:
        self.engine, self.truth, self.prior = engine, truth, prior
        self.z2_sum = 0.0
        self.z2_n = 0

    def observe(self, batch: IntArray) -> None:
        engine = self.engine
        variance = engine.var[batch] / engine.model.variance_scale  # the model's own variance
        ok = variance > 0
        error2 = (self.truth[batch] - engine.mean[batch]) ** 2
        self.z2_sum += float((error2[ok] / variance[ok]).sum())
        self.z2_n += int(ok.sum())

    def update(self, batch: IntArray) -> None:  # noqa: ARG002
        if not self.z2_n:
            return
        model = self.engine.model
        factor = max(1.0, (self.prior + self.z2_sum) / (self.prior + self.z2_n))
        if abs(factor / model.variance_scale - 1.0) > _FACTOR_TOLERANCE:
            model.variance_scale = factor
            self.engine.reestimate()


class _SourceVarianceScales(_Calibration):
    """``calibrate_by_source``: one factor per estimate source, from its own residuals."""

    def __init__(self, engine: MTCEngine, truth: FloatArray, prior: float) -> None:
        self.engine, self.truth, self.prior = engine, truth, prior
        # (source, residual, model variance) of every judged pair's prediction
        self.log: list[tuple[int, float, float]] = []

    def observe(self, batch: IntArray) -> None:
        engine = self.engine
        factors = engine.model.variance_factor(engine.source[batch])
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
        model = self.engine.model
        old = model.source_variance_scale
        if old is None or np.any(np.abs(factors / old - 1.0) > _FACTOR_TOLERANCE):
            model.set_source_variance_scale(factors)
            self.engine.reestimate()


class _Recalibrate(_Calibration):
    """``shared_errors``: the engine re-estimates every offset from its judgments, as a
    campaign's engine does (:meth:`SystemEffectEngine.recalibrate`)."""

    def __init__(self, engine: SystemEffectEngine) -> None:
        self.engine = engine
        engine.recalibrate()

    def update(self, batch: IntArray) -> None:  # noqa: ARG002
        self.engine.recalibrate()


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

    def __init__(self, engine: SystemEffectEngine, truth: FloatArray, config: ReplayConfig) -> None:
        self.engine, self.truth = engine, truth
        self.prior_weight = config.system_effect_prior_weight
        self.log = ResidualLog.empty()
        engine.shift_means = config.system_effect_shift
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
    x_out, x_jud = model.design_matrices(engine.judged, engine.values, pairs)
    y = engine.values[pairs]
    changed = False
    if x_out is not None:
        ok = ~np.isnan(x_out).any(axis=1)
        res = refit_model(model.m_out, x_out[ok], y[ok], scale, rng)
        if res.used:
            model.with_models(m_out=res.model)
            changed = True
    ok = ~np.isnan(x_jud).any(axis=1)
    res = refit_model(model.m_jud, x_jud[ok], y[ok], scale, rng)
    if res.used:
        model.with_models(m_jud=res.model)
        changed = True
    if changed:
        engine.reestimate()
