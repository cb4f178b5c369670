"""The settings of the MTC loop (:class:`EngineConfig`) and the stopping rules'
thresholds (docs/method.md §4.4): what an engine is built with, apart from the engine."""

from __future__ import annotations

from dataclasses import dataclass

from mtcjudge.mtc.measures import MEASURES, t_quantile
from mtcjudge.mtc.selection import POLICIES

__all__ = [
    "CORRECTED_THRESHOLDS",
    "DEFAULT_CONFIDENT",
    "STOP_RULES",
    "EngineConfig",
    "absolute_threshold",
]

STOP_RULES = ("confidence", "absolute", "complete")
#: a pair counts as settled for the [U12] weights at this confidence (docs/decisions.md)
DEFAULT_CONFIDENT = 0.99

#: corrected rooted-variance thresholds of [T] Fig. 8.5 (top-left panel), by half-width e
CORRECTED_THRESHOLDS = {0.05: 0.011, 0.01: 0.0071}


def absolute_threshold(
    error: float, n_queries: int, *, corrected: bool, ci_level: float = 0.95
) -> float:
    """Rooted average variance at which the absolute scenario stops (docs/method.md §4.4 S2).

    Uncorrected: ``e / t_{1-a, n_Q-1}`` (0.0252 for e = 0.05, 100 queries).
    Corrected: the thresholds [T] calibrated for e = 0.05 (0.011) and e = 0.01 (0.0071).
    """
    if error <= 0:
        raise ValueError(f"the target error must be positive, found {error}")
    if not corrected:
        return error / t_quantile(ci_level, n_queries)
    for e, thr in CORRECTED_THRESHOLDS.items():
        if abs(e - error) < 1e-12:
            return thr
    raise ValueError(
        f"no corrected threshold is published for e = {error}: use e = 0.05 or 0.01, "
        "or give the threshold explicitly (calibrate it on a judged collection, A12)"
    )


@dataclass(frozen=True)
class EngineConfig:
    """Settings of the loop.

    Attributes
    ----------
    measure : {"cg", "dcg", "ndcg", "rbp"}
    policy : {"static", "confidence", "absolute", "random"}
        Thesis weights (4.1), [U12] confidence-weighted (4.2), absolute-scores
        variance weights (4.3), or uniformly random.
    target : float
        Ranking confidence to reach (S1).
    confident : float or None
        Pairs at least this sure leave the [U12] weights (A10). The default, 0.99,
        deviates from the spec's ``target``: see docs/decisions.md.
    distribution : {"t", "normal"}
    stop : {"confidence", "absolute", "complete"}
        Stopping rule (4.4); every rule also stops when nothing is left to judge.
    abs_error, abs_corrected, abs_threshold :
        Absolute scenario: half-width e, published correction, or an explicit
        rooted-variance threshold.
    refresh_every : int
        Re-estimate M_jud features every this many judgments (1 = always; [T] used 20).
    rebuild_every : int
        Recompute the statistics from scratch every this many judgments, bounding
        floating-point drift of the incremental updates.
    min_judgments : int
        No confidence or absolute stop before this many judgments: an estimator
        that learns its own error (the calibrated one) needs some evidence before
        its confidence means anything.
    """

    measure: str = "cg"
    policy: str = "confidence"
    target: float = 0.95
    confident: float | None = None
    distribution: str = "t"
    rbp_p: float = 0.8
    ci_level: float = 0.95
    stop: str = "confidence"
    abs_error: float = 0.05
    abs_corrected: bool = False
    abs_threshold: float | None = None
    refresh_every: int = 1
    rebuild_every: int = 1000
    min_judgments: int = 0
    locality: float = 0.5

    @property
    def confident_level(self) -> float:
        """Confidence at which a pair leaves the [U12] weights (A10; 0.99 by default)."""
        return self.confident if self.confident is not None else DEFAULT_CONFIDENT

    def __post_init__(self) -> None:
        if self.confident is not None and not 0.5 <= self.confident <= 1.0:
            raise ValueError(f"confident must be in [0.5, 1], found {self.confident}")
        if self.measure not in MEASURES:
            raise ValueError(f"unknown measure {self.measure!r}: expected one of {MEASURES}")
        if self.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}: expected one of {POLICIES}")
        if self.stop not in STOP_RULES:
            raise ValueError(f"unknown stopping rule {self.stop!r}: expected one of {STOP_RULES}")
        if not 0.5 <= self.target <= 1.0:
            raise ValueError(f"target confidence must be in [0.5, 1], found {self.target}")
        if self.distribution not in ("t", "normal"):
            raise ValueError(f"distribution must be 't' or 'normal', found {self.distribution!r}")
        if not 0.0 < self.rbp_p < 1.0:
            raise ValueError(f"rbp_p must be in (0, 1), found {self.rbp_p}")
        if not 0.0 < self.ci_level < 1.0:
            raise ValueError(f"ci_level must be in (0, 1), found {self.ci_level}")
        if self.abs_threshold is not None and self.abs_threshold < 0:
            raise ValueError(f"abs_threshold must be >= 0, found {self.abs_threshold}")
        if self.min_judgments < 0:
            raise ValueError(f"min_judgments must be >= 0, found {self.min_judgments}")
        if self.refresh_every < 1 or self.rebuild_every < 1:
            raise ValueError("refresh_every and rebuild_every must be at least 1")
