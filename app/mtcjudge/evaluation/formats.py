"""What ``mtcjudge evaluate`` writes: an aligned table, CSV and JSON, each measure defined.

The four graded measures carry the definitions of the exports
(:data:`mtcjudge.exports.formats.MEASURE_DEFINITIONS`), with what differs offline: the ideal
ordering is that of the query's judgments in the qrels file.
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np

from mtcjudge.evaluation.measures import RBP_PERSISTENCE
from mtcjudge.evaluation.service import MirexResult, OfflineEvaluation, SignificanceResult
from mtcjudge.exports.formats import MEASURE_DEFINITIONS
from mtcjudge.ingest.formats import SCORE_CONFLICTS_SHOWN
from mtcjudge.validation import printable

__all__ = [
    "CONVENTIONS",
    "measure_definitions",
    "mirex_csv",
    "significance_csv",
    "to_csv",
    "to_json",
    "to_table",
]

#: how the qrels are read, in words: every output carries them
CONVENTIONS = {
    "queries": (
        "the evaluated queries are those of the qrels (of the ground truth for adr); a query "
        "a system did not answer scores 0 on every measure and counts in its mean (trec_eval "
        "-c); queries only the runs know are ignored"
    ),
    "unjudged": (
        "a retrieved document without a judgment in the qrels has gain 0 and is not relevant "
        "(as trec_eval)"
    ),
    "order": (
        "a system's list is in the order of the run file's rank column (TREC) or of its lines "
        "(TSV); trec_eval sorts by score instead (ties by decreasing docno), which agrees when "
        "scores decrease with rank: the lists whose scores disagree are named on stderr and "
        "in score_conflicts"
    ),
    "several_judgments": (
        "several qrels lines for one pair count as their mean, rounded half up on BROAD"
    ),
}

#: the conventions' order when ``--order-by score`` is given
_ORDER_BY_SCORE = (
    "a system's list is in the order trec_eval, ir_measures and pytrec_eval use: decreasing "
    "score, ties by decreasing docno (the rank column is ignored; a TSV run cannot be ordered "
    "by score)"
)

_OFFLINE_IDEAL = (
    "Here the ideal ordering is the query's k highest judgments in the qrels file, so a "
    "score does not depend on the other systems evaluated"
)


def _threshold_text(result: OfflineEvaluation) -> str:
    return f"judgment >= {result.threshold:g}"


def measure_definitions(result: OfflineEvaluation) -> dict[str, dict[str, str]]:
    """The definition of every output column, with its trec_eval and ir_measures names."""
    k = result.k
    relevant = f"relevant = {_threshold_text(result)}" if result.threshold is not None else ""
    everything = _graded_definitions(k) | _classic_definitions(k, relevant) | _ADR_DEFINITION
    return {column: everything[column] for column in result.columns}


def _graded_definitions(k: int) -> dict[str, dict[str, str]]:
    """The measures of the campaign's results, as an evaluation of files computes them."""
    return {
        f"cg@{k}": {
            **MEASURE_DEFINITIONS["cg"],
            "trec_eval": "none",
            "ir_measures": "sum over grades t of (t - previous t) * P(rel=t)@k, divided by max",
        },
        f"dcg@{k}": {
            **MEASURE_DEFINITIONS["dcg"],
            "trec_eval": "none",
            "ir_measures": "SDCG(max_rel=max)@k (cwl_eval's scaled DCG)",
        },
        f"ndcg@{k}": {
            **MEASURE_DEFINITIONS["ndcg"],
            "in_evaluate": _OFFLINE_IDEAL,
            "trec_eval": f"ndcg_cut.{k}",
            "ir_measures": f"nDCG@{k}",
        },
        f"rbp@{k}": {
            **MEASURE_DEFINITIONS["rbp"],
            "in_evaluate": _OFFLINE_IDEAL,
            "trec_eval": "none",
            "ir_measures": "none (RBP there is Moffat and Zobel's, unnormalised)",
        },
    }


def _classic_definitions(k: int, relevant: str) -> dict[str, dict[str, str]]:
    """The binary measures of trec_eval, on the judgments at least the threshold."""
    return {
        f"p@{k}": {
            "name": f"precision@{k}",
            "definition": f"relevant documents in the top {k} / {k} ({relevant})",
            "trec_eval": f"P_{k} (-l threshold)",
            "ir_measures": f"P(rel=threshold)@{k}",
        },
        f"recall@{k}": {
            "name": f"recall@{k}",
            "definition": (
                f"relevant documents in the top {k} / relevant documents of the query in the "
                f"qrels; 0 when it has none ({relevant})"
            ),
            "trec_eval": f"recall_{k}",
            "ir_measures": f"R(rel=threshold)@{k}",
        },
        "recall": {
            "name": "recall",
            "definition": (
                "relevant documents in the whole list / relevant documents of the query in "
                f"the qrels; 0 when it has none ({relevant})"
            ),
            "trec_eval": "num_rel_ret / num_rel",
            "ir_measures": "R(rel=threshold) at a cut-off beyond the longest list",
        },
        "ap": {
            "name": "average precision",
            "definition": (
                "over the whole list, the sum of precision@i at the ranks i of relevant "
                "documents, divided by the relevant documents of the query in the qrels; 0 "
                f"when it has none ({relevant})"
            ),
            "trec_eval": "map (per query: AP)",
            "ir_measures": "AP(rel=threshold)",
        },
        "rr": {
            "name": "reciprocal rank",
            "definition": f"1 / rank of the first relevant document, 0 if none ({relevant})",
            "trec_eval": "recip_rank",
            "ir_measures": "RR(rel=threshold)",
        },
        f"judged@{k}": {
            "name": f"judged share@{k}",
            "definition": (
                f"judged documents in the top {k} / documents retrieved in the top {k} (0 if "
                "none): how much of the top k the qrels cover; unjudged ones count as 0 above"
            ),
            "trec_eval": "none",
            "ir_measures": f"Judged@{k}",
        },
    }


#: Average Dynamic Recall, on a ground truth of ordered groups
_ADR_DEFINITION = {
    "adr": {
        "name": "Average Dynamic Recall (Typke, Veltkamp and Wiering)",
        "definition": (
            "for a ground truth of ordered groups with n documents: the mean over the "
            "ranks i = 1..n of r_i = (documents of the top i that belong to the groups up "
            "to the one holding the i-th ground-truth document) / i; the first n ranks of "
            "the list count, documents outside the ground truth are false positives"
        ),
        "trec_eval": "none",
        "ir_measures": "none",
    }
}


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _mirex_document(mirex: MirexResult, systems: list[str]) -> dict[str, Any]:
    analysis = mirex.analysis
    n = len(systems)
    return {
        "measure": mirex.column,
        "queries": mirex.n_queries,
        "friedman": {
            "chi2": analysis.chi2,
            "df": analysis.df,
            "p_value": analysis.p_value,
            "tie_correction": analysis.tie_correction,
        },
        "tukey_hsd": {
            "alpha": analysis.alpha,
            "q_critical": analysis.q_critical,
            "critical_difference": analysis.critical_difference,
            "on": "Friedman mean ranks (within-query ranks, 1 = lowest score)",
        },
        "systems": [
            {
                "system": systems[i],
                "mean": float(analysis.means[i]),
                "mean_rank": float(analysis.mean_ranks[i]),
                "group": mirex.groups[i],
            }
            for i in np.argsort(-analysis.mean_ranks, kind="stable")
        ],
        "pairs": [
            {
                "system_a": systems[i],
                "system_b": systems[j],
                "rank_difference": float(analysis.rank_differences[i, j]),
                "p_value": float(analysis.tukey_p_values[i, j]),
                "significant": bool(analysis.significant[i, j]),
            }
            for i in range(n)
            for j in range(i + 1, n)
        ],
    }


def _significance_records(
    significance: SignificanceResult, systems: list[str]
) -> list[dict[str, Any]]:
    verdicts = significance.verdicts
    return [
        {
            "system_a": systems[a],
            "system_b": systems[b],
            "mean_difference": float(significance.mean_difference[index]),
            "verdict": verdicts.outcome[index].value,
            "rule": int(verdicts.rule[index]) or None,
            "final": bool(verdicts.final[index]),
            "p_upper_greater": float(verdicts.p_upper_greater[index]),
            "p_upper_less": float(verdicts.p_upper_less[index]),
            "p_lower_greater": float(verdicts.p_lower_greater[index]),
            "p_lower_less": float(verdicts.p_lower_less[index]),
        }
        for index, (a, b) in enumerate(significance.pairs)
    ]


SIGNIFICANCE_COLUMNS = (
    "system_a",
    "system_b",
    "mean_difference",
    "verdict",
    "rule",
    "final",
    "p_upper_greater",
    "p_upper_less",
    "p_lower_greater",
    "p_lower_less",
)


def to_json(
    result: OfflineEvaluation,
    *,
    sources: dict[str, str | None],
    per_query: bool,
    mirex: MirexResult | None = None,
    significance: SignificanceResult | None = None,
) -> str:
    """The whole evaluation as one JSON document (shape: docs/evaluate.md)."""
    means = result.means()
    answered = result.answered_counts()
    document: dict[str, Any] = {
        "tool": "mtcjudge evaluate",
        "files": sources,
        "scale": result.scale,
        "scale_detected": result.scale_detected,
        "k": result.k,
        "relevance_threshold": result.threshold,
        "rbp_persistence": RBP_PERSISTENCE if result.scale is not None else None,
        "queries": {
            "evaluated": len(result.queries),
            "qrels": len(result.qrels_queries),
            "ground_truth": len(result.ground_truth_queries),
            "ignored": result.ignored_queries,
        },
        "conventions": {
            **CONVENTIONS,
            **({"order": _ORDER_BY_SCORE} if result.order_by == "score" else {}),
        },
        "order_by": result.order_by,
        "score_conflicts": {
            "lists": len(result.score_conflicts),
            "of": result.n_lists,
            "first": [
                {
                    "file": c.path,
                    "line": c.line,
                    "system": c.system,
                    "query": c.query,
                    "message": c.message,
                }
                for c in result.score_conflicts[:SCORE_CONFLICTS_SHOWN]
            ],
        },
        "measure_definitions": measure_definitions(result),
        "systems": [
            {
                "system": system,
                "answered": int(answered[s]),
                "measures": {c: float(means[c][s]) for c in result.columns},
            }
            for s, system in enumerate(result.systems)
        ],
    }
    if per_query:
        document["per_query"] = [
            {
                "system": system,
                "query": query,
                "answered": bool(result.answered[s, q]),
                "measures": {
                    c: _json_number(float(result.per_query[c][s, q])) for c in result.columns
                },
            }
            for s, system in enumerate(result.systems)
            for q, query in enumerate(result.queries)
        ]
    if mirex is not None:
        document["mirex"] = _mirex_document(mirex, result.systems)
    if significance is not None:
        document["significance"] = {
            "measure": f"cg@{result.k}",
            "alpha": significance.alpha,
            "delta": significance.delta,
            "pairs": _significance_records(significance, result.systems),
        }
    return json.dumps(document, indent=1, allow_nan=False) + "\n"


def _csv_text(rows: list[list[Any]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue()


def _cell(value: float) -> str:
    return "" if math.isnan(value) else repr(float(value))


def to_csv(result: OfflineEvaluation, *, per_query: bool) -> str:
    """``system,query,answered,<measures>``: per system the mean (query ``all``, answered =
    number of evaluated queries answered), then with ``per_query`` one row per query
    (answered 1 or 0; a measure's cell is empty on a query its file does not hold)."""
    means = result.means()
    answered = result.answered_counts()
    rows: list[list[Any]] = [["system", "query", "answered", *result.columns]]
    for s, system in enumerate(result.systems):
        if per_query:
            for q, query in enumerate(result.queries):
                cells = [_cell(result.per_query[c][s, q]) for c in result.columns]
                rows.append([system, query, int(result.answered[s, q]), *cells])
        rows.append(
            [system, "all", int(answered[s]), *(_cell(means[c][s]) for c in result.columns)]
        )
    return _csv_text(rows)


def mirex_csv(mirex: MirexResult, systems: list[str]) -> str:
    """``system,mean,mean_rank,group`` by mean rank, best first."""
    document = _mirex_document(mirex, systems)
    rows: list[list[Any]] = [["system", "mean", "mean_rank", "group"]]
    rows += [
        [s["system"], repr(s["mean"]), repr(s["mean_rank"]), s["group"]]
        for s in document["systems"]
    ]
    return _csv_text(rows)


def significance_csv(significance: SignificanceResult, systems: list[str]) -> str:
    """One row per system pair, :data:`SIGNIFICANCE_COLUMNS`."""
    rows: list[list[Any]] = [list(SIGNIFICANCE_COLUMNS)]
    for record in _significance_records(significance, systems):
        rows.append(["" if record[c] is None else record[c] for c in SIGNIFICANCE_COLUMNS])
    return _csv_text(rows)


def _aligned(header: list[str], rows: list[list[str]], numeric_from: int) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            cell.rjust(widths[i]) if i >= numeric_from else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ).rstrip()

    return [line(header), *(line(r) for r in rows)]


def _fixed(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4f}"


def to_table(
    result: OfflineEvaluation,
    *,
    per_query: bool,
    mirex: MirexResult | None = None,
    significance: SignificanceResult | None = None,
) -> str:
    """Aligned columns for a terminal, 4 decimals, with a legend of the measures."""
    means = result.means()
    answered = result.answered_counts()
    total = len(result.queries)
    header = ["system", *(["query"] if per_query else []), "answered", *result.columns]
    rows: list[list[str]] = []
    for s, system in enumerate(result.systems):
        name = printable(system)
        if per_query:
            for q, query in enumerate(result.queries):
                cells = [_fixed(float(result.per_query[c][s, q])) for c in result.columns]
                flag = "yes" if result.answered[s, q] else "no"
                rows.append([name, printable(query), flag, *cells])
        where = ["all"] if per_query else []
        cells = [_fixed(float(means[c][s])) for c in result.columns]
        rows.append([name, *where, f"{answered[s]}/{total}", *cells])
    lines = [_summary(result), "", *_aligned(header, rows, 2 if per_query else 1), ""]
    lines += _legend(result)
    if mirex is not None:
        lines += ["", *_mirex_table(mirex, result.systems)]
    if significance is not None:
        lines += ["", *_significance_table(significance, result)]
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{n} {noun if n == 1 else plural}"


def _summary(result: OfflineEvaluation) -> str:
    parts = [_count(len(result.systems), "system"), _count(len(result.queries), "query")]
    if result.scale is not None:
        how = "detected from the grades" if result.scale_detected else "given"
        parts.append(f"qrels {result.scale.upper()} ({how})")
        parts.append(f"k = {result.k}")
        parts.append(f"relevant: {_threshold_text(result)}")
    if result.ground_truth_queries:
        parts.append(f"ground truth: {_count(len(result.ground_truth_queries), 'query')}")
    return "mtcjudge evaluate: " + ", ".join(parts)


def _legend(result: OfflineEvaluation) -> list[str]:
    k = result.k
    lines: list[str] = []
    if result.scale is not None:
        lines += [
            f"cg@{k} = CG@{k}, mean normalised judgment of the top {k}; "
            f"dcg@{k} = MIREX nDCG@{k} (all-maximum normalisation);",
            f"ndcg@{k} = trec_eval nDCG@{k} (ideal ordering of the qrels); "
            f"rbp@{k} = RBP (p = {RBP_PERSISTENCE:g}) over the ideal ordering;",
            f"p@{k}, recall@{k}, recall, ap, rr: relevant = {_threshold_text(result)}; "
            f"judged@{k} = judged share of the top {k}.",
            "Unjudged documents: gain 0, not relevant. Unanswered queries score 0.",
        ]
    if result.ground_truth_queries:
        lines.append("adr = Average Dynamic Recall over the first n ranks (n = ground-truth size).")
    lines.append("Exact definitions: --format json, or docs/evaluate.md.")
    return lines


def _mirex_table(mirex: MirexResult, systems: list[str]) -> list[str]:
    analysis = mirex.analysis
    document = _mirex_document(mirex, systems)
    head = (
        f"MIREX analysis on {mirex.column} ({mirex.n_queries} queries): Friedman chi2 = "
        f"{analysis.chi2:.4f}, df = {analysis.df}, p = {analysis.p_value:.4g}; Tukey HSD at "
        f"alpha = {analysis.alpha:g} on mean ranks, critical difference "
        f"{analysis.critical_difference:.4f}"
    )
    rows = [
        [printable(s["system"]), f"{s['mean']:.4f}", f"{s['mean_rank']:.4f}", s["group"]]
        for s in document["systems"]
    ]
    table = _aligned(["system", "mean", "mean rank", "group"], rows, 1)
    note = "Systems sharing a group letter are not significantly different."
    return [head, "", *table, note]


def _significance_table(significance: SignificanceResult, result: OfflineEvaluation) -> list[str]:
    head = (
        f"2012 significance rules on cg@{result.k} (one-sided t-tests at alpha = "
        f"{significance.alpha:g}; rule 4: |mean difference| > {significance.delta:g})"
    )
    rows = [
        [
            printable(r["system_a"]),
            printable(r["system_b"]),
            f"{r['mean_difference']:+.4f}",
            r["verdict"],
            "-" if r["rule"] is None else str(r["rule"]),
            "yes" if r["final"] else "no",
        ]
        for r in _significance_records(significance, result.systems)
    ]
    header = ["system A", "system B", "A - B", "verdict", "rule", "final"]
    return [head, "", *_aligned(header, rows, 2)]
