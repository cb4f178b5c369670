"""Agreement between assessors who judged the same pairs: Krippendorff's alpha.

A unit is a (query, document) pair; its values are every judgment of it on one scale. Only
pairs with at least two judgments are pairable and count. BROAD is ordinal (0 < 1 < 2, the
distances between levels unknown), FINE interval (a 0-100 slider). The computation is the
``krippendorff`` package's; this module only builds its value-count matrix and says when
alpha cannot be computed.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import krippendorff
import numpy as np

__all__ = ["LEVELS", "Agreement", "agreement"]

#: Krippendorff's level of measurement of each scale
LEVELS = {"broad": "ordinal", "fine": "interval"}

_Unit = TypeVar("_Unit", bound=Hashable)


@dataclass(frozen=True)
class Agreement:
    """Krippendorff's alpha on one scale, and what it rests on.

    ``pairs``: pairs judged at least twice on the scale; ``judgments``: their judgments;
    ``alpha``: None when it cannot be computed, ``reason`` then says why."""

    scale: str
    level_of_measurement: str
    alpha: float | None
    pairs: int
    judgments: int
    reason: str | None


def agreement(scale: str, values_by_pair: Mapping[_Unit, Sequence[float]]) -> Agreement:
    """Krippendorff's alpha over the pairs of ``values_by_pair`` judged at least twice.

    Examples
    --------
    Two pairs, judged (0, 2) and (1, 1) on an interval scale: the observed disagreement is
    2, the expected one 4/3, so alpha = 1 - 2 / (4/3) = -0.5.

    >>> agreement("fine", {"p": [0.0, 2.0], "q": [1.0, 1.0]}).alpha
    -0.5
    """
    level = LEVELS[scale]
    units = [list(values) for values in values_by_pair.values() if len(values) >= 2]
    n_judgments = sum(len(values) for values in units)
    name = scale.upper()
    if not units:
        return Agreement(
            scale,
            level,
            None,
            0,
            0,
            f"no pair has been judged more than once on {name}: agreement needs several "
            "assessors on the same pairs (the campaign's judgments per pair)",
        )

    def undefined(reason: str) -> Agreement:
        return Agreement(scale, level, None, len(units), n_judgments, reason)

    domain = sorted({value for values in units for value in values})
    if len(domain) < 2:
        return undefined(
            f"every judgment of the {len(units)} pairs judged more than once is {domain[0]:g}: "
            "with no variation alpha is undefined"
        )
    alpha = _alpha(units, domain, level)
    if not math.isfinite(alpha):
        return undefined("the expected disagreement is zero: alpha is undefined")
    return Agreement(scale, level, alpha, len(units), n_judgments, None)


def _alpha(units: Iterable[list[float]], domain: list[float], level: str) -> float:
    """The package's alpha from a (n_units, n_values) matrix of value counts."""
    column = {value: i for i, value in enumerate(domain)}
    rows = list(units)
    counts = np.zeros((len(rows), len(domain)), dtype=np.int64)
    for u, values in enumerate(rows):
        for value in values:
            counts[u, column[value]] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(
            krippendorff.alpha(
                value_counts=counts,
                value_domain=np.asarray(domain, dtype=np.float64),
                level_of_measurement=level,  # type: ignore[arg-type]
            )
        )
