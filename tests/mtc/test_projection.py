"""Projection of the judgments still needed (app/mtc/projection.py, docs/projection.md)."""

from __future__ import annotations

import numpy as np
import pytest

from app.ingest.formats import Judgments, Runs
from app.ingest.formats import Metadata as MetadataFile
from app.ingest.loader import LoadedCollection, load_collection
from app.mtc.projection import Projection, TargetProjection, project
from app.mtc.scales import FINE
from app.mtc.staleness import campaign_engine
from app.mtc.synthetic import generate


@pytest.fixture(scope="module")
def fine() -> LoadedCollection:
    """6 systems x 12 queries x top 5, FINE, completely judged."""
    s = generate(n_systems=6, n_queries=12, k=5, seed=3)
    judgments = Judgments({pair: [float(v)] for pair, v in s.fine.items()}, "tsv")
    return load_collection(
        Runs(s.runs, "tsv"), 5, MetadataFile(dict(s.artist), dict(s.genre)), judgments
    )


def engine_of(loaded: LoadedCollection, estimator: str = "calibrated", target: float = 0.95):
    engine, _ = campaign_engine(loaded.collection, loaded.metadata, FINE, estimator, target=target)
    return engine


def state(engine) -> tuple:
    ev = engine.evaluation()
    return (
        engine.n_judged,
        engine.judged.copy(),
        engine.values.copy(),
        engine.mean.copy(),
        engine.var.copy(),
        ev.mean.copy(),
        ev.ranking_confidence,
        engine.rng.bit_generator.state,
    )


def same_state(a: tuple, b: tuple) -> bool:
    return all(
        np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
        for x, y in zip(a, b, strict=True)
    )


def test_projection_is_deterministic_and_leaves_the_engine_alone(fine) -> None:
    engine = engine_of(fine)
    before = state(engine)
    first = project(engine, [0.9, 0.95, 0.99], runs=4, seed=7, max_seconds=None)
    assert same_state(before, state(engine))
    second = project(engine, [0.9, 0.95, 0.99], runs=4, seed=7, max_seconds=None)
    assert first.targets == second.targets
    assert first.runs == 4
    assert isinstance(first, Projection)
    assert all(isinstance(t, TargetProjection) for t in first.targets)
