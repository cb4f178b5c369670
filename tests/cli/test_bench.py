"""mtcjudge bench engine: the benchmark lives in bench/engine.py, the command runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli import main
from tests.cli import run

ROOT = Path(__file__).resolve().parents[2]


def test_bench_engine_prints_and_writes_figures(tmp_path: Path) -> None:
    report = tmp_path / "bench.json"
    code, out, err = run(
        "bench", "engine", "--iterations", "12", "--skip-large", "--json", str(report)
    )
    assert code == 0, err
    assert "median" in out
    assert "naive" in out
    data = json.loads(report.read_text())
    assert data["mirex2011_scale"]["median_ms"] > 0
    assert data["mirex2011_scale"]["systems"] == 18
    assert data["naive_ratio"] > 0


def test_the_benchmark_is_a_script_of_bench_with_the_options_of_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert not (ROOT / "app" / "perf.py").exists()
    script = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "engine.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    with pytest.raises(SystemExit):
        main(["bench", "engine", "--help"])
    command = capsys.readouterr().out
    options = {"--json", "--iterations", "--runs", "--metadata", "--judgments", "--skip-large"}
    for option in options:
        assert option in script.stdout
        assert option in command
