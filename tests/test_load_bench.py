"""``mtcjudge bench load``: a tiny run end to end (a real server, SQLite, a few seconds)."""

from __future__ import annotations

import json
from pathlib import Path

from mtcjudge.cli import main


def test_load_benchmark_smoke(tmp_path: Path) -> None:
    report = tmp_path / "load.json"
    load = ["bench", "load", "--db", "sqlite", "--workers", "1", "--assessors", "3"]
    tiny = ["--duration", "1.5", "--systems", "4", "--queries", "6", "--k", "3"]
    status = main([*load, *tiny, "--quiet", "--json", str(report)])
    assert status == 0
    figures = json.loads(report.read_text())
    for endpoint in ("next", "submit"):
        assert figures[endpoint]["count"] > 0
        assert {"p50_ms", "p95_ms", "p99_ms"} <= set(figures[endpoint])
    for key in ("judgments_per_s", "status_counts", "transport_errors", "double_leased"):
        assert key in figures
    assert {"mode", "db", "workers", "assessors", "duration", "git_commit"} <= set(
        figures["config"]
    )
    assert figures["config"]["db"] == "sqlite"
    assert figures["judgments"] > 0
    assert figures["lost"] == 0
    assert figures["double_judged"] == 0
    assert figures["double_leased"] == 0
