"""Command line of mtcjudge: one module per command group, each thin over a service.

``simulate``/``synthetic`` (:mod:`mtcjudge.cli.simulate`), ``campaign``
(:mod:`mtcjudge.cli.campaign`, with :mod:`~mtcjudge.cli.campaign_import` and
:mod:`~mtcjudge.cli.campaign_status`), ``assessor`` (:mod:`mtcjudge.cli.assessor`),
``organizer`` (:mod:`mtcjudge.cli.organizer`), ``demo``/``serve`` (:mod:`mtcjudge.cli.serve`),
``bench`` (:mod:`mtcjudge.cli.bench`), ``export`` (:mod:`mtcjudge.cli.export`), ``evaluate``
(:mod:`mtcjudge.cli.evaluate`), ``report`` (:mod:`mtcjudge.cli.report`) and ``docs``
(:mod:`mtcjudge.cli.docs`). Every leaf parser sets ``run``, which :func:`main` calls.
Bad input, a bad option or an unusable database exits with status 2 and one line on stderr;
nothing is half-written. An export that would have no rows writes nothing and exits with
status 1 (``grep``'s "nothing matched"), saying why, unless ``--allow-empty``. No module of
this package is longer than 400 lines.

One name per concept, in every command:

- **An existing campaign** is the argument ``SLUG``, first after the command:
  ``mtcjudge campaign status SLUG``, ``mtcjudge export SLUG``, ``mtcjudge assessor invite SLUG
  --name NAME`` (:func:`~mtcjudge.cli.common.add_campaign_argument`). The URL name of a
  campaign being made is the option ``--slug`` (``campaign create``, ``import-bundle``).
- **A judgments file** (qrels) is ``--judgments FILE``: the file a replay reads its answers
  from (``simulate``), the one runs are scored against (``evaluate``) and the FINE judgments
  ``campaign create`` imports (its BROAD ones: ``--judgments-broad``).
- A file to write is ``--out PATH`` (``-``: stdout); it gets the umask's mode, or keeps the
  mode of the file it replaces (:func:`~mtcjudge.cli.common.write_atomically`).

Older spellings still work, hidden from ``--help``, and print a one-line note on stderr
saying what to write instead (:func:`~mtcjudge.cli.common.add_deprecated_alias`):
``evaluate --qrels``, ``campaign create --judgments-fine`` and ``assessor ... --campaign SLUG``.

A help text that refers to a documentation page gives the page's installed copy and its
address online (:func:`mtcjudge.cli.docs.doc_link`); ``mtcjudge docs`` lists the pages.
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
    docs,
    evaluate,
    export,
    organizer,
    report,
    serve,
    simulate,
)
from mtcjudge.cli.common import DEPRECATION_NOTES, Command, HelpFormatter, Parser, UsageError
from mtcjudge.ingest.formats import InputError

__all__ = ["build_parser", "main"]


def package_version() -> str:
    try:
        return version("mtcjudge")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="mtcjudge",
        description="Minimal Test Collections for Audio Music Similarity evaluation.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (
        simulate,
        campaign,
        assessor,
        organizer,
        serve,
        bench,
        export,
        evaluate,
        report,
        docs,
    ):
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
    for note in vars(args).pop(DEPRECATION_NOTES, None) or ():
        err.write(f"{note}\n")
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
