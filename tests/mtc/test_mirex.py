"""Tests for mtcjudge.mtc.mirex: Friedman + Tukey HSD (docs/method.md §6), paired tests (§9)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from mtcjudge.mtc.mirex import MirexAnalysis, PairedTests, friedman_tukey, paired_tests

# docs/method.md §6: 6 queries, systems A, B, C, Broad AG@5.
SPEC6_SCORES = np.array(
    [
        [1.2, 1.0, 0.8],
        [0.6, 0.8, 0.4],
        [1.4, 1.0, 1.2],
        [1.0, 0.6, 0.6],
        [0.8, 0.4, 0.2],
        [1.6, 1.2, 1.4],
    ]
)

# docs/method.md §9: per-query differences, n = 10.
SPEC9_DELTA = np.array([0.12, 0.05, -0.03, 0.20, 0.08, 0.00, 0.15, -0.06, 0.10, 0.04])


# --------------------------------------------------------------------------------------
# Friedman + Tukey HSD
# --------------------------------------------------------------------------------------


def test_spec6_example() -> None:
    res = friedman_tukey(SPEC6_SCORES)
    assert isinstance(res, MirexAnalysis)
    np.testing.assert_allclose(res.means, [1.1, 0.8333, 0.7667], atol=5e-5)
    np.testing.assert_allclose(res.mean_ranks, [2.8333, 1.75, 1.4167], atol=5e-5)
    assert res.chi2 == pytest.approx(6.8696, abs=5e-5)
    assert res.chi2_uncorrected == pytest.approx(6.5833, abs=5e-5)
    assert res.tie_correction == pytest.approx(0.95833, abs=5e-6)
    assert res.df == 2
    assert res.p_value == pytest.approx(0.03223, abs=5e-6)
    assert res.q_critical == pytest.approx(3.314493, abs=5e-7)
    assert res.critical_difference == pytest.approx(1.353136, abs=5e-7)
    assert res.critical_difference == pytest.approx(res.q_critical * np.sqrt(12 / 72))
    a, b, c = 0, 1, 2
    assert res.rank_differences[a, c] == pytest.approx(1.4167, abs=5e-5)
    assert res.rank_differences[a, b] == pytest.approx(1.0833, abs=5e-5)
    assert res.rank_differences[b, c] == pytest.approx(0.3333, abs=5e-5)
    assert res.tukey_p_values[a, c] == pytest.approx(0.0376, abs=5e-5)
    assert res.tukey_p_values[a, b] == pytest.approx(0.1455, abs=5e-5)
    assert res.tukey_p_values[b, c] == pytest.approx(0.8322, abs=5e-5)
    expected_significant = np.array(
        [[False, False, True], [False, False, False], [True, False, False]]
    )
    np.testing.assert_array_equal(res.significant, expected_significant)
    assert res.alpha == 0.05


def test_friedman_matches_scipy_on_spec_example() -> None:
    res = friedman_tukey(SPEC6_SCORES)
    reference = stats.friedmanchisquare(*SPEC6_SCORES.T)
    assert res.chi2 == pytest.approx(reference.statistic, rel=1e-12)
    assert res.p_value == pytest.approx(reference.pvalue, rel=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_friedman_matches_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_systems = int(rng.integers(3, 8))
    scores = rng.integers(0, 4, size=(int(rng.integers(5, 30)), n_systems)) / 5.0
    res = friedman_tukey(scores)
    reference = stats.friedmanchisquare(*scores.T)
    assert res.chi2 == pytest.approx(reference.statistic, rel=1e-10)
    assert res.p_value == pytest.approx(reference.pvalue, rel=1e-10)
    np.testing.assert_allclose(res.mean_ranks, stats.rankdata(scores, axis=1).mean(axis=0))


def friedman_by_hand(scores: np.ndarray) -> tuple[float, float, float]:
    """Oracle: (chi2_uncorrected, C_ties, chi2) from the formulas of docs/method.md §6."""
    n_queries, n_systems = scores.shape
    rank_sums = stats.rankdata(scores, axis=1).sum(axis=0)
    uncorrected = 12.0 / (n_queries * n_systems * (n_systems + 1)) * np.sum(
        rank_sums**2
    ) - 3.0 * n_queries * (n_systems + 1)
    ties = sum(
        float(np.sum(c**3 - c)) for c in (np.unique(r, return_counts=True)[1] for r in scores)
    )
    correction = 1.0 - ties / (n_queries * n_systems * (n_systems**2 - 1))
    return uncorrected, correction, uncorrected / correction


@pytest.mark.parametrize("seed", range(10))
def test_friedman_matches_the_formulas_by_hand(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_systems = int(rng.integers(2, 8))  # two systems included: scipy's test needs three
    scores = rng.integers(0, 4, size=(int(rng.integers(5, 30)), n_systems)) / 5.0
    uncorrected, correction, chi2 = friedman_by_hand(scores)
    res = friedman_tukey(scores)
    assert res.chi2_uncorrected == pytest.approx(uncorrected, rel=1e-12)
    assert res.tie_correction == pytest.approx(correction, rel=1e-12)
    assert res.chi2 == pytest.approx(chi2, rel=1e-10)
    assert res.p_value == pytest.approx(stats.chi2.sf(chi2, n_systems - 1), rel=1e-10)


def test_two_systems_give_the_sign_test_statistic() -> None:
    # A wins 7 queries, B wins 2, 3 ties: chi2 = (7 - 2)^2 / (7 + 2)
    a = np.array([3.0] * 7 + [1.0] * 2 + [2.0] * 3)
    b = np.array([1.0] * 7 + [3.0] * 2 + [2.0] * 3)
    res = friedman_tukey(np.column_stack([a, b]))
    assert res.chi2 == pytest.approx(25 / 9)
    assert res.p_value == pytest.approx(stats.chi2.sf(25 / 9, 1))


def test_matrices_are_symmetric_with_unit_diagonal() -> None:
    res = friedman_tukey(np.random.default_rng(1).random((20, 5)))
    np.testing.assert_allclose(res.tukey_p_values, res.tukey_p_values.T)
    np.testing.assert_allclose(res.rank_differences, -res.rank_differences.T)
    np.testing.assert_array_equal(np.diag(res.tukey_p_values), np.ones(5))
    np.testing.assert_array_equal(res.significant, res.significant.T)
    assert not np.any(np.diag(res.significant))
    assert np.all((res.tukey_p_values >= 0) & (res.tukey_p_values <= 1))
    # p < alpha exactly where the difference exceeds the critical difference.
    np.testing.assert_array_equal(res.significant, res.tukey_p_values < res.alpha)


def test_relabelling_systems_permutes_results() -> None:
    scores = np.random.default_rng(2).random((15, 6))
    order = np.array([3, 0, 5, 1, 4, 2])
    base = friedman_tukey(scores)
    permuted = friedman_tukey(scores[:, order])
    assert permuted.chi2 == pytest.approx(base.chi2)
    assert permuted.p_value == pytest.approx(base.p_value)
    np.testing.assert_allclose(permuted.means, base.means[order])
    np.testing.assert_allclose(permuted.mean_ranks, base.mean_ranks[order])
    np.testing.assert_allclose(permuted.tukey_p_values, base.tukey_p_values[np.ix_(order, order)])
    np.testing.assert_array_equal(permuted.significant, base.significant[np.ix_(order, order)])


def test_no_ties_means_no_correction() -> None:
    res = friedman_tukey(np.random.default_rng(3).random((10, 4)))
    assert res.tie_correction == 1.0
    assert res.chi2 == pytest.approx(res.chi2_uncorrected)
    assert res.mean_ranks.sum() == pytest.approx(4 * 5 / 2)


def test_all_queries_tied_gives_zero_statistic() -> None:
    res = friedman_tukey(np.ones((5, 3)))
    assert res.tie_correction == 0.0
    assert res.chi2 == 0.0
    assert res.p_value == 1.0
    np.testing.assert_allclose(res.mean_ranks, [2.0, 2.0, 2.0])
    assert not res.significant.any()


def test_two_systems_and_alpha() -> None:
    scores = np.column_stack([np.arange(10.0), np.arange(10.0) - 1])  # A always better
    res = friedman_tukey(scores)
    assert res.df == 1
    np.testing.assert_allclose(res.mean_ranks, [2.0, 1.0])
    assert res.chi2 == pytest.approx(10.0)  # 12/(10*2*3)*(20^2+10^2) - 3*10*3
    assert res.significant[0, 1]
    strict = friedman_tukey(scores, alpha=1e-4)
    assert strict.critical_difference > res.critical_difference
    assert strict.q_critical == pytest.approx(
        stats.studentized_range.ppf(1 - 1e-4, 2, np.inf), rel=1e-10
    )


def test_mirex_analysis_is_frozen() -> None:
    res = friedman_tukey(SPEC6_SCORES)
    with pytest.raises(AttributeError):
        res.chi2 = 0.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("scores", "kwargs", "match"),
    [
        ([1.0, 2.0, 3.0], {}, r"scores must be 2-D with shape \(n_queries, n_systems\)"),
        ([[1.0, 2.0, 3.0]], {}, "n_queries >= 2 rows, found 1"),
        ([[1.0], [2.0]], {}, "n_systems >= 2 columns, found 1"),
        ([[1.0, np.nan], [2.0, 1.0]], {}, "scores must be finite"),
        ([[1.0, np.inf], [2.0, 1.0]], {}, "scores must be finite"),
        (SPEC6_SCORES, {"alpha": 0.0}, r"alpha must be in \(0, 1\), found 0.0"),
        (SPEC6_SCORES, {"alpha": 1.5}, r"alpha must be in \(0, 1\)"),
    ],
)
def test_friedman_tukey_validation(scores: object, kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        friedman_tukey(scores, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Paired tests
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spec9() -> PairedTests:
    return paired_tests(SPEC9_DELTA, rng=np.random.default_rng(12345))


def test_spec9_descriptives(spec9: PairedTests) -> None:
    assert spec9.n == 10
    assert spec9.mean == pytest.approx(0.065, abs=1e-12)
    assert spec9.sd == pytest.approx(0.081411, abs=5e-7)


def test_spec9_t_test(spec9: PairedTests) -> None:
    assert spec9.t_statistic == pytest.approx(2.5248, abs=5e-5)
    assert spec9.t_p_value == pytest.approx(0.03251, abs=5e-6)
    assert spec9.ci_low == pytest.approx(0.00676, abs=5e-6)
    assert spec9.ci_high == pytest.approx(0.12324, abs=5e-6)
    assert spec9.confidence_level == 0.95
    reference = stats.ttest_rel(SPEC9_DELTA, np.zeros(10))
    assert spec9.t_p_value == pytest.approx(reference.pvalue, rel=1e-12)


def test_spec9_wilcoxon(spec9: PairedTests) -> None:
    assert spec9.wilcoxon_w_plus == 40.0
    assert spec9.wilcoxon_w_minus == 5.0
    assert spec9.wilcoxon_statistic == 5.0
    assert spec9.wilcoxon_p_value == pytest.approx(0.03906, abs=5e-6)
    assert spec9.wilcoxon_p_value == pytest.approx(10 / 256, abs=1e-12)  # 2 * P(W <= 5), n = 9


def test_spec9_sign_test(spec9: PairedTests) -> None:
    assert spec9.sign_successes == 7
    assert spec9.sign_trials == 9
    assert spec9.sign_p_value == pytest.approx(0.1797, abs=5e-5)
    assert spec9.sign_p_value == pytest.approx(2 * (1 + 9 + 36) / 512, abs=1e-12)


def test_spec9_bootstrap_reproduces_seeded_value(spec9: PairedTests) -> None:
    assert spec9.bootstrap_p_value == pytest.approx(0.0068, abs=5e-5)
    assert spec9.n_resamples == 100_000


def test_spec9_exact_permutation(spec9: PairedTests) -> None:
    assert spec9.permutation_exact is True
    assert spec9.permutation_p_value == pytest.approx(0.03906, abs=5e-6)
    assert spec9.permutation_p_value == pytest.approx(40 / 1024, abs=1e-12)


def test_monte_carlo_permutation_approximates_exact() -> None:
    res = paired_tests(SPEC9_DELTA, rng=np.random.default_rng(12345), exact_permutation_max_n=0)
    assert res.permutation_exact is False
    # Exact 0.0391; T = 100,000 gives a standard error of about 0.0006.
    assert res.permutation_p_value == pytest.approx(40 / 1024, abs=0.003)


def test_seeded_results_replay() -> None:
    first = paired_tests(SPEC9_DELTA, rng=np.random.default_rng(7), n_resamples=5000)
    second = paired_tests(SPEC9_DELTA, rng=np.random.default_rng(7), n_resamples=5000)
    assert first == second
    other = paired_tests(SPEC9_DELTA, rng=np.random.default_rng(8), n_resamples=5000)
    assert other.bootstrap_p_value != first.bootstrap_p_value


def test_bootstrap_batches_follow_one_stream() -> None:
    # Many queries force several batches; the p-value must equal one unbatched draw.
    rng_data = np.random.default_rng(4)
    delta = rng_data.normal(0.01, 0.1, size=150)
    n_resamples = 20_000
    res = paired_tests(delta, rng=np.random.default_rng(9), n_resamples=n_resamples)
    rng = np.random.default_rng(9)
    means = delta[rng.integers(0, 150, size=(n_resamples, 150))].mean(axis=1)
    expected = np.mean(np.abs(means - means.mean()) >= abs(delta.mean()))
    assert res.bootstrap_p_value == pytest.approx(expected, abs=1e-12)
    assert res.permutation_exact is False


@pytest.mark.parametrize("seed", range(5))
def test_exact_permutation_matches_brute_force(seed: int) -> None:
    delta = np.round(np.random.default_rng(seed).normal(0.02, 0.1, size=8), 2)
    res = paired_tests(delta, rng=np.random.default_rng(0), n_resamples=10)
    observed = abs(delta.sum())
    count = sum(
        abs(np.dot(signs, delta)) >= observed - 1e-9
        for signs in itertools.product((-1.0, 1.0), repeat=8)
    )
    assert res.permutation_p_value == pytest.approx(count / 256, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_rank_tests_match_scipy(seed: int) -> None:
    delta = np.random.default_rng(seed).normal(0.02, 0.1, size=25)
    res = paired_tests(delta, rng=np.random.default_rng(0), n_resamples=10)
    assert res.wilcoxon_p_value == pytest.approx(stats.wilcoxon(delta).pvalue, rel=1e-10)
    positives = int(np.sum(delta > 0))
    assert res.sign_p_value == pytest.approx(stats.binomtest(positives, 25).pvalue, rel=1e-12)


def test_wilcoxon_with_tied_magnitudes_uses_normal_approximation() -> None:
    delta = np.array([0.1, -0.1, 0.2, 0.2, 0.3, 0.1, 0.4, -0.2])
    res = paired_tests(delta, rng=np.random.default_rng(0), n_resamples=10)
    expected = stats.wilcoxon(delta, method="approx").pvalue
    assert res.wilcoxon_p_value == pytest.approx(expected, rel=1e-10)
    assert res.wilcoxon_w_plus + res.wilcoxon_w_minus == pytest.approx(8 * 9 / 2)


def test_confidence_level_widens_interval(spec9: PairedTests) -> None:
    wide = paired_tests(
        SPEC9_DELTA, rng=np.random.default_rng(0), n_resamples=10, confidence_level=0.99
    )
    assert wide.ci_low < spec9.ci_low < spec9.mean < spec9.ci_high < wide.ci_high
    assert (spec9.ci_low + spec9.ci_high) / 2 == pytest.approx(spec9.mean)


def test_all_zero_differences() -> None:
    res = paired_tests(np.zeros(6), rng=np.random.default_rng(0), n_resamples=100)
    assert np.isnan(res.t_statistic)
    assert res.t_p_value == 1.0
    assert res.ci_low == res.ci_high == 0.0
    assert res.wilcoxon_p_value == 1.0
    assert res.sign_trials == 0
    assert res.sign_p_value == 1.0
    assert res.bootstrap_p_value == 1.0
    assert res.permutation_p_value == 1.0


def test_constant_nonzero_differences() -> None:
    res = paired_tests(np.full(6, 0.1), rng=np.random.default_rng(0), n_resamples=100)
    assert res.t_statistic == np.inf
    assert res.t_p_value == 0.0
    assert res.ci_low == pytest.approx(0.1)
    assert res.ci_high == pytest.approx(0.1)
    # All magnitudes tie, so Wilcoxon falls back to the normal approximation.
    assert res.wilcoxon_w_minus == 0.0
    assert res.wilcoxon_p_value == pytest.approx(
        stats.wilcoxon(np.full(6, 0.1), method="approx").pvalue, rel=1e-10
    )
    assert res.permutation_p_value == pytest.approx(2 / 64)
    negative = paired_tests(np.full(6, -0.1), rng=np.random.default_rng(0), n_resamples=100)
    assert negative.t_statistic == -np.inf


def test_sign_flip_symmetry() -> None:
    plus = paired_tests(SPEC9_DELTA, rng=np.random.default_rng(1), n_resamples=1000)
    minus = paired_tests(-SPEC9_DELTA, rng=np.random.default_rng(1), n_resamples=1000)
    assert minus.t_statistic == pytest.approx(-plus.t_statistic)
    for name in ("t_p_value", "wilcoxon_p_value", "sign_p_value", "permutation_p_value"):
        assert getattr(minus, name) == pytest.approx(getattr(plus, name))
    assert minus.wilcoxon_w_plus == plus.wilcoxon_w_minus


@pytest.mark.parametrize(
    ("delta", "kwargs", "match"),
    [
        ([[0.1, 0.2], [0.3, 0.4]], {}, r"delta must be 1-D with shape \(n,\)"),
        ([0.1], {}, "delta must hold n >= 2 differences, found 1"),
        ([0.1, np.nan, 0.2], {}, "delta must be finite"),
        ([0.1, np.inf, 0.2], {}, "delta must be finite"),
        (SPEC9_DELTA, {"rng": 12345}, "rng must be a numpy.random.Generator, found int"),
        (
            SPEC9_DELTA,
            {"rng": np.random.RandomState(0)},
            "rng must be a numpy.random.Generator, found RandomState",
        ),
        (SPEC9_DELTA, {"n_resamples": 0}, "n_resamples must be an integer >= 1, found 0"),
        (SPEC9_DELTA, {"n_resamples": 10.0}, "n_resamples must be an integer >= 1"),
        (SPEC9_DELTA, {"confidence_level": 1.0}, r"confidence_level must be in \(0, 1\)"),
        (
            SPEC9_DELTA,
            {"exact_permutation_max_n": -1},
            "exact_permutation_max_n must be an integer >= 0, found -1",
        ),
    ],
)
def test_paired_tests_validation(delta: object, kwargs: dict[str, object], match: str) -> None:
    arguments: dict[str, object] = {"rng": np.random.default_rng(0), "n_resamples": 10}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=match):
        paired_tests(delta, **arguments)  # type: ignore[arg-type]
