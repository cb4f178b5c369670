"""Every estimate of every measure stays in the measure's range [0, 1], whatever is judged and
however (issue 23): on both scales, for every estimator, with judgments that may be far from
what the estimator expects (so that the offsets ``calibrated`` and ``joint`` learn are large),
the expected scores and both ends of their intervals are in [0, 1], and so are the unrounded
moments the engines compute before :func:`mtcjudge.mtc.measures.finish` clips off the
rounding (docs/method.md §3.1, §3.4, §8.3)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.factory import ESTIMATOR_CHOICES, JOINT, build_engine
from mtcjudge.mtc.joint import SystemEffectEngine
from mtcjudge.mtc.measures import MEASURES, RATIO_MEASURES, evaluate, finish, rank_discount
from mtcjudge.mtc.scales import BROAD, FINE, Scale

#: rounding the moments may carry before finish() clips it off
ROUNDING = 1e-9


def _collection(seed: int, n_systems: int, n_queries: int, k: int, twin: bool) -> Collection:
    rng = np.random.default_rng(seed)
    n_docs = k + 4
    runs = np.array(
        [
            [rng.choice(n_docs, size=k, replace=False) for _ in range(n_queries)]
            for _ in range(n_systems)
        ],
        dtype=np.intp,
    )
    # some lists shorter than k (padded with -1)
    lengths = rng.integers(max(1, k - 2), k + 1, size=(n_systems, n_queries))
    runs[np.arange(k)[None, None, :] >= lengths[:, :, None]] = -1
    if twin:  # the last system repeats the first one's run
        runs[-1] = runs[0]
    return build_collection(runs, k=k)


def _metadata(seed: int, n_docs: int, n_queries: int) -> Metadata:
    rng = np.random.default_rng(seed + 1)
    return Metadata.from_arrays(
        rng.integers(-1, 3, size=n_docs),
        rng.integers(0, 3, size=n_docs),
        rng.integers(0, 3, n_queries),
    )


def _raw_moments(engine: MTCEngine) -> np.ndarray:
    """The expected scores before finish() takes off the rounding."""
    if isinstance(engine, SystemEffectEngine):
        return engine.moments()[0]
    return np.asarray(engine.score_sum / engine.collection.n_queries)


def _check_in_range(engine: MTCEngine) -> None:
    ev = engine.evaluation()
    raw = _raw_moments(engine)
    assert np.all(raw >= -ROUNDING), raw
    assert np.all(raw <= 1.0 + ROUNDING), raw
    assert np.all((ev.mean >= 0.0) & (ev.mean <= 1.0)), ev.mean
    assert np.all((ev.ci_low >= 0.0) & (ev.ci_high <= 1.0)), (ev.ci_low, ev.ci_high)
    assert np.all((ev.ci_low <= ev.mean) & (ev.mean <= ev.ci_high))
    assert np.all(np.abs(ev.diff_mean) <= 1.0)
    assert np.all((ev.pair_confidence >= 0.5) & (ev.pair_confidence <= 1.0))
    # systems with the same run are tied at every state of the judgments
    run_class = engine.collection.run_class
    for a, b in zip(*np.nonzero(np.triu(run_class[:, None] == run_class[None, :], 1)), strict=True):
        assert ev.tied[a, b]
        assert ev.ranks()[a] == ev.ranks()[b]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n_systems=st.integers(2, 6),
    n_queries=st.integers(1, 5),
    k=st.integers(2, 5),
    twin=st.booleans(),
    scale=st.sampled_from([BROAD, FINE]),
    estimator=st.sampled_from(ESTIMATOR_CHOICES),
    measure=st.sampled_from(MEASURES),
    judged_share=st.floats(0.0, 1.0),
    extreme=st.booleans(),
)
def test_every_estimate_stays_in_the_measure_range(
    seed: int,
    n_systems: int,
    n_queries: int,
    k: int,
    twin: bool,
    scale: Scale,
    estimator: str,
    measure: str,
    judged_share: float,
    extreme: bool,
) -> None:
    collection = _collection(seed, n_systems, n_queries, k, twin)
    metadata = _metadata(seed, k + 4, n_queries)
    engine, _ = build_engine(collection, metadata, scale, estimator, EngineConfig(measure=measure))
    rng = np.random.default_rng(seed + 2)
    _check_in_range(engine)
    judged = np.flatnonzero(rng.random(collection.n_pairs) < judged_share)
    # judgments at the ends of the scale push the learnt offsets as far as they go
    levels = np.array([0.0, scale.lmax]) if extreme else np.arange(int(scale.lmax) + 1.0)
    values = rng.choice(levels, size=judged.shape[0])
    half = judged.shape[0] // 2
    for part in (slice(0, half), slice(half, None)):  # two batches: the incremental updates
        if judged[part].size:
            engine.judge(judged[part], values[part])
            _check_in_range(engine)


@pytest.mark.parametrize("scale", [BROAD, FINE], ids=["broad", "fine"])
@pytest.mark.parametrize("measure", MEASURES)
def test_offsets_that_would_leave_the_scale_are_held_at_its_ends(
    scale: Scale, measure: str
) -> None:
    """Offsets of several times the scale: every unjudged entry is expected at the top (or the
    bottom) of the scale, so every system scores what that list would score: at most 1 (at
    most what its list of the same length at the top scores), never above."""
    collection = _collection(3, 4, 3, 5, twin=False)
    metadata = _metadata(3, 9, 3)
    for sign in (1.0, -1.0):
        engine, _ = build_engine(collection, metadata, scale, JOINT, EngineConfig(measure=measure))
        assert isinstance(engine, SystemEffectEngine)
        assert engine.effect is not None
        # offsets set by hand: nothing re-learns them (no judgment follows)
        engine.effect = engine.effect.__class__(
            0.0, 0.0, 0.0, np.full(4, sign * 5 * scale.lmax), np.zeros(4), np.ones(4)
        )
        engine.group_effect = None
        engine.factor_effects = None
        engine.invalidate()
        expected = engine.entry_expectations()
        assert np.all(expected == (scale.lmax if sign > 0 else 0.0))
        top = np.full(collection.n_pairs, scale.lmax if sign > 0 else 0.0)
        reference = evaluate(collection, top, np.zeros(collection.n_pairs), measure, scale)
        np.testing.assert_allclose(engine.evaluation().mean, reference.mean, atol=1e-12)


@pytest.mark.parametrize("measure", RATIO_MEASURES)
def test_the_ideal_is_at_least_every_system_s_own_list(measure: str) -> None:
    """With offsets that differ between the systems retrieving a pair, each pair enters the
    ideal at the largest of its entries' expectations: no system's expected gain on a query
    exceeds the expected ideal's (docs/method.md §8.3)."""
    collection = _collection(5, 5, 4, 5, twin=False)
    metadata = _metadata(5, 9, 4)
    engine, _ = build_engine(collection, metadata, FINE, JOINT, EngineConfig(measure=measure))
    assert isinstance(engine, SystemEffectEngine)
    assert engine.effect is not None
    # offsets set by hand: nothing re-learns them (no judgment follows)
    bias = np.array([30.0, -20.0, 10.0, 0.0, 45.0])
    engine.effect = engine.effect.__class__(0.0, 0.0, 0.0, bias, np.zeros(5), np.ones(5))
    engine.group_effect = None
    engine.factor_effects = None
    engine.invalidate()
    expected = engine.entry_expectations()
    ideal = engine.ideal_values(expected)
    c = collection
    assert np.all(ideal[c.entry_pair] >= expected)
    discount = rank_discount(measure, np.arange(1, c.k + 1))
    gain = np.zeros((c.n_systems, c.n_queries))
    np.add.at(gain, (c.entry_system, c.pair_query[c.entry_pair]), engine.coef * expected)
    for q in range(c.n_queries):
        values = np.sort(ideal[c.pairs_of_query(q)])[::-1][: c.k]
        assert np.all(gain[:, q] <= values @ discount[: values.shape[0]] + 1e-9)
    assert np.all(engine.evaluation().mean <= 1.0)
    # the system pushed furthest up scores highest, below 1
    assert int(np.argmax(engine.evaluation().mean)) == 4


def test_finish_intersects_the_intervals_with_the_range() -> None:
    """mean ± t sd cut at 0 and 1; the variance itself is left as it is."""
    mean = np.array([0.02, 0.5, 0.98])
    cov = np.diag([0.01, 0.0001, 0.01])
    ev = finish(mean, cov, 30, "t", 0.95)
    assert ev.ci_low[0] == 0.0
    assert ev.ci_high[2] == 1.0
    assert 0.0 < ev.ci_low[1] < 0.5 < ev.ci_high[1] < 1.0
    np.testing.assert_array_equal(ev.var, np.diag(cov))
    # rounding beyond the range is taken off the means
    ev = finish(np.array([1.0 + 2e-16, -1e-17]), np.zeros((2, 2)), 30, "t", 0.95)
    np.testing.assert_array_equal(ev.mean, [1.0, 0.0])
