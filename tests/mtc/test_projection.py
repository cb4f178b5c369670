"""Projection of the judgments still needed (app/mtcjudge/mtc/projection.py, docs/projection.md)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc import projection
from mtcjudge.mtc.effects import SystemEffect
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.factory import engine_for_settings
from mtcjudge.mtc.joint import SystemEffectEngine
from mtcjudge.mtc.projection import Projection, TargetProjection, draw_unjudged, project
from mtcjudge.mtc.scales import BROAD, FINE
from mtcjudge.mtc.synthetic import generate

TARGETS = (0.90, 0.95, 0.99)


@pytest.fixture(scope="module")
def fine() -> LoadedCollection:
    """6 systems x 12 queries x top 5 (303 pairs), FINE, completely judged; the calibrated
    engine starts at confidence 0.86."""
    return load_synthetic(generate(n_systems=6, n_queries=12, k=5, seed=1))


def engine_of(loaded: LoadedCollection, estimator: str = "calibrated") -> MTCEngine:
    engine, _ = engine_for_settings(loaded.collection, loaded.metadata, FINE, estimator)
    return engine


def feed(engine: MTCEngine, truth: np.ndarray, n: int) -> None:
    """Judge ``n`` more pairs one at a time, as a campaign does."""
    for _ in range(n):
        pair = engine.select(1)
        engine.judge(pair, truth[pair])
        engine.learn_from_judgments()


def replay_needs(engine: MTCEngine, truth: np.ndarray, target: float) -> int:
    """Further judgments until the stopping rule holds at ``target``, with the true values."""
    start = engine.n_judged
    while engine.n_unjudged and not (
        engine.n_judged >= engine.config.min_judgments and engine.ranking_confidence() >= target
    ):
        feed(engine, truth, 1)
    return engine.n_judged - start


def state(engine: MTCEngine) -> tuple:
    ev = engine.evaluation()
    return (
        engine.n_judged,
        engine.judged.copy(),
        engine.values.copy(),
        engine.mean.copy(),
        engine.var.copy(),
        ev.mean.copy(),
        ev.diff_var.copy(),
        ev.ranking_confidence,
        engine.rng.bit_generator.state,
        engine.system_tau2,
    )


def same_state(a: tuple, b: tuple) -> bool:
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(a, b, strict=True)
    )


def test_projection_is_deterministic_and_leaves_the_engine_alone(fine) -> None:
    engine = engine_of(fine)
    feed(engine, fine.judged_values, 20)
    before = state(engine)
    first = project(engine, TARGETS, runs=4, seed=7, max_seconds=None)
    assert same_state(before, state(engine))
    second = project(engine, TARGETS, runs=4, seed=7, max_seconds=None)
    assert first.targets == second.targets
    assert first.runs == 4
    assert first.judged == 20
    assert isinstance(first, Projection)
    assert all(isinstance(t, TargetProjection) for t in first.targets)
    assert [t.target for t in first.targets] == list(TARGETS)
    # the engine keeps working as if nothing happened
    assert engine.select(1).shape == (1,)


def test_another_seed_gives_other_runs(fine) -> None:
    engine = engine_of(fine)
    a = project(engine, [0.99], runs=4, seed=1, max_seconds=None)
    b = project(engine, [0.99], runs=4, seed=2, max_seconds=None)
    assert a.targets != b.targets


def test_a_target_met_now_costs_nothing(fine) -> None:
    engine = engine_of(fine)
    replay_needs(engine, fine.judged_values, 0.95)
    p = project(engine, [0.90, 0.95], runs=2, max_seconds=None)
    for t in p.targets:
        assert t.reached
        assert (t.judgments_median, t.judgments_low, t.judgments_high) == (0, 0, 0)
    assert p.runs == 0  # nothing to simulate


def test_a_complete_collection_has_reached_every_target(fine) -> None:
    engine = engine_of(fine)
    engine.judge(np.arange(fine.collection.n_pairs), fine.judged_values)
    engine.learn_from_judgments()
    p = project(engine, [0.99, 1.0], runs=2)
    assert all(t.reached and t.judgments_median == 0 for t in p.targets)


def test_the_minimum_of_judgments_holds_a_target_back(fine) -> None:
    """Confidence above the target before the minimum: not reached, the rest of the minimum."""
    engine = engine_of(fine)
    assert engine.ranking_confidence() >= 0.8
    minimum = engine.config.min_judgments
    p = project(engine, [0.8], runs=2, max_seconds=None)
    t = p.targets[0]
    assert not t.reached
    assert t.judgments_median is not None
    assert minimum <= t.judgments_median <= minimum + 5


def test_targets_are_monotone(fine) -> None:
    engine = engine_of(fine)
    feed(engine, fine.judged_values, 15)
    p = project(engine, [0.99, 0.90, 0.95], runs=6, max_seconds=None)
    by = {t.target: t for t in p.targets}
    for field in ("judgments_median", "judgments_low", "judgments_high"):
        values = [getattr(by[t], field) for t in TARGETS]
        assert all(v is not None for v in values)
        assert values == sorted(values), field
    for t in p.targets:
        assert t.judgments_low is not None
        assert t.judgments_median is not None
        assert t.judgments_high is not None
        assert t.judgments_low <= t.judgments_median <= t.judgments_high
        assert t.runs_reached == p.runs
    assert p.for_target(0.95) is by[0.95]
    with pytest.raises(ValueError, match="no projection"):
        p.for_target(0.8)


@pytest.mark.parametrize("estimator", ["calibrated", "uniform"])
def test_the_projection_at_the_start_is_near_what_a_replay_needed(fine, estimator) -> None:
    engine = engine_of(fine, estimator)
    p = project(engine, [0.95], runs=8, max_seconds=None).targets[0]
    actual = replay_needs(engine, fine.judged_values, 0.95)
    assert p.judgments_median is not None
    # a sane factor, not the accuracy (bench/projection.py measures that)
    assert actual / 2 <= p.judgments_median <= actual * 2


def test_the_time_budget_stops_new_runs_but_two_are_always_done(fine) -> None:
    engine = engine_of(fine)
    p = project(engine, [0.99], runs=50, max_seconds=1e-6)
    assert p.runs == 2
    assert "2 runs" in p.method


def test_larger_batches_and_a_plain_engine(fine) -> None:
    c = fine.collection
    model = RelevanceModel(c, FINE, "ordinal", fine.metadata)
    engine = MTCEngine(c, model, EngineConfig(policy="static"))
    p = project(engine, [0.99], runs=2, batch=10, resolution=0.0, max_seconds=None)
    t = p.targets[0]
    assert t.judgments_median is not None
    assert t.judgments_median <= engine.n_unjudged
    assert "static" in p.method
    assert "per-system offsets" not in p.method


def test_draws_follow_the_estimates(fine) -> None:
    """FINE draws: judged pairs kept, in range, mean and variance those of the estimates."""
    c = fine.collection
    engine = MTCEngine(c, RelevanceModel(c, FINE, "ordinal", fine.metadata))
    engine.judge([0, 1], [30.0, 70.0])
    rng = np.random.default_rng(0)
    draws = np.array([draw_unjudged(engine, rng) for _ in range(400)])
    assert np.all(draws[:, :2] == [30.0, 70.0])
    assert draws.min() >= 0
    assert draws.max() <= 100
    open_ = ~engine.judged
    mean_error = np.abs(draws[:, open_].mean(axis=0) - engine.mean[open_])
    assert np.median(mean_error) < 2.0
    ratio = draws[:, open_].var(axis=0) / engine.var[open_]
    assert 0.85 < np.median(ratio) < 1.15


def test_broad_draws_are_levels_with_the_estimated_moments() -> None:
    s = generate(n_systems=4, n_queries=6, k=5, seed=2)
    loaded = load_synthetic(s, "broad")
    c = loaded.collection
    engine = MTCEngine(c, RelevanceModel(c, BROAD, "ordinal", loaded.metadata))
    rng = np.random.default_rng(1)
    draws = np.array([draw_unjudged(engine, rng) for _ in range(2000)])
    assert set(np.unique(draws)) <= {0.0, 1.0, 2.0}
    assert np.abs(draws.mean(axis=0) - engine.mean).max() < 0.12
    assert np.abs(draws.var(axis=0) - engine.var).max() < 0.15
    p = project(engine, [0.95], runs=2, max_seconds=None)
    assert p.targets[0].judgments_median is not None


def test_system_offsets_move_each_system_by_its_drawn_offset(fine) -> None:
    """The shifts give every system's unjudged results the weighted mean offset it drew."""
    engine = engine_of(fine)
    assert isinstance(engine, SystemEffectEngine)
    feed(engine, fine.judged_values, engine.config.min_judgments + 10)
    bias = np.linspace(-3.0, 3.0, 6)
    engine.effect = SystemEffect(25.0, 25.0, 0.0, bias, np.full(6, 25.0), np.ones(6))
    engine.invalidate()
    offsets = bias + 5.0 * np.random.default_rng(3).standard_normal(6)
    shift = projection._system_shift(engine, np.random.default_rng(3))
    c = engine.collection
    weight = engine.coef * ~engine.judged[c.entry_pair]
    per_system = np.bincount(
        c.entry_system, weights=weight * shift[c.entry_pair], minlength=6
    ) / np.bincount(c.entry_system, weights=weight, minlength=6)
    np.testing.assert_allclose(per_system, offsets, atol=1e-8)
    assert np.all(shift[engine.judged] == 0)
    # before the engine's minimum of judgments its offsets are not drawn
    early = engine_of(fine)
    assert isinstance(early, SystemEffectEngine)
    early.effect = engine.effect
    assert np.all(projection._system_shift(early, np.random.default_rng(3)) == 0)


def test_wide_batches_update_the_engine_like_judge(fine) -> None:
    a = engine_of(fine)
    b = engine_of(fine)
    pairs = np.arange(0, fine.collection.n_pairs, 3)
    a.judge(pairs, fine.judged_values[pairs])
    a.learn_from_judgments()
    projection._judge(b, pairs, fine.judged_values[pairs])
    assert a.n_judged == b.n_judged
    np.testing.assert_allclose(a.evaluation().mean, b.evaluation().mean, atol=1e-12)
    np.testing.assert_allclose(a.evaluation().diff_var, b.evaluation().diff_var, atol=1e-9)
    assert a.ranking_confidence() == pytest.approx(b.ranking_confidence(), abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"targets": []}, "at least one target"),
        ({"targets": [0.4]}, "in \\[0.5, 1\\]"),
        ({"targets": [1.01]}, "in \\[0.5, 1\\]"),
        ({"runs": 1}, "runs must be at least 2"),
        ({"max_seconds": 0.0}, "max_seconds must be positive"),
        ({"batch": 0}, "batch must be at least 1"),
        ({"resolution": 1.0}, "resolution must be in"),
        ({"resolution": -0.1}, "resolution must be in"),
    ],
)
def test_validation(fine, kwargs, message) -> None:
    engine = engine_of(fine)
    targets = kwargs.pop("targets", [0.95])
    with pytest.raises(ValueError, match=message):
        project(engine, targets, **kwargs)


def test_the_method_line_names_the_offsets_the_continuations_learn(fine) -> None:
    c = fine.collection
    for estimator, wanted in (
        ("calibrated", "and per-system offsets"),
        ("joint", "error offsets shared by pairs of a system, query, artist, genre pair"),
    ):
        engine, _ = engine_for_settings(c, fine.metadata, FINE, estimator)
        p = project(engine, [0.99], runs=2, max_seconds=None)
        assert wanted in p.method


def test_only_the_judgeable_pairs_are_judged_in_the_simulated_runs(fine) -> None:
    engine = engine_of(fine)
    feed(engine, fine.judged_values, 10)
    n_pairs = engine.collection.n_pairs
    every = project(engine, [0.95], runs=3, seed=4, max_seconds=None)
    same = project(engine, [0.95], runs=3, seed=4, max_seconds=None, judgeable=np.ones(n_pairs))
    assert same.targets == every.targets
    # nothing can be judged: the target is not reached, whatever the estimator believes
    none = project(
        engine, [0.95], runs=3, seed=4, max_seconds=None, judgeable=np.zeros(n_pairs, bool)
    )
    [target] = none.targets
    assert target.reached is False
    assert target.judgments_median is None
    assert "judging only the 0 pairs that can be played" in none.method
    # a part of the pool: never more judgments than it holds
    part = np.zeros(n_pairs, dtype=bool)
    part[: n_pairs // 3] = True
    limited = project(engine, [0.99], runs=3, seed=4, max_seconds=None, judgeable=part)
    [target] = limited.targets
    open_part = int(np.count_nonzero(part & ~engine.judged))
    assert target.judgments_high is None or target.judgments_high <= open_part
    with pytest.raises(ValueError, match=r"judgeable must have shape \(303,\)"):
        project(engine, [0.95], runs=2, judgeable=np.ones(5, bool))
