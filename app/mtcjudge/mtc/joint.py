"""The engine of the ``calibrated`` and ``joint`` estimators: score distributions that
include error offsets learnt from the judgments (docs/method.md §8).

:class:`SystemEffectEngine` is :class:`mtcjudge.mtc.engine.MTCEngine` with the offsets of
:mod:`mtcjudge.mtc.effects` added to its score distributions. It is declared by an
:class:`ErrorModel` and built whole by its constructor (``calibrated``:
:data:`CALIBRATED_ERRORS`, the per-system offsets; ``joint``: :data:`JOINT_ERRORS`, those plus
the offsets of each system's shared and unshared results, offsets shared by the pairs of a
query, an artist, a genre cell and a variance stratum, and one variance factor per stratum
learnt from a random audit). Every
:meth:`~SystemEffectEngine.judge` re-learns the offsets from all the judgments, so the engine
is in the state a campaign's is after each call. Callers read the offsets through the engine
hook :attr:`mtcjudge.mtc.engine.MTCEngine.offsets` (None on the plain engine).

What the engine learns (:meth:`SystemEffectEngine.learnt_offsets`) is computed by
:mod:`mtcjudge.mtc.offset_learning` (from the residuals of :mod:`mtcjudge.mtc.residuals`, with
the variance strata of :mod:`mtcjudge.mtc.strata`); :func:`relearn_offsets` sets it on the
engine. The coefficient
masses the offsets enter the scores by, and the levels they are shared at, come from
:mod:`mtcjudge.mtc.masses`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.effects import EntryOffsets, ErrorOffsets, OffsetFactor, SystemEffect
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.masses import (
    UnjudgedMass,
    level_cells,
    mass_by_cell,
    metadata_factors,
    open_weights,
    shared_groups,
)
from mtcjudge.mtc.measures import (
    Evaluation,
    finish,
    inverse_denominators,
    pool_ideals,
)
from mtcjudge.mtc.offset_learning import (
    LearntOffsets,
    learn_offsets,
    pair_offsets,
    system_effect_from_judgments,
)
from mtcjudge.mtc.selection import CoRetrieval
from mtcjudge.mtc.strata import on_factor_grid, variance_strata

__all__ = [
    "AUDIT_EVERY",
    "CALIBRATED_ERRORS",
    "JOINT_ERRORS",
    "VARIANCE_STRATA",
    "ErrorModel",
    "OffsetMasses",
    "SystemEffectEngine",
    "metadata_factors",
    "on_factor_grid",
    "relearn_offsets",
    "shared_groups",
    "system_effect_from_judgments",
    "variance_strata",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: ``joint`` gives one judgment in this many to the audit: a random pair among those left
#: unjudged, from whose judgments alone it learns its variance factor (docs/method.md §8.2)
AUDIT_EVERY = 20
#: the seed of the random order of the pool the audit draws in: the same in every process
_AUDIT_SEED = 20261125


@dataclass(frozen=True)
class ErrorModel:
    """What a :class:`SystemEffectEngine` learns from its judgments besides the estimates.

    Attributes
    ----------
    shared : bool
        False: per-system offsets only (``calibrated``). True: the joint error model
        (``joint``): also the offsets of each system's shared and unshared results
        (:func:`shared_groups`), offsets shared by the pairs of a query, an artist and a
        genre cell (:func:`metadata_factors`), and the variance factors of
        ``variance_strata`` learnt from a random audit of one judgment in ``audit_every``;
        the confidence weights take the variance of each pair's estimate into account
        (:attr:`MTCEngine.selection_var`).
    audit_every : int
        With ``shared``: one judgment in this many goes to the audit sample.
    variance_strata : int
        With ``shared``: split the pool into this many strata by the quantiles of the
        estimates' own (judgment-free) variances; each stratum gets a mean offset (a further
        factor, "estimate stratum") and its own variance factor learnt from the audit pairs
        in it (:func:`mtcjudge.mtc.strata.stratum_factors`). 0: no strata, and no variance
        factor learnt (the estimates' own variances stand).
    """

    shared: bool = False
    audit_every: int = AUDIT_EVERY
    variance_strata: int = 0

    def __post_init__(self) -> None:
        if self.audit_every < 0:
            raise ValueError(f"audit_every must be >= 0, found {self.audit_every}")


#: the error model of the ``calibrated`` estimator: per-system offsets
CALIBRATED_ERRORS = ErrorModel()
#: strata of the estimates' own variances that ``joint`` learns a mean offset and a variance
#: factor for (docs/method.md §8.2)
VARIANCE_STRATA = 5
#: the error model of the ``joint`` estimator (docs/method.md §8)
JOINT_ERRORS = ErrorModel(shared=True, variance_strata=VARIANCE_STRATA)


class OffsetMasses(NamedTuple):
    """The coefficient masses of each system's unjudged entries that the offsets enter its
    score by, in score units (docs/method.md §8.3; :meth:`SystemEffectEngine.offset_masses`)."""

    #: ``f_A``: every system's unjudged mass, shape (n_systems,)
    system: FloatArray
    #: systems x (unshared, shared) results; None without the result groups' offsets
    group: FloatArray | None
    #: systems x levels of every further factor, in the order of
    #: :attr:`SystemEffectEngine.factors`; empty without their offsets
    factors: list[FloatArray]


class SystemEffectEngine(MTCEngine):
    """:class:`MTCEngine` whose score distributions include error offsets learnt from the
    judgments, built whole from its :class:`ErrorModel`.

    ``evaluation()`` adds ``f_A E[b_A]`` to each system's expected score and
    ``f_A^2 Var[b_A]`` to its variance (:mod:`mtcjudge.mtc.effects`), plus the shared offsets
    of :attr:`ErrorModel.shared`. :meth:`judge` re-learns every offset from all the judgments
    (:meth:`learn_from_judgments`), so the engine is consistent after each call.

    Parameters
    ----------
    collection, model, config, judged_values, rng :
        As for :class:`MTCEngine`.
    errors : ErrorModel, default CALIBRATED_ERRORS
        What the engine learns from its judgments (:data:`CALIBRATED_ERRORS`,
        :data:`JOINT_ERRORS`).
    metadata : Metadata, optional
        The artists and genres the shared offsets of ``joint`` group pairs by.
    audit_drawn : array_like of bool, shape (n_pairs,), optional
        The pairs the audit drew before (as a campaign stored them; :meth:`draw_audit`).
    audit_allowed : array_like of bool, shape (n_pairs,), optional
        The pairs the audit may draw (None: every pair).
    """

    #: the posterior of the per-system offsets, set by :meth:`learn_from_judgments`
    effect: SystemEffect | None = None
    #: their posteriors of the further factors, by name, set by :meth:`learn_from_judgments`
    factor_effects: dict[str, SystemEffect] | None = None
    #: the posterior of the group offsets (around their system's), as last learnt
    group_effect: SystemEffect | None = None
    #: the fixed random order of the pool the audit draws in, made on first use
    _audit_order: IntArray | None = None
    #: with variance strata, every pair's variance factor as last learnt (:func:`relearn_offsets`)
    learnt_var_factor: FloatArray | None = None

    def __init__(
        self,
        collection: Collection,
        model: RelevanceModel,
        config: EngineConfig | None = None,
        judged_values: ArrayLike | None = None,
        rng: np.random.Generator | None = None,
        *,
        errors: ErrorModel = CALIBRATED_ERRORS,
        metadata: Metadata | None = None,
        audit_drawn: ArrayLike | None = None,
        audit_allowed: ArrayLike | None = None,
    ) -> None:
        super().__init__(collection, model, config, judged_values, rng)
        self.errors = errors
        #: one judgment in this many goes to the audit sample (0: no audit), :meth:`draw_audit`
        self.audit_every = errors.audit_every if errors.shared else 0
        #: the pairs drawn into the audit sample so far, a mask over the pool (None: no audit)
        self.audit_drawn: NDArray[np.bool_] | None = None
        #: the pairs the audit may draw (those an assessor can be given); None: every pair
        self.audit_allowed: NDArray[np.bool_] | None = None
        #: further random effects shared by pairs: (name, level of every pool pair, -1 for none)
        self.factors: tuple[tuple[str, IntArray], ...] = ()
        #: per entry, its system's group: ``2 A + 1`` when other systems retrieved the pair
        #: too, ``2 A`` when only A did (:func:`shared_groups`); None: no group offsets
        self.result_groups: IntArray | None = None
        if errors.shared:
            n = collection.n_pairs
            self.audit_drawn = (
                np.array(audit_drawn, dtype=bool)
                if audit_drawn is not None
                else np.zeros(n, dtype=bool)
            )
            if audit_allowed is not None:
                self.audit_allowed = np.asarray(audit_allowed, dtype=bool)
            self.factors = metadata_factors(collection, metadata)
            if errors.variance_strata:
                self.variance_stratum = variance_strata(
                    model.prior_estimates()[1], errors.variance_strata
                )
                self.factors = (*self.factors, ("estimate stratum", self.variance_stratum))
            self.result_groups = shared_groups(collection)
            nothing = np.zeros(n, dtype=bool)
            self.selection_var = model.estimate_all(nothing, np.zeros(n))[1]
        self.learn_from_judgments()

    def audit_pairs(self) -> IntArray:
        """The pairs drawn into the audit sample so far, judged or not (empty without an
        audit)."""
        if not self.audit_every or self.audit_drawn is None:
            return np.empty(0, dtype=np.intp)
        return np.flatnonzero(self.audit_drawn)

    def draw_audit(self) -> IntArray:
        """Draw the audit's due pairs, and return them (empty when none is due).

        The audit holds ``n_judged // audit_every + 1`` pairs: whenever it holds fewer, it
        draws the next pair of a fixed random order of the pool that is neither judged nor
        drawn already (nor excluded by :attr:`audit_allowed`). That is a uniformly random
        pick among the pairs left unjudged, whichever the policy chose before, so the
        residuals of the audit's pairs say how far off the estimates are where nobody has
        looked. Which pairs were drawn depends on the order of the judgments: a campaign
        stores them (the planner writes its draws with its plan) and an engine rebuilt
        from the database takes them back (:attr:`audit_drawn`) rather than drawing again.
        """
        if not self.audit_every or self.audit_drawn is None:
            return np.empty(0, dtype=np.intp)
        due = self.n_judged // self.audit_every + 1 - int(np.count_nonzero(self.audit_drawn))
        if due <= 0:
            return np.empty(0, dtype=np.intp)
        order = self.audit_order()
        free = ~(self.judged | self.audit_drawn)
        if self.audit_allowed is not None:
            free &= self.audit_allowed
        picks = order[free[order]][:due]
        self.audit_drawn[picks] = True
        return picks

    def audit_order(self) -> IntArray:
        """The fixed random order of the pool that the audit draws in (the same in every
        process: its seed is fixed)."""
        if self._audit_order is None:
            rng = np.random.default_rng(_AUDIT_SEED)
            self._audit_order = rng.permutation(self.collection.n_pairs).astype(np.intp)
        return self._audit_order

    def weights(self) -> FloatArray:
        """The policy's weights, with the audit's due pairs (drawn first, if any is due) above
        all others."""
        w = super().weights()
        self.draw_audit()
        if self.audit_drawn is None:
            return w
        due = np.flatnonzero(self.audit_drawn & ~self.judged)
        if due.size:
            w = w.copy()
            w[due] = 2.0 * max(float(w.max(initial=0.0)), 1.0)
        return w

    def stored_weights(self, pairs: IntArray, weights: FloatArray) -> FloatArray:
        """The audit's unjudged pairs, which :meth:`weights` puts first with a made-up
        weight above every other, at the best weight of the other pairs: a plan keeps them
        first, and the preference for the query an assessor is on (worth at least half the
        best) weighs that query against the best pair the policy chose, so the audit's pair
        goes to an assessor who changes query anyway."""
        if self.audit_drawn is None:
            return weights
        audit = self.audit_drawn[pairs] & ~self.judged[pairs]
        if not audit.any():
            return weights
        stored = np.array(weights, dtype=np.float64)
        stored[audit] = float(stored[~audit].max()) if (~audit).any() else 1.0
        return stored

    def rebuild(self) -> None:
        """Recompute every statistic from the current estimates, ``f_A`` included."""
        super().rebuild()
        unjudged = getattr(self, "_unjudged", None)
        if unjudged is not None:
            unjudged.resync(self)

    def invalidate(self) -> None:
        """Forget the cached evaluation (after changing :attr:`effect`)."""
        self._evaluation = None

    def learn_from_judgments(self) -> None:
        """Re-learn the offsets from every judgment (:func:`relearn_offsets`); :meth:`judge` calls
        it."""
        relearn_offsets(self)

    def learnt_offsets(self, judged: NDArray[np.bool_]) -> LearntOffsets:
        """What the engine learns from the judgments of the pairs ``judged`` (a mask over the
        pool), changing nothing: the posteriors of the offsets of its error model and, with
        variance strata, every pair's variance factor
        (:func:`~mtcjudge.mtc.offset_learning.learn_offsets`). :meth:`learn_from_judgments` sets
        what it learns from all of them, :meth:`expectation_from` reads what it learns from
        some."""
        return learn_offsets(self, self.model, judged)

    @property
    def offsets(self) -> ErrorOffsets | None:
        """The offsets the score distributions include (None before any are set)."""
        if self.effect is None:
            return None
        return ErrorOffsets(self.effect, tuple(name for name, _ in self.factors))

    def expectation_from(
        self, judged: NDArray[np.bool_], pairs: slice | None = None
    ) -> tuple[FloatArray, FloatArray]:
        """The judgment-free estimate of ``pairs`` (all by default) plus the offsets learnt
        from the judgments of ``judged`` alone (:meth:`learnt_offsets`,
        :func:`~mtcjudge.mtc.offset_learning.pair_offsets`), held within the scale,
        and its variance (the estimate's with the learnt variance factors, plus the offsets'
        posterior variance)."""
        parts = pair_offsets(self, self.learnt_offsets(judged), pairs)
        mean = np.clip(parts.mean + parts.offset, 0.0, float(self.scale.lmax))
        return mean, parts.var + parts.offset_var

    def entry_offsets(self) -> EntryOffsets:
        """The offsets :meth:`evaluation` includes, per entry: the system's, its result
        group's (``joint``) and those of its pair's query, artist and genre cell (``joint``),
        each factor with the level of every entry and the posterior of every level.

        ``mean[entry_pair] + offset`` is what the engine expects of each entry
        (:meth:`entry_expectations`: the factors' means, held within the scale): the measure's
        weighted sum of a system's entries over the query's denominator is its expected score,
        exactly as :meth:`evaluation` computes it; for nDCG and RBP the denominator is the
        ideal of :meth:`ideal_values`, each pool pair at the largest expectation of its
        entries (docs/method.md §8.3)."""
        c = self.collection
        n = c.entry_pair.shape[0]
        if self.effect is None:
            return EntryOffsets.none(n)
        factors = [OffsetFactor("system", c.entry_system, self.effect.bias, self.effect.post_var)]
        if self.group_effect is not None and self.result_groups is not None:
            group = self.group_effect
            factors.append(
                OffsetFactor("result group", self.result_groups, group.bias, group.post_var)
            )
        for name, level in self.factors if self.factor_effects else ():
            effect = self.factor_effects[name]  # type: ignore[index]
            factors.append(OffsetFactor(name, level[c.entry_pair], effect.bias, effect.post_var))
        # the factors' means, less what the scale's ends hold back (entry_expectations)
        offset = self.entry_expectations() - self.mean[c.entry_pair]
        offset[self.judged[c.entry_pair]] = 0.0
        return EntryOffsets(offset, float(self.effect.variance_scale), tuple(factors))

    def unjudged_mass_by(self, level: IntArray, n_levels: int) -> FloatArray:
        """Coefficient mass of each system still on estimates, split by the level of the
        pairs (systems x levels, score units); pairs at level -1 are left out."""
        valid, cell = level_cells(self.collection, level, n_levels)
        return mass_by_cell(self, open_weights(self), valid, cell, n_levels)

    #: per factor: its entries with a level, their (system, level) cell, the number of levels
    _cells: list[tuple[IntArray, IntArray, int]] | None = None

    def _factor_masses(self, weights: FloatArray) -> list[FloatArray]:
        """:meth:`unjudged_mass_by` of every factor, from the entries' weights
        (:func:`~mtcjudge.mtc.masses.open_weights`; the cells depend on the collection only
        and are made once)."""
        if self._cells is None:
            self._cells = []
            for _, level in self.factors:
                n_levels = max(int(level.max(initial=-1)) + 1, 1)
                self._cells.append((*level_cells(self.collection, level, n_levels), n_levels))
        return [mass_by_cell(self, weights, valid, cell, n) for valid, cell, n in self._cells]

    #: the bookkeeping of :meth:`unjudged_mass`, made on its first call
    _unjudged: UnjudgedMass | None = None

    def unjudged_mass(self) -> FloatArray:
        """``f_A``: coefficient mass of A still on estimates, in score units.

        ``(1/n_Q) sum_{unjudged entries e of A} c_e / E[Y_q(e)]``, updated for the pairs
        judged since the last call (:class:`~mtcjudge.mtc.masses.UnjudgedMass`), exactly as
        a full pass."""
        if self._unjudged is None:
            self._unjudged = UnjudgedMass(self)
        return self._unjudged.mass_of(self)

    #: the co-retrievals' (system pair, query) cells of the ratio measures' covariances
    _co_cells: tuple[IntArray, IntArray] | None = None
    #: per factor: every entry's level, -1 for none (made on first use)
    _entry_levels: list[IntArray] | None = None

    def entry_shift(self) -> FloatArray:
        """What the offsets add to the estimate of every entry, shape (n_entries,): the means
        of its system's offset, its result group's and those of its pair's query, artist and
        genre cell; 0 once its pair is judged, and when the offsets do not move the means."""
        c = self.collection
        shift = np.zeros(c.entry_pair.shape[0])
        if self.effect is None:
            return shift
        shift += self.effect.bias[c.entry_system]
        if self.group_effect is not None and self.result_groups is not None:
            shift += self.group_effect.bias[self.result_groups]
        if self.factor_effects:
            if self._entry_levels is None:  # fixed by the collection: made once
                # every entry's level of each factor; -1 (no level) picks the 0 appended below
                self._entry_levels = [level[c.entry_pair] for _, level in self.factors]
            for (name, _), entry_level in zip(self.factors, self._entry_levels, strict=True):
                shift += np.append(self.factor_effects[name].bias, 0.0)[entry_level]
        shift[self.judged[c.entry_pair]] = 0.0
        return shift

    def entry_expectations(self) -> FloatArray:
        """What the engine expects every entry (a result of one system) to be worth, shape
        (n_entries,): its pair's estimate plus the offsets (:meth:`entry_shift`), within the
        scale's range (docs/method.md §8.3); a judged entry is worth its judgment.

        A system's expected score is the measure's weighted sum of its entries' expectations
        over the query's denominator: the constant one of CG and DCG, and for nDCG and RBP
        the ideal of :meth:`ideal_values`."""
        c = self.collection
        return self._held(self.mean[c.entry_pair] + self.entry_shift())

    def ideal_values(self, expected: FloatArray | None = None) -> FloatArray:
        """What each pool pair is worth in the ideal list of its query, shape (n_pairs,): the
        largest expectation any system's result gives it (``expected``: those of
        :meth:`entry_expectations`), so that the ideal is at least every system's own list
        (docs/method.md §8.3); without offsets, its estimate."""
        c = self.collection
        expected = self.entry_expectations() if expected is None else expected
        return np.asarray(np.maximum.reduceat(expected, c.entry_start[:-1]), dtype=np.float64)

    def evaluation(self) -> Evaluation:
        if self._evaluation is None:
            mean, cov = self.moments()
            self._evaluation = finish(
                mean, cov, self.collection.n_queries, self.config.distribution, self.config.ci_level
            )
        return self._evaluation

    def moments(self) -> tuple[FloatArray, FloatArray]:
        """The expected scores and their covariance matrix (score units) that
        :meth:`evaluation` reads, before :func:`mtcjudge.mtc.measures.finish` takes off the
        rounding (docs/method.md §8.3).

        Each entry is expected to be worth its estimate plus its offsets, kept within the
        scale (:meth:`entry_expectations`). For CG and DCG that is the linear shift of §8.3
        (the offsets' means times their masses) less what the scale's ends hold back, entry
        by entry; for nDCG and RBP the ideal of each query is the best list of its pool at the
        largest of those expectations (:meth:`ideal_values`), and the delta method's terms,
        the offsets' masses included, divide by it. The covariance is
        :meth:`offset_covariance`'s, plus what the assessors' offsets add
        (:meth:`~mtcjudge.mtc.engine.MTCEngine.assessor_covariance`)."""
        mean, cov, ey = self._estimate_moments()
        return mean, cov + self.assessor_covariance(ey)

    def _estimate_moments(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        """:meth:`moments` before the assessors' offsets (docs/method.md §10.1), and the
        queries' expected denominators they divide by."""
        c = self.collection
        nq = c.n_queries
        mean = self.score_sum / nq
        cov = self.t_mat / nq**2
        if self.effect is None:
            return mean, cov, self.ey
        shift = self.entry_shift()
        if self._ratio:
            # a common ideal per query, computed from the expectations the numerators use
            expected = self._held(self.mean[c.entry_pair] + shift)
            ey, vy = pool_ideals(c, self.ideal_values(expected), self.var, self._discount)
            mean, cov, weights = self._ratio_moments(expected, ey, vy)
            f = np.bincount(c.entry_system, weights=weights, minlength=c.n_systems) / nq
            return mean, self.offset_covariance(cov, self.offset_masses(f, weights)), ey
        masses = self.offset_masses(self.unjudged_mass())
        shifted = self._shifted_means(mean, masses, shift)
        return shifted, self.offset_covariance(cov, masses), self.ey

    def offset_masses(self, f: FloatArray, weights: FloatArray | None = None) -> OffsetMasses:
        """The masses the offsets enter the scores by (:class:`OffsetMasses`).

        ``f`` is every system's unjudged mass (:meth:`unjudged_mass`); ``weights`` every
        entry's weight, its coefficient over its query's denominator and 0 once judged
        (:func:`~mtcjudge.mtc.masses.open_weights` when not given, made only if a further
        offset needs it)."""
        group: FloatArray | None = None
        factors: list[FloatArray] = []
        if self.factor_effects or self.group_effect is not None:
            weights = open_weights(self) if weights is None else weights
        if self.group_effect is not None and self.result_groups is not None:
            assert weights is not None
            # every entry is in a group: systems x (unshared, shared) masses
            group = mass_by_cell(self, weights, slice(None), self.result_groups, 2)
        if self.factor_effects:
            assert weights is not None
            factors = self._factor_masses(weights)
        return OffsetMasses(f, group, factors)

    def offset_covariance(self, cov: FloatArray, masses: OffsetMasses) -> FloatArray:
        """The covariance of the scores (score units): ``cov``, the estimates' own, times the
        common variance factor, plus what the offsets' posterior variances add through
        ``masses`` (:meth:`offset_masses`): ``m_{A,l} m_{B,l} Var[b_l]`` for every factor and
        level (docs/method.md §8.3), the systems with the same run sharing their own
        offsets (:meth:`_twins`)."""
        assert self.effect is not None
        f = masses.system
        cov = cov * self.effect.variance_scale
        cov = cov + np.diag(f**2 * self.effect.post_var) + self._twins(f**2 * self.effect.post_var)
        if masses.group is not None:
            assert self.group_effect is not None
            mass = masses.group
            own = mass**2 * self.group_effect.post_var.reshape(mass.shape)
            cov = cov + np.diag(own.sum(axis=1)) + self._twins(own[:, 0]) + self._twins(own[:, 1])
        if masses.factors:
            assert self.factor_effects is not None
            for (name, _), mass in zip(self.factors, masses.factors, strict=True):
                cov = cov + (mass * self.factor_effects[name].post_var) @ mass.T
        return cov

    def _shifted_means(
        self, mean: FloatArray, masses: OffsetMasses, shift: FloatArray
    ) -> FloatArray:
        """CG and DCG: the expected scores ``mean`` of the estimates plus the offsets' means
        times their ``masses`` (the linear shift of docs/method.md §8.3), less what the
        scale's ends hold back of each entry's ``shift`` (:meth:`entry_shift`)."""
        assert self.effect is not None
        c = self.collection
        mean = mean + masses.system * self.effect.bias
        if masses.group is not None:
            assert self.group_effect is not None
            mass = masses.group
            mean = mean + (mass * self.group_effect.bias.reshape(mass.shape)).sum(axis=1)
        if masses.factors:
            assert self.factor_effects is not None
            for (name, _), mass in zip(self.factors, masses.factors, strict=True):
                mean = mean + mass @ self.factor_effects[name].bias
        if self._may_leave_scale():
            # the linear shift is exact while no entry leaves the scale: what the scale's ends
            # hold back comes off entry by entry
            shifted = self.mean[c.entry_pair] + shift
            held = self._held(shifted) - shifted
            if np.any(held):
                pq = c.pair_query[c.entry_pair]
                moved = self.coef * inverse_denominators(self.ey)[pq] * held
                nq = c.n_queries
                mean = mean + np.bincount(c.entry_system, weights=moved, minlength=c.n_systems) / nq
        return mean

    def _may_leave_scale(self) -> bool:
        """Whether some unjudged entry's estimate plus its offsets may leave [0, l_max]: a
        bound from the extreme estimates and the extreme offsets of each factor, which spares
        the pass over the entries when nothing can (judged entries carry no offset)."""
        open_pairs = ~self.judged
        if not open_pairs.any() or self.effect is None:
            return False
        low = high = 0.0
        parts = [self.effect.bias]
        if self.group_effect is not None:
            parts.append(self.group_effect.bias)
        for effect in (self.factor_effects or {}).values():
            # a pair without a level of the factor gets no offset from it
            parts.append(np.append(effect.bias, 0.0))
        for bias in parts:
            if bias.size:
                low += float(bias.min())
                high += float(bias.max())
        estimates = self.mean[open_pairs]
        return bool(
            float(estimates.min()) + low < 0.0
            or float(estimates.max()) + high > float(self.scale.lmax)
        )

    def _held(self, expected: FloatArray) -> FloatArray:
        """Expectations held within the scale's range."""
        return np.asarray(np.clip(expected, 0.0, float(self.scale.lmax)), dtype=np.float64)

    def _ratio_moments(
        self, expected: FloatArray, ey: FloatArray, vy: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray]:
        """The delta method's means and covariances of nDCG or RBP (docs/method.md §3.1) when
        each entry is worth ``expected`` and each query's ideal has moments ``ey``, ``vy``:
        ``mean_A = (1/n_Q) sum_q E[X_Aq] / E[Y_q]`` and the matrix ``T / n_Q^2`` of
        :func:`mtcjudge.mtc.measures.accumulate`, from the entries and the co-retrievals; and
        each entry's weight ``c_e / E[Y_q]``, 0 once judged (the offsets' masses)."""
        c = self.collection
        ns, nq = c.n_systems, c.n_queries
        pq = c.pair_query[c.entry_pair]
        inv = inverse_denominators(ey)
        cell = c.entry_system * nq + pq
        ex = np.bincount(cell, weights=self.coef * expected, minlength=ns * nq).reshape(ns, nq)
        scaled = self.coef * inv[pq]
        own = np.bincount(c.entry_system, weights=scaled**2 * self.var[c.entry_pair], minlength=ns)
        if self._co is None:
            self._co = CoRetrieval.build(c, self.coef)
        co = self._co
        if self._co_cells is None:  # fixed by the collection: made once
            self._co_cells = (co.system_a * ns + co.system_b, c.pair_query[co.pair])
        cells, co_query = self._co_cells
        shared = np.bincount(
            cells, weights=co.product * inv[co_query] ** 2 * self.var[co.pair], minlength=ns * ns
        ).reshape(ns, ns)
        t_mat = shared + shared.T + np.diag(own) + (ex * (vy * inv**4)) @ ex.T
        weights = np.asarray(scaled * ~self.judged[c.entry_pair], dtype=np.float64)
        return (ex * inv).sum(axis=1) / nq, t_mat / nq**2, weights

    def _twins(self, variance: FloatArray) -> FloatArray | float:
        """The covariance between systems with the same run (:attr:`Collection.run_class`)
        that an offset of each system's own adds (``variance``: its mass² times the offset's
        posterior variance, the diagonal's): their results are the same results and share
        their offsets, so their difference stays exactly 0 (docs/method.md §3.5). 0 when no
        two systems have the same run."""
        run_class = self.collection.run_class
        if not np.any(run_class != np.arange(run_class.shape[0])):
            return 0.0
        twins = run_class[:, None] == run_class[None, :]
        np.fill_diagonal(twins, False)
        # twins have the same mass and the same posterior: mass_A mass_B Var[b]
        return np.asarray(twins * np.sqrt(np.outer(variance, variance)), dtype=np.float64)


def relearn_offsets(engine: SystemEffectEngine) -> None:
    """Re-estimate the engine's offsets from all its judgments
    (:meth:`SystemEffectEngine.learnt_offsets`).

    With variance strata the strata's variance factors are applied to the engine's estimates
    when one of them changes (:meth:`~mtcjudge.mtc.engine.MTCEngine.set_variance_factor`,
    which re-estimates), and :attr:`SystemEffectEngine.learnt_var_factor` holds them."""
    learnt = engine.learnt_offsets(engine.judged)
    if learnt.var_factor is not None:
        used = learnt.var_factor
        current = engine.var_factor if engine.var_factor is not None else np.ones_like(used)
        if not np.array_equal(used, current):
            engine.set_variance_factor(used)
        engine.learnt_var_factor = used
    engine.effect = learnt.system
    if engine.result_groups is not None:
        engine.group_effect = learnt.group
    if engine.factors:
        engine.factor_effects = learnt.factors
    engine.invalidate()
