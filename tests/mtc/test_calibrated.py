"""The calibrated estimator: M_out plus per-system offsets learnt from the judgments."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.ingest.loader import load_synthetic
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.joint import SystemEffectEngine, relearn_offsets, system_effect_from_judgments
from mtcjudge.mtc.replay import ReplayConfig, replay
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate


@pytest.fixture(scope="module")
def loaded():
    return load_synthetic(generate(5, 12, 5, n_genres=3, docs_per_genre=60, n_artists=25, seed=8))


def calibrated_engine(loaded, **config) -> tuple[SystemEffectEngine, RelevanceModel]:
    c = loaded.collection
    model = RelevanceModel(c, FINE, "ordinal", loaded.metadata, use_m_jud=False)
    engine = SystemEffectEngine(c, model, EngineConfig(**config))
    relearn_offsets(engine)
    return engine, model


def test_the_offsets_do_not_depend_on_the_order_of_the_judgments(loaded) -> None:
    pairs = np.random.default_rng(1).choice(loaded.collection.n_pairs, 40, replace=False)
    truth = loaded.judged_values
    forward, _ = calibrated_engine(loaded)
    backward, _ = calibrated_engine(loaded)
    for p in pairs:
        forward.judge([p], [truth[p]])
        relearn_offsets(forward)
    for p in pairs[::-1]:
        backward.judge([p], [truth[p]])
        relearn_offsets(backward)
    a, b = forward.evaluation(), backward.evaluation()
    np.testing.assert_allclose(a.mean, b.mean, atol=1e-12)
    np.testing.assert_allclose(a.pair_confidence, b.pair_confidence, atol=1e-12)
    assert forward.effect is not None
    assert backward.effect is not None
    np.testing.assert_allclose(forward.effect.bias, backward.effect.bias, atol=1e-12)


def test_residuals_are_taken_against_the_judgment_free_estimates(loaded) -> None:
    engine, model = calibrated_engine(loaded)
    c = loaded.collection
    # judge every pair of system 0 two points above its M_out estimate: system 0 then looks
    # better than its estimates say, the others get no evidence of an offset of their own
    base_mean, _ = model.prior_estimates()
    own = np.unique(c.entry_pair[c.entry_system == 0])
    engine.judge(own, np.clip(base_mean[own] + 20.0, 0, 100))
    effect = system_effect_from_judgments(engine, model)
    assert effect.bias[0] > 0
    assert effect.n_entries[0] >= own.shape[0]


def test_no_confident_stop_before_the_minimum_evidence(loaded) -> None:
    c = loaded.collection
    model = RelevanceModel(c, FINE, "ordinal", loaded.metadata)
    # a target every ranking meets: only the minimum holds the loop back
    engine = MTCEngine(c, model, EngineConfig(target=0.5, min_judgments=3))
    truth = loaded.judged_values
    for expected in (None, None, None, "confidence"):
        assert engine.stop_reason() == expected
        p = engine.select(1)
        engine.judge(p, truth[p])


def test_min_judgments_validation() -> None:
    with pytest.raises(ValueError, match="min_judgments must be >= 0"):
        EngineConfig(min_judgments=-1)


def test_replay_with_the_system_effect_gathers_evidence_first(loaded) -> None:
    result = replay(
        loaded.collection,
        loaded.metadata,
        loaded.judged_values,
        FINE,
        ReplayConfig(estimator="calibrated", engine=EngineConfig(target=0.5)),
    )
    assert result.judgments_to_target >= 2 * loaded.collection.n_systems
    assert result.stop_reason == "confidence"


def test_select_among_given_candidates(loaded) -> None:
    c = loaded.collection
    engine = MTCEngine(c, RelevanceModel(c, FINE, "ordinal", loaded.metadata))
    truth = loaded.judged_values
    first = engine.select(1)
    engine.judge(first, truth[first])
    # a campaign wanting a second judgment may offer a judged pair again
    only = np.zeros(c.n_pairs, dtype=bool)
    only[first] = True
    np.testing.assert_array_equal(engine.select(1, candidates=only), first)
    assert engine.select(1, candidates=only, exclude=first).size == 0
    assert only[first].all()  # the caller's mask is left alone
    with pytest.raises(ValueError, match="candidates must have shape"):
        engine.select(1, candidates=only[:-1])


def test_replay_rejects_a_negative_budget() -> None:
    with pytest.raises(ValueError, match="max_judgments must be >= 0"):
        ReplayConfig(max_judgments=-1)


def test_the_variant_hooks_of_the_plain_engine_change_nothing(loaded) -> None:
    c = loaded.collection
    engine = MTCEngine(c, RelevanceModel(c, FINE, "ordinal", loaded.metadata, use_m_jud=False))
    p = engine.select(3)
    engine.judge(p, loaded.judged_values[p])
    before = engine.evaluation()
    engine.learn_from_judgments()
    assert engine.evaluation() is before  # nothing learnt, nothing recomputed
    assert engine.system_tau2 == 0.0


def test_the_system_effect_engine_learns_through_its_hook(loaded) -> None:
    truth = loaded.judged_values
    hooked, _ = calibrated_engine(loaded)
    by_hand, _ = calibrated_engine(loaded)
    pairs = np.random.default_rng(2).choice(loaded.collection.n_pairs, 30, replace=False)
    for engine in (hooked, by_hand):
        engine.judge(pairs, truth[pairs])
    hooked.learn_from_judgments()
    relearn_offsets(by_hand)
    assert hooked.effect is not None
    assert by_hand.effect is not None
    np.testing.assert_array_equal(hooked.effect.bias, by_hand.effect.bias)
    np.testing.assert_array_equal(hooked.evaluation().mean, by_hand.evaluation().mean)
    assert hooked.system_tau2 == hooked.effect.tau2
    hooked.effect = None
    assert hooked.system_tau2 == 0.0
