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
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy.stats import kendalltau

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, ESTIMATOR_CHOICES, build_engine
from mtcjudge.mtc.measures import TIE_TOLERANCE, Evaluation, evaluate
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
    "run_replay",
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
    estimator : str
        The estimator, by name (:data:`mtcjudge.mtc.factory.ESTIMATOR_CHOICES`); the
        engine is the one a campaign with that estimator runs
        (:func:`mtcjudge.mtc.factory.build_engine`).
    batch : int
        Pairs judged between two selections (N concurrent assessors).
    seed : int
    max_judgments : int or None
        Give up after this many judgments (None: until the stopping rule).
    """

    engine: EngineConfig = field(default_factory=EngineConfig)
    estimator: str = DEFAULT_ESTIMATOR
    batch: int = 1
    seed: int = 0
    max_judgments: int | None = None

    def __post_init__(self) -> None:
        if self.estimator not in ESTIMATOR_CHOICES:
            raise ValueError(
                f"unknown estimator {self.estimator!r}: expected one of {ESTIMATOR_CHOICES}"
            )
        if self.batch < 1:
            raise ValueError(f"batch must be at least 1, found {self.batch}")
        if self.max_judgments is not None and self.max_judgments < 0:
            raise ValueError(f"max_judgments must be >= 0, found {self.max_judgments}")


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
    seconds: float
    system_tau2: float = 0.0

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
            "system_tau2": self.system_tau2,
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
    engine, _ = build_engine(
        collection, metadata, scale, config.estimator, config.engine, seed=config.seed
    )
    return run_replay(
        engine, truth, batch=config.batch, max_judgments=config.max_judgments, progress=progress
    )


def run_replay(
    engine: MTCEngine,
    truth: FloatArray,
    *,
    batch: int = 1,
    max_judgments: int | None = None,
    progress: Callable[[int, float], None] | None = None,
    before_judging: Callable[[IntArray], None] | None = None,
    after_judging: Callable[[IntArray], None] | None = None,
) -> ReplayResult:
    """Replay the MTC loop on a built ``engine``, judging from ``truth``.

    Parameters
    ----------
    engine : MTCEngine
        From :func:`mtcjudge.mtc.factory.build_engine`, or an experiment's.
    truth : ndarray of shape (n_pairs,)
        The judgment of every pool pair (no NaN).
    batch : int
        Pairs judged between two selections.
    max_judgments : int or None
        Give up after this many judgments.
    progress : callable, optional
        Called as ``progress(n_judged, ranking_confidence)`` after every batch.
    before_judging, after_judging : callable, optional
        Called with each batch before and after the engine judges it (experiments that
        learn alongside the loop, ``bench/experiments``).
    """
    collection, scale = engine.collection, engine.scale
    truth = scale.check_values(truth, "true judgment")
    if truth.shape != (collection.n_pairs,):
        raise ValueError(
            f"truth must hold one judgment per pool pair ({collection.n_pairs}), found "
            f"shape {truth.shape}"
        )
    started = time.perf_counter()
    complete = _complete_evaluation(collection, truth, scale, engine.config)
    trajectory = [_trajectory_point(engine, complete.mean)]
    limit = max_judgments if max_judgments is not None else collection.n_pairs
    reason = engine.stop_reason()
    while reason is None and engine.n_judged < limit:
        pairs = engine.select(min(batch, limit - engine.n_judged))
        if before_judging is not None:
            before_judging(pairs)
        engine.judge(pairs, truth[pairs])
        if after_judging is not None:
            after_judging(pairs)
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
    collection = engine.collection
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
        seconds=time.perf_counter() - started,
        system_tau2=engine.system_tau2,
    )
