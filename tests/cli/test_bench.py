"""mtcjudge bench engine: the benchmark lives in bench/engine.py, the command runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mtcjudge.cli import main
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR
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
    # the headline figures are the default estimator's, on the engine a campaign runs
    assert data["estimator"] == DEFAULT_ESTIMATOR
    assert f"mirex2011  {DEFAULT_ESTIMATOR}" in out
    small = data["mirex2011_scale"]
    assert small["estimator"] == DEFAULT_ESTIMATOR
    assert small["engine"] == "SystemEffectEngine"
    assert small["median_ms"] > 0
    assert small["systems"] == 18
    assert small["naive_max_abs_difference"] < 1e-9  # the baseline computes the same thing
    assert data["naive_ratio"] == small["naive_ratio"] > 0
    assert data["targets"]["estimator"] == DEFAULT_ESTIMATOR
    assert set(data["targets_met"]) == {"mirex2011_median_ms"}  # --skip-large
    assert "large_scale" not in data
    # the plain engine with the ordinal estimator, as a second row
    second = data["second_row"]["mirex2011_scale"]
    assert second["estimator"] == "ordinal"
    assert second["engine"] == "MTCEngine"
    assert second["median_ms"] > 0
    assert "mirex2011  ordinal" in out


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


@pytest.fixture
def installed_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line as an installed wheel builds it: no bench/ beside the package."""
    monkeypatch.setattr("mtcjudge.cli.bench.REPO_ROOT", tmp_path)


@pytest.mark.usefixtures("installed_copy")
@pytest.mark.parametrize(
    "argv",
    [["bench", "engine"], ["bench", "engine", "--iterations", "3"], ["bench", "load"], ["bench"]],
    ids=" ".join,
)
def test_bench_on_an_installed_copy_says_where_the_benchmarks_are(argv: list[str]) -> None:
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    named = " ".join(argv[:2])
    assert err.startswith(f"mtcjudge: error: {named}: no bench/ folder beside this copy")
    assert "they live in bench/ of a source checkout" in err
    assert "git clone https://github.com/mtcjudge/mtcjudge" in err
    assert "mtcjudge bench NAME" in err


@pytest.mark.usefixtures("installed_copy")
def test_bench_help_on_an_installed_copy_says_where_the_benchmarks_are(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "they live in bench/ of a source checkout" in text
    assert "engine, load" in text
