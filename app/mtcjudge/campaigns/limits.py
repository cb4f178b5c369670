"""Allowed ranges of a campaign's integer and decimal settings.

What the database holds, and what makes sense: a cut-off past 1,000 results or a lease of
more than a week is a mistake. Standard library only, so the command line's parser can use
them without loading the database layer.
"""

from __future__ import annotations

from mtcjudge.validation import INT32_MAX

__all__ = ["FLOAT_SETTINGS", "FLOAT_SETTING_HELP", "INT_SETTINGS"]

#: setting -> (minimum, maximum), both included
INT_SETTINGS: dict[str, tuple[int, int]] = {
    "k": (1, 1000),
    "lease_minutes": (1, 7 * 24 * 60),
    "judgments_per_pair": (1, 100),
    "seed": (0, INT32_MAX),  # numpy's default_rng refuses negative seeds
}

#: decimal setting -> (minimum, maximum), both included: a listening rule of two minutes per
#: clip is already more than any MIREX clip needs (0 turns it off); quality trials on more
#: than three hand-outs in ten would spend the volunteers' time on checks (0 turns them off)
FLOAT_SETTINGS: dict[str, tuple[float, float]] = {
    "listen_seconds": (0.0, 120.0),
    "quality_rate": (0.0, 0.3),
}
#: what each decimal setting means, for the forms, the API schema and the command line
FLOAT_SETTING_HELP: dict[str, str] = {
    "listen_seconds": "seconds of each clip an assessor plays before scoring (the whole clip "
    "when shorter); 0 turns the listening rule off",
    "quality_rate": "share of hand-outs that are hidden quality trials (reference, anchor, "
    "repeat, second opinion), from 0 (none) to 0.3",
}
