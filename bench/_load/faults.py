"""Faults injected mid-load: a server worker killed, or the database refusing connections."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.pool import NullPool

from bench._load.assessors import Recorder, pause
from bench._load.config import LoadConfig
from bench._load.database import plain_engine
from bench._load.servers import Servers


@dataclass
class FaultLog:
    kind: str
    started: float | None = None
    ended: float | None = None
    details: dict[str, Any] = field(default_factory=dict)


async def inject_fault(
    config: LoadConfig,
    servers: Servers,
    database_name: str | None,
    recorder: Recorder,
    stop: asyncio.Event,
    fault: FaultLog,
) -> None:
    assert config.fault_at is not None
    if await pause(stop, config.fault_at):
        return
    if config.fault == "kill":
        workers = worker_pids(servers.pids[0])
        if not workers:
            fault.details["error"] = "no worker process found"
            return
        victim = workers[0]
        os.kill(victim, signal.SIGKILL)
        fault.started = fault.ended = recorder.now()
        fault.details.update(workers_before=workers, killed=victim)
        await pause(stop, max(0.0, config.duration - config.fault_at - 0.5))
        fault.details["workers_after"] = worker_pids(servers.pids[0])
        return
    assert database_name is not None
    fault.started = recorder.now()
    terminated = await asyncio.to_thread(
        database_down, config.postgres_url, database_name, config.db_down_seconds
    )
    fault.ended = recorder.now()
    fault.details["backends_terminated"] = terminated


def database_down(admin_url: str, name: str, seconds: float) -> int:
    """Refuse connections to ``name`` and end the open ones; allow them again after ``seconds``.

    ``REVOKE CONNECT`` does not stop the superuser the app connects as; ALLOW_CONNECTIONS does.
    """
    admin = plain_engine(admin_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
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


def worker_pids(pid: int) -> list[int]:
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
