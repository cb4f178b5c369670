"""Turn parsed runs, metadata and judgments into the engine's integer arrays.

This is the boundary between identifiers (strings in files and databases) and
the pure engine (integers): systems, queries and documents are numbered in
sorted id order, so the engine's "lower index first" tie-break is the
"lower (query id, doc id)" of docs/method.md §14 (A13).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mtcjudge.ingest.formats import Judgments, Runs
from mtcjudge.ingest.formats import Metadata as MetadataFile
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.synthetic import SyntheticCollection

__all__ = ["DEFAULT_VARIOUS_ARTISTS", "LoadedCollection", "load_collection", "load_synthetic"]

#: artist ids that link nothing (compilations); MIREX 2011's anonymised id is 9078dd
DEFAULT_VARIOUS_ARTISTS = frozenset({"various artists", "various", "va", "9078dd"})


@dataclass(frozen=True, eq=False)
class LoadedCollection:
    """A collection ready for the engine, with the id maps to go back to files.

    Attributes
    ----------
    collection : Collection
    metadata : Metadata or None
    systems, queries, docs : list of str
        Ids by engine index.
    judged_values : ndarray of shape (n_pairs,)
        Mean judgment of each pool pair, NaN where none was given.
    n_filtered : int
        Results removed by the MIREX filtering (the query itself, same-artist clips).
    """

    collection: Collection
    metadata: Metadata | None
    systems: list[str]
    queries: list[str]
    docs: list[str]
    judged_values: NDArray[np.float64]
    n_filtered: int

    def pair_ids(self, pair: int) -> tuple[str, str]:
        """(query id, doc id) of a pool pair."""
        c = self.collection
        return self.queries[int(c.pair_query[pair])], self.docs[int(c.pair_doc[pair])]


def load_collection(
    runs: Runs,
    k: int,
    metadata: MetadataFile | None = None,
    judgments: Judgments | None = None,
    *,
    filter_same_artist: bool = True,
    various_artists: Iterable[str] = DEFAULT_VARIOUS_ARTISTS,
) -> LoadedCollection:
    """Build the engine's collection from parsed files.

    The MIREX filtering is applied before the cut-off (docs/method.md §1.2): the query
    clip itself never counts as a result, and with ``filter_same_artist`` (and
    metadata) neither do clips by the query's artist.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, found {k}")
    va = {a.lower() for a in various_artists}

    def artist_of(doc: str) -> str | None:
        if metadata is None:
            return None
        a = metadata.artist.get(doc)
        return None if a is None or a.lower() in va else a

    systems = runs.systems
    queries = runs.queries
    filtered: dict[tuple[str, str], list[str]] = {}
    n_filtered = 0
    for s in systems:
        for q in queries:
            docs = runs.lists[s].get(q, [])
            q_artist = artist_of(q) if filter_same_artist else None
            kept = [d for d in docs if d != q and (q_artist is None or artist_of(d) != q_artist)]
            n_filtered += len(docs) - len(kept)
            filtered[(s, q)] = kept[:k]
    doc_ids = sorted(
        {d for lst in filtered.values() for d in lst}
        | set(queries)
        | (set(metadata.artist) if metadata is not None else set())
    )
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    arr = np.full((len(systems), len(queries), k), -1, dtype=np.intp)
    for si, s in enumerate(systems):
        for qi, q in enumerate(queries):
            lst = filtered[(s, q)]
            arr[si, qi, : len(lst)] = [doc_index[d] for d in lst]
    collection = build_collection(arr, k)

    meta_arrays: Metadata | None = None
    if metadata is not None:
        artists = sorted({a for d in doc_ids if (a := artist_of(d)) is not None})
        genres = sorted({g for g in metadata.genre.values() if g is not None})
        a_idx = {a: i for i, a in enumerate(artists)}
        g_idx = {g: i for i, g in enumerate(genres)}
        doc_artist = np.array([a_idx.get(artist_of(d) or "", -1) for d in doc_ids], dtype=np.intp)
        doc_genre = np.array(
            [g_idx.get(metadata.genre.get(d) or "", -1) for d in doc_ids], dtype=np.intp
        )
        query_genre = doc_genre[[doc_index[q] for q in queries]]
        meta_arrays = Metadata.from_arrays(doc_artist, doc_genre, query_genre)

    values = np.full(collection.n_pairs, np.nan)
    if judgments is not None:
        q_index = {q: i for i, q in enumerate(queries)}
        for (q, d), score in judgments.mean().items():
            if q in q_index and d in doc_index:
                try:
                    values[collection.find_pair(q_index[q], doc_index[d])] = score
                except KeyError:
                    continue  # judged but not in the pool at this cut-off
    return LoadedCollection(collection, meta_arrays, systems, queries, doc_ids, values, n_filtered)


def load_synthetic(synthetic: SyntheticCollection, scale: str = "fine") -> LoadedCollection:
    """A generated collection (:mod:`mtcjudge.mtc.synthetic`) ready for the engine, fully judged."""
    truth = synthetic.fine if scale == "fine" else synthetic.broad
    k = max(len(lst) for per_query in synthetic.runs.values() for lst in per_query.values())
    return load_collection(
        Runs(synthetic.runs, "tsv"),
        k,
        MetadataFile(dict(synthetic.artist), dict(synthetic.genre)),
        Judgments({pair: [float(v)] for pair, v in truth.items()}, "tsv"),
    )
