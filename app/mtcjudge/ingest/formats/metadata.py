"""The metadata file: each document's artist and genre."""

from __future__ import annotations

import os
from dataclasses import dataclass

from mtcjudge.ingest.formats.lines import InputError, LineFormat, parse_lines


@dataclass(frozen=True)
class Metadata:
    """Artist and genre of each document.

    Attributes
    ----------
    artist, genre : dict of str to str or None
        Doc id -> artist (genre) id, None when the file leaves it empty.
    """

    artist: dict[str, str | None]
    genre: dict[str, str | None]


_TSV_METADATA = LineFormat("tsv", "TSV metadata", "\t", ("doc", "artist", "genre"), "doc")


def read_metadata(path: str | os.PathLike[str]) -> Metadata:
    """Read the artist and genre of each document.

    The file is TSV ``doc<TAB>artist<TAB>genre``; an empty artist or genre means unknown. A
    header line whose first field is ``doc`` is skipped, as are blank lines and lines starting
    with ``#``.

    Parameters
    ----------
    path : str or os.PathLike
        The metadata file.

    Returns
    -------
    Metadata

    Raises
    ------
    InputError
        On a missing path, an empty file, a line with the wrong number of fields, an empty doc
        id or a doc listed twice.
    """
    file = os.fspath(path)
    _, rows = parse_lines(file, (_TSV_METADATA,))
    artist: dict[str, str | None] = {}
    genre: dict[str, str | None] = {}
    first_line: dict[str, int] = {}
    for row in rows:
        doc = row.values["doc"]
        if doc in first_line:
            message = f"doc {doc} is listed twice (first at line {first_line[doc]})"
            raise InputError(file, row.line, message, field="doc")
        first_line[doc] = row.line
        artist[doc] = row.values["artist"] or None
        genre[doc] = row.values["genre"] or None
    return Metadata(artist=artist, genre=genre)
