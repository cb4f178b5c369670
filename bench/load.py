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
   ``--app-root`` runs the servers of another checkout (``PYTHONPATH`` and working directory);
3. creates the campaign through the organizer API (the MIREX 2011 AMS runs and metadata of
   ``--data``, or a seeded synthetic collection of the same shape), invites the assessors and
   records their consent in the database, so the setup works across schema versions;
4. drives one HTTP client per assessor (asyncio, httpx, 127.0.0.1 only): ``next``, then a
   submission with a fresh ``client_id`` and random BROAD/FINE (retried with the same
   ``client_id`` after a transport error or a 5xx, as the judging page does); ``wait`` sleeps
   and asks again, ``done`` stops. ``stress``: no think time; ``realistic``: every assessor
   listens 20-60 s (uniform) before submitting. A fault can be injected mid-load;
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
minute. Figures are printed, never asserted: see docs/reliability.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import httpx
    from sqlalchemy import Connection, Engine

__all__ = ["LoadConfig", "add_arguments", "main", "run_benchmark", "run_from_args"]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_ASSESSORS = {"stress": 50, "realistic": 500}
FAULTS = ("kill", "db-down")
_STARTED_LINE = "Application startup complete"


# ---------------------------------------------------------------- configuration
@dataclass
class LoadConfig:
    """One benchmark run; ``ValueError`` on settings that do not go together."""

    mode: str = "stress"
    assessors: int | None = None  # default by mode: 50 (stress) or 500 (realistic)
    duration: float = 60.0
    db: str = "sqlite"
    workers: int = 2
    ports_per_process: bool = False
    data: Path | None = None
    systems: int = 18
    queries: int = 100
    k: int = 5
    genres: int = 10
    docs_per_genre: int = 700
    artists: int = 600
    judgments_per_pair: int = 3
    think_min: float = 20.0
    think_max: float = 60.0
    fault: str | None = None
    fault_at: float | None = None  # seconds into the load; default: half the duration
    db_down_seconds: float = 5.0
    postgres_url: str = DEFAULT_POSTGRES_URL
    app_root: Path = REPO_ROOT
    python: str = sys.executable
    timeout: float = 10.0
    seed: int = 0
    dashboards: int = 0  # open organizer dashboards (event streams) during the load
    server_log_dir: Path | None = None
    quiet: bool = False

    def __post_init__(self) -> None:
        if self.mode not in DEFAULT_ASSESSORS:
            raise ValueError(f"mode must be stress or realistic, found {self.mode!r}")
        if self.db not in ("sqlite", "postgres"):
            raise ValueError(f"db must be sqlite or postgres, found {self.db!r}")
        if self.assessors is None:
            self.assessors = DEFAULT_ASSESSORS[self.mode]
        if self.assessors < 1 or self.workers < 1:
            raise ValueError("assessors and workers must be at least 1")
        if self.duration <= 0:
            raise ValueError(f"duration must be positive, found {self.duration}")
        if not 0 <= self.think_min <= self.think_max:
            raise ValueError("think times must satisfy 0 <= min <= max")
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}, found {self.fault!r}")
        if self.fault == "kill" and (self.ports_per_process or self.workers < 2):
            raise ValueError(
                "--fault kill needs one server with --workers 2 or more (a worker is killed "
                "and the others, then its replacement, carry on)"
            )
        if self.fault == "db-down" and self.db != "postgres":
            raise ValueError("--fault db-down needs --db postgres")
        if self.fault_at is None:
            self.fault_at = self.duration / 2
        if self.data is not None and not (Path(self.data) / "runs.tsv").is_file():
            raise ValueError(f"--data: no runs.tsv in {self.data}")

    @property
    def processes(self) -> int:
        return self.workers if self.ports_per_process else 1


# ---------------------------------------------------------------- database
def _plain_engine(url: str, **kwargs: Any) -> Engine:
    """An engine without the app's hooks: on SQLite, reads must not take the write lock."""
    from sqlalchemy import create_engine

    if url.startswith("sqlite"):
        kwargs.setdefault("connect_args", {"timeout": 30})
    return create_engine(url, **kwargs)


@contextlib.contextmanager
def _fresh_database(config: LoadConfig, workdir: Path) -> Iterator[tuple[str, str | None]]:
    """(URL, Postgres database name or None) of a new empty database, dropped afterwards."""
    if config.db == "sqlite":
        yield f"sqlite:///{workdir / 'load.sqlite3'}", None
        return
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    name = f"mtcjudge_load_{secrets.token_hex(5)}"
    admin = _plain_engine(config.postgres_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            url = make_url(config.postgres_url).set(database=name)
            yield url.render_as_string(hide_password=False), name
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()


def _lease_columns(conn: Connection) -> set[str]:
    from sqlalchemy import inspect

    return {column["name"] for column in inspect(conn).get_columns("lease")}


@dataclass(frozen=True)
class _LeaseSql:
    """How to read leases in this schema: with or without ``state``, by pair ids or pair_id."""

    live: str
    pair_key: tuple[str, str]

    @classmethod
    def detect(cls, conn: Connection) -> _LeaseSql:
        columns = _lease_columns(conn)
        live = "expires_at > :now" + (" AND state = 'live'" if "state" in columns else "")
        if {"query_id", "document_id"} <= columns:
            return cls(live, ("query_id", "document_id"))
        return cls(live, ("pair_id", "0"))

    def snapshot_sql(self) -> str:
        first, second = self.pair_key
        return (
            f"SELECT 'pair' AS kind, {first} AS a, {second} AS b, COUNT(*) AS n FROM lease "
            f"WHERE campaign_id = :campaign AND {self.live} GROUP BY {first}, {second} "
            "HAVING COUNT(*) > :per_pair "
            "UNION ALL "
            "SELECT 'assessor' AS kind, assessor_id AS a, 0 AS b, COUNT(*) AS n FROM lease "
            f"WHERE campaign_id = :campaign AND {self.live} GROUP BY assessor_id "
            "HAVING COUNT(*) > 1"
        )


def _now_param() -> Any:
    from sqlalchemy import DateTime, bindparam

    return bindparam("now", type_=DateTime(timezone=True))


def _lease_snapshot(
    engine: Engine, lease_sql: _LeaseSql, campaign_id: int, per_pair: int
) -> list[tuple[str, int, int, int]]:
    """Pairs over-leased and assessors with two live leases, in one statement (one snapshot)."""
    from sqlalchemy import text

    statement = text(lease_sql.snapshot_sql()).bindparams(_now_param())
    with engine.connect() as conn:
        rows = conn.execute(
            statement, {"campaign": campaign_id, "per_pair": per_pair, "now": datetime.now(UTC)}
        ).all()
    return [(str(kind), int(a), int(b), int(n)) for kind, a, b, n in rows]


# ---------------------------------------------------------------- servers
@dataclass
class _Servers:
    procs: list[subprocess.Popen[bytes]]
    base_urls: list[str]
    logs: list[Path]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` so that a benchmark killed outright leaves no server behind.

    Linux only, best effort. The function is looked up here: the child, between fork and
    exec, must not import anything.
    """
    if sys.platform != "linux":
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig, sigterm = 1, int(signal.SIGTERM)

    def set_death_signal() -> None:  # pragma: no cover - runs in the child
        prctl(pr_set_pdeathsig, sigterm)

    return set_death_signal


def _git_commit(root: Path) -> str:
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _start_one(
    config: LoadConfig, database_url: str, env: dict[str, str], log: Path, workers: int
) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    command = [config.python, "-m", "mtcjudge.cli", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--database-url", database_url]
    if workers > 1:
        command += ["--workers", str(workers)]
    with log.open("wb") as stream:
        proc = subprocess.Popen(
            command,
            cwd=config.app_root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole, by us
            preexec_fn=_die_with_parent(),
        )
    return proc, f"http://127.0.0.1:{port}"


def _wait_started(proc: subprocess.Popen[bytes], log: Path, workers: int, limit: float) -> None:
    """Until every worker of ``proc`` has logged that its application started."""
    deadline = time.monotonic() + limit
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}:\n{_tail(log)}")
        try:
            started = log.read_text(errors="replace").count(_STARTED_LINE)
        except OSError:
            started = 0
        if started >= workers:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"server did not start within {limit:.0f} s:\n{_tail(log)}")
        time.sleep(0.1)


def _start_servers(config: LoadConfig, database_url: str, log_dir: Path) -> _Servers:
    env = dict(os.environ)
    env.pop("MTCJUDGE_BASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(config.app_root), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env["DATABASE_URL"] = database_url
    env["MTCJUDGE_ORGANIZER_TOKEN"] = _ORGANIZER_TOKEN
    servers = _Servers([], [], [])
    workers_each = 1 if config.ports_per_process else config.workers
    try:
        for index in range(config.processes):
            log = log_dir / f"server-{index}.log"
            proc, base = _start_one(config, database_url, env, log, workers_each)
            servers.procs.append(proc)
            servers.base_urls.append(base)
            servers.logs.append(log)
            # the first one migrates the fresh database; the others find it done
            _wait_started(proc, log, workers_each, limit=90)
    except BaseException:
        _stop_servers(servers)
        raise
    return servers


def _stop_servers(servers: _Servers, grace: float = 20.0) -> None:
    for proc in servers.procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in servers.procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    for proc in servers.procs:
        # whatever is left of the group we created (a worker whose parent died first)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def _children(pid: int) -> list[int]:
    """Worker processes of a uvicorn parent (not multiprocessing's helper processes)."""
    pids: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and "resource_tracker" not in cmdline:
            pids.append(int(entry.name))
    return sorted(pids)


_ORGANIZER_TOKEN = secrets.token_urlsafe(24)


# ---------------------------------------------------------------- campaign setup
def _collection_texts(config: LoadConfig, workdir: Path) -> tuple[str, str | None, str]:
    """Runs and metadata texts, and a label of where they come from."""
    if config.data is not None:
        data = Path(config.data)
        metadata = data / "metadata.tsv"
        return (
            (data / "runs.tsv").read_text(),
            metadata.read_text() if metadata.is_file() else None,
            f"runs of {data}",
        )
    from mtcjudge.mtc.synthetic import generate

    collection = generate(
        config.systems,
        config.queries,
        config.k,
        n_genres=config.genres,
        docs_per_genre=config.docs_per_genre,
        n_artists=config.artists,
        seed=config.seed,
    )
    paths = collection.write(workdir / "collection")
    label = f"synthetic {config.systems} systems x {config.queries} queries (seed {config.seed})"
    return paths["runs"].read_text(), paths["metadata"].read_text(), label


@dataclass
class _Campaign:
    id: int
    slug: str
    tokens: list[str]
    pool_pairs: int
    source: str


async def _setup_campaign(
    config: LoadConfig, base_url: str, database_url: str, workdir: Path
) -> _Campaign:
    import httpx
    from sqlalchemy import DateTime, bindparam, text

    runs, metadata, source = _collection_texts(config, workdir)
    slug = f"load-{secrets.token_hex(4)}"
    headers = {"Authorization": f"Bearer {_ORGANIZER_TOKEN}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=300) as client:
        response = await client.post(
            "/api/campaigns",
            json={
                "name": "Load benchmark",
                "slug": slug,
                "runs": runs,
                "metadata": metadata,
                "k": config.k,
                "status": "open",
                "keep_collecting": True,
                "judgments_per_pair": config.judgments_per_pair,
                "seed": config.seed,
            },
        )
        if response.status_code != 201:
            raise RuntimeError(f"creating the campaign: {response.status_code} {response.text}")
        pool_pairs = int(response.json()["report"]["n_pool_pairs"])
        limit = asyncio.Semaphore(8)

        async def invite(index: int) -> str:
            async with limit:
                reply = await client.post(
                    f"/api/campaigns/{slug}/assessors", json={"name": f"Assessor {index:04d}"}
                )
            if reply.status_code != 201:
                raise RuntimeError(f"inviting an assessor: {reply.status_code} {reply.text}")
            return str(reply.json()["token"])

        assert config.assessors is not None
        tokens = await asyncio.gather(*(invite(i) for i in range(config.assessors)))
    engine = _plain_engine(database_url)
    try:
        with engine.begin() as conn:
            campaign_id = int(
                conn.execute(
                    text("SELECT id FROM campaign WHERE slug = :s"), {"s": slug}
                ).scalar_one()
            )
            # consent as the welcome page records it; the form would need a browser session
            consent = text(
                "UPDATE assessor SET consented_at = :at WHERE campaign_id = :c"
            ).bindparams(bindparam("at", type_=DateTime(timezone=True)))
            conn.execute(consent, {"at": datetime.now(UTC), "c": campaign_id})
    finally:
        engine.dispose()
    return _Campaign(campaign_id, slug, list(tokens), pool_pairs, source)


async def _warm_up(servers: _Servers, config: LoadConfig, token: str) -> None:
    """A few requests per process, so no measured request pays for a cold start."""
    import httpx

    async with httpx.AsyncClient(timeout=120) as client:
        for _ in range(2):
            await asyncio.gather(
                *(
                    client.get(f"{base}/api/a/{token}/progress")
                    for base in servers.base_urls
                    for _ in range(2 * config.workers)
                ),
                return_exceptions=True,
            )


# ---------------------------------------------------------------- the load
@dataclass
class _Request:
    endpoint: str
    started: float
    ended: float
    status: int | None  # None: transport error
    error: str | None = None
    retry_after: bool = False


@dataclass
class _Lease:
    pair_lease_id: int
    received: float
    released: float | None = None  # when the submission was sent
    refused: bool = False  # the server said it was not (or no longer) leased


@dataclass
class _Recorder:
    t0: float
    requests: list[_Request] = field(default_factory=list)
    acked: dict[str, tuple[float, int]] = field(default_factory=dict)  # client_id -> (t, status)
    leases: list[_Lease] = field(default_factory=list)
    done: int = 0
    waits: int = 0
    snapshots: int = 0
    snapshot_failures: int = 0
    snapshot_violations: set[tuple[str, int, int]] = field(default_factory=set)
    dashboard_events: int = 0
    dashboard_bytes: int = 0
    dashboard_errors: int = 0
    # pairs handed out after an assessor's first, and those of the query they were on
    later_pairs: int = 0
    same_query_pairs: int = 0

    def now(self) -> float:
        return time.perf_counter() - self.t0

    async def call(
        self, endpoint: str, client: httpx.AsyncClient, method: str, url: str, **kwargs: Any
    ) -> httpx.Response | None:
        import httpx

        started = self.now()
        try:
            response = await client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            self.requests.append(_Request(endpoint, started, self.now(), None, _kind(exc)))
            return None
        except httpx.TransportError as exc:
            self.requests.append(_Request(endpoint, started, self.now(), None, _kind(exc)))
            return None
        self.requests.append(
            _Request(
                endpoint,
                started,
                self.now(),
                response.status_code,
                retry_after=response.status_code == 503 and "retry-after" in response.headers,
            )
        )
        return response


def _kind(exc: Exception) -> str:
    return type(exc).__name__


def _retry_delay(response: httpx.Response | None, attempt: int) -> float:
    if response is not None:
        with contextlib.suppress(ValueError):
            return min(5.0, float(response.headers.get("retry-after", "")))
    return min(2.0, 0.1 * 2.0**attempt)


async def _assessor(
    index: int,
    token: str,
    client: httpx.AsyncClient,
    config: LoadConfig,
    recorder: _Recorder,
    stop: asyncio.Event,
    hard_stop: asyncio.Event,
) -> None:
    rng = random.Random(config.seed * 100_003 + index)
    held: dict[int, _Lease] = {}
    seen_before = False  # this assessor has been handed a pair before
    attempt = 0
    while not stop.is_set():
        response = await recorder.call("next", client, "GET", f"/api/a/{token}/next")
        if response is None or response.status_code != 200:
            attempt += 1
            await _pause(stop, _retry_delay(response, attempt))
            continue
        attempt = 0
        body = response.json()
        if body["status"] == "done":
            recorder.done += 1
            return
        if body["status"] != "pair":
            recorder.waits += 1
            await _pause(stop, 0.2 + 0.1 * rng.random())
            continue
        lease_id = int(body["pair"]["lease_id"])
        lease = held.get(lease_id)
        if lease is None:
            lease = held[lease_id] = _Lease(lease_id, recorder.now())
            recorder.leases.append(lease)
            if seen_before:
                recorder.later_pairs += 1
                recorder.same_query_pairs += bool(body["pair"].get("same_query_as_previous"))
            seen_before = True
        if config.mode == "realistic":
            listen = rng.uniform(config.think_min, config.think_max)
            if await _pause(stop, listen):
                return  # the run ended while listening: the lease is still held
        client_id = str(uuid.uuid4())
        payload = {
            "lease_id": lease_id,
            "broad": rng.randrange(3),
            "fine": float(rng.randrange(101)),
            "client_id": client_id,
            "query_listen_ms": 1000,
            "candidate_listen_ms": 1000,
        }
        lease.released = recorder.now()
        # the judging page keeps retrying one submission with the same client_id
        for retry in range(6):
            reply = await recorder.call(
                "submit", client, "POST", f"/api/a/{token}/judgments", json=payload
            )
            if reply is not None and reply.status_code < 300:
                recorder.acked[client_id] = (recorder.now(), reply.status_code)
                break
            if reply is not None and reply.status_code < 500:
                lease.refused = True
                break
            if hard_stop.is_set():
                break
            await asyncio.sleep(_retry_delay(reply, retry))
        held.pop(lease_id, None)


async def _pause(stop: asyncio.Event, seconds: float) -> bool:
    """Sleep, or less if the run stops; True when it stopped."""
    try:
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    except TimeoutError:
        return False
    return True


async def _sampler(
    engine: Engine,
    lease_sql: _LeaseSql,
    campaign: _Campaign,
    config: LoadConfig,
    recorder: _Recorder,
    stop: asyncio.Event,
) -> None:
    while not stop.is_set():
        try:
            rows = await asyncio.to_thread(
                _lease_snapshot, engine, lease_sql, campaign.id, config.judgments_per_pair
            )
        except Exception:  # the database may be down on purpose
            recorder.snapshot_failures += 1
        else:
            recorder.snapshots += 1
            recorder.snapshot_violations.update((kind, a, b) for kind, a, b, _ in rows)
        await _pause(stop, 0.5)


@dataclass
class _FaultLog:
    kind: str
    started: float | None = None
    ended: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


async def _inject_fault(
    config: LoadConfig,
    servers: _Servers,
    database_name: str | None,
    recorder: _Recorder,
    stop: asyncio.Event,
    fault: _FaultLog,
) -> None:
    assert config.fault_at is not None
    if await _pause(stop, config.fault_at):
        return
    if config.fault == "kill":
        workers = _children(servers.procs[0].pid)
        if not workers:
            fault.details["error"] = "no worker process found"
            return
        victim = workers[0]
        os.kill(victim, signal.SIGKILL)
        fault.started = fault.ended = recorder.now()
        fault.details.update(workers_before=workers, killed=victim)
        await _pause(stop, max(0.0, config.duration - config.fault_at - 0.5))
        fault.details["workers_after"] = _children(servers.procs[0].pid)
        return
    assert database_name is not None
    fault.started = recorder.now()
    terminated = await asyncio.to_thread(
        _database_down, config.postgres_url, database_name, config.db_down_seconds
    )
    fault.ended = recorder.now()
    fault.details["backends_terminated"] = terminated


def _database_down(admin_url: str, name: str, seconds: float) -> int:
    """Refuse connections to ``name`` and end the open ones; allow them again after ``seconds``.

    ``REVOKE CONNECT`` does not stop the superuser the app connects as; ALLOW_CONNECTIONS does.
    """
    from sqlalchemy import text
    from sqlalchemy.pool import NullPool

    admin = _plain_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            try:
                terminated = conn.execute(
                    text(
                        "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM "
                        "pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()) t"
                    ),
                    {"name": name},
                ).scalar_one()
                time.sleep(seconds)
            finally:
                conn.exec_driver_sql(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    finally:
        admin.dispose()
    return int(terminated)


@dataclass
class _Outcome:
    recorder: _Recorder
    window: float
    fault: _FaultLog | None


async def _drive(
    config: LoadConfig,
    servers: _Servers,
    campaign: _Campaign,
    database_url: str,
    database_name: str | None,
) -> _Outcome:
    import httpx

    sampler_engine = _plain_engine(database_url, pool_size=1, max_overflow=0, pool_pre_ping=True)
    with sampler_engine.connect() as conn:
        lease_sql = _LeaseSql.detect(conn)
    timeout = httpx.Timeout(config.timeout, connect=min(5.0, config.timeout))
    clients = [
        httpx.AsyncClient(
            base_url=servers.base_urls[i % len(servers.base_urls)], timeout=timeout, verify=False
        )
        for i in range(len(campaign.tokens))
    ]
    stop, hard_stop = asyncio.Event(), asyncio.Event()
    recorder = _Recorder(time.perf_counter())
    fault = _FaultLog(config.fault) if config.fault else None
    try:
        assessors = [
            asyncio.create_task(_assessor(i, token, clients[i], config, recorder, stop, hard_stop))
            for i, token in enumerate(campaign.tokens)
        ]
        helpers = [
            asyncio.create_task(
                _sampler(sampler_engine, lease_sql, campaign, config, recorder, stop)
            )
        ]
        helpers += [
            asyncio.create_task(
                _dashboard(servers.base_urls[i % len(servers.base_urls)], campaign, recorder, stop)
            )
            for i in range(config.dashboards)
        ]
        if fault is not None:
            helpers.append(
                asyncio.create_task(
                    _inject_fault(config, servers, database_name, recorder, stop, fault)
                )
            )
        progress = asyncio.create_task(_report_progress(config, recorder, stop))
        await asyncio.wait(assessors, timeout=config.duration)
        window = min(recorder.now(), config.duration)
        stop.set()
        # in-flight requests finish (a submission may retry once or twice), then we give up
        _finished, pending = await asyncio.wait(assessors, timeout=config.timeout + 5)
        hard_stop.set()
        if pending:
            _finished, pending = await asyncio.wait(pending, timeout=config.timeout + 2)
        for task in [*pending, *helpers, progress]:
            task.cancel()
        await asyncio.gather(*assessors, *helpers, progress, return_exceptions=True)
    finally:
        await asyncio.gather(*(c.aclose() for c in clients), return_exceptions=True)
        sampler_engine.dispose()
    return _Outcome(recorder, window, fault)


async def _dashboard(
    base_url: str, campaign: _Campaign, recorder: _Recorder, stop: asyncio.Event
) -> None:
    """An organizer's dashboard left open: the results once, then the event stream, as
    static/js/dashboard.js does (reconnecting after an error)."""
    import httpx

    headers = {"Authorization": f"Bearer {_ORGANIZER_TOKEN}"}
    timeout = httpx.Timeout(30.0, read=60.0)
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=timeout) as client:
        while not stop.is_set():
            try:
                results = await client.get(f"/api/campaigns/{campaign.slug}/results")
                recorder.dashboard_bytes += len(results.content)
                url = f"/api/campaigns/{campaign.slug}/events"
                async with client.stream("GET", url) as stream:
                    async for line in stream.aiter_lines():
                        recorder.dashboard_bytes += len(line) + 1
                        if line.startswith("event: results"):
                            recorder.dashboard_events += 1
                        if stop.is_set():
                            return
            except (httpx.HTTPError, OSError):
                recorder.dashboard_errors += 1
                await _pause(stop, 1.0)


async def _report_progress(config: LoadConfig, recorder: _Recorder, stop: asyncio.Event) -> None:
    if config.quiet:
        return
    while not await _pause(stop, 10.0):
        seconds = recorder.now()
        sys.stderr.write(
            f"  {seconds:5.0f} s  {len(recorder.acked):6d} judgments  "
            f"{len(recorder.acked) / max(seconds, 1e-9):7.1f}/s\n"
        )


# ---------------------------------------------------------------- after the run
def _check_invariants(
    database_url: str, campaign: _Campaign, recorder: _Recorder
) -> dict[str, Any]:
    from sqlalchemy import text

    engine = _plain_engine(database_url)
    try:
        with engine.connect() as conn:
            lease_sql = _LeaseSql.detect(conn)
            per_pair = int(
                conn.execute(
                    text("SELECT judgments_per_pair FROM campaign WHERE id = :c"),
                    {"c": campaign.id},
                ).scalar_one()
            )
            stored = {
                str(row[0])
                for row in conn.execute(
                    text(
                        "SELECT client_id FROM judgment WHERE campaign_id = :c "
                        "AND client_id IS NOT NULL"
                    ),
                    {"c": campaign.id},
                )
            }
            n_judgments = int(
                conn.execute(
                    text("SELECT COUNT(*) FROM judgment WHERE campaign_id = :c"),
                    {"c": campaign.id},
                ).scalar_one()
            )
            double_judged = int(
                conn.execute(
                    text(
                        "SELECT COUNT(*) FROM (SELECT query_id, document_id FROM judgment "
                        "WHERE campaign_id = :c GROUP BY query_id, document_id "
                        "HAVING COUNT(*) > :per_pair) t"
                    ),
                    {"c": campaign.id, "per_pair": per_pair},
                ).scalar_one()
            )
            first, second = lease_sql.pair_key
            lease_pairs = {
                int(lease_id): (int(a), int(b))
                for lease_id, a, b in conn.execute(
                    text(f"SELECT id, {first}, {second} FROM lease WHERE campaign_id = :c"),
                    {"c": campaign.id},
                )
            }
        final = _lease_snapshot(engine, lease_sql, campaign.id, per_pair)
    finally:
        engine.dispose()
    acked = set(recorder.acked)
    lost = sorted(acked - stored)
    snapshot = set(recorder.snapshot_violations) | {(kind, a, b) for kind, a, b, _ in final}
    client_pairs = _surely_concurrent(recorder, lease_pairs, per_pair)
    violations = snapshot | {("pair", a, b) for a, b in client_pairs}
    return {
        "lost": len(lost),
        "lost_client_ids": lost[:20],
        "double_judged": double_judged,
        "double_leased": len(violations),
        "detail": {
            "judgments_per_pair": per_pair,
            "judgments_stored": n_judgments,
            "acknowledged": len(acked),
            "stored_not_acknowledged": len(stored - acked),
            "lease_snapshots": recorder.snapshots + 1,
            "lease_snapshot_failures": recorder.snapshot_failures,
            "over_leased_pairs_in_snapshots": sum(1 for v in snapshot if v[0] == "pair"),
            "assessors_with_two_live_leases": sum(1 for v in snapshot if v[0] == "assessor"),
            "over_leased_pairs_seen_by_clients": len(client_pairs),
            "lease_state_column": " AND state" in lease_sql.live,
        },
    }


def _surely_concurrent(
    recorder: _Recorder, lease_pairs: dict[int, tuple[int, int]], per_pair: int
) -> set[tuple[int, int]]:
    """Pairs held by more than ``per_pair`` leases at one moment, by the clients' clocks.

    A lease is surely held from before its ``next`` answer arrived until its submission was
    sent (or the end of the run if never submitted); leases the server refused at submission
    are left out, their end being unknown.
    """
    end = recorder.now()
    intervals: dict[tuple[int, int], list[tuple[float, int]]] = defaultdict(list)
    for lease in recorder.leases:
        pair = lease_pairs.get(lease.pair_lease_id)
        released = lease.released if lease.released is not None else end
        if pair is None or lease.refused or released <= lease.received:
            continue
        intervals[pair] += [(lease.received, 1), (released, -1)]
    over = set()
    for pair, events in intervals.items():
        held = 0
        for _moment, change in sorted(events):  # at a tie, a release (-1) comes first
            held += change
            if held > per_pair:
                over.add(pair)
                break
    return over


#: requests started this long into the load count as "settled" (after the arrivals)
SETTLE_S = 10.0


def _latency(requests: list[_Request]) -> dict[str, Any]:
    import numpy as np

    durations = np.array([r.ended - r.started for r in requests if r.status is not None]) * 1e3
    if durations.size == 0:
        return {"count": 0, "p50_ms": None, "p95_ms": None, "p99_ms": None, "max_ms": None}
    p50, p95, p99 = np.percentile(durations, [50, 95, 99])
    return {
        "count": int(durations.size),
        "mean_ms": round(float(durations.mean()), 2),
        "p50_ms": round(float(p50), 2),
        "p95_ms": round(float(p95), 2),
        "p99_ms": round(float(p99), 2),
        "max_ms": round(float(durations.max()), 2),
    }


def _rate(recorder: _Recorder, start: float, end: float) -> float | None:
    if end - start < 0.5:
        return None
    n = sum(1 for t, _status in recorder.acked.values() if start <= t < end)
    return round(n / (end - start), 1)


def _fault_report(outcome: _Outcome, invariants: dict[str, Any]) -> dict[str, Any] | None:
    fault, recorder, window = outcome.fault, outcome.recorder, outcome.window
    if fault is None:
        return None
    report: dict[str, Any] = {"kind": fault.kind, **fault.details}
    if fault.started is None or fault.ended is None:
        report["injected"] = False
        return report
    report.update(injected=True, at_s=round(fault.started, 2), until_s=round(fault.ended, 2))
    report["judgments_per_s_before"] = _rate(recorder, 0.0, fault.started)
    report["judgments_per_s_after"] = _rate(recorder, fault.ended, window)
    report["judgments_per_s_first_5s_after"] = _rate(recorder, fault.ended, fault.ended + 5)
    # requests in flight at any time during the fault (and for one second after it)
    affected = [
        r for r in recorder.requests if r.ended >= fault.started and r.started <= fault.ended + 1
    ]
    statuses = Counter(str(r.status) if r.status is not None else r.error for r in affected)
    report["statuses_during"] = dict(sorted(statuses.items()))
    report["503_with_retry_after_during"] = sum(1 for r in affected if r.retry_after)
    report["500_during"] = sum(1 for r in affected if r.status == 500)
    first_ok = min((t for t, _ in recorder.acked.values() if t > fault.ended), default=None)
    report["recovered"] = first_ok is not None
    report["first_judgment_after_s"] = (
        round(first_ok - fault.ended, 2) if first_ok is not None else None
    )
    report["lost"] = invariants["lost"]
    return report


def _summarise(
    config: LoadConfig,
    campaign: _Campaign,
    outcome: _Outcome,
    invariants: dict[str, Any],
    load_before: float,
) -> dict[str, Any]:
    recorder, window = outcome.recorder, outcome.window
    by_endpoint: dict[str, list[_Request]] = {"next": [], "submit": []}
    for request in recorder.requests:
        by_endpoint[request.endpoint].append(request)
    status_counts = {
        endpoint: dict(sorted(Counter(str(r.status) for r in reqs if r.status is not None).items()))
        for endpoint, reqs in by_endpoint.items()
    }
    transport = Counter(f"{r.endpoint}:{r.error}" for r in recorder.requests if r.status is None)
    in_window = sum(1 for t, _ in recorder.acked.values() if t < window)
    created = sum(1 for t, status in recorder.acked.values() if t < window and status == 201)
    timeline = [0] * (int(window) + 1)
    for t, _status in recorder.acked.values():
        if t < window:
            timeline[int(t)] += 1
    return {
        "config": {
            "mode": config.mode,
            "db": config.db,
            "workers": config.workers,
            "shape": "ports-per-process" if config.ports_per_process else "workers",
            "processes": config.processes,
            "assessors": config.assessors,
            "duration": config.duration,
            "think_s": [config.think_min, config.think_max] if config.mode == "realistic" else 0,
            "judgments_per_pair": config.judgments_per_pair,
            "collection": campaign.source,
            "pool_pairs": campaign.pool_pairs,
            "fault": config.fault,
            "git_commit": _git_commit(config.app_root),
            "app_root": str(config.app_root),
            "timeout_s": config.timeout,
            "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        "machine": {
            "cpus": os.cpu_count(),
            # other work on the machine skews every figure: note how busy it was
            "load_average_1m_before": round(load_before, 2),
            "load_average_1m_after": round(os.getloadavg()[0], 2),
        },
        "elapsed_s": round(window, 2),
        "judgments": in_window,
        "judgments_per_s": round(in_window / window, 1) if window > 0 else 0.0,
        "judgments_created": created,
        "next": _latency(by_endpoint["next"]),
        "submit": _latency(by_endpoint["submit"]),
        # without the opening burst (all the assessors arrive at once): requests started
        # SETTLE_S seconds or more into the load
        "settled_after_s": SETTLE_S,
        "next_settled": _latency([r for r in by_endpoint["next"] if r.started >= SETTLE_S]),
        "submit_settled": _latency([r for r in by_endpoint["submit"] if r.started >= SETTLE_S]),
        "status_counts": status_counts,
        "server_errors_5xx": sum(
            1 for r in recorder.requests if r.status is not None and r.status >= 500
        ),
        "transport_errors": sum(transport.values()),
        "transport_errors_by_kind": dict(sorted(transport.items())),
        "lost": invariants["lost"],
        "double_judged": invariants["double_judged"],
        "double_leased": invariants["double_leased"],
        "invariants": invariants,
        "assessors_done": recorder.done,
        "wait_answers": recorder.waits,
        # how often a new pair was of the query the assessor was on (a new query clip to
        # listen to otherwise)
        "later_pairs": recorder.later_pairs,
        "same_query_share": round(recorder.same_query_pairs / recorder.later_pairs, 4)
        if recorder.later_pairs
        else None,
        "judgments_per_second_timeline": timeline,
        "fault": _fault_report(outcome, invariants),
        "dashboards": {
            "open": config.dashboards,
            "results_events": recorder.dashboard_events,
            "megabytes_received": round(recorder.dashboard_bytes / 1e6, 2),
            "errors": recorder.dashboard_errors,
        },
    }


def format_report(result: dict[str, Any]) -> str:
    config = result["config"]
    lines = [
        f"load benchmark: {config['mode']}, {config['assessors']} assessors, {config['db']}, "
        f"{config['processes']} process(es) x "
        f"{config['workers'] if config['shape'] == 'workers' else 1} worker(s) "
        f"[{config['shape']}], {config['duration']:g} s, commit {config['git_commit']}",
        f"  collection: {config['collection']}, {config['pool_pairs']} pool pairs, "
        f"{config['judgments_per_pair']} judgments per pair",
        f"  machine: {result['machine']['cpus']} CPUs, load average "
        f"{result['machine']['load_average_1m_before']} before, "
        f"{result['machine']['load_average_1m_after']} after",
        "",
        f"  {'':10s} {'count':>7s} {'p50 ms':>8s} {'p95 ms':>8s} {'p99 ms':>8s} {'max ms':>8s}",
    ]
    for endpoint in ("next", "submit", "next_settled", "submit_settled"):
        figures = result[endpoint]
        cells = [
            f"{figures[key]:8.1f}" if figures[key] is not None else f"{'-':>8s}"
            for key in ("p50_ms", "p95_ms", "p99_ms", "max_ms")
        ]
        label = endpoint.replace("_settled", f" >={result['settled_after_s']:g}s")
        lines.append(f"  {label:10s} {figures['count']:7d} " + " ".join(cells))
    counts = "; ".join(
        f"{endpoint} " + ", ".join(f"{status} x {n}" for status, n in statuses.items())
        for endpoint, statuses in result["status_counts"].items()
    )
    transport = ", ".join(f"{k} x {n}" for k, n in result["transport_errors_by_kind"].items())
    lines += [
        "",
        f"  judgments/s        {result['judgments_per_s']:.1f} "
        f"({result['judgments']} in {result['elapsed_s']:.1f} s)",
        f"  HTTP statuses      {counts}",
        f"  5xx                {result['server_errors_5xx']}",
        f"  transport errors   {result['transport_errors']}"
        + (f" ({transport})" if transport else ""),
        f"  lost               {result['lost']}",
        f"  double judged      {result['double_judged']}",
        f"  double leased      {result['double_leased']}",
    ]
    if result.get("same_query_share") is not None:
        lines.append(
            f"  same query         {result['same_query_share']:.1%} of {result['later_pairs']} "
            "pairs after an assessor's first"
        )
    dashboards = result.get("dashboards") or {}
    if dashboards.get("open"):
        lines.append(
            f"  dashboards         {dashboards['open']} open: {dashboards['results_events']} "
            f"results events, {dashboards['megabytes_received']} MB, "
            f"{dashboards['errors']} errors"
        )
    fault = result.get("fault")
    if fault:
        lines.append(f"  fault {fault['kind']}:")
        for key, value in fault.items():
            if key != "kind":
                lines.append(f"    {key:30s} {value}")
    return "\n".join(lines)


# ---------------------------------------------------------------- entry points
def run_benchmark(config: LoadConfig, out: TextIO | None = None) -> dict[str, Any]:
    """Run one benchmark end to end and return its figures (also printed to ``out``)."""
    out = out if out is not None else sys.stdout
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="mtcjudge-load-") as scratch:
        workdir = Path(scratch)
        log_dir = Path(config.server_log_dir) if config.server_log_dir else workdir
        log_dir.mkdir(parents=True, exist_ok=True)
        with _fresh_database(config, workdir) as (database_url, database_name):
            servers = _start_servers(config, database_url, log_dir)
            try:
                campaign = asyncio.run(
                    _setup_campaign(config, servers.base_urls[0], database_url, workdir)
                )
                asyncio.run(_warm_up(servers, config, campaign.tokens[0]))
                outcome = asyncio.run(
                    _drive(config, servers, campaign, database_url, database_name)
                )
            except Exception:
                for log in servers.logs:
                    sys.stderr.write(f"--- {log.name}\n{_tail(log)}\n")
                raise
            finally:
                _stop_servers(servers)
            invariants = _check_invariants(database_url, campaign, outcome.recorder)
    result = _summarise(config, campaign, outcome, invariants, load_before)
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
    sys.path.insert(0, str(REPO_ROOT))
    raise SystemExit(main())
