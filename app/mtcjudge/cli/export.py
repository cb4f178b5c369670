"""``mtcjudge export SLUG --what ... --out PATH``: thin over mtcjudge.exports.service.

Exit status: 0 when the export is written; 1 when it would have no rows and ``--allow-empty``
was not given (nothing is written; the message says why it is empty), as ``grep`` says 1 when
nothing matched; 2 for a usage, input or database error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge.cli.common import (
    SubParsers,
    UsageError,
    add_campaign_argument,
    add_parser,
    check_output_file,
    write_atomically,
)
from mtcjudge.cli.database import add_database_option, run_in_session
from mtcjudge.cli.docs import doc_link
from mtcjudge.exports.formats import WHATS
from mtcjudge.validation import printable

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from mtcjudge.config import Settings
    from mtcjudge.exports.empty import EmptyExport

__all__ = ["EXIT_EMPTY", "register"]

#: the exit status of an export that would have no rows (nothing written)
EXIT_EMPTY = 1
#: run files named in the line saying what --per-system wrote
_NAMED_FILES = 3


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
        "(p = 0.8) normalised by the ideal ordering. Runs: trec_eval, ir_measures, pytrec_eval "
        "and ranx read a run file as ONE system (the tag column is only a label): give them "
        "--per-system --out DIR, one file per system; the single file (every system, told "
        "apart by the tag) is for mtcjudge evaluate and campaign create, and for dataframes "
        "grouped by tag. An export that would have no rows writes nothing, says why and exits "
        "with status 1 unless --allow-empty; errors exit with status 2.",
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
        "results document for every measure), runs (TREC run files: see --per-system), "
        "assessors (each one's judgments, set-aside and pause state and reliability, CSV or "
        "JSON), bundle (a .zip of all, with grades and a manifest of SHA-256s)",
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
        help="qrels: trec; runs: trec (one file, every system) or zip (runs/SYSTEM.txt, one "
        "file per system); judgments, estimates, entries and assessors: csv (default), or "
        "jsonl (judgments, estimates, entries) or json (assessors); offsets and results: "
        "json; bundle: zip",
    )
    export.add_argument(
        "--aggregate",
        choices=("mean", "median"),
        default="mean",
        help="several judgments of a pair in the qrels: their mean or median, rounded half up",
    )
    export.add_argument(
        "--per-system",
        action="store_true",
        help="with --what runs: one TREC run file per system, DIR/SYSTEM.txt, as trec_eval, "
        "ir_measures, pytrec_eval and ranx take them (given the single file they score every "
        "system's lists as one run). --out is then a directory, created if missing; one that "
        "exists may hold only the files this export writes. A system name is the file name "
        "as it is when made of letters, digits, '_', '-' and '.'; other characters are "
        "written %%XX",
    )
    export.add_argument(
        "--allow-empty",
        action="store_true",
        help="write the export even when it has no rows (qrels without a line, a CSV with its "
        "header alone); without it such an export writes nothing and exits with status 1, "
        "saying why it is empty (e.g. no BROAD judgments in a campaign judged on FINE)",
    )
    export.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="PATH",
        help="the file to write ('-': stdout); with --per-system, the directory",
    )
    add_database_option(export)
    export.set_defaults(run=run_export)


def _check_options(args: argparse.Namespace) -> None:
    if not args.per_system:
        return
    if args.what != "runs":
        raise UsageError(
            f"--per-system splits the runs by system: it needs --what runs, not {args.what}"
        )
    if args.format is not None and args.format != "trec":
        raise UsageError(
            "--per-system writes a directory of TREC files; --format zip writes the same "
            "files in one zip: give one or the other"
        )
    if str(args.out) == "-":
        raise UsageError("--per-system writes one file per system: give --out DIR, not '-'")


def _refused(err: TextIO, empty: EmptyExport, written: str = "file") -> int:
    """Say that nothing was written and why (exit status 1)."""
    instead = f"--allow-empty writes the empty {written} anyway"
    if empty.scale:
        instead = f"use --scale {empty.scale}, or {instead}"
    err.write(
        f"mtcjudge: warning: nothing written, the {empty.what} export has no rows: "
        f"{printable(empty.reason)}; {instead}\n"
    )
    return EXIT_EMPTY


def _check_output_directory(option: str, path: Path) -> None:
    """Fail now, not after the work, when ``path`` cannot be made or written (UsageError)."""
    parent = path.parent
    if not parent.is_dir():
        raise UsageError(f"{option}: {path}: the directory {parent} does not exist")
    if path.exists() and not path.is_dir():
        raise UsageError(
            f"{option}: {path} exists and is not a directory: --per-system writes one file "
            "per system into a directory (without --per-system, --out is the one file)"
        )
    target = path if path.is_dir() else parent
    if not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: {path}: permission denied")


def _install_directory(staging: Path, path: Path, names: list[str]) -> None:
    """Put the files of ``staging`` at ``path``: a new directory is renamed into place whole;
    into an existing one each file is renamed over its namesake, once it is clear that the
    directory holds no file the export does not write (a folder of runs is read whole)."""
    if not path.exists():
        umask = os.umask(0o077)  # read it: os.umask only reads by setting, set it back at once
        os.umask(umask)
        staging.chmod(0o777 & ~umask)
        staging.rename(path)
        return
    foreign = sorted(
        entry.name
        for entry in path.iterdir()
        if not entry.name.startswith(".") and entry.name not in set(names)
    )
    if foreign:
        shown = ", ".join(printable(name) for name in foreign[:5])
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise UsageError(
            f"--out: {path} holds files this export does not write ({shown}{more}): a "
            "directory of runs is read whole (mtcjudge evaluate --runs DIR, a loop over its "
            "files), so they would be taken for systems; give a new or empty directory"
        )
    for name in names:
        os.replace(staging / name, path / name)
    staging.rmdir()


def _check_distinct(systems: dict[str, str], system: str, name: str) -> None:
    """Two systems whose file names differ only in case would be one file on the file
    systems that ignore case (macOS, Windows): refused on every system, so that an export
    is the same files wherever it is made."""
    other = systems.setdefault(name.casefold(), system)
    if other != system:
        raise UsageError(
            f"systems {printable(other)} and {printable(system)} would have the same run file "
            f"where file names ignore case ({name}): export the runs in one file (without "
            "--per-system)"
        )


def _run_per_system(args: argparse.Namespace, err: TextIO) -> int:
    """``--what runs --per-system --out DIR``: DIR/SYSTEM.txt, one TREC run per system,
    written to a hidden directory next to DIR first: a failure leaves DIR as it was."""
    from mtcjudge.exports.empty import EmptyExport
    from mtcjudge.exports.service import begin_snapshot, run_files

    path: Path = args.out
    _check_output_directory("--out", path)
    refused: list[EmptyExport] = []

    def work(session: Session, _settings: Settings) -> None:
        begin_snapshot(session)
        try:
            files, empty = run_files(session, args.slug, allow_empty=args.allow_empty)
        except EmptyExport as exc:
            refused.append(exc)
            return
        staging = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
        names: list[str] = []
        systems: dict[str, str] = {}  # file name (case folded) -> system
        size = 0
        try:
            for system, name, lines in files:
                _check_distinct(systems, system, name)
                with open(staging / name, "x", encoding="utf-8", newline="\n") as target:
                    target.writelines(lines)
                names.append(name)
                size += (staging / name).stat().st_size
            _install_directory(staging, path, names)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        shown = ", ".join(printable(n) for n in names[:_NAMED_FILES])
        if len(names) > _NAMED_FILES:
            shown += ", ..."
        err.write(
            f"wrote {path}{os.sep} ({len(names)} run file(s), one per system: {shown}; "
            f"{size} bytes)\n"
        )
        if empty is not None:
            err.write(f"mtcjudge: warning: {path} has no run files: {printable(empty)}\n")

    status = run_in_session(args, err, work)
    if status == 0 and refused:
        return _refused(err, refused[0], "directory")
    return status


def run_export(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.exports.empty import EmptyExport
    from mtcjudge.exports.service import ExportSpec, begin_snapshot, write_export

    _check_options(args)
    if args.per_system:
        return _run_per_system(args, err)
    spec = ExportSpec(args.what, args.scale, args.format, args.aggregate, args.allow_empty)
    to_stdout = str(args.out) == "-"
    if not to_stdout:
        check_output_file("--out", args.out)
    refused: list[EmptyExport] = []

    def write(session: Session) -> str | None:
        """Write the export; why it has no rows when it has none (and was allowed)."""
        if to_stdout:
            buffer = getattr(out, "buffer", None)
            if buffer is None:  # a text stream (tests): the export is UTF-8 text or a zip
                spool = tempfile.SpooledTemporaryFile()
                written = write_export(session, args.slug, spec, spool)  # type: ignore[arg-type]
                spool.seek(0)
                out.write(spool.read().decode("utf-8", "surrogateescape"))
                return written.empty
            written = write_export(session, args.slug, spec, buffer)
            buffer.flush()
            return written.empty
        written = write_atomically(
            args.out, lambda target: write_export(session, args.slug, spec, target)
        )
        err.write(f"wrote {args.out} ({written.name}, {args.out.stat().st_size} bytes)\n")
        return written.empty

    def work(session: Session, _settings: Settings) -> None:
        begin_snapshot(session)
        try:
            empty = write(session)
        except EmptyExport as exc:
            refused.append(exc)
            return
        if empty is not None:
            where = "the output" if to_stdout else str(args.out)
            err.write(f"mtcjudge: warning: {where} has no rows: {printable(empty)}\n")
        if spec.what == "runs" and spec.file_format == "trec":
            err.write(
                "mtcjudge: note: every system's run is in this one file, told apart by the tag "
                "column: trec_eval, ir_measures, pytrec_eval and ranx would score it as one "
                "system; --per-system --out DIR writes one file per system\n"
            )

    status = run_in_session(args, err, work)
    if status == 0 and refused:
        return _refused(err, refused[0])
    return status
