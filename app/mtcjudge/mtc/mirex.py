"""The traditional MIREX analysis and the paired significance tests of [T] Chapter 5.

* :func:`friedman_tukey` - Friedman test on the (n_queries, n_systems) score matrix and
  Tukey HSD on the Friedman mean ranks, as MATLAB ``friedman`` + ``multcompare`` do for
  MIREX (docs/method.md §6).
* :func:`paired_tests` - t-test, Wilcoxon signed-rank, sign, bootstrap-shift and
  permutation tests on per-query differences of two systems (docs/method.md §9).

References
----------
[T] J. Urbano, *Evaluation in Audio Music Similarity*, PhD thesis, UC3M, 2013.
[U12] J. Urbano and M. Schedl, "Towards Minimal Test Collections for Evaluation of Audio
Music Similarity and Retrieval", WWW 2012 Companion (AdMIRe).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray
from scipy import stats

from mtcjudge.mtc._validation import check_int as _check_int
from mtcjudge.mtc._validation import check_probability as _check_probability

__all__ = [
    "MirexAnalysis",
    "PairedTests",
    "friedman_tukey",
    "paired_tests",
]

# The permutation test enumerates all 2^n sign vectors up to this n ([T] 5.1.2).
EXACT_PERMUTATION_MAX_N = 20

# Tolerance, relative to the magnitude of the differences, for "as extreme as observed"
# in the resampling tests, so that resamples equal to the observed statistic are not
# lost to floating-point rounding (and for "all differences equal" in the t-test).
_TIE_RTOL = 1e-12

# Rows of resamples drawn per batch (bounds memory to about 8 MB per batch).
_BATCH_ELEMENTS = 1_000_000


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MirexAnalysis:
    """Friedman test and Tukey HSD on mean ranks for ``n_systems`` systems.

    Attributes
    ----------
    means : ndarray of float, shape (n_systems,)
        Mean score of each system over the queries.
    mean_ranks : ndarray of float, shape (n_systems,)
        Mean within-query rank (1 = lowest score, ties averaged).
    chi2 : float
        Friedman statistic with the tie correction.
    chi2_uncorrected : float
        Friedman statistic before the tie correction.
    tie_correction : float
        C_ties in (0, 1]; ``chi2 = chi2_uncorrected / tie_correction``.
    df : int
        Degrees of freedom, n_systems - 1.
    p_value : float
        Upper-tail chi-squared p-value of ``chi2``.
    q_critical : float
        ``q_{1-alpha; n_systems, inf}`` of the studentized range.
    critical_difference : float
        Smallest significant difference of mean ranks (HSD).
    rank_differences : ndarray of float, shape (n_systems, n_systems)
        ``mean_ranks[i] - mean_ranks[j]``.
    tukey_p_values : ndarray of float, shape (n_systems, n_systems)
        Tukey HSD p-value of each pair (1 on the diagonal).
    significant : ndarray of bool, shape (n_systems, n_systems)
        ``|rank_differences| > critical_difference`` (False on the diagonal).
    alpha : float
        Family-wise level used for ``q_critical`` and ``significant``.
    """

    means: NDArray[np.float64]
    mean_ranks: NDArray[np.float64]
    chi2: float
    chi2_uncorrected: float
    tie_correction: float
    df: int
    p_value: float
    q_critical: float
    critical_difference: float
    rank_differences: NDArray[np.float64]
    tukey_p_values: NDArray[np.float64]
    significant: NDArray[np.bool_]
    alpha: float


@dataclass(frozen=True)
class PairedTests:
    """Paired tests of H0 "no difference" on per-query differences ([T] 5.1, docs/method.md §9).

    All p-values are two-sided.

    Attributes
    ----------
    n : int
        Number of differences (queries).
    mean, sd : float
        Mean and sample standard deviation (ddof=1) of the differences.
    t_statistic, t_p_value : float
        Paired t-test (5.1), df = n-1.
    ci_low, ci_high : float
        ``mean -/+ t_{(1+confidence)/2, n-1} sd / sqrt(n)`` (5.6.2).
    confidence_level : float
        Level of the interval (default 0.95).
    wilcoxon_w_plus, wilcoxon_w_minus : float
        Signed-rank sums of the non-zero differences (5.2).
    wilcoxon_statistic : float
        ``min(W+, W-)``.
    wilcoxon_p_value : float
        Exact when there are at most 50 non-zero differences and no tied magnitudes,
        normal approximation otherwise.
    sign_successes, sign_trials : int
        ``S = #{d > 0}`` and ``m = #{d != 0}`` (5.3).
    sign_p_value : float
        Two-sided binomial(m, 0.5) p-value.
    bootstrap_p_value : float
        Bootstrap-shift p-value (5.4) from ``n_resamples`` resamples.
    permutation_p_value : float
        Sign-flip permutation p-value (5.5).
    permutation_exact : bool
        True if all 2^n sign vectors were enumerated, False if ``n_resamples`` random
        sign vectors were drawn.
    n_resamples : int
        T, the number of bootstrap (and Monte Carlo permutation) resamples.
    """

    n: int
    mean: float
    sd: float
    t_statistic: float
    t_p_value: float
    ci_low: float
    ci_high: float
    confidence_level: float
    wilcoxon_w_plus: float
    wilcoxon_w_minus: float
    wilcoxon_statistic: float
    wilcoxon_p_value: float
    sign_successes: int
    sign_trials: int
    sign_p_value: float
    bootstrap_p_value: float
    permutation_p_value: float
    permutation_exact: bool
    n_resamples: int


# --------------------------------------------------------------------------------------
# Validation helpers
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# docs/method.md §6: Friedman + Tukey HSD
# --------------------------------------------------------------------------------------


def friedman_tukey(scores: npt.ArrayLike, *, alpha: float = 0.05) -> MirexAnalysis:
    """Friedman test and Tukey HSD on Friedman mean ranks (MIREX; docs/method.md §6).

    Systems are ranked within each query (ascending, ties averaged), giving R_qA and
    Rbar_A = mean_q R_qA. With n_Q queries and n_S systems::

        chi2   = [12/(n_Q n_S (n_S+1)) sum_A (sum_q R_qA)^2 - 3 n_Q (n_S+1)] / C_ties
        C_ties = 1 - sum_q sum_{tie groups} (t^3 - t) / (n_Q n_S (n_S^2 - 1)),  df = n_S - 1
        HSD:   |Rbar_A - Rbar_B| > q_{1-alpha; n_S, inf} sqrt(n_S (n_S+1) / (12 n_Q))
        p_AB = studentized_range.sf(|Rbar_A - Rbar_B| / sqrt(n_S (n_S+1) / (12 n_Q)), n_S, inf)

    This is what MATLAB ``friedman`` + ``multcompare`` compute ([U12] Section 2; [T] 3.1,
    9.2). ``chi2`` and its p-value come from :func:`scipy.stats.friedmanchisquare` (which
    refuses two systems; then the formula above is applied). If every query ties all
    systems, ``C_ties`` = 0 and the statistic is undefined; it is reported as ``chi2 = 0``
    and ``p = 1`` [impl. choice].

    Parameters
    ----------
    scores : array_like of float, shape (n_queries, n_systems)
        Per-query scores (e.g. AG@5), blocks = queries, treatments = systems;
        n_queries >= 2, n_systems >= 2, all finite.
    alpha : float, default 0.05
        Family-wise level of the HSD, in (0, 1).

    Returns
    -------
    MirexAnalysis

    Examples
    --------
    The example of docs/method.md §6 (6 queries, systems A, B, C):

    >>> scores = [[1.2, 1.0, 0.8], [0.6, 0.8, 0.4], [1.4, 1.0, 1.2],
    ...           [1.0, 0.6, 0.6], [0.8, 0.4, 0.2], [1.6, 1.2, 1.4]]
    >>> res = friedman_tukey(scores)
    >>> res.mean_ranks.round(4).tolist()
    [2.8333, 1.75, 1.4167]
    >>> round(res.chi2, 4), round(res.p_value, 5), round(res.critical_difference, 6)
    (6.8696, 0.03223, 1.353136)
    >>> bool(res.significant[0, 2]), bool(res.significant[0, 1])
    (True, False)
    """
    matrix = np.asarray(scores, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(
            f"scores must be 2-D with shape (n_queries, n_systems), found shape {matrix.shape}"
        )
    n_queries, n_systems = matrix.shape
    if n_queries < 2:
        raise ValueError(f"scores must have n_queries >= 2 rows, found {n_queries}")
    if n_systems < 2:
        raise ValueError(f"scores must have n_systems >= 2 columns, found {n_systems}")
    if not np.all(np.isfinite(matrix)):
        raise ValueError("scores must be finite, found NaN or inf")
    alpha = _check_probability("alpha", alpha)
    return _friedman_tukey_kernel(matrix, alpha)


def _friedman_tukey_kernel(matrix: NDArray[np.float64], alpha: float) -> MirexAnalysis:
    """Friedman + HSD on a clean (n_queries, n_systems) float64 matrix."""
    n_queries, n_systems = matrix.shape
    ranks = stats.rankdata(matrix, axis=1)
    rank_sums = ranks.sum(axis=0)
    mean_ranks = rank_sums / n_queries
    chi2_uncorrected = 12.0 / (n_queries * n_systems * (n_systems + 1)) * np.sum(
        rank_sums**2
    ) - 3.0 * n_queries * (n_systems + 1)
    # C_ties is the mean over queries of each query's rank tie correction
    tie_correction = float(np.mean([stats.tiecorrect(row) for row in ranks]))
    df = n_systems - 1
    if tie_correction == 0.0:  # every query ties every system: no evidence either way
        chi2, p_value = 0.0, 1.0
    elif n_systems >= 3:
        friedman = stats.friedmanchisquare(*matrix.T)
        chi2, p_value = float(friedman.statistic), float(friedman.pvalue)
    else:  # scipy's test wants three systems; with two the statistic is the same formula
        chi2 = float(chi2_uncorrected / tie_correction)
        p_value = float(stats.chi2.sf(chi2, df))

    standard_error = math.sqrt(n_systems * (n_systems + 1) / (12.0 * n_queries))
    q_critical = float(stats.studentized_range.ppf(1.0 - alpha, n_systems, np.inf))
    critical_difference = q_critical * standard_error
    rank_differences = mean_ranks[:, np.newaxis] - mean_ranks[np.newaxis, :]
    distance = np.abs(rank_differences)
    tukey_p_values = np.ones((n_systems, n_systems))
    upper = np.triu_indices(n_systems, k=1)
    pair_p = stats.studentized_range.sf(distance[upper] / standard_error, n_systems, np.inf)
    tukey_p_values[upper] = pair_p
    tukey_p_values[upper[1], upper[0]] = pair_p
    significant = distance > critical_difference
    return MirexAnalysis(
        means=matrix.mean(axis=0),
        mean_ranks=mean_ranks,
        chi2=chi2,
        chi2_uncorrected=float(chi2_uncorrected),
        tie_correction=float(tie_correction),
        df=df,
        p_value=p_value,
        q_critical=q_critical,
        critical_difference=critical_difference,
        rank_differences=rank_differences,
        tukey_p_values=np.clip(tukey_p_values, 0.0, 1.0),
        significant=significant,
        alpha=alpha,
    )


# --------------------------------------------------------------------------------------
# docs/method.md §9: paired tests
# --------------------------------------------------------------------------------------


# 104 lines, 58 of them the docstring (five tests, the tie rule, docs/method.md's example)
def paired_tests(
    delta: npt.ArrayLike,
    *,
    rng: np.random.Generator,
    n_resamples: int = 100_000,
    confidence_level: float = 0.95,
    exact_permutation_max_n: int = EXACT_PERMUTATION_MAX_N,
) -> PairedTests:
    """Five paired tests on per-query differences dLambda_q = Lambda_qA - Lambda_qB.

    Following [T] (5.1)-(5.5) and docs/method.md §9 (all two-sided, H0: no difference):

    * t-test: ``t = mean / (sd / sqrt(n))``, df = n-1, with the 5.6.2 confidence interval.
    * Wilcoxon signed-rank: zeros dropped, ``W = min(W+, W-)``, ``p = 2 P(W_null <= W)``.
    * Sign test: ``S = #{d > 0}`` of ``m = #{d != 0}``, binomial(m, 0.5).
    * Bootstrap-shift: T resamples B_i of n differences with replacement (indices drawn
      by ``rng.integers(0, n, size=(T, n))``), ``p = #{|mean(B_i) - mean_i mean(B_i)|
      >= |mean(d)|} / T``.
    * Permutation: ``p = #{|mean(s * d)| >= |mean(d)|} / #s`` over sign vectors s, all
      2^n of them when ``n <= exact_permutation_max_n``, else T drawn by
      ``rng.integers(0, 2, size=(T, n))``.

    "As extreme as observed" in the resampling tests allows a rounding error of 1e-12
    times the magnitude of the differences, so resamples that tie with the observed
    statistic are not lost to floating-point noise.

    Parameters
    ----------
    delta : array_like of float, shape (n,)
        Paired differences, n >= 2, finite.
    rng : numpy.random.Generator
        Source of the resamples; seed it to replay the test.
    n_resamples : int, default 100_000
        T, number of bootstrap / Monte Carlo permutation resamples (>= 1).
    confidence_level : float, default 0.95
        Level of the t interval, in (0, 1).
    exact_permutation_max_n : int, default 20
        Largest n for which the permutation test enumerates all sign vectors (>= 0).

    Returns
    -------
    PairedTests

    Notes
    -----
    If all differences are equal (sd = 0) the t statistic is undefined; it is reported
    as ``+-inf`` with p = 0 when the mean is non-zero and as NaN with p = 1 when it is 0,
    and the interval collapses to the mean [impl. choice].

    Without the tie tolerance, the Monte Carlo permutation p of the docs/method.md §9 example
    drops from about 0.038 to the 0.0346 printed there (exact: 0.0391), because sign
    vectors whose |mean| equals the observed one compare as smaller after rounding.

    Examples
    --------
    The example of docs/method.md §9:

    >>> d = [0.12, 0.05, -0.03, 0.20, 0.08, 0.00, 0.15, -0.06, 0.10, 0.04]
    >>> res = paired_tests(d, rng=np.random.default_rng(12345))
    >>> round(res.t_statistic, 4), round(res.t_p_value, 5)
    (2.5248, 0.03251)
    >>> round(res.wilcoxon_p_value, 5), round(res.sign_p_value, 4)
    (0.03906, 0.1797)
    >>> round(res.bootstrap_p_value, 4), round(res.permutation_p_value, 5)
    (0.0068, 0.03906)
    """
    differences = _checked_differences(delta, rng)
    n_resamples = _check_int("n_resamples", n_resamples, 1)
    confidence_level = _check_probability("confidence_level", confidence_level)
    exact_permutation_max_n = _check_int("exact_permutation_max_n", exact_permutation_max_n, 0)

    n = differences.shape[0]
    mean = float(differences.mean())
    sd = float(differences.std(ddof=1))
    t_statistic, t_p_value, ci_low, ci_high = _t_test(differences, confidence_level)
    w_plus, w_minus, w_p_value = _wilcoxon(differences)
    successes, trials, sign_p_value = _sign_test(differences)
    bootstrap_p_value = _bootstrap_shift_p(differences, rng, n_resamples)
    exact = n <= exact_permutation_max_n
    if exact:
        permutation_p_value = _exact_permutation_p(differences)
    else:
        permutation_p_value = _monte_carlo_permutation_p(differences, rng, n_resamples)
    return PairedTests(
        n=n,
        mean=mean,
        sd=sd,
        t_statistic=t_statistic,
        t_p_value=t_p_value,
        ci_low=ci_low,
        ci_high=ci_high,
        confidence_level=confidence_level,
        wilcoxon_w_plus=w_plus,
        wilcoxon_w_minus=w_minus,
        wilcoxon_statistic=min(w_plus, w_minus),
        wilcoxon_p_value=w_p_value,
        sign_successes=successes,
        sign_trials=trials,
        sign_p_value=sign_p_value,
        bootstrap_p_value=bootstrap_p_value,
        permutation_p_value=permutation_p_value,
        permutation_exact=exact,
        n_resamples=n_resamples,
    )


def _checked_differences(delta: npt.ArrayLike, rng: np.random.Generator) -> NDArray[np.float64]:
    """:func:`paired_tests`' differences as a float array, checked with its ``rng``."""
    differences = np.asarray(delta, dtype=np.float64)
    if differences.ndim != 1:
        raise ValueError(f"delta must be 1-D with shape (n,), found shape {differences.shape}")
    if differences.shape[0] < 2:
        raise ValueError(f"delta must hold n >= 2 differences, found {differences.shape[0]}")
    if not np.all(np.isfinite(differences)):
        raise ValueError("delta must be finite, found NaN or inf")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, found {type(rng).__name__}")
    return differences


def _sign_test(differences: NDArray[np.float64]) -> tuple[int, int, float]:
    """The sign test: the positive differences, the non-zero ones, and the two-sided
    binomial(m, 0.5) p-value (1 when every difference is 0)."""
    successes = int(np.count_nonzero(differences > 0))
    trials = int(np.count_nonzero(differences))
    p_value = float(stats.binomtest(successes, trials, 0.5).pvalue) if trials else 1.0
    return successes, trials, p_value


def _t_test(
    differences: NDArray[np.float64], confidence_level: float
) -> tuple[float, float, float, float]:
    """(t, two-sided p, CI low, CI high) of the one-sample t-test of (n,) against 0."""
    mean = float(differences.mean())
    scale = max(1.0, float(np.max(np.abs(differences))))
    if float(np.ptp(differences)) <= _TIE_RTOL * scale:
        if abs(mean) <= _TIE_RTOL * scale:
            return math.nan, 1.0, mean, mean
        return math.copysign(math.inf, mean), 0.0, mean, mean
    result = stats.ttest_1samp(differences, 0.0)
    interval = result.confidence_interval(confidence_level)
    return (
        float(result.statistic),
        float(result.pvalue),
        float(interval.low),
        float(interval.high),
    )


def _wilcoxon(differences: NDArray[np.float64]) -> tuple[float, float, float]:
    """(W+, W-, two-sided p) of the signed-rank test with zeros dropped."""
    nonzero = differences[differences != 0.0]
    if nonzero.size == 0:
        return 0.0, 0.0, 1.0
    ranks = stats.rankdata(np.abs(nonzero))
    w_plus = float(ranks[nonzero > 0].sum())
    w_minus = float(ranks[nonzero < 0].sum())
    tied = np.unique(np.abs(nonzero)).size < nonzero.size
    method = "exact" if nonzero.size <= 50 and not tied else "approx"
    p_value = float(stats.wilcoxon(nonzero, method=method).pvalue)
    return w_plus, w_minus, min(1.0, p_value)


def _batches(n_resamples: int, n: int) -> list[int]:
    """Batch sizes summing to n_resamples, each of at most ~_BATCH_ELEMENTS draws."""
    rows = max(1, _BATCH_ELEMENTS // n)
    sizes = [rows] * (n_resamples // rows)
    if n_resamples % rows:
        sizes.append(n_resamples % rows)
    return sizes


def _bootstrap_shift_p(
    differences: NDArray[np.float64], rng: np.random.Generator, n_resamples: int
) -> float:
    """Bootstrap-shift p-value ([T] (5.4)) from n_resamples resamples of (n,)."""
    n = differences.shape[0]
    means = np.concatenate(
        [
            differences[rng.integers(0, n, size=(rows, n))].mean(axis=1)
            for rows in _batches(n_resamples, n)
        ]
    )
    threshold = abs(float(differences.mean())) - _TIE_RTOL * float(np.max(np.abs(differences)))
    shifted = np.abs(means - means.mean())
    return float(np.count_nonzero(shifted >= threshold) / n_resamples)


def _exact_permutation_p(differences: NDArray[np.float64]) -> float:
    """Permutation p-value ([T] (5.5)) over all 2^n sign vectors of (n,)."""
    sums = np.zeros(1)
    for value in differences:
        sums = np.concatenate([sums + value, sums - value])
    extreme = np.abs(sums) >= _permutation_threshold(differences)
    return float(np.count_nonzero(extreme) / sums.size)


def _monte_carlo_permutation_p(
    differences: NDArray[np.float64], rng: np.random.Generator, n_resamples: int
) -> float:
    """Permutation p-value ([T] (5.5)) from n_resamples random sign vectors of (n,)."""
    n = differences.shape[0]
    threshold = _permutation_threshold(differences)
    extreme = 0
    for rows in _batches(n_resamples, n):
        signs = 2.0 * rng.integers(0, 2, size=(rows, n)) - 1.0
        extreme += int(np.count_nonzero(np.abs(signs @ differences) >= threshold))
    return float(extreme / n_resamples)


def _permutation_threshold(differences: NDArray[np.float64]) -> float:
    """|sum(d)| less the rounding error any signed sum of (n,) can carry."""
    return abs(float(differences.sum())) - _TIE_RTOL * float(np.sum(np.abs(differences)))
