"""Allowed ranges of a campaign's integer settings.

What the database holds, and what makes sense: a cut-off past 1,000 results or a lease of
more than a week is a mistake. Standard library only, so the command line's parser can use
them without loading the database layer.
"""

from __future__ import annotations

from mtcjudge.validation import INT32_MAX

__all__ = ["INT_SETTINGS"]

#: setting -> (minimum, maximum), both included
INT_SETTINGS: dict[str, tuple[int, int]] = {
    "k": (1, 1000),
    "lease_minutes": (1, 7 * 24 * 60),
    "judgments_per_pair": (1, 100),
    "seed": (0, INT32_MAX),  # numpy's default_rng refuses negative seeds
}
