"""bench/calibration.py: the bookkeeping behind the honesty figures, on hand-made records and
a tiny --quick run (no MIREX data needed)."""

from __future__ import annotations

import json
from types import ModuleType

import numpy as np
import pytest

from bench.experiments.synthetic_zoo import generate_zoo
from mtcjudge.cli import main
from mtcjudge.cli.bench import benchmark_module
from mtcjudge.ingest.loader import load_synthetic
from mtcjudge.mtc.factory import engine_for_settings
from mtcjudge.mtc.scales import get_scale


def _bench_module() -> ModuleType:
    module = benchmark_module("calibration")
    if module is None:
        raise RuntimeError("bench/calibration.py is missing from the checkout")
    return module


calibration = _bench_module()


def stop(target: float, judgments: int, confidence: float, pairs: int, wrong: int, **kw):
    return calibration.Stop(
        target=target,
        judgments=judgments,
        confidence=confidence,
        accuracy=1 - wrong / pairs,
        pairs=pairs,
        wrong=wrong,
        wrong_ties=kw.get("wrong_ties", 0),
        expected_claimed=kw.get("expected_claimed", (1 - confidence) * pairs),
        frontier=kw.get("frontier"),
        bins_count=[0] * 7,
        bins_correct=[0] * 7,
        bins_confidence=[0.0] * 7,
    )


def record(name: str, estimator: str, pool: int, stops: list) -> object:
    return calibration.Record(
        collection=name,
        kind="suite",
        estimator=estimator,
        measure="cg",
        scale="fine",
        n_systems=5,
        n_queries=20,
        k=5,
        pool=pool,
        true_ties=0,
        batch=1,
        min_judgments=0,
        seconds=0.0,
        stops=stops,
    )


def test_pooled_wrong_and_expected_pairs_by_hand() -> None:
    # two collections: 10 pairs (1 wrong, claim 0.96) and 45 pairs (4 wrong, claim 0.951)
    records = [
        record("a", "x", 100, [stop(0.95, 30, 0.96, 10, 1, frontier=40)]),
        record("b", "x", 400, [stop(0.95, 50, 0.951, 45, 4, frontier=None, wrong_ties=1)]),
    ]
    p = calibration.pooled(records, 0.95)
    assert p["pairs"] == 55
    assert p["wrong"] == 5
    assert p["wrong_ties"] == 1
    assert p["expected_target"] == pytest.approx(0.05 * 55)  # 2.75: 5 wrong is dishonest
    assert p["expected_claimed"] == pytest.approx(0.04 * 10 + 0.049 * 45)
    assert p["pooled_accuracy"] == pytest.approx(50 / 55)
    assert p["mean_accuracy"] == pytest.approx((0.9 + 41 / 45) / 2)
    assert p["mean_confidence"] == pytest.approx((0.96 + 0.951) / 2)
    assert p["below_claim"] == 1.0  # 0.9 < 0.96 and 0.911 < 0.951
    assert p["below_target"] == 1.0
    assert p["judgments"] == 80
    assert p["pool"] == 500
    assert p["median_stop_fraction"] == pytest.approx((0.3 + 0.125) / 2)
    # b never settles at 0.95: the median of (0.4, infinity) is infinite, shown as None
    assert p["frontier_reached"] == 1
    assert p["median_frontier_fraction"] is None
    assert p["stops_before_frontier"] == 2  # a stopped at 30 < 40, b never settled


def test_effort_against_uniform_is_a_ratio_of_sums_and_a_median_of_ratios() -> None:
    mine = [
        record("a", "x", 100, [stop(0.95, 30, 0.95, 10, 0)]),
        record("b", "x", 100, [stop(0.95, 10, 0.95, 10, 0)]),
        record("c", "x", 100, [stop(0.95, 90, 0.95, 10, 0)]),
    ]
    uniform = [
        record("a", "uniform", 100, [stop(0.95, 60, 0.95, 10, 0)]),
        record("b", "uniform", 100, [stop(0.95, 40, 0.95, 10, 0)]),
        record("c", "uniform", 100, [stop(0.95, 100, 0.95, 10, 0)]),
    ]
    e = calibration.effort(mine, uniform, 0.95)
    assert e["ratio_of_sums"] == pytest.approx(130 / 200)
    assert e["median_ratio"] == pytest.approx(0.5)  # ratios 0.5, 0.25, 0.9


def test_frontier_is_where_accuracy_reaches_the_target_and_stays() -> None:
    judged = [0, 10, 20, 30, 40, 50]
    assert calibration.frontier(judged, [0.8, 0.96, 0.9, 0.95, 0.97, 0.99], 0.95) == 30
    assert calibration.frontier(judged, [0.96] * 6, 0.95) == 0
    assert calibration.frontier(judged, [0.99, 0.99, 0.99, 0.99, 0.99, 0.9], 0.95) is None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("calibration") / "quick.json"
    code = main(
        [
            "bench",
            "calibration",
            "--quick",
            "--collections",
            "2",
            "--estimator",
            "uniform",
            "--estimator",
            "calibrated",
            "--workers",
            "1",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    return json.loads(out.read_text())


def test_quick_run_stops_are_consistent_with_the_claims(quick_run: dict) -> None:
    records = quick_run["records"]
    assert len(records) == 4
    for r in records:
        n_pairs = r["n_systems"] * (r["n_systems"] - 1) // 2
        judgments = [s["judgments"] for s in r["stops"]]
        assert judgments == sorted(judgments)  # a higher target never stops earlier
        for s in r["stops"]:
            assert s["pairs"] == n_pairs
            assert s["wrong"] == round((1 - s["accuracy"]) * n_pairs)
            complete = s["judgments"] == r["pool"]
            assert s["confidence"] >= s["target"] or complete
            assert sum(s["bins_count"]) == n_pairs
            assert s["expected_claimed"] == pytest.approx(n_pairs * (1 - s["confidence"]))
            if s["frontier"] is not None:
                assert s["frontier"] <= r["stops"][-1]["judgments"]
        # the whole-trajectory histogram counts every pair at every recorded point
        assert sum(r["trajectory_count"]) % n_pairs == 0
    summary = quick_run["summary"]["suite"]
    for target in ("0.90", "0.95", "0.99"):
        effort = summary["uniform"][target]["effort_vs_uniform"]
        assert effort["ratio_of_sums"] == pytest.approx(1.0)
        assert summary["calibrated"][target]["collections"] == 2


def test_a_lower_target_stop_read_from_the_trajectory_is_the_engines_own_stop(
    quick_run: dict,
) -> None:
    """Selection does not depend on the target, so running to 0.99 and reading the 0.95 stop
    gives what a loop aiming at 0.95 does: checked against the engine's stopping rule."""
    settings = calibration.suite_from_json(quick_run)[0]
    zoo = generate_zoo(settings)
    loaded = load_synthetic(zoo.collection, settings.scale)
    truth = loaded.judged_values
    for estimator in ("uniform", "calibrated"):
        engine, _ = engine_for_settings(
            loaded.collection,
            loaded.metadata,
            get_scale(settings.scale),
            estimator,
            measure=settings.measure,
            target=0.95,
        )
        while engine.stop_reason() is None:
            pairs = engine.select(1)
            engine.judge(pairs, truth[pairs])
            engine.learn_from_judgments()
        rec = next(
            r
            for r in quick_run["records"]
            if r["estimator"] == estimator and r["collection"] == settings.name
        )
        assert rec["batch"] == 1
        assert next(s for s in rec["stops"] if s["target"] == 0.95)["judgments"] == engine.n_judged


def test_calibration_bins_pool_the_records(quick_run: dict) -> None:
    bins = quick_run["summary"]["calibration_bins"]["uniform"]["stop 0.95"]
    total = sum(
        s["bins_count"][i]
        for r in quick_run["records"]
        if r["estimator"] == "uniform"
        for s in r["stops"]
        if s["target"] == 0.95
        for i in range(len(bins))
    )
    assert sum(b["count"] for b in bins) == total
    for b in bins:
        if b["count"]:
            assert b["low"] <= b["mean_confidence"] <= b["high"]
            assert 0.0 <= b["accuracy"] <= 1.0
    assert np.isclose(bins[0]["low"], 0.5)


def test_a_replay_is_reproducible_and_selections_set_the_batch(quick_run: dict) -> None:
    settings = calibration.suite_from_json(quick_run)[1]
    task = calibration.Task("uniform", "confidence", settings=settings)
    first, second = calibration.run_task(task), calibration.run_task(task)
    assert [s.judgments for s in first.stops] == [s.judgments for s in second.stops]
    assert [s.wrong for s in first.stops] == [s.wrong for s in second.stops]
    assert first.curve == second.curve
    # at most `selections` selections: 100 allows ceil(pool / 100) pairs per selection
    batched = calibration.run_task(
        calibration.Task("uniform", "confidence", settings=settings, selections=100)
    )
    assert batched.batch == -(-batched.pool // 100)
    assert batched.batch > 1
    assert all(
        s.judgments % batched.batch == 0 or s.judgments == batched.pool for s in batched.stops
    )


def test_to_complete_judges_the_whole_pool_and_keeps_the_stops(quick_run: dict) -> None:
    settings = calibration.suite_from_json(quick_run)[0]
    stopped = calibration.run_task(calibration.Task("uniform", "confidence", settings=settings))
    complete = calibration.run_task(
        calibration.Task("uniform", "confidence", settings=settings, to_complete=True)
    )
    assert complete.to_complete
    assert complete.curve[-1][0] == complete.pool
    assert complete.curve[-1][2] == 1.0  # every pair judged: the true order
    assert [s.judgments for s in complete.stops] == [s.judgments for s in stopped.stops]
    # with the whole pool judged, the accuracy settles at every target at the latest there
    assert all(s.frontier is not None for s in complete.stops)
    # "stays until the end" over a longer run can only come later
    for s, t in zip(stopped.stops, complete.stops, strict=True):
        if s.frontier is not None:
            assert t.frontier >= s.frontier


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--mirex", "{tmp}"], "no runs.tsv there"),
        (["--json", "{tmp}/missing/out.json"], "does not exist"),
        (["--plot", "{tmp}/out.txt"], "expected a .png or .svg file name"),
    ],
)
def test_bad_options_fail_before_any_replay(
    tmp_path, capsys: pytest.CaptureFixture[str], options: list[str], message: str
) -> None:
    argv = ["bench", "calibration", "--quick", "--collections", "1"]
    code = main(argv + [o.format(tmp=tmp_path) for o in options])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("mtcjudge: error: ")
    assert message in err
    assert "[1/" not in err  # no replay ran


def test_the_command_runs_its_replays_in_worker_processes(tmp_path) -> None:
    """``mtcjudge bench calibration --workers 2`` hands its tasks to spawned processes, which
    must be able to import the benchmark (they once could not, and the pool hung)."""
    import subprocess
    import sys

    out = tmp_path / "two.json"
    argv = ["bench", "calibration", "--quick", "--collections", "2", "--estimator", "uniform"]
    done = subprocess.run(
        [sys.executable, "-m", "mtcjudge.cli", *argv, "--workers", "2", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(out.read_text())["records"]) == 2


def test_ranges_select_the_suite_the_replays_run_on() -> None:
    """``--ranges issue23`` replays the third suite; the default is suites 0 and 1's ranges."""
    import argparse

    from bench.experiments.synthetic_zoo import suite_settings

    parser = argparse.ArgumentParser()
    calibration.add_arguments(parser)
    base = ["--collections", "3", "--estimator", "uniform"]
    for extra, ranges in (([], "issue11"), (["--ranges", "issue23"], "issue23")):
        args = parser.parse_args(base + extra)
        tasks = calibration.tasks_for(args)
        assert sorted(t.settings.index for t in tasks) == [0, 1, 2]
        assert args.suite == suite_settings(3, 0, ranges)
    with pytest.raises(SystemExit):
        parser.parse_args([*base, "--ranges", "issue99"])


def test_further_targets_are_read_from_the_same_replays(quick_run: dict, tmp_path) -> None:
    """``--target 0.97`` adds a stop between 0.95's and 0.99's and changes no other stop."""
    out = tmp_path / "between.json"
    argv = ["bench", "calibration", "--quick", "--collections", "2", "--workers", "1"]
    argv += ["--estimator", "uniform", "--estimator", "calibrated", "--target", "0.97"]
    assert main([*argv, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    assert payload["settings"]["targets"] == [0.9, 0.95, 0.97, 0.99]
    assert set(payload["summary"]["suite"]["uniform"]) == {"0.90", "0.95", "0.97", "0.99"}
    before = {(r["collection"], r["estimator"]): r["stops"] for r in quick_run["records"]}
    for r in payload["records"]:
        stops = {s["target"]: s for s in r["stops"]}
        assert [s["target"] for s in r["stops"]] == [0.9, 0.95, 0.97, 0.99]
        assert [s for s in r["stops"] if s["target"] != 0.97] == before[
            r["collection"], r["estimator"]
        ]
        assert stops[0.95]["judgments"] <= stops[0.97]["judgments"] <= stops[0.99]["judgments"]
        assert stops[0.97]["confidence"] >= 0.97 or stops[0.97]["judgments"] == r["pool"]


@pytest.mark.parametrize("value", ["0.995", "0.5", "high"])
def test_a_further_target_outside_the_replays_is_refused(
    capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "calibration", "--quick", "--collections", "1", "--target", value])
    assert exit_info.value.code == 2  # argparse's usage error, before any replay
    err = capsys.readouterr().err
    assert "argument --target" in err
    assert "[1/" not in err


def test_blends_replay_collections_made_of_the_mirex_runs(tmp_path) -> None:
    """``--blends N`` adds N blended collections of the ``--mirex`` directory's runs, summed in
    their own group; without ``--mirex`` it is a usage error."""
    from mtcjudge.mtc.synthetic import generate

    directory = tmp_path / "mirex"
    generate(18, 12, 5, n_genres=5, docs_per_genre=100, n_artists=50, seed=2).write(directory)
    out = tmp_path / "blends.json"
    argv = ["bench", "calibration", "--collections", "0", "--workers", "1", "--selections", "20"]
    argv += ["--estimator", "uniform", "--mirex", str(directory), "--blends", "2"]
    assert main([*argv, "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    kinds = [r["kind"] for r in payload["records"]]
    assert kinds.count("blend") == 2
    assert kinds.count("mirex") == 4
    assert payload["summary"]["blend"]["uniform"]["0.99"]["collections"] == 2
    assert len(payload["blends"]) == 2
    assert main(["bench", "calibration", "--collections", "0", "--blends", "1"]) == 2


def test_a_bench_variant_replays_joint_with_another_error_model(tmp_path, monkeypatch) -> None:
    """``--estimator joint-one-kappa`` replays the joint of before its variance strata: the
    same engine with ``variance_strata=0``, reported under the variant's name; the one κ is
    learnt by the bench's engine (bench.experiments.variants.OneKappaEngine)."""
    built = []
    classes = []

    def recording(real):
        def build(*args, **kwargs):
            engine, model = real(*args, **kwargs)
            built.append((args[3], engine.errors))
            classes.append((engine.errors.variance_strata, type(engine).__name__))
            return engine, model

        return build

    # the estimators' own engines, and the variants' (bench.experiments.variants)
    for name in ("build_engine", "build_engine_with_errors"):
        monkeypatch.setattr(calibration, name, recording(getattr(calibration, name)))
    out = tmp_path / "variant.json"
    argv = ["bench", "calibration", "--quick", "--collections", "1", "--workers", "1"]
    argv += ["--estimator", "joint", "--estimator", "joint-one-kappa", "--json", str(out)]
    assert main(argv) == 0
    records = {r["estimator"] for r in json.loads(out.read_text())["records"]}
    assert records == {"joint", "joint-one-kappa"}
    strata = sorted(errors.variance_strata for name, errors in built)
    assert [name for name, _ in built] == ["joint", "joint"]
    assert strata == [0, 5]
    assert sorted(classes) == [(0, "OneKappaEngine"), (5, "SystemEffectEngine")]
