"""The ``mtcjudge serve`` processes under load: one with ``--workers N`` or N on ports of
their own."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from bench._load.config import ORGANIZER_TOKEN, REPO_ROOT, LoadConfig
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


@dataclass(frozen=True)
class ServerProgram:
    """How to run the servers of one checkout."""

    python: str
    #: the folder that holds the import package, first on ``PYTHONPATH``
    source: Path
    module: str


def server_program(app_root: Path, python: str) -> ServerProgram:
    """The servers of ``app_root``: its import package (``app/mtcjudge`` since the package was
    renamed; ``app`` itself before), run by its own ``.venv`` when it is another checkout with
    one, so that its templates, static files and migrations are its own too (an interpreter's
    editable install maps them to the checkout it was installed from)."""
    if (app_root / "app" / "mtcjudge").is_dir():
        source, module = app_root / "app", "mtcjudge.cli"
    else:  # a checkout from before the rename: the package is app/ at its root
        source, module = app_root, "app.cli"
    own = app_root / ".venv" / "bin" / "python"
    if app_root.resolve() != REPO_ROOT.resolve() and own.exists():
        python = str(own)
    return ServerProgram(python, source, module)


def start_servers(config: LoadConfig, database_url: str, log_dir: Path) -> Servers:
    """Start ``config.processes`` servers of ``config.app_root``, one after the other (the
    first migrates the fresh database, the others find it done), each ready to answer."""
    program = server_program(config.app_root, config.python)
    env = dict(os.environ)
    env.pop("MTCJUDGE_BASE_URL", None)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(program.source), *filter(None, [os.environ.get("PYTHONPATH")])]
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
                program=[program.python, "-m", program.module],
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
