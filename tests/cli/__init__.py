"""Tests of the command line (app/mtcjudge/cli)."""

from __future__ import annotations

import io

from mtcjudge.cli import main


def run(*argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``mtcjudge *argv`` run in this process."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()
