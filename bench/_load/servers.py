"""The ``mtcjudge serve`` processes under load: one with ``--workers N`` or N on ports of
their own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench._load.config import ORGANIZER_TOKEN, LoadConfig
from bench._serve import ServerProcess, start_server, stop_servers


@dataclass
class Servers:
    """The servers of one run, in the order they were started."""

    processes: list[ServerProcess]

    @property
    def base_urls(self) -> list[str]:
        return [server.url for server in self.processes]

    @property
    def pids(self) -> list[int]:
        return [server.process.pid for server in self.processes]


def start_servers(config: LoadConfig, database_url: str, log_dir: Path) -> Servers:
    """Start ``config.processes`` servers of ``config.app_root``, one after the other (the
    first migrates the fresh database, the others find it done), each ready to answer."""
    env = dict(os.environ)
    env.pop("MTCJUDGE_BASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(config.app_root), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    env["DATABASE_URL"] = database_url
    env["MTCJUDGE_ORGANIZER_TOKEN"] = ORGANIZER_TOKEN
    servers = Servers([])
    workers_each = 1 if config.ports_per_process else config.workers
    try:
        for index in range(config.processes):
            server = start_server(
                database_url,
                log_dir / f"server-{index}.log",
                workers=workers_each,
                program=[config.python, "-m", "mtcjudge.cli"],
                env=env,
                cwd=config.app_root,
                die_with_parent=True,  # a benchmark killed outright leaves no server behind
            )
            servers.processes.append(server)
            server.wait_ready(timeout=90)
    except BaseException:
        stop_servers(servers.processes)
        raise
    return servers
