"""Shared fixtures: the toy query of docs/method.md §2.6(d), seeded random collections and a
synthetic collection with metadata, fully judged."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.scales import BROAD
from mtcjudge.mtc.synthetic import generate

# docs/method.md §2.6(d): documents d1..d8 are indices 0..7, one query, Broad, k = 5
TOY_RUNS = [
    [[0, 1, 2, 3, 4]],  # A: d1 d2 d3 d4 d5
    [[1, 0, 5, 6, 2]],  # B: d2 d1 d6 d7 d3
    [[7, 1, 5, 0, 3]],  # C: d8 d2 d6 d1 d4
]
# artists P=0, Q=1, R=2, S=3, T=4; genres rock=0, jazz=1, blues=2; the query is rock
TOY_ARTIST = [0, 0, 1, 2, 3, 1, 4, 0]
TOY_GENRE = [0, 0, 0, 1, 2, 0, 1, 0]
TOY_QUERY_GENRE = [0]
TOY_OV = 0.8053  # the MIREX 2007 collection value the spec uses instead of 8/15


@pytest.fixture
def toy_collection() -> Collection:
    return build_collection(TOY_RUNS, k=5)


@pytest.fixture
def toy_metadata() -> Metadata:
    return Metadata.from_arrays(TOY_ARTIST, TOY_GENRE, TOY_QUERY_GENRE)


@pytest.fixture
def toy_judgments() -> tuple[np.ndarray, np.ndarray]:
    """(judged, values) with d1 = 2, d2 = 1, d6 = 0."""
    judged = np.zeros(8, dtype=bool)
    judged[[0, 1, 5]] = True
    values = np.zeros(8)
    values[[0, 1]] = [2.0, 1.0]
    return judged, values


@pytest.fixture
def make_toy_model(
    toy_collection: Collection, toy_metadata: Metadata
) -> Callable[..., RelevanceModel]:
    """Ordinal Broad model of the toy with OV forced to 0.8053."""

    def make(use_m_jud: bool = True) -> RelevanceModel:
        model = RelevanceModel(toy_collection, BROAD, "ordinal", toy_metadata, use_m_jud=use_m_jud)
        assert model.features is not None
        model.features = dataclasses.replace(model.features, ov=TOY_OV)
        model._apply_m_out()
        return model

    return make


@pytest.fixture
def toy_estimates(
    make_toy_model: Callable[..., RelevanceModel],
    toy_judgments: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, var, source) of the eight toy pairs (the table of 2.6(d))."""
    judged, values = toy_judgments
    return make_toy_model().estimate_all(judged, values)


def random_runs(
    seed: int,
    n_systems: int = 4,
    n_queries: int = 3,
    k: int = 5,
    n_docs: int = 10,
    short: bool = False,
) -> np.ndarray:
    """Runs of shape (n_systems, n_queries, k) of distinct random documents.

    With ``short`` some lists are cut (padded with -1) to exercise runs shorter than k.
    """
    rng = np.random.default_rng(seed)
    runs = np.array(
        [
            [rng.choice(n_docs, size=k, replace=False) for _ in range(n_queries)]
            for _ in range(n_systems)
        ],
        dtype=np.intp,
    )
    if short:
        lengths = rng.integers(1, k + 1, size=(n_systems, n_queries))
        runs[np.arange(k)[None, None, :] >= lengths[:, :, None]] = -1
    return runs


def random_metadata(seed: int, n_docs: int, n_queries: int) -> Metadata:
    """Few artists and genres, so that fART, aART and sGEN all vary."""
    rng = np.random.default_rng(seed + 1000)
    artist = rng.integers(-1, 4, size=n_docs)  # -1: unknown / various artists
    genre = rng.integers(0, 3, size=n_docs)
    return Metadata.from_arrays(artist, genre, rng.integers(0, 3, size=n_queries))


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
