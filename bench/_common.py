"""What the benchmarks share: the confidence targets they study and their ``main``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

__all__ = ["TARGETS", "run_benchmark"]

#: the ranking-confidence targets the calibration, projection and stop-margin benchmarks study
TARGETS = (0.90, 0.95, 0.99)


def run_benchmark(
    argv: Sequence[str] | None,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run_from_args: Callable[[argparse.Namespace, TextIO], int],
    *,
    name: str | None = None,
) -> int:
    """Parse ``argv`` and run the benchmark, writing to standard output; its exit status.

    With ``name``, a ``ValueError`` (a bad input file) is reported as ``NAME: error: ...``
    with status 2 instead of a traceback."""
    parser = argparse.ArgumentParser(description=description)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if name is None:
        return run_from_args(args, sys.stdout)
    try:
        return run_from_args(args, sys.stdout)
    except ValueError as exc:
        sys.stderr.write(f"{name}: error: {exc}\n")
        return 2
