"""Relevance estimators: E[R] and Var[R] of every unjudged pool pair (docs/method.md §2).

Three families are offered:

* ``uniform``: the fixed uniform prior of [U12] (2.1);
* ``historical``: the fixed MIREX prior of [T] 7.2.1 (2.2);
* ``ordinal``: the proportional-odds models of [T] 7.2.2 with the Table A.1
  parameters: ``M_out`` on output-based features (fSYS, OV, fART, sGEN, fGEN and
  interactions) and ``M_jud`` on judgment-based features (fSYS, aSYS, aART), chosen
  per pair by the estimator policy of 2.5.

Judged pairs always have E = r and Var = 0 (7.1, 7.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.scales import Scale

__all__ = [
    "ESTIMATOR_KINDS",
    "M_JUD_FEATURES",
    "M_OUT_FEATURES",
    "SOURCE_JUDGED",
    "SOURCE_M_JUD",
    "SOURCE_M_OUT",
    "SOURCE_PRIOR",
    "TABLE_A1",
    "OrdinalModel",
    "OutputFeatures",
    "RelevanceModel",
    "judgment_features",
    "output_features",
]

FloatArray = NDArray[np.float64]
ESTIMATOR_KINDS = ("uniform", "historical", "ordinal")
M_OUT_FEATURES = ("fSYS", "OV", "fSYS:OV", "fART", "sGEN", "fGEN", "sGEN:fGEN")
M_JUD_FEATURES = ("fSYS", "aSYS", "aART")

# where an estimate came from
SOURCE_JUDGED, SOURCE_M_JUD, SOURCE_M_OUT, SOURCE_PRIOR = 0, 1, 2, 3
N_SOURCES = 4


@dataclass(frozen=True)
class OrdinalModel:
    """Proportional-odds model ``logit P(R >= l) = alpha_l + x . beta`` ((7.3)-(7.4)).

    Attributes
    ----------
    features : tuple of str
        Names of the columns of ``x`` (see ``M_OUT_FEATURES`` / ``M_JUD_FEATURES``).
    beta : ndarray of shape (n_features,)
    alphas : ndarray of shape (n_levels - 1,)
        Decreasing intercepts; ``alphas[l-1]`` belongs to ``P(R >= level l)``.
    values : ndarray of shape (n_levels,)
        Judgment value of each level (BROAD 0, 1, 2; FINE-10 5, 15, ..., 95).
    """

    features: tuple[str, ...]
    beta: FloatArray
    alphas: FloatArray
    values: FloatArray

    def probabilities(self, x: ArrayLike) -> FloatArray:
        """``P(R = l | x)``, shape (n, n_levels), from (7.4)."""
        eta = np.asarray(x, dtype=np.float64) @ self.beta
        at_least = expit(self.alphas[None, :] + eta[:, None])
        ones = np.ones((eta.shape[0], 1))
        zeros = np.zeros((eta.shape[0], 1))
        cum = np.hstack([ones, at_least, zeros])
        return np.asarray(np.clip(cum[:, :-1] - cum[:, 1:], 0.0, 1.0), dtype=np.float64)

    def moments(self, x: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """E[R] (7.1) and Var[R] (7.2) for each row of ``x``."""
        probs = self.probabilities(x)
        mean = probs @ self.values
        var = probs @ self.values**2 - mean**2
        return mean, np.maximum(var, 0.0)


def _model(
    features: Sequence[str], beta: Sequence[float], alphas: Sequence[float], values: FloatArray
) -> OrdinalModel:
    return OrdinalModel(
        tuple(features),
        np.array(beta, dtype=np.float64),
        np.array(alphas, dtype=np.float64),
        values,
    )


_BROAD_VALUES = np.array([0.0, 1.0, 2.0])
_FINE_VALUES = np.arange(5.0, 100.0, 10.0)

#: Table A.1 of [T]: models fitted on all judgments of MIREX 2007, 2009, 2010, 2011.
TABLE_A1: dict[tuple[str, str], OrdinalModel] = {
    ("broad", "out"): _model(
        M_OUT_FEATURES,
        [-19.7968, -0.3227, 29.6378, 3.2530, 1.8975, 5.4055, -2.9606],
        [-1.4351, -3.5205],
        _BROAD_VALUES,
    ),
    ("broad", "jud"): _model(
        M_JUD_FEATURES, [0.9789, 1.1964, 7.1813], [-5.2165, -11.9251], _BROAD_VALUES
    ),
    ("fine", "out"): _model(
        M_OUT_FEATURES,
        [-17.4721, 0.1336, 26.4550, 2.9111, 2.0443, 5.4544, -3.4851],
        [-0.5092, -1.2231, -1.7919, -2.2787, -2.7216, -3.1956, -3.8044, -4.6928, -5.9567],
        _FINE_VALUES,
    ),
    ("fine", "jud"): _model(
        M_JUD_FEATURES,
        [0.7954, 0.0128, 0.2078],
        [-2.7554, -4.9168, -7.0128, -9.0010, -10.8548, -12.7158, -14.6722, -16.8831, -19.2536],
        _FINE_VALUES,
    ),
}


@dataclass(frozen=True)
class OutputFeatures:
    """Output-based features of every pool pair ([T] 7.2.3, docs/method.md §2.4).

    Attributes
    ----------
    fsys, fart, sgen, fgen : ndarray of shape (n_pairs,)
    ov : float
        Collection-level OV.
    applicable : ndarray of bool, shape (n_pairs,)
        M_out applies: the genres of the document and of the query are known.
    """

    fsys: FloatArray
    ov: float
    fart: FloatArray
    sgen: FloatArray
    fgen: FloatArray
    applicable: NDArray[np.bool_]

    def matrix(self) -> FloatArray:
        """Design matrix in the column order of ``M_OUT_FEATURES``, shape (n_pairs, 7)."""
        ov = np.full_like(self.fsys, self.ov)
        return np.column_stack(
            [self.fsys, ov, self.fsys * ov, self.fart, self.sgen, self.fgen, self.sgen * self.fgen]
        )


def _group_counts(group: NDArray[np.intp], key: NDArray[np.intp]) -> FloatArray:
    """For each element, how many elements share its (group, key); key -1 counts only itself."""
    combined = group.astype(np.int64) * (int(key.max(initial=0)) + 2) + (key + 1)
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    out = counts[inverse].astype(np.float64)
    out[key < 0] = 1.0
    return np.asarray(out, dtype=np.float64)


def output_features(collection: Collection, metadata: Metadata) -> OutputFeatures:
    """Compute fSYS, OV, fART, sGEN and fGEN for every pool pair.

    fART and fGEN count the unique pool documents of the query, the document
    itself included (A5). A document of unknown artist (or of the "various
    artists" pseudo-artist, passed as -1) shares its artist with nobody.
    """
    max_doc = int(collection.pair_doc.max(initial=-1))
    if metadata.doc_artist.shape[0] <= max_doc:
        raise ValueError(
            f"metadata covers {metadata.doc_artist.shape[0]} documents but the runs use "
            f"document index {max_doc}"
        )
    if metadata.query_genre.shape[0] != collection.n_queries:
        raise ValueError(
            f"query_genre has {metadata.query_genre.shape[0]} entries, expected "
            f"{collection.n_queries} (one per query)"
        )
    pool_size = np.diff(collection.query_start)[collection.pair_query].astype(np.float64)
    fsys = collection.n_retrieving / collection.n_systems
    artist = metadata.doc_artist[collection.pair_doc]
    genre = metadata.doc_genre[collection.pair_doc]
    qgenre = metadata.query_genre[collection.pair_query]
    fart = _group_counts(collection.pair_query, artist) / pool_size
    fgen = _group_counts(collection.pair_query, genre) / pool_size
    known = (genre >= 0) & (qgenre >= 0)
    sgen = ((genre == qgenre) & known).astype(np.float64)
    return OutputFeatures(
        fsys=fsys.astype(np.float64),
        ov=collection.ov,
        fart=fart,
        sgen=sgen,
        fgen=np.where(genre >= 0, fgen, 0.0),
        applicable=known,
    )


def judgment_features(
    collection: Collection,
    metadata: Metadata | None,
    judged: NDArray[np.bool_],
    values: FloatArray,
    query: int,
) -> tuple[FloatArray, FloatArray]:
    """aSYS and aART of the pool pairs of one query (docs/method.md §2.4, A6, A7).

    Returns
    -------
    asys, aart : ndarray of shape (n_pairs_of_query,)
        NaN where undefined. aSYS(d) is the mean over the systems retrieving d of
        each system's mean judged relevance in its top k, d excluded; aART(d) the
        mean judged relevance of the other pool documents of d's artist.
    """
    sl = collection.pairs_of_query(query)
    es = slice(
        int(collection.query_entry_start[query]), int(collection.query_entry_start[query + 1])
    )
    n_local = sl.stop - sl.start
    j = judged[sl].astype(np.float64)
    r = np.where(judged[sl], values[sl], 0.0)
    systems = collection.entry_system[es]
    local = collection.entry_pair[es] - sl.start
    sums = np.bincount(systems, weights=j[local] * r[local], minlength=collection.n_systems)
    counts = np.bincount(systems, weights=j[local], minlength=collection.n_systems)
    num = sums[systems] - j[local] * r[local]
    den = counts[systems] - j[local]
    valid = den > 0
    system_mean = np.divide(num, den, out=np.zeros_like(num), where=valid)
    n_valid = np.bincount(local, weights=valid.astype(np.float64), minlength=n_local)
    total = np.bincount(local, weights=system_mean, minlength=n_local)
    asys = np.divide(total, n_valid, out=np.full(n_local, np.nan), where=n_valid > 0)

    aart = np.full(n_local, np.nan)
    if metadata is not None:
        artist = metadata.doc_artist[collection.pair_doc[sl]]
        known = artist >= 0
        if np.any(known):
            _, inv = np.unique(artist, return_inverse=True)
            a_sum = np.bincount(inv, weights=j * r)[inv] - j * r
            a_cnt = np.bincount(inv, weights=j)[inv] - j
            ok = known & (a_cnt > 0)
            aart = np.divide(a_sum, a_cnt, out=aart, where=ok)
    return asys, aart


class RelevanceModel:
    """The "estimate" step of the MTC loop (docs/method.md §2.5).

    Parameters
    ----------
    collection : Collection
    scale : Scale
    kind : {"uniform", "historical", "ordinal"}
        ``ordinal`` applies, per unjudged pair: M_jud where aSYS and aART are
        defined, else M_out where the genres are known, else the historical prior.
    metadata : Metadata, optional
        Needed by M_out and aART; without it ``ordinal`` uses only M_jud-less
        priors.
    m_out, m_jud : OrdinalModel, optional
        Override the Table A.1 parameters (e.g. a refit); ``m_jud=None`` with
        ``use_m_jud=False`` keeps M_out only.
    """

    def __init__(
        self,
        collection: Collection,
        scale: Scale,
        kind: str = "ordinal",
        metadata: Metadata | None = None,
        *,
        m_out: OrdinalModel | None = None,
        m_jud: OrdinalModel | None = None,
        use_m_jud: bool = True,
    ) -> None:
        if kind not in ESTIMATOR_KINDS:
            raise ValueError(f"unknown estimator {kind!r}: expected one of {ESTIMATOR_KINDS}")
        self.collection = collection
        self.scale = scale
        self.kind = kind
        self.metadata = metadata
        self.m_out = m_out or TABLE_A1[(scale.name, "out")]
        self.m_jud = m_jud or TABLE_A1[(scale.name, "jud")]
        self.use_m_jud = use_m_jud and kind == "ordinal"
        n = collection.n_pairs
        prior = scale.uniform if kind == "uniform" else scale.historical
        self._base_mean = np.full(n, prior[0])
        self._base_var = np.full(n, prior[1])
        self._base_source = np.full(n, SOURCE_PRIOR, dtype=np.int8)
        self.features: OutputFeatures | None = None
        if kind == "ordinal" and metadata is not None:
            self.features = output_features(collection, metadata)
            self._apply_m_out()

    def variance_factor(self, source: ArrayLike) -> FloatArray:
        """Factor applied to the model variance of estimates of ``source`` (by ``SOURCE_*``):
        1 here, the variances as the models give them. The hook the replay experiments'
        rescaled models override (``bench/experiments/scaled_model.py``)."""
        return np.ones(np.shape(source))

    def _apply_m_out(self) -> None:
        assert self.features is not None
        ok = self.features.applicable
        mean, var = self.m_out.moments(self.features.matrix()[ok])
        self._base_mean[ok] = mean
        self._base_var[ok] = var
        self._base_source[ok] = SOURCE_M_OUT

    def prior_estimates(self) -> tuple[FloatArray, FloatArray]:
        """E and Var every pair has before any judgment (M_out or the prior), shape (n_pairs,)."""
        return self._base_mean.copy(), self._base_var.copy()

    def jud_design(
        self, judged: NDArray[np.bool_], values: FloatArray, query: int
    ) -> tuple[FloatArray, NDArray[np.bool_]]:
        """M_jud design matrix (fSYS, aSYS, aART) of one query and where it is defined."""
        sl = self.collection.pairs_of_query(query)
        asys, aart = judgment_features(self.collection, self.metadata, judged, values, query)
        fsys = self.collection.n_retrieving[sl] / self.collection.n_systems
        x = np.column_stack([fsys, asys, aart])
        return x, ~np.isnan(asys) & ~np.isnan(aart)

    def estimate_query(
        self, judged: NDArray[np.bool_], values: FloatArray, query: int
    ) -> tuple[FloatArray, FloatArray, NDArray[np.int8]]:
        """E, Var and source code of every pool pair of ``query``."""
        sl = self.collection.pairs_of_query(query)
        mean = self._base_mean[sl].copy()
        var = self._base_var[sl].copy()
        source = self._base_source[sl].copy()
        jq = judged[sl]
        if self.use_m_jud and jq.any():
            x, ok = self.jud_design(judged, values, query)
            ok &= ~jq
            if ok.any():
                m, v = self.m_jud.moments(x[ok])
                mean[ok] = m
                var[ok] = v
                source[ok] = SOURCE_M_JUD
        var *= self.variance_factor(source)
        mean[jq] = values[sl][jq]
        var[jq] = 0.0
        source[jq] = SOURCE_JUDGED
        return mean, var, source

    def estimate_all(
        self, judged: NDArray[np.bool_], values: FloatArray
    ) -> tuple[FloatArray, FloatArray, NDArray[np.int8]]:
        """E, Var and source code of every pool pair, shape (n_pairs,) each."""
        n = self.collection.n_pairs
        mean = np.empty(n)
        var = np.empty(n)
        source = np.empty(n, dtype=np.int8)
        if not self.use_m_jud or not judged.any():
            mean[:] = self._base_mean
            var[:] = self._base_var * self.variance_factor(self._base_source)
            source[:] = self._base_source
            mean[judged] = values[judged]
            var[judged] = 0.0
            source[judged] = SOURCE_JUDGED
            return mean, var, source
        for q in range(self.collection.n_queries):
            sl = self.collection.pairs_of_query(q)
            mean[sl], var[sl], source[sl] = self.estimate_query(judged, values, q)
        return mean, var, source
