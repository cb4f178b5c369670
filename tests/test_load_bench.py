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


def test_realistic_assessors_listen_to_declared_clips_as_volunteers_do(tmp_path: Path) -> None:
    """``--clip-seconds``: the campaign opens once its clips are declared that long, and the
    assessors report hearing a new query in full, a tenth of one they stay on, the candidate
    in full."""
    import random

    import pytest

    from bench._load.assessors import volunteer_listening
    from bench._load.config import LoadConfig

    rng = random.Random(0)
    new, same = volunteer_listening(30.0, False, rng), volunteer_listening(30.0, True, rng)
    assert 24.0 <= new["query"] <= 36.0
    assert 2.4 <= same["query"] <= 3.6
    assert 24.0 <= same["candidate"] <= 36.0
    # never less than the campaign's listening rule asks of a clip (or to its end)
    assert volunteer_listening(30.0, True, rng, rule=5.0)["query"] == 5.0
    assert volunteer_listening(0.3, False, rng, rule=5.0)["query"] >= 0.3
    assert LoadConfig(mode="realistic", clip_seconds=30).think_max == 15.0  # deciding
    assert LoadConfig(mode="realistic").think_max == 60.0
    with pytest.raises(ValueError, match="realistic"):
        LoadConfig(mode="stress", clip_seconds=30)
    with pytest.raises(ValueError, match="clip seconds"):
        LoadConfig(mode="realistic", clip_seconds=-1)

    report = tmp_path / "load.json"
    load = ["bench", "load", "--mode", "realistic", "--workers", "1", "--assessors", "3"]
    tiny = ["--duration", "3", "--systems", "4", "--queries", "6", "--k", "3"]
    clips = ["--clip-seconds", "0.3", "--think-min", "0", "--think-max", "0.1"]
    assert main([*load, *tiny, *clips, "--quiet", "--json", str(report)]) == 0
    figures = json.loads(report.read_text())
    assert figures["config"]["clip_seconds"] == 0.3
    assert figures["judgments"] > 0
    assert figures["lost"] == 0
    assert "422" not in figures["status_counts"]["submit"]
