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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.effects import (
    EntryOffsets,
    ErrorOffsets,
    OffsetFactor,
    SystemEffect,
    estimate_system_effect,
)
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.measures import (
    Evaluation,
    finish,
    inverse_denominators,
    pool_ideals,
)
from mtcjudge.mtc.selection import CoRetrieval

__all__ = [
    "AUDIT_EVERY",
    "CALIBRATED_ERRORS",
    "JOINT_ERRORS",
    "VARIANCE_STRATA",
    "ErrorModel",
    "SystemEffectEngine",
    "metadata_factors",
    "on_factor_grid",
    "recalibrate",
    "shared_groups",
    "system_effect_from_judgments",
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
        genre cell (:func:`metadata_factors`), and a common variance factor learnt from a
        random audit of one judgment in ``audit_every``; the confidence weights take the
        variance of each pair's estimate into account (:attr:`MTCEngine.selection_var`).
    audit_every : int
        With ``shared``: one judgment in this many goes to the audit sample.
    shift_means : bool
        The offsets move the expected scores (False: they only widen the variances).
    learn : bool
        :meth:`SystemEffectEngine.judge` re-learns the offsets from all the judgments. False
        only for experiments that set :attr:`SystemEffectEngine.effect` themselves.
    variance_strata : int
        With ``shared``: split the pool into this many strata by the quantiles of the
        estimates' own (judgment-free) variances; each stratum gets a mean offset (a further
        factor, "estimate stratum") and its own variance factor learnt from the audit pairs
        in it (:func:`stratum_variance_scales`), in place of the one κ. 0: off.
    """

    shared: bool = False
    audit_every: int = AUDIT_EVERY
    shift_means: bool = True
    learn: bool = True
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


def _entry_ranges(start: IntArray, index: IntArray) -> IntArray:
    """The entries ``start[i]:start[i + 1]`` of every ``i`` in ``index``, concatenated."""
    lo = start[index]
    counts = start[index + 1] - lo
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, dtype=np.intp)
    first = np.cumsum(counts) - counts  # where each range starts in the output
    return np.asarray(np.arange(total) + np.repeat(lo - first, counts), dtype=np.intp)


def _judged_entries(collection: Collection, judged: NDArray[np.bool_]) -> IntArray:
    """Indices of the entries of the judged pairs, in entry order: the entries are sorted by
    pair, so this is ``numpy.flatnonzero(judged[collection.entry_pair])`` without a pass over
    every entry."""
    return _entry_ranges(collection.entry_start, np.flatnonzero(judged))


def _open_weights(engine: MTCEngine) -> FloatArray:
    """Every entry's coefficient over ``E[Y_q]`` of its query; 0 once its pair is judged."""
    c = engine.collection
    return np.asarray(
        engine.coef
        * inverse_denominators(engine.ey)[c.pair_query[c.entry_pair]]
        * ~engine.judged[c.entry_pair],
        dtype=np.float64,
    )


def _level_cells(
    collection: Collection, level: IntArray, n_levels: int
) -> tuple[IntArray, IntArray]:
    """The entries whose pair has a level (not -1), and their (system, level) cell."""
    entry_level = level[collection.entry_pair]
    valid = np.flatnonzero(entry_level >= 0)
    return valid, collection.entry_system[valid] * n_levels + entry_level[valid]


def _mass_by_cell(
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


class _UnjudgedMass:
    """``f_A`` of :meth:`SystemEffectEngine.unjudged_mass`, kept up to date by difference.

    The weight of every entry (its coefficient over ``E[Y_q]``, 0 once its pair is judged)
    is kept in system order. When pairs are judged, or ``E[Y_q]`` changes (ratio measures),
    only their entries are recomputed and only the systems that retrieve them are summed
    again, over their entries in entry order from 0, as :func:`numpy.bincount` sums them in a
    full pass: the masses are bit for bit those of a full pass. The index arrays depend on
    the collection only and are shared by copies of the engine.
    """

    def __init__(self, engine: SystemEffectEngine) -> None:
        c = engine.collection
        self.order = np.argsort(c.entry_system, kind="stable").astype(np.intp)
        self.position = np.empty_like(self.order)
        self.position[self.order] = np.arange(self.order.shape[0], dtype=np.intp)
        counts = np.bincount(c.entry_system, minlength=c.n_systems)
        self.start = np.concatenate(([0], np.cumsum(counts))).astype(np.intp)
        self.zeros = np.zeros(int(counts.max(initial=0)), dtype=np.intp)
        self._full(engine)

    def __deepcopy__(self, memo: dict[int, object]) -> _UnjudgedMass:
        clone = object.__new__(_UnjudgedMass)
        clone.__dict__.update(self.__dict__)
        for name in ("judged", "ey", "weight", "mass"):  # the rest is fixed by the collection
            setattr(clone, name, getattr(self, name).copy())
        return clone

    def resync(self, engine: SystemEffectEngine) -> None:
        """Recompute every weight and mass from the engine's state (a full pass)."""
        self._full(engine)

    def _full(self, engine: SystemEffectEngine) -> None:
        c = engine.collection
        self.judged = engine.judged.copy()
        self.ey = engine.ey.copy()
        w = _open_weights(engine)
        self.mass = np.bincount(c.entry_system, weights=w, minlength=c.n_systems)
        self.weight = w[self.order]

    def mass_of(self, engine: SystemEffectEngine) -> FloatArray:
        c = engine.collection
        pairs = np.flatnonzero(engine.judged != self.judged)
        queries = np.flatnonzero(engine.ey != self.ey)
        if pairs.size or queries.size:
            entries = _entry_ranges(c.entry_start, pairs)
            if queries.size:
                entries = np.union1d(entries, _entry_ranges(c.query_entry_start, queries))
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


class SystemEffectEngine(MTCEngine):
    """:class:`MTCEngine` whose score distributions include error offsets learnt from the
    judgments, built whole from its :class:`ErrorModel`.

    ``evaluation()`` adds ``f_A E[b_A]`` to each system's expected score and
    ``f_A^2 Var[b_A]`` to its variance (:mod:`mtcjudge.mtc.effects`), plus the shared offsets
    of :attr:`ErrorModel.shared`. With :attr:`ErrorModel.learn` (every estimator a campaign
    names) :meth:`judge` re-learns every offset from all the judgments, so the engine is
    consistent after each call; an experiment that sets :attr:`effect` itself builds it with
    ``learn=False`` and calls :meth:`invalidate`.

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

    #: the posterior of the per-system offsets, set by :meth:`recalibrate`
    effect: SystemEffect | None = None
    #: their posteriors of the further factors, by name, set by :meth:`recalibrate`
    factor_effects: dict[str, SystemEffect] | None = None
    #: the posterior of the group offsets (around their system's), set by :meth:`recalibrate`
    group_effect: SystemEffect | None = None
    #: the fixed random order of the pool the audit draws in, made on first use
    _audit_order: IntArray | None = None
    #: with variance strata, every pair's variance factor as last learnt (:func:`recalibrate`)
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
        self.shift_means = errors.shift_means
        self.learn_variance = errors.shared
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
        if errors.learn:
            self.recalibrate()

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

    def recalibrate(self) -> None:
        """Re-learn the offsets from every judgment (:func:`recalibrate`); :meth:`judge` calls
        it. Nothing to do when the offsets are set from outside (``ErrorModel(learn=False)``)."""
        if self.errors.learn:
            recalibrate(self, self.model)

    @property
    def offsets(self) -> ErrorOffsets | None:
        """The offsets the score distributions include (None before any are set)."""
        if self.effect is None:
            return None
        return ErrorOffsets(self.effect, self.shift_means, tuple(name for name, _ in self.factors))

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
        offset = np.zeros(n)
        if self.shift_means:
            # the factors' means, less what the scale's ends hold back (entry_expectations)
            offset = self.entry_expectations() - self.mean[c.entry_pair]
            offset[self.judged[c.entry_pair]] = 0.0
        return EntryOffsets(offset, float(self.effect.variance_scale), tuple(factors))

    def unjudged_mass_by(self, level: IntArray, n_levels: int) -> FloatArray:
        """Coefficient mass of each system still on estimates, split by the level of the
        pairs (systems x levels, score units); pairs at level -1 are left out."""
        valid, cell = _level_cells(self.collection, level, n_levels)
        return _mass_by_cell(self, _open_weights(self), valid, cell, n_levels)

    #: per factor: its entries with a level, their (system, level) cell, the number of levels
    _cells: list[tuple[IntArray, IntArray, int]] | None = None

    def _factor_masses(self, weights: FloatArray) -> list[FloatArray]:
        """:meth:`unjudged_mass_by` of every factor, from the entries' weights
        (:func:`_open_weights`; the cells depend on the collection only and are made once)."""
        if self._cells is None:
            self._cells = []
            for _, level in self.factors:
                n_levels = max(int(level.max(initial=-1)) + 1, 1)
                self._cells.append((*_level_cells(self.collection, level, n_levels), n_levels))
        return [_mass_by_cell(self, weights, valid, cell, n) for valid, cell, n in self._cells]

    #: the bookkeeping of :meth:`unjudged_mass`, made on its first call
    _unjudged: _UnjudgedMass | None = None

    def unjudged_mass(self) -> FloatArray:
        """``f_A``: coefficient mass of A still on estimates, in score units.

        ``(1/n_Q) sum_{unjudged entries e of A} c_e / E[Y_q(e)]``, updated for the pairs
        judged since the last call (:class:`_UnjudgedMass`), exactly as a full pass."""
        if self._unjudged is None:
            self._unjudged = _UnjudgedMass(self)
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
        if self.effect is None or not self.shift_means:
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
        the offsets' masses included, divide by it."""
        c = self.collection
        nq = c.n_queries
        mean = self.score_sum / nq
        cov = self.t_mat / nq**2
        if self.effect is None:
            return mean, cov
        shift = self.entry_shift() if self.shift_means else None
        weights: FloatArray | None = None
        if shift is not None and self._ratio:
            # a common ideal per query, computed from the expectations the numerators use
            expected = self._held(self.mean[c.entry_pair] + shift)
            ey, vy = pool_ideals(c, self.ideal_values(expected), self.var, self._discount)
            mean, cov, weights = self._ratio_moments(expected, ey, vy)
            f = np.bincount(c.entry_system, weights=weights, minlength=c.n_systems) / nq
        else:
            f = self.unjudged_mass()
            if shift is not None:
                mean = mean + f * self.effect.bias
        cov = cov * self.effect.variance_scale
        cov = cov + np.diag(f**2 * self.effect.post_var) + self._twins(f**2 * self.effect.post_var)
        if self.factor_effects or self.group_effect is not None:
            weights = _open_weights(self) if weights is None else weights
        linear = shift is not None and not self._ratio
        if self.group_effect is not None and self.result_groups is not None:
            assert weights is not None
            # every entry is in a group: systems x (unshared, shared) masses
            mass = _mass_by_cell(self, weights, slice(None), self.result_groups, 2)
            group = self.group_effect
            if linear:
                mean = mean + (mass * group.bias.reshape(mass.shape)).sum(axis=1)
            own = mass**2 * group.post_var.reshape(mass.shape)
            cov = cov + np.diag(own.sum(axis=1)) + self._twins(own[:, 0]) + self._twins(own[:, 1])
        if self.factor_effects:
            assert weights is not None
            for (name, _), mass in zip(self.factors, self._factor_masses(weights), strict=True):
                effect = self.factor_effects[name]
                if linear:
                    mean = mean + mass @ effect.bias
                cov = cov + (mass * effect.post_var) @ mass.T
        if linear and self._may_leave_scale():
            assert shift is not None
            # the linear shift is exact while no entry leaves the scale: what the scale's ends
            # hold back comes off entry by entry
            shifted = self.mean[c.entry_pair] + shift
            held = self._held(shifted) - shifted
            if np.any(held):
                pq = c.pair_query[c.entry_pair]
                moved = self.coef * inverse_denominators(self.ey)[pq] * held
                mean = mean + np.bincount(c.entry_system, weights=moved, minlength=c.n_systems) / nq
        return mean, cov

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


class _JudgedResiduals(NamedTuple):
    """The judged entries (sorted by pair), their pairs, the residual of each against its
    judgment-free estimate, and that estimate's variance (the model's own, without a
    variance factor): what every offset is learnt from, made once per recalibration."""

    entries: IntArray
    pairs: IntArray
    residual: FloatArray
    variance: FloatArray

    def first_of_pair(self) -> IntArray:
        """Index of each judged pair's first entry (the entries are sorted by pair)."""
        p = self.pairs
        return np.flatnonzero(np.concatenate(([True], p[1:] != p[:-1]))) if p.size else p


def _judged_residuals(engine: SystemEffectEngine, model: RelevanceModel) -> _JudgedResiduals:
    """:class:`_JudgedResiduals` of the engine's judgments under ``model``."""
    c = engine.collection
    base_mean, base_var = model.prior_estimates()
    entries = _judged_entries(c, engine.judged)
    pairs = c.entry_pair[entries]
    residual = engine.values[pairs] - base_mean[pairs]
    return _JudgedResiduals(entries, pairs, residual, base_var[pairs])


def system_effect_from_judgments(
    engine: SystemEffectEngine,
    model: RelevanceModel,
    *,
    tau2_prior: float = 0.0,
    prior_weight: float = 0.0,
    learn_variance: bool = False,
    judged: _JudgedResiduals | None = None,
) -> SystemEffect:
    """Per-system offsets from every judged pair, against its judgment-free estimate.

    Valid when the estimates do not depend on other judgments (M_out or a prior,
    no M_jud): the estimate a pair had just before its judgment is then its
    judgment-free one whatever the order of the judgments, so processes that
    replay the same judgments in different orders agree. ``judged``: the residuals if
    already made (:func:`recalibrate` makes them once for every offset).
    """
    c = engine.collection
    entries, pairs, residual, variance = judged or _judged_residuals(engine, model)
    systems = c.entry_system[entries]
    effect = estimate_system_effect(
        systems,
        residual,
        variance,
        c.n_systems,
        tau2_prior=tau2_prior,
        prior_weight=prior_weight,
    )
    if not learn_variance or pairs.size == 0:
        return effect
    keep = _variance_sample(engine, pairs)
    kappa = variance_scale(residual[keep], variance[keep], systems[keep], pairs[keep], effect)
    if kappa == 1.0:  # the common case: the offsets just estimated stand
        return effect
    effect = estimate_system_effect(
        systems,
        residual,
        kappa * variance,
        c.n_systems,
        tau2_prior=tau2_prior,
        prior_weight=prior_weight,
    )
    return replace(effect, variance_scale=kappa)


#: pseudo-observations of a calibrated model (z² = 1) behind every variance factor
VARIANCE_PRIOR = 20.0


def _variance_sample(engine: SystemEffectEngine, pairs: IntArray) -> slice | NDArray[np.bool_]:
    """Which of the judged entries (of ``pairs``) the variance factors are learnt from: with an
    audit, the audit sample alone, since the pairs the policy chose for being informative are
    not a fair sample of those left on estimates; under the random policy every judgment is a
    random draw among them, and all of them count."""
    if engine.audit_every and engine.audit_drawn is not None and engine.config.policy != "random":
        return engine.audit_drawn[pairs]
    return slice(None)


def standardised_squares(
    residual: FloatArray,
    variance: FloatArray,
    systems: IntArray,
    pairs: IntArray,
    effect: SystemEffect,
) -> tuple[IntArray, FloatArray]:
    """Each judged pair once (its entries share one residual), and its squared residual once
    its systems' offsets are taken out (their mean), over its variance. The entries come as
    the judged residuals hold them, sorted by pair."""
    if pairs.size == 0:
        return pairs, np.empty(0)
    first = np.flatnonzero(np.concatenate(([True], pairs[1:] != pairs[:-1])))
    count = np.diff(np.append(first, pairs.shape[0]))
    offset = np.add.reduceat(effect.bias[systems], first) / count
    z2 = (residual[first] - offset) ** 2 / np.maximum(variance[first], 1e-9)
    return pairs[first], np.asarray(z2, dtype=np.float64)


def variance_scale(
    residual: FloatArray,
    variance: FloatArray,
    systems: IntArray,
    pairs: IntArray,
    effect: SystemEffect,
    *,
    prior: float = VARIANCE_PRIOR,
) -> float:
    """Common factor on the estimation variances: the shrunk mean squared standardised
    residual of the judged pairs once their systems' offsets are taken out
    (:func:`standardised_squares`; the entries sorted by pair).

    ``prior`` pseudo-observations of a calibrated model (z^2 = 1) keep a few early surprises
    from exploding the factor, and the factor is never below 1: judgments may widen the
    distributions, not narrow them.
    """
    z2 = standardised_squares(residual, variance, systems, pairs, effect)[1]
    return float(max(1.0, (prior + z2.sum()) / (prior + z2.size)))


def recalibrate(
    engine: SystemEffectEngine, model: RelevanceModel, *, estimates: bool = True
) -> None:
    """Re-estimate the engine's offsets from all its judgments.

    With variance strata the strata's variance factors are learnt too, and applied to the
    engine's estimates unless ``estimates`` is False (a shallow copy that only reads the
    offsets, mtcjudge.mtc.reliability): :attr:`SystemEffectEngine.learnt_var_factor` holds
    them either way."""
    judged = _judged_residuals(engine, model)
    learn_variance = engine.learn_variance
    if learn_variance and engine.variance_stratum is not None:
        judged = stratum_variance_scales(engine, judged, apply=estimates)
        learn_variance = False  # the strata's factors take the place of the one κ
    engine.effect = system_effect_from_judgments(
        engine, model, learn_variance=learn_variance, judged=judged
    )
    if engine.result_groups is not None:
        engine.group_effect = group_effect_from_judgments(engine, judged, engine.effect)
    if engine.factors:
        engine.factor_effects = factor_effects_from_judgments(
            engine, judged, engine.effect, engine.group_effect
        )
    engine.invalidate()


#: the strata's variance factors are applied on a grid of this ratio (5 %), so that what an
#: engine holds depends on its judgments alone, not on the order they came in
FACTOR_STEP = 1.05


def variance_strata(variance: FloatArray, n: int) -> IntArray:
    """The stratum of every pair by the quantiles of its estimate's variance, numbered from 0
    (the lowest variances) without gaps; tied quantiles merge strata (every variance equal:
    one stratum)."""
    edges = np.unique(np.quantile(variance, np.arange(1, n) / n))
    strata = np.searchsorted(edges, variance, side="right")
    return np.unique(strata, return_inverse=True)[1].astype(np.intp).reshape(strata.shape)


def on_factor_grid(factor: FloatArray) -> FloatArray:
    """Factors of at least 1 rounded to the nearest power of :data:`FACTOR_STEP`."""
    step = np.log(FACTOR_STEP)
    return np.asarray(np.exp(np.round(np.log(np.maximum(factor, 1.0)) / step) * step))


def stratum_variance_scales(
    engine: SystemEffectEngine, judged: _JudgedResiduals, *, apply: bool = True
) -> _JudgedResiduals:
    """One variance factor per stratum of :attr:`SystemEffectEngine.variance_stratum`, learnt
    as κ is (:func:`variance_scale`) from the judged audit pairs of the stratum (every judged
    pair under the random policy) once the system offsets are taken out, and rounded to a 5 %
    grid (:func:`on_factor_grid`), so that an engine that saw the judgments one by one and one
    built from them at once hold the same. With ``apply`` they are set on the engine
    (:meth:`~mtcjudge.mtc.engine.MTCEngine.set_variance_factor`, which re-estimates) when one
    of them changes; returned: the residuals with their variances scaled by them."""
    assert engine.variance_stratum is not None
    c = engine.collection
    stratum = engine.variance_stratum
    n_strata = int(stratum.max(initial=0)) + 1
    scale = np.ones(n_strata)
    if judged.pairs.size:
        systems = c.entry_system[judged.entries]
        effect = estimate_system_effect(systems, judged.residual, judged.variance, c.n_systems)
        keep = _variance_sample(engine, judged.pairs)
        pairs, z2 = standardised_squares(
            judged.residual[keep], judged.variance[keep], systems[keep], judged.pairs[keep], effect
        )
        level = stratum[pairs]
        z2_sum = np.bincount(level, weights=z2, minlength=n_strata)
        n = np.bincount(level, minlength=n_strata)
        scale = np.maximum(1.0, (VARIANCE_PRIOR + z2_sum) / (VARIANCE_PRIOR + n))
    used = on_factor_grid(scale)[stratum]
    if apply:
        current = engine.var_factor if engine.var_factor is not None else np.ones_like(used)
        if not np.array_equal(used, current):
            engine.set_variance_factor(used)
    engine.learnt_var_factor = used
    return judged._replace(variance=judged.variance * used[judged.pairs])


def shared_groups(collection: Collection) -> IntArray:
    """Per entry, the group of its result among its system's: ``2 A + 1`` when other systems
    retrieved the same document for the query too, ``2 A`` when system A alone did (the
    (system, level) cell of :func:`_level_cells` with the level "shared")."""
    shared = (np.diff(collection.entry_start) > 1).astype(np.intp)
    return _level_cells(collection, shared, 2)[1]


def group_effect_from_judgments(
    engine: SystemEffectEngine, judged: _JudgedResiduals, system_effect: SystemEffect
) -> SystemEffect:
    """Empirical-Bayes offsets of each system's shared and unshared results around the
    system's own offset (docs/method.md §8.2).

    The judged entries' residuals, less their system's offset, grouped by
    :attr:`SystemEffectEngine.result_groups`; the between-group variance is learnt from
    them (DerSimonian-Laird) and is 0 when a system's shared and unshared results err
    alike, so the groups then add nothing. Each entry counts as in the system offsets."""
    assert engine.result_groups is not None
    c = engine.collection
    return estimate_system_effect(
        engine.result_groups[judged.entries],
        judged.residual - system_effect.bias[c.entry_system[judged.entries]],
        system_effect.variance_scale * judged.variance,
        2 * c.n_systems,
    )


def factor_effects_from_judgments(
    engine: SystemEffectEngine,
    judged: _JudgedResiduals,
    system_effect: SystemEffect,
    group_effect: SystemEffect | None = None,
) -> dict[str, SystemEffect]:
    """Empirical-Bayes offsets of every further factor (query, artist, genre pair, ...)
    from the judged residuals, once the system (and group) offsets and the factors before it
    are taken out (one backfitting pass); each judged pair counts once."""
    c = engine.collection
    entries, pairs = judged.entries, judged.pairs
    count = np.bincount(pairs, minlength=c.n_pairs).astype(np.float64)
    entry_offset = system_effect.bias[c.entry_system[entries]]
    if group_effect is not None and engine.result_groups is not None:
        entry_offset = entry_offset + group_effect.bias[engine.result_groups[entries]]
    offset = np.bincount(pairs, weights=entry_offset, minlength=c.n_pairs)
    first = judged.first_of_pair()
    judged_pairs = pairs[first]
    residual = judged.residual[first] - offset[judged_pairs] / count[judged_pairs]
    variance = system_effect.variance_scale * judged.variance[first]
    effects: dict[str, SystemEffect] = {}
    for name, level in engine.factors:
        n_levels = int(level.max()) + 1 if level.size else 0
        lv = level[judged_pairs]
        has = lv >= 0
        effect = estimate_system_effect(lv[has], residual[has], variance[has], max(n_levels, 1))
        effects[name] = effect
        residual = residual - np.where(has, effect.bias[np.maximum(lv, 0)], 0.0)
    return effects


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
