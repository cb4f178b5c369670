"""The clip offsets: where each document's excerpt starts (docs/audio.md, "Excerpts"), from a
file (the command line's ``--clip-offsets``, the new-campaign page's offsets file, a text of
``POST /api/campaigns``) or a JSON object of ``POST /api/campaigns``.

Every problem is an :class:`InputError` naming the file (or the request's field), the line
(none for a JSON object, whose entries are named by their document) and the field, whether it
is found reading the offsets (:func:`read_clip_offsets`, :meth:`ClipOffsets.of_object`) or
checking them against the campaign's documents and files (:meth:`ClipOffsets.check_documents`,
:meth:`ClipOffsets.check_ends`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

from mtcjudge.ingest.formats.lines import InputError, LineFormat, parse_lines

__all__ = ["ClipOffsets", "read_clip_offsets"]

_TSV_OFFSETS = LineFormat("tsv", "TSV clip offsets", "\t", ("doc", "start_seconds"), "doc")
_START_FIELD = "start_seconds"
#: characters of a value or a document id a message repeats
_SHOWN = 60


def _shown(value: object) -> str:
    """``repr(value)``, cut short: a message never repeats a whole huge value."""
    try:
        text = repr(value)
    except ValueError:  # an integer of more digits than Python converts
        text = "a number too large"
    return text if len(text) <= _SHOWN else f"{text[: _SHOWN - 1]}…"


@dataclass(frozen=True, eq=False)  # equal to any mapping of the same starts
class ClipOffsets(Mapping[str, float]):
    """The start in seconds of each named document's excerpt (a mapping doc -> start), and
    where each was given: ``path``, the file or the request's field, and ``lines``, each
    document's 1-based line in it (empty for a JSON object)."""

    starts: Mapping[str, float]
    path: str
    lines: Mapping[str, int] = field(default_factory=dict)

    def __getitem__(self, doc: str) -> float:
        return self.starts[doc]

    def __iter__(self) -> Iterator[str]:
        return iter(self.starts)

    def __len__(self) -> int:
        return len(self.starts)

    @classmethod
    def of_object(cls, values: Mapping[str, object], path: str) -> ClipOffsets:
        """The starts of a JSON object ``{"doc": start_seconds, ...}``, sent as ``path``.

        Raises
        ------
        InputError
            A start that is not a number of seconds from 0, naming its document.
        """
        starts: dict[str, float] = {}
        for doc, value in values.items():
            start = math.nan
            if isinstance(value, int | float) and not isinstance(value, bool):
                try:
                    start = float(value)
                except OverflowError:  # an integer beyond every float
                    start = math.inf
            if not math.isfinite(start) or start < 0:
                message = f"doc {_shown(doc)}: {_START_FIELD}: must be a number of seconds "
                message += f"from 0, found {_shown(value)}"
                raise InputError(path, None, message, field=_START_FIELD)
            starts[doc] = start
        return cls(starts, path)

    def _error(self, doc: str, message: str, field: str) -> InputError:
        """A problem of ``doc``'s entry, at its line when it has one."""
        return InputError(self.path, self.lines.get(doc), f"doc {_shown(doc)}{message}", field)

    def check_documents(self, documents: Collection[str]) -> None:
        """Every entry names one of ``documents`` (those whose clips the campaign cuts): a
        misspelt id would otherwise leave its document at the default start unnoticed.

        Raises
        ------
        InputError
            At the first entry naming another document, saying how many more do.
        """
        unknown = [doc for doc in self.starts if doc not in documents]
        if unknown:
            more = f" (and {len(unknown) - 1} more entries)" if len(unknown) > 1 else ""
            raise self._error(unknown[0], f" is not a document or query of the runs{more}", "doc")

    def check_ends(self, source_seconds: Mapping[str, float]) -> None:
        """Every start lies within its file (``source_seconds``: the duration of each file
        read). An excerpt that would run past the end starts earlier, as every excerpt does;
        a start at or past the end is a mistake.

        Raises
        ------
        InputError
            At the first start at or past its file's end.
        """
        for doc, start in self.starts.items():
            seconds = source_seconds.get(doc)
            if seconds is not None and start >= seconds:
                message = (
                    f": {_START_FIELD}: {start:g} s is at or past the end of its file, which "
                    f"lasts {seconds:.1f} s"
                )
                raise self._error(doc, message, _START_FIELD)


def read_clip_offsets(path: str | os.PathLike[str]) -> ClipOffsets:
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
        text = row.values[_START_FIELD]
        try:
            start = float(text)
        except ValueError:
            start = math.nan
        if not math.isfinite(start) or start < 0:
            message = f"{_START_FIELD}: must be a number of seconds from 0, found {text!r}"
            raise InputError(file, row.line, message, field=_START_FIELD)
        offsets[doc] = start
    return ClipOffsets(offsets, file, first_line)
