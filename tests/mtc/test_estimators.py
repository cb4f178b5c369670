"""Relevance estimators (docs/method.md §1.1, 2): priors, Table A.1 models, features, refits."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.estimators import (
    SOURCE_JUDGED,
    SOURCE_M_JUD,
    SOURCE_M_OUT,
    SOURCE_PRIOR,
    TABLE_A1,
    OrdinalModel,
    RelevanceModel,
    judgment_features,
    output_features,
    refit_model,
)
from mtcjudge.mtc.scales import BROAD, FINE, get_scale

# Appendix A features: fSYS, OV, fSYS:OV, fART, sGEN, fGEN, sGEN:fGEN
APPENDIX_A_X = np.array([[0.25, 0.8053, 0.25 * 0.8053, 0.0217, 1.0, 0.8478, 1.0 * 0.8478]])
UNJUDGED = [2, 3, 4, 6, 7]  # d3, d4, d5, d7, d8 of the toy


# ---------------------------------------------------------------------- scales


def test_fine_model_level_bins_by_tens_with_100_in_the_top_bin() -> None:
    levels = FINE.model_level([0, 9.9, 10, 95, 100])
    np.testing.assert_array_equal(levels, [0, 0, 1, 9, 9])
    np.testing.assert_array_equal(FINE.model_values[levels], [5, 5, 15, 95, 95])


def test_broad_model_level_is_the_value_itself() -> None:
    np.testing.assert_array_equal(BROAD.model_level([0, 1, 2]), [0, 1, 2])


def test_check_values_returns_float64_inside_the_scale() -> None:
    out = FINE.check_values([0, 37.5, 100])
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [0.0, 37.5, 100.0])
    np.testing.assert_array_equal(BROAD.check_values([0, 1, 2]), [0.0, 1.0, 2.0])


@pytest.mark.parametrize(
    ("scale", "values", "message"),
    [
        (BROAD, [0, 1.5], r"judgment .*1\.5.* is outside the BROAD scale \(0, 1 or 2\)"),
        (BROAD, [3], r"outside the BROAD scale"),
        (BROAD, [-1], r"outside the BROAD scale"),
        (BROAD, [np.nan], r"nan.* is outside the BROAD scale"),
        (FINE, [100.5], r"outside the FINE scale \(a number from 0 to 100\)"),
        (FINE, [-0.1], r"outside the FINE scale"),
        (FINE, [np.inf], r"outside the FINE scale"),
    ],
)
def test_check_values_rejects_values_outside_the_scale(scale, values, message) -> None:
    with pytest.raises(ValueError, match=message):
        scale.check_values(values)


def test_check_values_names_what_is_checked() -> None:
    with pytest.raises(ValueError, match=r"^true judgment .*7\.0.* is outside"):
        BROAD.check_values([7], "true judgment")


def test_check_values_message_shows_the_plain_number() -> None:
    with pytest.raises(ValueError, match=r"^judgment 1\.5 is outside the BROAD scale"):
        BROAD.check_values([1.5])


def test_get_scale_is_case_insensitive_and_rejects_unknown_names() -> None:
    assert get_scale("Fine") is FINE
    assert get_scale("BROAD") is BROAD
    with pytest.raises(ValueError, match=r"unknown scale 'coarse'"):
        get_scale("coarse")


# ---------------------------------------------------------------------- priors (2.1, 2.2)


def test_uniform_priors() -> None:
    assert BROAD.uniform == pytest.approx((1.0, 2.0 / 3.0))
    assert BROAD.uniform[1] == pytest.approx(0.6667, abs=1e-4)
    assert FINE.uniform == pytest.approx((50.0, 850.0))


def test_historical_priors() -> None:
    assert BROAD.historical == (0.8959, 0.6338)
    assert FINE.historical == (43.41, 900.4)


@pytest.mark.parametrize("scale", [BROAD, FINE])
@pytest.mark.parametrize("kind", ["uniform", "historical"])
def test_fixed_priors_estimate_every_unjudged_pair(
    toy_collection, toy_judgments, scale, kind
) -> None:
    judged, values = toy_judgments
    model = RelevanceModel(toy_collection, scale, kind)
    mean, var, source = model.estimate_all(judged, values)
    expected = scale.uniform if kind == "uniform" else scale.historical
    np.testing.assert_allclose(mean[~judged], expected[0])
    np.testing.assert_allclose(var[~judged], expected[1])
    np.testing.assert_array_equal(source[~judged], SOURCE_PRIOR)
    np.testing.assert_array_equal(mean[judged], values[judged])
    np.testing.assert_array_equal(var[judged], 0.0)
    np.testing.assert_array_equal(source[judged], SOURCE_JUDGED)


def test_ordinal_without_metadata_falls_back_to_the_historical_prior(
    toy_collection, toy_judgments
) -> None:
    judged, values = toy_judgments
    mean, var, source = RelevanceModel(toy_collection, BROAD, "ordinal").estimate_all(
        judged, values
    )
    np.testing.assert_allclose(mean[~judged], BROAD.historical[0])
    np.testing.assert_allclose(var[~judged], BROAD.historical[1])
    np.testing.assert_array_equal(source[~judged], SOURCE_PRIOR)


def test_variance_scale_multiplies_estimated_variances_only(toy_collection, toy_judgments) -> None:
    judged, values = toy_judgments
    model = RelevanceModel(toy_collection, BROAD, "uniform", variance_scale=2.0)
    _, var, _ = model.estimate_all(judged, values)
    np.testing.assert_allclose(var[~judged], 4.0 / 3.0)
    np.testing.assert_array_equal(var[judged], 0.0)


def test_relevance_model_validation(toy_collection) -> None:
    with pytest.raises(ValueError, match=r"unknown estimator 'bayes'"):
        RelevanceModel(toy_collection, BROAD, "bayes")
    with pytest.raises(ValueError, match=r"variance_scale must be positive, found 0"):
        RelevanceModel(toy_collection, BROAD, "uniform", variance_scale=0)


# ---------------------------------------------------------------------- Table A.1 (2.6 a-c)


def test_appendix_a_broad_m_out() -> None:
    model = TABLE_A1[("broad", "out")]
    assert (APPENDIX_A_X @ model.beta)[0] == pytest.approx(4.798636, abs=1e-6)
    probs = model.probabilities(APPENDIX_A_X)[0]
    np.testing.assert_allclose(probs, [0.033455, 0.184413, 0.782132], atol=1e-6)
    assert probs.sum() == pytest.approx(1.0)
    mean, var = model.moments(APPENDIX_A_X)
    assert mean[0] == pytest.approx(1.748678, abs=1e-6)
    assert var[0] == pytest.approx(0.255069, abs=1e-6)
    # the values printed in the thesis (12.1: from rounded probabilities)
    assert mean[0] == pytest.approx(1.7487, abs=1e-4)
    assert var[0] == pytest.approx(0.2551, abs=1e-4)


def test_appendix_a_fine_m_out() -> None:
    model = TABLE_A1[("fine", "out")]
    assert (APPENDIX_A_X @ model.beta)[0] == pytest.approx(4.842659, abs=1e-6)
    probs = model.probabilities(APPENDIX_A_X)[0]
    expected = [0.0130, 0.0131, 0.0191, 0.0263, 0.0356, 0.0544, 0.1000, 0.2011, 0.2903, 0.2471]
    np.testing.assert_allclose(probs, expected, atol=5e-5)
    mean, var = model.moments(APPENDIX_A_X)
    assert mean[0] == pytest.approx(75.99, abs=5e-3)
    assert var[0] == pytest.approx(391.29, abs=5e-3)


def test_broad_m_jud() -> None:
    model = TABLE_A1[("broad", "jud")]
    x = np.array([[0.25, 1.2, 2.0]])
    assert (x @ model.beta)[0] == pytest.approx(16.0430, abs=5e-5)
    np.testing.assert_allclose(model.probabilities(x)[0], [0.0, 0.0160, 0.9840], atol=5e-5)
    mean, var = model.moments(x)
    assert mean[0] == pytest.approx(1.98396, abs=5e-6)
    assert var[0] == pytest.approx(0.01582, abs=5e-6)


def test_fine_m_jud() -> None:
    model = TABLE_A1[("fine", "jud")]
    x = np.array([[0.25, 60.0, 80.0]])
    assert (x @ model.beta)[0] == pytest.approx(17.59085, abs=5e-6)
    mean, var = model.moments(x)
    assert mean[0] == pytest.approx(82.69, abs=5e-3)
    assert var[0] == pytest.approx(63.81, abs=5e-3)


@pytest.mark.parametrize("key", list(TABLE_A1))
def test_table_a1_models_are_proper_distributions(key) -> None:
    model = TABLE_A1[key]
    assert np.all(np.diff(model.alphas) < 0)  # decreasing intercepts
    x = np.random.default_rng(0).uniform(0, 1, size=(50, model.beta.shape[0]))
    probs = model.probabilities(x)
    assert np.all(probs >= 0)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)


# ---------------------------------------------------------------------- toy pipeline (2.6 d)


def test_toy_output_features(toy_collection, toy_metadata) -> None:
    assert toy_collection.ov == pytest.approx(8 / 15)
    feats = output_features(toy_collection, toy_metadata)
    np.testing.assert_allclose(feats.fsys, [1, 1, 2 / 3, 2 / 3, 1 / 3, 2 / 3, 1 / 3, 1 / 3])
    np.testing.assert_allclose(feats.fart, np.array([3, 3, 2, 1, 1, 2, 1, 3]) / 8)
    np.testing.assert_array_equal(feats.sgen, [1, 1, 1, 0, 0, 1, 0, 1])
    np.testing.assert_allclose(feats.fgen, np.array([5, 5, 5, 2, 1, 5, 2, 5]) / 8)
    assert feats.applicable.all()


def test_toy_judgment_features(toy_collection, toy_metadata, toy_judgments) -> None:
    judged, values = toy_judgments
    asys, aart = judgment_features(toy_collection, toy_metadata, judged, values, 0)
    # d3: A 1.5 (d1, d2), B 1.0 (d2, d1, d6) -> 1.25; aART from d6 only
    np.testing.assert_allclose(asys[UNJUDGED], [1.25, 1.25, 1.5, 1.0, 1.0])
    np.testing.assert_allclose(aart[[2, 7]], [0.0, 1.5])
    assert np.isnan(aart[[3, 4, 6]]).all()


def test_judgment_features_without_metadata_leave_aart_undefined(
    toy_collection, toy_judgments
) -> None:
    judged, values = toy_judgments
    asys, aart = judgment_features(toy_collection, None, judged, values, 0)
    np.testing.assert_allclose(asys[UNJUDGED], [1.25, 1.25, 1.5, 1.0, 1.0])
    assert np.isnan(aart).all()


def test_judgment_features_undefined_without_judgments(toy_collection, toy_metadata) -> None:
    asys, aart = judgment_features(
        toy_collection, toy_metadata, np.zeros(8, dtype=bool), np.zeros(8), 0
    )
    assert np.isnan(asys).all()
    assert np.isnan(aart).all()


def test_toy_estimator_policy_and_moments(toy_estimates) -> None:
    mean, var, source = toy_estimates
    np.testing.assert_array_equal(
        source,
        [
            SOURCE_JUDGED,
            SOURCE_JUDGED,
            SOURCE_M_JUD,
            SOURCE_M_OUT,
            SOURCE_M_OUT,
            SOURCE_JUDGED,
            SOURCE_M_OUT,
            SOURCE_M_JUD,
        ],
    )
    np.testing.assert_allclose(
        mean, [2, 1, 0.044486, 1.607662, 0.885220, 0, 1.144816, 1.590508], atol=1e-6
    )
    np.testing.assert_allclose(
        var, [0, 0, 0.042621, 0.355600, 0.516226, 0, 0.513209, 0.243494], atol=1e-6
    )


def test_toy_linear_predictors(make_toy_model, toy_judgments) -> None:
    judged, values = toy_judgments
    model = make_toy_model()
    eta_out = model.features.matrix() @ model.m_out.beta
    np.testing.assert_allclose(eta_out[[3, 4, 6]], [4.211810, 2.179282, 2.854970], atol=1e-6)
    x_jud, ok = model.jud_design(judged, values, 0)
    assert ok[[2, 7]].all()
    assert not ok[[3, 4, 6]].any()
    np.testing.assert_allclose((x_jud @ model.m_jud.beta)[[2, 7]], [2.148100, 12.294650], atol=1e-6)


def test_toy_m_out_alone(make_toy_model, toy_judgments) -> None:
    judged, values = toy_judgments
    mean, var, source = make_toy_model(use_m_jud=False).estimate_all(judged, values)
    np.testing.assert_array_equal(source[UNJUDGED], SOURCE_M_OUT)
    assert mean[7] == pytest.approx(1.8889, abs=5e-5)
    assert var[7] == pytest.approx(0.1253, abs=5e-5)
    assert mean[2] == pytest.approx(1.9546, abs=5e-5)
    assert var[2] == pytest.approx(0.0537, abs=5e-5)
    # pairs M_jud never applied to keep their M_out estimates
    np.testing.assert_allclose(mean[[3, 4, 6]], [1.607662, 0.885220, 1.144816], atol=1e-6)


def test_estimate_query_equals_estimate_all(make_toy_model, toy_judgments) -> None:
    judged, values = toy_judgments
    model = make_toy_model()
    for got, expected in zip(
        model.estimate_query(judged, values, 0), model.estimate_all(judged, values), strict=True
    ):
        np.testing.assert_array_equal(got, expected)


def test_unknown_genre_leaves_m_out_inapplicable(toy_collection, toy_judgments) -> None:
    judged, values = toy_judgments
    genre = [0, 0, 0, -1, 2, 0, 1, 0]  # d4's genre unknown
    meta = Metadata.from_arrays([0, 0, 1, 2, 3, 1, 4, 0], genre, [0])
    feats = output_features(toy_collection, meta)
    assert not feats.applicable[3]
    assert feats.sgen[3] == 0
    assert feats.fgen[3] == 0
    _, _, source = RelevanceModel(toy_collection, BROAD, "ordinal", meta).estimate_all(
        judged, values
    )
    assert source[3] == SOURCE_PRIOR


def test_unknown_artist_links_nothing(toy_collection) -> None:
    artist = [-1, -1, 1, 2, 3, 1, 4, -1]  # P (d1, d2, d8) unknown
    meta = Metadata.from_arrays(artist, [0, 0, 0, 1, 2, 0, 1, 0], [0])
    feats = output_features(toy_collection, meta)
    np.testing.assert_allclose(feats.fart[[0, 1, 7]], 1 / 8)
    judged = np.zeros(8, dtype=bool)
    judged[[0, 1]] = True
    _, aart = judgment_features(toy_collection, meta, judged, np.array([2.0, 1] + [0] * 6), 0)
    assert np.isnan(aart[7])


def test_output_features_validation(toy_collection) -> None:
    short = Metadata.from_arrays([0] * 5, [0] * 5, [0])
    with pytest.raises(ValueError, match=r"metadata covers 5 documents but the runs use .* 7"):
        output_features(toy_collection, short)
    two_queries = Metadata.from_arrays([0] * 8, [0] * 8, [0, 0])
    with pytest.raises(ValueError, match=r"query_genre has 2 entries, expected 1"):
        output_features(toy_collection, two_queries)


# ---------------------------------------------------------------------- collection & metadata


def test_build_collection_docstring_example() -> None:
    c = build_collection([[[0, 1]], [[1, 2]]], k=2)
    assert (c.n_pairs, c.n_results, round(c.ov, 4)) == (3, 4, 0.75)


def test_collection_structure_of_the_toy(toy_collection) -> None:
    c = toy_collection
    np.testing.assert_array_equal(c.pair_doc, np.arange(8))
    np.testing.assert_array_equal(c.n_retrieving, [3, 3, 2, 2, 1, 2, 1, 1])
    ranks = c.rank_matrix()
    np.testing.assert_array_equal(ranks[:, 2], [3, 5, 0])  # d3: A rank 3, B rank 5
    assert c.mean_rank[2] == 4.0
    assert c.find_pair(0, 5) == 5
    with pytest.raises(KeyError):
        c.find_pair(0, 8)


def test_short_runs_count_only_their_results() -> None:
    c = build_collection([[[0, 1, -1]], [[1, -1, -1]]], k=3)
    assert c.n_results == 3
    assert c.n_pairs == 2
    assert c.ov == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("runs", "k", "message"),
    [
        ([[0, 1], [1, 2]], 2, r"runs must have shape \(n_systems, n_queries, list_length\)"),
        ([[[0.0, 1.0]], [[1.0, 2.0]]], 2, r"integer document indices, found dtype float64"),
        ([[[0, 1]], [[1, 2]]], 0, r"k must be at least 1, found 0"),
        ([[[0, 1]]], 2, r"at least 2 systems are needed to rank them, found 1"),
        (np.zeros((2, 0, 2), dtype=int), 2, r"at least 1 query is needed"),
        ([[[0, -2]], [[1, 2]]], 2, r"document indices must be >= 0 \(or -1 for padding\)"),
        ([[[-1, 1]], [[1, 2]]], 2, r"padded with -1 only at the end of a list"),
        ([[[0, 1]], [[2, 2]]], 2, r"system 1 lists a document twice for query 0"),
    ],
)
def test_build_collection_validation(runs, k, message) -> None:
    with pytest.raises(ValueError, match=message):
        build_collection(np.asarray(runs), k=k)


def test_metadata_validation() -> None:
    with pytest.raises(ValueError, match=r"metadata arrays must be one-dimensional"):
        Metadata.from_arrays([[0]], [[0]], [0])
    with pytest.raises(ValueError, match=r"same length, found 3 and 2"):
        Metadata.from_arrays([0, 1, 2], [0, 1], [0])


# ---------------------------------------------------------------------- refits


def simulate(model: OrdinalModel, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one judgment per row of ``x`` from ``model``."""
    cumulative = np.cumsum(model.probabilities(x), axis=1)[:, :-1]
    level = (rng.random((x.shape[0], 1)) > cumulative).sum(axis=1)
    return np.take(model.values, level)


TRUE_MODEL = OrdinalModel(
    ("x1", "x2"), np.array([1.5, -1.0]), np.array([0.5, -1.0]), BROAD.model_values
)
WRONG_MODEL = OrdinalModel(
    ("x1", "x2"), np.array([-1.0, 1.0]), np.array([0.5, -1.0]), BROAD.model_values
)


@pytest.fixture(scope="module")
def simulated() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    x = rng.normal(size=(2000, 2))
    return x, simulate(TRUE_MODEL, x, rng)


def test_refit_recovers_the_generating_model_and_replaces_a_wrong_one(simulated) -> None:
    x, y = simulated
    result = refit_model(WRONG_MODEL, x, y, BROAD, np.random.default_rng(0))
    assert result.used
    assert result.n_observations == 2000
    assert result.rmse_refit < result.rmse_published
    assert result.model.features == ("x1", "x2")
    np.testing.assert_allclose(result.model.beta, TRUE_MODEL.beta, atol=0.15)
    np.testing.assert_allclose(result.model.alphas, TRUE_MODEL.alphas, atol=0.25)
    np.testing.assert_array_equal(result.model.values, BROAD.model_values)


def test_refit_on_fine_judgments_uses_the_fine_10_levels() -> None:
    rng = np.random.default_rng(7)
    true = OrdinalModel(("x1",), np.array([2.0]), np.linspace(2, -2, 9), FINE.model_values)
    x = rng.normal(size=(1500, 1))
    y = simulate(true, x, rng) - 5 + rng.integers(0, 10, size=1500)  # raw 0..99 in the bin
    wrong = OrdinalModel(("x1",), np.array([-2.0]), np.linspace(2, -2, 9), FINE.model_values)
    result = refit_model(wrong, x, y, FINE, np.random.default_rng(0))
    assert result.used
    np.testing.assert_array_equal(result.model.values, FINE.model_values)
    assert result.model.beta[0] == pytest.approx(2.0, abs=0.3)
    assert np.all(np.diff(result.model.alphas) < 0)


def test_refit_is_not_used_with_too_few_observations(simulated) -> None:
    x, y = simulated
    result = refit_model(WRONG_MODEL, x[:30], y[:30], BROAD, np.random.default_rng(0))
    assert not result.used
    assert result.model is WRONG_MODEL
    assert np.isnan(result.rmse_refit)
    assert result.rmse_published > 0
    assert result.n_observations == 30


def test_refit_is_not_used_when_a_single_level_is_observed() -> None:
    x = np.random.default_rng(1).normal(size=(200, 2))
    result = refit_model(WRONG_MODEL, x, np.ones(200), BROAD, np.random.default_rng(0))
    assert not result.used
    assert result.model is WRONG_MODEL


def test_refit_with_no_observations() -> None:
    result = refit_model(WRONG_MODEL, np.empty((0, 2)), [], BROAD, np.random.default_rng(0))
    assert not result.used
    assert np.isnan(result.rmse_published)


def test_refit_validation(simulated) -> None:
    x, y = simulated
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\), found \(2000, 3\)"):
        refit_model(WRONG_MODEL, np.column_stack([x, x[:, 0]]), y, BROAD, rng)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\), found \(2000,\)"):
        refit_model(WRONG_MODEL, x[:, 0], y, BROAD, rng)
    with pytest.raises(ValueError, match=r"x has 2000 rows but 1999 judged values were given"):
        refit_model(WRONG_MODEL, x, y[:-1], BROAD, rng)
    with pytest.raises(ValueError, match=r"folds must be at least 2, found 1"):
        refit_model(WRONG_MODEL, x, y, BROAD, rng, folds=1)
    with pytest.raises(ValueError, match=r"judged value .*5\.0.* is outside the BROAD scale"):
        refit_model(WRONG_MODEL, x[:2], [0, 5], BROAD, rng)


def test_m_out_refit_on_one_collection_is_used_when_the_published_model_is_wrong(
    make_collection: Callable[..., Collection],
    make_metadata: Callable[[int, int, int], Metadata],
) -> None:
    collection = make_collection(3, n_systems=6, n_queries=20, n_docs=25)
    feats = output_features(collection, make_metadata(3, 25, 20))
    x = np.repeat(feats.matrix()[feats.applicable], 12, axis=0)
    published = TABLE_A1[("broad", "out")]
    # the truth: every pool document is far more similar than Table A.1 predicts
    truth = OrdinalModel(published.features, published.beta, published.alphas + 4, published.values)
    y = simulate(truth, x, np.random.default_rng(0))
    result = refit_model(published, x, y, BROAD, np.random.default_rng(0))
    assert result.used


# ------------------------------------------------------------------ variance by source
def test_source_variance_scale_multiplies_by_source(loaded: LoadedCollection) -> None:
    c = loaded.collection
    scale = get_scale("fine")
    base = RelevanceModel(c, scale, "ordinal", loaded.metadata)
    scaled = RelevanceModel(
        c, scale, "ordinal", loaded.metadata, source_variance_scale=[1.0, 1.0, 2.5, 1.0]
    )
    none = np.zeros(c.n_pairs, dtype=bool)
    m0, v0, s0 = base.estimate_all(none, np.zeros(c.n_pairs))
    m1, v1, _ = scaled.estimate_all(none, np.zeros(c.n_pairs))
    assert m1 == pytest.approx(m0)
    assert v1 == pytest.approx(np.where(s0 == SOURCE_M_OUT, 2.5, 1.0) * v0)
    with pytest.raises(ValueError, match="4 positive"):
        scaled.set_source_variance_scale([1.0, 0.0, 1.0, 1.0])
