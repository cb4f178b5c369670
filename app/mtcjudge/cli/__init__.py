"""Command line of mtcjudge: one module per command group, each thin over a service.

``simulate``/``synthetic`` (:mod:`mtcjudge.cli.simulate`),
``campaign`` (:mod:`mtcjudge.cli.campaign`),
``assessor`` (:mod:`mtcjudge.cli.assessor`), ``organizer`` (:mod:`mtcjudge.cli.organizer`),
``demo``/``serve`` (:mod:`mtcjudge.cli.serve`), ``bench`` (:mod:`mtcjudge.cli.bench`) and ``export``
(:mod:`mtcjudge.cli.export`). Every leaf
parser sets ``run``, which :func:`main` calls.
Bad input, a bad option or an unusable database exits with status 2 and one line on stderr;
nothing is half-written.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TextIO

from mtcjudge.cli import (
    assessor,
    bench,
    campaign,
    evaluate,
    export,
    organizer,
    report,
    serve,
    simulate,
)
from mtcjudge.cli.common import Command, HelpFormatter, UsageError
from mtcjudge.ingest.formats import InputError

__all__ = ["build_parser", "main"]


def package_version() -> str:
    try:
        return version("mtcjudge")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mtcjudge",
        description="Minimal Test Collections for Audio Music Similarity evaluation.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (simulate, campaign, assessor, organizer, serve, bench, export, evaluate, report):
        group.register(commands)
    return parser


def _failure(exc: Exception) -> str | None:
    """The one line to print for an error the user can fix, or None for a bug."""
    from mtcjudge.errors import DomainError

    if isinstance(exc, InputError | UsageError | ValueError):
        return str(exc)
    if isinstance(exc, DomainError):
        return exc.message
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc)
        return f"{exc.filename}: {reason}" if exc.filename else reason
    return None


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = build_parser().parse_args(argv)
    run: Command = args.run
    try:
        return run(args, out, err)
    except BrokenPipeError:
        # the reader went away (``mtcjudge ... | head``): stop quietly, as Unix tools do
        if out is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it
    except Exception as exc:
        message = _failure(exc)
        if message is None:
            raise
        err.write(f"mtcjudge: error: {message}\n")
        return 2
