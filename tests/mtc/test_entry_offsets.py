"""What an engine expects of every entry (:meth:`MTCEngine.entry_offsets`): the estimate of the
entry's pair plus the offsets the score distributions include. From the entries' expectations,
the pairs' variances and the offsets' posteriors alone, a brute-force sum gives every system's
expected score and the whole score covariance the engine computes, for every estimator,
measure and scale (the exports write exactly these, docs/exports.md)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.factory import ESTIMATOR_CHOICES, JOINT, engine_for_settings
from mtcjudge.mtc.joint import SystemEffectEngine
from mtcjudge.mtc.measures import MEASURES, RATIO_MEASURES, rank_discount
from mtcjudge.mtc.scales import BROAD, FINE, Scale

K = 3


def _on_scale(values: np.ndarray, scale: Scale) -> np.ndarray:
    return values if scale is FINE else np.clip(np.floor(values / 34.0), 0, 2)


def _judged_engine(
    loaded: LoadedCollection, estimator: str, measure: str, scale: Scale, seed: int = 1
) -> MTCEngine:
    """A third of the pool judged at random, then the audit's draws judged with assessors'
    noise (so that ``joint`` learns a variance factor above 1)."""
    c = loaded.collection
    engine, _ = engine_for_settings(c, loaded.metadata, scale, estimator, measure=measure)
    rng = np.random.default_rng(seed)
    truth = loaded.judged_values
    pairs = rng.choice(c.n_pairs, size=c.n_pairs // 3, replace=False)
    engine.judge(pairs, _on_scale(truth[pairs], scale))
    for _ in range(4):
        engine.weights()  # draws the audit's due pairs
        due = engine.audit_pairs()
        due = due[~engine.judged[due]]
        if due.size:
            noisy = np.clip(truth[due] + rng.normal(0.0, 45.0, due.size), 0, 100)
            engine.judge(due, _on_scale(np.round(noisy), scale))
    return engine


def _rebuild(engine: MTCEngine) -> tuple[np.ndarray, np.ndarray]:
    """Every system's expected score and the score covariance, summed entry by entry from
    what :meth:`entry_offsets` and the pairs' estimates say (no engine statistics)."""
    c = engine.collection
    cfg = engine.config
    nq, ns = c.n_queries, c.n_systems
    offsets = engine.entry_offsets()
    disc = rank_discount(cfg.measure, np.arange(1, c.k + 1), cfg.rbp_p)
    coef = rank_discount(cfg.measure, c.entry_rank, cfg.rbp_p)
    pair_mean, pair_var = engine.mean, engine.var
    expected = pair_mean[c.entry_pair] + offsets.offset
    # the ideal list: each pool pair at the largest expectation of its entries
    ideal = np.full(c.n_pairs, -np.inf)
    np.maximum.at(ideal, c.entry_pair, expected)
    ey, vy = np.empty(nq), np.empty(nq)
    for q in range(nq):
        sl = c.pairs_of_query(q)
        if cfg.measure in RATIO_MEASURES:  # the ideal: the top k of the pool by those values
            top = np.argsort(-ideal[sl], kind="stable")[: c.k]
            ey[q] = ideal[sl][top] @ disc[: top.size]
            vy[q] = pair_var[sl][top] @ disc[: top.size] ** 2
        else:
            ey[q], vy[q] = engine.scale.lmax * disc.sum(), 0.0
    inv = np.divide(1.0, ey, out=np.zeros(nq), where=ey > 0)
    query = c.pair_query[c.entry_pair]
    weight = coef * inv[query] / nq
    mean = np.bincount(c.entry_system, weights=weight * expected, minlength=ns)
    loading = np.zeros((ns, c.n_pairs))
    loading[c.entry_system, c.entry_pair] = weight
    x = np.zeros((ns, nq))
    np.add.at(x, (c.entry_system, query), coef * expected)
    cov = (loading * pair_var) @ loading.T + (x * (vy * inv**4)) @ x.T / nq**2
    cov *= offsets.variance_scale
    unjudged = ~engine.judged[c.entry_pair]
    for factor in offsets.factors:
        mass = np.zeros((ns, factor.mean.shape[0]))
        at = unjudged & (factor.level >= 0)
        np.add.at(mass, (c.entry_system[at], factor.level[at]), weight[at])
        cov += (mass * factor.variance) @ mass.T
    return mean, cov


@pytest.mark.parametrize("estimator", ESTIMATOR_CHOICES)
@pytest.mark.parametrize("scale", [FINE, BROAD], ids=["fine", "broad"])
def test_entries_rebuild_every_score_distribution(
    loaded: LoadedCollection, estimator: str, scale: Scale
) -> None:
    for measure in MEASURES:
        engine = _judged_engine(loaded, estimator, measure, scale)
        evaluation = engine.evaluation()
        mean, cov = _rebuild(engine)
        np.testing.assert_allclose(mean, evaluation.mean, rtol=0, atol=1e-12, err_msg=measure)
        var = np.maximum(np.diag(cov), 0.0)
        scale_of = float(evaluation.var.max())
        np.testing.assert_allclose(var, evaluation.var, rtol=0, atol=1e-10 * scale_of)
        diff_var = var[:, None] + var[None, :] - 2.0 * cov
        np.fill_diagonal(diff_var, 0.0)
        np.testing.assert_allclose(diff_var, evaluation.diff_var, rtol=0, atol=1e-10 * scale_of)


def test_the_offsets_are_the_means_of_each_entrys_levels_and_judged_entries_have_none(
    loaded: LoadedCollection,
) -> None:
    engine = _judged_engine(loaded, JOINT, "cg", FINE)
    assert isinstance(engine, SystemEffectEngine)
    offsets = engine.entry_offsets()
    names = [f.name for f in offsets.factors]
    assert names == ["system", "result group", "query", "artist", "genre pair", "estimate stratum"]
    # the noisy audit taught the strata's variance factors (in the estimates' variances)
    assert offsets.variance_scale == 1.0
    assert engine.var_factor is not None
    assert engine.var_factor.max() > 1.0
    c = loaded.collection
    judged = engine.judged[c.entry_pair]
    assert judged.any()
    assert (~judged).any()
    assert not offsets.offset[judged].any()
    total = np.zeros(c.entry_pair.shape[0])
    for factor in offsets.factors:
        assert factor.level.shape == c.entry_pair.shape
        assert factor.mean.shape == factor.variance.shape
        assert (factor.variance >= 0).all()
        total += np.where(factor.level >= 0, factor.mean[np.maximum(factor.level, 0)], 0.0)
    # the factors' means, except where the scale's ends hold the expectation back
    shifted = engine.mean[c.entry_pair] + total
    inside = ~judged & (shifted >= 0.0) & (shifted <= FINE.lmax)
    assert inside.sum() > 0.5 * (~judged).sum()
    np.testing.assert_allclose(offsets.offset[inside], total[inside], rtol=0, atol=1e-12)
    held = ~judged & ~inside
    np.testing.assert_allclose(
        engine.mean[c.entry_pair][held] + offsets.offset[held],
        np.clip(shifted[held], 0.0, FINE.lmax),
        rtol=0,
        atol=1e-12,
    )
    # the system factor's levels are the systems, the groups two per system
    np.testing.assert_array_equal(offsets.factors[0].level, c.entry_system)
    np.testing.assert_array_equal(offsets.factors[1].level // 2, c.entry_system)
    # the offsets move the scores: without them the sum misses joint's expected scores
    weight = rank_discount("cg", c.entry_rank) / (FINE.lmax * K) / c.n_queries
    plain = np.bincount(c.entry_system, weights=weight * engine.mean[c.entry_pair])
    assert np.abs(plain - engine.evaluation().mean).max() > 1e-3


@pytest.mark.parametrize("estimator", ["uniform", "historical", "ordinal"])
def test_engines_that_learn_no_offsets_expect_their_pairs_estimates(
    loaded: LoadedCollection, estimator: str
) -> None:
    engine = _judged_engine(loaded, estimator, "cg", FINE)
    offsets = engine.entry_offsets()
    assert offsets.factors == ()
    assert offsets.variance_scale == 1.0
    assert not offsets.offset.any()
    assert offsets.offset.shape == loaded.collection.entry_pair.shape


def test_calibrated_learns_system_offsets_only(loaded: LoadedCollection) -> None:
    offsets = _judged_engine(loaded, "calibrated", "cg", FINE).entry_offsets()
    assert [f.name for f in offsets.factors] == ["system"]
    assert offsets.variance_scale == 1.0
