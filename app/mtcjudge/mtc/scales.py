"""Relevance scales of MIREX AMS and their fixed priors (docs/method.md §1.1, 2.1, 2.2).

A *scale* fixes the range of a judgment (BROAD 0..2, FINE 0..100), the levels the
ordinal models predict (BROAD 0/1/2; FINE binned to the ten "Fine-10" values
5, 15, ..., 95, [T] 7.3.1) and the two fixed priors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["BROAD", "FINE", "SCALES", "Scale", "get_scale"]


@dataclass(frozen=True)
class Scale:
    """One relevance scale.

    Attributes
    ----------
    name : str
        ``"broad"`` or ``"fine"``.
    lmax : float
        Largest judgment value (2 or 100); the smallest is always 0.
    model_values : ndarray of shape (n_model_levels,)
        Value of each level predicted by the ordinal models (BROAD 0, 1, 2; FINE-10
        5, 15, ..., 95), in the units of the judgments.
    uniform : tuple of float
        (E, Var) of the uniform prior over the integer levels (2.1).
    historical : tuple of float
        (E, Var) of the historical MIREX prior (2.2).
    """

    name: str
    lmax: float
    model_values: NDArray[np.float64]
    uniform: tuple[float, float]
    historical: tuple[float, float]

    def model_level(self, values: ArrayLike) -> NDArray[np.intp]:
        """Index of the model level of each judgment value.

        BROAD values map to themselves; FINE values to the Fine-10 bin
        ``min(floor(r/10), 9)`` (docs/method.md §1.1, A2: r = 100 falls in the 95 bin).
        """
        arr = np.asarray(values, dtype=np.float64)
        if self.name == "broad":
            return np.clip(np.rint(arr), 0, 2).astype(np.intp)
        return np.clip(np.floor(arr / 10.0), 0, 9).astype(np.intp)

    def check_values(self, values: ArrayLike, what: str = "judgment") -> NDArray[np.float64]:
        """Return ``values`` as float64, raising ValueError if any is outside the scale."""
        arr = np.asarray(values, dtype=np.float64)
        bad = ~np.isfinite(arr) | (arr < 0) | (arr > self.lmax)
        if self.name == "broad":
            bad |= arr != np.rint(arr)
        if np.any(bad):
            first = float(arr[bad].flat[0])
            allowed = "0, 1 or 2" if self.name == "broad" else "a number from 0 to 100"
            raise ValueError(f"{what} {first} is outside the {self.name.upper()} scale ({allowed})")
        return arr


def _uniform_moments(n_levels: int) -> tuple[float, float]:
    levels = np.arange(n_levels, dtype=np.float64)
    mean = float(levels.mean())
    return mean, float((levels**2).mean() - mean**2)


BROAD = Scale(
    name="broad",
    lmax=2.0,
    model_values=np.array([0.0, 1.0, 2.0]),
    uniform=_uniform_moments(3),
    historical=(0.8959, 0.6338),
)
FINE = Scale(
    name="fine",
    lmax=100.0,
    model_values=np.arange(5.0, 100.0, 10.0),
    uniform=_uniform_moments(101),
    historical=(43.41, 900.4),
)
SCALES = {"broad": BROAD, "fine": FINE}


def get_scale(name: str) -> Scale:
    """Look a scale up by name (``"broad"`` or ``"fine"``, case-insensitive)."""
    try:
        return SCALES[name.lower()]
    except KeyError:
        raise ValueError(f"unknown scale {name!r}: expected 'broad' or 'fine'") from None
