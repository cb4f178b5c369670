"""Average Dynamic Recall (ADR) in its three forms.

* :func:`adr_partial_order` - the original measure of Typke, Veltkamp and Wiering [TVW],
  for a ground truth given as ordered groups of items (docs/method.md §7.2).
* :func:`adr_graded` - its extension to a fixed relevance scale, ADR@k of [T] (2.17).
* :func:`adr_user` - the user-oriented ADR@k of [T] (3.9), which only counts documents
  of maximum relevance.

References
----------
[TVW] R. Typke, R. C. Veltkamp and F. Wiering, "A measure for evaluating retrieval
techniques based on partially ordered ground truth lists".
[T] J. Urbano, *Evaluation in Audio Music Similarity*, PhD thesis, UC3M, 2013.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt
from numpy.typing import NDArray

from mtcjudge.mtc._validation import check_int as _check_int

__all__ = ["adr_graded", "adr_partial_order", "adr_user"]


def _relevance_vector(name: str, values: npt.ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, found shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, found NaN or inf")
    if arr.size and arr.min() < 0.0:
        raise ValueError(f"{name} must be >= 0 (relevance levels), found {arr.min()}")
    return arr


def adr_partial_order(
    groups: Sequence[Sequence[Hashable]],
    result: Sequence[Hashable],
    *,
    k: int | None = None,
) -> float:
    """Original Average Dynamic Recall of [TVW] for a partially ordered ground truth.

    The ground truth is g ordered groups G^1..G^g (order within a group unknown) with
    n = sum_j |G^j| items. For rank i let c be the group holding the i-th ground-truth
    item; the dynamic set of relevant items is G^1 u ... u G^c and::

        r_i = #{R_w : w <= i and R_w in G^1 u ... u G^c} / i,     ADR = (1/n) sum_{i=1..n} r_i

    Parameters
    ----------
    groups : sequence of sequences of hashable
        Ground-truth groups, most similar first; non-empty, and no item in two groups.
    result : sequence of hashable
        Retrieved item ids, best first, without repeats. Items outside the ground truth
        are false positives. A result shorter than the cutoff scores 0 for the missing
        ranks.
    k : int, optional
        Cutoff (>= 1), default n as in [TVW]. Beyond n the dynamic set is the whole
        ground truth [impl. choice].

    Returns
    -------
    float
        ADR in [0, 1].

    Examples
    --------
    The examples of [TVW] (docs/method.md §7.2):

    >>> round(adr_partial_order([(1, 2), (3, 4, 5)], [2, 3, 1, 5, 7, 8, 9, 4]), 4)
    0.86
    >>> round(adr_partial_order([(1, 2), (3, 4, 5)], [2, 10, 3, 1, 5, 7, 8, 9, 4]), 4)
    0.7433
    """
    if isinstance(groups, str | bytes) or len(groups) == 0:
        raise ValueError(f"groups must be a non-empty sequence of groups, found {groups!r}")
    group_of: dict[Hashable, int] = {}
    sizes: list[int] = []
    for index, group in enumerate(groups):
        if isinstance(group, str | bytes) or len(group) == 0:
            raise ValueError(f"each group must be a non-empty sequence of ids, found {group!r}")
        for item in group:
            if item in group_of:
                raise ValueError(f"each item must be in one group only, found {item!r} twice")
            group_of[item] = index
        sizes.append(len(group))
    if isinstance(result, str | bytes):
        raise ValueError(f"result must be a sequence of ids, found {result!r}")
    if len(set(result)) != len(result):
        raise ValueError("result must not repeat an item, found duplicates")
    n_items = len(group_of)
    cutoff = n_items if k is None else _check_int("k", k, 1)

    # Group of the i-th ground-truth item (i = 1..cutoff); beyond n, the last group.
    group_of_rank = np.repeat(np.arange(len(sizes)), sizes)
    dynamic_group = np.full(cutoff, len(sizes) - 1)
    dynamic_group[: min(cutoff, n_items)] = group_of_rank[:cutoff]
    # Group of each retrieved item (-1 for false positives); missing ranks never count.
    retrieved_group = np.full(cutoff, -1)
    for rank, item in enumerate(result[:cutoff]):
        retrieved_group[rank] = group_of.get(item, -1)
    in_dynamic_set = (retrieved_group[np.newaxis, :] >= 0) & (
        retrieved_group[np.newaxis, :] <= dynamic_group[:, np.newaxis]
    )
    return _adr_kernel(in_dynamic_set)


def _adr_kernel(in_dynamic_set: NDArray[np.bool_]) -> float:
    """Mean over ranks i of #{w <= i : in_dynamic_set[i, w]} / i.

    ``in_dynamic_set`` has shape (k, k): row i says whether the item retrieved at rank w
    belongs to the dynamic set of relevant items at rank i (both 0-based).
    """
    cutoff = in_dynamic_set.shape[0]
    found = np.count_nonzero(in_dynamic_set & np.tri(cutoff, dtype=bool), axis=1)
    return float(np.mean(found / np.arange(1, cutoff + 1)))


def adr_graded(
    ranking_relevance: npt.ArrayLike,
    pool_relevance: npt.ArrayLike,
    k: int,
) -> float:
    """Graded Average Dynamic Recall ADR@k of [T] (2.17).

    ::

        ADR@k = (1/k) sum_{i=1..k} |{d : r_d >= r_{I_i}} n {A_1..A_i}| / i

    where I is the ideal ranking of the judged pool (relevance descending). Once i runs
    past the judged documents, r_{I_i} = 0 and the dynamic set is every document, so the
    term is 1 for a full ranking: [T] recommends k = |R^{>0}|.

    Parameters
    ----------
    ranking_relevance : array_like of float, shape (n_retrieved,)
        Relevance of the system's documents, best first; unjudged documents are 0.
        Only the first k are used; a ranking shorter than k scores 0 at the missing
        ranks.
    pool_relevance : array_like of float, shape (n_judged,)
        Relevance of every judged document of the query (any order). Must contain every
        positive relevance of the ranking (the ranked documents are pool documents).
    k : int
        Cutoff, >= 1.

    Returns
    -------
    float
        ADR@k in [0, 1].

    Examples
    --------
    docs/method.md §7.2: a=b=2, c=d=e=1, f=0 and the ranking (b, c, x, a, d), x unjudged,
    reproduce the 0.7433 of [TVW].

    >>> round(adr_graded([2, 1, 0, 2, 1], [2, 2, 1, 1, 1, 0], k=5), 4)
    0.7433
    """
    ranking = _relevance_vector("ranking_relevance", ranking_relevance)
    pool = _relevance_vector("pool_relevance", pool_relevance)
    k = _check_int("k", k, 1)
    levels, ranking_counts = np.unique(ranking[ranking > 0], return_counts=True)
    pool_counts = np.array([np.count_nonzero(pool == level) for level in levels], dtype=int)
    short = ranking_counts > pool_counts
    if np.any(short):
        level = levels[short][0]
        raise ValueError(
            f"pool_relevance must hold every judged document of the ranking: the ranking "
            f"has {ranking_counts[short][0]} documents of relevance {level:g}, "
            f"the pool {pool_counts[short][0]}"
        )
    return _adr_graded_kernel(ranking, pool, k)


def _adr_graded_kernel(ranking: NDArray[np.float64], pool: NDArray[np.float64], k: int) -> float:
    """ADR@k of (n_retrieved,) ranking relevance against (n_judged,) pool relevance."""
    ideal = np.zeros(k)
    best = np.sort(pool)[::-1][:k]
    ideal[: best.size] = best
    retrieved = np.full(k, -np.inf)
    retrieved[: min(k, ranking.size)] = ranking[:k]
    return _adr_kernel(retrieved[np.newaxis, :] >= ideal[:, np.newaxis])


def adr_user(ranking_relevance: npt.ArrayLike, k: int, lmax: float) -> float:
    """User-oriented ADR@k of [T] (3.9): only documents of relevance lmax count.

    ::

        ADR@k = (1/k) sum_{i=1..k} (1/i) sum_{j=1..i} 1(r_{A_j} = n_L - 1)

    It equals :func:`adr_graded` against an ideal of k documents at lmax.

    Parameters
    ----------
    ranking_relevance : array_like of float, shape (n_retrieved,)
        Relevance of the system's documents, best first, in [0, lmax]; only the first
        k are used, missing ranks score 0.
    k : int
        Cutoff, >= 1.
    lmax : float
        Maximum relevance n_L - 1 of the scale (Broad 2), > 0.

    Returns
    -------
    float
        ADR@k in [0, 1].

    Examples
    --------
    Broad list (2, 0, 1, 2, 1) of docs/method.md §7.3:

    >>> round(adr_user([2, 0, 1, 2, 1], k=5, lmax=2), 4)
    0.5467
    """
    ranking = _relevance_vector("ranking_relevance", ranking_relevance)
    k = _check_int("k", k, 1)
    lmax = float(lmax)
    if not (np.isfinite(lmax) and lmax > 0.0):
        raise ValueError(f"lmax must be finite and > 0, found {lmax}")
    if ranking.size and ranking.max() > lmax:
        raise ValueError(f"ranking_relevance must be <= lmax={lmax:g}, found {ranking.max():g}")
    return _adr_graded_kernel(ranking, np.full(k, lmax), k)
