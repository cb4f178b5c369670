"""The incremental MTC loop (docs/method.md §4.5): judge, re-estimate, re-rank, pick, stop.

:class:`MTCEngine` keeps the sufficient statistics of every score distribution
(see :func:`mtcjudge.mtc.measures.accumulate`) and updates them per query: a judgment
changes the estimates of one query only (its own pair, plus the M_jud features
of the query's other pairs), so only that query's contribution is subtracted
and added back. The cost of a judgment is ``O(n_systems^2 * pool_q)`` for the
query plus ``O(n_entries)`` for the selection weights, instead of a full
recompute over the collection. Its settings, :class:`~mtcjudge.mtc.engine_config.EngineConfig`
and the stopping rules' thresholds, live in :mod:`mtcjudge.mtc.engine_config` (importable from
here too).

Properties and methods
----------------------
One rule for the engine's interface: a **property** is a value read from the engine's state
at no cost beyond a few array lookups (:attr:`MTCEngine.n_judged`,
:attr:`MTCEngine.n_unjudged`, :attr:`MTCEngine.offsets`, :attr:`MTCEngine.system_tau2`); a
**method** computes something (:meth:`MTCEngine.evaluation`,
:meth:`MTCEngine.ranking_confidence`, :meth:`MTCEngine.stop_reason`,
:meth:`MTCEngine.weights`), takes arguments, or changes the state (:meth:`MTCEngine.judge`,
:meth:`MTCEngine.select`).

:meth:`MTCEngine.judge` leaves the engine consistent by itself: after it returns, the
estimates, the score distributions and whatever the engine learns from its judgments (the
error offsets of ``calibrated`` and ``joint``, :mod:`mtcjudge.mtc.joint`) are those a
campaign's engine holds after the same judgments; no further call is needed.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import sparse

from mtcjudge.mtc.assessor_offsets import AssessorOffsets, judged_masses
from mtcjudge.mtc.collection import Collection
from mtcjudge.mtc.effects import EntryOffsets, ErrorOffsets
from mtcjudge.mtc.engine_config import STOP_RULES, EngineConfig, absolute_threshold
from mtcjudge.mtc.estimators import SOURCE_JUDGED, RelevanceModel
from mtcjudge.mtc.measures import (
    RATIO_MEASURES,
    Evaluation,
    accumulate,
    entry_coefficients,
    finish,
    ideal_moments,
    inverse_denominators,
    measure_normaliser,
    rank_discount,
)
from mtcjudge.mtc.selection import (
    CoRetrieval,
    absolute_weights,
    best_pairs,
    confidence_weights,
    static_weights,
    top_candidates,
)
from mtcjudge.mtc.significance import (
    Verdicts,
    pairwise_significance_verdicts,
    significance_verdicts,
)

__all__ = ["STOP_RULES", "EngineConfig", "MTCEngine", "absolute_threshold"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


class MTCEngine:
    """State of one MTC evaluation: estimates, score distributions, next pair.

    Parameters
    ----------
    collection : Collection
    model : RelevanceModel
        Estimates the unjudged pairs.
    config : EngineConfig
    judged_values : array_like of shape (n_pairs,), optional
        Existing judgments (the mean when a pair was judged several times), NaN
        where unjudged.
    rng : numpy.random.Generator, optional
        Used by the random policy.
    """

    #: per-pool-pair variance of its estimate before any judgment; when set, the
    #: confidence weights are multiplied by it, so that they measure the variance a judgment
    #: takes out of the system differences (docs/method.md §4.2). ``joint`` sets it.
    selection_var: FloatArray | None = None
    #: the stratum of every pool pair by its estimate's own variance, numbered from 0 (the
    #: estimates the model is surest of); None: no strata. ``joint`` learns a mean offset and
    #: a variance factor per stratum (:mod:`mtcjudge.mtc.joint`); the exports name them.
    variance_stratum: IntArray | None = None
    #: the offsets the judged pairs' values share with their assessors' other judgments
    #: (docs/method.md §10.1); None: every judgment's disagreement is independent
    #: (:meth:`set_assessor_offsets`)
    assessor_offsets: AssessorOffsets | None = None

    def __init__(
        self,
        collection: Collection,
        model: RelevanceModel,
        config: EngineConfig | None = None,
        judged_values: ArrayLike | None = None,
        rng: np.random.Generator | None = None,
    ) -> None:
        if model.collection is not collection:
            raise ValueError("the relevance model was built for another collection")
        self.collection = collection
        self.model = model
        self.scale = model.scale
        self.config = config or EngineConfig()
        self.rng = rng or np.random.default_rng(0)
        n = collection.n_pairs
        self.values = np.zeros(n)
        self.judged = np.zeros(n, dtype=bool)
        if judged_values is not None:
            jv = np.asarray(judged_values, dtype=np.float64)
            if jv.shape != (n,):
                raise ValueError(f"judged_values must have shape ({n},), found {jv.shape}")
            self.judged = ~np.isnan(jv)
            self.values = self.scale.check_values(np.where(self.judged, jv, 0.0))
        measure = self.config.measure
        self.coef = entry_coefficients(collection, measure, self.config.rbp_p)
        self._ratio = measure in RATIO_MEASURES
        self._eta = measure_normaliser(measure, collection.k, self.scale, self.config.rbp_p)
        self._discount = rank_discount(measure, np.arange(1, collection.k + 1), self.config.rbp_p)
        self._static = static_weights(collection, self.coef)
        self._co: CoRetrieval | None = None
        self._retrieval: sparse.csr_array | None = None
        self._pending: set[int] = set()
        self.n_updates = 0
        self.n_judged = int(self.judged.sum())
        self._evaluation: Evaluation | None = None
        #: variance each judged pair's value keeps around what the population of assessors
        #: would give it (assessor disagreement, docs/method.md §10); 0 until
        #: :meth:`set_judged_variance` says otherwise
        self.judged_var = np.zeros(n)
        #: a factor on every unjudged pair's estimation variance, one per pool pair (None: 1);
        #: ``joint``'s variance strata set it (:meth:`set_variance_factor`)
        self.var_factor: FloatArray | None = None
        self.mean, self.var, self.source = model.estimate_all(self.judged, self.values)
        self.rebuild()

    # ------------------------------------------------------------------ statistics
    def _denominators(self, query: int) -> tuple[float, float]:
        if not self._ratio:
            return self._eta, 0.0
        sl = self.collection.pairs_of_query(query)
        return ideal_moments(self.mean[sl], self.var[sl], self.collection.k, self._discount)

    def rebuild(self) -> None:
        """Recompute every statistic from the current estimates."""
        nq = self.collection.n_queries
        self.ey = np.empty(nq)
        self.vy = np.empty(nq)
        for q in range(nq) if self._ratio else ():
            self.ey[q], self.vy[q] = self._denominators(q)
        if not self._ratio:
            self.ey[:] = self._eta
            self.vy[:] = 0.0
        self.ex, self.score_sum, self.t_mat = accumulate(
            self.collection, self.coef, self.mean, self.var, self.ey, self.vy
        )
        self._evaluation = None

    def _query_terms(self, query: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(E[X_q], its contribution to score_sum, its contribution to T) from the state."""
        c = self.collection
        es = slice(int(c.query_entry_start[query]), int(c.query_entry_start[query + 1]))
        sl = c.pairs_of_query(query)
        systems = c.entry_system[es]
        local = c.entry_pair[es] - sl.start
        dense = np.zeros((c.n_systems, sl.stop - sl.start))
        dense[systems, local] = self.coef[es]
        ex = dense @ self.mean[sl]
        inv = float(inverse_denominators(np.array([self.ey[query]]))[0])
        cov = (dense * self.var[sl]) @ dense.T
        term = cov * inv**2 + np.outer(ex, ex) * (self.vy[query] * inv**4)
        return ex, ex * inv, term

    def _replace_query(self, query: int, mean: FloatArray, var: FloatArray) -> None:
        """Swap the estimates of one query and update the statistics by difference."""
        _, old_sum, old_term = self._query_terms(query)
        sl = self.collection.pairs_of_query(query)
        self.mean[sl] = mean
        self.var[sl] = var
        self.ey[query], self.vy[query] = self._denominators(query)
        ex, new_sum, new_term = self._query_terms(query)
        self.ex[:, query] = ex
        self.score_sum += new_sum - old_sum
        self.t_mat += new_term - old_term

    # ------------------------------------------------------------------ judgments
    def judge(self, pairs: ArrayLike, values: ArrayLike) -> None:
        """Record judgments (or revisions) of pool pairs and update everything.

        After the call the engine is in the state a campaign's engine reaches with the same
        judgments: estimates, score distributions and, for an engine that learns from its
        judgments, what it learns. It is :meth:`record` followed by :meth:`learn_from_judgments`.

        Parameters
        ----------
        pairs : array_like of int
            Pool pair indices.
        values : array_like of float
            Their judged values on the engine's scale (the mean when a pair has
            several judgments).
        """
        self.record(pairs, values)
        self.learn_from_judgments()

    def record(self, pairs: ArrayLike, values: ArrayLike) -> None:
        """Record judgments (or revisions) of pool pairs and update the estimates and the
        score distributions, without re-learning from the judgments (:meth:`learn_from_judgments`):
        the first step of :meth:`judge`. Alone it makes a what-if copy that pretends pairs
        are judged at their estimates (the staleness simulation's planner, bench/).

        Parameters are those of :meth:`judge`.
        """
        p = np.atleast_1d(np.asarray(pairs, dtype=np.intp))
        v = self.scale.check_values(np.atleast_1d(values))
        if p.shape != v.shape:
            raise ValueError(f"got {p.shape[0]} pairs but {v.shape[0]} values")
        if np.any((p < 0) | (p >= self.collection.n_pairs)):
            raise ValueError(f"pair index out of range 0..{self.collection.n_pairs - 1}")
        # a pair listed twice keeps its last value
        last = p.shape[0] - 1 - np.unique(p[::-1], return_index=True)[1]
        p, v = p[last], v[last]
        self.n_judged += int((~self.judged[p]).sum())
        self.judged[p] = True
        self.values[p] = v
        queries = np.unique(self.collection.pair_query[p])
        self._pending.update(int(q) for q in queries)
        period = self.config.refresh_every
        before = self.n_updates
        self.n_updates += p.shape[0]
        # refresh when this call crosses a multiple of the period (batches may step over it)
        refresh = self.model.use_m_jud and (self.n_updates // period > before // period)
        targets = set(self._pending) if refresh else {int(q) for q in queries}
        for q in sorted(targets):
            sl = self.collection.pairs_of_query(q)
            if refresh or not self.model.use_m_jud:
                mean, var, source = self.model.estimate_query(self.judged, self.values, q)
                if self.var_factor is not None:
                    var = var * self.var_factor[sl]
                self.source[sl] = source
            else:  # deferred M_jud refresh: only the judged pairs change now
                mean, var = self.mean[sl].copy(), self.var[sl].copy()
                jq = self.judged[sl]
                mean[jq] = self.values[sl][jq]
                self.source[sl][jq] = SOURCE_JUDGED
            # a judged pair keeps the assessor disagreement (0 unless set_judged_variance)
            jq = self.judged[sl]
            var[jq] = self.judged_var[sl][jq]
            self._replace_query(q, mean, var)
        if refresh:
            self._pending.clear()
        # a from-scratch rebuild bounds the drift of the incremental sums, and makes
        # the variances of a fully judged collection exactly 0 (every C = 1, S3) unless
        # judged pairs keep a variance (set_judged_variance)
        if self.n_updates % self.config.rebuild_every < p.shape[0] or self.n_unjudged == 0:
            self.rebuild()
        self._evaluation = None

    def reestimate(self) -> None:
        """Re-run the estimator on every query (after a model refit) and rebuild."""
        self.mean, self.var, self.source = self.model.estimate_all(self.judged, self.values)
        if self.var_factor is not None:
            self.var = self.var * self.var_factor
        self.var[self.judged] = self.judged_var[self.judged]
        self._pending.clear()
        self.rebuild()

    def set_variance_factor(self, factor: ArrayLike | None) -> None:
        """Multiply every unjudged pair's estimation variance by ``factor`` (one positive
        number per pool pair; None: 1) and rebuild. The relevance model is not touched: copies
        of the engine that share it (a projection's, a planner's snapshot) keep their own."""
        if factor is None:
            if self.var_factor is None:
                return
            self.var_factor = None
        else:
            f = np.asarray(factor, dtype=np.float64)
            if f.shape != (self.collection.n_pairs,) or not np.all(np.isfinite(f) & (f > 0)):
                raise ValueError("variance factors must be one positive number per pool pair")
            self.var_factor = f.copy()
        self.reestimate()

    def set_assessor_offsets(self, offsets: AssessorOffsets | None) -> None:
        """Let the judged pairs' values share their assessors' offsets (docs/method.md
        §10.1): the scores' covariance gains ``tau^2 M M^T`` (:meth:`assessor_covariance`).
        The judged pairs the shares name should keep only the independent part of the
        disagreement (:meth:`set_judged_variance`); None takes the offsets away."""
        self.assessor_offsets = offsets
        self._evaluation = None

    def assessor_covariance(self, denominators: FloatArray | None = None) -> FloatArray | float:
        """What the assessors' offsets add to the covariance of the scores (score units):
        ``tau^2 M M^T`` with ``M`` the systems' judged coefficient mass in each assessor's
        shares, each result weighted by its coefficient over its query's expected
        denominator (``denominators``, by default the engine's: for nDCG and RBP, to first
        order); 0 without offsets."""
        offsets = self.assessor_offsets
        if offsets is None or offsets.variance <= 0 or offsets.shares.judgments == 0:
            return 0.0
        c = self.collection
        ey = self.ey if denominators is None else denominators
        weights = self.coef * inverse_denominators(ey)[c.pair_query[c.entry_pair]]
        mass = judged_masses(c, weights, self.judged, offsets.shares)
        return np.asarray(offsets.variance * (mass @ mass.T), dtype=np.float64)

    def set_judged_variance(self, variance: ArrayLike) -> None:
        """Let every judged pair keep a variance (docs/method.md §10) and rebuild.

        ``variance`` is one number for every pair or one per pool pair, on the engine's
        scale squared: the variance of a pair's judged value (the mean of its judgments)
        around the score the population of assessors would give it on average. It applies
        to the pairs judged now and to those judged later; 0 (the default) treats a
        judgment as the pair's true score.
        """
        n = self.collection.n_pairs
        v = np.array(np.broadcast_to(np.asarray(variance, dtype=np.float64), (n,)))
        if not np.all(np.isfinite(v)) or np.any(v < 0):
            raise ValueError("judged variances must be finite and >= 0")
        if np.array_equal(v, self.judged_var):
            return
        self.judged_var = v
        self.var[self.judged] = v[self.judged]
        self.rebuild()

    # ------------------------------------------------------------------ variants
    # An engine variant (:class:`mtcjudge.mtc.joint.SystemEffectEngine`) overrides these
    # hooks; callers use them on any engine instead of testing which variant they hold.
    def learn_from_judgments(self) -> None:
        """Learn from all the judgments what the estimates alone do not carry.

        :meth:`judge` calls it; call it only after changing :attr:`judged` and
        :attr:`values` directly (and :meth:`reestimate`). The plain engine has nothing more to
        learn; the system-effect engine re-learns its error offsets (:mod:`mtcjudge.mtc.joint`).
        """

    def recalibrate(self) -> None:
        """Deprecated name of :meth:`learn_from_judgments` (calibration is whether a claimed
        confidence comes true, docs/glossary.md)."""
        warnings.warn(
            "MTCEngine.recalibrate() is now MTCEngine.learn_from_judgments()",
            DeprecationWarning,
            stacklevel=2,
        )
        self.learn_from_judgments()

    @property
    def offsets(self) -> ErrorOffsets | None:
        """The error offsets learnt from the judgments that the score distributions include.

        None for the plain engine, which takes the estimation errors as independent ([T]);
        the system-effect engine (``calibrated``, ``joint``) returns its offsets. This is the
        one hook callers (the projection, the benchmarks) read an engine's error model by.
        """
        return None

    @property
    def system_tau2(self) -> float:
        """Between-system variance of the estimation errors the score distributions include
        (0 without offsets)."""
        offsets = self.offsets
        return offsets.system.tau2 if offsets is not None else 0.0

    def entry_offsets(self) -> EntryOffsets:
        """What the score distributions add to each entry's estimate: nothing here (the
        system-effect engine adds its offsets, :mod:`mtcjudge.mtc.joint`). An entry expects
        ``mean[entry_pair] + entry_offsets().offset``; the exports write it per entry."""
        return EntryOffsets.none(self.collection.entry_pair.shape[0])

    def expectation_from(
        self,
        judged: NDArray[np.bool_],  # noqa: ARG002
        pairs: slice | None = None,
    ) -> tuple[FloatArray, FloatArray]:
        """What the estimator expects of ``pairs`` (all by default), and its variance, from
        the judgments of the pairs ``judged`` alone (a mask over the pool; the others left
        out), in the engine's units: what an assessor's answers are weighed against
        (:func:`mtcjudge.mtc.reliability.expected_moments`).

        Here the judgment-free estimate (M_out or the prior), which no judgment moves; the
        system-effect engine adds the offsets it learns from ``judged``
        (:meth:`mtcjudge.mtc.joint.SystemEffectEngine.expectation_from`)."""
        mean, var = self.model.prior_estimates()
        sl = pairs if pairs is not None else slice(0, self.collection.n_pairs)
        return mean[sl], var[sl]

    # ------------------------------------------------------------------ results
    def evaluation(self) -> Evaluation:
        """Current score distributions and confidences (cached until the next judgment)."""
        if self._evaluation is None:
            nq = self.collection.n_queries
            self._evaluation = finish(
                self.score_sum / nq,
                self.t_mat / nq**2 + self.assessor_covariance(),
                nq,
                self.config.distribution,
                self.config.ci_level,
            )
        return self._evaluation

    def ranking_confidence(self) -> float:
        """Confidence that the estimated ranking of the systems is the true one (S1)."""
        return self.evaluation().ranking_confidence

    @property
    def n_unjudged(self) -> int:
        """Pool pairs not judged yet."""
        return self.collection.n_pairs - self.n_judged

    def stop_reason(self) -> str | None:
        """Why judging can stop now, or None (docs/method.md §4.4)."""
        cfg = self.config
        if self.n_unjudged == 0:
            return "complete"
        if self.n_judged < cfg.min_judgments:
            return None
        if cfg.stop == "confidence" and self.ranking_confidence() >= cfg.target:
            return "confidence"
        if cfg.stop == "absolute":
            threshold = (
                cfg.abs_threshold
                if cfg.abs_threshold is not None
                else absolute_threshold(
                    cfg.abs_error,
                    self.collection.n_queries,
                    corrected=cfg.abs_corrected,
                    ci_level=cfg.ci_level,
                )
            )
            if float(np.sqrt(self.evaluation().var.mean())) <= threshold:
                return "absolute"
        return None

    # ------------------------------------------------------------------ selection
    def audit_pairs(self) -> IntArray:
        """The pairs drawn into a random audit sample: none here (``joint`` has one,
        :meth:`mtcjudge.mtc.joint.SystemEffectEngine.draw_audit`)."""
        return np.empty(0, dtype=np.intp)

    def weights(self) -> FloatArray:
        """Selection weight of every pool pair under the configured policy."""
        cfg = self.config
        c = self.collection
        if cfg.policy == "absolute":
            return absolute_weights(c, self.evaluation().var)
        if cfg.policy == "random":
            return np.ones(c.n_pairs)
        if cfg.policy == "static":
            w = self._static.copy()
            if self._ratio:
                w *= inverse_denominators(self.ey)[c.pair_query]
            return w
        if self._co is None:
            self._co = CoRetrieval.build(c, self.coef)
        w = confidence_weights(
            c, self.coef, self.evaluation().pair_confidence, cfg.confident_level, self._co
        )
        if self._ratio:
            w *= inverse_denominators(self.ey)[c.pair_query] ** 2
        if self.selection_var is not None:
            # the variance-reduction form of the weights (docs/method.md §4.2)
            w *= self.selection_var
        return w

    def select(
        self,
        n: int = 1,
        *,
        exclude: ArrayLike | None = None,
        candidates: NDArray[np.bool_] | None = None,
        prefer_query: int | None = None,
    ) -> IntArray:
        """The next ``n`` pairs to judge (never judged or excluded ones).

        Parameters
        ----------
        n : int
            Batch size, e.g. the number of assessors waiting.
        exclude : array_like of int, optional
            Pool pairs not to return (leased to someone).
        candidates : ndarray of bool, shape (n_pairs,), optional
            The pairs that may be returned, instead of the unjudged ones (a campaign
            that wants several judgments per pair offers judged pairs again).
        prefer_query : int, optional
            The query the assessor is on: its best pair is preferred when it is
            worth at least ``config.locality`` of the best pair overall.
        """
        if candidates is None:
            available = ~self.judged
        else:
            available = np.asarray(candidates, dtype=bool)
            if available.shape != (self.collection.n_pairs,):
                raise ValueError(
                    f"candidates must have shape ({self.collection.n_pairs},), "
                    f"found {available.shape}"
                )
        if exclude is not None:
            ex = np.asarray(exclude, dtype=np.intp)
            if ex.size:
                available = available.copy()
                available[ex] = False
        if self.config.policy == "random":
            cand = np.flatnonzero(available)
            if cand.size == 0:
                return cand
            picked = self.rng.choice(cand, size=min(n, cand.size), replace=False)
            return np.asarray(picked, dtype=np.intp)
        weights = self.weights()
        # the locality rule's weights: only a batch or an assessor's query compares them
        alone = n == 1 and prefer_query is None
        return best_pairs(
            weights,
            available,
            self.var,
            self.collection.mean_rank,
            self.collection.pair_query,
            n,
            prefer_query=prefer_query,
            locality=self.config.locality,
            stored=None if alone else self.stored_over(weights, available),
        )

    def stored_over(self, weights: FloatArray, available: NDArray[np.bool_]) -> FloatArray:
        """``weights`` with the ``available`` pairs' replaced by :meth:`stored_weights` of
        them (the best weight among the available pairs is what a plan compares with)."""
        cand = np.flatnonzero(available)
        stored = np.array(weights, dtype=np.float64)
        stored[cand] = self.stored_weights(cand, stored[cand])
        return stored

    def stored_weights(self, pairs: IntArray, weights: FloatArray) -> FloatArray:  # noqa: ARG002
        """The weights a plan stores for ``pairs`` in the selection order, given their
        selection ``weights``: what the locality rule compares (§4.3 of docs/method.md).
        The same here; an engine whose selection puts pairs first with a made-up weight
        stores a real one (:class:`mtcjudge.mtc.joint.SystemEffectEngine`)."""
        return weights

    def ranked(self, n: int, candidates: NDArray[np.bool_]) -> tuple[IntArray, FloatArray]:
        """The ``n`` most useful candidate pairs in order, with their selection weights.

        This is the order :meth:`select` picks from, without the preference for one
        query: a planner stores it and hands the pairs out to several assessors. Under the
        random policy the order is a random permutation (weights all 1).

        Parameters
        ----------
        n : int
            How many pairs to return at most.
        candidates : ndarray of bool, shape (n_pairs,)
            The pairs that may be returned.

        Returns
        -------
        pairs : ndarray of int, shape (m,), m <= n
        weights : ndarray of float, shape (m,)
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, found {n}")
        available = np.asarray(candidates, dtype=bool)
        if available.shape != (self.collection.n_pairs,):
            raise ValueError(
                f"candidates must have shape ({self.collection.n_pairs},), found {available.shape}"
            )
        cand = np.flatnonzero(available)
        if self.config.policy == "random":
            picked = self.rng.permutation(cand)[:n].astype(np.intp)
            return picked, np.ones(picked.shape[0])
        weights = self.weights()
        top = top_candidates(weights, cand, self.var, self.collection.mean_rank, n)[:n]
        return top, weights[top]

    # ------------------------------------------------------------------ significance
    def agk_cases(self) -> tuple[FloatArray, FloatArray]:
        """Per system and query, AG@k with every unjudged document it retrieves at the top
        level (``best``) and at 0 (``worst``), judged ones at their value ([U12] §5.2).

        Returns
        -------
        best, worst : ndarray of shape (n_systems, n_queries)
            Raw AG units. The bounds of a pair are ``best[A] - worst[B]`` (upper) and
            ``worst[A] - best[B]`` (lower).
        """
        c = self.collection
        ns, nq, k = c.n_systems, c.n_queries, c.k
        if self._retrieval is None:
            # (system, query) x pair, 1 where the system retrieves the pair: fixed by the runs
            rows = c.entry_system * nq + c.pair_query[c.entry_pair]
            self._retrieval = sparse.csr_array(
                (np.ones(rows.shape[0]), (rows, c.entry_pair)), shape=(ns * nq, c.n_pairs)
            )
        # one pass over the matrix for both sums: judged gains, unjudged documents
        sums = self._retrieval @ np.column_stack(
            (np.where(self.judged, self.values, 0.0), ~self.judged)
        ).astype(np.float64)
        gain, open_ = sums[:, 0].reshape(ns, nq), sums[:, 1].reshape(ns, nq)
        return (gain + self.scale.lmax * open_) / k, gain / k

    def agk_bounds(self, *, tight: bool = False) -> tuple[FloatArray, FloatArray]:
        """[U12] best/worst-case bounds of dAG@k for every system pair (docs/method.md §5.2).

        Returns
        -------
        upper, lower : ndarray of shape (n_system_pairs, n_queries)
            Raw AG units, pairs in ``numpy.triu_indices(n_systems, 1)`` order.
        """
        c = self.collection
        ns, nq, k = c.n_systems, c.n_queries, c.k
        best, worst = self.agk_cases()
        a, b = np.triu_indices(ns, 1)
        upper, lower = best[a] - worst[b], worst[a] - best[b]
        if tight:
            # a document both systems retrieve unjudged costs nothing: take back the top
            # level charged to one side for each
            co = self._co or CoRetrieval.build(c, self.coef)
            self._co = co
            unjudged = ~self.judged[co.pair]
            pair_index = np.full((ns, ns), -1, dtype=np.intp)
            pair_index[a, b] = np.arange(a.shape[0])
            idx = (
                pair_index[co.system_a[unjudged], co.system_b[unjudged]] * nq
                + c.pair_query[co.pair[unjudged]]
            )
            shared = np.bincount(idx, minlength=a.shape[0] * nq).reshape(a.shape[0], nq)
            charge = self.scale.lmax * shared / k
            upper -= charge
            lower += charge
        return upper, lower

    def significance(
        self,
        *,
        delta: float = 0.067,
        alpha: float = 0.05,
        two_tailed: bool = False,
        tight: bool = False,
    ) -> Verdicts:
        """[U12] significance rules 1-4 for every system pair (docs/method.md §5.3, A20).

        Rules 1-3 test the per-query AG@k bounds; rule 4 compares the expected
        difference of the configured measure (normalised, A9) with ``delta``.
        Pairs are in ``numpy.triu_indices(n_systems, 1)`` order.
        """
        a, b = np.triu_indices(self.collection.n_systems, 1)
        expected = self.evaluation().diff_mean[a, b]
        if not tight:  # the bounds are differences of per-system cases: no pair matrix
            best, worst = self.agk_cases()
            return pairwise_significance_verdicts(
                best, worst, expected, delta=delta, alpha=alpha, two_tailed=two_tailed
            )
        upper, lower = self.agk_bounds(tight=tight)
        return significance_verdicts(
            upper, lower, expected, delta=delta, alpha=alpha, two_tailed=two_tailed
        )
