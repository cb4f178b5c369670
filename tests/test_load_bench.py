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
    # the simulated assessors fetch both clips of each pair (the campaign's default listening
    # rule is on), and no judgment was refused for it
    assert figures["clip"]["count"] > 0
    assert set(figures["status_counts"]["clip"]) == {"200"}
    assert "422" not in figures["status_counts"]["submit"]
    assert figures["invariants"]["detail"]["leases_by_kind"]["pool"] > 0


def test_app_root_runs_that_checkout_s_own_package(tmp_path: Path) -> None:
    """``--app-root`` puts the other checkout's import package first on PYTHONPATH and runs its
    own venv: since the package moved to app/mtcjudge, the checkout's root alone would leave
    the editable install of this one answering (its code, its templates)."""
    from bench._load.config import REPO_ROOT
    from bench._load.servers import server_program

    here = server_program(REPO_ROOT, "/usr/bin/python3")
    assert here == type(here)("/usr/bin/python3", REPO_ROOT / "app", "mtcjudge.cli")

    renamed = tmp_path / "renamed"
    (renamed / "app" / "mtcjudge").mkdir(parents=True)
    (renamed / ".venv" / "bin").mkdir(parents=True)
    (renamed / ".venv" / "bin" / "python").touch()
    program = server_program(renamed, "/usr/bin/python3")
    assert program.source == renamed / "app"
    assert program.module == "mtcjudge.cli"
    assert program.python == str(renamed / ".venv" / "bin" / "python")

    older = tmp_path / "older"  # before the rename: the package is app/ itself
    (older / "app").mkdir(parents=True)
    program = server_program(older, "/usr/bin/python3")
    assert (program.source, program.module, program.python) == (
        older,
        "app.cli",
        "/usr/bin/python3",
    )
