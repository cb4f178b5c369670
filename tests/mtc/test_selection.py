"""Selection weights, tie-break and batches (docs/method.md §4.1-4.3)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.measures import (
    MEASURES,
    confidence_from_moments,
    entry_coefficients,
    evaluate,
    ideal_moments,
    rank_discount,
)
from mtcjudge.mtc.scales import BROAD
from mtcjudge.mtc.selection import (
    CoRetrieval,
    absolute_weights,
    best_pairs,
    confidence_weights,
    static_weights,
)

UNJUDGED = np.array([2, 3, 4, 6, 7])  # d3, d4, d5, d7, d8
D4, D5, D8 = 3, 4, 7

# docs/method.md §3.4: query-averaged CG differences of the toy (A-B, A-C, B-C)
PER_QUERY_MEAN = np.array([[0.134807, 0.10, 0.06], [-0.066080, 0.02, -0.04],
                           [-0.200887, -0.08, -0.10]])  # fmt: skip
PER_QUERY_VAR = np.array([[0.013850, 0.0040, 0.0020], [0.008023, 0.0030, 0.0060],
                          [0.011549, 0.0050, 0.0040]])  # fmt: skip
AVERAGED_MEAN = PER_QUERY_MEAN.mean(axis=1)
AVERAGED_VAR = PER_QUERY_VAR.sum(axis=1) / 9


def confidence_matrix(distribution: str) -> np.ndarray:
    conf = confidence_from_moments(AVERAGED_MEAN, AVERAGED_VAR, 3, distribution)
    matrix = np.eye(3)
    for (a, b), c in zip([(0, 1), (0, 2), (1, 2)], conf, strict=True):
        matrix[a, b] = matrix[b, a] = c
    return matrix


def unjudged_mask() -> np.ndarray:
    available = np.zeros(8, dtype=bool)
    available[UNJUDGED] = True
    return available


def pick(weights, toy_collection, var, n: int = 1) -> np.ndarray:
    return best_pairs(
        weights, unjudged_mask(), var, toy_collection.mean_rank, toy_collection.pair_query, n
    )


# ---------------------------------------------------------------------- thesis weights (4.1)


def test_toy_static_weights(toy_collection) -> None:
    cg = static_weights(toy_collection, entry_coefficients(toy_collection, "cg"))
    np.testing.assert_allclose(cg[UNJUDGED], 2.0)
    dcg = static_weights(toy_collection, entry_coefficients(toy_collection, "dcg"))
    np.testing.assert_allclose(dcg[UNJUDGED], [1.0, 0.861353, 0.773706, 0.861353, 2.0], atol=1e-6)


def test_toy_static_weights_of_ratio_measures_divide_by_the_ideal(
    toy_collection, toy_estimates
) -> None:
    mean, var, _ = toy_estimates
    expected = {
        "ndcg": [0.213244, 0.183678, 0.164988, 0.183678, 0.426487],
        "rbp": [0.241519, 0.193215, 0.154572, 0.193215, 0.377373],
    }
    for measure, weights in expected.items():
        raw = static_weights(toy_collection, entry_coefficients(toy_collection, measure))
        ey, _ = ideal_moments(mean, var, 5, rank_discount(measure, np.arange(1, 6)))
        np.testing.assert_allclose(raw[UNJUDGED] / ey, weights, atol=1e-6)


@pytest.mark.parametrize("measure", ["ndcg", "rbp"])
def test_engine_static_weights_of_ratio_measures(
    toy_collection, make_toy_model, toy_judgments, measure
) -> None:
    judged, values = toy_judgments
    engine = MTCEngine(
        toy_collection,
        make_toy_model(),
        EngineConfig(measure=measure, policy="static"),
        judged_values=np.where(judged, values, np.nan),
    )
    ey, _ = ideal_moments(engine.mean, engine.var, 5, rank_discount(measure, np.arange(1, 6)))
    raw = static_weights(toy_collection, entry_coefficients(toy_collection, measure))
    np.testing.assert_allclose(engine.weights(), raw / ey)
    assert engine.select()[0] == D8


def test_toy_static_choice(toy_collection, toy_estimates) -> None:
    _, var, _ = toy_estimates
    for measure in MEASURES:
        w = static_weights(toy_collection, entry_coefficients(toy_collection, measure))
        # CG: all five tie and the largest Var[R] (d5, 0.516226) wins; the others pick d8
        assert pick(w, toy_collection, var)[0] == (D5 if measure == "cg" else D8)


# ---------------------------------------------------------------------- [U12] weights (4.2)


def test_toy_confidence_weights_with_student_t(toy_collection, toy_estimates) -> None:
    _, var, _ = toy_estimates
    conf = confidence_matrix("t")
    assert conf[0, 1] == pytest.approx(0.9143, abs=5e-5)
    w = confidence_weights(toy_collection, entry_coefficients(toy_collection, "cg"), conf, 0.95)
    # the spec prints these truncated to 4 decimals (0.144366 -> 0.1443, 0.374353 -> 0.3743)
    np.testing.assert_allclose(w[UNJUDGED], [0.3472, 0.1443, 0.3743, 0.1443, 0.3472], atol=1e-4)
    # d5: the A-B and A-C terms
    assert w[D5] == pytest.approx((1 - conf[0, 1]) + (1 - conf[0, 2]))
    assert pick(w, toy_collection, var)[0] == D5


def test_toy_confidence_weights_with_the_normal(toy_collection, toy_estimates) -> None:
    _, var, _ = toy_estimates
    conf = confidence_matrix("normal")
    w = confidence_weights(toy_collection, entry_coefficients(toy_collection, "cg"), conf, 0.95)
    # only A-C is below 0.95
    np.testing.assert_allclose(w[UNJUDGED], [0.2547, 0.0, 0.2547, 0.0, 0.2547], atol=5e-5)
    assert w[D4] == 0.0
    # d3, d5, d8 tie: the largest Var[R] wins
    assert pick(w, toy_collection, var)[0] == D5
    np.testing.assert_array_equal(pick(w, toy_collection, var, n=5), [D5, D8, 2, 6, D4])


def test_confident_pairs_leave_the_weights(toy_collection) -> None:
    coef = entry_coefficients(toy_collection, "cg")
    conf = confidence_matrix("t")
    np.testing.assert_array_equal(confidence_weights(toy_collection, coef, conf, 0.5), 0.0)
    everything = confidence_weights(toy_collection, coef, conf, 1.01)
    below = confidence_weights(toy_collection, coef, conf, 0.95)
    np.testing.assert_allclose(everything, below)  # no t-based pair reaches 0.95


# ---------------------------------------------------------------------- absolute (4.3)


def test_toy_absolute_weights(toy_collection, toy_estimates) -> None:
    mean, var, _ = toy_estimates
    ev = evaluate(toy_collection, mean, var, "cg", BROAD)
    w = absolute_weights(toy_collection, ev.var)
    np.testing.assert_allclose(
        w[UNJUDGED], [0.014702, 0.015135, 0.009144, 0.005558, 0.005991], atol=1.5e-6
    )
    assert pick(w, toy_collection, var)[0] == D4


# ---------------------------------------------------------------------- brute force


def brute_force(collection, measure, pair_confidence, confident):
    coef = np.zeros((collection.n_systems, collection.n_pairs))
    coef[collection.entry_system, collection.entry_pair] = rank_discount(
        measure, collection.entry_rank
    )
    static = np.zeros(collection.n_pairs)
    weighted = np.zeros(collection.n_pairs)
    for a, b in itertools.combinations(range(collection.n_systems), 2):
        static += np.abs(coef[a] - coef[b])
        if pair_confidence[a, b] < confident:
            weighted += (1 - pair_confidence[a, b]) * (coef[a] - coef[b]) ** 2
    return static, weighted


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("seed", range(4))
def test_weights_match_a_double_loop_over_system_pairs(make_collection, measure, seed) -> None:
    collection = make_collection(seed, n_systems=6, n_queries=3, n_docs=8, short=seed % 2 == 1)
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, size=(6, 6))
    conf = np.triu(conf, 1) + np.triu(conf, 1).T + np.eye(6)
    static, weighted = brute_force(collection, measure, conf, 0.8)
    coef = entry_coefficients(collection, measure)
    np.testing.assert_allclose(static_weights(collection, coef), static, atol=1e-12)
    np.testing.assert_allclose(
        confidence_weights(collection, coef, conf, 0.8), weighted, atol=1e-12
    )
    system_var = rng.uniform(0, 0.01, size=6)
    ranks = collection.rank_matrix()
    np.testing.assert_allclose(
        absolute_weights(collection, system_var), system_var @ (ranks > 0), atol=1e-15
    )


def test_co_retrieval_enumerates_every_pair_of_retrieving_systems(make_collection) -> None:
    collection = make_collection(9, n_systems=6, n_queries=3, n_docs=8)
    co = CoRetrieval.build(collection, entry_coefficients(collection, "cg"))
    n = collection.n_retrieving
    assert co.pair.shape[0] == int((n * (n - 1) // 2).sum())
    assert np.all(co.system_a < co.system_b)
    ranks = collection.rank_matrix()
    assert np.all(ranks[co.system_a, co.pair] > 0)
    assert np.all(ranks[co.system_b, co.pair] > 0)


def test_weight_validation(toy_collection) -> None:
    coef = entry_coefficients(toy_collection, "cg")
    with pytest.raises(
        ValueError, match=r"pair_confidence must have shape \(3, 3\), found \(2, 2\)"
    ):
        confidence_weights(toy_collection, coef, np.eye(2), 0.95)
    with pytest.raises(ValueError, match=r"system_var must have shape \(3,\), found \(4,\)"):
        absolute_weights(toy_collection, np.zeros(4))


# ---------------------------------------------------------------------- batches


def batch_args(weights, available=None):
    weights = np.asarray(weights, dtype=float)
    n = weights.shape[0]
    return {
        "weights": weights,
        "available": np.ones(n, dtype=bool) if available is None else available,
        "var": np.zeros(n),
        "mean_rank": np.ones(n),
        "pair_query": np.array([0, 0, 0, 1, 1, 1])[:n],
    }


def test_a_batch_stays_on_the_query_of_the_best_pair() -> None:
    args = batch_args([10, 6, 5, 9, 8, 7])
    # q0 holds the best pair; its others stay within half the best remaining weight
    np.testing.assert_array_equal(best_pairs(**args, n=3), [0, 1, 2])
    # locality 1: purely greedy
    np.testing.assert_array_equal(best_pairs(**args, n=3, locality=1.0), [0, 3, 4])
    # locality 0: the whole query first, then the best of the rest
    np.testing.assert_array_equal(best_pairs(**args, n=5, locality=0.0), [0, 1, 2, 3, 4])


def test_a_batch_leaves_the_query_when_its_pairs_are_worth_too_little() -> None:
    args = batch_args([10, 3, 2, 9, 8, 7])
    np.testing.assert_array_equal(best_pairs(**args, n=3), [0, 3, 4])


def test_prefer_query_is_honoured_within_the_locality() -> None:
    args = batch_args([10, 6, 5, 9, 8, 7])
    np.testing.assert_array_equal(best_pairs(**args, n=1, prefer_query=1), [3])
    np.testing.assert_array_equal(best_pairs(**args, n=3, prefer_query=1), [3, 4, 5])
    # 9 < 0.95 * 10: the assessor is moved to the best query
    np.testing.assert_array_equal(best_pairs(**args, n=1, prefer_query=1, locality=0.95), [0])
    # a query with nothing available is ignored
    available = np.array([True, True, True, False, False, False])
    np.testing.assert_array_equal(
        best_pairs(**batch_args([10, 6, 5, 9, 8, 7], available), n=1, prefer_query=1), [0]
    )


@pytest.mark.parametrize("seed", range(10))
def test_batches_never_return_unavailable_pairs(seed) -> None:
    rng = np.random.default_rng(seed)
    n_pairs = 30
    available = rng.random(n_pairs) < 0.5
    weights = rng.integers(0, 4, size=n_pairs).astype(float)  # many ties
    n = int(rng.integers(1, 20))
    chosen = best_pairs(
        weights,
        available,
        rng.random(n_pairs),
        rng.random(n_pairs) * 5,
        np.sort(rng.integers(0, 4, size=n_pairs)),
        n,
        locality=float(rng.random()),
        prefer_query=int(rng.integers(0, 4)) if seed % 2 else None,
    )
    assert chosen.shape == (min(n, int(available.sum())),)
    assert available[chosen].all()
    assert np.unique(chosen).shape == chosen.shape


def test_no_available_pair_gives_an_empty_batch() -> None:
    args = batch_args([1, 2, 3], np.zeros(3, dtype=bool))
    assert best_pairs(**args, n=4).shape == (0,)


def test_ties_break_on_variance_then_mean_rank_then_index() -> None:
    weights = np.ones(4)
    available = np.ones(4, dtype=bool)
    query = np.zeros(4, dtype=np.intp)
    var = np.array([0.1, 0.3, 0.3, 0.3])
    mean_rank = np.array([1.0, 3.0, 2.0, 2.0])
    np.testing.assert_array_equal(
        best_pairs(weights, available, var, mean_rank, query, 4), [2, 3, 1, 0]
    )
    # weights equal up to rounding are ties too
    wobbly = weights + np.array([0, 1e-13, 0, 0])
    assert best_pairs(wobbly, available, var, mean_rank, query, 1)[0] == 2


def test_best_pairs_validation() -> None:
    args = batch_args([1, 2, 3])
    with pytest.raises(ValueError, match=r"n must be at least 1, found 0"):
        best_pairs(**args, n=0)
    for locality in (-0.1, 1.5):
        with pytest.raises(ValueError, match=r"locality must be in \[0, 1\]"):
            best_pairs(**args, locality=locality)
