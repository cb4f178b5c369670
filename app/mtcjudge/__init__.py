"""mtcjudge: Minimal Test Collections for MIREX Audio Music Similarity evaluation.

The web app is :mod:`mtcjudge.main`, the command line :mod:`mtcjudge.cli`. The Python API of
:mod:`mtcjudge.api` is available from the package root (``mtcjudge.load_files``,
``mtcjudge.make_engine``, ...; docs/api.md); it is imported on first use, so that the command
line and the web app do not load the numerical stack for it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mtcjudge.api import (
        CAMPAIGN_ESTIMATORS,
        DEFAULT_ESTIMATOR,
        ESTIMATOR_CHOICES,
        EngineConfig,
        Evaluation,
        LoadedCollection,
        MTCEngine,
        PairConfidence,
        ReplayResult,
        ScoreOrderWarning,
        SystemScore,
        load_files,
        make_engine,
        pair_confidences,
        replay_campaign,
        system_scores,
    )

__all__ = [
    "CAMPAIGN_ESTIMATORS",
    "DEFAULT_ESTIMATOR",
    "ESTIMATOR_CHOICES",
    "EngineConfig",
    "Evaluation",
    "LoadedCollection",
    "MTCEngine",
    "PairConfidence",
    "ReplayResult",
    "ScoreOrderWarning",
    "SystemScore",
    "load_files",
    "make_engine",
    "pair_confidences",
    "replay_campaign",
    "system_scores",
]


def __getattr__(name: str) -> Any:
    """The names of :mod:`mtcjudge.api`, imported on first use."""
    if name in __all__:
        return getattr(importlib.import_module("mtcjudge.api"), name)
    raise AttributeError(f"module 'mtcjudge' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
