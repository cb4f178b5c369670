"""The public Python API (mtcjudge.api, re-exported by the package root) and docs/api.md."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mtcjudge
from mtcjudge import api
from tests.cli import run

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "mirex-small"


def _first_python_block() -> str:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    match = re.search(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert match is not None, "docs/api.md has no python block"
    return match.group(1)


def _simulate_judgments(directory: Path) -> int:
    code, out, err = run(
        "simulate",
        "--runs",
        str(directory / "runs.tsv"),
        "--judgments",
        str(directory / "judgments-fine.tsv"),
        "--metadata",
        str(directory / "metadata.tsv"),
        "--quiet",
    )
    assert code == 0, err
    found = re.search(r"judgments to target +(\d+)", out)
    assert found is not None, out
    return int(found.group(1))


def test_the_first_example_of_the_docs_prints_what_simulate_prints(tmp_path: Path) -> None:
    """docs/api.md's first python block, run as a user runs it (a fresh interpreter, the
    data folder in MIREX2011), prints the judgments to 95 % that mtcjudge simulate gives."""
    script = tmp_path / "example.py"
    script.write_text(_first_python_block(), encoding="utf-8")
    env = {**os.environ, "MIREX2011": str(FIXTURE)}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    printed = re.search(r"judgments to 95 %: (\d+) of (\d+)", done.stdout)
    assert printed is not None, done.stdout
    assert int(printed.group(1)) == _simulate_judgments(FIXTURE)
    assert int(printed.group(1)) < int(printed.group(2))  # the loop stopped before the end


def test_the_package_root_exports_the_api_lazily() -> None:
    assert sorted(mtcjudge.__all__) == sorted(api.__all__)
    for name in api.__all__:
        assert getattr(mtcjudge, name) is getattr(api, name), name
    assert set(api.__all__) <= set(dir(mtcjudge))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = mtcjudge.nothing  # type: ignore[attr-defined]
    # the command line and the web app import the package without the API's stack
    code = "import sys, mtcjudge; print('mtcjudge.api' in sys.modules, 'scipy' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["False", "False"]


def test_select_judge_results_and_replay_agree_with_a_campaign() -> None:
    loaded = mtcjudge.load_files(
        FIXTURE / "runs.tsv", FIXTURE / "judgments-fine.tsv", FIXTURE / "metadata.tsv"
    )
    truth = loaded.judged_values
    engine = mtcjudge.make_engine(loaded, "uniform", target=0.8)
    while engine.stop_reason() is None:
        pairs = engine.select(2)
        engine.judge(pairs, truth[pairs])
    result = mtcjudge.replay_campaign(loaded, "uniform", target=0.8, batch=2)
    assert engine.n_judged == result.judgments_to_target
    scores = mtcjudge.system_scores(engine, loaded)
    assert [s.rank for s in scores] == list(range(1, len(loaded.systems) + 1))
    np.testing.assert_allclose(sorted(s.mean for s in scores), sorted(result.estimated_means))
    assert all(a.mean >= b.mean for a, b in itertools.pairwise(scores))
    confidences = mtcjudge.pair_confidences(engine, loaded)
    n = len(loaded.systems)
    assert len(confidences) == n * (n - 1) // 2
    assert [p.confidence for p in confidences] == sorted(p.confidence for p in confidences)
    assert all(p.difference >= 0 for p in confidences)
    mean_confidence = np.mean([p.confidence for p in confidences])
    assert mean_confidence == pytest.approx(engine.ranking_confidence())
    # starting from the judgments, as a campaign that imported them
    judged = mtcjudge.make_engine(loaded, start_judged=True)
    assert judged.n_unjudged == 0
    assert judged.stop_reason() == "complete"
    with pytest.raises(ValueError, match="unknown estimator 'oracle'"):
        mtcjudge.make_engine(loaded, "oracle")
