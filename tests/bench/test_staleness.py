"""The staleness simulation: exact in the sequential limit, deterministic, sound counts."""

from __future__ import annotations

import numpy as np
import pytest

from bench.experiments.staleness import SimConfig, plan_size, sequential, simulate
from mtcjudge.ingest.loader import load_synthetic
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, engine_for_settings
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate


@pytest.fixture(scope="module")
def loaded():
    return load_synthetic(generate(5, 12, 5, n_genres=3, docs_per_genre=60, n_artists=25, seed=8))


def run(loaded, config: SimConfig, estimator: str = DEFAULT_ESTIMATOR):
    return simulate(
        loaded.collection, loaded.metadata, loaded.judged_values, FINE, config, estimator
    )


@pytest.mark.parametrize("estimator", ["joint", "calibrated", "uniform"])
def test_one_assessor_and_a_planner_after_every_judgment_is_the_sequential_loop(
    loaded, estimator
) -> None:
    c = loaded.collection
    seq = sequential(c, loaded.metadata, loaded.judged_values, FINE, estimator)
    # T -> 0 (re-plan on every submission) with the whole order stored
    sim = run(loaded, SimConfig(assessors=1, tick=0.0, plan=c.n_pairs), estimator)
    assert seq.stop_reason in ("confidence", "complete")
    assert sim.judgments == seq.judgments
    assert sim.order == seq.order
    assert sim.confidence == pytest.approx(seq.confidence, abs=1e-9)
    assert sim.accuracy == seq.accuracy
    assert sim.abandoned == 0


def test_the_same_jitter_perturbs_both_loops_alike(loaded) -> None:
    c = loaded.collection
    seq = sequential(c, loaded.metadata, loaded.judged_values, FINE, jitter=0.01, seed=2)
    sim = run(loaded, SimConfig(assessors=1, tick=0.0, plan=c.n_pairs, jitter=0.01, seed=2))
    assert sim.order == seq.order
    plain = sequential(c, loaded.metadata, loaded.judged_values, FINE)
    assert seq.order != plain.order


def test_the_sequential_loop_is_the_engines_own_choice(loaded) -> None:
    c = loaded.collection
    seq = sequential(c, loaded.metadata, loaded.judged_values, FINE, locality=False)
    engine, _ = engine_for_settings(c, loaded.metadata, FINE, DEFAULT_ESTIMATOR)
    assert seq.order[0] == int(engine.select(1)[0])
    assert len(set(seq.order)) == seq.judgments


def test_the_simulation_is_deterministic(loaded) -> None:
    config = SimConfig(assessors=6, tick=2.0, seed=3)
    a, b = run(loaded, config), run(loaded, config)
    assert a.order == b.order
    assert (a.judgments, a.abandoned, a.hours, a.plans) == (
        b.judgments,
        b.abandoned,
        b.hours,
        b.plans,
    )
    other = run(loaded, SimConfig(assessors=6, tick=2.0, seed=4))
    assert other.order != a.order


@pytest.mark.parametrize("remedy", ["none", "inflight", "spread"])
def test_concurrent_runs_judge_each_pair_once_and_close_with_pairs_in_flight(
    loaded, remedy
) -> None:
    c = loaded.collection
    res = run(loaded, SimConfig(assessors=6, tick=10.0, remedy=remedy))
    assert len(set(res.order)) == res.judgments
    assert res.stop_reason in ("confidence", "complete")
    assert res.abandoned == (6 if res.stop_reason == "confidence" else 0)
    assert res.judgments + res.abandoned <= c.n_pairs
    # the stop is noticed at a tick: the campaign time is a multiple of T
    assert (res.hours * 3600.0 / 10.0) == pytest.approx(round(res.hours * 360.0), abs=1e-6)
    assert 0.5 <= res.confidence <= 1.0
    assert 0.0 <= res.accuracy <= 1.0


def test_more_assessors_than_pairs_leave_when_nothing_is_free(loaded) -> None:
    c = loaded.collection
    res = run(loaded, SimConfig(assessors=c.n_pairs + 5, tick=0.0, plan=8), "uniform")
    # every pair was handed out at once, most of them from beyond the stored plan
    assert res.judgments + res.abandoned == c.n_pairs
    assert res.fallbacks == c.n_pairs - 8


def test_a_budget_stops_the_simulation(loaded) -> None:
    res = run(loaded, SimConfig(assessors=3, tick=1.0, max_judgments=10), "uniform")
    assert res.stop_reason == "max_judgments"
    # noticed at the next tick: at most the three pairs in flight come in meanwhile
    assert 10 <= res.judgments <= 13
    assert np.isfinite(res.kendall_tau)
    assert plan_size(10) == 64
    assert plan_size(50) == 200


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"assessors": 0}, "assessors"),
        ({"tick": -1.0}, "tick"),
        ({"plan": 0}, "plan"),
        ({"listen": (0.0, 1.0)}, "listen"),
        ({"arrival": -1.0}, "arrival"),
        ({"remedy": "magic"}, "remedy"),
        ({"jitter": -0.1}, "jitter"),
    ],
)
def test_config_validation(bad, message) -> None:
    with pytest.raises(ValueError, match=message):
        SimConfig(**bad)
