"""Which pool pair to judge next: weights, tie-break and batches (docs/method.md §4.1-4.3).

Weights are computed for every pool pair; the caller masks judged and leased
pairs. All functions take the coefficients ``c_A(d; m)`` of the collection's
entries (one per retrieved result) so they serve every measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.collection import Collection

__all__ = [
    "POLICIES",
    "CoRetrieval",
    "absolute_weights",
    "best_pairs",
    "confidence_weights",
    "static_weights",
    "top_candidates",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
POLICIES = ("static", "confidence", "absolute", "random")


@dataclass(frozen=True)
class CoRetrieval:
    """Every unordered pair of systems that both retrieve a pool pair.

    ``system_a < system_b`` retrieve ``pair`` with coefficient product ``product``.
    Its size is ``sum_p n_p (n_p - 1) / 2`` for ``n_p`` retrieving systems.
    """

    system_a: IntArray
    system_b: IntArray
    pair: IntArray
    product: FloatArray

    @classmethod
    def build(cls, collection: Collection, coef: FloatArray) -> CoRetrieval:
        """Enumerate co-retrievals with one vectorised pass per offset."""
        pair = collection.entry_pair
        parts_i: list[IntArray] = []
        parts_j: list[IntArray] = []
        idx = np.arange(pair.shape[0] - 1, dtype=np.intp)
        gap = 1
        while idx.size:
            idx = idx[idx + gap < pair.shape[0]]
            same = pair[idx] == pair[idx + gap]
            idx = idx[same]
            parts_i.append(idx)
            parts_j.append(idx + gap)
            gap += 1
        i = np.concatenate(parts_i) if parts_i else np.empty(0, dtype=np.intp)
        j = np.concatenate(parts_j) if parts_j else np.empty(0, dtype=np.intp)
        sa = collection.entry_system[i]
        sb = collection.entry_system[j]
        return cls(np.minimum(sa, sb), np.maximum(sa, sb), pair[i], coef[i] * coef[j])


def static_weights(collection: Collection, coef: FloatArray) -> FloatArray:
    """Thesis weights ``w_d = sum_{(A,B)} |c_A(d) - c_B(d)|`` ([T] 8.3, docs/method.md §4.1).

    Computed per pair from the sorted coefficients of its retrieving systems,
    the others counting as 0: for n values sorted ascending,
    ``sum_{i<j} (x_j - x_i) = sum_j x_j (2j - n + 1)``. For nDCG and RBP the
    caller divides by the query's E[ideal] (which changes with the estimates).
    """
    n = collection.n_systems
    order = np.lexsort((coef, collection.entry_pair))
    pair = collection.entry_pair[order]
    c = coef[order]
    nnz = collection.n_retrieving
    start = collection.entry_start[:-1]
    position = np.arange(pair.shape[0]) - start[pair]  # rank among the nonzeros of its pair
    # the n - nnz zeros sort first, so a nonzero at position t sits at n - nnz + t
    factor = 2.0 * (n - nnz[pair] + position) - n + 1
    return np.bincount(pair, weights=c * factor, minlength=collection.n_pairs).astype(np.float64)


def confidence_weights(
    collection: Collection,
    coef: FloatArray,
    pair_confidence: FloatArray,
    confident: float,
    co_retrieval: CoRetrieval | None = None,
) -> FloatArray:
    """[U12] eq. (6): ``w_d = sum_{C_AB < confident} (1 - C_AB) (c_A(d) - c_B(d))^2``.

    Pairs already at least ``confident`` sure (the set C of [U12], A10) do not
    count. Expanding the square, ``w_d = sum_A c_A^2 r_A - 2 sum_{A<B} W_AB c_A c_B``
    with ``W_AB = 1 - C_AB`` on the uncertain pairs and ``r_A = sum_B W_AB``, so the
    cost is linear in the entries plus the co-retrievals.
    """
    pc = np.asarray(pair_confidence, dtype=np.float64)
    if pc.shape != (collection.n_systems, collection.n_systems):
        raise ValueError(
            f"pair_confidence must have shape {(collection.n_systems, collection.n_systems)}, "
            f"found {pc.shape}"
        )
    w_mat = np.where(pc < confident, 1.0 - pc, 0.0)
    np.fill_diagonal(w_mat, 0.0)
    row = w_mat.sum(axis=1)
    co = co_retrieval or CoRetrieval.build(collection, coef)
    w: FloatArray = np.bincount(
        collection.entry_pair,
        weights=coef**2 * row[collection.entry_system],
        minlength=collection.n_pairs,
    ).astype(np.float64)
    if co.pair.size:
        w -= 2.0 * np.bincount(
            co.pair,
            weights=w_mat[co.system_a, co.system_b] * co.product,
            minlength=collection.n_pairs,
        )
    return np.maximum(w, 0.0)


def absolute_weights(collection: Collection, system_var: FloatArray) -> FloatArray:
    """``w_d = sum_A Var[mean_Q Lambda_A] 1(A_d^-1 <= k)`` ([T] 8.4, docs/method.md §4.3)."""
    sv = np.asarray(system_var, dtype=np.float64)
    if sv.shape != (collection.n_systems,):
        raise ValueError(f"system_var must have shape ({collection.n_systems},), found {sv.shape}")
    return np.bincount(
        collection.entry_pair, weights=sv[collection.entry_system], minlength=collection.n_pairs
    ).astype(np.float64)


def _order_candidates(
    weights: FloatArray, candidates: IntArray, var: FloatArray, mean_rank: FloatArray
) -> IntArray:
    """Candidates by weight descending; ties: higher Var, lower mean rank, lower index (A13)."""
    w = weights[candidates]
    # weights that differ only by rounding are ties
    scale = max(float(np.max(np.abs(w), initial=0.0)), 1e-300)
    w_key = np.round(w / scale, 10)
    v_key = np.round(var[candidates], 12)
    order = np.lexsort((candidates, mean_rank[candidates], -v_key, -w_key))
    return candidates[order]


def top_candidates(
    weights: FloatArray, candidates: IntArray, var: FloatArray, mean_rank: FloatArray, n: int
) -> IntArray:
    """The ``n`` best candidates in order (plus any tied with the n-th), without sorting all."""
    if candidates.size > n:
        w = weights[candidates]
        kth = np.partition(w, candidates.size - n)[candidates.size - n]
        scale = max(float(np.max(np.abs(w))), 1e-300)
        candidates = candidates[w >= kth - 1e-9 * scale]
    return _order_candidates(weights, candidates, var, mean_rank)


def best_pairs(
    weights: FloatArray,
    available: NDArray[np.bool_],
    var: FloatArray,
    mean_rank: FloatArray,
    pair_query: IntArray,
    n: int = 1,
    *,
    prefer_query: int | None = None,
    locality: float = 0.5,
    stored: FloatArray | None = None,
) -> IntArray:
    """The ``n`` most useful available pairs, preferring pairs of one query.

    An assessor keeps one query in mind, so after the best pair (or, with
    ``prefer_query``, the best pair of that query if its weight is at least
    ``locality`` times the best weight overall) the batch continues with pairs
    of the same query while their weight stays at least ``locality`` times the
    weight of the best remaining pair; then the best remaining pairs fill it.
    Work is linear in the number of pairs: only the top of the list is sorted. ``stored``
    are the weights the locality rule compares, as a plan stores them (default:
    ``weights``; :meth:`mtcjudge.mtc.engine.MTCEngine.stored_weights`).

    Returns
    -------
    ndarray of int, shape (m,) with m = min(n, number of available pairs)
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, found {n}")
    if not 0.0 <= locality <= 1.0:
        raise ValueError(f"locality must be in [0, 1], found {locality}")
    candidates = np.flatnonzero(available)
    if candidates.size == 0:
        return candidates
    # n + 1 so the best pair left after taking the same-query ones is known
    ranked = top_candidates(weights, candidates, var, mean_rank, n + 1)
    if n == 1 and prefer_query is None:
        return ranked[:1]
    ref = weights if stored is None else stored
    best_w = float(ref[ranked[0]])
    query = int(pair_query[ranked[0]])
    if prefer_query is not None and prefer_query != query:
        own = candidates[pair_query[candidates] == prefer_query]
        if own.size:
            best_own = top_candidates(weights, own, var, mean_rank, 1)[0]
            if ref[best_own] >= locality * best_w:
                query = prefer_query
    same = candidates[pair_query[candidates] == query]
    same = top_candidates(weights, same, var, mean_rank, n)
    chosen: list[int] = []
    taken: set[int] = set()
    for p in same:
        if len(chosen) >= n:
            break
        remaining = [int(r) for r in ranked if int(r) not in taken]
        best_remaining = float(ref[remaining[0]]) if remaining else 0.0
        if chosen and ref[p] < locality * best_remaining:
            break
        chosen.append(int(p))
        taken.add(int(p))
    for p in ranked:
        if len(chosen) >= n:
            break
        if int(p) not in taken:
            chosen.append(int(p))
            taken.add(int(p))
    return np.array(chosen, dtype=np.intp)
