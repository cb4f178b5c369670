"""Significance of system differences under incomplete judgments ([U12] Section 5).

Three pieces of the 2012 MTC paper (docs/method.md §5.2-5.4):

* :func:`agk_bounds` - per-query best/worst-case bounds on the AG@k difference of two
  systems, charging every unjudged document the most favourable gain for one side.
* :func:`power_threshold` - the effect size ``delta`` a paired one-tailed t-test can
  detect (the 0.067 threshold of rule 4); in :mod:`mtcjudge.mtc.power`, importable from here.
* :func:`significance_verdict` / :func:`significance_verdicts` - rules 1-4, applied to the
  per-query bound vectors of one pair or of many pairs at once.

References
----------
[U12] J. Urbano and M. Schedl, "Towards Minimal Test Collections for Evaluation of Audio
Music Similarity and Retrieval", WWW 2012 Companion (AdMIRe).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray
from scipy import special, stats

from mtcjudge.mtc._validation import check_finite as _check_finite_scalar
from mtcjudge.mtc._validation import check_int as _check_int
from mtcjudge.mtc._validation import check_probability as _check_probability
from mtcjudge.mtc.power import power_threshold

__all__ = [
    "Bounds",
    "Outcome",
    "Verdict",
    "Verdicts",
    "agk_bounds",
    "pairwise_significance_verdicts",
    "power_threshold",
    "significance_verdict",
    "significance_verdicts",
]

# Rows whose spread is below this (relative to their magnitude) are treated as constant:
# the t statistic of floating-point noise around a constant is meaningless.
_CONSTANT_RTOL = 1e-12


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bounds:
    """Per-query bounds on the AG@k difference of systems A and B.

    Attributes
    ----------
    upper : ndarray of float, shape (n_queries,)
        Best case for A: ``upper(dAG@k)`` in raw AG units (Broad 0..2, Fine 0..100).
    lower : ndarray of float, shape (n_queries,)
        Best case for B: ``lower(dAG@k)`` in raw AG units.
    """

    upper: NDArray[np.float64]
    lower: NDArray[np.float64]


class Outcome(StrEnum):
    """What the significance rules conclude about a pair (A, B)."""

    A_BETTER = "a_better"
    B_BETTER = "b_better"
    NOT_DIFFERENT = "not_different"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Verdict:
    """Verdict of the [U12] significance rules for one pair of systems.

    Attributes
    ----------
    outcome : Outcome
        ``a_better`` / ``b_better`` (A resp. B significantly better), ``not_different``
        or ``undecided``.
    rule : int or None
        The rule (1-4) that decided, ``None`` when no rule fired.
    final : bool
        True for rules 1-3: no further judgment can change the verdict.
    p_upper_greater, p_upper_less : float
        One-sided p-values of the t-test of the upper bounds ``u`` against 0
        (H1: mean > 0, resp. mean < 0).
    p_lower_greater, p_lower_less : float
        The same for the lower bounds ``l``.
    """

    outcome: Outcome
    rule: int | None
    final: bool
    p_upper_greater: float
    p_upper_less: float
    p_lower_greater: float
    p_lower_less: float


@dataclass(frozen=True)
class Verdicts:
    """Verdicts of the [U12] significance rules for ``n_pairs`` pairs.

    Attributes
    ----------
    outcome : tuple of Outcome, length n_pairs
    rule : ndarray of int, shape (n_pairs,)
        Deciding rule 1-4, or 0 when no rule fired.
    final : ndarray of bool, shape (n_pairs,)
    p_upper_greater, p_upper_less, p_lower_greater, p_lower_less : ndarray of float,
        shape (n_pairs,); see :class:`Verdict`.
    """

    outcome: tuple[Outcome, ...]
    rule: NDArray[np.int64]
    final: NDArray[np.bool_]
    p_upper_greater: NDArray[np.float64]
    p_upper_less: NDArray[np.float64]
    p_lower_greater: NDArray[np.float64]
    p_lower_less: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.outcome)

    def verdict(self, index: int) -> Verdict:
        """The :class:`Verdict` of pair ``index``."""
        rule = int(self.rule[index])
        return Verdict(
            outcome=self.outcome[index],
            rule=rule if rule else None,
            final=bool(self.final[index]),
            p_upper_greater=float(self.p_upper_greater[index]),
            p_upper_less=float(self.p_upper_less[index]),
            p_lower_greater=float(self.p_lower_greater[index]),
            p_lower_less=float(self.p_lower_less[index]),
        )


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


def _bool_vector(name: str, array: npt.ArrayLike) -> NDArray[np.bool_]:
    arr = np.asarray(array)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D with shape (P,), found shape {arr.shape}")
    if arr.dtype != np.bool_:
        raise ValueError(f"{name} must have dtype bool, found {arr.dtype}")
    return arr


# --------------------------------------------------------------------------------------
# 5.2 Bounds
# --------------------------------------------------------------------------------------


# 82 lines, 63 of them the docstring (the formulas and docs/method.md §2.6's worked example)
def agk_bounds(
    in_a: npt.ArrayLike,
    in_b: npt.ArrayLike,
    judged: npt.ArrayLike,
    values: npt.ArrayLike,
    pair_query: npt.ArrayLike,
    n_queries: int,
    k: int,
    lmax: float,
    *,
    tight: bool = False,
) -> Bounds:
    """Best/worst-case bounds on dAG@k = AG@k(A) - AG@k(B) per query ([U12] Section 5).

    With judged pairs J, unjudged pairs Jbar, l+ = ``lmax`` and l- = 0 (docs/method.md §5.2)::

        upper_q = (1/k) sum_{i in J} G_i (I(A_i<=k) - I(B_i<=k))
                + (1/k) sum_{i in Jbar} l+ I(A_i<=k)
        lower_q = (1/k) sum_{i in J} G_i (I(A_i<=k) - I(B_i<=k))
                - (1/k) sum_{i in Jbar} l+ I(B_i<=k)

    The l- terms of the paper vanish because l- = 0. The paper's form (``tight=False``)
    charges l+ also to unjudged documents retrieved by both systems, whose true
    contribution is 0; ``tight=True`` counts only ``I(A_i<=k AND B_i>k)`` in the upper
    and ``I(B_i<=k AND A_i>k)`` in the lower bound (docs/method.md §13 (item 23)). Both are valid:
    ``lower <= dAG@k <= upper`` whatever the unjudged gains in [0, lmax] turn out to be.

    Parameters
    ----------
    in_a, in_b : array_like of bool, shape (P,)
        Whether pool pair p is in A's (resp. B's) top k for its query.
    judged : array_like of bool, shape (P,)
        Whether pool pair p has been judged.
    values : array_like of float, shape (P,)
        Judged gains in [0, lmax]; ignored (may be NaN) where not judged.
    pair_query : array_like of int, shape (P,)
        Query index in ``0..n_queries-1`` of each pool pair.
    n_queries : int
        Number of queries (>= 1); queries without pool pairs get bounds 0.
    k : int
        Evaluation cutoff (>= 1).
    lmax : float
        Maximum gain of the scale (Broad 2, Fine 100), > 0.
    tight : bool, default False
        Use the tight variant instead of the paper's loose one.

    Returns
    -------
    Bounds
        ``upper`` and ``lower``, each of shape (n_queries,), in raw AG units. Divide by
        ``lmax`` for normalised (CG_l@k) units.

    Raises
    ------
    ValueError
        On shape or dtype mismatches, out-of-range query indices, judged values outside
        [0, lmax] or non-finite, a top k with more than k pool pairs, k < 1, n_queries < 1
        or lmax <= 0.

    Examples
    --------
    Toy q1 of docs/method.md §2.6(d): A = d1..d5, B = (d2, d1, d6, d7, d3), judged d1=2,
    d2=1, d6=0 (pool d1..d8, Broad, k=5).

    >>> in_a = np.array([1, 1, 1, 1, 1, 0, 0, 0], dtype=bool)
    >>> in_b = np.array([1, 1, 1, 0, 0, 1, 1, 0], dtype=bool)
    >>> judged = np.array([1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
    >>> values = np.array([2, 1, np.nan, np.nan, np.nan, 0, np.nan, np.nan])
    >>> b = agk_bounds(in_a, in_b, judged, values, np.zeros(8, int), 1, 5, 2)
    >>> b.upper.round(4).tolist(), b.lower.round(4).tolist()
    ([1.2], [-0.8])
    >>> b = agk_bounds(in_a, in_b, judged, values, np.zeros(8, int), 1, 5, 2, tight=True)
    >>> b.upper.round(4).tolist(), b.lower.round(4).tolist()
    ([0.8], [-0.4])
    """
    in_a_arr, in_b_arr, judged_arr, values_arr, query_arr, n_queries, k, lmax = _bounds_inputs(
        in_a, in_b, judged, values, pair_query, n_queries, k, lmax
    )
    upper, lower = _agk_bounds_kernel(
        in_a_arr, in_b_arr, judged_arr, values_arr, query_arr, n_queries, k, lmax, tight
    )
    return Bounds(upper=upper, lower=lower)


def _bounds_inputs(
    in_a: npt.ArrayLike,
    in_b: npt.ArrayLike,
    judged: npt.ArrayLike,
    values: npt.ArrayLike,
    pair_query: npt.ArrayLike,
    n_queries: int,
    k: int,
    lmax: float,
) -> tuple[
    NDArray[np.bool_],
    NDArray[np.bool_],
    NDArray[np.bool_],
    NDArray[np.float64],
    NDArray[np.intp],
    int,
    int,
    float,
]:
    """:func:`agk_bounds`' arguments checked (the ValueErrors it documents) and as clean arrays."""
    n_queries = _check_int("n_queries", n_queries, 1)
    k = _check_int("k", k, 1)
    lmax = _check_finite_scalar("lmax", lmax)
    if lmax <= 0.0:
        raise ValueError(f"lmax must be > 0, found {lmax}")

    in_a_arr = _bool_vector("in_a", in_a)
    in_b_arr = _bool_vector("in_b", in_b)
    judged_arr = _bool_vector("judged", judged)
    n_pairs = in_a_arr.shape[0]
    values_arr = np.asarray(values, dtype=np.float64)
    query_arr = np.asarray(pair_query)
    for name, arr in (
        ("in_b", in_b_arr),
        ("judged", judged_arr),
        ("values", values_arr),
        ("pair_query", query_arr),
    ):
        if arr.shape != (n_pairs,):
            raise ValueError(f"{name} must have shape ({n_pairs},) like in_a, found {arr.shape}")
    if n_pairs and not np.issubdtype(query_arr.dtype, np.integer):
        raise ValueError(f"pair_query must have an integer dtype, found {query_arr.dtype}")
    query_arr = query_arr.astype(np.intp, copy=False)
    if n_pairs and (query_arr.min() < 0 or query_arr.max() >= n_queries):
        raise ValueError(
            f"pair_query must lie in [0, {n_queries - 1}], "
            f"found values in [{query_arr.min()}, {query_arr.max()}]"
        )
    judged_values = values_arr[judged_arr]
    if not np.all(np.isfinite(judged_values)):
        raise ValueError("values must be finite where judged, found NaN or inf")
    if judged_values.size and (judged_values.min() < 0.0 or judged_values.max() > lmax):
        raise ValueError(
            f"judged values must lie in [0, lmax={lmax}], found values in "
            f"[{judged_values.min()}, {judged_values.max()}]"
        )
    for name, arr in (("in_a", in_a_arr), ("in_b", in_b_arr)):
        per_query = np.bincount(query_arr[arr], minlength=n_queries)
        if per_query.size and per_query.max() > k:
            q = int(per_query.argmax())
            raise ValueError(
                f"{name} must mark at most k={k} pool pairs per query, "
                f"found {per_query[q]} for query {q}"
            )
    return in_a_arr, in_b_arr, judged_arr, values_arr, query_arr, n_queries, k, lmax


def _agk_bounds_kernel(
    in_a: NDArray[np.bool_],
    in_b: NDArray[np.bool_],
    judged: NDArray[np.bool_],
    values: NDArray[np.float64],
    pair_query: NDArray[np.intp],
    n_queries: int,
    k: int,
    lmax: float,
    tight: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Upper and lower bounds, each (n_queries,), from clean (P,) arrays."""
    coefficient = in_a.astype(np.float64) - in_b.astype(np.float64)
    judged_part = np.where(judged, values, 0.0) * coefficient
    unjudged = ~judged
    if tight:
        a_only, b_only = in_a & ~in_b, in_b & ~in_a
    else:
        a_only, b_only = in_a, in_b
    known = np.bincount(pair_query, weights=judged_part, minlength=n_queries)
    best_a = np.bincount(pair_query, weights=(unjudged & a_only) * lmax, minlength=n_queries)
    best_b = np.bincount(pair_query, weights=(unjudged & b_only) * lmax, minlength=n_queries)
    return (known + best_a) / k, (known - best_b) / k


# --------------------------------------------------------------------------------------
# 5.3 Significance rules
# --------------------------------------------------------------------------------------

_OUTCOMES = (Outcome.UNDECIDED, Outcome.A_BETTER, Outcome.B_BETTER, Outcome.NOT_DIFFERENT)
_CODE = {outcome: code for code, outcome in enumerate(_OUTCOMES)}


def significance_verdict(
    upper: npt.ArrayLike,
    lower: npt.ArrayLike,
    expected_mean_difference: float,
    *,
    delta: float = 0.067,
    alpha: float = 0.05,
    two_tailed: bool = False,
) -> Verdict:
    """Apply the [U12] significance rules 1-4 to one pair (A, B) (docs/method.md §5.3, 13.A20).

    "Significantly" means a t-test of the per-query bound values against 0 (the paired
    t-test of A vs B in the best case for one side), one-tailed at ``alpha``:

    1. with ``u`` (best case for A) A is still significantly worse -> ``b_better`` (final);
    2. with ``l`` (best case for B) B is still significantly worse -> ``a_better`` (final);
    3. with ``u`` A is not significantly better and with ``l`` B is not significantly
       better -> ``not_different`` (final);
    4. otherwise, if ``|E[mean dLambda]| > delta`` -> ``a_better``/``b_better`` by the
       sign of E (heuristic, not final);
    5. else ``undecided``.

    Rules 1-3 take precedence over rule 4. Constant bound vectors (zero variance, e.g.
    all judged and identical per-query differences) count as significant in the
    direction of their mean when it is non-zero, and as not significant when it is 0.

    Parameters
    ----------
    upper, lower : array_like of float, shape (n_queries,)
        Per-query bounds u_q >= l_q of the difference A - B (e.g. from
        :func:`agk_bounds`); n_queries >= 2. The t-tests are scale-free, so raw or
        normalised units give the same verdict for rules 1-3.
    expected_mean_difference : float
        E[mean dLambda] of the pair ([U12] (4)), in the units of ``delta``.
    delta : float, default 0.067
        Rule-4 threshold (:func:`power_threshold`), on the normalised [0, 1] scale
        (docs/method.md §14 (A9)); scale it by n_L-1 if E is in raw AG units.
    alpha : float, default 0.05
        Significance level, in (0, 1).
    two_tailed : bool, default False
        Use two-tailed tests at ``alpha`` (a one-sided p below alpha/2 in the direction
        of the mean) instead of one-tailed ones.

    Returns
    -------
    Verdict

    Examples
    --------
    The toy of docs/method.md §5.3: rules 1-3 do not fire (A is significantly better with u,
    one-sided p = 0.0464), and rule 4 fires with E = 0.0983 > 0.067.

    >>> v = significance_verdict([1.2, 0.6, 0.4], [-0.8, -0.2, 0.0], 0.0983)
    >>> v.outcome.value, v.rule, v.final, round(v.p_upper_greater, 4)
    ('a_better', 4, False, 0.0464)
    """
    upper_arr = np.asarray(upper, dtype=np.float64)
    lower_arr = np.asarray(lower, dtype=np.float64)
    if upper_arr.ndim != 1:
        raise ValueError(
            f"upper must be 1-D with shape (n_queries,), found shape {upper_arr.shape}"
        )
    if lower_arr.shape != upper_arr.shape:
        raise ValueError(
            f"lower must have the shape of upper {upper_arr.shape}, found {lower_arr.shape}"
        )
    verdicts = significance_verdicts(
        upper_arr[np.newaxis, :],
        lower_arr[np.newaxis, :],
        [_check_finite_scalar("expected_mean_difference", expected_mean_difference)],
        delta=delta,
        alpha=alpha,
        two_tailed=two_tailed,
    )
    return verdicts.verdict(0)


def significance_verdicts(
    upper: npt.ArrayLike,
    lower: npt.ArrayLike,
    expected_mean_differences: npt.ArrayLike,
    *,
    delta: float = 0.067,
    alpha: float = 0.05,
    two_tailed: bool = False,
) -> Verdicts:
    """Vectorised :func:`significance_verdict` over ``n_pairs`` pairs of systems.

    Parameters
    ----------
    upper, lower : array_like of float, shape (n_pairs, n_queries)
        Per-query bounds of each pair, ``lower <= upper``; n_queries >= 2.
    expected_mean_differences : array_like of float, shape (n_pairs,)
        E[mean dLambda] of each pair, in the units of ``delta``.
    delta, alpha, two_tailed
        As in :func:`significance_verdict`.

    Returns
    -------
    Verdicts
    """
    upper_arr, lower_arr = _per_query_arrays(("upper", upper), ("lower", lower), "n_pairs")
    expected, delta, level = _checked_verdict_inputs(
        ("upper", upper_arr),
        ("lower", lower_arr),
        expected_mean_differences,
        (upper_arr.shape[0],),
        delta,
        alpha,
        two_tailed,
    )
    p_upper_greater, p_upper_less = _one_sided_p_values(upper_arr)
    p_lower_greater, p_lower_less = _one_sided_p_values(lower_arr)
    return _verdicts(
        p_upper_greater, p_upper_less, p_lower_greater, p_lower_less, expected, delta, level
    )


def _checked_verdict_inputs(
    high: tuple[str, npt.NDArray[np.float64]],
    low: tuple[str, npt.NDArray[np.float64]],
    expected_mean_differences: npt.ArrayLike,
    shape: tuple[int, ...],
    delta: float,
    alpha: float,
    two_tailed: bool,
) -> tuple[npt.NDArray[np.float64], float, float]:
    """The checks of the verdicts' inputs: finite bounds (or cases) with ``low <= high``,
    finite expected differences of ``shape``, a valid ``delta`` and ``alpha``. Returns the
    expected differences, ``delta`` and the one-sided level of each test."""
    (high_name, high_arr), (low_name, low_arr) = high, low
    expected = np.asarray(expected_mean_differences, dtype=np.float64)
    if expected.shape != shape:
        raise ValueError(
            f"expected mean differences must have shape {shape}, found {expected.shape}"
        )
    if not (np.all(np.isfinite(high_arr)) and np.all(np.isfinite(low_arr))):
        raise ValueError(f"{high_name} and {low_name} must be finite, found NaN or inf")
    if not np.all(np.isfinite(expected)):
        raise ValueError("expected mean differences must be finite, found NaN or inf")
    if np.any(low_arr > high_arr):
        raise ValueError(
            f"{low_name} must be <= {high_name} for every query, found {low_name} > {high_name}"
        )
    delta = _check_finite_scalar("delta", delta, nonnegative=True)
    alpha = _check_probability("alpha", alpha)
    return expected, delta, alpha / 2.0 if two_tailed else alpha


def pairwise_significance_verdicts(
    best: npt.ArrayLike,
    worst: npt.ArrayLike,
    expected_mean_differences: npt.ArrayLike,
    *,
    delta: float = 0.067,
    alpha: float = 0.05,
    two_tailed: bool = False,
) -> Verdicts:
    """:func:`significance_verdicts` of every pair of systems, from per-system cases.

    The [U12] bounds of a pair ``(A, B)`` (docs/method.md §5.2, not the tight option) are
    differences of per-system figures: ``u = best[A] - worst[B]`` and
    ``l = worst[A] - best[B]``, with ``best`` a system's per-query AG@k when every document
    it retrieves unjudged is at the top level and ``worst`` at 0. The t-tests only need the
    mean and the variance of each bound vector, which follow from the systems' own sums and
    one ``(n_systems, n_systems)`` matrix product, so the ``(n_pairs, n_queries)`` bound
    matrices are never built: 100 systems x 1,000 queries take milliseconds instead of half a
    second. The verdicts are those of :func:`significance_verdicts` on the same bounds; a
    vector whose spread is rounding noise (below ~1e-13 of its magnitude) counts as constant,
    as there.

    Parameters
    ----------
    best, worst : array_like of float, shape (n_systems, n_queries)
        Per-system per-query cases, ``worst <= best``; n_queries >= 2.
    expected_mean_differences : array_like of float, shape (n_pairs,)
        E[mean dLambda] of each pair in ``numpy.triu_indices(n_systems, 1)`` order.
    delta, alpha, two_tailed
        As in :func:`significance_verdict`.

    Returns
    -------
    Verdicts
        Pairs in ``numpy.triu_indices(n_systems, 1)`` order.
    """
    best_arr, worst_arr = _per_query_arrays(("best", best), ("worst", worst), "n_systems")
    n_systems = best_arr.shape[0]
    a, b = np.triu_indices(n_systems, 1)
    expected, delta, level = _checked_verdict_inputs(
        ("best", best_arr),
        ("worst", worst_arr),
        expected_mean_differences,
        a.shape,
        delta,
        alpha,
        two_tailed,
    )
    p_upper_greater, p_upper_less, p_lower_greater, p_lower_less = _pairwise_p_values(
        best_arr, worst_arr, a, b
    )
    return _verdicts(
        p_upper_greater, p_upper_less, p_lower_greater, p_lower_less, expected, delta, level
    )


def _per_query_arrays(
    first: tuple[str, npt.ArrayLike], second: tuple[str, npt.ArrayLike], rows: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Two 2-D float arrays of one shape (rows, n_queries), with n_queries >= 2."""
    (first_name, first_values), (second_name, second_values) = first, second
    one = np.asarray(first_values, dtype=np.float64)
    two = np.asarray(second_values, dtype=np.float64)
    if one.ndim != 2:
        raise ValueError(
            f"{first_name} must be 2-D with shape ({rows}, n_queries), found shape {one.shape}"
        )
    if two.shape != one.shape:
        raise ValueError(
            f"{second_name} must have the shape of {first_name} {one.shape}, found {two.shape}"
        )
    if one.shape[1] < 2:
        raise ValueError(f"the t-tests need n_queries >= 2, found {one.shape[1]}")
    return one, two


def _verdicts(
    p_upper_greater: NDArray[np.float64],
    p_upper_less: NDArray[np.float64],
    p_lower_greater: NDArray[np.float64],
    p_lower_less: NDArray[np.float64],
    expected: NDArray[np.float64],
    delta: float,
    level: float,
) -> Verdicts:
    """The rules applied to the one-sided p-values of the bounds (both entry points)."""
    codes, rules = _rules_kernel(
        p_upper_greater, p_upper_less, p_lower_greater, p_lower_less, expected, delta, level
    )
    return Verdicts(
        outcome=tuple(_OUTCOMES[code] for code in codes),
        rule=rules,
        final=(rules >= 1) & (rules <= 3),
        p_upper_greater=p_upper_greater,
        p_upper_less=p_upper_less,
        p_lower_greater=p_lower_greater,
        p_lower_less=p_lower_less,
    )


def _pairwise_p_values(
    best: NDArray[np.float64],
    worst: NDArray[np.float64],
    a: NDArray[np.intp],
    b: NDArray[np.intp],
) -> tuple[NDArray[np.float64], ...]:
    """One-sided t-test p-values of ``u = best[a] - worst[b]`` and ``l = worst[a] - best[b]``
    (each (n_pairs,)): greater and less for ``u``, then for ``l``."""
    n = best.shape[1]
    best_mean, worst_mean = best.mean(axis=1), worst.mean(axis=1)
    # centred rows: the sums of squares of a difference are then free of the means'
    # cancellation, and what is left of rounding is proportional to the rows' spread
    best_c = best - best_mean[:, None]
    worst_c = worst - worst_mean[:, None]
    best_ss = np.einsum("ij,ij->i", best_c, best_c)
    worst_ss = np.einsum("ij,ij->i", worst_c, worst_c)
    cross = best_c @ worst_c.T  # cross[i, j] = best_c[i] . worst_c[j]
    magnitude = np.maximum(np.abs(best).max(axis=1), np.abs(worst).max(axis=1))

    def p_values(
        mean: NDArray[np.float64],
        ss: NDArray[np.float64],
        noise: NDArray[np.float64],
        scale: NDArray[np.float64],
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        ss = np.maximum(ss, 0.0)
        constant = ss <= noise
        with np.errstate(divide="ignore", invalid="ignore"):
            t = mean / np.sqrt(ss / (n - 1) / n)
        p_greater = np.where(constant, 1.0, special.stdtr(n - 1, -t))
        p_less = np.where(constant, 1.0, special.stdtr(n - 1, t))
        tolerance = _CONSTANT_RTOL * scale
        p_greater = np.where(constant & (mean > tolerance), 0.0, p_greater)
        p_less = np.where(constant & (mean < -tolerance), 0.0, p_less)
        return p_greater, p_less

    # rounding in the three-term sums of squares is a few ulps of the terms
    eps = 64 * np.finfo(np.float64).eps
    scale = np.maximum(1.0, magnitude[a] + magnitude[b])
    upper_ss = best_ss[a] + worst_ss[b] - 2.0 * cross[a, b]
    lower_ss = worst_ss[a] + best_ss[b] - 2.0 * cross[b, a]
    upper_noise = eps * (best_ss[a] + worst_ss[b]) + n * (_CONSTANT_RTOL * scale) ** 2
    lower_noise = eps * (worst_ss[a] + best_ss[b]) + n * (_CONSTANT_RTOL * scale) ** 2
    up_greater, up_less = p_values(best_mean[a] - worst_mean[b], upper_ss, upper_noise, scale)
    low_greater, low_less = p_values(worst_mean[a] - best_mean[b], lower_ss, lower_noise, scale)
    return up_greater, up_less, low_greater, low_less


def _one_sided_p_values(
    samples: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided t-test p-values (H1: mean > 0, H1: mean < 0) of each row of (n_rows, n).

    Rows that are constant up to floating-point noise get p = 0 in the direction of a
    non-zero mean and 1 otherwise.
    """
    n_rows = samples.shape[0]
    p_greater = np.ones(n_rows)
    p_less = np.ones(n_rows)
    scale = np.maximum(1.0, np.max(np.abs(samples), axis=1))
    constant = np.ptp(samples, axis=1) <= _CONSTANT_RTOL * scale
    varying = ~constant
    if np.any(varying):
        rows = samples[varying]
        p_greater[varying] = stats.ttest_1samp(rows, 0.0, axis=1, alternative="greater").pvalue
        p_less[varying] = stats.ttest_1samp(rows, 0.0, axis=1, alternative="less").pvalue
    means = samples[constant].mean(axis=1)
    tolerance = _CONSTANT_RTOL * scale[constant]
    p_greater[constant] = np.where(means > tolerance, 0.0, 1.0)
    p_less[constant] = np.where(means < -tolerance, 0.0, 1.0)
    return p_greater, p_less


def _rules_kernel(
    p_upper_greater: NDArray[np.float64],
    p_upper_less: NDArray[np.float64],
    p_lower_greater: NDArray[np.float64],
    p_lower_less: NDArray[np.float64],
    expected: NDArray[np.float64],
    delta: float,
    level: float,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Outcome codes (index into ``_OUTCOMES``) and rules (0 = none), each (n_pairs,)."""
    rule1 = p_upper_less < level
    rule2 = p_lower_greater < level
    rule3 = (p_upper_greater >= level) & (p_lower_less >= level)
    rule4 = np.abs(expected) > delta
    direction = np.where(expected > 0, _CODE[Outcome.A_BETTER], _CODE[Outcome.B_BETTER])
    codes = np.select(
        [rule1, rule2, rule3, rule4],
        [_CODE[Outcome.B_BETTER], _CODE[Outcome.A_BETTER], _CODE[Outcome.NOT_DIFFERENT], direction],
        default=_CODE[Outcome.UNDECIDED],
    ).astype(np.int64)
    rules = np.select([rule1, rule2, rule3, rule4], [1, 2, 3, 4], default=0).astype(np.int64)
    return codes, rules
