"""bench/experiments/variants.py: the engine and estimator variants no campaign runs, put
together from the product's pieces (offsets set from outside or that only widen the
distributions, another error model, refits swapped into a relevance model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.experiments.replay_variants import ResidualLog
from bench.experiments.variants import (
    OutsideOffsetsEngine,
    WideningOffsetsEngine,
    build_engine_with_errors,
    design_matrices,
    with_models,
)
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.effects import SystemEffect
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.estimators import SOURCE_M_OUT, TABLE_A1, OrdinalModel, RelevanceModel
from mtcjudge.mtc.factory import CALIBRATED, JOINT, build_engine
from mtcjudge.mtc.joint import CALIBRATED_ERRORS, JOINT_ERRORS
from mtcjudge.mtc.reliability import expected_moments
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.synthetic import generate
from tests.mtc import toy

K = 3


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> LoadedCollection:
    col = generate(6, 12, K, n_genres=4, docs_per_genre=60, n_artists=24, seed=5)
    paths = col.write(Path(tmp_path_factory.mktemp("syn")))
    return load_collection(
        read_runs(paths["runs"]),
        K,
        read_metadata(paths["metadata"]),
        read_judgments(paths["judgments-fine"], "fine"),
    )


# ------------------------------------------------------------------ offsets set from outside
def test_engine_applies_shift_and_variance(loaded: LoadedCollection) -> None:
    c = loaded.collection
    scale = get_scale("fine")
    # offsets set by hand below: the engine does not learn its own
    eng = OutsideOffsetsEngine(c, RelevanceModel(c, scale, "ordinal", loaded.metadata))
    base = eng.evaluation()
    # CG: f_A = (unjudged results of A) / (n_Q * k * lmax)
    f = eng.unjudged_mass()
    assert f == pytest.approx(np.full(c.n_systems, c.n_queries * K / (c.n_queries * K * 100)))
    bias = np.linspace(-5, 5, c.n_systems)
    post = np.full(c.n_systems, 4.0)
    effect = SystemEffect(4.0, 4.0, 0.0, bias, post, np.zeros(c.n_systems))
    eng.effect = effect
    eng.invalidate()
    ev = eng.evaluation()
    assert ev.mean == pytest.approx(base.mean + f * bias)
    assert ev.var == pytest.approx(base.var + f**2 * post)
    # the same offsets, only widening the variances
    eng = WideningOffsetsEngine(c, RelevanceModel(c, scale, "ordinal", loaded.metadata))
    eng.effect = effect
    eng.invalidate()
    assert eng.evaluation().mean == pytest.approx(base.mean)
    # variance only: every pair is at most as confident as before
    assert np.all(eng.evaluation().pair_confidence <= base.pair_confidence + 1e-12)
    # judging shrinks the mass of the systems that retrieved the pair
    pair = 0
    predicted = float(eng.mean[pair])
    lo, hi = c.entry_start[pair], c.entry_start[pair + 1]
    before = eng.unjudged_mass()
    log = ResidualLog.empty()
    log.record(eng, np.array([pair]), loaded.judged_values)
    eng.judge([pair], [loaded.judged_values[pair]])
    after = eng.unjudged_mass()
    systems = c.entry_system[lo:hi]
    assert np.all(after[systems] < before[systems])
    s, r, v, _ = log.arrays()
    assert list(s) == list(systems)
    assert r == pytest.approx(np.full(hi - lo, loaded.judged_values[pair] - predicted))
    assert np.all(v > 0)


def test_offsets_set_from_outside_stay_through_judgments(loaded: LoadedCollection) -> None:
    c = loaded.collection
    eng = OutsideOffsetsEngine(c, RelevanceModel(c, get_scale("fine"), "ordinal", loaded.metadata))
    assert eng.effect is None  # nothing learnt at construction either
    effect = SystemEffect.none(c.n_systems)
    eng.effect = effect
    eng.judge([0, 1], loaded.judged_values[[0, 1]])
    assert eng.effect is effect


def test_offsets_that_only_widen_move_no_expectation(loaded: LoadedCollection) -> None:
    """The widening variant's offsets have mean 0 wherever they are read: in the projection's
    draws (:attr:`offsets`), in the entries' expectations and in an assessor's expected
    answers; their posterior variances still count."""
    c = loaded.collection
    scale = get_scale("fine")
    eng = WideningOffsetsEngine(c, RelevanceModel(c, scale, "ordinal", loaded.metadata))
    bias = np.linspace(-5, 5, c.n_systems)
    eng.effect = SystemEffect(4.0, 4.0, 0.5, bias, np.full(c.n_systems, 4.0), np.ones(c.n_systems))
    eng.invalidate()
    offsets = eng.offsets
    assert offsets is not None
    np.testing.assert_array_equal(offsets.system.bias, 0.0)
    assert offsets.system.tau2 == 4.0
    entries = eng.entry_offsets()
    np.testing.assert_array_equal(entries.offset, 0.0)
    assert [factor.name for factor in entries.factors] == ["system"]
    np.testing.assert_array_equal(eng.entry_expectations(), eng.mean[c.entry_pair])
    pairs = np.arange(0, c.n_pairs, 5)
    eng.judge(pairs, loaded.judged_values[pairs])
    mean, var = expected_moments(eng, np.zeros(c.n_pairs, dtype=bool))
    prior_mean, prior_var = eng.model.prior_estimates()
    np.testing.assert_array_equal(mean, prior_mean / scale.lmax)
    assert np.all(var >= prior_var / scale.lmax**2)


# ------------------------------------------------------------------ another error model
@pytest.mark.parametrize(
    ("estimator", "errors"), [(CALIBRATED, CALIBRATED_ERRORS), (JOINT, JOINT_ERRORS)]
)
def test_an_engine_with_the_estimators_own_error_model_is_its_engine(
    loaded: LoadedCollection, estimator, errors
) -> None:
    """The variants differ from the product's engines by their error model only."""
    c, truth = loaded.collection, loaded.judged_values
    config = EngineConfig(measure="ndcg")
    product, _ = build_engine(c, loaded.metadata, get_scale("fine"), estimator, config, seed=3)
    variant, _ = build_engine_with_errors(
        c, loaded.metadata, get_scale("fine"), estimator, config, errors=errors, seed=3
    )
    assert variant.config == product.config
    for _ in range(4):
        pairs = product.select(5)
        np.testing.assert_array_equal(variant.select(5), pairs)
        product.judge(pairs, truth[pairs])
        variant.judge(pairs, truth[pairs])
    np.testing.assert_array_equal(variant.evaluation().mean, product.evaluation().mean)
    np.testing.assert_array_equal(variant.evaluation().diff_var, product.evaluation().diff_var)
    with pytest.raises(ValueError, match="error model"):
        build_engine_with_errors(c, loaded.metadata, get_scale("fine"), "uniform", errors=errors)


# ------------------------------------------------------------------ refits
def test_design_matrices_hide_the_pair_itself() -> None:
    judged, values = toy.toy_judgments()
    model = toy.toy_model(toy.toy_collection(), toy.toy_metadata())
    pairs = np.array([0, 2])
    x_out, x_jud = design_matrices(model, judged, values, pairs)
    assert x_out is not None
    assert model.features is not None
    np.testing.assert_allclose(x_out, model.features.matrix()[pairs])
    # d1 with its own judgment hidden: A sees d2 (1), B sees d2, d6 (0.5), C sees d2, d6 (0.5)
    # aART of d1: other judged docs of artist P: d2 = 1
    np.testing.assert_allclose(x_jud[0], [1.0, (1 + 0.5 + 0.5) / 3, 1.0])
    x3, _ = model.jud_design(judged, values, 0)
    np.testing.assert_allclose(x_jud[1], x3[2])  # d3 is unjudged: nothing to hide


def test_with_models_swaps_in_a_refit() -> None:
    judged, values = toy.toy_judgments()
    model = toy.toy_model(toy.toy_collection(), toy.toy_metadata())
    published = TABLE_A1[("broad", "out")]
    shifted = OrdinalModel(
        published.features, published.beta, published.alphas - 5, published.values
    )
    before, _, _ = model.estimate_all(judged, values)
    with_models(model, m_out=shifted)
    mean, _, source = model.estimate_all(judged, values)
    assert source[3] == SOURCE_M_OUT
    assert before[3] == pytest.approx(1.607662, abs=1e-6)
    assert mean[3] < 0.2  # alphas lowered by 5: almost surely not similar
