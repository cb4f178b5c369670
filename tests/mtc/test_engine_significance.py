"""The engine's [U12] bounds and rules for every pair, and the complete-judgment MIREX matrix."""

from __future__ import annotations

import numpy as np
import pytest

from app.ingest.loader import load_synthetic
from app.mtc.engine import EngineConfig, MTCEngine
from app.mtc.estimators import RelevanceModel
from app.mtc.measures import evaluate, per_query_scores
from app.mtc.scales import FINE
from app.mtc.significance import Outcome, agk_bounds
from app.mtc.synthetic import generate


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
