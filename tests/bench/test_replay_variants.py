"""The replay experiments of bench/experiments/replay_variants.py: estimator variants put
together from switches, run by the product's replay loop."""

from __future__ import annotations

import numpy as np
import pytest

from bench.experiments.replay_variants import VariantConfig, VariantResult, replay_variant
from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.replay import ReplayConfig, replay
from mtcjudge.mtc.scales import BROAD, FINE
from mtcjudge.mtc.synthetic import generate


@pytest.fixture(scope="module")
def broad() -> LoadedCollection:
    return load_synthetic(generate(n_systems=6, n_queries=10, k=5, seed=1), "broad")


@pytest.fixture(scope="module")
def loaded() -> LoadedCollection:
    return load_synthetic(generate(6, 12, 3, n_genres=4, docs_per_genre=60, n_artists=24, seed=5))


def run(loaded: LoadedCollection, scale=BROAD, **config) -> VariantResult:
    engine = config.pop("engine", EngineConfig())
    return replay_variant(
        loaded.collection,
        loaded.metadata,
        loaded.judged_values,
        scale,
        VariantConfig(engine=engine, **config),
    )


def test_calibrated_variance_and_refits(broad) -> None:
    calibrated = run(broad, engine=EngineConfig(target=0.97), learn_variance_factor=True)
    assert calibrated.variance_scale >= 1.0
    assert calibrated.judgments_to_target <= calibrated.pool_size
    refitted = run(broad, engine=EngineConfig(target=1.0), refit_every=25, max_judgments=75)
    assert refitted.stop_reason == "max_judgments"
    assert refitted.judgments_to_target == 75


def test_replay_defaults_unchanged_and_system_effect_runs(loaded: LoadedCollection) -> None:
    args = (loaded.collection, loaded.metadata, loaded.judged_values, FINE)
    engine = EngineConfig(target=0.99)
    plain = replay_variant(*args, VariantConfig(engine=engine))
    explicit = replay_variant(
        *args, VariantConfig(engine=engine, system_effect=False, use_m_jud=True)
    )
    assert plain.judgments_to_target == explicit.judgments_to_target
    assert plain.system_tau2 == 0.0
    assert plain.source_variance_scale == ()
    se = replay_variant(
        *args,
        VariantConfig(
            engine=engine,
            use_m_jud=False,
            system_effect=True,
            system_effect_icc=0.02,
            system_effect_prior_weight=5.0,
            learn_source_factors=True,
        ),
    )
    assert se.final_confidence >= 0.99 or se.stop_reason == "complete"
    # the prior guess widens the no-judgment claim
    assert se.initial_confidence <= plain.initial_confidence + 1e-12
    assert se.system_tau2 >= 0.0
    assert len(se.source_variance_scale) == 4
    assert "system_tau2" in se.summary()


@pytest.mark.parametrize(
    ("variant", "estimator"),
    [
        ({"model": "ordinal"}, "ordinal"),
        ({"model": "uniform"}, "uniform"),
        ({"use_m_jud": False, "system_effect": True, "shared_errors": True}, "joint"),
    ],
)
def test_a_variant_spelling_an_estimator_replays_it_exactly(loaded, variant, estimator) -> None:
    """The switches that spell a shipped estimator give the numbers of the engine the factory
    builds for it (the one a campaign runs)."""
    args = (loaded.collection, loaded.metadata, loaded.judged_values, FINE)
    engine = EngineConfig(target=0.95)
    spelled = replay_variant(*args, VariantConfig(engine=engine, **variant))
    named = replay(*args, ReplayConfig(engine=engine, estimator=estimator))
    assert spelled.judgments_to_target == named.judgments_to_target
    np.testing.assert_array_equal(spelled.estimated_means, named.estimated_means)
    assert spelled.final_confidence == named.final_confidence


def test_replay_rejects_negative_prior() -> None:
    with pytest.raises(ValueError, match="system_effect_icc"):
        VariantConfig(system_effect_icc=-1.0)


def test_joint_needs_the_system_effect_on_m_out() -> None:
    with pytest.raises(ValueError, match="shared_errors"):
        VariantConfig(shared_errors=True)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"batch": 0}, r"batch must be at least 1, found 0"),
        ({"refit_every": -1}, r"refit_every must be >= 0, found -1"),
        ({"calibration_prior": 0.0}, r"calibration_prior must be positive"),
    ],
)
def test_variant_config_validation(config, message) -> None:
    with pytest.raises(ValueError, match=message):
        VariantConfig(**config)
