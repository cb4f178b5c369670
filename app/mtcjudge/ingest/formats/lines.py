"""What every input file format shares: the error naming file, line and field, the reading of
a UTF-8 text file into data lines, and the line formats recognised from a file's first data
line (never from its name)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


class InputError(ValueError):
    """A run, judgment or metadata file that cannot be used as it is.

    Parameters
    ----------
    path : str or os.PathLike
        The offending file (or directory).
    line : int or None
        1-based line number, or None when the problem concerns the whole file.
    message : str
        What is wrong, in words a user understands.
    field : str or None, optional
        Name of the offending field (e.g. ``"rank"``, ``"score"``), if any.

    Attributes
    ----------
    path : str
    line : int or None
    field : str or None
    message : str

    Examples
    --------
    >>> str(InputError("runs/sysA.txt", 17, "expected 6 fields, found 4"))
    'runs/sysA.txt:17: expected 6 fields, found 4'
    >>> str(InputError("judgments.tsv", None, "empty file (no data lines)"))
    'judgments.tsv: empty file (no data lines)'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        line: int | None,
        message: str,
        field: str | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.line = line
        self.field = field
        self.message = message
        location = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{location}: {message}")

    def __reduce__(self) -> tuple[type[InputError], tuple[str, int | None, str, str | None]]:
        return (type(self), (self.path, self.line, self.message, self.field))


@dataclass(frozen=True)
class LineFormat:
    name: str
    label: str
    separator: str | None  # None: any run of whitespace
    fields: tuple[str, ...]
    header: str | None = None  # first field of an optional header line (TSV only)

    def count(self, line: str) -> int:
        return len(line.split(self.separator))

    def split(self, line: str) -> list[str] | None:
        if self.separator is None:
            parts = line.split()
        else:
            parts = [part.strip() for part in line.split(self.separator)]
        return parts if len(parts) == len(self.fields) else None

    @property
    def expectation(self) -> str:
        kind = "whitespace" if self.separator is None else "tab"
        return f"{len(self.fields)} {kind}-separated fields ({' '.join(self.fields)})"


@dataclass(frozen=True)
class Row:
    line: int
    values: dict[str, str]


def read_text(path: str) -> str:
    if not os.path.exists(path):
        raise InputError(path, None, "no such file or directory")
    if os.path.isdir(path):
        raise InputError(path, None, "is a directory, expected a file")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as err:
        raise InputError(path, None, f"cannot read file: {err.strerror}") from err
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte order mark is harmless
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        message = f"not a UTF-8 text file (byte 0x{data[err.start]:02x}); save it as UTF-8"
        raise InputError(path, line, message) from err
    # no database stores a NUL in a text (and UTF-16 files are full of them)
    nul = text.find("\x00")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        message = "contains a NUL character (byte 0x00); save the file as UTF-8 text"
        raise InputError(path, line, message)
    return text


def data_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, line) of every data line of a UTF-8 text file: blank lines and lines
    starting with ``#`` left out; a missing, unreadable, non-UTF-8 or NUL-holding file is an
    :class:`InputError` naming the file (and line)."""
    text = read_text(path).replace("\r\n", "\n").replace("\r", "\n")
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, line


def parse_lines(path: str, formats: Sequence[LineFormat]) -> tuple[LineFormat, list[Row]]:
    """Recognise which of ``formats`` the file is in and split every data line accordingly."""
    detected: LineFormat | None = None
    rows: list[Row] = []
    for number, line in data_lines(path):
        if detected is None:
            detected = _detect(path, number, line, formats)
            parts = detected.split(line)
            if detected.header is not None and parts and parts[0].lower() == detected.header:
                continue
        parts = detected.split(line)
        if parts is None:
            message = f"expected {detected.expectation}, found {detected.count(line)}"
            for other in formats:
                if other is not detected and other.split(line) is not None:
                    message += (
                        f"; this line looks like a {other.label} line but the file was"
                        f" recognised as {detected.label} (do not mix formats in one file)"
                    )
            raise InputError(path, number, message)
        if detected.separator is not None:
            # Whitespace-split fields are never empty; tab-separated ids must not be either.
            for name, value in zip(detected.fields, parts, strict=True):
                if not value and name in ("system", "query", "doc"):
                    raise InputError(path, number, f"empty {name} id", field=name)
        rows.append(Row(number, dict(zip(detected.fields, parts, strict=True))))
    if detected is None or not rows:
        raise InputError(path, None, "empty file (no data lines)")
    return detected, rows


def _detect(path: str, number: int, line: str, formats: Sequence[LineFormat]) -> LineFormat:
    for candidate in formats:
        if candidate.split(line) is not None:
            return candidate
    if len(formats) == 1:
        only = formats[0]
        message = f"expected {only.expectation}, found {only.count(line)}"
    else:
        alternatives = " or ".join(f"{f.expectation} for a {f.label} file" for f in formats)
        found = f"{len(line.split())} whitespace-separated fields"
        tab_fields = line.split("\t")
        if len(tab_fields) > 1:
            found = f"{len(tab_fields)} tab-separated, {found}"
        message = f"cannot recognise the format: expected {alternatives}, found {found}"
    raise InputError(path, number, message)


def where_first(first_path: str, first_line: int, path: str) -> str:
    return f"line {first_line}" if first_path == path else f"{first_path}:{first_line}"
