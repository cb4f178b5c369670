"""``mtcjudge report SLUG [--scale] [--format html|json] --out PATH``: thin over
mtcjudge.reports.service."""

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

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.config import Settings

__all__ = ["register"]


def register(sub: SubParsers) -> None:
    report = add_parser(
        sub,
        "report",
        "write a campaign's report: one HTML file readable offline, or its JSON twin",
        description=f"The campaign's report ({doc_link('reports')}): the ranking with intervals on "
        "every measure, the system pairs' confidence, the confidence against judgments, "
        "judgments against the pool, the assessors by pseudonym, their agreement "
        "(Krippendorff's alpha) and, once every pool pair is judged, the MIREX analysis "
        "(Friedman + Tukey HSD). Measures: cg = CG@k; dcg = MIREX nDCG@k, normalised by an "
        "all-maximum list; ndcg = trec_eval/ir_measures nDCG@k, normalised by the ideal "
        "ordering of the pool; rbp = RBP (p = 0.8) normalised by the ideal ordering.",
    )
    add_campaign_argument(report)
    report.add_argument(
        "--scale",
        choices=("fine", "broad"),
        help="the scale of the rankings and the MIREX analysis (default: the campaign's)",
    )
    report.add_argument(
        "--format",
        choices=("html", "json"),
        help="html (one self-contained file: charts inline, no network) or json (the same "
        "document); default: json when --out ends in .json, else html",
    )
    report.add_argument(
        "--out", required=True, type=Path, metavar="PATH", help="the file to write ('-': stdout)"
    )
    add_database_option(report)
    report.set_defaults(run=run_report)


def run_report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.reports.service import ReportSpec, write_report

    to_stdout = str(args.out) == "-"
    fmt = args.format or ("json" if args.out.suffix.lower() == ".json" else "html")
    spec = ReportSpec(args.scale, fmt)
    if not to_stdout:
        check_output_file("--out", args.out)

    def work(session: Session, _settings: Settings) -> None:
        if to_stdout:
            spool = tempfile.SpooledTemporaryFile()
            write_report(session, args.slug, spec, spool)  # type: ignore[arg-type]
            spool.seek(0)
            out.write(spool.read().decode())
            return
        name = write_atomically(
            args.out, lambda target: write_report(session, args.slug, spec, target)
        )
        err.write(f"wrote {args.out} ({name}, {args.out.stat().st_size} bytes)\n")

    return run_in_session(args, err, work)
