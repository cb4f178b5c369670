"""Judgment files (TREC qrels and TSV) on the BROAD or FINE scale, and the check that they
cover every run's top k."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from mtcjudge.ingest.formats.lines import InputError, LineFormat, Row, parse_lines
from mtcjudge.ingest.formats.runs import Runs
from mtcjudge.validation import DECIMAL

_BROAD_SCORES = (0.0, 1.0, 2.0)
_FINE_RANGE = (0.0, 100.0)
_MISSING_PAIRS_SHOWN = 3


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


_QRELS = LineFormat("qrels", "TREC qrels", None, ("qid", "iter", "doc", "rel"))
_TSV_JUDGMENTS = LineFormat("tsv", "TSV judgments", "\t", ("query", "doc", "score"), "query")


def _parse_score(path: str, row: Row, field: str, scale: str) -> float:
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
    detected, rows = parse_lines(file, (_TSV_JUDGMENTS, _QRELS))
    query_field, score_field = ("qid", "rel") if detected is _QRELS else ("query", "score")
    scores: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        score = _parse_score(file, row, score_field, scale)
        scores.setdefault((row.values[query_field], row.values["doc"]), []).append(score)
    return Judgments(scores=scores, format=detected.name)


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
