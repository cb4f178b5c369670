"""The engine's [U12] bounds and rules for every pair, and the complete-judgment MIREX matrix."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.ingest.loader import load_synthetic
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.measures import evaluate, per_query_scores
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.significance import Outcome, agk_bounds
from mtcjudge.mtc.synthetic import generate


@pytest.fixture(scope="module")
def loaded():
    return load_synthetic(generate(5, 8, 5, n_genres=4, docs_per_genre=50, n_artists=30, seed=4))


def engine_with(loaded, n_judged: int, seed: int = 0) -> MTCEngine:
    c = loaded.collection
    engine = MTCEngine(c, RelevanceModel(c, FINE, "ordinal", loaded.metadata), EngineConfig())
    pairs = np.random.default_rng(seed).choice(c.n_pairs, n_judged, replace=False)
    if n_judged:
        engine.judge(pairs, loaded.judged_values[pairs])
    return engine


@pytest.mark.parametrize("tight", [False, True])
@pytest.mark.parametrize("n_judged", [0, 25, 60])
def test_engine_bounds_equal_the_per_pair_definition(loaded, tight, n_judged) -> None:
    engine = engine_with(loaded, n_judged)
    c = loaded.collection
    upper, lower = engine.agk_bounds(tight=tight)
    retrieved = c.rank_matrix() > 0
    a, b = np.triu_indices(c.n_systems, 1)
    for i in range(a.shape[0]):
        ref = agk_bounds(
            retrieved[a[i]],
            retrieved[b[i]],
            engine.judged,
            engine.values,
            c.pair_query,
            c.n_queries,
            c.k,
            FINE.lmax,
            tight=tight,
        )
        np.testing.assert_allclose(upper[i], ref.upper)
        np.testing.assert_allclose(lower[i], ref.lower)


def test_bounds_contain_the_truth_and_close_when_all_judged(loaded) -> None:
    c = loaded.collection
    truth = per_query_scores(c, loaded.judged_values, "cg", FINE) * FINE.lmax  # AG units
    a, b = np.triu_indices(c.n_systems, 1)
    true_diff = (truth[:, a] - truth[:, b]).T
    partial = engine_with(loaded, 40)
    upper, lower = partial.agk_bounds(tight=True)
    assert np.all(lower <= true_diff + 1e-9)
    assert np.all(true_diff <= upper + 1e-9)
    full = engine_with(loaded, c.n_pairs)
    upper, lower = full.agk_bounds()
    np.testing.assert_allclose(upper, true_diff, atol=1e-9)
    np.testing.assert_allclose(lower, true_diff, atol=1e-9)


def test_complete_judgments_give_final_verdicts_in_the_true_direction(loaded) -> None:
    c = loaded.collection
    full = engine_with(loaded, c.n_pairs)
    verdicts = full.significance()
    a, b = np.triu_indices(c.n_systems, 1)
    diff = full.evaluation().diff_mean[a, b]
    for i, outcome in enumerate(verdicts.outcome):
        if outcome == Outcome.A_BETTER:
            assert diff[i] > 0
        elif outcome == Outcome.B_BETTER:
            assert diff[i] < 0
        assert outcome != Outcome.UNDECIDED


def test_no_judgments_leave_rules_1_to_3_silent(loaded) -> None:
    verdicts = engine_with(loaded, 0).significance()
    # with nothing judged the bounds span everything: only the heuristic rule 4 can speak
    assert set(np.unique(verdicts.rule)) <= {0, 4}


def test_per_query_scores_average_to_the_evaluation(loaded) -> None:
    c = loaded.collection
    for measure in ("cg", "dcg", "ndcg", "rbp"):
        scores = per_query_scores(c, loaded.judged_values, measure, FINE)
        assert scores.shape == (c.n_queries, c.n_systems)
        ev = evaluate(c, loaded.judged_values, np.zeros(c.n_pairs), measure, FINE)
        np.testing.assert_allclose(scores.mean(axis=0), ev.mean)


def test_per_query_scores_validates(loaded) -> None:
    with pytest.raises(ValueError, match="unknown measure"):
        per_query_scores(loaded.collection, loaded.judged_values, "map", FINE)
    with pytest.raises(ValueError, match="one value per pool pair"):
        per_query_scores(loaded.collection, loaded.judged_values[:-1], "cg", FINE)


def identical_twins(loaded) -> MTCEngine:
    """The collection with its first system listed twice: every bound of the pair is 0."""
    from mtcjudge.mtc.collection import build_collection

    c = loaded.collection
    runs = c.rank_matrix()  # (n_systems, n_pairs) ranks, 0 = not retrieved
    docs = np.full((c.n_systems + 1, c.n_queries, c.k), -1, dtype=np.intp)
    for s in range(c.n_systems):
        for p in np.flatnonzero(runs[s]):
            docs[s, c.pair_query[p], runs[s, p] - 1] = c.pair_doc[p]
    docs[-1] = docs[0]
    twins = build_collection(docs, c.k)
    return MTCEngine(twins, RelevanceModel(twins, FINE, "uniform"), EngineConfig())


@pytest.mark.parametrize("n_judged", [0, 1, 25, 60, "all", "twins", "twins-all"])
def test_pairwise_verdicts_equal_those_of_the_bound_matrices(loaded, n_judged) -> None:
    from mtcjudge.mtc.significance import significance_verdicts

    c = loaded.collection
    if str(n_judged).startswith("twins"):
        engine = identical_twins(loaded)
        if n_judged == "twins-all":
            engine.judge(np.arange(engine.collection.n_pairs), loaded.judged_values)
    else:
        engine = engine_with(loaded, c.n_pairs if n_judged == "all" else int(n_judged))
    a, b = np.triu_indices(engine.collection.n_systems, 1)
    expected = engine.evaluation().diff_mean[a, b]
    for alpha, two_tailed in ((0.05, False), (0.01, True)):
        fast = engine.significance(alpha=alpha, two_tailed=two_tailed)
        upper, lower = engine.agk_bounds()
        reference = significance_verdicts(
            upper, lower, expected, alpha=alpha, two_tailed=two_tailed
        )
        assert fast.outcome == reference.outcome
        np.testing.assert_array_equal(fast.rule, reference.rule)
        np.testing.assert_array_equal(fast.final, reference.final)
        for name in ("p_upper_greater", "p_upper_less", "p_lower_greater", "p_lower_less"):
            np.testing.assert_allclose(
                getattr(fast, name), getattr(reference, name), rtol=1e-7, atol=1e-12
            )


def test_pairwise_verdicts_validate_their_input() -> None:
    from mtcjudge.mtc.significance import pairwise_significance_verdicts as verdicts

    best = np.array([[2.0, 3.0, 1.0], [1.0, 2.0, 2.0], [0.5, 1.0, 1.5]])
    worst = best - 0.5
    expected = np.zeros(3)
    assert len(verdicts(best, worst, expected)) == 3
    with pytest.raises(ValueError, match="best must be 2-D"):
        verdicts(best[0], worst[0], expected)
    with pytest.raises(ValueError, match="worst must have the shape of best"):
        verdicts(best, worst[:2], expected)
    with pytest.raises(ValueError, match="n_queries >= 2"):
        verdicts(best[:, :1], worst[:, :1], expected)
    with pytest.raises(ValueError, match="expected mean differences must have shape"):
        verdicts(best, worst, np.zeros(2))
    with pytest.raises(ValueError, match="best and worst must be finite"):
        verdicts(np.where(best > 2.5, np.nan, best), worst, expected)
    with pytest.raises(ValueError, match="expected mean differences must be finite"):
        verdicts(best, worst, np.array([0.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match="worst must be <= best"):
        verdicts(worst, best, expected)
    with pytest.raises(ValueError, match="delta"):
        verdicts(best, worst, expected, delta=-1.0)
    with pytest.raises(ValueError, match="alpha"):
        verdicts(best, worst, expected, alpha=1.5)
