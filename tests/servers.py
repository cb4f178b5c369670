"""Real servers for the tests that need one: the app on a uvicorn thread of this process, or
``mtcjudge serve`` processes.

- :func:`serve_in_thread` serves an app on a thread of this process (the browser tests, an
  event-stream client): it starts in milliseconds and sees the test's monkeypatches.
- :func:`running_server` and :func:`running_servers` start real ``mtcjudge serve`` processes
  (several processes on one database, ``--workers``, signals, the installed wheel), ready to
  answer, and stop them afterwards; :func:`start_server` and :func:`free_port` for a test that
  drives the steps itself.

The processes are started by ``bench/_serve.py`` (free port, log file, every worker up, stopped
with its process group). ``bench/load.py`` starts its servers with the same launcher, and
``bench/`` never imports the tests, so the launcher lives there; the tests take it from here.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from bench._serve import (
    MODULE_PROGRAM,
    ServerProcess,
    free_port,
    start_server,
    stop_servers,
)

__all__ = [
    "ServerProcess",
    "free_port",
    "running_server",
    "running_servers",
    "serve_in_thread",
    "start_server",
]


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free port of 127.0.0.1, in a thread; yields its URL."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextlib.contextmanager
def running_server(
    database_url: str,
    log: Path,
    *,
    workers: int = 1,
    program: Sequence[str | os.PathLike[str]] = MODULE_PROGRAM,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
    grace: float = 20.0,
) -> Iterator[ServerProcess]:
    """:func:`start_server` on a free port, ready to answer; stopped afterwards."""
    server = start_server(database_url, log, workers=workers, program=program, env=env, cwd=cwd)
    try:
        server.wait_ready(timeout)
        yield server
    finally:
        server.stop(grace)


@contextlib.contextmanager
def running_servers(
    database_url: str,
    logs: Sequence[Path],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    grace: float = 20.0,
) -> Iterator[list[ServerProcess]]:
    """One server per log file on one database, started at once (their imports overlap), then
    each waited for; all stopped afterwards."""
    servers: list[ServerProcess] = []
    try:
        for log in logs:
            servers.append(start_server(database_url, log, env=env))
        for server in servers:
            server.wait_ready(timeout)
        yield servers
    finally:
        stop_servers(servers, grace)
