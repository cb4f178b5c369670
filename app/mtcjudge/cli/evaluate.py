"""``mtcjudge evaluate``: score runs against qrels offline, thin over mtcjudge.evaluation."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from mtcjudge.cli.common import (
    SubParsers,
    UsageError,
    add_deprecated_alias,
    add_parser,
    check_output_file,
    integer,
    write_atomically,
)
from mtcjudge.cli.docs import doc_link
from mtcjudge.cli.run_order import add_order_by, warn_score_order
from mtcjudge.evaluation.service import MAX_K, OfflineEvaluation

__all__ = ["register"]

_FORMATS = ("table", "csv", "json")
_SUFFIX_FORMATS = {".csv": "csv", ".json": "json"}


def _threshold(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None


def register(sub: SubParsers) -> None:
    evaluate = add_parser(
        sub,
        "evaluate",
        "score run files against qrels or a ground truth, offline (like trec_eval)",
        description="Score every system of the runs on every query of the qrels: CG@k, "
        "dcg@k = MIREX nDCG@k (normalised by an all-maximum list, the 2012/2013 papers), "
        "ndcg@k = trec_eval nDCG@k (normalised by the ideal ordering of the qrels), RBP "
        "(p = 0.8, normalised by the ideal ordering), precision@k, recall@k, recall, average "
        "precision, reciprocal rank and the judged share of the top k; with --ground-truth, "
        "Average Dynamic Recall. Unjudged documents count as not relevant (gain 0); a query "
        "of the qrels a system did not answer scores 0 (trec_eval -c). Columns and "
        f"definitions: {doc_link('evaluate')}.",
    )
    _add_files(evaluate)
    _add_measures(evaluate)
    _add_output(evaluate)
    _add_analyses(evaluate)
    evaluate.set_defaults(run=run_evaluate)


def _add_files(evaluate: argparse.ArgumentParser) -> None:
    """The runs, and the judgments or ground truth they are scored against."""
    evaluate.add_argument(
        "--runs",
        required=True,
        type=Path,
        metavar="PATH",
        help="TREC run file(s) 'qid Q0 docno rank score tag' (a file, or a directory with one "
        "system per file) or TSV system<TAB>query<TAB>doc in rank order",
    )
    add_order_by(evaluate)
    evaluate.add_argument(
        "--judgments",
        type=Path,
        metavar="FILE",
        help="the judgments (qrels): TREC qrels 'qid 0 docno rel' or TSV "
        "query<TAB>doc<TAB>score, BROAD (0-2) or FINE (0-100); several lines of one pair "
        "count as their mean",
    )
    add_deprecated_alias(evaluate, "--qrels", "--judgments")
    evaluate.add_argument(
        "--ground-truth",
        type=Path,
        metavar="PATH",
        help="partially ordered ground truth for ADR: lines 'query group_rank document', "
        "group 1 the most similar",
    )
    evaluate.add_argument(
        "--scale",
        choices=("fine", "broad"),
        help="scale of the judgments (default: BROAD when every grade is 0, 1 or 2, else FINE)",
    )


def _add_measures(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument(
        "--k", type=integer("k", 1, MAX_K), default=5, help="cut-off of the @k measures"
    )
    evaluate.add_argument(
        "--threshold",
        type=_threshold,
        metavar="T",
        help="smallest relevant judgment for p@k, recall, ap and rr (default: 50 on FINE, "
        "1 on BROAD: 'somewhat similar')",
    )
    evaluate.add_argument(
        "--per-query", action="store_true", help="also a row for every system and query"
    )


def _add_output(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument(
        "--format",
        choices=_FORMATS,
        help="table (aligned columns), csv or json (default: from the suffix of --out, "
        ".csv or .json, else table)",
    )
    evaluate.add_argument(
        "--out",
        type=Path,
        metavar="PATH",
        help="write to this file instead of stdout; with csv, --mirex and --significance go "
        "to PATH's stem + '-mirex.csv' and '-significance.csv'",
    )


def _add_analyses(evaluate: argparse.ArgumentParser) -> None:
    """The MIREX analysis and the significance rules of the 2012 paper."""
    evaluate.add_argument(
        "--mirex",
        action="store_true",
        help="the MIREX analysis: Friedman test and Tukey HSD groups on the per-query scores "
        "of --measure",
    )
    evaluate.add_argument(
        "--measure",
        metavar="COLUMN",
        help="measure of the MIREX analysis, an output column such as cg@5, ndcg@5, ap or "
        "adr (default: cg@K, or adr without --judgments)",
    )
    evaluate.add_argument(
        "--significance",
        action="store_true",
        help="the 2012 significance rules between every pair of systems, on cg@K (needs "
        "--judgments): a better, b better, not different or undecided, and the rule that decided",
    )
    evaluate.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="level of the Tukey HSD and of the t-tests of the significance rules",
    )


def _sidecar(path: Path, what: str) -> Path:
    return path.with_name(f"{path.stem}-{what}.csv")


def _write(path: Path, text: str) -> None:
    write_atomically(path, lambda target: target.write(text.encode("utf-8")))


def run_evaluate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.evaluation import formats
    from mtcjudge.evaluation.service import evaluate_files, mirex_analysis, significance_rules

    fmt = _checked_format(args)
    result = evaluate_files(
        args.runs,
        args.judgments,
        args.ground_truth,
        scale=args.scale,
        k=args.k,
        threshold=args.threshold,
        order_by=args.order_by,
    )
    warn_score_order(err, result)
    mirex = None
    if args.mirex:
        column = args.measure or (f"cg@{args.k}" if args.judgments is not None else "adr")
        mirex = mirex_analysis(result, column, alpha=args.alpha)
    significance = significance_rules(result, alpha=args.alpha) if args.significance else None
    _tell_what_was_read(err, args, result)

    if fmt == "json":
        sources = {
            "runs": str(args.runs),
            "qrels": None if args.judgments is None else str(args.judgments),
            "ground_truth": None if args.ground_truth is None else str(args.ground_truth),
        }
        text = formats.to_json(
            result,
            sources=sources,
            per_query=args.per_query,
            mirex=mirex,
            significance=significance,
        )
    elif fmt == "csv":
        text = formats.to_csv(result, per_query=args.per_query)
    else:
        text = formats.to_table(
            result, per_query=args.per_query, mirex=mirex, significance=significance
        )

    if args.out is None:
        out.write(text)
        return 0
    _write(args.out, text)
    written = [args.out]
    if fmt == "csv" and mirex is not None:
        _write(_sidecar(args.out, "mirex"), formats.mirex_csv(mirex, result.systems))
        written.append(_sidecar(args.out, "mirex"))
    if fmt == "csv" and significance is not None:
        _write(
            _sidecar(args.out, "significance"),
            formats.significance_csv(significance, result.systems),
        )
        written.append(_sidecar(args.out, "significance"))
    err.write(f"wrote {', '.join(map(str, written))}\n")
    return 0


def _checked_format(args: argparse.Namespace) -> str:
    """The output format, once the options are checked to go together."""
    if args.judgments is None and args.ground_truth is None:
        raise UsageError(
            "give --judgments, --ground-truth or both: there is nothing to score against"
        )
    if args.significance and args.judgments is None:
        raise UsageError("--significance works on cg@k: it needs --judgments")
    if args.measure is not None and not args.mirex:
        raise UsageError("--measure chooses the measure of the MIREX analysis: add --mirex")
    if not 0.0 < args.alpha < 1.0:
        raise UsageError(f"--alpha must be between 0 and 1, found {args.alpha:g}")
    fmt: str = args.format or (
        _SUFFIX_FORMATS.get(args.out.suffix.lower(), "table") if args.out else "table"
    )
    sidecars = fmt == "csv" and (args.mirex or args.significance)
    if sidecars and args.out is None:
        raise UsageError(
            "CSV holds one table: with --mirex or --significance give --out PATH (the "
            "analyses go to PATH-mirex.csv and PATH-significance.csv) or use --format "
            "table or json"
        )
    if args.out is not None:
        check_output_file("--out", args.out)
    return fmt


def _tell_what_was_read(err: TextIO, args: argparse.Namespace, result: OfflineEvaluation) -> None:
    """The scale detected from the grades, and the queries of the runs left out."""
    if result.scale_detected and result.scale is not None:
        err.write(
            f"{args.judgments}: {result.scale.upper()} scale, detected from the grades "
            "(--scale to say otherwise)\n"
        )
    if result.ignored_queries:
        ignored = len(result.ignored_queries)
        err.write(
            f"{args.runs}: {ignored} {'query' if ignored == 1 else 'queries'} of the runs "
            f"{'is' if ignored == 1 else 'are'} in no judgment file and not evaluated\n"
        )
