"""``mtcjudge evaluate``: score run files against qrels and partially ordered ground truths,
offline, as trec_eval does for text retrieval (docs/evaluate.md).

The files are read by :mod:`mtcjudge.ingest.formats` (runs, qrels) and
:mod:`mtcjudge.evaluation.ground_truth`; the ids become dense arrays here, and the numbers come
from :mod:`mtcjudge.evaluation.measures` (on the engine's discounts), :mod:`mtcjudge.mtc.adr`,
:mod:`mtcjudge.mtc.mirex` and :mod:`mtcjudge.mtc.significance`.

Conventions (those of ``trec_eval -c``): the evaluated queries are those of the qrels (of the
ground truth for ADR); a query a system did not answer scores 0 on every measure; a retrieved
document without a judgment has gain 0 and is not relevant; queries that only the runs know
are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mtcjudge.evaluation.ground_truth import GroundTruth, read_ground_truth
from mtcjudge.evaluation.measures import (
    Lists,
    classic_measures,
    graded_measures,
    judged_share,
)
from mtcjudge.exports.formats import round_half_up
from mtcjudge.ingest.formats import (
    InputError,
    Judgments,
    Runs,
    ScoreConflict,
    read_judgments,
    read_runs,
)
from mtcjudge.mtc._validation import check_int
from mtcjudge.mtc.adr import adr_partial_order
from mtcjudge.mtc.mirex import MirexAnalysis, friedman_tukey
from mtcjudge.mtc.scales import Scale, get_scale
from mtcjudge.mtc.significance import Verdicts, pairwise_significance_verdicts

__all__ = [
    "DEFAULT_K",
    "DEFAULT_THRESHOLDS",
    "MAX_K",
    "MirexResult",
    "OfflineEvaluation",
    "SignificanceResult",
    "evaluate_files",
    "mirex_analysis",
    "significance_rules",
    "tukey_groups",
]

FloatArray = NDArray[np.float64]
DEFAULT_K = 5
#: the largest cut-off: the kernels hold (queries x max(k, list length)) arrays per system
MAX_K = 10_000
#: a judgment at least this high is "relevant" for P@k, recall, AP and RR: the "somewhat
#: similar" grade of each scale
DEFAULT_THRESHOLDS = {"fine": 50.0, "broad": 1.0}
#: the measures from the qrels, in output order; ``@k`` is replaced by the cut-off
QRELS_MEASURES = (
    "cg@k",
    "dcg@k",
    "ndcg@k",
    "rbp@k",
    "p@k",
    "recall@k",
    "recall",
    "ap",
    "rr",
    "judged@k",
)
_BROAD_GRADES = frozenset({0.0, 1.0, 2.0})


@dataclass(frozen=True)
class OfflineEvaluation:
    """Scores of every system on every evaluated query.

    Attributes
    ----------
    systems : list of str
        System ids (the runs' tags or TSV systems), sorted.
    queries : list of str
        Every evaluated query (of the qrels and of the ground truth), sorted.
    columns : list of str
        The measures, as named in the output (``cg@5``, ..., ``adr``).
    per_query : dict of str to ndarray of shape (n_systems, n_queries)
        Score of each system on each query; NaN where the query is not in the file the
        measure is computed from (the qrels, or the ground truth for ``adr``).
    answered : ndarray of bool, shape (n_systems, n_queries)
        Whether the system returned a list for the query.
    k : int
    scale : str or None
        ``"fine"`` or ``"broad"`` (None without qrels).
    scale_detected : bool
        True when the scale was recognised from the grades rather than given.
    threshold : float or None
        Smallest relevant judgment of the classic measures (None without qrels).
    qrels_queries, ground_truth_queries : list of str
        The queries each file defines, sorted.
    ignored_queries : list of str
        Queries of the runs that neither file judges (not evaluated).
    best_cg : ndarray of shape (n_systems, n_qrels_queries) or None
        CG@k with every unjudged document of the top k at the maximum grade: the best case
        of the 2012 significance rules (the worst case is ``cg@k`` itself).
    order_by : str
        How the lists were ordered: ``"rank"`` (the rank column, or a TSV run's lines) or
        ``"score"`` (trec_eval's order).
    score_conflicts : tuple of ScoreConflict
        The lists whose scores order them otherwise than their ranks (file and line).
    n_lists : int
        How many (system, query) lists the runs hold.
    """

    systems: list[str]
    queries: list[str]
    columns: list[str]
    per_query: dict[str, FloatArray]
    answered: NDArray[np.bool_]
    k: int
    scale: str | None
    scale_detected: bool
    threshold: float | None
    qrels_queries: list[str]
    ground_truth_queries: list[str]
    ignored_queries: list[str]
    best_cg: FloatArray | None
    order_by: str = "rank"
    score_conflicts: tuple[ScoreConflict, ...] = ()
    n_lists: int = 0

    def means(self) -> dict[str, FloatArray]:
        """Mean of each measure over the queries it is defined on, shape (n_systems,)."""
        return {
            column: scores[:, ~np.isnan(scores[0])].mean(axis=1)
            for column, scores in self.per_query.items()
        }

    def defined_queries(self, column: str) -> NDArray[np.bool_]:
        """Which queries ``column`` is computed on, shape (n_queries,)."""
        defined: NDArray[np.bool_] = ~np.isnan(self.per_query[column][0])
        return defined

    def answered_counts(self) -> NDArray[np.int64]:
        """Evaluated queries each system answered, shape (n_systems,)."""
        counts: NDArray[np.int64] = self.answered.sum(axis=1).astype(np.int64)
        return counts


def _read_qrels(path: str, scale: str | None) -> tuple[Judgments, str, bool]:
    if scale is not None:
        return read_judgments(path, scale), scale, False
    try:
        judgments = read_judgments(path, "fine")
    except InputError as err:
        if err.field in ("rel", "score"):
            raise InputError(
                err.path,
                err.line,
                f"{err.message} (without --scale a grade must be BROAD 0, 1, 2 or FINE 0-100)",
                err.field,
            ) from None
        raise
    grades = {value for values in judgments.scores.values() for value in values}
    detected = "broad" if grades <= _BROAD_GRADES else "fine"
    return judgments, detected, True


def _qrels_values(judgments: Judgments, scale: str) -> dict[str, dict[str, float]]:
    """Query -> doc -> judgment; several of one pair count as their mean, rounded half up on
    BROAD (docs/method.md §1.1)."""
    values: dict[str, dict[str, float]] = {}
    for (query, doc), mean in judgments.mean().items():
        values.setdefault(query, {})[doc] = float(round_half_up(mean)) if scale == "broad" else mean
    return values


def _system_lists(
    runs: Runs, system: str, queries: list[str], qrels: dict[str, dict[str, float]], k: int
) -> Lists:
    per_query = runs.lists[system]
    depth = max([k, *(len(per_query.get(q, ())) for q in queries)])
    gains = np.zeros((len(queries), depth))
    judged = np.zeros((len(queries), depth), dtype=bool)
    retrieved = np.zeros((len(queries), depth), dtype=bool)
    for row, query in enumerate(queries):
        docs = per_query.get(query, [])
        judgments = qrels[query]
        retrieved[row, : len(docs)] = True
        for rank, doc in enumerate(docs):
            value = judgments.get(doc)
            if value is not None:
                gains[row, rank] = value
                judged[row, rank] = True
    return Lists(gains, judged, retrieved)


def _qrels_scores(
    runs: Runs,
    qrels: dict[str, dict[str, float]],
    queries: list[str],
    scale: Scale,
    k: int,
    threshold: float,
) -> tuple[dict[str, FloatArray], FloatArray]:
    """Every qrels measure, each (n_systems, n_qrels_queries), and the best-case CG@k."""
    ideal = np.zeros((len(queries), k))
    n_relevant = np.zeros(len(queries), dtype=np.int64)
    for row, query in enumerate(queries):
        values = sorted(qrels[query].values(), reverse=True)
        ideal[row, : min(k, len(values))] = values[:k]
        n_relevant[row] = sum(value >= threshold for value in values)
    names = [name.replace("@k", f"@{k}") for name in QRELS_MEASURES]
    scores = {name: np.zeros((len(runs.systems), len(queries))) for name in names}
    best_cg = np.zeros((len(runs.systems), len(queries)))
    for index, system in enumerate(runs.systems):
        lists = _system_lists(runs, system, queries, qrels, k)
        measures = graded_measures(lists, ideal, k, scale)
        measures |= classic_measures(lists, n_relevant, k, threshold)
        measures["judged@k"] = judged_share(lists, k)
        for generic, name in zip(QRELS_MEASURES, names, strict=True):
            scores[name][index] = measures[generic]
        unjudged = lists.retrieved & ~lists.judged
        best = Lists(np.where(unjudged, scale.lmax, lists.gains), lists.judged, lists.retrieved)
        best_cg[index] = graded_measures(best, ideal, k, scale)["cg@k"]
    return scores, best_cg


def _adr_scores(runs: Runs, truth: GroundTruth) -> FloatArray:
    """ADR (Typke, Veltkamp and Wiering) of every system on every ground-truth query, over
    the first n ranks, n the query's ground-truth size (n_systems, n_ground_truth_queries)."""
    scores = np.zeros((len(runs.systems), len(truth.queries)))
    for index, system in enumerate(runs.systems):
        lists = runs.lists[system]
        for column, query in enumerate(truth.queries):
            scores[index, column] = adr_partial_order(truth.groups[query], lists.get(query, []))
    return scores


def _check_threshold(threshold: float, scale: Scale) -> float:
    if not (np.isfinite(threshold) and 0.0 < threshold <= scale.lmax):
        raise ValueError(
            f"--threshold must be above 0 and at most {scale.lmax:g} on the "
            f"{scale.name.upper()} scale, found {threshold:g}"
        )
    return float(threshold)


def evaluate_files(
    runs_path: str | os.PathLike[str],
    qrels_path: str | os.PathLike[str] | None = None,
    ground_truth_path: str | os.PathLike[str] | None = None,
    *,
    scale: str | None = None,
    k: int = DEFAULT_K,
    threshold: float | None = None,
    order_by: str = "rank",
) -> OfflineEvaluation:
    """Read the files and score every system on every evaluated query.

    Parameters
    ----------
    runs_path : path
        A run file or a directory of run files (TREC ``qid Q0 docno rank score tag`` or TSV
        ``system query doc``; :func:`mtcjudge.ingest.formats.read_runs`). Lists are in ``rank``
        order, or with ``order_by="score"`` in trec_eval's (decreasing score, ties by
        decreasing docno).
    qrels_path : path, optional
        TREC qrels ``qid 0 docno rel`` or TSV ``query doc score``.
    ground_truth_path : path, optional
        ``query group_rank document`` lines, for ADR. At least one of the two is needed.
    scale : {"fine", "broad"}, optional
        Scale of the qrels; by default BROAD when every grade is 0, 1 or 2, else FINE.
    k : int
        Cut-off of the ``@k`` measures, from 1 to :data:`MAX_K`.
    threshold : float, optional
        Smallest relevant judgment (default :data:`DEFAULT_THRESHOLDS`).
    order_by : {"rank", "score"}
        How the lists of TREC runs are ordered (:data:`mtcjudge.ingest.formats.RUN_ORDERS`).

    Raises
    ------
    InputError
        A file that cannot be read or parsed, or a system that answers none of the
        evaluated queries.
    ValueError
        Neither qrels nor a ground truth, k < 1, or a threshold outside the scale.
    """
    if qrels_path is None and ground_truth_path is None:
        raise ValueError("give --qrels, --ground-truth or both: there is nothing to score against")
    check_int("k", k, 1, MAX_K)
    if scale is not None:
        get_scale(scale)
    runs = read_runs(runs_path, order_by=order_by)
    qrels: dict[str, dict[str, float]] = {}
    used_scale: Scale | None = None
    detected = False
    if qrels_path is not None:
        qrels, used_scale, detected, threshold = _read_judged(qrels_path, scale, threshold)
    truth = read_ground_truth(ground_truth_path) if ground_truth_path is not None else None
    qrels_queries = sorted(qrels)
    queries = sorted(set(qrels_queries) | set(truth.queries if truth is not None else []))
    files = " and ".join(os.fspath(p) for p in (qrels_path, ground_truth_path) if p is not None)
    _refuse_systems_of_other_queries(runs, queries, os.fspath(runs_path), files)
    per_query, best_cg = _per_query_scores(runs, qrels, truth, queries, used_scale, k, threshold)
    answered = np.array([[q in runs.lists[s] for q in queries] for s in runs.systems], dtype=bool)
    return OfflineEvaluation(
        systems=runs.systems,
        queries=queries,
        columns=list(per_query),
        per_query=per_query,
        answered=answered.reshape(len(runs.systems), len(queries)),
        k=k,
        scale=used_scale.name if used_scale is not None else None,
        scale_detected=detected,
        threshold=threshold,
        qrels_queries=qrels_queries,
        ground_truth_queries=truth.queries if truth is not None else [],
        ignored_queries=sorted(set(runs.queries) - set(queries)),
        best_cg=best_cg,
        order_by=runs.order_by,
        score_conflicts=runs.score_conflicts,
        n_lists=runs.n_lists,
    )


def _read_judged(
    qrels_path: str | os.PathLike[str], scale: str | None, threshold: float | None
) -> tuple[dict[str, dict[str, float]], Scale, bool, float]:
    """The qrels' grades by query and document, their scale (and whether it was detected),
    and the smallest relevant judgment on it."""
    judgments, scale_name, detected = _read_qrels(os.fspath(qrels_path), scale)
    used_scale = get_scale(scale_name)
    threshold = _check_threshold(
        DEFAULT_THRESHOLDS[scale_name] if threshold is None else threshold, used_scale
    )
    return _qrels_values(judgments, scale_name), used_scale, detected, threshold


def _per_query_scores(
    runs: Runs,
    qrels: dict[str, dict[str, float]],
    truth: GroundTruth | None,
    queries: list[str],
    scale: Scale | None,
    k: int,
    threshold: float | None,
) -> tuple[dict[str, FloatArray], FloatArray | None]:
    """Every measure's (system, query) scores over the evaluated ``queries`` (NaN where a
    query has no qrels or no ground truth), and the best CG of each qrels query."""
    per_query: dict[str, FloatArray] = {}
    best_cg = None
    qrels_queries = sorted(qrels)
    if scale is not None and threshold is not None:
        scores, best_cg = _qrels_scores(runs, qrels, qrels_queries, scale, k, threshold)
        per_query.update(_over_queries(scores, qrels_queries, queries, len(runs.systems)))
    if truth is not None:
        adr = {"adr": _adr_scores(runs, truth)}
        per_query.update(_over_queries(adr, truth.queries, queries, len(runs.systems)))
    return per_query, best_cg


def _refuse_systems_of_other_queries(
    runs: Runs, queries: list[str], runs_path: str, files: str
) -> None:
    """Every system answers at least one of the evaluated ``queries`` (of ``files``)."""
    evaluated = set(queries)
    for system in runs.systems:
        if not evaluated & set(runs.lists[system]):
            raise InputError(
                runs_path,
                None,
                f"system {system} answers none of the {len(queries)} queries of {files}: "
                "are the query ids of the same collection?",
            )


def _over_queries(
    scores: dict[str, FloatArray], scored: list[str], queries: list[str], n_systems: int
) -> dict[str, FloatArray]:
    """Each measure's (system, query) scores of the ``scored`` queries placed among every
    evaluated query (NaN for the others)."""
    column_of = {q: i for i, q in enumerate(queries)}
    where = [column_of[q] for q in scored]
    placed = {}
    for name, values in scores.items():
        full = np.full((n_systems, len(queries)), np.nan)
        full[:, where] = values
        placed[name] = full
    return placed


# ------------------------------------------------------------------ the MIREX analysis


@dataclass(frozen=True)
class MirexResult:
    """Friedman test and Tukey HSD on the per-query scores of one measure.

    Attributes
    ----------
    column : str
        The measure analysed.
    n_queries : int
        Queries it is defined on (the blocks of the test).
    analysis : MirexAnalysis
        The engine's result; systems in :attr:`OfflineEvaluation.systems` order.
    groups : list of str
        Each system's Tukey HSD group letters (``"A"``, ``"AB"``...): systems sharing a
        letter are not significantly different; ``A`` is the group of the best mean rank.
    """

    column: str
    n_queries: int
    analysis: MirexAnalysis
    groups: list[str]


def tukey_groups(mean_ranks: FloatArray, significant: NDArray[np.bool_]) -> list[str]:
    """Compact letter display of Tukey HSD on mean ranks.

    Systems are taken from the best (highest) mean rank down; each group is a maximal run of
    consecutive systems none of which differs significantly from the first of the run
    (HSD compares |mean rank differences| with one critical difference, so such runs are
    the maximal sets of mutually indistinguishable systems). Letters A, B, ..., Z, then
    A1, B1, ...

    Examples
    --------
    >>> sig = np.array([[False, False, True], [False, False, False], [True, False, False]])
    >>> tukey_groups(np.array([2.8, 1.8, 1.4]), sig)
    ['A', 'AB', 'B']
    """
    order = np.argsort(-mean_ranks, kind="stable")
    letters = [""] * len(order)
    last_end = -1
    label = 0
    for start in range(len(order)):
        end = start
        while end + 1 < len(order) and not significant[order[start], order[end + 1]]:
            end += 1
        if end <= last_end:
            continue
        letter = chr(ord("A") + label % 26) + (str(label // 26) if label >= 26 else "")
        label += 1
        for position in range(start, end + 1):
            letters[order[position]] += letter
        last_end = end
    return letters


def mirex_analysis(result: OfflineEvaluation, column: str, *, alpha: float = 0.05) -> MirexResult:
    """Friedman + Tukey HSD (docs/method.md §6) on the per-query scores of ``column``.

    Raises
    ------
    ValueError
        An unknown column, or fewer than 2 systems or 2 queries.
    """
    if column not in result.per_query:
        raise ValueError(
            f"--measure must be one of the computed measures ({', '.join(result.columns)}), "
            f"found {column!r}"
        )
    defined = result.defined_queries(column)
    scores = result.per_query[column][:, defined].T
    if scores.shape[0] < 2 or scores.shape[1] < 2:
        raise ValueError(
            f"the MIREX analysis needs at least 2 systems and 2 queries, found "
            f"{scores.shape[1]} systems and {scores.shape[0]} queries"
        )
    analysis = friedman_tukey(scores, alpha=alpha)
    groups = tukey_groups(analysis.mean_ranks, analysis.significant)
    return MirexResult(column, int(scores.shape[0]), analysis, groups)


# ------------------------------------------------------------------ the 2012 rules


@dataclass(frozen=True)
class SignificanceResult:
    """The 2012 significance rules ([U12], docs/method.md §5.3) for every pair of systems.

    Attributes
    ----------
    pairs : list of (int, int)
        System indices (A, B), A < B, in ``numpy.triu_indices`` order.
    mean_difference : ndarray of shape (n_pairs,)
        Mean CG@k of A minus that of B (unjudged documents as 0): the E of rule 4.
    verdicts : Verdicts
    alpha, delta : float
    """

    pairs: list[tuple[int, int]]
    mean_difference: FloatArray
    verdicts: Verdicts
    alpha: float
    delta: float


def significance_rules(
    result: OfflineEvaluation, *, alpha: float = 0.05, delta: float = 0.067
) -> SignificanceResult:
    """Rules 1-4 of [U12] on CG@k between every pair of systems.

    The per-query bounds of A - B are those of docs/method.md §5.2 (the paper's form): the
    best case for A counts every unjudged document in A's top k at the maximum grade and
    every one in B's at 0, the worst case the reverse. With every retrieved document of the
    top k judged the bounds coincide and rules 1-3 always decide (a one-sided paired t-test
    at ``alpha``); rule 4 compares the mean difference with ``delta`` (normalised units).

    Raises
    ------
    ValueError
        Without qrels, or with fewer than 2 systems or 2 queries.
    """
    if result.best_cg is None:
        raise ValueError("the significance rules work on CG@k: they need --qrels")
    worst = result.per_query[f"cg@{result.k}"][:, result.defined_queries(f"cg@{result.k}")]
    best = result.best_cg
    n_systems, n_queries = worst.shape
    if n_systems < 2 or n_queries < 2:
        raise ValueError(
            f"the significance rules need at least 2 systems and 2 queries, found "
            f"{n_systems} systems and {n_queries} queries"
        )
    a, b = np.triu_indices(n_systems, 1)
    means = worst.mean(axis=1)
    difference = means[a] - means[b]
    verdicts = pairwise_significance_verdicts(best, worst, difference, delta=delta, alpha=alpha)
    pairs = [(int(i), int(j)) for i, j in zip(a, b, strict=True)]
    return SignificanceResult(pairs, difference, verdicts, alpha, delta)
