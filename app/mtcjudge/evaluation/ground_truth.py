"""Reader of partially ordered ground truths: ``query group_rank document`` lines.

The format of the MIREX 2005 Symbolic Melodic Similarity ground truth (Typke, Veltkamp and
Wiering): for each query, groups of documents ranked by similarity (group 1 the most similar);
the order within a group is unknown. Problems raise :class:`mtcjudge.ingest.formats.InputError`
naming the file, the line and the field, as the run and judgment readers do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mtcjudge.ingest.formats import InputError, data_lines
from mtcjudge.validation import INTEGER

__all__ = ["GroundTruth", "read_ground_truth"]

_FIELDS = ("query", "group_rank", "document")


@dataclass(frozen=True)
class GroundTruth:
    """Ordered groups of documents per query.

    Attributes
    ----------
    groups : dict of str to list of list of str
        Query id -> its groups, most similar first (ascending ``group_rank``; gaps in the
        numbering do not matter), documents of a group in file order.
    """

    groups: dict[str, list[list[str]]]

    @property
    def queries(self) -> list[str]:
        """Query ids, sorted."""
        return sorted(self.groups)


def read_ground_truth(path: str | os.PathLike[str]) -> GroundTruth:
    """Read a partially ordered ground truth.

    Each data line holds three whitespace-separated fields, ``query group_rank document``:
    ``group_rank`` is a positive integer, 1 for the most similar group. A first line whose
    first field is ``query`` is a header and skipped, as are blank lines and lines starting
    with ``#``.

    Raises
    ------
    InputError
        On a missing or empty file, a line without three fields, a group rank that is not a
        positive integer, or a document listed twice for one query.

    Examples
    --------
    ``q1 1 d2``, ``q1 1 d1``, ``q1 2 d3`` give ``GroundTruth({"q1": [["d2", "d1"], ["d3"]]})``.
    """
    file = os.fspath(path)
    by_rank: dict[str, dict[int, list[str]]] = {}
    first_line: dict[tuple[str, str], int] = {}
    lines = data_lines(file)
    for index, (number, line) in enumerate(lines):
        parts = line.split()
        if len(parts) != len(_FIELDS):
            raise InputError(
                file,
                number,
                f"expected 3 whitespace-separated fields ({' '.join(_FIELDS)}), found {len(parts)}",
            )
        query, raw_rank, document = parts
        if index == 0 and query.lower() == "query" and not INTEGER.fullmatch(raw_rank):
            continue
        if not INTEGER.fullmatch(raw_rank) or int(raw_rank) < 1:
            raise InputError(
                file,
                number,
                f"group_rank must be a positive integer (1 = most similar group), "
                f"found {raw_rank!r}",
                field="group_rank",
            )
        seen = first_line.setdefault((query, document), number)
        if seen != number:
            raise InputError(
                file,
                number,
                f"document {document} is listed twice for query {query} (first at line {seen})",
                field="document",
            )
        by_rank.setdefault(query, {}).setdefault(int(raw_rank), []).append(document)
    if not by_rank:
        raise InputError(file, None, "empty file (no data lines)")
    return GroundTruth(
        {query: [ranks[r] for r in sorted(ranks)] for query, ranks in sorted(by_rank.items())}
    )
