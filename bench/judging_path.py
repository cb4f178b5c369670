"""CPU of the judging request path, in process: what one judgment (``next`` then ``submit``)
costs the app's Python code and the database, without HTTP and without a load generator.

The load benchmark (bench/load.py) measures the service as volunteers meet it; on a small
machine its figures mix the app, the database and the load generator competing for the
same cores. This one runs the routes' work functions (the service calls, the pair view and
the response models, each in its own committed transaction, as a request does) one after
the other on one thread, and reports per judgment the process's CPU time, the wall time
and the database statements issued, so a change to the request path can be judged on its
own. It judges a fresh synthetic campaign (or MIREX-shaped runs with ``--data``) with a
short WAV per clip, a new campaign's listening rule and hidden quality trials; for each pair
it records the bytes of both clips as the clip route would (one UPDATE each) before
submitting.

    python bench/judging_path.py --db postgres --judgments 2000 --json out.json
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

if __package__ in (None, ""):  # run as ``python bench/judging_path.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import SILENT_CLIP_BYTES, SILENT_CLIP_SECONDS, write_silent_clips

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


@contextmanager
def _database(kind: str, admin_url: str, workdir: Path) -> Any:
    """A fresh, migrated database; Postgres ones are dropped afterwards."""
    from mtcjudge.db import make_database_engine, upgrade_database

    if kind == "sqlite":
        url = f"sqlite:///{workdir / 'bench.db'}"
        upgrade_database(url)
        yield url
        return
    from sqlalchemy import create_engine

    name = f"mtcjudge_path_{secrets.token_hex(5)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    try:
        upgrade_database(url)
        yield url
    finally:
        make_database_engine(url).dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _campaign(factory: sessionmaker[Session], args: argparse.Namespace, workdir: Path) -> list[str]:
    """Create the campaign, plan it once, invite and consent the assessors; their tokens."""
    from mtcjudge.campaigns.creation import create_campaign
    from mtcjudge.campaigns.service import invite_assessor
    from mtcjudge.campaigns.spec import CampaignSpec
    from mtcjudge.db import session_scope
    from mtcjudge.ingest.formats import read_metadata, read_runs
    from mtcjudge.planner.service import Planner

    if args.data is not None:
        runs_path, meta_path = Path(args.data) / "runs.tsv", Path(args.data) / "metadata.tsv"
    else:
        from mtcjudge.mtc.synthetic import generate

        paths = generate(args.systems, args.queries, 5, seed=args.seed).write(workdir / "c")
        runs_path, meta_path = paths["runs"], paths["metadata"]
    spec = CampaignSpec(
        name="Request path benchmark",
        slug=f"path-{secrets.token_hex(3)}",
        status="open",
        keep_collecting=True,
        judgments_per_pair=args.judgments_per_pair,
    )
    runs = read_runs(runs_path)
    audio_dir = write_silent_clips(runs, workdir / "audio")
    tokens = []
    with session_scope(factory) as session:
        campaign, _ = create_campaign(
            session,
            spec,
            runs,
            read_metadata(meta_path) if meta_path else None,
            audio_dir=audio_dir,
        )
        for i in range(args.assessors):
            assessor, token = invite_assessor(session, campaign, f"Assessor {i}")
            assessor.consented_at = datetime.now(UTC)
            tokens.append(token)
    Planner(factory).run_once(force=True)
    return tokens


def run(args: argparse.Namespace) -> dict[str, Any]:
    from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
    from mtcjudge.judging import routes
    from mtcjudge.judging.repository import leases
    from mtcjudge.judging.schemas import JudgmentIn
    from mtcjudge.planner.service import Planner

    with tempfile.TemporaryDirectory() as tmp, _database(args.db, args.admin_url, Path(tmp)) as url:
        engine: Engine = make_database_engine(url)
        factory = make_sessionmaker(engine)
        tokens = _campaign(factory, args, Path(tmp))
        planner = Planner(factory)
        statements = 0

        @event.listens_for(engine, "before_cursor_execute")
        def _count(*_: Any) -> None:
            nonlocal statements
            statements += 1

        done = 0
        cpu = wall = 0.0
        replan_every = max(1, args.replan_every)
        while done < args.judgments:
            if done % replan_every == 0:
                planner.run_once()  # as the planner thread would, between requests
            token = tokens[done % len(tokens)]
            c0, w0 = time.process_time(), time.perf_counter()
            with session_scope(factory) as session:
                answer = routes._next(session, token)
            if answer.pair is None:
                break
            for which in ("query", "candidate"):  # what the clip route records
                with session_scope(factory) as session:
                    leases.add_served_bytes(session, answer.pair.lease_id, which, SILENT_CLIP_BYTES)
            played = round(SILENT_CLIP_SECONDS * 1000)  # each clip played to its end
            body = JudgmentIn(
                lease_id=answer.pair.lease_id,
                broad=1,
                fine=50.0,
                client_id=str(uuid.uuid4()),
                query_listen_ms=played,
                candidate_listen_ms=played,
            )
            with session_scope(factory) as session:
                routes._submit(session, token, body)
            cpu += time.process_time() - c0
            wall += time.perf_counter() - w0
            done += 1
            if done == args.warmup:  # the first judgments fill caches (statements, plans)
                cpu = wall = 0.0
                statements = 0
        engine.dispose()
    measured = done - min(done, args.warmup)
    return {
        "benchmark": "judging_path",
        "db": args.db,
        "judgments": measured,
        "cpu_ms_per_judgment": 1000 * cpu / max(1, measured),
        "wall_ms_per_judgment": 1000 * wall / max(1, measured),
        "statements_per_judgment": statements / max(1, measured),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite", help="database")
    parser.add_argument("--admin-url", default=DEFAULT_ADMIN_URL, help="Postgres admin URL")
    parser.add_argument("--data", help="directory with runs.tsv (default: synthetic)")
    parser.add_argument("--systems", type=int, default=18, help="synthetic collection")
    parser.add_argument("--queries", type=int, default=100, help="synthetic collection")
    parser.add_argument("--seed", type=int, default=1, help="synthetic collection")
    parser.add_argument("--assessors", type=int, default=50, help="taking turns")
    parser.add_argument("--judgments", type=int, default=2000, help="judgments to time")
    parser.add_argument("--warmup", type=int, default=200, help="judgments not timed")
    parser.add_argument("--judgments-per-pair", type=int, default=1, help="campaign setting")
    parser.add_argument("--replan-every", type=int, default=25, help="judgments per tick")
    parser.add_argument("--json", help="write the figures to this file")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    args.judgments += args.warmup
    result = run(args)
    for key, value in result.items():
        text = f"{key:26} {value:.3f}" if isinstance(value, float) else f"{key:26} {value}"
        print(text, file=out)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv), sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
