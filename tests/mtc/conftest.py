"""Shared fixtures: the toy query of docs/method.md §2.6(d) (tests/mtc/toy.py), seeded random
collections and a synthetic collection with metadata, fully judged."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.synthetic import generate
from tests.mtc import toy
from tests.mtc.random_collections import random_metadata, random_runs


@pytest.fixture
def toy_collection() -> Collection:
    return toy.toy_collection()


@pytest.fixture
def toy_metadata() -> Metadata:
    return toy.toy_metadata()


@pytest.fixture
def toy_judgments() -> tuple[np.ndarray, np.ndarray]:
    """(judged, values) with d1 = 2, d2 = 1, d6 = 0."""
    return toy.toy_judgments()


@pytest.fixture
def make_toy_model(
    toy_collection: Collection, toy_metadata: Metadata
) -> Callable[..., RelevanceModel]:
    """Ordinal Broad model of the toy with OV forced to 0.8053."""

    def make(use_m_jud: bool = True) -> RelevanceModel:
        return toy.toy_model(toy_collection, toy_metadata, use_m_jud)

    return make


@pytest.fixture
def toy_estimates(
    make_toy_model: Callable[..., RelevanceModel],
    toy_judgments: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, var, source) of the eight toy pairs (the table of 2.6(d))."""
    judged, values = toy_judgments
    return make_toy_model().estimate_all(judged, values)


@pytest.fixture(scope="session")
def make_collection() -> Callable[..., Collection]:
    """Factory ``make_collection(seed, **sizes)`` of seeded random collections."""

    def make(
        seed: int,
        n_systems: int = 4,
        n_queries: int = 3,
        k: int = 5,
        n_docs: int = 10,
        short: bool = False,
    ) -> Collection:
        return build_collection(random_runs(seed, n_systems, n_queries, k, n_docs, short), k=k)

    return make


@pytest.fixture(scope="session")
def make_runs() -> Callable[..., np.ndarray]:
    return random_runs


@pytest.fixture(scope="session")
def make_metadata() -> Callable[[int, int, int], Metadata]:
    return random_metadata


def random_moments(
    collection: Collection, seed: int, judged_fraction: float = 0.3
) -> tuple[np.ndarray, np.ndarray]:
    """Broad E/Var from random pmfs; a fraction of the pairs judged (Var 0)."""
    rng = np.random.default_rng(seed + 2000)
    pmf = rng.dirichlet(np.ones(3), size=collection.n_pairs)
    levels = np.arange(3.0)
    mean = pmf @ levels
    var = np.maximum(pmf @ levels**2 - mean**2, 0.0)
    judged = rng.random(collection.n_pairs) < judged_fraction
    mean[judged] = rng.integers(0, 3, size=int(judged.sum()))
    var[judged] = 0.0
    return mean, var


@pytest.fixture(scope="session")
def make_moments() -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    return random_moments


@pytest.fixture(scope="module")
def loaded() -> LoadedCollection:
    """6 systems x 12 queries x k = 3 over 4 genres of 60 documents by 24 artists (seed 5), fully
    judged on FINE; a module may define its own ``loaded`` of other sizes."""
    return load_synthetic(generate(6, 12, 3, n_genres=4, docs_per_genre=60, n_artists=24, seed=5))
