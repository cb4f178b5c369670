"""Per-query measures of one system's ranked lists against qrels, on dense arrays.

Pure numpy, like :mod:`mtcjudge.mtc`: the service turns ids into arrays, this module computes. The
graded measures reuse the engine's discounts and normaliser (:mod:`mtcjudge.mtc.measures`), so
``cg``, ``dcg``, ``ndcg`` and ``rbp`` are the project's measures (docs/method.md §7.2) with
the qrels as complete judgments; the classic measures follow trec_eval on a relevance
threshold. Unjudged documents have gain 0 and are never relevant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.measures import measure_normaliser, rank_discount
from mtcjudge.mtc.scales import Scale

__all__ = ["RBP_PERSISTENCE", "Lists", "classic_measures", "graded_measures", "judged_share"]

FloatArray = NDArray[np.float64]
_Item = TypeVar("_Item", bound=np.generic)
#: the project's RBP persistence (app/mtcjudge/mtc/measures.py): five expected documents
RBP_PERSISTENCE = 0.8


@dataclass(frozen=True)
class Lists:
    """One system's lists on the evaluated queries, padded to a common depth.

    Attributes
    ----------
    gains : ndarray of shape (n_queries, depth)
        Judgment of the document at each rank; 0 where unjudged or past the list's end.
    judged : ndarray of bool, shape (n_queries, depth)
        Whether a document is there and judged.
    retrieved : ndarray of bool, shape (n_queries, depth)
        Whether a document is there (False past the list's end, and for a query the system
        did not answer).
    """

    gains: FloatArray
    judged: NDArray[np.bool_]
    retrieved: NDArray[np.bool_]


def _top(values: NDArray[_Item], k: int) -> NDArray[_Item]:
    """The first k columns of (n_queries, depth), padded with zeros when depth < k."""
    if values.shape[1] >= k:
        return values[:, :k]
    padded = np.zeros((values.shape[0], k), dtype=values.dtype)
    padded[:, : values.shape[1]] = values
    return padded


def _ratio(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    """numerator / denominator, 0 where the denominator is 0 (as trec_eval)."""
    valid = denominator > 0
    return np.where(valid, numerator / np.where(valid, denominator, 1.0), 0.0)


def graded_measures(lists: Lists, ideal: FloatArray, k: int, scale: Scale) -> dict[str, FloatArray]:
    """``cg@k``, ``dcg@k``, ``ndcg@k`` and ``rbp@k`` for every query.

    Parameters
    ----------
    lists : Lists
    ideal : ndarray of shape (n_queries, k)
        The query's k largest judgments in decreasing order (zeros when it has fewer): the
        ideal ordering of ``ndcg`` and ``rbp``.
    k : int
    scale : Scale

    Returns
    -------
    dict of str to ndarray of shape (n_queries,)
        ``cg@k`` = sum r_i / (k max); ``dcg@k`` = sum r_i / log2(i + 1) over the same sum of
        an all-maximum list (MIREX nDCG@k); ``ndcg@k`` = that DCG over the ideal's (trec_eval
        nDCG@k); ``rbp@k`` = sum r_i 0.8^(i-1) over the ideal's. Ratios with a zero ideal
        are 0.
    """
    gains = _top(lists.gains, k)
    ranks = np.arange(1, k + 1)
    log_discount = rank_discount("dcg", ranks)
    geometric = rank_discount("rbp", ranks, RBP_PERSISTENCE)
    dcg = gains @ log_discount
    return {
        "cg@k": gains.sum(axis=1) / measure_normaliser("cg", k, scale),
        "dcg@k": dcg / measure_normaliser("dcg", k, scale),
        "ndcg@k": _ratio(dcg, ideal @ log_discount),
        "rbp@k": _ratio(gains @ geometric, ideal @ geometric),
    }


def classic_measures(
    lists: Lists, n_relevant: NDArray[np.int64], k: int, threshold: float
) -> dict[str, FloatArray]:
    """trec_eval's P@k, recall@k, recall, AP and RR with "relevant" = judged >= threshold.

    Parameters
    ----------
    lists : Lists
    n_relevant : ndarray of int, shape (n_queries,)
        Relevant documents of each query in the qrels (retrieved or not).
    k : int
    threshold : float
        Smallest relevant judgment, > 0.

    Returns
    -------
    dict of str to ndarray of shape (n_queries,)
        ``p@k`` (relevant in the top k / k), ``recall@k`` (relevant in the top k / relevant
        in the qrels), ``recall`` (the same over the whole list), ``ap`` (sum over the ranks
        i of relevant documents of precision@i, divided by the relevant in the qrels) and
        ``rr`` (1 / rank of the first relevant document); 0 for a query without relevant
        documents.
    """
    relevant = lists.judged & (lists.gains >= threshold)
    in_top = _top(relevant, k).sum(axis=1).astype(np.float64)
    total = n_relevant.astype(np.float64)
    depth = relevant.shape[1]
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    precision_at_rank = np.cumsum(relevant, axis=1) / ranks
    first = np.where(relevant.any(axis=1), relevant.argmax(axis=1) + 1, 0)
    return {
        "p@k": in_top / k,
        "recall@k": _ratio(in_top, total),
        "recall": _ratio(relevant.sum(axis=1).astype(np.float64), total),
        "ap": _ratio((precision_at_rank * relevant).sum(axis=1), total),
        "rr": _ratio(np.ones_like(total), first.astype(np.float64)),
    }


def judged_share(lists: Lists, k: int) -> FloatArray:
    """Judged documents of the top k over retrieved documents of the top k (0 if none):
    ir_measures ``Judged@k``; how far the qrels cover the lists, per query (n_queries,)."""
    judged = _top(lists.judged, k).sum(axis=1).astype(np.float64)
    retrieved = _top(lists.retrieved, k).sum(axis=1).astype(np.float64)
    return _ratio(judged, retrieved)
