"""mtcjudge.mtc.significance: [U12] bounds, power threshold and rules (docs/method.md §5)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray
from scipy import stats

from mtcjudge.mtc.significance import (
    Bounds,
    Outcome,
    Verdict,
    agk_bounds,
    power_threshold,
    significance_verdict,
    significance_verdicts,
)

# --------------------------------------------------------------------------------------
# Toy q1 of docs/method.md §2.6(d): pool d1..d8, A = d1..d5, B = (d2, d1, d6, d7, d3),
# judged d1=2, d2=1, d6=0; Broad (lmax 2), k = 5.
# --------------------------------------------------------------------------------------

TOY_IN_A = np.array([1, 1, 1, 1, 1, 0, 0, 0], dtype=bool)
TOY_IN_B = np.array([1, 1, 1, 0, 0, 1, 1, 0], dtype=bool)
TOY_JUDGED = np.array([1, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
TOY_VALUES = np.array([2.0, 1.0, np.nan, np.nan, np.nan, 0.0, np.nan, np.nan])
TOY_QUERY = np.zeros(8, dtype=np.int64)


def toy_bounds(**overrides: object) -> Bounds:
    arguments: dict[str, object] = {
        "in_a": TOY_IN_A,
        "in_b": TOY_IN_B,
        "judged": TOY_JUDGED,
        "values": TOY_VALUES,
        "pair_query": TOY_QUERY,
        "n_queries": 1,
        "k": 5,
        "lmax": 2.0,
    }
    tight = bool(overrides.pop("tight", False))
    arguments.update(overrides)
    return agk_bounds(**arguments, tight=tight)  # type: ignore[arg-type]


def test_toy_paper_bounds() -> None:
    bounds = toy_bounds()
    assert bounds.upper.shape == (1,)
    assert bounds.upper[0] == pytest.approx(1.2, abs=1e-12)
    assert bounds.lower[0] == pytest.approx(-0.8, abs=1e-12)


def test_toy_tight_bounds() -> None:
    bounds = toy_bounds(tight=True)
    assert bounds.upper[0] == pytest.approx(0.8, abs=1e-12)
    assert bounds.lower[0] == pytest.approx(-0.4, abs=1e-12)


def test_bounds_are_frozen() -> None:
    bounds = toy_bounds()
    with pytest.raises(AttributeError):
        bounds.upper = np.zeros(1)  # type: ignore[misc]


def test_toy_bounds_scale_with_lmax_and_k() -> None:
    # On Fine the unjudged charge is 100, the judged part is unchanged.
    bounds = toy_bounds(lmax=100.0)
    assert bounds.upper[0] == pytest.approx(3 * 100 / 5)
    assert bounds.lower[0] == pytest.approx(-2 * 100 / 5)


def test_queries_are_accumulated_separately_and_empty_queries_are_zero() -> None:
    # Query 2 holds the toy, query 0 a single judged pair in A only, query 1 nothing.
    in_a = np.concatenate([[True], TOY_IN_A])
    in_b = np.concatenate([[False], TOY_IN_B])
    judged = np.concatenate([[True], TOY_JUDGED])
    values = np.concatenate([[1.5], TOY_VALUES])
    pair_query = np.concatenate([[0], TOY_QUERY + 2])
    bounds = agk_bounds(in_a, in_b, judged, values, pair_query, 3, 5, 2.0)
    np.testing.assert_allclose(bounds.upper, [0.3, 0.0, 1.2], atol=1e-12)
    np.testing.assert_allclose(bounds.lower, [0.3, 0.0, -0.8], atol=1e-12)


def test_pool_order_does_not_matter() -> None:
    order = np.random.default_rng(3).permutation(8)
    bounds = agk_bounds(
        TOY_IN_A[order], TOY_IN_B[order], TOY_JUDGED[order], TOY_VALUES[order], TOY_QUERY, 1, 5, 2
    )
    assert bounds.upper[0] == pytest.approx(1.2)
    assert bounds.lower[0] == pytest.approx(-0.8)


def test_no_pool_pairs_gives_zero_bounds() -> None:
    empty_bool = np.zeros(0, dtype=bool)
    bounds = agk_bounds(
        empty_bool, empty_bool, empty_bool, np.zeros(0), np.zeros(0, dtype=int), 2, 5, 2
    )
    np.testing.assert_array_equal(bounds.upper, [0.0, 0.0])
    np.testing.assert_array_equal(bounds.lower, [0.0, 0.0])


def random_pool(
    rng: np.random.Generator, n_queries: int, k: int, lmax: int
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.float64], NDArray[np.int64]]:
    """Random top-k lists of two systems over per-query pools, with true gains."""
    in_a_parts, in_b_parts, value_parts, query_parts = [], [], [], []
    for query in range(n_queries):
        pool_size = int(rng.integers(k, 2 * k + 1))
        in_a = np.zeros(pool_size, dtype=bool)
        in_b = np.zeros(pool_size, dtype=bool)
        in_a[rng.choice(pool_size, size=k, replace=False)] = True
        in_b[rng.choice(pool_size, size=int(rng.integers(0, k + 1)), replace=False)] = True
        in_a_parts.append(in_a)
        in_b_parts.append(in_b)
        value_parts.append(rng.integers(0, lmax + 1, size=pool_size).astype(np.float64))
        query_parts.append(np.full(pool_size, query))
    return (
        np.concatenate(in_a_parts),
        np.concatenate(in_b_parts),
        np.concatenate(value_parts),
        np.concatenate(query_parts),
    )


def true_difference(
    in_a: NDArray[np.bool_],
    in_b: NDArray[np.bool_],
    values: NDArray[np.float64],
    pair_query: NDArray[np.int64],
    n_queries: int,
    k: int,
) -> NDArray[np.float64]:
    difference = np.zeros(n_queries)
    for p in range(in_a.size):
        difference[pair_query[p]] += values[p] * (int(in_a[p]) - int(in_b[p])) / k
    return difference


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize(("k", "lmax"), [(5, 2), (10, 100)])
def test_bounds_contain_true_difference_and_tight_within_loose(
    seed: int, k: int, lmax: int
) -> None:
    rng = np.random.default_rng(seed)
    n_queries = 6
    in_a, in_b, values, pair_query = random_pool(rng, n_queries, k, lmax)
    truth = true_difference(in_a, in_b, values, pair_query, n_queries, k)
    judged = rng.random(in_a.size) < rng.random()
    shown = np.where(judged, values, np.nan)
    loose = agk_bounds(in_a, in_b, judged, shown, pair_query, n_queries, k, lmax)
    tight = agk_bounds(in_a, in_b, judged, shown, pair_query, n_queries, k, lmax, tight=True)
    eps = 1e-9
    assert np.all(loose.lower <= tight.lower + eps)
    assert np.all(tight.lower <= truth + eps)
    assert np.all(truth <= tight.upper + eps)
    assert np.all(tight.upper <= loose.upper + eps)


@pytest.mark.parametrize("seed", range(10))
def test_tight_bounds_are_attained_by_extreme_judgments(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n_queries, k, lmax = 4, 5, 2
    in_a, in_b, values, pair_query = random_pool(rng, n_queries, k, lmax)
    judged = rng.random(in_a.size) < 0.5
    tight = agk_bounds(in_a, in_b, judged, values, pair_query, n_queries, k, lmax, tight=True)
    best_for_a = np.where(judged, values, np.where(in_a & ~in_b, lmax, 0.0))
    best_for_b = np.where(judged, values, np.where(in_b & ~in_a, lmax, 0.0))
    np.testing.assert_allclose(
        tight.upper, true_difference(in_a, in_b, best_for_a, pair_query, n_queries, k)
    )
    np.testing.assert_allclose(
        tight.lower, true_difference(in_a, in_b, best_for_b, pair_query, n_queries, k)
    )


@pytest.mark.parametrize("tight", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_all_judged_bounds_equal_true_difference(seed: int, tight: bool) -> None:
    rng = np.random.default_rng(200 + seed)
    n_queries, k, lmax = 5, 5, 2
    in_a, in_b, values, pair_query = random_pool(rng, n_queries, k, lmax)
    judged = np.ones(in_a.size, dtype=bool)
    bounds = agk_bounds(in_a, in_b, judged, values, pair_query, n_queries, k, lmax, tight=tight)
    truth = true_difference(in_a, in_b, values, pair_query, n_queries, k)
    np.testing.assert_allclose(bounds.upper, truth, atol=1e-12)
    np.testing.assert_allclose(bounds.lower, truth, atol=1e-12)


def test_swapping_systems_swaps_and_negates_bounds() -> None:
    rng = np.random.default_rng(7)
    in_a, in_b, values, pair_query = random_pool(rng, 5, 5, 2)
    judged = rng.random(in_a.size) < 0.4
    ab = agk_bounds(in_a, in_b, judged, values, pair_query, 5, 5, 2)
    ba = agk_bounds(in_b, in_a, judged, values, pair_query, 5, 5, 2)
    np.testing.assert_allclose(ab.upper, -ba.lower)
    np.testing.assert_allclose(ab.lower, -ba.upper)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"in_a": TOY_IN_A.astype(int)}, "in_a must have dtype bool"),
        ({"in_b": TOY_IN_B.astype(float)}, "in_b must have dtype bool"),
        ({"judged": TOY_JUDGED.astype(int)}, "judged must have dtype bool"),
        ({"in_a": TOY_IN_A.reshape(2, 4)}, r"in_a must be 1-D"),
        ({"in_b": TOY_IN_B[:7]}, r"in_b must have shape \(8,\)"),
        ({"judged": TOY_JUDGED[:7]}, r"judged must have shape \(8,\)"),
        ({"values": TOY_VALUES[:7]}, r"values must have shape \(8,\)"),
        ({"pair_query": TOY_QUERY[:7]}, r"pair_query must have shape \(8,\)"),
        ({"pair_query": TOY_QUERY.astype(float)}, "pair_query must have an integer dtype"),
        ({"pair_query": TOY_QUERY + 1}, r"pair_query must lie in \[0, 0\]"),
        ({"pair_query": TOY_QUERY - 1}, r"pair_query must lie in \[0, 0\]"),
        ({"values": np.where(TOY_JUDGED, np.nan, 0.0)}, "values must be finite where judged"),
        ({"values": np.full(8, np.inf)}, "values must be finite where judged"),
        ({"values": np.full(8, 3.0)}, r"judged values must lie in \[0, lmax=2.0\]"),
        ({"values": np.full(8, -1.0)}, r"judged values must lie in \[0, lmax=2.0\]"),
        ({"k": 4}, "in_a must mark at most k=4 pool pairs per query, found 5"),
        ({"k": 0}, "k must be an integer >= 1, found 0"),
        ({"k": 2.5}, "k must be an integer >= 1, found 2.5"),
        ({"k": True}, "k must be an integer >= 1, found True"),
        ({"n_queries": 0}, "n_queries must be an integer >= 1, found 0"),
        ({"lmax": 0.0}, "lmax must be > 0, found 0.0"),
        ({"lmax": np.nan}, "lmax must be finite"),
    ],
)
def test_agk_bounds_validation(overrides: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        toy_bounds(**overrides)


def test_agk_bounds_checks_b_top_k_size() -> None:
    in_b = np.ones(8, dtype=bool)
    with pytest.raises(
        ValueError, match="in_b must mark at most k=5 pool pairs per query, found 8"
    ):
        toy_bounds(in_b=in_b)


# --------------------------------------------------------------------------------------
# 5.4 Power threshold
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "expected", "tolerance"),
    [
        ({}, 0.067017, 5e-7),
        ({"method": "t"}, 0.067017, 5e-7),
        ({"method": "normal"}, 0.066496, 5e-7),
        ({"method": "noncentral"}, 0.066955, 5e-7),
        ({"alternative": "two-sided"}, 0.0750, 5e-5),
    ],
)
def test_power_threshold_spec_values(
    kwargs: dict[str, str], expected: float, tolerance: float
) -> None:
    assert power_threshold(**kwargs) == pytest.approx(expected, abs=tolerance)  # type: ignore[arg-type]


def test_power_threshold_formula() -> None:
    expected = (1.660391 + 1.041891) * 0.248 / 10
    assert power_threshold(100, 0.248, 0.05, 0.15) == pytest.approx(expected, abs=1e-6)


def test_power_threshold_two_sided_variants_exceed_one_sided() -> None:
    for method in ("t", "normal", "noncentral"):
        one = power_threshold(method=method, alternative="one-sided")
        two = power_threshold(method=method, alternative="two-sided")
        assert two > one
    assert power_threshold(method="noncentral", alternative="two-sided") == pytest.approx(
        0.0750, abs=5e-5
    )


def test_power_threshold_shrinks_with_queries_and_scales_with_sigma() -> None:
    assert power_threshold(n=50) > power_threshold(n=100) > power_threshold(n=200)
    assert power_threshold(sigma=0.496) == pytest.approx(2 * power_threshold(sigma=0.248))
    # Raw Broad AG units (13.A9): multiply by n_L - 1.
    assert power_threshold(sigma=2 * 0.248) == pytest.approx(2 * 0.067017, abs=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 1}, "n must be an integer >= 2, found 1"),
        ({"n": 10.5}, "n must be an integer >= 2, found 10.5"),
        ({"sigma": 0.0}, "sigma must be > 0, found 0.0"),
        ({"sigma": -1.0}, "sigma must be > 0"),
        ({"sigma": np.nan}, "sigma must be finite"),
        ({"alpha": 0.0}, r"alpha must be in \(0, 1\), found 0.0"),
        ({"alpha": 1.0}, r"alpha must be in \(0, 1\)"),
        ({"beta": 1.5}, r"beta must be in \(0, 1\), found 1.5"),
        ({"method": "z"}, "method must be one of .*found 'z'"),
        ({"alternative": "larger"}, "alternative must be one of .*found 'larger'"),
    ],
)
def test_power_threshold_validation(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        power_threshold(**kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# 5.3 Significance rules
# --------------------------------------------------------------------------------------

TOY_U = (1.2, 0.6, 0.4)
TOY_L = (-0.8, -0.2, 0.0)


def test_toy_rule_4_a_better() -> None:
    verdict = significance_verdict(TOY_U, TOY_L, 0.0983)
    assert isinstance(verdict, Verdict)
    assert verdict.outcome is Outcome.A_BETTER
    assert isinstance(verdict.outcome, str)
    assert f"{verdict.outcome}" == "a_better"
    assert verdict.rule == 4
    assert verdict.final is False
    # Rule 3 fails because A is significantly better with u (one-sided p = 0.0464).
    assert verdict.p_upper_greater == pytest.approx(0.0464, abs=5e-5)
    assert verdict.p_upper_greater == pytest.approx(
        stats.ttest_1samp(TOY_U, 0.0, alternative="greater").pvalue, rel=1e-12
    )
    # Rules 1 and 2 do not fire: mean u = 0.733 > 0 and mean l = -0.333 < 0.
    assert verdict.p_upper_less > 0.5
    assert verdict.p_lower_greater > 0.5
    assert verdict.p_upper_less + verdict.p_upper_greater == pytest.approx(1.0)
    assert verdict.p_lower_less + verdict.p_lower_greater == pytest.approx(1.0)


def test_toy_below_threshold_is_undecided() -> None:
    verdict = significance_verdict(TOY_U, TOY_L, 0.05)
    assert verdict.outcome is Outcome.UNDECIDED
    assert verdict.rule is None
    assert verdict.final is False


def test_rule_4_threshold_is_strict_and_custom() -> None:
    assert significance_verdict(TOY_U, TOY_L, 0.067, delta=0.067).outcome is Outcome.UNDECIDED
    assert significance_verdict(TOY_U, TOY_L, 0.05, delta=0.033).outcome is Outcome.A_BETTER
    assert significance_verdict(TOY_U, TOY_L, 0.0983, delta=0.1).rule is None


def test_rule_4_negative_expectation_b_better() -> None:
    # Mirror the toy: B's best case is now the upper side.
    verdict = significance_verdict([0.8, 0.2, 0.0], [-1.2, -0.6, -0.4], -0.0983)
    assert verdict.outcome is Outcome.B_BETTER
    assert verdict.rule == 4
    assert verdict.final is False


def test_toy_two_tailed_gives_rule_3() -> None:
    # Two-tailed at 0.05 needs one-sided p < 0.025: 0.0464 is no longer significant.
    verdict = significance_verdict(TOY_U, TOY_L, 0.0983, two_tailed=True)
    assert verdict.outcome is Outcome.NOT_DIFFERENT
    assert verdict.rule == 3
    assert verdict.final is True


def test_rule_1_b_better_even_in_best_case_for_a() -> None:
    upper = [-0.5, -0.4, -0.6, -0.45]
    lower = [-0.9, -0.8, -1.0, -0.85]
    # Rule 1 takes precedence over rule 4, even against the sign of E.
    verdict = significance_verdict(upper, lower, 0.5)
    assert verdict.outcome is Outcome.B_BETTER
    assert verdict.rule == 1
    assert verdict.final is True


def test_rule_2_a_better_even_in_best_case_for_b() -> None:
    upper = [0.9, 0.8, 1.0, 0.85]
    lower = [0.5, 0.4, 0.6, 0.45]
    verdict = significance_verdict(upper, lower, -0.5)
    assert verdict.outcome is Outcome.A_BETTER
    assert verdict.rule == 2
    assert verdict.final is True


def test_rule_3_not_different_takes_precedence_over_rule_4() -> None:
    upper = [0.1, -0.1, 0.05, -0.02]
    lower = [0.0, -0.2, -0.05, -0.1]
    verdict = significance_verdict(upper, lower, 0.3)
    assert verdict.outcome is Outcome.NOT_DIFFERENT
    assert verdict.rule == 3
    assert verdict.final is True


def test_alpha_changes_the_verdict() -> None:
    # The toy u is significantly > 0 at alpha = 0.1 (p = 0.0464) but not at 0.01.
    assert significance_verdict(TOY_U, TOY_L, 0.0, alpha=0.1).rule is None
    assert significance_verdict(TOY_U, TOY_L, 0.0, alpha=0.01).rule == 3


@pytest.mark.parametrize(
    ("value", "outcome", "rule"),
    [(0.1, Outcome.A_BETTER, 2), (-0.1, Outcome.B_BETTER, 1), (0.0, Outcome.NOT_DIFFERENT, 3)],
)
def test_constant_complete_bounds(value: float, outcome: Outcome, rule: int) -> None:
    # All judged: u == l == the true per-query difference, here constant over queries.
    bounds = [value] * 5
    verdict = significance_verdict(bounds, bounds, value)
    assert verdict.outcome is outcome
    assert verdict.rule == rule
    assert verdict.final is True


def test_constant_bounds_tolerate_rounding_noise() -> None:
    noisy = [0.3, 0.1 + 0.2, 0.3]  # 0.1 + 0.2 != 0.3 in floating point
    assert significance_verdict(noisy, noisy, 0.3).rule == 2
    zero = [0.0, 0.1 + 0.2 - 0.3, 0.0]
    assert significance_verdict(zero, zero, 0.0).rule == 3


def test_vectorised_matches_single_pair() -> None:
    rng = np.random.default_rng(11)
    n_pairs, n_queries = 40, 8
    centre = rng.normal(scale=0.5, size=(n_pairs, 1))
    lower = centre + rng.normal(scale=0.3, size=(n_pairs, n_queries)) - rng.random((n_pairs, 1))
    upper = lower + rng.random((n_pairs, n_queries)) * rng.random((n_pairs, 1))
    expected = rng.normal(scale=0.1, size=n_pairs)
    verdicts = significance_verdicts(upper, lower, expected)
    assert len(verdicts) == n_pairs
    rules_seen = set()
    for i in range(n_pairs):
        single = significance_verdict(upper[i], lower[i], expected[i])
        assert verdicts.verdict(i) == single
        assert verdicts.outcome[i] is single.outcome
        rules_seen.add(single.rule)
    assert rules_seen >= {1, 2, 3}


def test_verdict_only_depends_on_sign_structure_not_units() -> None:
    scaled = significance_verdict(
        np.array(TOY_U) * 50, np.array(TOY_L) * 50, 0.0983
    )  # raw Fine units for the bounds, normalised E
    assert scaled.outcome is Outcome.A_BETTER
    assert scaled.p_upper_greater == pytest.approx(0.0464, abs=5e-5)


def test_bounds_feed_the_rules() -> None:
    # Complete judgments of a pair where A beats B on every query -> rule 2, final.
    rng = np.random.default_rng(5)
    n_queries, k = 6, 5
    in_a, in_b, values, pair_query = random_pool(rng, n_queries, k, 2)
    values = np.where(in_a & ~in_b, 2.0, np.where(in_b & ~in_a, 0.0, values))
    in_b_only_any = np.bincount(pair_query, weights=in_a & ~in_b, minlength=n_queries)
    assert np.all(in_b_only_any > 0)
    judged = np.ones(in_a.size, dtype=bool)
    bounds = agk_bounds(in_a, in_b, judged, values, pair_query, n_queries, k, 2)
    verdict = significance_verdict(bounds.upper, bounds.lower, float(bounds.upper.mean()) / 2)
    assert verdict.outcome is Outcome.A_BETTER
    assert verdict.rule == 2


def test_outcome_values() -> None:
    assert [o.value for o in Outcome] == ["a_better", "b_better", "not_different", "undecided"]


def test_verdict_is_frozen() -> None:
    verdict = significance_verdict(TOY_U, TOY_L, 0.0983)
    with pytest.raises(AttributeError):
        verdict.rule = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("upper", "lower", "expected", "kwargs", "match"),
    [
        ([[1.2, 0.6, 0.4]], TOY_L, 0.1, {}, r"upper must be 1-D with shape \(n_queries,\)"),
        (TOY_U, [-0.8, -0.2], 0.1, {}, r"lower must have the shape of upper \(3,\)"),
        ([0.5], [0.1], 0.1, {}, "the t-tests need n_queries >= 2, found 1"),
        ([1.2, np.nan, 0.4], TOY_L, 0.1, {}, "upper and lower must be finite"),
        (TOY_U, [-0.8, np.inf, 0.0], 0.1, {}, "upper and lower must be finite"),
        (TOY_U, [-0.8, 0.7, 0.0], 0.1, {}, "lower must be <= upper"),
        (TOY_U, TOY_L, np.nan, {}, "expected_mean_difference must be finite"),
        (TOY_U, TOY_L, 0.1, {"delta": -0.1}, "delta must be >= 0, found -0.1"),
        (TOY_U, TOY_L, 0.1, {"delta": np.inf}, "delta must be finite"),
        (TOY_U, TOY_L, 0.1, {"alpha": 0.0}, r"alpha must be in \(0, 1\), found 0.0"),
        (TOY_U, TOY_L, 0.1, {"alpha": 1.0}, r"alpha must be in \(0, 1\)"),
    ],
)
def test_significance_verdict_validation(
    upper: object, lower: object, expected: float, kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        significance_verdict(upper, lower, expected, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("upper", "lower", "expected", "match"),
    [
        ([1.2, 0.6, 0.4], [TOY_L], [0.1], r"upper must be 2-D with shape \(n_pairs, n_queries\)"),
        ([TOY_U], [TOY_L, TOY_L], [0.1], r"lower must have the shape of upper \(1, 3\)"),
        ([TOY_U], [TOY_L], [0.1, 0.2], r"must have shape \(1,\), found \(2,\)"),
        ([TOY_U], [TOY_L], [np.nan], "expected mean differences must be finite"),
        ([[0.1], [0.2]], [[0.0], [0.0]], [0.1, 0.1], "n_queries >= 2, found 1"),
    ],
)
def test_significance_verdicts_validation(
    upper: object, lower: object, expected: object, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        significance_verdicts(upper, lower, expected)  # type: ignore[arg-type]
