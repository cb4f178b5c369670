"""The engine factory: the estimators a campaign or a replay can name, and the one function
that builds their engine.

Every engine of the product is made by :func:`build_engine` (a campaign's planner, its
preview, ``mtcjudge simulate``, the projection and the benchmarks), so a replay runs exactly
the estimator a campaign would. :func:`engine_for_settings` is that factory with a campaign's
settings spelled out. (The module was ``mtcjudge.mtc.calibration`` before: a deprecated
alias of that name still imports.)

``calibrated`` and ``joint`` are ordinal M_out (no M_jud) on a
:class:`~mtcjudge.mtc.joint.SystemEffectEngine` (per-system error offsets; ``joint`` adds the
shared offsets and the audit, docs/method.md §8); every other name is a
:class:`~mtcjudge.mtc.estimators.RelevanceModel` kind on the plain
:class:`~mtcjudge.mtc.engine.MTCEngine`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from mtcjudge.mtc.collection import Collection, Metadata
from mtcjudge.mtc.engine import EngineConfig, MTCEngine
from mtcjudge.mtc.estimators import ESTIMATOR_KINDS, RelevanceModel
from mtcjudge.mtc.joint import (
    AUDIT_EVERY,
    CALIBRATED_ERRORS,
    JOINT_ERRORS,
    SystemEffectEngine,
)
from mtcjudge.mtc.scales import Scale

__all__ = [
    "AUDIT_EVERY",
    "CALIBRATED",
    "CAMPAIGN_ESTIMATORS",
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_CHOICES",
    "ESTIMATOR_SUMMARIES",
    "JOINT",
    "REFERENCE_ESTIMATOR",
    "build_engine",
    "engine_for_settings",
]

#: the estimator of the system-effect configuration: ordinal M_out (no M_jud) whose score
#: distributions include per-system error offsets learnt from the judgments
CALIBRATED = "calibrated"
#: the joint error model: ``calibrated`` plus offsets of each system's shared and unshared
#: results, offsets shared by the pairs of a query, of an artist and of a (query genre,
#: document genre) cell, and a common variance factor, all learnt from the judgments
#: (docs/method.md §8)
JOINT = "joint"
#: every estimator a replay can name, and a stored campaign may hold
ESTIMATOR_CHOICES = (*ESTIMATOR_KINDS, CALIBRATED, JOINT)
#: the estimator of a new campaign and of ``mtcjudge simulate`` without ``--model``: one
#: default, so that a replay shows what a campaign would do (docs/calibration.md measures it)
DEFAULT_ESTIMATOR = JOINT
#: the reference a new campaign may choose instead: every unjudged pair at the scale's
#: middle, no learning at all ([T]'s baseline)
REFERENCE_ESTIMATOR = "uniform"
#: what each estimator expects of a pair not judged yet, in a sentence a report can print
ESTIMATOR_SUMMARIES = {
    "uniform": "every level of the scale equally likely for every pair not judged yet ([T]'s "
    "reference)",
    "historical": "the distribution of the levels in past MIREX judgments, the same for every "
    "pair not judged yet",
    "ordinal": "an ordinal logistic model of the pair's features and of the judgments of its "
    "query and artist (M_out and M_jud, [T] 7.2.2)",
    CALIBRATED: "an ordinal logistic model of the pair's features (M_out), plus each system's "
    "error offset learnt from the judgments (docs/method.md §8)",
    JOINT: "an ordinal logistic model of the pair's features (M_out), plus error offsets "
    "learnt from the judgments for each system, its shared and unshared results, each query, "
    "artist and genre pair and each fifth of the pairs by how sure the model is of them, and "
    "for each of those fifths a variance factor learnt from a random audit of one judgment in "
    "20 (docs/method.md §8)",
}
#: the estimators a new campaign offers (form, ``campaign create --model``, JSON API): the
#: others are over-confident at 0.95 on the calibration benchmark (docs/calibration.md), so
#: only stored campaigns and replays use them
CAMPAIGN_ESTIMATORS = (DEFAULT_ESTIMATOR, REFERENCE_ESTIMATOR)


def build_engine(
    collection: Collection,
    metadata: Metadata | None,
    scale: Scale,
    estimator: str,
    config: EngineConfig | None = None,
    *,
    seed: int = 0,
    judged_values: ArrayLike | None = None,
    audit_drawn: ArrayLike | None = None,
    audit_allowed: ArrayLike | None = None,
) -> tuple[MTCEngine, RelevanceModel]:
    """The engine of the estimator named ``estimator``, and its relevance model.

    Parameters
    ----------
    collection : Collection
    metadata : Metadata or None
        Artists and genres (M_out and the shared offsets need them).
    scale : Scale
    estimator : str
        One of :data:`ESTIMATOR_CHOICES`.
    config : EngineConfig, optional
        The loop's settings. ``calibrated`` and ``joint`` wait for two judgments per
        system before they stop (``min_judgments``) unless the config sets a minimum.
    seed : int
        Seed of the random policy's choices.
    judged_values : array_like of shape (n_pairs,), optional
        The judgments known at the start, NaN where unjudged.
    audit_drawn, audit_allowed : array_like of bool, shape (n_pairs,), optional
        ``joint`` only: the pairs its audit drew before (as a campaign stored them) and
        those it may draw from.

    Returns
    -------
    engine : MTCEngine
        Consistent after construction and after every ``judge``.
    model : RelevanceModel
    """
    if estimator not in ESTIMATOR_CHOICES:
        raise ValueError(f"unknown estimator {estimator!r}: expected one of {ESTIMATOR_CHOICES}")
    config = config or EngineConfig()
    rng = np.random.default_rng(seed)
    if estimator not in (CALIBRATED, JOINT):
        model = RelevanceModel(collection, scale, estimator, metadata)
        return MTCEngine(collection, model, config, judged_values=judged_values, rng=rng), model
    model = RelevanceModel(collection, scale, "ordinal", metadata, use_m_jud=False)
    if config.min_judgments == 0:
        # the offsets need residuals before the confidence they adjust means anything
        config = replace(config, min_judgments=2 * collection.n_systems)
    engine = SystemEffectEngine(
        collection,
        model,
        config,
        judged_values=judged_values,
        rng=rng,
        errors=JOINT_ERRORS if estimator == JOINT else CALIBRATED_ERRORS,
        metadata=metadata,
        audit_drawn=audit_drawn,
        audit_allowed=audit_allowed,
    )
    return engine, model


def engine_for_settings(
    collection: Collection,
    metadata: Metadata | None,
    scale: Scale,
    estimator: str,
    *,
    measure: str = "cg",
    policy: str = "confidence",
    target: float = 0.95,
    seed: int = 0,
    judged_values: ArrayLike | None = None,
    audit_drawn: ArrayLike | None = None,
    audit_allowed: ArrayLike | None = None,
) -> tuple[MTCEngine, RelevanceModel]:
    """The engine a campaign runs: :func:`build_engine` with a campaign's settings (the web
    app's planner and preview use it)."""
    return build_engine(
        collection,
        metadata,
        scale,
        estimator,
        EngineConfig(measure=measure, policy=policy, target=target),
        seed=seed,
        judged_values=judged_values,
        audit_drawn=audit_drawn,
        audit_allowed=audit_allowed,
    )
