"""Argument checks shared by the engine's public functions (they raise ValueError)."""

from __future__ import annotations

import numbers


def check_int(name: str, value: object, minimum: int) -> int:
    """``value`` as an int, if it is an integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, found {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, found {int(value)}")
    return int(value)


def check_probability(name: str, value: float) -> float:
    """``value`` as a float, if it lies strictly between 0 and 1."""
    value = float(value)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), found {value}")
    return value
