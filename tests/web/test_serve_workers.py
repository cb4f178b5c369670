"""``mtcjudge serve --workers 2``: two uvicorn processes on one socket, stopped by SIGTERM."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import httpx

from tests.servers import start_server


def test_two_workers_serve_and_stop_on_sigterm(empty_database_url: str, tmp_path: Path) -> None:
    server = start_server(empty_database_url, tmp_path / "serve.log", workers=2)
    proc, log = server.process, server.log
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=5) as client:
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
        server.stop()
