"""What the system-effect engine learns from its judgments: the posteriors of its error
offsets (docs/method.md §8.1, §8.2).

Every offset is learnt from the judged pairs' residuals against their judgment-free
estimates (:mod:`mtcjudge.mtc.residuals`): the per-system offsets
(:func:`system_effect_from_judgments`), the offsets of each system's shared and unshared
results (:func:`group_effect_from_judgments`) and those of the further factors (query,
artist, genre cell, variance stratum: :func:`factor_effects_from_judgments`), all at once by
:func:`learn_offsets`, with the variance strata's factors first (:mod:`mtcjudge.mtc.strata`).
Nothing here changes the engine: :func:`mtcjudge.mtc.joint.relearn_offsets` sets what
the engine learns (:meth:`mtcjudge.mtc.joint.SystemEffectEngine.learnt_offsets`) on it, and
:func:`pair_offsets` reads what some judgments alone teach for each pair (an assessor's
expected answers, :mod:`mtcjudge.mtc.reliability`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.effects import SystemEffect, estimate_system_effect
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.residuals import JudgedResiduals, LearningEngine, judged_residuals
from mtcjudge.mtc.strata import stratum_factors

__all__ = [
    "LearntOffsets",
    "PairOffsets",
    "factor_effects_from_judgments",
    "group_effect_from_judgments",
    "learn_offsets",
    "offsets_around",
    "pair_offsets",
    "system_effect_from_judgments",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]


def system_effect_from_judgments(
    engine: LearningEngine,
    model: RelevanceModel,
    *,
    tau2_prior: float = 0.0,
    prior_weight: float = 0.0,
    judged: JudgedResiduals | None = None,
) -> SystemEffect:
    """Per-system offsets from every judged pair, against its judgment-free estimate.

    Valid when the estimates do not depend on other judgments (M_out or a prior,
    no M_jud): the estimate a pair had just before its judgment is then its
    judgment-free one whatever the order of the judgments, so processes that
    replay the same judgments in different orders agree. ``judged``: the residuals if
    already made (:func:`mtcjudge.mtc.joint.learn_offsets` makes them once for every offset).
    """
    c = engine.collection
    entries, _, residual, variance = judged or judged_residuals(engine, model)
    return estimate_system_effect(
        c.entry_system[entries],
        residual,
        variance,
        c.n_systems,
        tau2_prior=tau2_prior,
        prior_weight=prior_weight,
    )


def group_effect_from_judgments(
    engine: LearningEngine, judged: JudgedResiduals, system_effect: SystemEffect
) -> SystemEffect:
    """Empirical-Bayes offsets of each system's shared and unshared results around the
    system's own offset (docs/method.md §8.2).

    The judged entries' residuals, less their system's offset, grouped by the engine's
    :attr:`~mtcjudge.mtc.joint.SystemEffectEngine.result_groups`; the between-group variance
    is learnt from them (DerSimonian-Laird) and is 0 when a system's shared and unshared
    results err alike, so the groups then add nothing. Each entry counts as in the system
    offsets."""
    assert engine.result_groups is not None
    c = engine.collection
    return estimate_system_effect(
        engine.result_groups[judged.entries],
        judged.residual - system_effect.bias[c.entry_system[judged.entries]],
        system_effect.variance_scale * judged.variance,
        2 * c.n_systems,
    )


def factor_effects_from_judgments(
    engine: LearningEngine,
    judged: JudgedResiduals,
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


class LearntOffsets(NamedTuple):
    """What a :class:`~mtcjudge.mtc.joint.SystemEffectEngine` learns from a set of judgments
    (:func:`learn_offsets`): the posteriors of its offsets and, with variance strata, every
    pair's variance factor (None without strata)."""

    system: SystemEffect
    group: SystemEffect | None
    factors: dict[str, SystemEffect] | None
    var_factor: FloatArray | None


def learn_offsets(
    engine: LearningEngine, model: RelevanceModel, judged: NDArray[np.bool_]
) -> LearntOffsets:
    """Learn the engine's offsets from the judgments of the pairs ``judged`` (a mask over the
    pool; the engine's own :attr:`~mtcjudge.mtc.engine.MTCEngine.judged` for all of them),
    changing nothing.

    The residuals are made once (:func:`~mtcjudge.mtc.residuals.judged_residuals`).
    With variance strata the strata's factors are learnt first
    (:func:`~mtcjudge.mtc.strata.stratum_factors`) and scale the residuals' variances;
    then the system offsets, and the result groups' and the further factors' around them
    (:func:`offsets_around`)."""
    residuals = judged_residuals(engine, model, judged)
    var_factor: FloatArray | None = None
    if engine.variance_stratum is not None:
        var_factor = stratum_factors(engine, residuals)
        residuals = residuals._replace(variance=residuals.variance * var_factor[residuals.pairs])
    system = system_effect_from_judgments(engine, model, judged=residuals)
    return offsets_around(engine, residuals, system, var_factor)


def offsets_around(
    engine: LearningEngine,
    judged: JudgedResiduals,
    system: SystemEffect,
    var_factor: FloatArray | None = None,
) -> LearntOffsets:
    """The :class:`LearntOffsets` of the per-system offsets ``system`` learnt from the
    residuals ``judged``: with them, the offsets of the result groups and of the further
    factors that the engine has, learnt around them, and the pairs' variance factors
    ``var_factor`` (with variance strata; None without)."""
    group = None
    if engine.result_groups is not None:
        group = group_effect_from_judgments(engine, judged, system)
    factors = None
    if engine.factors:
        factors = factor_effects_from_judgments(engine, judged, system, group)
    return LearntOffsets(system, group, factors, var_factor)


class PairOffsets(NamedTuple):
    """Pairs' judgment-free estimates and the offsets learnt from some judgments
    (:func:`pair_offsets`), in the engine's units, shape (n,) each."""

    #: the judgment-free estimate (M_out or the prior)
    mean: FloatArray
    #: its variance, with the learnt variance factors (the strata's, and the system offsets'
    #: ``variance_scale``)
    var: FloatArray
    #: the mean of the pair's offsets: those of its entries' systems and result groups
    #: (averaged over its entries) and those of its query, artist, genre cell and stratum
    offset: FloatArray
    #: their posterior variance
    offset_var: FloatArray


def pair_offsets(
    engine: LearningEngine, learnt: LearntOffsets, pairs: slice | None = None
) -> PairOffsets:
    """The judgment-free estimates of ``pairs`` (all by default) and the offsets ``learnt``
    of each (what the engine learns from some judgments alone,
    :meth:`~mtcjudge.mtc.joint.SystemEffectEngine.learnt_offsets`), without changing the
    engine (what an assessor's answers are weighed against, mtcjudge.mtc.reliability)."""
    c = engine.collection
    sl = pairs if pairs is not None else slice(0, c.n_pairs)
    base_mean, base_var = engine.model.prior_estimates()
    mean = base_mean[sl].copy()
    effect = learnt.system
    var = base_var[sl] * effect.variance_scale
    if learnt.var_factor is not None:  # variance strata: one factor per stratum
        var = var * learnt.var_factor[sl]
    lo, hi = sl.start or 0, sl.stop if sl.stop is not None else c.n_pairs
    e_lo, e_hi = int(c.entry_start[lo]), int(c.entry_start[hi])
    entry_pair = c.entry_pair[e_lo:e_hi] - lo
    systems = c.entry_system[e_lo:e_hi]
    n = hi - lo
    count = np.bincount(entry_pair, minlength=n).astype(np.float64)
    count = np.maximum(count, 1.0)
    bias = np.bincount(entry_pair, weights=effect.bias[systems], minlength=n)
    pvar = np.bincount(entry_pair, weights=effect.post_var[systems], minlength=n)
    group = learnt.group
    if group is not None and engine.result_groups is not None:
        g = engine.result_groups[e_lo:e_hi]
        bias += np.bincount(entry_pair, weights=group.bias[g], minlength=n)
        pvar += np.bincount(entry_pair, weights=group.post_var[g], minlength=n)
    offset = bias / count
    offset_var = pvar / count**2
    for name, level in engine.factors:
        fe = (learnt.factors or {}).get(name)
        if fe is None:
            continue
        lv = level[sl]
        has = lv >= 0
        idx = np.maximum(lv, 0)
        offset = offset + np.where(has, fe.bias[idx], 0.0)
        offset_var = offset_var + np.where(has, fe.post_var[idx], 0.0)
    return PairOffsets(mean, var, offset, offset_var)
