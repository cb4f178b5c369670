"""Deprecated alias of :mod:`mtcjudge.mtc.factory`, the engine factory (the estimators' names,
:func:`~mtcjudge.mtc.factory.build_engine` and :func:`~mtcjudge.mtc.factory.campaign_engine`).

The module was renamed because it has nothing to do with calibration. Importing it warns
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
    campaign_engine,
)

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
