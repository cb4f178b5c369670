"""``mtcjudge serve --workers 2``: two uvicorn processes on one socket, stopped by SIGTERM."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_two_workers_serve_and_stop_on_sigterm(empty_database_url: str, tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    command = [sys.executable, "-m", "mtcjudge.cli", "serve", "--port", str(port), "--workers", "2"]
    with log.open("wb") as stream:
        proc = subprocess.Popen(
            [*command, "--database-url", empty_database_url],
            stdout=stream,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while log.read_text().count("Application startup complete") < 2:
            assert proc.poll() is None, log.read_text()
            if time.monotonic() > deadline:
                pytest.fail(f"the workers did not start:\n{log.read_text()}")
            time.sleep(0.1)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            statuses = {client.get("/healthz").status_code for _ in range(20)}
        assert statuses == {200}
        output = log.read_text()
        workers = set(re.findall(r"Started server process \[(\d+)\]", output))
        assert len(workers) == 2
        assert str(proc.pid) not in workers
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        output = log.read_text()
        assert all(f"Finished server process [{pid}]" in output for pid in workers)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
