"""Run files: TREC runs and TSV runs, one file or a directory of them, read into ranked lists;
and where a TREC run's scores order a list otherwise than its ranks (as trec_eval reads it)."""

from __future__ import annotations

import itertools
import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from mtcjudge.ingest.formats.lines import InputError, LineFormat, Row, parse_lines, where_first
from mtcjudge.validation import DECIMAL, INTEGER

RUN_ORDERS = ("rank", "score")


SCORE_CONFLICTS_SHOWN = 10


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

    @property
    def documents(self) -> list[str]:
        """Ids of the documents some system retrieved, sorted."""
        lists = (docs for per_query in self.lists.values() for docs in per_query.values())
        return sorted({doc for docs in lists for doc in docs})


_TREC_RUN = LineFormat("trec", "TREC run", None, ("qid", "Q0", "doc", "rank", "score", "tag"))
_TSV_RUN = LineFormat("tsv", "TSV run", "\t", ("system", "query", "doc"), header="system")


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
                f" (first at {where_first(*where, path)})",
                field="doc",
            )
        self.ranked.setdefault((system, query), {})[rank] = doc

    def add_trec(self, path: str, rows: list[Row]) -> None:
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
                    f" (first at {where_first(*where, path)})",
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

    def add_tsv(self, path: str, rows: list[Row]) -> None:
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
                        f" block at {where_first(*self.closed_blocks[key], path)} already ended)",
                        field="query",
                    )
                before, block, block_start = block, key, index
            rank = len(self.ranked.get(key, {})) + 1
            self.add_doc(path, row.line, key[0], key[1], row.values["doc"], rank)
        if block is not None:
            self.closed_blocks[block] = (path, rows[block_start].line)

    def _check_interruption(self, path: str, rows: list[Row], start: int, resumed: int) -> None:
        """Blame the lines ``start:resumed`` when they split a longer block in two.

        ``A A X A A A``: the X line is the likely typo (a mistyped system or query id), not
        the A line after it, which is only where the split shows.
        """

        def key(row: Row) -> tuple[str, str]:
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
    parsed = [
        (file, *parse_lines(file, (_TSV_RUN, _TREC_RUN))) for file in _run_files(os.fspath(path))
    ]
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
