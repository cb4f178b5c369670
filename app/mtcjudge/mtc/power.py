"""The power-analysis threshold of [U12] Section 5.4 (docs/method.md §5.4): the smallest mean
difference a paired t-test detects, rule 4's ``delta`` (:mod:`mtcjudge.mtc.significance`).

References
----------
[U12] J. Urbano and M. Schedl, "Towards Minimal Test Collections for Evaluation of Audio
Music Similarity and Retrieval", WWW 2012 Companion (AdMIRe).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy import stats

from mtcjudge.mtc._validation import check_finite as _check_finite_scalar
from mtcjudge.mtc._validation import check_int as _check_int
from mtcjudge.mtc._validation import check_probability as _check_probability

__all__ = ["power_threshold"]

_METHODS = ("t", "normal", "noncentral")
_ALTERNATIVES = ("one-sided", "two-sided")


def power_threshold(
    n: int = 100,
    sigma: float = 0.248,
    alpha: float = 0.05,
    beta: float = 0.15,
    method: Literal["t", "normal", "noncentral"] = "t",
    alternative: Literal["one-sided", "two-sided"] = "one-sided",
) -> float:
    """Smallest mean difference a paired t-test detects with power 1-beta ([U12] Section 5).

    ``method="t"`` is the formula of the paper (docs/method.md §5.4)::

        delta = (t_{1-alpha, n-1} + t_{1-beta, n-1}) * sigma / sqrt(n)

    ``"normal"`` uses standard normal quantiles instead; ``"noncentral"`` solves the exact
    noncentral-t power equation (``statsmodels`` ``TTestPower``) for the standardised
    effect d and returns ``d * sigma``. ``alternative="two-sided"`` replaces alpha by
    alpha/2 in the critical value.

    Parameters
    ----------
    n : int, default 100
        Number of queries (>= 2).
    sigma : float, default 0.248
        Standard deviation of per-query differences. The [U12] value is on the
        normalised [0, 1] scale (docs/method.md §14 (A9)): multiply the result by n_L-1 for raw AG.
    alpha : float, default 0.05
        Type I error rate, in (0, 1).
    beta : float, default 0.15
        Type II error rate (power = 1-beta), in (0, 1).
    method : {"t", "normal", "noncentral"}
    alternative : {"one-sided", "two-sided"}

    Returns
    -------
    float
        The threshold delta, in the units of ``sigma``.

    Examples
    --------
    >>> round(power_threshold(), 6)
    0.067017
    >>> round(power_threshold(method="normal"), 6)
    0.066496
    """
    n = _check_int("n", n, 2)
    sigma = _check_finite_scalar("sigma", sigma)
    if sigma <= 0.0:
        raise ValueError(f"sigma must be > 0, found {sigma}")
    alpha = _check_probability("alpha", alpha)
    beta = _check_probability("beta", beta)
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, found {method!r}")
    if alternative not in _ALTERNATIVES:
        raise ValueError(f"alternative must be one of {_ALTERNATIVES}, found {alternative!r}")

    tail_alpha = alpha if alternative == "one-sided" else alpha / 2.0
    if method == "t":
        df = n - 1
        quantiles = stats.t.ppf(1.0 - tail_alpha, df) + stats.t.ppf(1.0 - beta, df)
        return float(quantiles * sigma / math.sqrt(n))
    if method == "normal":
        quantiles = stats.norm.ppf(1.0 - tail_alpha) + stats.norm.ppf(1.0 - beta)
        return float(quantiles * sigma / math.sqrt(n))
    # statsmodels takes most of a second to load: only this method needs it
    from statsmodels.stats.power import TTestPower

    effect = TTestPower().solve_power(
        effect_size=None,
        nobs=n,
        alpha=alpha,
        power=1.0 - beta,
        alternative="larger" if alternative == "one-sided" else "two-sided",
    )
    return float(np.asarray(effect).item() * sigma)
