"""Relevance estimators (docs/method.md §1.1, 2): priors, Table A.1 models, features (the
refits and rescaled variances of the replay experiments: tests/bench/test_refit.py,
tests/bench/test_scaled_model.py)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.mtc.collection import Metadata, build_collection
from mtcjudge.mtc.estimators import (
    SOURCE_JUDGED,
    SOURCE_M_JUD,
    SOURCE_M_OUT,
    SOURCE_PRIOR,
    TABLE_A1,
    RelevanceModel,
    judgment_features,
    output_features,
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


def test_relevance_model_validation(toy_collection) -> None:
    with pytest.raises(ValueError, match=r"unknown estimator 'bayes'"):
        RelevanceModel(toy_collection, BROAD, "bayes")


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
