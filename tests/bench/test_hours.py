"""bench/hours.py: a tiny run of each selection, and the bookkeeping of the figures (no MIREX
data needed)."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from mtcjudge.cli import main
from mtcjudge.cli.bench import benchmark_module


def _bench_module() -> ModuleType:
    module = benchmark_module("hours")
    if module is None:
        raise RuntimeError("bench/hours.py is missing from the checkout")
    return module


hours = _bench_module()


def record(selection: str, collection: str, seed: int, h: float, wrong: int) -> object:
    return hours.Record(
        collection=collection,
        kind="suite",
        selection=selection,
        target=0.95,
        seed=seed,
        pool=100,
        n_queries=10,
        judgments=int(10 * h),
        trials=0,
        hours=h,
        listening_hours=0.8 * h,
        queries_heard=5,
        wall_hours=h / 2,
        full_hours=10.0,
        pairs=10,
        wrong=wrong,
        wrong_vs_truth=wrong + 1,
        allowed=0.5,
        confidence=0.95,
        stop="confidence",
        noise_sd=1.0,
        seconds=0.1,
    )


def test_hours_are_pooled_and_compared_with_judgment_greedy_pair_by_pair() -> None:
    records = [
        record("greedy", "a", 1, 4.0, 0),
        record("greedy", "b", 1, 2.0, 1),
        record("cost", "a", 1, 3.0, 0),
        record("cost", "b", 1, 1.0, 0),
    ]
    block = hours.summarise(records, ["greedy", "cost"])["0.95"]["selections"]
    assert block["greedy"]["hours"] == 6.0
    assert block["cost"]["hours_vs_greedy"] == pytest.approx(4.0 / 6.0)
    # paired: (3/4 + 1/2) / 2
    assert block["cost"]["paired_ratio_mean"] == pytest.approx(0.625)
    # wrong pairs pooled against the pooled allowance
    assert (block["greedy"]["wrong"], block["greedy"]["allowed"]) == (1, 1.0)
    # the count against the truth is pooled beside it, and is not what honesty is judged on
    assert block["greedy"]["wrong_vs_truth"] == 3
    assert block["greedy"]["honest"]
    assert block["cost"]["honest"]


def test_the_pooled_figures_carry_a_bootstrap_interval_over_campaigns() -> None:
    # two collections: cost-aware takes half the hours on one and the same on the other
    records = [
        record("greedy", "a", 1, 4.0, 0),
        record("greedy", "b", 1, 2.0, 1),
        record("cost", "a", 1, 2.0, 0),
        record("cost", "b", 1, 2.0, 2),
    ]
    block = hours.summarise(records, ["greedy", "cost"])["0.95"]["selections"]
    # the resamples are all a, all b, or both: 2/2, 4/4 and 4/6 of greedy's hours
    low, high = block["cost"]["hours_vs_greedy_interval"]
    assert (low, high) == (pytest.approx(0.5), pytest.approx(1.0))
    # excess over the allowance of 0.5 a campaign: -0.5 and +1.5, summed over two draws
    low, high = block["cost"]["excess_interval"]
    assert (low, high) == (pytest.approx(-1.0), pytest.approx(3.0))
    # one campaign says nothing of its spread
    single = hours.summarise(records[:1] + records[2:3], ["greedy", "cost"])["0.95"]
    assert "hours_vs_greedy_interval" not in single["selections"]["cost"]


def test_a_tiny_run_of_each_selection(tmp_path) -> None:
    out = tmp_path / "hours.json"
    code = main(
        [
            "bench", "hours", "--quick", "--collections", "1", "--seeds", "1",
            "--targets", "0.9", "--workers", "1", "--json", str(out), "--ranges", "issue23",
        ]
    )  # fmt: skip
    assert code == 0
    payload = json.loads(out.read_text())
    assert payload["settings"]["noise"] == "measured"
    assert payload["settings"]["ranges"] == "issue23"
    assert payload["settings"]["volunteer_assumptions"]["decision_seconds"] == 10.0
    selections = payload["summary"]["0.90"]["selections"]
    assert set(selections) == {"greedy", "locality", "cost"}
    records = payload["records"]
    assert {r["selection"] for r in records} == {"greedy", "locality", "cost"}
    for r in records:
        assert 0 < r["listening_hours"] < r["hours"]
        assert r["judgments"] > 0
        assert r["wrong"] <= r["pairs"]
        assert r["wrong_vs_truth"] <= r["pairs"]
    # the hidden trials (a tenth of the hand-outs) happened, and their time counts
    assert sum(r["trials"] for r in records) > 0


def test_bad_options_exit_2(tmp_path, capsys) -> None:
    assert main(["bench", "hours", "--mirex", str(tmp_path)]) == 2
    assert "no runs.tsv" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["bench", "hours", "--targets", "1.5"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["bench", "hours", "--selections", "fastest"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["bench", "hours", "--ranges", "issue99"])
    assert exc.value.code == 2
