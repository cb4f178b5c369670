"""The clip offsets file: where each document's excerpt starts (docs/audio.md, "Excerpts")."""

from __future__ import annotations

import math
import os

from mtcjudge.ingest.formats.lines import InputError, LineFormat, parse_lines

__all__ = ["read_clip_offsets"]

_TSV_OFFSETS = LineFormat("tsv", "TSV clip offsets", "\t", ("doc", "start_seconds"), "doc")


def read_clip_offsets(path: str | os.PathLike[str]) -> dict[str, float]:
    """Read the start in seconds of each document's excerpt.

    The file is TSV ``doc<TAB>start_seconds``; a header line whose first field is ``doc`` is
    skipped, as are blank lines and lines starting with ``#``.

    Raises
    ------
    InputError
        On a missing path, an empty file, a line with the wrong number of fields, a start that
        is not a number of seconds from 0, or a doc listed twice.
    """
    file = os.fspath(path)
    _, rows = parse_lines(file, (_TSV_OFFSETS,))
    offsets: dict[str, float] = {}
    first_line: dict[str, int] = {}
    for row in rows:
        doc = row.values["doc"]
        if doc in first_line:
            message = f"doc {doc} is listed twice (first at line {first_line[doc]})"
            raise InputError(file, row.line, message, field="doc")
        first_line[doc] = row.line
        text = row.values["start_seconds"]
        try:
            start = float(text)
        except ValueError:
            start = math.nan
        if not math.isfinite(start) or start < 0:
            message = f"start_seconds: must be a number of seconds from 0, found {text!r}"
            raise InputError(file, row.line, message, field="start_seconds")
        offsets[doc] = start
    return offsets
