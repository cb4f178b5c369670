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


def test_clips_of_a_real_length_are_heard_in_full_and_pass_the_byte_evidence(
    tmp_path: Path,
) -> None:
    """``--clip-seconds``: the clips last that long, an assessor reports a new clip heard in
    full, and the server, which checks what it sent, accepts every submission; requests
    count as settled after the arrivals."""
    report = tmp_path / "load.json"
    load = ["bench", "load", "--mode", "realistic", "--db", "sqlite", "--workers", "1"]
    tiny = ["--assessors", "3", "--systems", "4", "--queries", "6", "--k", "3"]
    clips = ["--clip-seconds", "1", "--think-min", "0", "--think-max", "0.2", "--duration", "8"]
    status = main([*load, *tiny, *clips, "--quiet", "--json", str(report)])
    assert status == 0
    figures = json.loads(report.read_text())
    assert figures["config"]["clip_seconds"] == 1.0
    assert figures["settled_after_s"] == 2.2
    assert figures["judgments"] > 0
    assert set(figures["status_counts"]["clip"]) == {"200"}
    assert set(figures["status_counts"]["submit"]) <= {"200", "201"}
    assert figures["lost"] == figures["double_judged"] == figures["double_leased"] == 0


def test_clip_seconds_settings_that_do_not_go_together_are_refused() -> None:
    import pytest

    from bench._load.config import SETTLE_S, LoadConfig

    assert LoadConfig(mode="realistic").settle_after == SETTLE_S
    config = LoadConfig(mode="realistic", clip_seconds=30, think_min=5, think_max=15, duration=240)
    assert config.settle_after == 75
    with pytest.raises(ValueError, match="needs --mode realistic"):
        LoadConfig(mode="stress", clip_seconds=30, duration=240)
    with pytest.raises(ValueError, match="1 to 600 seconds"):
        LoadConfig(mode="realistic", clip_seconds=0.5, duration=240)
    with pytest.raises(ValueError, match="arrive over 75 s, found 60"):
        LoadConfig(mode="realistic", clip_seconds=30, think_min=5, think_max=15, duration=60)


def test_clips_of_a_given_length_are_small_files_of_that_length(tmp_path: Path) -> None:
    from bench._common import write_silent_clips
    from mtcjudge.clips.decode import inspect
    from mtcjudge.ingest.formats import read_runs

    runs = tmp_path / "runs.tsv"
    runs.write_text("sysA\tq1\td1\nsysA\tq1\td2\n")
    folder = write_silent_clips(read_runs(runs), tmp_path / "audio", 30.0)
    assert sorted(p.name for p in folder.iterdir()) == ["d1.wav", "d2.wav", "q1.wav"]
    source = inspect(folder / "d1.wav")
    assert source.seconds == 30.0
    assert (folder / "d1.wav").stat().st_size < 61_000
