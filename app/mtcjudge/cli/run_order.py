"""The order of the lists of TREC run files, for every command that reads runs
(``campaign create``, ``campaign add-runs``, ``evaluate``, ``simulate``): the ``--order-by``
option, the warning about lists whose scores contradict their ranks, and the report's line."""

from __future__ import annotations

import argparse
from typing import Protocol, TextIO

from mtcjudge.ingest.formats import RUN_ORDERS, ScoreConflict, score_order_warnings
from mtcjudge.validation import printable

__all__ = ["add_order_by", "run_order_line", "warn_score_order"]


def add_order_by(parser: argparse.ArgumentParser) -> None:
    """``--order-by rank|score``: how the lists of TREC run files are ordered."""
    parser.add_argument(
        "--order-by",
        choices=RUN_ORDERS,
        default="rank",
        help="order of each list of TREC run files: rank (the rank column, as written) or "
        "score (decreasing score, ties by decreasing docno: the order trec_eval, ir_measures "
        "and pytrec_eval use, ignoring the rank column). Lists whose scores contradict their "
        "ranks are reported on stderr either way (file and line). TSV runs have no scores",
    )


class _OrderedLists(Protocol):
    """Runs as read (:class:`~mtcjudge.ingest.formats.Runs`, or an offline evaluation's)."""

    @property
    def score_conflicts(self) -> tuple[ScoreConflict, ...]: ...
    @property
    def n_lists(self) -> int: ...
    @property
    def order_by(self) -> str: ...


def run_order_line(order_by: str, conflicts: int) -> str | None:
    """The line of an import's report saying how the lists were ordered, when it matters."""
    if order_by == "score":
        detail = f"; {conflicts} differ from their rank column" if conflicts else ""
        return f"  lists ordered by    score, as trec_eval orders them{detail}"
    if conflicts:
        return (
            f"  lists ordered by    rank ({conflicts} whose scores order them otherwise: "
            "see the warning above)"
        )
    return None


def warn_score_order(err: TextIO, runs: _OrderedLists) -> None:
    """Say on ``err`` which lists of ``runs`` have scores that contradict their ranks."""
    lines = score_order_warnings(
        runs.score_conflicts,
        n_lists=runs.n_lists,
        order_by=runs.order_by,
        hint="--order-by score orders them as those tools do.",
    )
    if lines:
        err.write(f"mtcjudge: warning: {printable(lines[0])}\n")
        err.writelines(f"  {printable(line)}\n" for line in lines[1:])
