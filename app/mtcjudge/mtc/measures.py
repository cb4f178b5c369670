"""Probabilistic effectiveness measures and confidence (docs/method.md §3, [T] 8.1).

Every measure is written as a ratio ``X / Y`` per query, with
``X = sum_d c_A(d) R_d`` linear in the relevance random variables:

* ``cg`` and ``dcg`` have a constant denominator ``Y = eta`` ((8.1)-(8.4));
* ``ndcg`` and ``rbp`` divide by the ideal ``Y = sum_i R_{I_i} disc(i)`` over the
  top k of the query's pool by E[R] (A14), with the delta method (8.5)-(8.8).

The two nDCGs, named so that nobody mixes them up (on the MIREX 2011 FINE lists the second
is 1.19-1.22 times the first, per system; docs/evaluate.md):

* ``dcg`` is **MIREX nDCG@k**, the nDCG of MIREX and of the 2012/2013 MTC papers: DCG@k
  (linear gain, ``1 / log2(i + 1)`` discount) divided by the DCG of an *all-maximum* list,
  ``eta = l_max * sum_{i=1..k} 1 / log2(i + 1)``;
* ``ndcg`` is **trec_eval nDCG@k** (``ndcg_cut.k``; ir_measures ``nDCG@k``, ranx
  ``ndcg@k``): the same DCG@k divided by the DCG of the *ideal ordering* of the query's
  judged pool (here of the pool by E[R] while judgments are missing).

Differences between two systems iterate over all documents with the coefficient
``c_A(d) - c_B(d)`` ((8.11)-(8.16)), so a document shared at the same rank
contributes nothing. Query averages and t-based confidence follow (8.17)-(8.20).

Every measure is normalised to [0, 1] (:data:`MEASURE_RANGE`), and so is every estimate of it:
a system's expected gain on a query never exceeds the expected ideal's, because the ideal is
the best ordering of the same expectations (docs/method.md §3.1); :func:`finish` takes off the
last bits of rounding and intersects the intervals with the range (§3.4). A pair whose
difference is known to be exactly 0 is *tied* (:attr:`Evaluation.tied`): it shares its rank
(:meth:`Evaluation.ranks`) and its confidence is that of the tie (§3.5).

This module is the reference, full-recompute implementation; the incremental
engine in :mod:`mtcjudge.mtc.engine` maintains the same quantities judgment by judgment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse
from scipy.special import ndtr, ndtri, stdtr, stdtrit

from mtcjudge.mtc.collection import Collection
from mtcjudge.mtc.scales import Scale

__all__ = [
    "MEASURES",
    "MEASURE_RANGE",
    "MEASURE_TITLES",
    "TIE_TOLERANCE",
    "Evaluation",
    "confidence_from_moments",
    "entry_coefficients",
    "evaluate",
    "ideal_moments",
    "measure_normaliser",
    "per_query_scores",
    "pool_ideals",
    "query_scores",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]
MEASURES = ("cg", "dcg", "ndcg", "rbp")
#: what people call each measure, for labels (``MEASURE_TITLES["dcg"] + "@5"``): the two nDCGs
#: by whose normalisation they use, never a bare "nDCG" or "DCG"
MEASURE_TITLES = {"cg": "CG", "dcg": "MIREX nDCG", "ndcg": "trec_eval nDCG", "rbp": "RBP"}
RATIO_MEASURES = ("ndcg", "rbp")
#: every measure is normalised: its value, its estimates and their intervals lie in this range
MEASURE_RANGE = (0.0, 1.0)
#: two scores closer than this are a tie (sums of the same values in another order differ by
#: a few units in the last place; distinct scores of a collection differ by far more); an
#: estimated tie also needs a difference without variance (:attr:`Evaluation.tied`)
TIE_TOLERANCE = 1e-12


def _check_measure(measure: str) -> None:
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}: expected one of {MEASURES}")


def rank_discount(measure: str, ranks: NDArray[np.intp], rbp_p: float = 0.8) -> FloatArray:
    """Discount of each 1-based rank: CG 1, (n)DCG 1/log2(i+1), RBP p^(i-1) (3.0)."""
    _check_measure(measure)
    r = np.asarray(ranks, dtype=np.float64)
    if measure == "cg":
        return np.ones_like(r)
    if measure in ("dcg", "ndcg"):
        return 1.0 / np.log2(r + 1.0)
    return np.power(rbp_p, r - 1.0)


def entry_coefficients(collection: Collection, measure: str, rbp_p: float = 0.8) -> FloatArray:
    """``c_A(d; m)`` of every entry (retrieved result) of the collection."""
    return rank_discount(measure, collection.entry_rank, rbp_p)


def measure_normaliser(measure: str, k: int, scale: Scale, rbp_p: float = 0.8) -> float:
    """The constant denominator eta of CG_l@k and DCG_l@k (3.1): ``l_max`` times the sum of
    the discounts of ranks 1..k, the all-maximum list of MIREX nDCG@k; NaN for ratio
    measures (``ndcg``, ``rbp``: normalised by the ideal ordering instead)."""
    _check_measure(measure)
    if measure in RATIO_MEASURES:
        return float("nan")
    return float(scale.lmax * rank_discount(measure, np.arange(1, k + 1), rbp_p).sum())


def ideal_moments(
    mean: FloatArray, var: FloatArray, k: int, discount: FloatArray
) -> tuple[float, float]:
    """E and Var of the ideal denominator Y of one query (3.1, A14).

    The ideal list is the k pool pairs of largest E[R] (ties: lower index first).
    ``discount`` holds the discounts of ranks 1..k.
    """
    order = np.argsort(-mean, kind="stable")[:k]
    d = discount[: order.shape[0]]
    return float(mean[order] @ d), float(var[order] @ d**2)


def pool_ideals(
    collection: Collection, values: FloatArray, var: FloatArray, discount: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """:func:`ideal_moments` of every query at once: E and Var of the ideal denominator when
    each pool pair is worth ``values`` (the k largest of each query's pool, ties: lower index
    first) with variance ``var``.

    Returns
    -------
    ey, vy : ndarray of shape (n_queries,)
    """
    pq = collection.pair_query
    if values.size == 0:
        return np.zeros(collection.n_queries), np.zeros(collection.n_queries)
    # by query, then value descending (one sort key: the queries' ranges of keys do not
    # overlap), equal values in index order
    width = float(values.max() - values.min()) + 1.0
    order = np.argsort(pq * width - values, kind="stable")
    position = np.arange(order.shape[0]) - collection.query_start[pq[order]]
    keep = position < min(collection.k, discount.shape[0])
    chosen, d = order[keep], discount[position[keep]]
    nq = collection.n_queries
    ey = np.bincount(pq[chosen], weights=values[chosen] * d, minlength=nq)
    vy = np.bincount(pq[chosen], weights=var[chosen] * d**2, minlength=nq)
    return ey.astype(np.float64), vy.astype(np.float64)


def _query_denominators(
    collection: Collection,
    measure: str,
    scale: Scale,
    mean: FloatArray,
    var: FloatArray,
    rbp_p: float,
) -> tuple[FloatArray, FloatArray]:
    """E[Y_q] and Var[Y_q] of every query, shape (n_queries,) each."""
    nq = collection.n_queries
    if measure not in RATIO_MEASURES:
        eta = measure_normaliser(measure, collection.k, scale, rbp_p)
        return np.full(nq, eta), np.zeros(nq)
    disc = rank_discount(measure, np.arange(1, collection.k + 1), rbp_p)
    ey = np.empty(nq)
    vy = np.empty(nq)
    for q in range(nq):
        sl = collection.pairs_of_query(q)
        ey[q], vy[q] = ideal_moments(mean[sl], var[sl], collection.k, disc)
    return ey, vy


def confidence_from_moments(
    diff_mean: ArrayLike, diff_var: ArrayLike, n_queries: int, distribution: str = "t"
) -> FloatArray:
    """``C_AB = max(P, 1 - P)``, ``P = F(-E/sd)`` ((8.20), A15).

    ``F`` is Student's t with ``n_queries - 1`` degrees of freedom (``"t"``) or the
    standard normal (``"normal"``, [U12]); with fewer than 2 queries the normal is
    used. A zero variance means the difference is known exactly: C = 1.
    """
    if distribution not in ("t", "normal"):
        raise ValueError(f"distribution must be 't' or 'normal', found {distribution!r}")
    e = np.asarray(diff_mean, dtype=np.float64)
    v = np.asarray(diff_var, dtype=np.float64)
    known = v <= 0.0
    sd = np.sqrt(np.where(known, 1.0, v))
    z = -np.abs(e) / sd
    tail = stdtr(n_queries - 1, z) if distribution == "t" and n_queries >= 2 else ndtr(z)
    return np.where(known, 1.0, 1.0 - tail)


def t_quantile(level: float, n_queries: int, distribution: str = "t") -> float:
    """Two-sided critical value for a ``level`` interval (t_{1-a, n_Q-1}; 12.9)."""
    upper = 0.5 + level / 2.0
    if distribution == "t" and n_queries >= 2:
        return float(stdtrit(n_queries - 1, upper))
    return float(ndtri(upper))


@dataclass(frozen=True)
class Evaluation:
    """Estimated effectiveness of every system and every pairwise difference.

    Attributes
    ----------
    mean, var : ndarray of shape (n_systems,)
        E and Var of the query-averaged score ((8.17)-(8.18)).
    ci_low, ci_high : ndarray of shape (n_systems,)
        ``ci_level`` confidence interval (8.19).
    diff_mean, diff_var : ndarray of shape (n_systems, n_systems)
        E and Var of ``mean_A - mean_B``; antisymmetric / symmetric, zero diagonal.
    pair_confidence : ndarray of shape (n_systems, n_systems)
        ``C_AB`` (8.20); 1 on the diagonal. For a tied pair (:attr:`tied`) it is the
        confidence that the two are equal, which is known: 1.
    ranking_confidence : float
        Mean of C_AB over the unordered pairs: the confidence that each pair is ordered (or,
        tied, equal) as the ranking says (docs/method.md §3.5).
    """

    mean: FloatArray
    var: FloatArray
    ci_low: FloatArray
    ci_high: FloatArray
    diff_mean: FloatArray
    diff_var: FloatArray
    pair_confidence: FloatArray
    ranking_confidence: float

    @property
    def n_systems(self) -> int:
        return int(self.mean.shape[0])

    @property
    def tied(self) -> NDArray[np.bool_]:
        """Pairs whose difference is known to be exactly 0, shape (n_systems, n_systems):
        zero variance and an expected difference within :data:`TIE_TOLERANCE` (systems with
        the same run, or equal scores once every pair they differ on is judged). False on
        the diagonal."""
        tied = (self.diff_var <= 0.0) & (np.abs(self.diff_mean) <= TIE_TOLERANCE)
        np.fill_diagonal(tied, False)
        return np.asarray(tied, dtype=np.bool_)

    @property
    def tied_systems(self) -> NDArray[np.bool_]:
        """Systems tied with at least one other, shape (n_systems,)."""
        return np.asarray(self.tied.any(axis=1), dtype=np.bool_)

    def _tie_groups(self) -> IntArray:
        """Per system, the label of its group of tied systems (connected through ties)."""
        n = self.n_systems
        label = np.arange(n)
        a, b = np.nonzero(np.triu(self.tied, 1))
        changed = a.size > 0
        while changed:  # propagate the smallest label along the ties (few systems)
            low = np.minimum(label[a], label[b])
            changed = bool(np.any(low != label[a]) or np.any(low != label[b]))
            np.minimum.at(label, a, low)
            np.minimum.at(label, b, low)
        return label

    def ranking(self) -> NDArray[np.intp]:
        """System indices from best to worst by expected score; tied systems next to each
        other (a group of ties where its best member would be, in index order)."""
        label = self._tie_groups()
        best = np.full(self.n_systems, -np.inf)
        np.maximum.at(best, label, self.mean)
        order = np.lexsort((np.arange(self.n_systems), label, -best[label]))
        return np.asarray(order, dtype=np.intp)

    def ranks(self) -> IntArray:
        """Every system's rank, 1 = best: tied systems share the rank of the first of them and
        the next rank skips (1, 1, 3), the standard competition ranking."""
        order = self.ranking()
        label = self._tie_groups()[order]
        position = np.arange(1, order.shape[0] + 1)
        new_group = np.concatenate(([True], label[1:] != label[:-1])) if order.size else label
        shared = np.maximum.accumulate(np.where(new_group, position, 0))
        ranks = np.empty(order.shape[0], dtype=np.intp)
        ranks[order] = shared
        return ranks


def _check_moments(collection: Collection, mean: FloatArray, var: FloatArray) -> None:
    shape = (collection.n_pairs,)
    if np.shape(mean) != shape or np.shape(var) != shape:
        raise ValueError(
            f"mean and var must have shape {shape} (one value per pool pair), found "
            f"{np.shape(mean)} and {np.shape(var)}"
        )
    if np.any(~np.isfinite(mean)) or np.any(~np.isfinite(var)) or np.any(np.asarray(var) < 0):
        raise ValueError("mean and var must be finite, and var non-negative")


def query_scores(
    collection: Collection,
    measure: str,
    scale: Scale,
    mean: FloatArray,
    var: FloatArray,
    rbp_p: float = 0.8,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """Per-query absolute scores and pairwise differences.

    Returns
    -------
    score_mean, score_var : ndarray of shape (n_systems, n_queries)
    diff_mean, diff_var : ndarray of shape (n_systems, n_systems, n_queries)
        E and Var of ``Lambda_A,q - Lambda_B,q`` iterating over all documents.
    """
    _check_measure(measure)
    _check_moments(collection, mean, var)
    ns, nq = collection.n_systems, collection.n_queries
    coef = np.zeros((ns, collection.n_pairs))
    coef[collection.entry_system, collection.entry_pair] = entry_coefficients(
        collection, measure, rbp_p
    )
    ey, vy = _query_denominators(collection, measure, scale, mean, var, rbp_p)
    sm = np.empty((ns, nq))
    sv = np.empty((ns, nq))
    dm = np.empty((ns, ns, nq))
    dv = np.empty((ns, ns, nq))
    for q in range(nq):
        sl = collection.pairs_of_query(q)
        c = coef[:, sl]
        ex = c @ mean[sl]
        vx = c**2 @ var[sl]
        delta = c[:, None, :] - c[None, :, :]
        dex = delta @ mean[sl]
        dvx = delta**2 @ var[sl]
        sm[:, q], sv[:, q] = _ratio(ex, vx, ey[q], vy[q])
        dm[:, :, q], dv[:, :, q] = _ratio(dex, dvx, ey[q], vy[q])
    return sm, sv, dm, dv


def _ratio(ex: FloatArray, vx: FloatArray, ey: float, vy: float) -> tuple[FloatArray, FloatArray]:
    """Delta-method E and Var of X/Y with Cov = 0 ((8.5)-(8.6)); 0/0 when E[Y] = 0 (A14)."""
    if ey <= 0.0:
        return np.zeros_like(ex), np.zeros_like(vx)
    return ex / ey, vx / ey**2 + ex**2 * vy / ey**4


def evaluate(
    collection: Collection,
    mean: FloatArray,
    var: FloatArray,
    measure: str,
    scale: Scale,
    *,
    rbp_p: float = 0.8,
    distribution: str = "t",
    ci_level: float = 0.95,
) -> Evaluation:
    """Full recompute of every system's score distribution and every pair's confidence.

    Parameters
    ----------
    collection : Collection
    mean, var : ndarray of shape (n_pairs,)
        E[R] and Var[R] of every pool pair (judged pairs: value and 0).
    measure : {"cg", "dcg", "ndcg", "rbp"}
    scale : Scale
    rbp_p : float
        RBP persistence (0.8: five expected documents, [T] 3.1.1).
    distribution : {"t", "normal"}
    ci_level : float

    Notes
    -----
    Work is O(n_entries + co-retrieved entry pairs + n_systems^2 n_queries): the
    variance of every difference is ``(T_AA + T_BB - 2 T_AB) / n_Q^2`` with
    ``T = sum_q [C_q diag(V) C_q^T / E[Y_q]^2 + E[X_q] E[X_q]^T Var[Y_q] / E[Y_q]^4]``.
    """
    _check_measure(measure)
    _check_moments(collection, mean, var)
    if not 0.0 < ci_level < 1.0:
        raise ValueError(f"ci_level must be in (0, 1), found {ci_level}")
    ey, vy = _query_denominators(collection, measure, scale, mean, var, rbp_p)
    coef = entry_coefficients(collection, measure, rbp_p)
    _, per_system, t_mat = accumulate(collection, coef, mean, var, ey, vy)
    nq = collection.n_queries
    return finish(per_system / nq, t_mat / nq**2, nq, distribution, ci_level)


def per_query_scores(
    collection: Collection, values: FloatArray, measure: str, scale: Scale, rbp_p: float = 0.8
) -> FloatArray:
    """Scores of every system on every query under complete judgments ``values``.

    Returns
    -------
    ndarray of shape (n_queries, n_systems)
        The matrix the MIREX analysis (Friedman + Tukey HSD, docs/method.md §6) works on.
    """
    _check_measure(measure)
    zeros = np.zeros_like(values)
    _check_moments(collection, values, zeros)
    ey, vy = _query_denominators(collection, measure, scale, values, zeros, rbp_p)
    coef = entry_coefficients(collection, measure, rbp_p)
    ex, _, _ = accumulate(collection, coef, values, zeros, ey, vy)
    return (ex * inverse_denominators(ey)).T


def inverse_denominators(ey: FloatArray) -> FloatArray:
    """1/E[Y_q], with 0 where E[Y_q] = 0 (the score is then defined as 0, A14)."""
    valid = ey > 0
    return np.where(valid, 1.0 / np.where(valid, ey, 1.0), 0.0)


def accumulate(
    collection: Collection,
    coef: FloatArray,
    mean: FloatArray,
    var: FloatArray,
    ey: FloatArray,
    vy: FloatArray,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Sufficient statistics of every score distribution, from scratch.

    Returns
    -------
    ex : ndarray of shape (n_systems, n_queries)
        E[X_A,q], the unnormalised expected score of A on q.
    score_sum : ndarray of shape (n_systems,)
        ``sum_q E[X_A,q] / E[Y_q]`` (n_Q times the expected mean score).
    t_mat : ndarray of shape (n_systems, n_systems)
        ``T = sum_q [C_q diag(V) C_q^T / E[Y_q]^2 + E[X_q] E[X_q]^T Var[Y_q] / E[Y_q]^4]``;
        ``Var[mean_A - mean_B] = (T_AA + T_BB - 2 T_AB) / n_Q^2``.
    """
    ns, nq = collection.n_systems, collection.n_queries
    pq = collection.pair_query[collection.entry_pair]
    inv_ey = inverse_denominators(ey)
    ex = np.zeros((ns, nq))
    np.add.at(ex, (collection.entry_system, pq), coef * mean[collection.entry_pair])
    scaled = sparse.csr_matrix(
        (coef * inv_ey[pq], (collection.entry_system, collection.entry_pair)),
        shape=(ns, collection.n_pairs),
    )
    t_mat = np.asarray((scaled @ sparse.diags(var) @ scaled.T).todense())
    t_mat += (ex * (vy * inv_ey**4)) @ ex.T
    return ex, (ex * inv_ey).sum(axis=1), t_mat


def finish(
    per_system: FloatArray,
    cov: FloatArray,
    n_queries: int,
    distribution: str,
    ci_level: float,
    bounds: tuple[float, float] = MEASURE_RANGE,
) -> Evaluation:
    """Assemble an Evaluation from the means and the score covariance-like matrix.

    The means are in ``bounds`` by construction (docs/method.md §3.1); they are clipped to it
    only to take off rounding (the incremental sums drift by a few ulps). The interval is
    ``mean ± t sd`` intersected with ``bounds`` (§3.4): the true score is always in the
    range, so the intersection covers it whenever the unclipped interval does."""
    low, high = bounds
    per_system = np.clip(per_system, low, high)
    var = np.maximum(np.diag(cov).copy(), 0.0)
    diff_mean = per_system[:, None] - per_system[None, :]
    diff_var = var[:, None] + var[None, :] - 2.0 * cov
    # numerical noise must not turn an exactly known difference into an uncertain one
    tol = 1e-12 * max(float(var.max(initial=0.0)), 1e-300)
    diff_var = np.where(diff_var <= tol, 0.0, diff_var)
    np.fill_diagonal(diff_var, 0.0)
    conf = confidence_from_moments(diff_mean, diff_var, n_queries, distribution)
    np.fill_diagonal(conf, 1.0)
    ns = per_system.shape[0]
    iu = np.triu_indices(ns, 1)
    half = t_quantile(ci_level, n_queries, distribution) * np.sqrt(var)
    return Evaluation(
        mean=per_system,
        var=var,
        ci_low=np.maximum(per_system - half, low),
        ci_high=np.minimum(per_system + half, high),
        diff_mean=diff_mean,
        diff_var=diff_var,
        pair_confidence=conf,
        ranking_confidence=float(conf[iu].mean()) if iu[0].size else 1.0,
    )
