"""Start ``mtcjudge serve`` as a real process, wait until it answers, stop it.

The one launcher of ``mtcjudge serve`` processes, for ``bench/load.py`` and for the tests (which
take it from ``tests/servers.py``, with their context managers around it)::

    server = start_server(database_url, log_dir / "serve.log")
    try:
        server.wait_ready()
        httpx.get(f"{server.url}/healthz")
    finally:
        stop_servers([server])

A server listens on 127.0.0.1 at a free port, writes its output (stdout and stderr) to a log
file, and runs in a process group of its own, so that stopping it also ends workers whose
parent died first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

__all__ = [
    "MODULE_PROGRAM",
    "STARTED_LINE",
    "ServerError",
    "ServerProcess",
    "free_port",
    "start_server",
    "stop_servers",
]

#: what uvicorn logs once a worker's application has started
STARTED_LINE = "Application startup complete"
#: ``mtcjudge`` run from the interpreter running this code
MODULE_PROGRAM = (sys.executable, "-m", "mtcjudge.cli")


class ServerError(RuntimeError):
    """The server exited or did not answer in time; the message ends with its log's tail."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    """One ``mtcjudge serve`` process: its ``url`` (``http://127.0.0.1:PORT``) and log."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    workers: int = 1

    def output(self) -> str:
        """Everything the server has written so far."""
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until every worker has logged that its application started and ``/healthz``
        answers 200; :class:`ServerError` if the process exits or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        with httpx.Client(timeout=1) as client:
            while True:
                if self.process.poll() is not None:
                    raise ServerError(
                        f"mtcjudge serve exited with status {self.process.returncode}:\n"
                        f"{self.tail()}"
                    )
                if self.output().count(STARTED_LINE) >= self.workers:
                    with contextlib.suppress(httpx.HTTPError):
                        if client.get(f"{self.url}/healthz").status_code == 200:
                            return
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"mtcjudge serve did not answer within {timeout:g} s:\n{self.tail()}"
                    )
                time.sleep(0.1)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM, then SIGKILL to what is left of its process group after ``grace`` s."""
        stop_servers([self], grace)


def start_server(
    database_url: str,
    log: Path,
    *,
    port: int | None = None,
    workers: int = 1,
    program: Sequence[str | os.PathLike[str]] = MODULE_PROGRAM,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    die_with_parent: bool = False,
) -> ServerProcess:
    """Start ``program serve`` (``mtcjudge`` of this interpreter by default) on ``port`` (a
    free one by default) of 127.0.0.1; returns at once, see :meth:`ServerProcess.wait_ready`.

    ``env`` replaces the environment (inherited by default). ``die_with_parent`` has Linux
    send the server SIGTERM when this process dies, for a benchmark that may be killed
    outright (do not use it where other threads may be forking)."""
    port = free_port() if port is None else port
    command = [*program, "serve", "--host", "127.0.0.1", "--port", str(port)]
    command += ["--database-url", database_url]
    if workers > 1:
        command += ["--workers", str(workers)]
    with log.open("wb") as stream:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped as a whole, by us
            preexec_fn=_death_signal() if die_with_parent else None,
        )
    return ServerProcess(process, f"http://127.0.0.1:{port}", log, workers)


def stop_servers(servers: Iterable[ServerProcess], grace: float = 20.0) -> None:
    """SIGTERM to every server still running, up to ``grace`` seconds for all of them to
    exit, then SIGKILL to whatever is left of their process groups (a worker whose parent
    died first)."""
    servers = list(servers)
    for server in servers:
        if server.process.poll() is None:
            server.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for server in servers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=max(0.1, deadline - time.monotonic()))
    for server in servers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.process.wait(timeout=5)


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking Linux for SIGTERM when the parent dies (best effort).

    The function is looked up here: the child, between fork and exec, must not import
    anything."""
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
