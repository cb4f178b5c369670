"""bench/claim_shape.py: sign errors against the claimed distributions' shape."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from bench import claim_shape


def test_a_heavier_tail_at_the_same_variance_claims_less_in_the_middle_more_at_the_top() -> None:
    assert claim_shape.heavy_tail_error(np.array([0.0]), 4)[0] == pytest.approx(0.5)
    middle, top = claim_shape.heavy_tail_error(np.array([1.5, 3.5]), 4)
    assert middle < special.ndtr(-1.5)
    assert top > special.ndtr(-3.5)
    # many degrees of freedom: the normal
    assert claim_shape.heavy_tail_error(np.array([1.5]), 1e6)[0] == pytest.approx(
        special.ndtr(-1.5), rel=1e-4
    )


@pytest.mark.parametrize("factor", [0.5, 1.0, 2.0])
def test_the_common_factor_recovers_the_variance_the_errors_came_from(factor: float) -> None:
    rng = np.random.default_rng(3)
    z = rng.uniform(0.0, 3.0, 40_000)
    # the claims say Phi(-z); the signs are wrong as often as a variance factor times theirs
    wrong = rng.random(z.size) < special.ndtr(-z / np.sqrt(factor))
    assert claim_shape.common_factor(z, wrong) == pytest.approx(factor, rel=0.1)


def test_the_table_counts_wrong_and_expected_pairs_per_bin() -> None:
    # claimed errors 0.3 (bin 0.2-0.5) twice, 0.15 once (0.1-0.2); one known pair left out
    z = np.array([-special.ndtri(0.3), -special.ndtri(0.3), -special.ndtri(0.15), np.inf])
    z_error = np.array([1.0, -1.0, 2.0, 0.0])
    wrong = np.array([True, False, True, False])
    table = claim_shape.shape_table(z, z_error, wrong)
    assert table["pairs"] == 3
    bins = {(row["low"], row["high"]): row for row in table["bins"]}
    assert bins[(0.2, 0.5)]["pairs"] == 2
    assert bins[(0.2, 0.5)]["wrong"] == 1
    assert bins[(0.2, 0.5)]["normal"] == pytest.approx(0.6)
    assert bins[(0.1, 0.2)]["wrong"] == 1
    assert bins[(0.1, 0.2)]["normal"] == pytest.approx(0.15)
    assert table["median_z2"] == pytest.approx(1.0)
    assert table["mean_z2"] == pytest.approx(2.0)


def test_the_command_replays_and_writes_both_tables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "shape.json"
    code = claim_shape.main(["--quick", "--collections", "2", "--workers", "1", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "joint: 2 replays to the 0.95 stop" in printed
    assert "at the 0.95 stops" in printed
    payload = json.loads(out.read_text())
    assert len(payload["collections"]) == 2
    for part in ("trajectory", "stop"):
        table = payload[part]
        assert sum(row["pairs"] for row in table["bins"]) == table["pairs"]
        assert table["pairs"] > 0
    assert payload["trajectory"]["pairs"] > payload["stop"]["pairs"]


def test_a_bad_target_is_refused_with_exit_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert claim_shape.main(["--target", "1.5", "--collections", "1"]) == 2
    assert "--target" in capsys.readouterr().err
