"""Seeded random runs and metadata for the engine's tests (the ``make_collection`` and
``make_metadata`` fixtures of tests/mtc/conftest.py, and tests elsewhere that need them)."""

from __future__ import annotations

import numpy as np

from mtcjudge.mtc.collection import Metadata

__all__ = ["random_metadata", "random_runs"]


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
