"""bench/experiments/variants.py: the engine and estimator variants no campaign runs, put
together from the product's pieces (offsets set from outside or that only widen the
distributions, another error model, joint's one κ, refits swapped into a relevance model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.experiments.replay_variants import ResidualLog
from bench.experiments.variants import (
    ONE_KAPPA_ERRORS,
    OneKappaEngine,
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
from mtcjudge.mtc.factory import AUDIT_EVERY, CALIBRATED, JOINT, build_engine
from mtcjudge.mtc.joint import CALIBRATED_ERRORS, JOINT_ERRORS, SystemEffectEngine
from mtcjudge.mtc.offset_learning import pair_offsets
from mtcjudge.mtc.reliability import expected_moments
from mtcjudge.mtc.scales import FINE, get_scale
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


# ------------------------------------------------------------------ one κ (joint before its strata)
def test_one_judgment_in_twenty_audits_a_random_unjudged_pair_and_only_those_teach_the_variance(
    loaded: LoadedCollection,
) -> None:
    """``joint`` draws a random pair among those left unjudged once every AUDIT_EVERY
    judgments and hands it out first (docs/method.md §8.2); its variance factor comes from
    the audit's pairs alone: the pairs the policy picks for being informative are no fair
    sample, and neither are the pairs of a random order that the policy had judged before
    the audit got to them."""
    c = loaded.collection
    # the one κ of joint's error model without variance strata (with them, each stratum's
    # factor is learnt the same way: tests/mtc/test_joint.py's
    # test_each_variance_stratum_learns_its_own_factor_from_the_audit)
    engine, model = build_engine_with_errors(
        c,
        loaded.metadata,
        FINE,
        JOINT,
        EngineConfig(target=1.0),
        errors=ONE_KAPPA_ERRORS,
        engine_class=OneKappaEngine,
    )
    assert isinstance(engine, SystemEffectEngine)
    base_mean, base_var = model.prior_estimates()
    off = np.clip(base_mean + 3.0 * np.sqrt(base_var), 0, 100)
    order = engine.audit_order()
    assert sorted(order.tolist()) == list(range(c.n_pairs))
    # the policy got to the order's first three pairs before the audit: they are not drawn;
    # neither is the fourth, which no assessor can be given (a clip without audio)
    engine.judge(order[:3], base_mean[order[:3]])
    engine.learn_from_judgments()
    engine.audit_allowed = np.ones(c.n_pairs, dtype=bool)
    engine.audit_allowed[order[3]] = False
    assert engine.select(1)[0] == order[4]
    n = 6 * AUDIT_EVERY
    for _ in range(n):
        judged_before = engine.judged.copy()
        pair = engine.select(1)
        drawn = engine.audit_pairs()
        assert drawn.size == engine.n_judged // AUDIT_EVERY + 1  # the audit keeps pace
        assert not judged_before[drawn[~np.isin(drawn, np.flatnonzero(engine.judged))]].any()
        # judgments exact where the policy chose, 3 sd off on the audit's pairs
        engine.judge(pair, np.where(np.isin(pair, drawn), off[pair], base_mean[pair]))
        engine.learn_from_judgments()
    sample = engine.audit_pairs()
    assert not np.isin(order[:4], sample).any()
    assert engine.judged[sample].sum() >= sample.size - 1  # all but the one just drawn
    assert engine.effect is not None
    # 9 audit pairs 3 sd off against 20 pseudo-pairs of the prior: (20 + 9 x ~5) / 29
    assert engine.effect.variance_scale > 1.5  # learnt from the audit's large errors
    # an engine rebuilt from the same judgments and the stored draws learns the same
    values = np.where(engine.judged, engine.values, np.nan)
    twin, _ = build_engine_with_errors(
        c,
        loaded.metadata,
        FINE,
        JOINT,
        EngineConfig(target=1.0),
        judged_values=values,
        audit_drawn=engine.audit_drawn,
        errors=ONE_KAPPA_ERRORS,
        engine_class=OneKappaEngine,
    )
    assert isinstance(twin, SystemEffectEngine)
    assert twin.effect is not None
    np.testing.assert_array_equal(twin.audit_pairs(), sample)
    assert twin.effect.variance_scale == pytest.approx(engine.effect.variance_scale)
    assert twin.draw_audit().size == 0  # nothing due: it does not draw again
    # without the audit the many exact pairs the policy chose would hide the errors
    twin.audit_every = 0
    twin.learn_from_judgments()
    assert twin.effect.variance_scale < 1.2


def test_under_random_selection_every_judgment_teaches_the_variance(
    loaded: LoadedCollection,
) -> None:
    """The random policy never consults the weights, so the audit draws nothing; every pair
    it hands out is a random draw among those left unjudged, and all of them teach κ."""
    c = loaded.collection
    engine, model = build_engine_with_errors(
        c,
        loaded.metadata,
        FINE,
        JOINT,
        EngineConfig(policy="random"),
        errors=ONE_KAPPA_ERRORS,
        engine_class=OneKappaEngine,
    )
    assert isinstance(engine, SystemEffectEngine)
    base_mean, base_var = model.prior_estimates()
    # 3 sd off either way: no offset of a system, query, artist or genre takes that out
    sign = np.random.default_rng(1).choice([-1.0, 1.0], size=c.n_pairs)
    off = np.clip(base_mean + 3.0 * sign * np.sqrt(base_var), 0, 100)
    for _ in range(40):
        pair = engine.select(1)
        engine.judge(pair, off[pair])
        engine.learn_from_judgments()
    assert engine.audit_pairs().size == 0
    assert engine.effect is not None
    assert engine.effect.variance_scale > 1.5


def test_the_one_kappa_is_learnt_by_the_bench_engine_alone_in_place_of_the_strata(
    loaded: LoadedCollection,
) -> None:
    """The product's engine with the same error model (no strata) learns no variance factor:
    the estimates' own variances stand. The one κ scales what an assessor's answers are
    weighed against too, and refuses to sit beside variance strata."""
    c = loaded.collection
    config = EngineConfig(policy="random")
    args = (c, loaded.metadata, FINE, JOINT, config)
    one, model = build_engine_with_errors(
        *args, errors=ONE_KAPPA_ERRORS, engine_class=OneKappaEngine
    )
    plain, _ = build_engine_with_errors(*args, errors=ONE_KAPPA_ERRORS)
    assert type(plain) is SystemEffectEngine
    base_mean, base_var = model.prior_estimates()
    sign = np.random.default_rng(1).choice([-1.0, 1.0], size=c.n_pairs)
    off = np.clip(base_mean + 3.0 * sign * np.sqrt(base_var), 0, 100)
    for _ in range(40):
        pair = one.select(1)
        one.judge(pair, off[pair])
        plain.judge(pair, off[pair])
    assert one.effect is not None
    assert plain.effect is not None
    assert one.effect.variance_scale > 1.5
    assert plain.effect.variance_scale == 1.0
    assert plain.learnt_var_factor is None
    parts = pair_offsets(one, one.learnt_offsets(one.judged))
    np.testing.assert_array_equal(parts.var, base_var * one.effect.variance_scale)
    _, var = one.expectation_from(one.judged)
    np.testing.assert_allclose(var, parts.var + parts.offset_var, rtol=1e-12)
    with pytest.raises(ValueError, match="variance strata"):
        build_engine_with_errors(*args, errors=JOINT_ERRORS, engine_class=OneKappaEngine)


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
