"""Argument checks shared by the engine's public functions and the command line (ValueError)."""

from __future__ import annotations

import math
import numbers


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an int, if it is an integer (not a bool) from ``minimum`` to ``maximum``."""
    expected = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer {expected}, found {value!r}")
    if int(value) < minimum or (maximum is not None and int(value) > maximum):
        raise ValueError(f"{name} must be an integer {expected}, found {int(value)}")
    return int(value)


def check_probability(name: str, value: float) -> float:
    """``value`` as a float, if it lies strictly between 0 and 1."""
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), found {value}")
    return value


def check_confidence(name: str, value: float) -> float:
    """``value`` as a float, if it is a confidence level from 0.5 to 1 (a target, a cut)."""
    value = float(value)
    if not 0.5 <= value <= 1.0:
        raise ValueError(f"{name} must be a confidence between 0.5 and 1, found {value}")
    return value


def check_finite(name: str, value: float, *, nonnegative: bool = False) -> float:
    """``value`` as a float, if it is finite (and, with ``nonnegative``, at least 0)."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, found {value}")
    if nonnegative and value < 0.0:
        raise ValueError(f"{name} must be >= 0, found {value}")
    return value
