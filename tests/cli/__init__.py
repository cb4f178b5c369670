"""Tests of the command line (app/mtcjudge/cli)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator

from mtcjudge.cli import main


def run(*argv: object) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``mtcjudge *argv`` run in this process (each argument
    as ``str``, so paths may be given as they are)."""
    out, err = io.StringIO(), io.StringIO()
    code = main([str(arg) for arg in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command line with its command path, the top one included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, (*path, name))
