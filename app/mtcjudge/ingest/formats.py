"""Readers for run, judgment and metadata files, with format detection and strict validation.

The format of a file is recognised from its first data line, never from its name. Every problem
raises :class:`InputError` naming the file, the 1-based line and the field, so the CLI and the web
import can tell users exactly what to fix.
"""

from __future__ import annotations

import itertools
import math
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from mtcjudge.validation import DECIMAL, INTEGER

__all__ = [
    "RUN_ORDERS",
    "InputError",
    "Judgments",
    "Metadata",
    "Runs",
    "ScoreConflict",
    "ScoreOrderWarning",
    "check_judgments_cover_runs",
    "data_lines",
    "read_judgments",
    "read_metadata",
    "read_runs",
    "score_order_warnings",
    "trec_eval_order",
]

#: how the lists of a TREC run are ordered: by the rank column as written, or by score as
#: trec_eval orders them (:func:`trec_eval_order`)
RUN_ORDERS = ("rank", "score")
#: lists named one by one in :func:`score_order_warnings` (the rest are counted)
SCORE_CONFLICTS_SHOWN = 10

_BROAD_SCORES = (0.0, 1.0, 2.0)
_FINE_RANGE = (0.0, 100.0)
_MISSING_PAIRS_SHOWN = 3


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
class ScoreConflict:
    """A TREC run list whose scores order it otherwise than its ranks, where it first shows.

    trec_eval (and ir_measures and pytrec_eval, which run its code) ignore the rank column:
    they order a list by decreasing score, ties broken by decreasing docno
    (:func:`trec_eval_order`). Going down the list in rank order, the entry at ``line``
    (rank ``rank``, score ``score`` as written) should come before the one ranked just above
    it (``above_rank``, ``above_score``, ``above_doc``) by that rule: its score is higher or,
    with ``tie``, equal and its docno greater. ``more`` counts the other adjacent entries of
    the list that are out of order.
    """

    path: str
    line: int
    system: str
    query: str
    rank: int
    score: str
    doc: str
    above_rank: int
    above_score: str
    above_doc: str
    tie: bool
    more: int = 0

    @property
    def message(self) -> str:
        """What is wrong, without the file and line."""
        where = f"system {self.system} query {self.query}: "
        if self.tie:
            if self.score == self.above_score:
                text = f"rank {self.rank} ({self.doc}) ties rank {self.above_rank} "
                text += f"({self.above_doc}) at score {self.score}"
            else:
                text = (
                    f"rank {self.rank} ({self.doc}) has score {self.score}, equal to rank "
                    f"{self.above_rank}'s ({self.above_doc}) {self.above_score} as a 32-bit "
                    "float (as pytrec_eval and ir_measures read scores)"
                )
            text += f"; trec_eval breaks ties by docno, descending, and puts {self.doc} first"
        else:
            text = (
                f"rank {self.rank} has score {self.score} above rank {self.above_rank}'s "
                f"{self.above_score}"
            )
        if self.more:
            text += f" (and {self.more} more in this list)"
        return where + text

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class ScoreOrderWarning(UserWarning):
    """Run lists whose scores contradict their ranks (the Python API warns with it)."""


@dataclass(frozen=True)
class Runs:
    """Ranked result lists of several systems.

    Attributes
    ----------
    lists : dict of str to dict of str to list of str
        System id -> query id -> doc ids in rank order (rank 1 first), full lists as read.
    format : str
        ``"trec"`` or ``"tsv"``.
    order_by : str
        How the lists of a TREC run were ordered (:data:`RUN_ORDERS`): ``"rank"`` (the rank
        column) or ``"score"`` (:func:`trec_eval_order`). A TSV run is in file order: ``"rank"``.
    score_conflicts : tuple of ScoreConflict
        One per list whose scores order it otherwise than its ranks (TREC runs only), by
        file and line: where trec_eval, ir_measures and pytrec_eval, which order by score,
        see another list than the rank column says.
    """

    lists: dict[str, dict[str, list[str]]]
    format: str
    order_by: str = "rank"
    score_conflicts: tuple[ScoreConflict, ...] = field(default=())

    @property
    def n_lists(self) -> int:
        """How many (system, query) lists there are."""
        return sum(len(per_query) for per_query in self.lists.values())

    @property
    def systems(self) -> list[str]:
        """System ids, sorted."""
        return sorted(self.lists)

    @property
    def queries(self) -> list[str]:
        """Ids of the queries answered by at least one system, sorted."""
        return sorted({query for per_query in self.lists.values() for query in per_query})


@dataclass(frozen=True)
class Judgments:
    """Similarity scores of (query, doc) pairs.

    Attributes
    ----------
    scores : dict of (str, str) to list of float
        (query, doc) -> every score read for that pair, in file order (several assessors may
        judge one pair).
    format : str
        ``"qrels"`` or ``"tsv"``.
    """

    scores: dict[tuple[str, str], list[float]]
    format: str

    def mean(self) -> dict[tuple[str, str], float]:
        """Average the scores of each pair over its assessors.

        Returns
        -------
        dict of (str, str) to float
            (query, doc) -> mean score.

        Examples
        --------
        >>> Judgments({("q1", "d1"): [70.0, 80.0]}, "tsv").mean()
        {('q1', 'd1'): 75.0}
        """
        return {pair: sum(values) / len(values) for pair, values in self.scores.items()}


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


@dataclass(frozen=True)
class _LineFormat:
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


_TREC_RUN = _LineFormat("trec", "TREC run", None, ("qid", "Q0", "doc", "rank", "score", "tag"))
_TSV_RUN = _LineFormat("tsv", "TSV run", "\t", ("system", "query", "doc"), header="system")
_QRELS = _LineFormat("qrels", "TREC qrels", None, ("qid", "iter", "doc", "rel"))
_TSV_JUDGMENTS = _LineFormat("tsv", "TSV judgments", "\t", ("query", "doc", "score"), "query")
_TSV_METADATA = _LineFormat("tsv", "TSV metadata", "\t", ("doc", "artist", "genre"), "doc")


@dataclass(frozen=True)
class _Row:
    line: int
    values: dict[str, str]


def _read_text(path: str) -> str:
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
    text = _read_text(path).replace("\r\n", "\n").replace("\r", "\n")
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            yield number, line


def _parse(path: str, formats: Sequence[_LineFormat]) -> tuple[_LineFormat, list[_Row]]:
    """Recognise which of ``formats`` the file is in and split every data line accordingly."""
    detected: _LineFormat | None = None
    rows: list[_Row] = []
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
        rows.append(_Row(number, dict(zip(detected.fields, parts, strict=True))))
    if detected is None or not rows:
        raise InputError(path, None, "empty file (no data lines)")
    return detected, rows


def _detect(path: str, number: int, line: str, formats: Sequence[_LineFormat]) -> _LineFormat:
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


def _earlier(first_path: str, first_line: int, path: str) -> str:
    return f"line {first_line}" if first_path == path else f"{first_path}:{first_line}"


def _run_files(root: str) -> list[str]:
    if not os.path.exists(root):
        raise InputError(root, None, "no such file or directory")
    if not os.path.isdir(root):
        return [root]
    files = [
        os.path.join(root, name)
        for name in sorted(os.listdir(root))
        if not name.startswith(".") and os.path.isfile(os.path.join(root, name))
    ]
    if not files:
        raise InputError(root, None, "directory contains no run files")
    return files


class _Scored(NamedTuple):
    """One line of a TREC run: its score as trec_eval's tools compare it and its document
    first, so that tuples compare in trec_eval's order (a document is once in a list, so
    the two decide); the score as written and where the line is."""

    value: float
    doc: str
    score: str
    path: str
    line: int


def _float32(value: float) -> float:
    """``value`` rounded to a 32-bit float, as pytrec_eval stores a score (and trec_eval's
    releases before it kept doubles); beyond the 32-bit range: infinite, as C converts."""
    try:
        return float(struct.unpack("f", struct.pack("f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def trec_eval_order(entries: Sequence[tuple[str, float]]) -> list[str]:
    """The documents of ``(docno, score)`` entries in the order trec_eval evaluates them.

    trec_eval ignores the rank column of a run: ``te_form_res_rels`` (form_res_rels.c) sorts
    a query's results with ``comp_sim_docno``, by decreasing score, then by decreasing
    docno (``strcmp(p2->docno, p1->docno)``: byte order, which for UTF-8 is the order of
    Python's ``str``). Scores are compared as 32-bit floats, as pytrec_eval (and so
    ir_measures) stores them; trec_eval's current source stores doubles, which differs only
    for scores equal in their first 7 significant digits.

    Examples
    --------
    >>> trec_eval_order([("d1", 0.5), ("d2", 0.9), ("d3", 0.5)])
    ['d2', 'd3', 'd1']
    """
    keyed = [(_float32(score), doc) for doc, score in entries]
    return [doc for _, doc in sorted(keyed, reverse=True)]


class _RunCollector:
    """Accumulates lists from several files, checking ranks, duplicates and contiguity."""

    def __init__(self) -> None:
        self.ranked: dict[tuple[str, str], dict[int, str]] = {}
        self.scored: dict[tuple[str, str], dict[int, _Scored]] = {}
        self.values: dict[str, float] = {}  # score as written -> as a 32-bit float
        self.rank_seen: dict[tuple[str, str, int], tuple[str, int]] = {}
        self.doc_seen: dict[tuple[str, str, str], tuple[str, int]] = {}
        self.closed_blocks: dict[tuple[str, str], tuple[str, int]] = {}

    def add_doc(self, path: str, line: int, system: str, query: str, doc: str, rank: int) -> None:
        where = self.doc_seen.setdefault((system, query, doc), (path, line))
        if where != (path, line):
            raise InputError(
                path,
                line,
                f"doc {doc} appears twice in the list of system {system} query {query}"
                f" (first at {_earlier(*where, path)})",
                field="doc",
            )
        self.ranked.setdefault((system, query), {})[rank] = doc

    def add_trec(self, path: str, rows: list[_Row]) -> None:
        for row in rows:
            values = row.values
            raw_rank = values["rank"]
            if not INTEGER.fullmatch(raw_rank):
                message = f"rank must be an integer, found {raw_rank!r}"
                raise InputError(path, row.line, message, field="rank")
            if not DECIMAL.fullmatch(values["score"]):
                message = f"score must be a number, found {values['score']!r}"
                raise InputError(path, row.line, message, field="score")
            system, query, rank = values["tag"], values["qid"], int(raw_rank)
            where = self.rank_seen.setdefault((system, query, rank), (path, row.line))
            if where != (path, row.line):
                raise InputError(
                    path,
                    row.line,
                    f"duplicate rank {rank} for system {system} query {query}"
                    f" (first at {_earlier(*where, path)})",
                    field="rank",
                )
            self.add_doc(path, row.line, system, query, values["doc"], rank)
            score = values["score"]
            value = self.values.get(score)
            if value is None:
                value = self.values[score] = _float32(float(score))
            self.scored.setdefault((system, query), {})[rank] = _Scored(
                value, values["doc"], score, path, row.line
            )

    def score_conflicts(self) -> list[ScoreConflict]:
        """One :class:`ScoreConflict` per list whose rank order is not trec_eval's."""
        conflicts: list[ScoreConflict] = []
        for (system, query), by_rank in self.scored.items():
            ranks = sorted(by_rank)
            first: ScoreConflict | None = None
            out_of_order = 0
            for above_rank, rank in itertools.pairwise(ranks):
                above, entry = by_rank[above_rank], by_rank[rank]
                if above > entry:  # trec_eval's order: (score, docno) decreasing
                    continue
                out_of_order += 1
                if first is None:
                    first = ScoreConflict(
                        entry.path,
                        entry.line,
                        system,
                        query,
                        rank,
                        entry.score,
                        entry.doc,
                        above_rank,
                        above.score,
                        above.doc,
                        tie=entry.value == above.value,
                    )
            if first is not None:
                conflicts.append(replace(first, more=out_of_order - 1))
        return sorted(conflicts, key=lambda c: (c.path, c.line))

    def add_tsv(self, path: str, rows: list[_Row]) -> None:
        block: tuple[str, str] | None = None
        block_start = 0  # index in rows of the first line of ``block``
        before: tuple[str, str] | None = None  # the block before ``block`` in this file
        for index, row in enumerate(rows):
            key = (row.values["system"], row.values["query"])
            if key != block:
                if block is not None:
                    self.closed_blocks[block] = (path, rows[block_start].line)
                if key in self.closed_blocks:
                    if block is not None and before == key:
                        self._check_interruption(path, rows, block_start, index)
                    raise InputError(
                        path,
                        row.line,
                        f"lines of system {key[0]} query {key[1]} are not contiguous (their"
                        f" block at {_earlier(*self.closed_blocks[key], path)} already ended)",
                        field="query",
                    )
                before, block, block_start = block, key, index
            rank = len(self.ranked.get(key, {})) + 1
            self.add_doc(path, row.line, key[0], key[1], row.values["doc"], rank)
        if block is not None:
            self.closed_blocks[block] = (path, rows[block_start].line)

    def _check_interruption(self, path: str, rows: list[_Row], start: int, resumed: int) -> None:
        """Blame the lines ``start:resumed`` when they split a longer block in two.

        ``A A X A A A``: the X line is the likely typo (a mistyped system or query id), not
        the A line after it, which is only where the split shows.
        """

        def key(row: _Row) -> tuple[str, str]:
            return row.values["system"], row.values["query"]

        interrupted = key(rows[resumed])
        rest = resumed
        while rest < len(rows) and key(rows[rest]) == interrupted:
            rest += 1
        if resumed - start >= rest - resumed:
            return  # as long as what follows: no telling which side is wrong
        system, query = key(rows[start])
        first, last = rows[start].line, rows[resumed - 1].line
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        if query == interrupted[1]:
            field, guess = "system", f"is system {system} a typo of {interrupted[0]}?"
        elif system == interrupted[0]:
            field, guess = "query", f"is query {query} a typo of {interrupted[1]}?"
        else:
            field, guess = "system", "a typo in the system or query id?"
        earlier = self.closed_blocks[interrupted][1]
        raise InputError(
            path,
            first,
            f"system {system} query {query} ({lines}) splits the lines of system"
            f" {interrupted[0]} query {interrupted[1]} (from line {earlier}, again from line"
            f" {rows[resumed].line}), which must be contiguous: {guess}",
            field=field,
        )

    def lists(self, order_by: str = "rank") -> dict[str, dict[str, list[str]]]:
        """System -> query -> docs, by rank or (TREC runs) by trec_eval's order."""
        lists: dict[str, dict[str, list[str]]] = {}
        for (system, query), by_rank in self.ranked.items():
            if order_by == "score":
                entries = sorted(self.scored[system, query].values(), reverse=True)
                docs = [entry.doc for entry in entries]
            else:
                docs = [by_rank[rank] for rank in sorted(by_rank)]
            lists.setdefault(system, {})[query] = docs
        return lists


def read_runs(path: str | os.PathLike[str], *, order_by: str = "rank") -> Runs:
    """Read the ranked lists of the systems from a run file or a directory of run files.

    Two formats are recognised from the content:

    - TREC: ``qid Q0 doc rank score tag`` (6 whitespace-separated fields). The system id is
      ``tag``; lists are ordered by the integer ``rank``, which need not start at 1 but must be
      unique per (tag, qid), or with ``order_by="score"`` as trec_eval orders them
      (:func:`trec_eval_order`: decreasing score, ties by decreasing docno). ``Q0`` is ignored
      and ``score`` must be a number. Either way, every list whose scores order it otherwise
      than its ranks is reported in :attr:`Runs.score_conflicts` (file and line).
    - TSV: ``system<TAB>query<TAB>doc``, the lines of one (system, query) contiguous and in rank
      order. A header line whose first field is ``system`` is skipped.

    ``path`` may be a directory: all its regular, non-hidden files are read in name order, and
    must all be in the same format. Blank lines and lines starting with ``#`` are skipped.

    Parameters
    ----------
    path : str or os.PathLike
        A run file, or a directory of run files.
    order_by : {"rank", "score"}
        How to order the lists of a TREC run (:data:`RUN_ORDERS`). ``"score"`` needs a score
        column: a TSV run is refused with it.

    Returns
    -------
    Runs
        Full lists as read, without any cut-off.

    Raises
    ------
    InputError
        On a missing path, an empty directory or file, a file that is not UTF-8 text (or holds
        a NUL), a line with the wrong number of fields, a non-integer or duplicate rank, the
        same doc twice in one list, a (system, query) block of a TSV file interrupted by
        another block, or a TSV run to be ordered by score.
    ValueError
        If ``order_by`` is neither ``"rank"`` nor ``"score"``.

    Examples
    --------
    A TSV file holding ``sysA<TAB>q1<TAB>d3`` then ``sysA<TAB>q1<TAB>d1`` gives
    ``Runs(lists={"sysA": {"q1": ["d3", "d1"]}}, format="tsv")``.
    """
    if order_by not in RUN_ORDERS:
        raise ValueError(f"order_by must be 'rank' or 'score', got {order_by!r}")
    parsed = [(file, *_parse(file, (_TSV_RUN, _TREC_RUN))) for file in _run_files(os.fspath(path))]
    first_file, first_format, _ = parsed[0]
    if order_by == "score" and first_format is _TSV_RUN:
        raise InputError(
            first_file,
            None,
            "cannot order by score: this is a TSV run (system query doc), which has no score "
            "column; its lines are in rank order (order by rank)",
        )
    collector = _RunCollector()
    for file, detected, rows in parsed:
        if detected is not first_format:
            raise InputError(
                file,
                rows[0].line,
                f"this is a {detected.label} file but {first_file} is a {first_format.label}"
                " file; all run files of a directory must have the same format",
            )
        if detected is _TREC_RUN:
            collector.add_trec(file, rows)
        else:
            collector.add_tsv(file, rows)
    return Runs(
        lists=collector.lists(order_by),
        format=first_format.name,
        order_by=order_by,
        score_conflicts=tuple(collector.score_conflicts()),
    )


def score_order_warnings(
    conflicts: Sequence[ScoreConflict],
    *,
    n_lists: int,
    order_by: str,
    hint: str,
    shown: int = SCORE_CONFLICTS_SHOWN,
) -> list[str]:
    """The warning about lists whose scores contradict their ranks (``conflicts``, of
    ``n_lists`` lists ordered by ``order_by``), as lines: a summary, the first ``shown``
    lists by file and line, and how many more there are (empty when there are none).
    ``hint`` is the sentence saying how the reader asks for trec_eval's order (the command
    line's ``--order-by score``, the API's ``order_by``), shown when the lists are in rank
    order."""
    if not conflicts:
        return []
    systems = sorted({c.system for c in conflicts})
    named = ", ".join(systems[:5]) + (f" and {len(systems) - 5} more" if len(systems) > 5 else "")
    lists = "list" if n_lists == 1 else "lists"
    head = (
        f"the scores of {len(conflicts)} of the {n_lists} {lists} order them otherwise "
        f"than their ranks ({'system' if len(systems) == 1 else 'systems'} {named}). "
    )
    if order_by == "score":
        head += (
            "They are ordered by score, as trec_eval, ir_measures and pytrec_eval order them "
            "(decreasing score, ties by decreasing docno), not by the rank column."
        )
    else:
        head += (
            "They are ordered by the rank column; trec_eval, ir_measures and pytrec_eval ignore "
            "it and order each list by score (decreasing, ties by decreasing docno), so their "
            f"figures from these files will differ. {hint}"
        )
    lines = [head, *(str(c) for c in conflicts[:shown])]
    if len(conflicts) > shown:
        lines.append(f"and {len(conflicts) - shown} more lists")
    return lines


def _parse_score(path: str, row: _Row, field: str, scale: str) -> float:
    raw = row.values[field]
    if scale == "broad":
        allowed = "BROAD scores must be 0, 1 or 2"
    else:
        allowed = f"FINE scores must be between {_FINE_RANGE[0]:g} and {_FINE_RANGE[1]:g}"
    if not DECIMAL.fullmatch(raw):
        raise InputError(path, row.line, f"score {raw!r} is not a number ({allowed})", field=field)
    score = float(raw)
    if scale == "broad":
        valid = score in _BROAD_SCORES
    else:
        valid = math.isfinite(score) and _FINE_RANGE[0] <= score <= _FINE_RANGE[1]
    if not valid:
        raise InputError(path, row.line, f"{allowed}, found {raw}", field=field)
    return score


def read_judgments(path: str | os.PathLike[str], scale: str) -> Judgments:
    """Read similarity judgments of (query, doc) pairs.

    Two formats are recognised from the content:

    - TREC qrels: ``qid iter doc rel`` (4 whitespace-separated fields; ``iter`` is ignored).
    - TSV: ``query<TAB>doc<TAB>score``. A header line whose first field is ``query`` is skipped.

    Several lines for one (query, doc) pair are allowed (several assessors); all their scores are
    kept and :meth:`Judgments.mean` averages them. Blank lines and lines starting with ``#`` are
    skipped.

    Parameters
    ----------
    path : str or os.PathLike
        The judgments file.
    scale : {"broad", "fine"}
        ``"broad"``: every score must be 0, 1 or 2 (``1.0`` is accepted). ``"fine"``: every
        score must be a number between 0 and 100, decimals allowed. Legacy FINE files on a 0..10
        scale are *not* converted: rescale them to 0..100 before reading, as a file of small
        scores cannot be told apart from a 0..100 file of low similarity.

    Returns
    -------
    Judgments

    Raises
    ------
    InputError
        On a missing path, an empty file, a line with the wrong number of fields, or a score that
        is not a number or lies outside the scale.
    ValueError
        If ``scale`` is neither ``"broad"`` nor ``"fine"``.
    """
    if scale not in ("broad", "fine"):
        raise ValueError(f"scale must be 'broad' or 'fine', got {scale!r}")
    file = os.fspath(path)
    detected, rows = _parse(file, (_TSV_JUDGMENTS, _QRELS))
    query_field, score_field = ("qid", "rel") if detected is _QRELS else ("query", "score")
    scores: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        score = _parse_score(file, row, score_field, scale)
        scores.setdefault((row.values[query_field], row.values["doc"]), []).append(score)
    return Judgments(scores=scores, format=detected.name)


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
    _, rows = _parse(file, (_TSV_METADATA,))
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


def check_judgments_cover_runs(
    runs: Runs, judgments: Judgments, k: int, judgments_path: str
) -> None:
    """Check that every (query, doc) pair in the top ``k`` of every run has a judgment.

    Parameters
    ----------
    runs : Runs
    judgments : Judgments
    k : int
        Cut-off; pairs ranked below it need no judgment.
    judgments_path : str
        File the judgments came from, used in the error.

    Raises
    ------
    InputError
        With ``line=None``, giving how many pairs lack a judgment and the first few in
        (query, doc) order.
    ValueError
        If ``k`` is smaller than 1.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    missing = sorted(
        {
            (query, doc)
            for per_query in runs.lists.values()
            for query, docs in per_query.items()
            for doc in docs[:k]
            if (query, doc) not in judgments.scores
        }
    )
    if not missing:
        return
    shown = ", ".join(f"query {q} doc {d}" for q, d in missing[:_MISSING_PAIRS_SHOWN])
    if len(missing) > _MISSING_PAIRS_SHOWN:
        shown += ", ..."
    pairs = "run pair has" if len(missing) == 1 else "run pairs have"
    message = f"{len(missing)} {pairs} no judgment in the top {k} (first: {shown})"
    raise InputError(judgments_path, None, message)
