"""Assessor disagreement (mtcjudge.mtc.disagreement) and judged pairs that keep a variance."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.mtc.disagreement import (
    MIN_DF,
    Disagreement,
    disagreement,
    disagreement_from_sums,
    judged_variance,
)
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.measures import MEASURES, evaluate
from mtcjudge.mtc.scales import BROAD, FINE


def test_pooled_sum_of_squares_and_degrees_of_freedom():
    d = disagreement([[10, 20], [50, 50, 80], [7], []])
    # (10-15)^2 + (20-15)^2 = 50; mean 60: 100 + 100 + 400 = 600
    assert d.sum_squares == pytest.approx(650.0)
    assert d.df == 1 + 2
    assert d.pairs == 2
    assert d.measured
    # posterior mean S / (d - 2) under the 1/sigma^2 prior, above the plain S / d
    assert d.variance == pytest.approx(650.0 / 1)
    assert d.unbiased_variance == pytest.approx(650.0 / 3)
    assert d.sd == pytest.approx(np.sqrt(650.0))


def test_nothing_is_measured_below_the_minimum():
    d = disagreement([[10, 20], [30, 60]])
    assert d.df == MIN_DF - 1
    assert not d.measured
    assert d.variance == 0.0
    assert d.sd == 0.0
    assert Disagreement().unbiased_variance is None


def test_sums_give_what_the_values_give():
    rng = np.random.default_rng(3)
    groups = [rng.integers(0, 101, size=int(rng.integers(1, 5))).astype(float) for _ in range(40)]
    direct = disagreement(groups)
    summed = disagreement_from_sums(
        [g.size for g in groups], [g.sum() for g in groups], [(g * g).sum() for g in groups]
    )
    assert summed.df == direct.df
    assert summed.pairs == direct.pairs
    assert summed.sum_squares == pytest.approx(direct.sum_squares, rel=1e-12)


def test_identical_judgments_measure_no_disagreement():
    d = disagreement_from_sums([2, 2, 3, 2], [140.0, 2.0, 3.0, 0.0], [9800.0, 2.0, 3.0, 0.0])
    assert d.measured
    assert d.variance == 0.0


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="finite"):
        disagreement([[1.0, float("nan")]])
    with pytest.raises(ValueError, match="same length"):
        disagreement_from_sums([2], [1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=">= 0"):
        judged_variance(Disagreement(), [-1])


def test_a_pair_judged_m_times_keeps_sigma2_over_m():
    d = disagreement([[0, 10]] * 5)  # S = 250 over 5 df: variance 250 / 3
    v = judged_variance(d, [0, 1, 2, 4])
    np.testing.assert_allclose(v, [0.0, 250 / 3, 250 / 6, 250 / 12])


# ---------------------------------------------------------------------- the engine


@pytest.fixture
def engine_setup(make_collection, make_metadata):
    collection = make_collection(5, n_systems=5, n_queries=4, n_docs=12)
    metadata = make_metadata(5, 12, 4)
    truth = np.random.default_rng(5).integers(0, 101, collection.n_pairs).astype(float)
    return collection, metadata, truth


def _engine(engine_setup, measure: str) -> MTCEngine:
    collection, metadata, _ = engine_setup
    model = RelevanceModel(collection, FINE, "ordinal", metadata)
    return MTCEngine(collection, model, EngineConfig(measure=measure))


@pytest.mark.parametrize("measure", MEASURES)
def test_judged_pairs_keep_the_variance_set_before_and_after_judging(engine_setup, measure):
    collection, _, truth = engine_setup
    engine = _engine(engine_setup, measure)
    first = np.arange(0, collection.n_pairs, 3)
    engine.judge(first, truth[first])
    engine.set_judged_variance(25.0)
    later = np.arange(1, collection.n_pairs, 3)
    engine.judge(later, truth[later])
    judged = engine.judged
    np.testing.assert_allclose(engine.var[judged], 25.0)
    # the incremental statistics are those of a full recompute with these variances
    expected = evaluate(collection, engine.mean, engine.var, measure, engine.scale)
    got = engine.evaluation()
    for name in ("mean", "var", "diff_var", "pair_confidence"):
        np.testing.assert_allclose(getattr(got, name), getattr(expected, name), atol=1e-10)


def test_disagreement_widens_the_differences_and_lowers_the_confidence(engine_setup):
    collection, _, truth = engine_setup
    engine = _engine(engine_setup, "cg")
    every = np.arange(collection.n_pairs)
    engine.judge(every, truth)
    assert engine.stop_reason() == "complete"
    exact = engine.evaluation()
    assert np.all(exact.var == 0)
    assert exact.ranking_confidence == pytest.approx(1.0)
    engine.set_judged_variance(20.0**2)
    noisy = engine.evaluation()
    assert np.all(noisy.var > 0)
    np.testing.assert_allclose(noisy.mean, exact.mean)
    assert noisy.ranking_confidence < exact.ranking_confidence
    # every judged pair judged once with variance v: a system's CG@k over queries has
    # variance sum(coef^2) v, the full recompute's
    expected = evaluate(collection, engine.mean, np.full(collection.n_pairs, 400.0), "cg", FINE)
    np.testing.assert_allclose(noisy.var, expected.var, rtol=1e-12)
    # back to 0: exact again
    engine.set_judged_variance(0.0)
    np.testing.assert_allclose(engine.evaluation().var, 0.0, atol=1e-12)


def test_reestimating_keeps_the_judged_variance(engine_setup):
    collection, _, truth = engine_setup
    engine = _engine(engine_setup, "cg")
    some = np.arange(0, collection.n_pairs, 2)
    engine.judge(some, truth[some])
    engine.set_judged_variance(np.full(collection.n_pairs, 9.0))
    engine.reestimate()
    np.testing.assert_allclose(engine.var[engine.judged], 9.0)


def test_judged_variance_is_checked(engine_setup):
    engine = _engine(engine_setup, "cg")
    with pytest.raises(ValueError, match="finite"):
        engine.set_judged_variance(-1.0)
    with pytest.raises(ValueError, match="broadcast"):
        engine.set_judged_variance(np.ones(3))


def test_broad_engines_take_it_too(engine_setup):
    collection, metadata, _ = engine_setup
    model = RelevanceModel(collection, BROAD, "ordinal", metadata)
    engine = MTCEngine(collection, model, EngineConfig())
    grades = np.random.default_rng(1).integers(0, 3, collection.n_pairs).astype(float)
    engine.judge(np.arange(collection.n_pairs), grades)
    engine.set_judged_variance(0.25)
    assert engine.evaluation().ranking_confidence < 1.0
