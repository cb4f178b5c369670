"""Load benchmark: simulated assessors judging over HTTP against real server processes.

Usage::

    .venv/bin/python bench/load.py --mode stress --db postgres --workers 2 --duration 60 \\
        --data $MIREX2011 --json stress.json
    mtcjudge bench load ...            # the same options

What it does, start to end:

1. creates a fresh database: an SQLite file in a temporary directory, or
   ``CREATE DATABASE mtcjudge_load_<random>`` on ``--postgres-url`` (dropped at the end, also
   on failure or Ctrl+C);
2. starts the app: one ``mtcjudge serve --workers N`` (N uvicorn processes on one socket), or
   with ``--ports-per-process`` N separate ``mtcjudge serve`` processes on ports of their own
   (assessors spread over them round-robin; the shape of versions without ``--workers``).
   ``--app-root`` runs the servers of another checkout (its import package first on
   ``PYTHONPATH``, its ``.venv`` if it has one, and its working directory);
3. creates the campaign through the organizer API (the MIREX 2011 AMS runs and metadata of
   ``--data``, or a seeded synthetic collection of the same shape), invites the assessors and
   records their consent in the database, so the setup works across schema versions;
4. drives one HTTP client per assessor (asyncio, httpx, 127.0.0.1 only): ``next``, then a
   submission with a fresh ``client_id`` and random BROAD/FINE (retried with the same
   ``client_id`` after a transport error or a 5xx, as the judging page does); ``wait`` sleeps
   and asks again, ``done`` stops. ``stress``: no think time; ``realistic``: every assessor
   listens 20-60 s (uniform) before submitting. With ``--clip-seconds S`` (realistic) the
   clips last S seconds and an assessor hears the query in full when it is new to them (the
   listening rule's seconds of it when they stay on it), the candidate in full, then decides
   in ``--think-min``-``--think-max`` seconds; the assessors arrive spread over one pair's
   time (2 S + the longest decision), and requests after that count as settled. A fault can
   be injected mid-load;
5. stops the servers and checks the invariants in the database with SQL.

Invariants
----------
lost
    acknowledged submissions (2xx, by ``client_id``) missing from the judgment table.
double_judged
    pairs with more judgments than the campaign's ``judgments_per_pair``.
double_leased
    a pair held by more live leases than ``judgments_per_pair``, or an assessor holding two
    live leases, at the same moment. Checked on consistent database snapshots taken twice a
    second during the run and once at the end (a lease is live while ``expires_at`` is ahead
    and, when the table has a ``state`` column, ``state = 'live'``), and from the client's
    side: a lease is surely held from before its ``next`` answer arrived until its submission
    was sent, so intervals of one pair that overlap that way are surely concurrent.

The campaign keeps collecting past its target and allows ``--judgments-per-pair`` judgments
per pair (3 by default) so a fast server does not run out of the 6,322 MIREX pairs within a
minute. Figures are printed, never asserted: see docs/judging-at-scale.md.

The parts live in ``bench/_load/``, one job a module (settings, scratch database, servers,
campaign set-up, assessors, dashboards, faults, invariants, the load, the report); this module
is the entry point ``mtcjudge bench load`` finds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

if __package__ in (None, ""):  # run as ``python bench/load.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._load.config import (
    DEFAULT_ASSESSORS,
    DEFAULT_POSTGRES_URL,
    FAULTS,
    REPO_ROOT,
    LoadConfig,
)

__all__ = ["LoadConfig", "add_arguments", "main", "run_benchmark", "run_from_args"]


def run_benchmark(config: LoadConfig, out: TextIO | None = None) -> dict[str, Any]:
    """Run one benchmark end to end and return its figures (also printed to ``out``)."""
    # the parts import httpx, which no other mtcjudge command needs: loaded when a run starts
    from bench._load.campaign import setup_campaign, warm_up
    from bench._load.database import fresh_database
    from bench._load.drive import drive
    from bench._load.invariants import check_invariants
    from bench._load.report import format_report, summarise
    from bench._load.servers import start_servers
    from bench._serve import stop_servers

    out = out if out is not None else sys.stdout
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mtcjudge-load-") as scratch:
        workdir = Path(scratch)
        log_dir = Path(config.server_log_dir) if config.server_log_dir else workdir
        log_dir.mkdir(parents=True, exist_ok=True)
        with fresh_database(config, workdir) as (database_url, database_name):
            servers = start_servers(config, database_url, log_dir)
            try:
                campaign = asyncio.run(
                    setup_campaign(config, servers.base_urls[0], database_url, workdir)
                )
                asyncio.run(warm_up(servers, config, campaign.tokens[0]))
                outcome = asyncio.run(drive(config, servers, campaign, database_url, database_name))
            except Exception:
                for server in servers.processes:
                    sys.stderr.write(f"--- {server.log.name}\n{server.tail()}\n")
                raise
            finally:
                stop_servers(servers.processes)
            invariants = check_invariants(database_url, campaign, outcome.recorder)
    result = summarise(config, campaign, outcome, invariants, load_before)
    out.write(format_report(result) + "\n")
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench/load.py`` and ``mtcjudge bench load``."""
    parser.add_argument(
        "--mode",
        choices=tuple(DEFAULT_ASSESSORS),
        default="stress",
        help="stress: no think time; realistic: assessors think between judgments",
    )
    parser.add_argument(
        "--assessors", type=int, default=None, help="default: 50 (stress), 500 (realistic)"
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite", help="database")
    parser.add_argument("--workers", type=int, default=2, help="server processes")
    parser.add_argument(
        "--ports-per-process",
        action="store_true",
        help="N separate 'mtcjudge serve' processes on ports of their own, assessors spread "
        "round-robin (for versions without --workers) instead of one 'serve --workers N'",
    )
    parser.add_argument(
        "--data", type=Path, help="directory with runs.tsv and metadata.tsv (default: synthetic)"
    )
    parser.add_argument("--systems", type=int, default=18, help="synthetic collection")
    parser.add_argument("--queries", type=int, default=100, help="synthetic collection")
    parser.add_argument("--k", type=int, default=5, help="evaluation cut-off")
    parser.add_argument(
        "--judgments-per-pair", type=int, default=3, help="the campaign's judgments per pair"
    )
    parser.add_argument("--think-min", type=float, default=20.0, help="realistic mode, seconds")
    parser.add_argument("--think-max", type=float, default=60.0, help="realistic mode, seconds")
    parser.add_argument(
        "--clip-seconds",
        type=float,
        default=None,
        help="realistic mode: clips this long (silent WAV), each heard in full (the query "
        "when it changes, else the listening rule's seconds of it), the think time being the "
        "decision after them; the assessors arrive over one pair's time (default: quarter-"
        "second clips, the think time whole, everyone at once)",
    )
    parser.add_argument(
        "--fault",
        choices=FAULTS,
        default=None,
        help="kill: SIGKILL one server process; db-down: refuse database connections a while",
    )
    parser.add_argument(
        "--fault-at", type=float, default=None, help="seconds into the load (default: half way)"
    )
    parser.add_argument("--db-down-seconds", type=float, default=5.0, help="how long db-down lasts")
    parser.add_argument("--postgres-url", default=DEFAULT_POSTGRES_URL, help="admin connection")
    parser.add_argument(
        "--app-root",
        type=Path,
        default=REPO_ROOT,
        help="checkout whose servers to run (e.g. a git worktree of an older commit)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="per request, seconds")
    parser.add_argument(
        "--seed", type=int, default=0, help="of the synthetic collection and the assessors' choices"
    )
    parser.add_argument("--server-logs", type=Path, default=None, help="keep server logs here")
    parser.add_argument(
        "--dashboards",
        type=int,
        default=0,
        help="organizer dashboards kept open during the load (results, then the event stream)",
    )
    parser.add_argument("--json", type=Path, help="write the figures to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def config_from_args(args: argparse.Namespace) -> LoadConfig:
    return LoadConfig(
        mode=args.mode,
        assessors=args.assessors,
        duration=args.duration,
        db=args.db,
        workers=args.workers,
        ports_per_process=args.ports_per_process,
        data=args.data,
        systems=args.systems,
        queries=args.queries,
        k=args.k,
        judgments_per_pair=args.judgments_per_pair,
        think_min=args.think_min,
        think_max=args.think_max,
        clip_seconds=args.clip_seconds,
        fault=args.fault,
        fault_at=args.fault_at,
        db_down_seconds=args.db_down_seconds,
        postgres_url=args.postgres_url,
        app_root=args.app_root.resolve(),
        timeout=args.timeout,
        seed=args.seed,
        dashboards=args.dashboards,
        server_log_dir=args.server_logs,
        quiet=args.quiet,
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    config = config_from_args(args)
    previous = signal.getsignal(signal.SIGTERM)

    def interrupted(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # clean up servers and the database as on Ctrl+C

    signal.signal(signal.SIGTERM, interrupted)
    try:
        result = run_benchmark(config, out)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from mtcjudge.cli.common import HelpFormatter  # each default shown once, and no "None"

    parser = argparse.ArgumentParser(
        description="Simulated assessors against mtcjudge servers; see the module docstring.",
        formatter_class=HelpFormatter,
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run_from_args(args, sys.stdout)
    except ValueError as exc:
        sys.stderr.write(f"load: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("load: interrupted; servers stopped and database dropped\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
