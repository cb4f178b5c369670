"""Which entries share an error offset, and how much of each system's score is still on
estimates at each level of the offsets (docs/method.md §8.1, §8.3).

The offsets of :mod:`mtcjudge.mtc.joint` enter a system's score through the coefficient mass
of its unjudged entries: ``f_A`` over all of them (:class:`UnjudgedMass`, kept up to date by
difference), and per level of a factor (a query, an artist, a genre cell, a system's shared
or unshared results: :func:`mass_by_cell`). The levels come from the collection and the
metadata (:func:`shared_groups`, :func:`metadata_factors`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.collection import Collection, Metadata, entry_ranges
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.measures import inverse_denominators

__all__ = [
    "UnjudgedMass",
    "entry_ranges",
    "judged_entries",
    "level_cells",
    "mass_by_cell",
    "metadata_factors",
    "open_weights",
    "shared_groups",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


def judged_entries(collection: Collection, judged: NDArray[np.bool_]) -> IntArray:
    """Indices of the entries of the judged pairs, in entry order: the entries are sorted by
    pair, so this is ``numpy.flatnonzero(judged[collection.entry_pair])`` without a pass over
    every entry."""
    return entry_ranges(collection.entry_start, np.flatnonzero(judged))


def open_weights(engine: MTCEngine) -> FloatArray:
    """Every entry's coefficient over ``E[Y_q]`` of its query; 0 once its pair is judged."""
    c = engine.collection
    return np.asarray(
        engine.coef
        * inverse_denominators(engine.ey)[c.pair_query[c.entry_pair]]
        * ~engine.judged[c.entry_pair],
        dtype=np.float64,
    )


def level_cells(
    collection: Collection, level: IntArray, n_levels: int
) -> tuple[IntArray, IntArray]:
    """The entries whose pair has a level (not -1), and their (system, level) cell."""
    entry_level = level[collection.entry_pair]
    valid = np.flatnonzero(entry_level >= 0)
    return valid, collection.entry_system[valid] * n_levels + entry_level[valid]


def mass_by_cell(
    engine: MTCEngine,
    weights: FloatArray,
    valid: IntArray | slice,
    cell: IntArray,
    n_levels: int,
) -> FloatArray:
    """Systems x levels sums of the ``valid`` entries' weights, in score units."""
    c = engine.collection
    mass = np.bincount(cell, weights=weights[valid], minlength=c.n_systems * n_levels)
    return np.asarray(mass.reshape(c.n_systems, n_levels) / c.n_queries, dtype=np.float64)


class UnjudgedMass:
    """``f_A`` of :meth:`~mtcjudge.mtc.joint.SystemEffectEngine.unjudged_mass`, kept up to date
    by difference.

    The weight of every entry (its coefficient over ``E[Y_q]``, 0 once its pair is judged)
    is kept in system order. When pairs are judged, or ``E[Y_q]`` changes (ratio measures),
    only their entries are recomputed and only the systems that retrieve them are summed
    again, over their entries in entry order from 0, as :func:`numpy.bincount` sums them in a
    full pass: the masses are bit for bit those of a full pass. The index arrays depend on
    the collection only and are shared by copies of the engine.
    """

    def __init__(self, engine: MTCEngine) -> None:
        c = engine.collection
        self.order = np.argsort(c.entry_system, kind="stable").astype(np.intp)
        self.position = np.empty_like(self.order)
        self.position[self.order] = np.arange(self.order.shape[0], dtype=np.intp)
        counts = np.bincount(c.entry_system, minlength=c.n_systems)
        self.start = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
        self.zeros = np.zeros(int(counts.max(initial=0)), dtype=np.intp)
        self._full(engine)

    def __deepcopy__(self, memo: dict[int, object]) -> UnjudgedMass:
        clone = object.__new__(UnjudgedMass)
        clone.__dict__.update(self.__dict__)
        for name in ("judged", "ey", "weight", "mass"):  # the rest is fixed by the collection
            setattr(clone, name, getattr(self, name).copy())
        return clone

    def resync(self, engine: MTCEngine) -> None:
        """Recompute every weight and mass from the engine's state (a full pass)."""
        self._full(engine)

    def _full(self, engine: MTCEngine) -> None:
        c = engine.collection
        self.judged = engine.judged.copy()
        self.ey = engine.ey.copy()
        w = open_weights(engine)
        self.mass = np.bincount(c.entry_system, weights=w, minlength=c.n_systems)
        self.weight = w[self.order]

    def mass_of(self, engine: MTCEngine) -> FloatArray:
        c = engine.collection
        pairs = np.flatnonzero(engine.judged != self.judged)
        queries = np.flatnonzero(engine.ey != self.ey)
        if pairs.size or queries.size:
            entries = entry_ranges(c.entry_start, pairs)
            if queries.size:
                entries = np.union1d(entries, entry_ranges(c.query_entry_start, queries))
            if 4 * entries.shape[0] > c.entry_pair.shape[0]:
                self._full(engine)
            else:
                self.judged[pairs] = engine.judged[pairs]
                self.ey[queries] = engine.ey[queries]
                ep = c.entry_pair[entries]
                inv = inverse_denominators(self.ey)[c.pair_query[ep]]
                self.weight[self.position[entries]] = engine.coef[entries] * inv * ~self.judged[ep]
                for s in np.unique(c.entry_system[entries]):
                    lo, hi = int(self.start[s]), int(self.start[s + 1])
                    own = self.weight[lo:hi]
                    self.mass[s] = np.bincount(self.zeros[: hi - lo], weights=own, minlength=1)[0]
        return np.asarray(self.mass / c.n_queries, dtype=np.float64)


def shared_groups(collection: Collection) -> IntArray:
    """Per entry, the group of its result among its system's: ``2 A + 1`` when other systems
    retrieved the same document for the query too, ``2 A`` when system A alone did (the
    (system, level) cell of :func:`level_cells` with the level "shared")."""
    shared = (np.diff(collection.entry_start) > 1).astype(np.intp)
    return level_cells(collection, shared, 2)[1]


def metadata_factors(
    collection: Collection, metadata: Metadata | None
) -> tuple[tuple[str, IntArray], ...]:
    """The shared random effects the metadata allows: query, artist, (query genre, document
    genre) cell; -1 where a pair's document has no artist or no genre."""
    factors: list[tuple[str, IntArray]] = [("query", collection.pair_query.astype(np.intp))]
    if metadata is None:
        return tuple(factors)
    artist = metadata.doc_artist[collection.pair_doc]
    factors.append(("artist", np.where(artist >= 0, artist, -1).astype(np.intp)))
    genre = metadata.doc_genre[collection.pair_doc]
    qgenre = metadata.query_genre[collection.pair_query]
    n_genres = (
        int(max(metadata.doc_genre.max(initial=-1), metadata.query_genre.max(initial=-1))) + 1
    )
    cell = np.where((genre >= 0) & (qgenre >= 0), qgenre * max(n_genres, 1) + genre, -1)
    factors.append(("genre pair", cell.astype(np.intp)))
    return tuple(factors)
