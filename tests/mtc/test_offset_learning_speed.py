"""The calibrated engine's incremental bookkeeping gives, bit for bit, what a from-scratch
computation gives: the per-system offsets, the unjudged coefficient mass f_A, the score
distributions and the selections (issue 11: a faster loop iteration changes no result)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.effects import SystemEffect, estimate_system_effect
from mtcjudge.mtc.factory import engine_for_settings
from mtcjudge.mtc.joint import SystemEffectEngine
from mtcjudge.mtc.measures import inverse_denominators
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate


class ScratchEngine(SystemEffectEngine):
    """The same engine with the offsets and f_A recomputed from every entry each time."""

    def unjudged_mass(self) -> np.ndarray:
        c = self.collection
        pq = c.pair_query[c.entry_pair]
        open_ = ~self.judged[c.entry_pair]
        w = self.coef * inverse_denominators(self.ey)[pq] * open_
        mass = np.bincount(c.entry_system, weights=w, minlength=c.n_systems)
        return np.asarray(mass / c.n_queries, dtype=np.float64)

    def learn_from_judgments(self) -> None:
        c = self.collection
        base_mean, base_var = self.model.prior_estimates()
        entries = self.judged[c.entry_pair]
        pairs = c.entry_pair[entries]
        self.effect = estimate_system_effect(
            c.entry_system[entries],
            self.values[pairs] - base_mean[pairs],
            base_var[pairs],
            c.n_systems,
        )
        self.invalidate()


@pytest.fixture(scope="module")
def loaded() -> LoadedCollection:
    return load_synthetic(generate(6, 20, 5, seed=1))


def twins(loaded: LoadedCollection, measure: str) -> tuple[SystemEffectEngine, ScratchEngine]:
    c = loaded.collection
    engine, model = engine_for_settings(c, loaded.metadata, FINE, "calibrated", measure=measure)
    assert isinstance(engine, SystemEffectEngine)
    scratch = ScratchEngine(c, model, engine.config)
    scratch.learn_from_judgments()
    return engine, scratch


def same_effect(a: SystemEffect | None, b: SystemEffect | None) -> None:
    assert a is not None
    assert b is not None
    assert (a.tau2, a.tau2_data, a.mu) == (b.tau2, b.tau2_data, b.mu)
    for name in ("bias", "post_var", "n_entries"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def same_state(engine: SystemEffectEngine, scratch: ScratchEngine) -> None:
    assert np.array_equal(engine.unjudged_mass(), scratch.unjudged_mass())
    same_effect(engine.effect, scratch.effect)
    ev, ex = engine.evaluation(), scratch.evaluation()
    for name in ("mean", "var", "diff_mean", "diff_var", "pair_confidence"):
        assert np.array_equal(getattr(ev, name), getattr(ex, name)), name
    assert ev.ranking_confidence == ex.ranking_confidence
    assert engine.stop_reason() == scratch.stop_reason()


@pytest.mark.parametrize("measure", ["cg", "ndcg", "rbp"])
def test_a_whole_campaign_matches_the_from_scratch_computation(
    loaded: LoadedCollection, measure: str
) -> None:
    truth = loaded.judged_values
    engine, scratch = twins(loaded, measure)
    same_state(engine, scratch)
    steps = 0
    while engine.n_unjudged:
        pair = engine.select(1)
        assert np.array_equal(pair, scratch.select(1))
        for e in (engine, scratch):
            e.judge(pair, truth[pair])
            e.learn_from_judgments()
        same_state(engine, scratch)
        steps += 1
    assert steps == loaded.collection.n_pairs


def test_batches_revisions_and_bulk_judgments_match(loaded: LoadedCollection) -> None:
    c = loaded.collection
    truth = loaded.judged_values
    rng = np.random.default_rng(3)
    engine, scratch = twins(loaded, "ndcg")
    engine.unjudged_mass()  # the bookkeeping exists before the judged pairs change
    for step in range(30):
        batch = engine.select(4)
        assert np.array_equal(batch, scratch.select(4))
        values = truth[batch]
        if step % 3 == 2:  # revisions: judged pairs judged again, to another value
            batch = np.concatenate([batch, np.flatnonzero(engine.judged)[:3]])
            values = np.asarray(
                rng.integers(0, int(FINE.lmax) + 1, size=batch.shape[0]), dtype=np.float64
            )
        for e in (engine, scratch):
            e.judge(batch, values)
            e.learn_from_judgments()
        same_state(engine, scratch)
    # the projection's bulk path: judged pairs set directly, then one re-estimate
    wide = np.flatnonzero(~engine.judged)[:: max(1, c.n_pairs // 200)]
    for e in (engine, scratch):
        e.judged[wide] = True
        e.values[wide] = truth[wide]
        e.n_judged += wide.shape[0]
        e.reestimate()
        e.learn_from_judgments()
    same_state(engine, scratch)


def test_a_copy_keeps_its_own_bookkeeping(loaded: LoadedCollection) -> None:
    truth = loaded.judged_values
    engine, scratch = twins(loaded, "cg")
    for _ in range(10):
        pair = engine.select(1)
        for e in (engine, scratch):
            e.judge(pair, truth[pair])
            e.learn_from_judgments()
    same_state(engine, scratch)
    clone, scratch_clone = copy.deepcopy(engine), copy.deepcopy(scratch)
    # a copy may go to another thread (the planner's projection): it shares nothing it updates
    mine, its = engine._unjudged, clone._unjudged
    assert mine is not None
    assert its is not None
    for name in ("judged", "ey", "weight", "mass"):
        assert not np.shares_memory(getattr(mine, name), getattr(its, name)), name
    for _ in range(10):
        pair = clone.select(1)
        for e in (clone, scratch_clone):
            e.judge(pair, truth[pair])
            e.learn_from_judgments()
        same_state(clone, scratch_clone)
    engine.invalidate()
    scratch.invalidate()
    same_state(engine, scratch)  # the original did not see the copy's judgments
    assert engine.n_judged == 10
