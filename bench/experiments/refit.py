"""Refits of the ordinal models on a campaign's own judgments: an experiment no campaign runs.

:func:`refit_model` refits M_out or M_jud (statsmodels ``OrderedModel``, logit link) on the
judged pairs and keeps the refit only when it predicts held-out judgments better than the
published parameters. Measured and not adopted (docs/experiments/2026-11-25-mout-refit.md:
no gain, 3.6x the replay time); the ``refit_every`` replay variant uses it. Bench-only: not
in the wheel.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.estimators import OrdinalModel
from mtcjudge.mtc.scales import Scale

__all__ = ["RefitResult", "refit_model"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class RefitResult:
    """Outcome of a cross-validated refit (:func:`refit_model`).

    ``model`` is the refit when it predicted held-out judgments better than the
    published parameters (``used``), otherwise the published model.
    """

    model: OrdinalModel
    used: bool
    rmse_refit: float
    rmse_published: float
    n_observations: int


def _identifiable_columns(x: FloatArray) -> list[int]:
    """Columns of ``x`` that can be fitted together with free thresholds.

    A constant column (OV within one collection) is absorbed by the thresholds, and
    a column that is a linear function of the kept ones (fSYS:OV = OV * fSYS when OV
    is constant) adds nothing: both are left out of a refit.
    """
    centred = x - x.mean(axis=0)
    keep: list[int] = []
    rank = 0
    for j in range(x.shape[1]):
        trial = centred[:, [*keep, j]]
        new_rank = int(
            np.linalg.matrix_rank(trial, tol=1e-9 * max(1.0, float(np.abs(trial).max())))
        )
        if new_rank > rank:
            keep.append(j)
            rank = new_rank
    return keep


def _fit_ordered(
    x: FloatArray, levels: NDArray[np.intp], values: FloatArray, features: tuple[str, ...]
) -> OrdinalModel | None:
    # statsmodels takes most of a second to load: only a refit needs it
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    observed = np.unique(levels)
    if observed.shape[0] < 2:
        return None
    codes = np.searchsorted(observed, levels)
    keep = _identifiable_columns(x)
    if not keep:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fitted = OrderedModel(codes, x[:, keep], distr="logit").fit(
                method="bfgs", disp=False, maxiter=200
            )
        except (np.linalg.LinAlgError, ValueError):
            return None
    params = np.asarray(fitted.params, dtype=np.float64)
    # columns left out (constant, or a multiple of another) get coefficient 0:
    # on this collection their effect is carried by the thresholds or the kept column
    beta = np.zeros(x.shape[1])
    beta[keep] = params[: len(keep)]
    cuts = np.asarray(fitted.model.transform_threshold_params(params), dtype=np.float64)[1:-1]
    if not (np.all(np.isfinite(beta)) and np.all(np.isfinite(cuts))):
        return None
    # statsmodels: P(y <= j) = F(cut_j - x beta)  =>  alpha_{j+1} = -cut_j  (A1)
    return OrdinalModel(features, beta, -cuts, values[observed])


def refit_model(
    published: OrdinalModel,
    x: ArrayLike,
    judged_values: ArrayLike,
    scale: Scale,
    rng: np.random.Generator,
    *,
    folds: int = 5,
    min_observations: int = 50,
) -> RefitResult:
    """Refit an ordinal model on a campaign's own judgments with statsmodels.

    The refit (``OrderedModel``, logit link, same features as ``published``) is
    compared with the published parameters by ``folds``-fold cross-validated RMSE
    of E[R] against the judged values; it is used only when it predicts better.

    Parameters
    ----------
    published : OrdinalModel
    x : array_like, shape (n, n_features)
        Design rows of the judged pairs (as the model saw them before judging).
    judged_values : array_like, shape (n,)
    scale : Scale
    rng : numpy.random.Generator
        Shuffles the folds.
    """
    xa = np.asarray(x, dtype=np.float64)
    y = scale.check_values(judged_values, "judged value")
    if xa.ndim != 2 or xa.shape[1] != len(published.features):
        raise ValueError(f"x must have shape (n, {len(published.features)}), found {xa.shape}")
    if xa.shape[0] != y.shape[0]:
        raise ValueError(f"x has {xa.shape[0]} rows but {y.shape[0]} judged values were given")
    if folds < 2:
        raise ValueError(f"folds must be at least 2, found {folds}")
    n = y.shape[0]
    base_rmse = float(np.sqrt(np.mean((published.moments(xa)[0] - y) ** 2))) if n else np.nan
    if n < max(min_observations, folds):
        return RefitResult(published, False, np.nan, base_rmse, n)
    levels = scale.model_level(y)
    values = scale.model_values
    fold_of = rng.permutation(n) % folds
    errors = np.empty(n)
    for f in range(folds):
        test = fold_of == f
        model = _fit_ordered(xa[~test], levels[~test], values, published.features)
        if model is None:
            return RefitResult(published, False, np.nan, base_rmse, n)
        errors[test] = model.moments(xa[test])[0] - y[test]
    cv_rmse = float(np.sqrt(np.mean(errors**2)))
    full = _fit_ordered(xa, levels, values, published.features)
    if full is None or not cv_rmse < base_rmse:
        return RefitResult(published, False, cv_rmse, base_rmse, n)
    return RefitResult(replace(full), True, cv_rmse, base_rmse, n)
