"""bench/stop_margins.py: stops read from recorded curves, on hand-made records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import stop_margins


def record(estimator: str, curve: list[tuple[int, float, float]], **extra: object) -> dict:
    return {"estimator": estimator, "kind": "suite", "n_systems": 5, "curve": curve, **extra}


# 5 systems: 10 pairs. The uniform prior reaches 0.95 at 100 judgments (accuracy 0.9) and
# 0.96 at 200 (accuracy 1.0); the other estimator reaches 0.95 at 20 judgments, but only
# after its minimum of 30 counts, and 0.96 at 60.
RECORDS = [
    record("uniform", [(0, 0.5, 0.5), (100, 0.95, 0.9), (200, 0.97, 1.0), (300, 0.995, 1.0)]),
    record(
        "other",
        [(0, 0.5, 0.5), (20, 0.951, 0.7), (40, 0.955, 0.8), (60, 0.965, 1.0), (80, 0.99, 1.0)],
        min_judgments=30,
    ),
]


def rows_by(rows: list[dict], estimator: str, target: float, margin: float) -> dict:
    (row,) = [
        r
        for r in rows
        if r["estimator"] == estimator and r["target"] == target and r["margin"] == margin
    ]
    return row


def test_plain_rule_and_a_margin_stop_where_the_curve_crosses_the_threshold() -> None:
    rows = stop_margins.margins_table(RECORDS, [0.8])
    plain = rows_by(rows, "other", 0.95, 1.0)
    # the crossing at 20 judgments comes before the minimum: the stop is at 40
    assert plain["wrong"] == pytest.approx(2.0)  # (1 - 0.8) x 10 pairs
    assert plain["allowed"] == pytest.approx(0.5)
    assert not plain["honest"]
    assert plain["effort_vs_uniform"] == pytest.approx(40 / 100)
    strict = rows_by(rows, "other", 0.95, 0.8)
    assert strict["threshold"] == pytest.approx(0.96)
    assert strict["wrong"] == pytest.approx(0.0)
    assert strict["honest"]
    assert strict["effort_vs_uniform"] == pytest.approx(60 / 100)
    # a threshold the curve never reaches counts at its last point
    assert rows_by(rows, "uniform", 0.99, 0.8)["effort_vs_uniform"] == pytest.approx(1.0)


def test_the_command_prints_the_table_and_refuses_a_bad_margin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"records": RECORDS}))
    assert stop_margins.main([str(path), "--margin", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "other        0.95    1.00    0.9500" in out
    assert "over" in out
    with pytest.raises(SystemExit) as exit_info:
        stop_margins.main([str(path), "--margin", "5"])
    assert exit_info.value.code == 2


def test_the_oracle_stops_each_replay_where_the_pooled_wrong_pairs_fit_at_least_cost() -> None:
    rows = stop_margins.oracle_table(RECORDS)
    # at 0.95 the allowance of 10 pairs is 0.5: no wrong pair at all. The uniform prior is
    # first right everywhere at 200 judgments, twice its own stop at 100; the other
    # estimator at 60 (its point at 20 judgments comes before its minimum)
    assert rows_by_target(rows, "uniform", 0.95)["effort_vs_uniform"] == pytest.approx(2.0)
    assert rows_by_target(rows, "other", 0.95)["least_judgments"] == pytest.approx(60)
    # at 0.90 one wrong pair is allowed: the uniform prior's own stop (100, one wrong) is it
    assert rows_by_target(rows, "uniform", 0.90)["effort_vs_uniform"] == pytest.approx(1.0)


def test_the_oracle_trades_wrong_pairs_between_replays() -> None:
    # two replays of 10 pairs: 2 wrong pairs allowed in all at 0.90. Stopping the second
    # at once (2 wrong) and the first at 50 (none) costs 50, less than any other choice
    # (0 + 100, or 50 + 10 with one wrong pair)
    records = [
        record("uniform", [(0, 0.5, 0.5), (100, 0.9, 0.9)]),
        record("x", [(0, 0.5, 0.8), (50, 0.9, 1.0)]),
        record("x", [(0, 0.5, 0.8), (10, 0.8, 0.9), (100, 0.95, 1.0)]),
    ]
    row = rows_by_target(stop_margins.oracle_table(records), "x", 0.90)
    assert row["allowed"] == pytest.approx(2.0)
    assert row["least_judgments"] == pytest.approx(50)
    # no choice keeps within an allowance the curves never reach
    strict = rows_by_target(stop_margins.oracle_table(records[:2]), "x", 0.99)
    assert strict["least_judgments"] == pytest.approx(50)
    never = [record("uniform", [(0, 0.5, 0.5)]), record("x", [(0, 0.5, 0.8), (5, 0.6, 0.9)])]
    assert math.isinf(
        rows_by_target(stop_margins.oracle_table(never), "x", 0.95)["least_judgments"]
    )


def test_the_command_prints_the_oracle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"records": RECORDS}))
    assert stop_margins.main([str(path), "--oracle"]) == 0
    out = capsys.readouterr().out
    assert "other        0.95        0.5               60  0.60" in out


def rows_by_target(rows: list[dict], estimator: str, target: float) -> dict:
    (row,) = [r for r in rows if r["estimator"] == estimator and r["target"] == target]
    return row


def test_a_margin_above_one_reads_a_looser_rule() -> None:
    looser = rows_by(stop_margins.margins_table(RECORDS, [2.0]), "other", 0.99, 2.0)
    # 0.99 claimed at 0.98: the other estimator stops at 80 rather than never
    assert looser["threshold"] == pytest.approx(0.98)
    assert looser["effort_vs_uniform"] == pytest.approx(80 / 300)
