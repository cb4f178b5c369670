"""Deprecated alias of :mod:`mtcjudge.mtc.factory`, the engine factory (the estimators' names,
:func:`~mtcjudge.mtc.factory.build_engine` and :func:`~mtcjudge.mtc.factory.engine_for_settings`).

The module was renamed because it has nothing to do with calibration, and its
``campaign_engine`` is the factory's :func:`~mtcjudge.mtc.factory.engine_for_settings` (a
*campaign engine* is :class:`~mtcjudge.campaign_engine.build.CampaignEngine`). Importing it warns
(``DeprecationWarning``) and gives the factory's names; import them from
:mod:`mtcjudge.mtc.factory`.
"""

from __future__ import annotations

import warnings

from mtcjudge.mtc.factory import (
    AUDIT_EVERY,
    CALIBRATED,
    CAMPAIGN_ESTIMATORS,
    DEFAULT_ESTIMATOR,
    ESTIMATOR_CHOICES,
    ESTIMATOR_SUMMARIES,
    JOINT,
    REFERENCE_ESTIMATOR,
    build_engine,
    engine_for_settings,
)

#: the factory's former name of :func:`~mtcjudge.mtc.factory.engine_for_settings`
campaign_engine = engine_for_settings

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
    "campaign_engine",
]

warnings.warn(
    "mtcjudge.mtc.calibration is deprecated: import from mtcjudge.mtc.factory",
    DeprecationWarning,
    stacklevel=2,
)
