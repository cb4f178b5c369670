"""The incremental MTC loop (docs/method.md §4.4, 4.5) against the full recompute."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.mtc.collection import build_collection
from mtcjudge.mtc.engine import EngineConfig, MTCEngine, absolute_threshold
from mtcjudge.mtc.estimators import SOURCE_JUDGED, RelevanceModel
from mtcjudge.mtc.measures import MEASURES, evaluate
from mtcjudge.mtc.scales import BROAD, FINE
from mtcjudge.mtc.selection import POLICIES

N_DOCS, N_QUERIES = 12, 4


@pytest.fixture
def setup(make_collection, make_metadata):
    """A random 5-system, 4-query collection with metadata, and its true judgments."""
    collection = make_collection(21, n_systems=5, n_queries=N_QUERIES, n_docs=N_DOCS)
    metadata = make_metadata(21, N_DOCS, N_QUERIES)
    truth = np.random.default_rng(21).integers(0, 3, collection.n_pairs).astype(float)
    return collection, metadata, truth


def make_engine(setup, kind="ordinal", rng=None, **config) -> MTCEngine:
    collection, metadata, _ = setup
    model = RelevanceModel(collection, BROAD, kind, metadata if kind == "ordinal" else None)
    return MTCEngine(collection, model, EngineConfig(**config), rng=rng)


def assert_matches_full_recompute(engine: MTCEngine) -> None:
    cfg = engine.config
    got = engine.evaluation()
    expected = evaluate(
        engine.collection,
        engine.mean,
        engine.var,
        cfg.measure,
        engine.scale,
        rbp_p=cfg.rbp_p,
        distribution=cfg.distribution,
        ci_level=cfg.ci_level,
    )
    for name in ("mean", "var", "ci_low", "ci_high", "diff_mean", "diff_var", "pair_confidence"):
        np.testing.assert_allclose(
            getattr(got, name), getattr(expected, name), atol=1e-10, err_msg=name
        )
    assert got.ranking_confidence == pytest.approx(expected.ranking_confidence, abs=1e-10)


# ---------------------------------------------------------------------- incremental == full


@pytest.mark.parametrize("refresh_every", [1, 20])
@pytest.mark.parametrize("kind", ["uniform", "historical", "ordinal"])
@pytest.mark.parametrize("measure", MEASURES)
def test_incremental_statistics_equal_the_full_recompute(setup, measure, kind, refresh_every):
    collection, _, truth = setup
    engine = make_engine(setup, kind, measure=measure, refresh_every=refresh_every)
    model = engine.model
    rng = np.random.default_rng(hash((measure, kind, refresh_every)) % 2**32)
    assert_matches_full_recompute(engine)
    for _ in range(25):
        pairs = rng.choice(collection.n_pairs, size=int(rng.integers(1, 4)), replace=False)
        values = truth[pairs].copy()
        revise = rng.random(pairs.shape[0]) < 0.3
        values[revise] = rng.integers(0, 3, size=int(revise.sum()))  # revisions of a judgment
        engine.judge(pairs, values)
        assert_matches_full_recompute(engine)
        np.testing.assert_array_equal(engine.mean[engine.judged], engine.values[engine.judged])
        np.testing.assert_array_equal(engine.var[engine.judged], 0.0)
        assert engine.n_judged == int(engine.judged.sum())
        if refresh_every == 1 or not model.use_m_jud:
            mean, var, source = model.estimate_all(engine.judged, engine.values)
            np.testing.assert_allclose(engine.mean, mean, atol=1e-12)
            np.testing.assert_allclose(engine.var, var, atol=1e-12)
            np.testing.assert_array_equal(engine.source, source)
    engine.reestimate()
    assert_matches_full_recompute(engine)
    mean, var, _ = model.estimate_all(engine.judged, engine.values)
    np.testing.assert_allclose(engine.mean, mean, atol=1e-12)


def test_deferred_refresh_catches_up_every_refresh_every_judgments(setup) -> None:
    _, _, truth = setup
    engine = make_engine(setup, refresh_every=5)
    for p in range(4):
        engine.judge(p, truth[p])
    # judging d of query 0 made M_jud applicable to another pair: not applied yet
    refreshed, _, _ = engine.model.estimate_all(engine.judged, engine.values)
    assert np.abs(engine.mean - refreshed).max() > 0.1
    assert_matches_full_recompute(engine)
    engine.judge(4, truth[4])
    refreshed, var, source = engine.model.estimate_all(engine.judged, engine.values)
    np.testing.assert_allclose(engine.mean, refreshed, atol=1e-12)
    np.testing.assert_allclose(engine.var, var, atol=1e-12)
    np.testing.assert_array_equal(engine.source, source)


def test_deferred_refresh_happens_when_a_batch_crosses_the_period(setup) -> None:
    _, _, truth = setup
    engine = make_engine(setup, refresh_every=20)
    pairs = np.r_[0:7, 10:17, 21:28]  # queries 0, 1 and 2, none judged completely
    for start in range(0, 21, 3):
        batch = pairs[start : start + 3]
        engine.judge(batch, truth[batch])
    assert engine.n_updates == 21
    refreshed, _, _ = engine.model.estimate_all(engine.judged, engine.values)
    np.testing.assert_allclose(engine.mean, refreshed, atol=1e-12)


def test_a_judged_pair_is_reported_as_judged_before_the_refresh(setup) -> None:
    engine = make_engine(setup, refresh_every=20)
    engine.judge([0], [2])
    assert engine.source[0] == SOURCE_JUDGED


def test_rebuild_every_keeps_the_statistics(setup) -> None:
    collection, _, truth = setup
    engine = make_engine(setup, measure="ndcg", rebuild_every=3)
    for p in range(0, collection.n_pairs, 2):
        engine.judge([p], [truth[p]])
        assert_matches_full_recompute(engine)


def test_existing_judgments_equal_judging_them(setup) -> None:
    collection, metadata, truth = setup
    judged = np.random.default_rng(0).random(collection.n_pairs) < 0.4
    given = np.where(judged, truth, np.nan)
    engine = MTCEngine(
        collection,
        RelevanceModel(collection, BROAD, "ordinal", metadata),
        EngineConfig(measure="rbp"),
        judged_values=given,
    )
    stepwise = make_engine(setup, measure="rbp")
    stepwise.judge(np.flatnonzero(judged), truth[judged])
    assert engine.n_judged == stepwise.n_judged == int(judged.sum())
    np.testing.assert_allclose(engine.mean, stepwise.mean, atol=1e-12)
    np.testing.assert_allclose(engine.var, stepwise.var, atol=1e-12)
    np.testing.assert_allclose(
        engine.evaluation().pair_confidence, stepwise.evaluation().pair_confidence, atol=1e-10
    )


def test_revisions_do_not_count_twice(setup) -> None:
    engine = make_engine(setup, "uniform")
    engine.judge([3], [2])
    engine.judge([3], [0])
    assert engine.n_judged == 1
    assert engine.values[3] == 0
    assert engine.mean[3] == 0


def test_a_pair_listed_twice_in_one_call_counts_once(setup) -> None:
    collection, _, truth = setup
    engine = make_engine(setup, "uniform")
    rest = np.arange(collection.n_pairs - 1)  # all but the last pair, the first one twice
    engine.judge(np.concatenate([[0], rest]), truth[np.concatenate([[0], rest])])
    assert engine.n_judged == collection.n_pairs - 1
    assert engine.stop_reason() != "complete"


# ---------------------------------------------------------------------- selection


@pytest.mark.parametrize("measure", ["cg", "ndcg"])
@pytest.mark.parametrize("policy", POLICIES)
def test_select_never_returns_judged_or_excluded_pairs(setup, policy, measure) -> None:
    _, _, truth = setup
    engine = make_engine(setup, policy=policy, measure=measure, target=1.0)
    rng = np.random.default_rng(5)
    while engine.n_unjudged:
        unjudged = np.flatnonzero(~engine.judged)
        exclude = unjudged[rng.random(unjudged.shape[0]) < 0.3]
        chosen = engine.select(4, exclude=exclude)
        assert chosen.shape == (min(4, unjudged.shape[0] - exclude.shape[0]),)
        assert not engine.judged[chosen].any()
        assert not np.isin(chosen, exclude).any()
        assert np.unique(chosen).shape == chosen.shape
        if chosen.size == 0:
            chosen = unjudged[:1]
        engine.judge(chosen, truth[chosen])
    assert engine.select(3).shape == (0,)


@pytest.mark.parametrize("measure", MEASURES)
def test_judging_everything_completes_with_certainty(setup, measure) -> None:
    collection, _, truth = setup
    engine = make_engine(setup, measure=measure, stop="absolute")
    while (batch := engine.select(5)).size:
        engine.judge(batch, truth[batch])
    assert engine.n_judged == collection.n_pairs
    assert engine.stop_reason() == "complete"
    ev = engine.evaluation()
    assert ev.ranking_confidence == 1.0
    np.testing.assert_array_equal(ev.pair_confidence, 1.0)
    # a fully judged collection is rebuilt from scratch: variances are exactly zero
    np.testing.assert_array_equal(ev.var, 0.0)
    np.testing.assert_array_equal(ev.diff_var, 0.0)
    truth_ev = evaluate(collection, truth, np.zeros_like(truth), measure, BROAD)
    np.testing.assert_allclose(ev.mean, truth_ev.mean, atol=1e-12)


def test_tied_systems_are_certain_once_everything_is_judged() -> None:
    # A and B differ only in d3 / d4, which get the same judgment: an exact tie
    collection = build_collection([[[0, 1, 2]], [[0, 1, 3]], [[4, 5, 6]]], k=3)
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, collection.n_pairs).astype(float)
    truth[3] = truth[2]
    engine = MTCEngine(
        collection,
        RelevanceModel(collection, BROAD, "historical"),
        EngineConfig(measure="dcg", target=1.0),
    )
    for p in rng.permutation(collection.n_pairs):
        engine.judge([p], [truth[p]])
    assert engine.stop_reason() == "complete"
    np.testing.assert_array_equal(engine.evaluation().pair_confidence, 1.0)
    assert engine.ranking_confidence() == 1.0


def test_the_random_policy_is_reproducible(setup) -> None:
    _, _, truth = setup

    def sequence(seed: int) -> list[list[int]]:
        engine = make_engine(setup, policy="random", rng=np.random.default_rng(seed))
        picks = []
        for _ in range(6):
            batch = engine.select(3)
            picks.append(batch.tolist())
            engine.judge(batch, truth[batch])
        return picks

    assert sequence(5) == sequence(5)
    assert sequence(5) != sequence(6)


def test_weights_follow_the_policy(setup) -> None:
    collection, _, _ = setup
    assert np.all(make_engine(setup, policy="random").weights() == 1.0)
    absolute = make_engine(setup, policy="absolute")
    ranks = collection.rank_matrix()
    np.testing.assert_allclose(absolute.weights(), absolute.evaluation().var @ (ranks > 0))


# ---------------------------------------------------------------------- stopping


def test_confidence_stop(setup) -> None:
    assert make_engine(setup, target=0.5).stop_reason() == "confidence"
    engine = make_engine(setup, target=1.0)
    assert engine.ranking_confidence() < 1.0
    assert engine.stop_reason() is None


def test_complete_stop_waits_for_every_judgment(setup) -> None:
    collection, _, truth = setup
    engine = make_engine(setup, stop="complete", target=0.5)
    engine.judge(np.arange(collection.n_pairs - 1), truth[:-1])
    assert engine.stop_reason() is None
    engine.judge([collection.n_pairs - 1], truth[-1:])
    assert engine.stop_reason() == "complete"


def test_absolute_stop(setup) -> None:
    assert make_engine(setup, stop="absolute", abs_threshold=1.0).stop_reason() == "absolute"
    assert make_engine(setup, stop="absolute", abs_threshold=1e-9).stop_reason() is None
    engine = make_engine(setup, stop="absolute")
    rooted = float(np.sqrt(engine.evaluation().var.mean()))
    threshold = absolute_threshold(0.05, N_QUERIES, corrected=False)
    assert engine.stop_reason() == ("absolute" if rooted <= threshold else None)
    # the confidence rule never applies under the absolute one
    assert make_engine(setup, stop="absolute", abs_threshold=1e-9, target=0.5).stop_reason() is None


def test_an_explicit_zero_absolute_threshold_is_honoured(setup) -> None:
    collection, _, truth = setup
    engine = make_engine(setup, stop="absolute", abs_threshold=0.0)
    engine.judge(np.arange(collection.n_pairs - 1), truth[:-1])  # tiny variance left
    assert engine.evaluation().var.max() > 0
    assert engine.stop_reason() is None


def test_absolute_thresholds() -> None:
    assert absolute_threshold(0.05, 100, corrected=False) == pytest.approx(0.025199, abs=1e-6)
    assert absolute_threshold(0.05, 100, corrected=True) == 0.011
    assert absolute_threshold(0.01, 100, corrected=True) == 0.0071
    with pytest.raises(ValueError, match=r"no corrected threshold is published for e = 0\.02"):
        absolute_threshold(0.02, 100, corrected=True)
    for error in (0.0, -0.05):
        with pytest.raises(ValueError, match=r"the target error must be positive"):
            absolute_threshold(error, 100, corrected=False)


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"measure": "map"}, r"unknown measure 'map'"),
        ({"policy": "greedy"}, r"unknown policy 'greedy'"),
        ({"stop": "never"}, r"unknown stopping rule 'never'"),
        ({"confident": 0.4}, r"confident must be in \[0\.5, 1\], found 0\.4"),
        ({"confident": 1.5}, r"confident must be in \[0\.5, 1\], found 1\.5"),
        ({"target": 0.4}, r"target confidence must be in \[0\.5, 1\], found 0\.4"),
        ({"target": 1.1}, r"target confidence must be in \[0\.5, 1\], found 1\.1"),
        ({"distribution": "cauchy"}, r"distribution must be 't' or 'normal'"),
        ({"rbp_p": 0.0}, r"rbp_p must be in \(0, 1\)"),
        ({"rbp_p": 1.0}, r"rbp_p must be in \(0, 1\)"),
        ({"refresh_every": 0}, r"refresh_every and rebuild_every must be at least 1"),
        ({"rebuild_every": 0}, r"refresh_every and rebuild_every must be at least 1"),
    ],
)
def test_engine_config_validation(config, message) -> None:
    with pytest.raises(ValueError, match=message):
        EngineConfig(**config)


def test_engine_config_rejects_a_confidence_level_outside_0_1() -> None:
    with pytest.raises(ValueError, match=r"ci_level"):
        EngineConfig(ci_level=1.5)


def test_engine_validation(setup, toy_collection) -> None:
    collection, _, _ = setup
    foreign = RelevanceModel(toy_collection, BROAD, "uniform")
    with pytest.raises(ValueError, match=r"the relevance model was built for another collection"):
        MTCEngine(collection, foreign)
    model = RelevanceModel(collection, BROAD, "uniform")
    with pytest.raises(
        ValueError, match=rf"judged_values must have shape \({collection.n_pairs},\)"
    ):
        MTCEngine(collection, model, judged_values=np.zeros(3))
    bad = np.full(collection.n_pairs, np.nan)
    bad[0] = 5
    with pytest.raises(ValueError, match=r"outside the BROAD scale"):
        MTCEngine(collection, model, judged_values=bad)


def test_judge_validation(setup) -> None:
    collection, _, _ = setup
    engine = make_engine(setup, "uniform")
    with pytest.raises(ValueError, match=r"outside the BROAD scale"):
        engine.judge([0], [3])
    with pytest.raises(ValueError, match=r"outside the BROAD scale"):
        engine.judge([0], [0.5])
    with pytest.raises(ValueError, match=r"got 2 pairs but 1 values"):
        engine.judge([0, 1], [1])
    for pair in (-1, collection.n_pairs):
        with pytest.raises(
            ValueError, match=rf"pair index out of range 0\.\.{collection.n_pairs - 1}"
        ):
            engine.judge([pair], [1])
    assert engine.n_judged == 0  # nothing was recorded by the failed calls
    assert not engine.judged.any()


def test_fine_engine_accepts_fine_values() -> None:
    collection = build_collection([[[0, 1, 2]], [[2, 3, 4]]], k=3)
    engine = MTCEngine(collection, RelevanceModel(collection, FINE, "historical"))
    engine.judge([0, 2], [37.5, 100])
    assert_matches_full_recompute(engine)
    with pytest.raises(ValueError, match=r"outside the FINE scale"):
        engine.judge([1], [101])
