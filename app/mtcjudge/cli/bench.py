"""``mtcjudge bench engine|load``: the benchmarks of ``bench/``, run from a source checkout.

Benchmarks are not part of the installed package. Each ``bench/<name>.py`` that exists offers
``add_arguments(parser)`` and ``run_from_args(args, out)``, and becomes ``mtcjudge bench
<name>`` with the same options as ``python bench/<name>.py``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from types import ModuleType
from typing import TextIO

from mtcjudge._resources import SOURCE_REPOSITORY
from mtcjudge.cli.common import Command, SubParsers, UsageError, add_parser
from mtcjudge.config import REPO_ROOT

__all__ = ["register"]

#: name -> (one-line summary, description when the module has none)
BENCHMARKS = {
    "engine": ("time one MTC loop iteration", None),
    "load": (
        "simulated assessors against server processes",
        "Start 'mtcjudge serve' on a fresh SQLite or Postgres database, create a MIREX-shaped "
        "campaign, drive simulated assessors over HTTP (stress or realistic), optionally "
        "inject a fault, then check from the database that no acknowledged judgment was lost "
        "and no pair was judged or leased twice (see bench/load.py).",
    ),
    "judging_path": ("CPU and statements of one judgment, in process", None),
    "projection": ("how good the projected judgments to the target are, in replays", None),
    "results": ("server time of a campaign's results document", None),
    "add_system": ("what adding one system to a finished campaign costs, in replays", None),
    "calibration": ("is each estimator's claimed confidence honest, on a suite of replays", None),
    "stop_margins": ("a stricter or looser stop, read from a calibration run's curves", None),
    "claim_shape": ("sign errors against the claimed distributions' shape, in replays", None),
    "assessors": ("who the reliability flag catches, and careless assessors' cost", None),
    "import_audio": ("the import's analysis of 2,000 30-second MP3 clips, timed", None),
    "hours": (
        "volunteers' listening hours: judgment-greedy, locality and cost-aware selection",
        None,
    ),
    "clip_bytes": ("bytes one volunteer's browser receives per judgment, before and after", None),
}


def benchmark_module(name: str) -> ModuleType | None:
    """``bench/<name>.py`` of this source tree, imported as ``bench.<name>``, or None in an
    installed copy.

    The module gets its importable name, with the source tree on ``sys.path``, so that the
    worker processes a benchmark spawns (``multiprocessing``'s ``spawn`` start method copies
    ``sys.path``) can unpickle the tasks and records it defines."""
    if not (REPO_ROOT / "bench" / f"{name}.py").is_file():
        return None
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    return importlib.import_module(f"bench.{name}")


def register(sub: SubParsers) -> None:
    bench = add_parser(
        sub,
        "bench",
        "benchmarks (from a source checkout)",
        description="Benchmarks of bench/, with the options of 'python bench/NAME.py'.",
    )
    modules = {name: benchmark_module(name) for name in BENCHMARKS}
    if not any(modules.values()):
        # an installed copy: say where the benchmarks are, whatever name and options are given
        bench.description = f"{bench.description} {_WHERE}"
        bench.add_argument("benchmark", nargs="?", metavar="BENCHMARK", help=", ".join(BENCHMARKS))
        bench.add_argument("options", nargs=argparse.REMAINDER, help="the benchmark's options")
        bench.set_defaults(run=_no_benchmarks)
        return
    names = bench.add_subparsers(dest="bench", metavar="BENCHMARK", required=True)
    for name, (summary, description) in BENCHMARKS.items():
        module = modules[name]
        if module is None:
            continue
        parser = add_parser(
            names, name, summary, description=getattr(module, "DESCRIPTION", description)
        )
        module.add_arguments(parser)
        parser.set_defaults(run=_runner(module))


def _runner(module: ModuleType) -> Command:
    def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
        return int(module.run_from_args(args, out))

    return run


_WHERE = (
    "The benchmarks are not part of the installed package: they live in bench/ of a source "
    f"checkout. Get one with 'git clone {SOURCE_REPOSITORY}', install it with "
    "\"pip install -e '.[test]'\" in that folder, and run 'mtcjudge bench NAME' from there."
)


def _no_benchmarks(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    named = f"bench {args.benchmark}" if args.benchmark else "bench"
    raise UsageError(f"{named}: no bench/ folder beside this copy of mtcjudge. {_WHERE}")
