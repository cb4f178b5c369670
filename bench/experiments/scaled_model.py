"""Relevance models whose variances are rescaled from the residuals: replay experiments only.

:class:`ScaledRelevanceModel` is the product's :class:`~mtcjudge.mtc.estimators.RelevanceModel`
with one variance factor for every estimate (``variance_scale``) and one more per estimate
source (``source_variance_scale``, from :func:`source_variance_factors`). The replay variants
``learn_variance_factor`` and ``learn_source_factors`` (bench/experiments/replay_variants.py)
learn them alongside the loop. No campaign runs them (docs/replay-mirex2011.md). Bench-only:
not in the wheel.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.scales import Scale

__all__ = ["ScaledRelevanceModel", "source_variance_factors"]

FloatArray = NDArray[np.float64]


class ScaledRelevanceModel(RelevanceModel):
    """A :class:`RelevanceModel` whose estimated variances are multiplied by factors.

    Parameters
    ----------
    variance_scale : float
        Multiplies every estimated variance (1 = as the model says).
    source_variance_scale : array_like, optional
        One more factor per estimate source (indexed by ``SOURCE_*``; the judged entry is
        ignored), e.g. learnt separately for M_out and M_jud. None = all 1.
    """

    def __init__(
        self,
        collection: Collection,
        scale: Scale,
        kind: str = "ordinal",
        metadata: Metadata | None = None,
        *,
        use_m_jud: bool = True,
        variance_scale: float = 1.0,
        source_variance_scale: ArrayLike | None = None,
    ) -> None:
        if variance_scale <= 0:
            raise ValueError(f"variance_scale must be positive, found {variance_scale}")
        super().__init__(collection, scale, kind, metadata, use_m_jud=use_m_jud)
        self.variance_scale = float(variance_scale)
        self.source_variance_scale: FloatArray | None = None
        if source_variance_scale is not None:
            self.set_source_variance_scale(source_variance_scale)

    def set_source_variance_scale(self, factors: ArrayLike | None) -> None:
        """Set the per-source variance factors (4 values, by ``SOURCE_*``), or None."""
        if factors is None:
            self.source_variance_scale = None
            return
        f = np.asarray(factors, dtype=np.float64)
        if f.shape != (4,) or np.any(~np.isfinite(f)) or np.any(f <= 0):
            raise ValueError(f"source_variance_scale must be 4 positive numbers, found {f}")
        self.source_variance_scale = f

    def variance_factor(self, source: ArrayLike) -> FloatArray:
        """Total factor applied to the model variance of estimates of ``source``."""
        src = np.asarray(source, dtype=np.intp)
        out = np.full(src.shape, self.variance_scale)
        if self.source_variance_scale is not None:
            out = out * self.source_variance_scale[src]
        return out

    def prior_estimates(self) -> tuple[FloatArray, FloatArray]:
        """E and Var before any judgment, the variance times ``variance_scale``."""
        mean, var = super().prior_estimates()
        return mean, var * self.variance_scale


def source_variance_factors(
    source: ArrayLike,
    residual: ArrayLike,
    variance: ArrayLike,
    n_sources: int,
    *,
    prior: float = 20.0,
    floor: float = 1.0,
) -> FloatArray:
    """Per-source variance factor: shrunk mean squared standardised residual.

    ``factor_s = max(floor, (prior + sum z^2) / (prior + n_s))`` over the
    predictions of source ``s`` with ``z = residual / sqrt(variance)``: ``prior``
    pseudo-observations of a calibrated model (z^2 = 1) keep a few surprises from
    exploding the factor. Predictions with zero variance are skipped.
    """
    src = np.asarray(source, dtype=np.intp)
    r = np.asarray(residual, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    ok = v > 0
    z2 = np.bincount(src[ok], weights=r[ok] ** 2 / v[ok], minlength=n_sources)
    cnt = np.bincount(src[ok], minlength=n_sources).astype(np.float64)
    return np.asarray(np.maximum(floor, (prior + z2) / (prior + cnt)), dtype=np.float64)
