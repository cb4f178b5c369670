"""Assessor offsets (docs/method.md §10.1): who made each judgment, the variance of the
assessors' own offsets measured from their residuals, and what it adds to the scores'
covariance."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.mtc.assessor_offsets import (
    MIN_JUDGMENTS,
    AssessorOffsets,
    JudgmentShares,
    apply_judged_noise,
    offset_variance,
)
from mtcjudge.mtc.disagreement import disagreement
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.factory import build_engine
from mtcjudge.mtc.scales import FINE


def test_shares_number_the_assessors_and_split_each_pair_among_its_judgments():
    shares = JudgmentShares.of([4, 7, 4, 2, 4], ["b", "a", "a", None, 11], [10, 20, 30, 40, 50])
    assert shares.n_assessors == 3  # b, a, 11: an imported judgment (None) has no share
    np.testing.assert_array_equal(shares.pair, [4, 7, 4, 4])
    np.testing.assert_array_equal(shares.assessor, [0, 1, 1, 2])
    # pair 4 was judged three times: each judgment is a third of its value
    np.testing.assert_allclose(shares.weight, [1 / 3, 1.0, 1 / 3, 1 / 3])
    np.testing.assert_array_equal(shares.value, [10, 20, 30, 50])  # rows 0, 1, 2 and 4
    assert shares.judgments == 4
    np.testing.assert_array_equal(np.flatnonzero(shares.named(9)), [4, 7])
    with pytest.raises(ValueError, match="one assessor and one value per judgment"):
        JudgmentShares.of([1, 2], ["a"], [1.0, 2.0])


def _residual_campaign(seed: int, n_assessors: int, offset_sd: float, noise_sd: float):
    """Judgments of 1,200 pairs by ``n_assessors`` assessors, each with an offset of sd
    ``offset_sd`` and noise ``noise_sd``, against estimates that are right on average with
    variance 100."""
    rng = np.random.default_rng(seed)
    n = 1200
    truth = rng.uniform(0, 100, n)
    base_mean = truth + rng.normal(0, 10, n)
    base_var = np.full(n, 100.0)
    who = rng.integers(0, n_assessors, n)
    offsets = rng.normal(0, offset_sd, n_assessors)
    values = truth + offsets[who] + rng.normal(0, noise_sd, n)
    return JudgmentShares.of(np.arange(n), list(who), values), base_mean, base_var


def test_the_offsets_variance_is_measured_from_the_assessors_residuals():
    estimates = []
    for seed in range(30):
        shares, mean, var = _residual_campaign(seed, 12, 8.0, 15.0)
        tau2, assessors = offset_variance(shares, mean, var, 15.0**2 + 8.0**2)
        assert assessors == 12
        estimates.append(tau2)
    # the Paule-Mandel estimate of 8^2 = 64, over 30 campaigns of 12 assessors
    assert np.mean(estimates) == pytest.approx(64.0, rel=0.3)
    # assessors who share no offset: small (often 0)
    null = []
    for seed in range(30):
        shares, mean, var = _residual_campaign(seed, 12, 0.0, 15.0)
        null.append(offset_variance(shares, mean, var, 15.0**2)[0])
    assert np.mean(null) < 8.0


def test_the_offsets_variance_is_paule_mandels_not_the_moment_step():
    """One assessor with many judgments and three with few (a volunteer who judged most of
    the campaign): the moment step weighs the means by their precision alone and follows
    the one, Paule-Mandel weighs them as the offsets' model does (docs/method.md §10.1).
    Residuals of 0 (100 judgments) and +-0.6 (5 each) with variance 1 per judgment: means
    0, 0.6, -0.6, 0.6 of variances 0.01, 0.2, 0.2, 0.2."""
    residuals = [0.0] * 100 + [0.6] * 5 + [-0.6] * 5 + [0.6] * 5
    who = [0] * 100 + [1] * 5 + [2] * 5 + [3] * 5
    n = len(residuals)
    shares = JudgmentShares.of(np.arange(n), who, np.array(residuals))
    tau2, assessors = offset_variance(shares, np.zeros(n), np.zeros(n), 1.0)
    assert assessors == 4
    # sum_i w_i (m_i - m_w)^2 = 3 with w_i = 1 / (s_i^2 + tau^2); DerSimonian-Laird: 0.0848
    assert tau2 == pytest.approx(0.13731, rel=1e-4)


def test_the_offsets_variance_never_exceeds_the_disagreement_and_needs_two_assessors():
    shares, mean, var = _residual_campaign(1, 6, 30.0, 5.0)
    values = shares.value
    tau2, _ = offset_variance(shares, mean, var, 50.0)
    assert tau2 == 50.0  # an offset is a part of the disagreement
    assert offset_variance(shares, mean, var, 0.0) == (0.0, 0)  # not measured
    one = JudgmentShares.of(np.arange(40), ["a"] * 40, values[:40])
    assert offset_variance(one, mean, var, 50.0) == (0.0, 1)
    few = JudgmentShares.of(
        np.arange(MIN_JUDGMENTS + 1), ["a"] * MIN_JUDGMENTS + ["b"], values[: MIN_JUDGMENTS + 1]
    )  # b has a single judgment
    assert offset_variance(few, mean, var, 50.0) == (0.0, 1)
    with pytest.raises(ValueError, match="judged values must be finite"):
        JudgmentShares.of([0, 1, 2], ["a", "b", "c"], [1.0, float("nan"), 3.0])


@pytest.fixture
def complete(make_collection, make_metadata):
    """A collection with every pool pair judged, exactly."""
    collection = make_collection(5, n_systems=5, n_queries=4, n_docs=12)
    metadata = make_metadata(5, 12, 4)
    model = RelevanceModel(collection, FINE, "ordinal", metadata)
    engine = MTCEngine(collection, model, EngineConfig(measure="cg"))
    truth = np.random.default_rng(5).integers(0, 101, collection.n_pairs).astype(float)
    engine.judge(np.arange(collection.n_pairs), truth)
    return collection, engine


def _brute_force_masses(collection, engine, who: np.ndarray, n_assessors: int) -> np.ndarray:
    """Systems x assessors: every result's coefficient over the denominator, by assessor."""
    mass = np.zeros((collection.n_systems, n_assessors))
    for e in range(collection.entry_pair.shape[0]):
        p = collection.entry_pair[e]
        ey = engine.ey[collection.pair_query[p]]
        mass[collection.entry_system[e], who[p]] += engine.coef[e] / ey
    return mass / collection.n_queries


def test_offsets_add_tau2_m_m_transposed_to_the_covariance(complete):
    collection, engine = complete
    assert engine.evaluation().ranking_confidence == pytest.approx(1.0)
    who = np.random.default_rng(3).integers(0, 3, collection.n_pairs)
    shares = JudgmentShares.of(np.arange(collection.n_pairs), list(who), engine.values)
    engine.set_assessor_offsets(AssessorOffsets(16.0, shares, 3))
    mass = _brute_force_masses(collection, engine, who, 3)
    cov = 16.0 * mass @ mass.T
    np.testing.assert_allclose(engine.assessor_covariance(), cov, rtol=1e-12)
    got = engine.evaluation()
    np.testing.assert_allclose(got.var, np.diag(cov), rtol=1e-10)
    assert got.ranking_confidence < 1.0
    engine.set_assessor_offsets(None)
    assert engine.assessor_covariance() == 0.0
    assert engine.evaluation().ranking_confidence == pytest.approx(1.0)


def test_one_assessor_s_offset_cancels_where_they_judged_both_systems_alike(complete):
    """CG@k of systems that each return k results per query: one assessor's offset moves
    every system alike, so no difference is uncertain; independent noise of the same size
    would leave every difference uncertain."""
    collection, engine = complete
    shares = JudgmentShares.of(
        np.arange(collection.n_pairs), ["only"] * collection.n_pairs, engine.values
    )
    engine.set_assessor_offsets(AssessorOffsets(100.0, shares, 1))
    evaluation = engine.evaluation()
    assert np.all(evaluation.var > 0)
    np.testing.assert_allclose(evaluation.diff_var, 0.0, atol=1e-9)
    engine.set_assessor_offsets(None)
    engine.set_judged_variance(100.0)
    assert np.all(engine.evaluation().diff_var[~np.eye(collection.n_systems, dtype=bool)] > 0)


def test_apply_judged_noise_splits_the_disagreement_into_its_shared_and_own_parts(
    make_collection, make_metadata
):
    collection = make_collection(7, n_systems=6, n_queries=8, n_docs=12)
    metadata = make_metadata(7, 12, 8)
    engine, _ = build_engine(collection, metadata, FINE, "joint", EngineConfig(measure="cg"))
    rng = np.random.default_rng(0)
    base_mean, _ = engine.model.prior_estimates()
    judged = np.arange(0, collection.n_pairs, 2)
    who = rng.integers(0, 4, judged.size)
    offsets = np.array([-30.0, -10.0, 10.0, 30.0])
    values = np.clip(base_mean[judged] + offsets[who] + rng.normal(0, 5, judged.size), 0, 100)
    engine.judge(judged, values)
    measured = disagreement([[0.0, 40.0]] * 10)  # sigma^2 = 8000 / 8 = 1000
    shares = JudgmentShares.of(judged, list(who), values)
    got = apply_judged_noise(engine, measured, 1.0, shares)
    assert got is not None
    assert 0 < got.variance <= measured.variance
    assert engine.assessor_offsets is got
    # the judged pairs keep the rest of the disagreement, a pair judged later all of it
    np.testing.assert_allclose(engine.judged_var[judged], measured.variance - got.variance)
    later = 1
    assert not engine.judged[later]
    assert engine.judged_var[later] == pytest.approx(measured.variance)
    with_offsets = engine.evaluation().ranking_confidence
    # the same disagreement all independent: a higher claim
    apply_judged_noise(engine, measured, 1.0)
    assert engine.assessor_offsets is None
    np.testing.assert_allclose(engine.judged_var[judged], measured.variance)
    assert engine.evaluation().ranking_confidence > with_offsets
