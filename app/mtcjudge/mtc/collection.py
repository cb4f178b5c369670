"""The pooled test collection as dense integer arrays (docs/method.md §1.2, 14).

Everything in the engine is indexed by integers: systems ``0..n_systems-1``,
queries ``0..n_queries-1``, documents (clips) ``0..n_docs-1`` and *pool pairs*
``0..n_pairs-1``. A pool pair is one (query, document) pair in the union of the
systems' top-k lists for that query; judgments, estimates and weights all live
on pool pairs ([T] 8.3). Pool pairs are sorted by query, then document index, so
the pairs of query ``q`` are ``query_start[q]:query_start[q + 1]``.

The retrieval structure is kept as a list of *entries* (system, pair, rank): one
per retrieved result in a top k, sorted by pair. This is the sparse matrix
``rank[A, p]`` of docs/method.md §15.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Collection", "Metadata", "build_collection", "entry_ranges"]

IntArray = NDArray[np.intp]


@dataclass(frozen=True, eq=False)
class Collection:
    """Filtered top-k runs of ``n_systems`` systems over ``n_queries`` queries.

    Attributes
    ----------
    n_systems, n_queries, k : int
        Sizes and the evaluation cut-off.
    pair_query, pair_doc : ndarray of shape (n_pairs,)
        Query and document index of each pool pair.
    query_start : ndarray of shape (n_queries + 1,)
        Offsets of each query's pool pairs.
    entry_system, entry_pair, entry_rank : ndarray of shape (n_entries,)
        System, pool pair and 1-based rank of every retrieved result, sorted by pair.
    n_results : int
        ``sum_q sum_A min(k, len(run))``: the cost of a complete judgment with no
        overlap, the denominator of OV (docs/method.md §2.4, A4, A22).
    """

    n_systems: int
    n_queries: int
    k: int
    pair_query: IntArray
    pair_doc: IntArray
    query_start: IntArray
    entry_system: IntArray
    entry_pair: IntArray
    entry_rank: IntArray
    n_results: int

    @property
    def n_pairs(self) -> int:
        """Pool size ``n_R = sum_q |U_q|``."""
        return int(self.pair_query.shape[0])

    @property
    def ov(self) -> float:
        """OV = n_R / (k n_S n_Q) with short runs counted as they are ([T] 7.2.3, A4)."""
        return self.n_pairs / self.n_results if self.n_results else 1.0

    @cached_property
    def entry_start(self) -> IntArray:
        """Offsets of each pair's entries, shape (n_pairs + 1,)."""
        counts = np.bincount(self.entry_pair, minlength=self.n_pairs)
        return np.concatenate(([0], np.cumsum(counts))).astype(np.intp)

    @cached_property
    def query_entry_start(self) -> IntArray:
        """Offsets of each query's entries (entries are sorted by pair, hence by query)."""
        return self.entry_start[self.query_start]

    @cached_property
    def n_retrieving(self) -> IntArray:
        """Number of systems retrieving each pool pair, shape (n_pairs,)."""
        return np.bincount(self.entry_pair, minlength=self.n_pairs).astype(np.intp)

    @cached_property
    def mean_rank(self) -> NDArray[np.float64]:
        """Average rank of each pool pair over the systems that retrieve it (tie-break A13)."""
        sums = np.bincount(self.entry_pair, weights=self.entry_rank, minlength=self.n_pairs)
        return sums / np.maximum(self.n_retrieving, 1)

    @cached_property
    def run_class(self) -> IntArray:
        """Per system, the lowest index of a system whose filtered top-k lists are the same
        as its own (the same documents at the same ranks for every query), shape
        (n_systems,): its own index unless it repeats an earlier system's run.

        Systems of one class retrieve the same results: every score and every estimation
        error of theirs is the same, so their differences are exactly 0 (docs/method.md §3.5).
        """
        order = np.argsort(self.entry_system, kind="stable")  # each system's entries by pair
        start = np.searchsorted(self.entry_system[order], np.arange(self.n_systems + 1))
        first: dict[tuple[bytes, bytes], int] = {}
        out = np.empty(self.n_systems, dtype=np.intp)
        for s in range(self.n_systems):
            own = order[start[s] : start[s + 1]]
            key = (self.entry_pair[own].tobytes(), self.entry_rank[own].tobytes())
            out[s] = first.setdefault(key, s)
        return out

    def rank_matrix(self) -> IntArray:
        """Dense ``rank[A, p]`` (0 = not in A's top k), shape (n_systems, n_pairs).

        Meant for small collections and tests; the engine works on the entries.
        """
        ranks = np.zeros((self.n_systems, self.n_pairs), dtype=np.intp)
        ranks[self.entry_system, self.entry_pair] = self.entry_rank
        return ranks

    def pairs_of_query(self, query: int) -> slice:
        """Slice of the pool pairs of ``query``."""
        return slice(int(self.query_start[query]), int(self.query_start[query + 1]))

    def find_pair(self, query: int, doc: int) -> int:
        """Pool pair index of (query, doc); raises KeyError if it is not in the pool."""
        sl = self.pairs_of_query(query)
        docs = self.pair_doc[sl]
        pos = int(np.searchsorted(docs, doc))
        if pos < docs.shape[0] and docs[pos] == doc:
            return int(sl.start + pos)
        raise KeyError((query, doc))


@dataclass(frozen=True, eq=False)
class Metadata:
    """Artist and genre of documents and queries (-1 = unknown).

    Attributes
    ----------
    doc_artist, doc_genre : ndarray of shape (n_docs,)
        Artist and genre index of every document (-1 when unknown; the "various
        artists" pseudo-artist must be given as -1: it links nothing).
    query_genre : ndarray of shape (n_queries,)
        Genre of each query clip (-1 when unknown).
    """

    doc_artist: IntArray
    doc_genre: IntArray
    query_genre: IntArray

    @classmethod
    def from_arrays(
        cls, doc_artist: ArrayLike, doc_genre: ArrayLike, query_genre: ArrayLike
    ) -> Metadata:
        """Validate and wrap the three index arrays."""
        artist = np.asarray(doc_artist, dtype=np.intp)
        genre = np.asarray(doc_genre, dtype=np.intp)
        qgenre = np.asarray(query_genre, dtype=np.intp)
        if artist.ndim != 1 or genre.ndim != 1 or qgenre.ndim != 1:
            raise ValueError("metadata arrays must be one-dimensional")
        if artist.shape != genre.shape:
            raise ValueError(
                f"doc_artist and doc_genre must have the same length, found "
                f"{artist.shape[0]} and {genre.shape[0]}"
            )
        return cls(artist, genre, qgenre)


def entry_ranges(start: IntArray, index: IntArray) -> IntArray:
    """The entries ``start[i]:start[i + 1]`` of every ``i`` in ``index``, concatenated (with
    :attr:`Collection.entry_start`: the entries of the pairs ``index``, in that order)."""
    lo = start[index]
    counts = start[index + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.intp)
    first = np.cumsum(counts) - counts  # where each range starts in the output
    return np.asarray(np.arange(total) + np.repeat(lo - first, counts), dtype=np.intp)


def build_collection(runs: ArrayLike, k: int) -> Collection:
    """Pool the systems' top-k lists.

    Parameters
    ----------
    runs : array_like of int, shape (n_systems, n_queries, list_length)
        Document index at each rank (rank 1 first), padded with -1 where a list
        is shorter. Lists must already be filtered (query and same-artist clips
        removed, docs/method.md §1.2) and must not repeat a document.
    k : int
        Cut-off; ranks beyond ``k`` are ignored.

    Returns
    -------
    Collection

    Examples
    --------
    >>> c = build_collection([[[0, 1]], [[1, 2]]], k=2)
    >>> c.n_pairs, c.n_results, round(c.ov, 4)
    (3, 4, 0.75)
    """
    arr = np.asarray(runs)
    if arr.ndim != 3:
        raise ValueError(
            f"runs must have shape (n_systems, n_queries, list_length), found {arr.ndim} dimensions"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"runs must hold integer document indices, found dtype {arr.dtype}")
    if k < 1:
        raise ValueError(f"k must be at least 1, found {k}")
    n_systems, n_queries, _ = arr.shape
    if n_systems < 2:
        raise ValueError(f"at least 2 systems are needed to rank them, found {n_systems}")
    if n_queries < 1:
        raise ValueError("at least 1 query is needed")
    top = arr[:, :, :k].astype(np.intp)
    if np.any(top < -1):
        raise ValueError("document indices must be >= 0 (or -1 for padding)")
    present = top >= 0
    # a gap (a document after a -1) would make ranks ambiguous
    if np.any(~present[:, :, :-1] & present[:, :, 1:]):
        raise ValueError("runs are padded with -1 only at the end of a list")
    sorted_top = np.sort(np.where(present, top, -1), axis=2)
    dup = (sorted_top[:, :, 1:] == sorted_top[:, :, :-1]) & (sorted_top[:, :, 1:] >= 0)
    if np.any(dup):
        s, q, _ = np.argwhere(dup)[0]
        raise ValueError(f"system {s} lists a document twice for query {q}")

    sys_idx, query_idx, rank0 = np.nonzero(present)
    docs = top[sys_idx, query_idx, rank0]
    n_docs = int(docs.max()) + 1 if docs.size else 1
    key = query_idx * n_docs + docs
    unique_keys, entry_pair = np.unique(key, return_inverse=True)
    pair_query = (unique_keys // n_docs).astype(np.intp)
    pair_doc = (unique_keys % n_docs).astype(np.intp)
    order = np.lexsort((sys_idx, entry_pair))
    query_start = np.searchsorted(pair_query, np.arange(n_queries + 1)).astype(np.intp)
    return Collection(
        n_systems=int(n_systems),
        n_queries=int(n_queries),
        k=int(k),
        pair_query=pair_query,
        pair_doc=pair_doc,
        query_start=query_start,
        entry_system=sys_idx[order].astype(np.intp),
        entry_pair=entry_pair[order].astype(np.intp),
        entry_rank=(rank0[order] + 1).astype(np.intp),
        n_results=int(present.sum()),
    )
