"""What the exported files say about themselves: the kinds of export and their file formats,
the grades, the measures, the aggregation of several judgments of a pair, and the streaming
writers (lines, CSV, JSON Lines, JSON, zip members, hashing)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
import statistics
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any, BinaryIO

from mtcjudge.errors import InvalidInput
from mtcjudge.models import as_utc

__all__ = [
    "AGGREGATES",
    "EXTENSIONS",
    "GRADES",
    "KINDS",
    "MEASURE_DEFINITIONS",
    "MEDIA_TYPES",
    "WHATS",
    "ExportKind",
    "HashingWriter",
    "aggregate",
    "csv_lines",
    "grades_markdown",
    "iso_time",
    "json_text",
    "record_lines",
    "round_half_up",
    "run_file_name",
    "trec_id",
    "write_lines",
    "zip_member",
    "zip_stamp",
]

AGGREGATES = ("mean", "median")


@dataclass(frozen=True)
class ExportKind:
    """One kind of export: its file formats (the first is the default) and whether it is of
    one scale (which its file name then names)."""

    formats: tuple[str, ...]
    scaled: bool = False


#: every export ``mtcjudge export --what`` and the export API write, in the order they list them
KINDS: dict[str, ExportKind] = {
    "qrels": ExportKind(("trec",), scaled=True),
    "judgments": ExportKind(("csv", "jsonl")),
    "estimates": ExportKind(("csv", "jsonl"), scaled=True),
    "entries": ExportKind(("csv", "jsonl"), scaled=True),
    "offsets": ExportKind(("json",), scaled=True),
    "results": ExportKind(("json",), scaled=True),
    "runs": ExportKind(("trec", "zip")),
    "assessors": ExportKind(("csv", "json")),
    "bundle": ExportKind(("zip",)),
}
#: what ``mtcjudge export --what`` and the export API can write
WHATS = tuple(KINDS)
#: the media type of each file format, and its file name's extension
MEDIA_TYPES = {
    "trec": "text/plain; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/jsonl",
    "json": "application/json",
    "zip": "application/zip",
}
EXTENSIONS = {"trec": "txt", "csv": "csv", "jsonl": "jsonl", "json": "json", "zip": "zip"}
#: characters handed to the stream at a time
_PIECE = 1 << 16


#: the characters a system's name keeps in its run file's name
_FILE_NAME_SAFE = re.compile(r"[A-Za-z0-9_.-]")


def run_file_name(system: str) -> str:
    """The file name of a system's TREC run, ``NAME.txt``, safe on every file system and
    one to one with the names: letters, digits, ``_``, ``-`` and ``.`` are kept (not a
    leading ``.``, which would hide the file and could name ``..``); every other character
    is written as the ``%XX`` of its UTF-8 bytes, as in addresses (``%`` itself is ``%25``).

    Examples
    --------
    >>> run_file_name("S01")
    'S01.txt'
    >>> run_file_name("team/run 2")
    'team%2Frun%202.txt'
    >>> run_file_name("..")
    '%2E..txt'
    """
    encoded = [
        char
        if _FILE_NAME_SAFE.fullmatch(char) and not (i == 0 and char == ".")
        else "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
        for i, char in enumerate(system)
    ]
    return "".join(encoded) + ".txt"


def round_half_up(value: float) -> int:
    """The nearest integer, halves up (50.5 -> 51): the rule of BROAD imports and qrels."""
    return math.floor(value + 0.5)


def aggregate(values: Sequence[float], rule: str) -> int:
    """One qrels grade from the judgments of a pair: the mean or the median (of an even
    number of judgments: the mean of the middle two), rounded half up."""
    if rule == "median":
        return round_half_up(float(statistics.median(values)))
    return round_half_up(math.fsum(values) / len(values))


#: what each grade means: the judging page's words (templates/partials/judge_macros.html)
GRADES: dict[str, Any] = {
    "task": (
        "Listen to the query clip and the candidate clip, then say how similar the candidate "
        "is to the query, as music: style, mood, instrumentation, rhythm, the feel of it; not "
        "recording quality nor whether you like the music (MIREX Audio Music Similarity)."
    ),
    "broad": {
        "scale": "BROAD",
        "levels": [
            {"value": 0, "label": "Not similar"},
            {"value": 1, "label": "Somewhat similar"},
            {"value": 2, "label": "Very similar"},
        ],
        "max": 2,
    },
    "fine": {
        "scale": "FINE",
        "min": 0,
        "max": 100,
        "step": 1,
        "anchors": [
            {"value": 0, "label": "not similar (at all)"},
            {"value": 50, "label": "somewhat"},
            {"value": 100, "label": "very similar"},
        ],
        "note": (
            "assessors place the candidate on a slider from 0 to 100 in steps of 1; imported "
            "FINE judgments may be fractional (a mean), legacy 0-10 values are multiplied by 10"
        ),
    },
    "normalisation": (
        "the measures use r / max (BROAD: r / 2, FINE: r / 100); a judged FINE value is used "
        "as it is, not binned"
    ),
}


#: the measures of the results, named so that the two normalisations of nDCG are not mixed up
MEASURE_DEFINITIONS: dict[str, dict[str, str]] = {
    "cg": {
        "name": "CG@k",
        "definition": (
            "sum over the top k of r_i / (k * max): the mean normalised relevance of the top k "
            "(MIREX's average FINE or BROAD score)"
        ),
        "from_trec_tools": "sum of the qrels grades of the top k / (k * max)",
    },
    "dcg": {
        "name": "MIREX nDCG@k (all-maximum normalisation)",
        "definition": (
            "DCG@k = sum over the top k of r_i / log2(i + 1) (linear gain), divided by the DCG "
            "of an all-maximum list, max * sum_{i=1..k} 1 / log2(i + 1): the nDCG@k of MIREX and "
            "of the 2012/2013 MTC papers. Not trec_eval's ndcg_cut"
        ),
        "from_trec_tools": "ranx 'dcg@k' (Jarvelin) / (max * sum_{i=1..k} 1 / log2(i + 1))",
    },
    "ndcg": {
        "name": "trec_eval nDCG@k (ideal-ordering normalisation)",
        "definition": (
            "the same DCG@k divided by the DCG of the ideal ordering of the query's pool (the "
            "k most relevant pool documents; unjudged ones by their expected relevance): the "
            "ndcg_cut.k of trec_eval, nDCG@k of ir_measures and ranx 'ndcg@k' when every pool "
            "pair is judged. About 1.2 times the MIREX value on the MIREX 2011 FINE lists"
        ),
        "from_trec_tools": "ranx 'ndcg@k' (Jarvelin, linear gain); trec_eval ndcg_cut.k",
    },
    "rbp": {
        "name": "normalised RBP (p = 0.8)",
        "definition": (
            "sum over the top k of r_i * 0.8^(i-1), divided by the same sum over the ideal "
            "ordering of the query's pool (graded; not Moffat and Zobel's unnormalised RBP)"
        ),
        "from_trec_tools": "none directly",
    },
}


def grades_markdown() -> str:
    broad = "\n".join(f"| {g['value']} | {g['label']} |" for g in GRADES["broad"]["levels"])
    anchors = ", ".join(f"{a['value']} = {a['label']}" for a in GRADES["fine"]["anchors"])
    measures = "\n".join(
        f"- **{key}** — {d['name']}: {d['definition']}." for key, d in MEASURE_DEFINITIONS.items()
    )
    return (
        "# Grades\n\n"
        f"{GRADES['task']}\n\n"
        "## BROAD (0-2)\n\n| value | meaning |\n|---|---|\n"
        f"{broad}\n\n"
        "## FINE (0-100)\n\n"
        f"A number from 0 to 100 in steps of 1 ({anchors}); {GRADES['fine']['note']}.\n\n"
        "## In the measures\n\n"
        f"{GRADES['normalisation'].capitalize()}.\n\n"
        f"{measures}\n"
    )


class HashingWriter:
    """A binary writer that passes bytes on and keeps their SHA-256 and count."""

    def __init__(self, target: BinaryIO) -> None:
        self.target = target
        self.sha256 = hashlib.sha256()
        self.bytes = 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.bytes += len(data)
        self.target.write(data)
        return len(data)


def write_lines(out: Any, lines: Iterable[str]) -> None:
    """Hand ``lines`` to ``out`` as UTF-8, in pieces of about :data:`_PIECE` characters."""
    batch: list[str] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= _PIECE:
            out.write("".join(batch).encode())
            batch.clear()
            size = 0
    if batch:
        out.write("".join(batch).encode())


def csv_lines(columns: tuple[str, ...], records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """A CSV file of ``records`` (None as an empty field), its header first, in pieces."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record[c] is None else record[c] for c in columns])
        if buffer.tell() >= _PIECE:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def record_lines(
    fmt: str, columns: tuple[str, ...], records: Iterable[dict[str, Any]]
) -> Iterator[str]:
    """``records`` as JSON Lines (``fmt`` "jsonl"), else as CSV of ``columns``."""
    if fmt == "jsonl":
        return (json.dumps(record, allow_nan=False) + "\n" for record in records)
    return csv_lines(columns, records)


def json_text(document: Any) -> str:
    """A JSON file of ``document``: indented, no NaN."""
    return json.dumps(document, allow_nan=False, indent=1) + "\n"


def trec_id(value: str, what: str) -> str:
    """``value`` as a column of a TREC file, whose columns are separated by white space."""
    if not value or any(c.isspace() for c in value):
        raise InvalidInput(
            f"the {what} id {value!r} is empty or holds white space: it cannot be written in "
            "a TREC file, whose columns are separated by white space"
        )
    return value


def iso_time(moment: datetime | None) -> str | None:
    return None if moment is None else as_utc(moment).isoformat()


def zip_stamp(now: datetime) -> tuple[int, ...]:
    """The time of a zip's members: ``now`` in UTC, to the second."""
    return as_utc(now).astimezone(UTC).timetuple()[:6]


def zip_member(archive: zipfile.ZipFile, name: str, stamp: tuple[int, ...]) -> IO[bytes]:
    """A deflated member of ``archive`` open for writing."""
    info = zipfile.ZipInfo(name, date_time=stamp)  # type: ignore[arg-type]
    info.compress_type = zipfile.ZIP_DEFLATED
    return archive.open(info, "w", force_zip64=True)
