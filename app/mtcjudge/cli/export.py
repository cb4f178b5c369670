"""``mtcjudge export SLUG --what ... --out PATH``: thin over mtcjudge.exports.service."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge.cli.common import (
    SubParsers,
    add_campaign_argument,
    add_parser,
    check_output_file,
    write_atomically,
)
from mtcjudge.cli.database import add_database_option, run_in_session
from mtcjudge.cli.docs import doc_link
from mtcjudge.exports.formats import WHATS

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.config import Settings

__all__ = ["register"]


def register(sub: SubParsers) -> None:
    export = add_parser(
        sub,
        "export",
        "write a campaign's qrels, judgments, estimates, entries, offsets, results, runs or a "
        "bundle of all",
        description="Export a campaign for researchers (the formats: "
        f"{doc_link('exports')}). Measures in the results: cg = CG@k; dcg = MIREX nDCG@k, "
        "normalised by an all-maximum list (the 2012/2013 papers); ndcg = "
        "trec_eval/ir_measures nDCG@k, normalised by the ideal ordering of the pool; rbp = RBP "
        "(p = 0.8) normalised by the ideal ordering.",
    )
    add_campaign_argument(export)
    export.add_argument(
        "--what",
        required=True,
        choices=WHATS,
        help="qrels (TREC, one line per judged pair), judgments (every one, CSV or JSON "
        "Lines), estimates (unjudged pool pairs: E[R], Var[R], estimator), entries (every "
        "system's scored results, judged or not, with what the engine expects of each: the "
        "results' means rebuild from them), offsets (JSON: the estimator's learnt offsets "
        "and variance factor, for the results' variances), results (the "
        "results document for every measure), runs (TREC run files), assessors (each one's "
        "judgments, set-aside and pause state and reliability, CSV or JSON), bundle (a .zip "
        "of all, with grades and a manifest of SHA-256s)",
    )
    export.add_argument(
        "--scale",
        choices=("fine", "broad"),
        help="scale of qrels, estimates, entries, offsets and results (default: the "
        "campaign's; a bundle has both)",
    )
    export.add_argument(
        "--format",
        choices=("trec", "csv", "jsonl", "json", "zip"),
        help="qrels and runs: trec; judgments, estimates, entries and assessors: csv "
        "(default), or jsonl (judgments, estimates, entries) or json (assessors); offsets and "
        "results: json; bundle: zip",
    )
    export.add_argument(
        "--aggregate",
        choices=("mean", "median"),
        default="mean",
        help="several judgments of a pair in the qrels: their mean or median, rounded half up",
    )
    export.add_argument(
        "--out", required=True, type=Path, metavar="PATH", help="the file to write ('-': stdout)"
    )
    add_database_option(export)
    export.set_defaults(run=run_export)


def run_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.exports.service import ExportSpec, begin_snapshot, write_export

    spec = ExportSpec(args.what, args.scale, args.format, args.aggregate)
    to_stdout = str(args.out) == "-"
    if not to_stdout:
        check_output_file("--out", args.out)

    def work(session: Session, _settings: Settings) -> None:
        begin_snapshot(session)
        if to_stdout:
            buffer = getattr(out, "buffer", None)
            if buffer is None:  # a text stream (tests): the export is UTF-8 text or a zip
                spool = tempfile.SpooledTemporaryFile()
                write_export(session, args.slug, spec, spool)  # type: ignore[arg-type]
                spool.seek(0)
                out.write(spool.read().decode("utf-8", "surrogateescape"))
                return
            write_export(session, args.slug, spec, buffer)
            buffer.flush()
            return
        name = write_atomically(
            args.out, lambda target: write_export(session, args.slug, spec, target)
        )
        err.write(f"wrote {args.out} ({name}, {args.out.stat().st_size} bytes)\n")

    return run_in_session(args, err, work)
