"""Probabilistic effectiveness measures and confidence (docs/method.md §3)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mtcjudge.mtc.collection import build_collection
from mtcjudge.mtc.measures import (
    MEASURES,
    Evaluation,
    confidence_from_moments,
    evaluate,
    ideal_moments,
    measure_normaliser,
    query_scores,
    rank_discount,
    t_quantile,
)
from mtcjudge.mtc.scales import BROAD, FINE

# docs/method.md §3.3: (E, Var) of systems A, B, C
ABSOLUTE = {
    "cg": [(0.553737, 0.009144), (0.418930, 0.005558), (0.619817, 0.005991)],
    "dcg": [(0.625412, 0.004425), (0.470096, 0.002921), (0.628247, 0.008533)],
    "ndcg": [(0.786443, 0.015367), (0.591136, 0.009348), (0.790007, 0.021939)],
    "rbp": [(0.757421, 0.016457), (0.604620, 0.011055), (0.768521, 0.020505)],
}
# (E, Var) of A-B, A-C, B-C
DIFFERENCES = {
    "cg": [(0.134807, 0.013850), (-0.066080, 0.008023), (-0.200887, 0.011549)],
    "dcg": [(0.155317, 0.006872), (-0.002834, 0.009550), (-0.158151, 0.011454)],
    "ndcg": [(0.195308, 0.011382), (-0.003564, 0.015101), (-0.198872, 0.018646)],
    "rbp": [(0.152801, 0.011657), (-0.011100, 0.012509), (-0.163900, 0.016279)],
}
PAIRS = ([0, 0, 1], [1, 2, 2])  # A-B, A-C, B-C

# docs/method.md §3.4: per-query differences A-B, A-C, B-C over three queries; q1 is the CG
# column of 3.3, q2 and q3 are given
PER_QUERY_MEAN = np.array([[0.134807, 0.10, 0.06], [-0.066080, 0.02, -0.04],
                           [-0.200887, -0.08, -0.10]])  # fmt: skip
PER_QUERY_VAR = np.array([[0.013850, 0.0040, 0.0020], [0.008023, 0.0030, 0.0060],
                          [0.011549, 0.0050, 0.0040]])  # fmt: skip
AVERAGED_MEAN = PER_QUERY_MEAN.mean(axis=1)  # (8.17)
AVERAGED_VAR = PER_QUERY_VAR.sum(axis=1) / 9  # (8.18)


def dense_coefficients(collection, measure: str) -> np.ndarray:
    """``c_A(d; m)`` as a dense (n_systems, n_pairs) matrix."""
    coef = np.zeros((collection.n_systems, collection.n_pairs))
    coef[collection.entry_system, collection.entry_pair] = rank_discount(
        measure, collection.entry_rank
    )
    return coef


# ---------------------------------------------------------------------- toy (3.3)


@pytest.mark.parametrize("measure", MEASURES)
def test_toy_absolute_scores_by_evaluate(toy_collection, toy_estimates, measure) -> None:
    mean, var, _ = toy_estimates
    ev = evaluate(toy_collection, mean, var, measure, BROAD)
    expected = np.array(ABSOLUTE[measure])
    np.testing.assert_allclose(ev.mean, expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(ev.var, expected[:, 1], atol=1e-6)


@pytest.mark.parametrize("measure", MEASURES)
def test_toy_absolute_scores_by_query_scores(toy_collection, toy_estimates, measure) -> None:
    mean, var, _ = toy_estimates
    score_mean, score_var, _, _ = query_scores(toy_collection, measure, BROAD, mean, var)
    assert score_mean.shape == (3, 1)
    expected = np.array(ABSOLUTE[measure])
    np.testing.assert_allclose(score_mean[:, 0], expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(score_var[:, 0], expected[:, 1], atol=1e-6)


@pytest.mark.parametrize("measure", MEASURES)
def test_toy_differences(toy_collection, toy_estimates, measure) -> None:
    mean, var, _ = toy_estimates
    expected = np.array(DIFFERENCES[measure])
    ev = evaluate(toy_collection, mean, var, measure, BROAD)
    np.testing.assert_allclose(ev.diff_mean[PAIRS], expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(ev.diff_var[PAIRS], expected[:, 1], atol=1e-6)
    _, _, diff_mean, diff_var = query_scores(toy_collection, measure, BROAD, mean, var)
    np.testing.assert_allclose(diff_mean[(*PAIRS, 0)], expected[:, 0], atol=1e-6)
    np.testing.assert_allclose(diff_var[(*PAIRS, 0)], expected[:, 1], atol=1e-6)
    # antisymmetric means, symmetric variances
    np.testing.assert_allclose(ev.diff_mean, -ev.diff_mean.T)
    np.testing.assert_allclose(ev.diff_var, ev.diff_var.T)


def test_toy_cg_difference_removes_the_double_counted_variance(
    toy_collection, toy_estimates
) -> None:
    mean, var, _ = toy_estimates
    ev = evaluate(toy_collection, mean, var, "cg", BROAD)
    naive = ev.var[0] + ev.var[1]
    assert naive == pytest.approx(0.014703, abs=1e-6)
    assert ev.diff_var[0, 1] == pytest.approx(0.013850, abs=1e-6)
    # the excess is d3, shared by A and B, counted twice
    assert naive - ev.diff_var[0, 1] == pytest.approx(2 * var[2] / 100)


def test_toy_ideal_denominators(toy_estimates) -> None:
    mean, var, _ = toy_estimates
    np.testing.assert_array_equal(np.argsort(-mean, kind="stable")[:5], [0, 3, 7, 6, 1])
    ey, vy = ideal_moments(mean, var, 5, rank_discount("ndcg", np.arange(1, 6)))
    assert (ey, vy) == pytest.approx((4.689474, 0.297619), abs=1e-6)
    ey, vy = ideal_moments(mean, var, 5, rank_discount("rbp", np.arange(1, 6)))
    assert (ey, vy) == pytest.approx((5.299801, 0.461854), abs=1e-6)


def test_ideal_of_a_pool_smaller_than_k_uses_what_exists() -> None:
    ey, vy = ideal_moments(np.array([1.0, 2.0]), np.array([0.5, 0.25]), 5, np.ones(5))
    assert (ey, vy) == (3.0, 0.75)


def test_toy_ranking_and_intervals(toy_collection, toy_estimates) -> None:
    mean, var, _ = toy_estimates
    ev = evaluate(toy_collection, mean, var, "cg", BROAD, ci_level=0.95)
    assert ev.n_systems == 3
    np.testing.assert_array_equal(ev.ranking(), [2, 0, 1])
    half = 1.959964 * np.sqrt(ev.var)  # one query: the normal (A15)
    np.testing.assert_allclose(ev.ci_high - ev.mean, half, rtol=1e-6)
    np.testing.assert_allclose(ev.mean - ev.ci_low, half, rtol=1e-6)


def test_normalisers() -> None:
    assert measure_normaliser("cg", 5, BROAD) == 10.0
    assert measure_normaliser("cg", 5, FINE) == 500.0
    assert measure_normaliser("dcg", 5, BROAD) == pytest.approx(5.896918, abs=1e-6)
    assert measure_normaliser("dcg", 5, FINE) == pytest.approx(294.8459, abs=1e-4)
    assert np.isnan(measure_normaliser("ndcg", 5, BROAD))
    assert np.isnan(measure_normaliser("rbp", 5, BROAD))
    with pytest.raises(ValueError, match=r"unknown measure 'map': expected one of"):
        measure_normaliser("map", 5, BROAD)


def test_toy_dcg_deltas_of_a_minus_b(toy_collection) -> None:
    coef = dense_coefficients(toy_collection, "dcg")
    delta = coef[0] - coef[1]
    np.testing.assert_allclose(
        delta[[0, 1, 2, 3, 4, 5, 6, 7]],
        [0.369070, -0.369070, 0.113147, 0.430677, 0.386853, -0.5, -0.430677, 0.0],
        atol=1e-6,
    )


# ---------------------------------------------------------------------- confidence (3.4)


def test_confidence_example_with_student_t() -> None:
    conf = confidence_from_moments(AVERAGED_MEAN, AVERAGED_VAR, 3)
    np.testing.assert_allclose(conf, [0.9143, 0.7114, 0.9414], atol=5e-5)
    assert conf.mean() == pytest.approx(0.8557, abs=5e-5)


def test_confidence_example_with_the_normal() -> None:
    conf = confidence_from_moments(AVERAGED_MEAN, AVERAGED_VAR, 3, "normal")
    np.testing.assert_allclose(conf, [0.9818, 0.7453, 0.9961], atol=5e-5)
    assert conf.mean() == pytest.approx(0.9077, abs=5e-5)


def test_confidence_example_moments_and_intervals() -> None:
    np.testing.assert_allclose(AVERAGED_MEAN, [0.098269, -0.028693, -0.126962], atol=1e-6)
    np.testing.assert_allclose(AVERAGED_VAR, [0.002206, 0.001891, 0.002283], atol=1e-6)
    z = AVERAGED_MEAN / np.sqrt(AVERAGED_VAR)
    np.testing.assert_allclose(z, [2.0925, -0.6598, -2.6571], atol=5e-4)
    half = t_quantile(0.95, 3) * np.sqrt(AVERAGED_VAR)
    np.testing.assert_allclose(AVERAGED_MEAN - half, [-0.1038, -0.2158, -0.3326], atol=1e-4)
    np.testing.assert_allclose(AVERAGED_MEAN + half, [0.3003, 0.1584, 0.0786], atol=1e-4)


def test_t_quantiles() -> None:
    assert t_quantile(0.95, 100) == pytest.approx(1.984217, abs=1e-6)
    assert t_quantile(0.95, 100, "normal") == pytest.approx(1.959964, abs=1e-6)
    assert t_quantile(0.95, 1) == pytest.approx(1.959964, abs=1e-6)  # n_Q < 2: normal


def test_degenerate_confidences() -> None:
    # zero variance: known exactly, ties included
    np.testing.assert_array_equal(confidence_from_moments([0.0, 0.3], [0.0, 0.0], 10), [1, 1])
    # zero mean with uncertainty: a coin flip
    assert confidence_from_moments([0.0], [0.1], 10)[0] == pytest.approx(0.5)
    # one query: the normal is used whatever the distribution
    np.testing.assert_allclose(
        confidence_from_moments([0.1], [0.01], 1, "t"),
        confidence_from_moments([0.1], [0.01], 1, "normal"),
    )
    # the sign of the difference does not matter
    np.testing.assert_allclose(
        confidence_from_moments([0.1], [0.01], 5), confidence_from_moments([-0.1], [0.01], 5)
    )


def test_confidence_validation() -> None:
    with pytest.raises(ValueError, match=r"distribution must be 't' or 'normal', found 'z'"):
        confidence_from_moments([0.1], [0.01], 5, "z")


@settings(max_examples=60, deadline=None)
@given(
    mean=arrays(np.float64, 6, elements=st.floats(-1e3, 1e3)),
    var=arrays(np.float64, 6, elements=st.floats(0, 1e3)),
    n_queries=st.integers(1, 200),
    distribution=st.sampled_from(["t", "normal"]),
)
def test_confidence_is_always_between_one_half_and_one(mean, var, n_queries, distribution) -> None:
    conf = confidence_from_moments(mean, var, n_queries, distribution)
    assert np.all(conf >= 0.5)
    assert np.all(conf <= 1.0)


# ---------------------------------------------------------------------- averaging and invariants


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_evaluate_averages_the_query_scores(make_collection, make_moments, measure, seed) -> None:
    collection = make_collection(seed, n_systems=5, n_queries=4, short=seed == 2)
    mean, var = make_moments(collection, seed)
    ev = evaluate(collection, mean, var, measure, BROAD)
    sm, sv, dm, dv = query_scores(collection, measure, BROAD, mean, var)
    nq = collection.n_queries
    np.testing.assert_allclose(ev.mean, sm.mean(axis=1), atol=1e-12)
    np.testing.assert_allclose(ev.var, sv.sum(axis=1) / nq**2, atol=1e-12)
    np.testing.assert_allclose(ev.diff_mean, dm.mean(axis=2), atol=1e-12)
    np.testing.assert_allclose(ev.diff_var, dv.sum(axis=2) / nq**2, atol=1e-12)
    expected = confidence_from_moments(ev.diff_mean, ev.diff_var, nq)
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(ev.pair_confidence, expected)
    iu = np.triu_indices(collection.n_systems, 1)
    assert ev.ranking_confidence == pytest.approx(expected[iu].mean())


def shared_rank_runs(seed: int, rank: int) -> np.ndarray:
    """Three systems, one query; A and B both retrieve A's document at ``rank``."""
    rng = np.random.default_rng(seed)
    a = rng.choice(12, size=5, replace=False)
    others = rng.choice(np.setdiff1d(np.arange(12), [a[rank]]), size=4, replace=False)
    b = np.insert(others, rank, a[rank])
    c = rng.choice(12, size=5, replace=False)
    return np.array([[a], [b], [c]])


@pytest.mark.parametrize("seed", range(4))
def test_a_document_at_the_same_rank_never_changes_the_difference(seed, make_moments) -> None:
    rank = seed % 5
    runs = shared_rank_runs(seed, rank)
    collection = build_collection(runs, k=5)
    shared = collection.find_pair(0, int(runs[0, 0, rank]))
    mean, var = make_moments(collection, seed, judged_fraction=0.0)
    moved_mean, moved_var = mean.copy(), var.copy()
    moved_mean[shared] = 2.0 - mean[shared]
    moved_var[shared] = 0.9
    for measure in MEASURES:
        before = query_scores(collection, measure, BROAD, mean, var)
        after = query_scores(collection, measure, BROAD, moved_mean, moved_var)
        if measure in ("cg", "dcg"):
            assert after[2][0, 1, 0] == pytest.approx(before[2][0, 1, 0], abs=1e-12)
            assert after[3][0, 1, 0] == pytest.approx(before[3][0, 1, 0], abs=1e-12)
        else:  # only the ideal denominator may move: the numerator E[X_A - X_B] does not
            disc = rank_discount(measure, np.arange(1, 6))
            ey_before = ideal_moments(mean, var, 5, disc)[0]
            ey_after = ideal_moments(moved_mean, moved_var, 5, disc)[0]
            assert after[2][0, 1, 0] * ey_after == pytest.approx(
                before[2][0, 1, 0] * ey_before, abs=1e-12
            )


def test_cg_ignores_documents_both_systems_retrieve_at_any_rank(make_moments) -> None:
    collection = build_collection([[[0, 1, 2, 3, 4]], [[4, 3, 5, 6, 7]]], k=5)
    mean, var = make_moments(collection, 0, judged_fraction=0.0)
    moved_mean, moved_var = mean.copy(), var.copy()
    for doc in (3, 4):
        moved_mean[doc] = 0.0
        moved_var[doc] = 2.0
    before = evaluate(collection, mean, var, "cg", BROAD)
    after = evaluate(collection, moved_mean, moved_var, "cg", BROAD)
    assert after.diff_mean[0, 1] == pytest.approx(before.diff_mean[0, 1], abs=1e-12)
    assert after.diff_var[0, 1] == pytest.approx(before.diff_var[0, 1], abs=1e-12)
    assert after.var[0] != pytest.approx(before.var[0])


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_complete_judgments_leave_no_uncertainty(make_collection, measure, seed) -> None:
    collection = make_collection(seed, n_systems=5, n_queries=4, short=seed == 1)
    truth = np.random.default_rng(seed).integers(0, 3, collection.n_pairs).astype(float)
    ev = evaluate(collection, truth, np.zeros(collection.n_pairs), measure, BROAD)
    np.testing.assert_array_equal(ev.var, 0.0)
    np.testing.assert_array_equal(ev.diff_var, 0.0)
    np.testing.assert_array_equal(ev.pair_confidence, 1.0)
    assert ev.ranking_confidence == 1.0
    np.testing.assert_array_equal(ev.ci_low, ev.mean)


def test_judged_pairs_contribute_no_variance(make_collection, make_moments) -> None:
    collection = make_collection(5, n_systems=5, n_queries=4)
    mean, var = make_moments(collection, 5, judged_fraction=0.5)
    judged = var == 0
    bumped = mean.copy()
    bumped[judged] = np.where(mean[judged] < 1, 2.0, 0.0)  # other judgments, still exact
    for measure in ("cg", "dcg"):
        ev = evaluate(collection, mean, var, measure, BROAD)
        ev2 = evaluate(collection, bumped, var, measure, BROAD)
        np.testing.assert_allclose(ev2.var, ev.var, atol=1e-15)
        np.testing.assert_allclose(ev2.diff_var, ev.diff_var, atol=1e-15)


def test_all_judged_zero_defines_ratio_scores_as_zero() -> None:
    collection = build_collection([[[0, 1]], [[1, 2]]], k=2)
    for measure in ("ndcg", "rbp"):
        ev = evaluate(collection, np.zeros(3), np.zeros(3), measure, BROAD)
        np.testing.assert_array_equal(ev.mean, 0.0)
        np.testing.assert_array_equal(ev.var, 0.0)
        np.testing.assert_array_equal(ev.pair_confidence, 1.0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    measure=st.sampled_from(MEASURES),
    distribution=st.sampled_from(["t", "normal"]),
)
def test_confidences_of_random_collections_are_in_range(
    make_collection, make_moments, seed, measure, distribution
) -> None:
    collection = make_collection(seed, n_systems=4, n_queries=3, short=seed % 2 == 0)
    mean, var = make_moments(collection, seed)
    ev = evaluate(collection, mean, var, measure, BROAD, distribution=distribution)
    assert np.all((ev.pair_confidence >= 0.5) & (ev.pair_confidence <= 1.0))
    assert 0.5 <= ev.ranking_confidence <= 1.0
    assert np.all(ev.diff_var >= 0)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    permutation=st.permutations(range(5)),
    measure=st.sampled_from(MEASURES),
)
def test_relabelling_systems_permutes_the_results(
    make_runs, make_moments, seed, permutation, measure
) -> None:
    runs = make_runs(seed, n_systems=5, n_queries=3, n_docs=9)
    perm = np.array(permutation)
    collection = build_collection(runs, k=5)
    relabelled = build_collection(runs[perm], k=5)
    np.testing.assert_array_equal(relabelled.pair_doc, collection.pair_doc)
    mean, var = make_moments(collection, seed)
    ev = evaluate(collection, mean, var, measure, BROAD)
    ev2 = evaluate(relabelled, mean, var, measure, BROAD)
    np.testing.assert_allclose(ev2.mean, ev.mean[perm], atol=1e-12)
    np.testing.assert_allclose(ev2.var, ev.var[perm], atol=1e-12)
    np.testing.assert_allclose(ev2.diff_mean, ev.diff_mean[np.ix_(perm, perm)], atol=1e-12)
    np.testing.assert_allclose(ev2.diff_var, ev.diff_var[np.ix_(perm, perm)], atol=1e-12)
    np.testing.assert_allclose(
        ev2.pair_confidence, ev.pair_confidence[np.ix_(perm, perm)], atol=1e-12
    )
    assert ev2.ranking_confidence == pytest.approx(ev.ranking_confidence, abs=1e-12)


# ---------------------------------------------------------------------- Monte Carlo reference


def sample_relevance(pmf: np.ndarray, n_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Independent draws of every pair's relevance, shape (n_samples, n_pairs)."""
    cumulative = np.cumsum(pmf, axis=1)[:, :-1]
    u = rng.random((n_samples, pmf.shape[0]))
    return (u[:, :, None] > cumulative[None, :, :]).sum(axis=2).astype(np.float64)


@pytest.mark.parametrize("seed", [3, 4])
def test_difference_moments_match_monte_carlo(make_collection, seed) -> None:
    collection = make_collection(seed, n_systems=4, n_queries=3, n_docs=9, short=seed == 4)
    rng = np.random.default_rng(seed)
    pmf = rng.dirichlet(np.ones(3), size=collection.n_pairs)
    judged = rng.random(collection.n_pairs) < 0.3
    pmf[judged] = np.eye(3)[rng.integers(0, 3, size=int(judged.sum()))]
    levels = np.arange(3.0)
    mean = pmf @ levels
    var = np.maximum(pmf @ levels**2 - mean**2, 0.0)
    n_samples = 40_000
    relevance = sample_relevance(pmf, n_samples, rng)
    nq, k = collection.n_queries, collection.k
    for measure in MEASURES:
        coef = dense_coefficients(collection, measure)
        ev = evaluate(collection, mean, var, measure, BROAD)
        per_query = np.empty((n_samples, collection.n_systems, nq))
        for q in range(nq):
            sl = collection.pairs_of_query(q)
            x = relevance[:, sl] @ coef[:, sl].T
            if measure in ("cg", "dcg"):
                per_query[:, :, q] = x / measure_normaliser(measure, k, BROAD)
            else:  # the ideal list is fixed by E[R] (A14)
                ideal = np.argsort(-mean[sl], kind="stable")[:k]
                disc = rank_discount(measure, np.arange(1, ideal.shape[0] + 1))
                y = relevance[:, sl][:, ideal] @ disc
                safe = np.where(y > 0, y, 1.0)
                per_query[:, :, q] = np.where(y[:, None] > 0, x / safe[:, None], 0.0)
        average = per_query.mean(axis=2)
        for a, b in zip(*np.triu_indices(collection.n_systems, 1), strict=True):
            d = average[:, a] - average[:, b]
            m, s2 = d.mean(), d.var(ddof=1)
            if measure in ("cg", "dcg"):  # exact moments: agree within 5 standard errors
                se_mean = np.sqrt(s2 / n_samples)
                se_var = np.sqrt(max(np.mean((d - m) ** 4) - s2**2, 0.0) / n_samples)
                assert abs(m - ev.diff_mean[a, b]) <= 5 * se_mean + 1e-12
                assert abs(s2 - ev.diff_var[a, b]) <= 5 * se_var + 1e-12
            else:  # delta method: a first-order approximation of the mean
                assert m == pytest.approx(ev.diff_mean[a, b], abs=0.05)


# ---------------------------------------------------------------------- ranx cross-check


# slow: ranx compiles its measures with numba on first use (over two minutes in a new venv);
# it comes with the `crosscheck` extra
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::Warning")
def test_dcg_matches_ranx_jarvelin_dcg_and_ag_matches_a_hand_count(make_collection) -> None:
    ranx = pytest.importorskip("ranx")
    qrels_of = ranx.Qrels
    run_of = ranx.Run
    # ranx "dcg" is Järvelin's: linear gain, discount log2(i + 1) ("dcg_burges" is 2^l - 1)
    one = ranx.evaluate(
        qrels_of({"q": {"a": 2, "b": 1, "c": 0}}),
        run_of({"q": {"a": 3.0, "c": 2.0, "b": 1.0}}),
        "dcg@5",
    )
    assert one == pytest.approx(2 + 0 + 1 / np.log2(4))

    collection = make_collection(11, n_systems=4, n_queries=3, n_docs=10)
    truth = np.random.default_rng(11).integers(0, 3, collection.n_pairs).astype(float)
    zeros = np.zeros(collection.n_pairs)
    qrels = {}
    for q in range(collection.n_queries):
        sl = collection.pairs_of_query(q)
        qrels[f"q{q}"] = {
            f"d{collection.pair_doc[p]}": int(truth[p]) for p in range(sl.start, sl.stop)
        }
    qrels = qrels_of(qrels)
    dcg, _, _, _ = query_scores(collection, "dcg", BROAD, truth, zeros)
    cg, _, _, _ = query_scores(collection, "cg", BROAD, truth, zeros)
    eta = measure_normaliser("dcg", collection.k, BROAD)
    ranks = collection.rank_matrix()
    for system in range(collection.n_systems):
        lists = {}
        for q in range(collection.n_queries):
            sl = collection.pairs_of_query(q)
            retrieved = np.flatnonzero(ranks[system, sl]) + sl.start
            lists[f"q{q}"] = {
                f"d{collection.pair_doc[p]}": float(collection.k + 1 - ranks[system, p])
                for p in retrieved
            }
        run = run_of(lists)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ranx.evaluate(qrels, run, "dcg@5", return_mean=False)
        ranx_dcg = [run.scores["dcg@5"][f"q{q}"] for q in range(collection.n_queries)]
        np.testing.assert_allclose(dcg[system] * eta, ranx_dcg, atol=1e-12)
        # AG@5: mean gain of the top 5, i.e. CG_l@5 * lmax
        for q in range(collection.n_queries):
            sl = collection.pairs_of_query(q)
            gains = truth[sl][ranks[system, sl] > 0]
            assert cg[system, q] * BROAD.lmax == pytest.approx(gains.sum() / collection.k)
            assert cg[system, q] * BROAD.lmax == pytest.approx(gains.mean())


# ---------------------------------------------------------------------- validation


def test_evaluate_and_query_scores_validation(toy_collection, toy_estimates) -> None:
    mean, var, _ = toy_estimates
    for fn in (
        lambda m, v, measure="cg": evaluate(toy_collection, m, v, measure, BROAD),
        lambda m, v, measure="cg": query_scores(toy_collection, measure, BROAD, m, v),
    ):
        with pytest.raises(ValueError, match=r"unknown measure 'p10'"):
            fn(mean, var, "p10")
        with pytest.raises(ValueError, match=r"must have shape \(8,\) .* found \(7,\) and \(8,\)"):
            fn(mean[:7], var)
        with pytest.raises(ValueError, match=r"var non-negative"):
            fn(mean, np.where(var > 0, -var, 0.0))
        with pytest.raises(ValueError, match=r"must be finite"):
            fn(np.where(var > 0, np.nan, mean), var)
    for level in (0.0, 1.0):
        with pytest.raises(ValueError, match=r"ci_level must be in \(0, 1\)"):
            evaluate(toy_collection, mean, var, "cg", BROAD, ci_level=level)
    with pytest.raises(ValueError, match=r"distribution must be 't' or 'normal'"):
        evaluate(toy_collection, mean, var, "cg", BROAD, distribution="cauchy")


def test_rank_discounts() -> None:
    ranks = np.arange(1, 6)
    np.testing.assert_array_equal(rank_discount("cg", ranks), 1.0)
    np.testing.assert_allclose(rank_discount("dcg", ranks), 1 / np.log2(ranks + 1))
    np.testing.assert_allclose(rank_discount("rbp", ranks, 0.5), 0.5 ** (ranks - 1))
    with pytest.raises(ValueError, match=r"unknown measure"):
        rank_discount("err", ranks)


# ---------------------------------------------------------------------- ties (§3.5)


def _hand_evaluation(mean: list[float], known: list[tuple[int, int]]) -> Evaluation:
    """Every pair uncertain (variance 0.01) except the ``known`` ones (variance 0)."""
    m = np.asarray(mean)
    n = m.shape[0]
    diff_var = np.full((n, n), 0.01)
    for a, b in known:
        diff_var[a, b] = diff_var[b, a] = 0.0
    np.fill_diagonal(diff_var, 0.0)
    diff_mean = m[:, None] - m[None, :]
    conf = confidence_from_moments(diff_mean, diff_var, 10)
    np.fill_diagonal(conf, 1.0)
    return Evaluation(m, np.zeros(n), m, m, diff_mean, diff_var, conf, float(conf.mean()))


def test_tied_systems_share_their_rank_and_the_next_rank_skips() -> None:
    # 0 and 2 tied (known equal), 1 and 4 tied, 3 last
    ev = _hand_evaluation([0.5, 0.7, 0.5, 0.3, 0.7], [(0, 2), (1, 4)])
    assert ev.tied[0, 2]
    assert ev.tied[2, 0]
    assert ev.tied[1, 4]
    assert not ev.tied[0, 1]
    assert not np.diag(ev.tied).any()
    np.testing.assert_array_equal(ev.ranks(), [3, 1, 3, 5, 1])
    np.testing.assert_array_equal(ev.ranking(), [1, 4, 0, 2, 3])
    np.testing.assert_array_equal(ev.tied_systems, [True, True, True, False, True])
    # the confidence of a tie is that of the tie: known
    assert ev.pair_confidence[0, 2] == 1.0


def test_equal_means_with_uncertainty_are_no_tie() -> None:
    """The same expected score with a difference still uncertain: a coin toss (0.5), each its
    own rank, since nothing says they are equal."""
    ev = _hand_evaluation([0.5, 0.5, 0.2], [])
    assert not ev.tied.any()
    np.testing.assert_array_equal(ev.ranks(), [1, 2, 3])
    assert ev.pair_confidence[0, 1] == 0.5
    # a difference known exactly but not 0 is an order, not a tie
    ev = _hand_evaluation([0.5, 0.4, 0.2], [(0, 1)])
    assert not ev.tied.any()
    assert ev.pair_confidence[0, 1] == 1.0
    np.testing.assert_array_equal(ev.ranks(), [1, 2, 3])


def test_a_chain_of_ties_is_one_group() -> None:
    ev = _hand_evaluation([0.4, 0.4, 0.4, 0.9], [(0, 1), (1, 2), (0, 2)])
    np.testing.assert_array_equal(ev.ranks(), [2, 2, 2, 1])
    np.testing.assert_array_equal(ev.ranking(), [3, 0, 1, 2])


@pytest.mark.parametrize("measure", MEASURES)
def test_identical_runs_are_tied_at_every_state_of_the_judgments(
    make_collection, make_moments, measure
) -> None:
    """A system whose run repeats another's: the difference is 0 in every realisation, so
    the pair is tied (not a confident order) and the two share a rank."""
    c = make_collection(4, n_systems=4, n_queries=3)
    twin = build_collection(np.concatenate([_runs_of(c), _runs_of(c)[:1]]), k=c.k)  # 4 is 0
    np.testing.assert_array_equal(twin.run_class, [0, 1, 2, 3, 0])
    for judged_fraction in (0.0, 0.5, 1.0):
        mean, var = make_moments(twin, 7, judged_fraction)
        ev = evaluate(twin, mean, var, measure, BROAD)
        assert ev.tied[0, 4]
        assert ev.ranks()[0] == ev.ranks()[4]
        assert ev.diff_mean[0, 4] == 0.0


def _runs_of(c) -> np.ndarray:
    """The (systems x queries x k) documents of a collection's lists, -1 past their end."""
    runs = np.full((c.n_systems, c.n_queries, c.k), -1, dtype=np.intp)
    runs[c.entry_system, c.pair_query[c.entry_pair], c.entry_rank - 1] = c.pair_doc[c.entry_pair]
    return runs
