"""The MIREX analysis of a fully judged campaign: Friedman test and Tukey HSD groups on the
per-query scores (docs/method.md §6), computed by :func:`mtcjudge.mtc.mirex.friedman_tukey`.

Only the presentation is here: which systems share a group (the letters of a compact letter
display) and the document's dict.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mtcjudge.mtc.mirex import friedman_tukey

__all__ = ["group_labels", "mirex_section"]


def _label(index: int) -> str:
    """a, b, ..., z, aa, ab, ...: the name of the ``index``-th group."""
    letters = string.ascii_lowercase
    label = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        label = letters[rest] + label
    return label


def group_labels(mean_ranks: Sequence[float], critical_difference: float) -> list[list[str]]:
    """Tukey HSD groups of systems whose mean ranks differ by at most ``critical_difference``.

    On one axis "not significantly different" links runs of neighbours: sorted by mean
    rank (best first), each maximal run whose first and last differ by at most the critical
    difference is a group, named a, b, ... from the best. Two systems share a letter if and
    only if the HSD does not separate them. Returns each system's group names (input order).

    >>> group_labels([3.0, 2.5, 1.0], 1.0)
    [['a'], ['a'], ['b']]
    """
    ranks = np.asarray(mean_ranks, dtype=np.float64)
    order = np.argsort(-ranks, kind="stable").tolist()
    groups: list[list[str]] = [[] for _ in order]
    last_end = -1
    made = 0
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and ranks[order[start]] - ranks[order[end + 1]] <= (
            critical_difference
        ):
            end += 1
        if end > last_end:  # not inside the previous run: a group of its own
            name = _label(made)
            made += 1
            for position in range(start, end + 1):
                groups[order[position]].append(name)
            last_end = end
    return groups


def mirex_section(
    scores: NDArray[np.float64], system_names: Sequence[str], *, alpha: float = 0.05
) -> dict[str, Any]:
    """Friedman + Tukey HSD of one measure: ``scores`` has shape (n_queries, n_systems)."""
    analysis = friedman_tukey(scores, alpha=alpha)
    groups = group_labels(analysis.mean_ranks.tolist(), analysis.critical_difference)
    means = analysis.means.tolist()
    mean_ranks = analysis.mean_ranks.tolist()
    order = sorted(range(len(system_names)), key=lambda i: (-mean_ranks[i], system_names[i]))
    n = len(system_names)
    a, b = np.triu_indices(n, 1)
    pairs = [
        {
            "a": system_names[i],
            "b": system_names[j],
            "rank_difference": float(analysis.rank_differences[i, j]),
            "p_value": float(analysis.tukey_p_values[i, j]),
            "significant": bool(analysis.significant[i, j]),
        }
        for i, j in zip(a.tolist(), b.tolist(), strict=True)
    ]
    return {
        "friedman": {
            "chi2": float(analysis.chi2),
            "df": int(analysis.df),
            "p_value": float(analysis.p_value),
        },
        "alpha": float(analysis.alpha),
        "critical_difference": float(analysis.critical_difference),
        "systems": [
            {
                "name": system_names[i],
                "mean": means[i],
                "mean_rank": mean_ranks[i],
                "groups": groups[i],
            }
            for i in order
        ],
        "pairs_significant": sum(1 for p in pairs if p["significant"]),
        "pairs": pairs,
    }
