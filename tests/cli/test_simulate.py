"""The researcher's command line: mtcjudge simulate / synthetic / bench engine."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from mtcjudge.cli import main
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR
from mtcjudge.mtc.synthetic import generate
from tests.cli import run


@pytest.fixture(scope="module")
def collection_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("synthetic")
    generate(6, 12, 5, n_genres=4, docs_per_genre=60, n_artists=40, seed=3).write(directory)
    return directory


def simulate_args(d: Path, *extra: str) -> list[str]:
    return [
        "simulate",
        "--runs",
        str(d / "runs.tsv"),
        "--judgments",
        str(d / "judgments-fine.tsv"),
        "--metadata",
        str(d / "metadata.tsv"),
        "--quiet",
        *extra,
    ]


def test_simulate_reports_effort_and_accuracy(collection_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "replay.json"
    plot = tmp_path / "replay.png"
    code, out, err = run(*simulate_args(collection_dir, "--json", str(report), "--plot", str(plot)))
    assert code == 0, err
    assert "judgments to target" in out
    assert "calibration at the stop" in out
    data = json.loads(report.read_text())
    for key in (
        "pool_size",
        "judgments_to_target",
        "fraction_judged",
        "final_confidence",
        "sign_accuracy",
        "kendall_tau",
        "mean_abs_error",
        "trajectory",
        "calibration",
    ):
        assert key in data
    assert 0 <= data["judgments_to_target"] <= data["pool_size"]
    assert data["fraction_judged"] == pytest.approx(data["judgments_to_target"] / data["pool_size"])
    assert data["final_confidence"] >= 0.95 or data["stop_reason"] == "complete"
    assert data["trajectory"][0]["judgments"] == 0
    n_pairs = 6 * 5 // 2
    assert sum(b["count"] for b in data["calibration"]) == n_pairs
    assert data["settings"]["model"] == DEFAULT_ESTIMATOR  # a new campaign's estimator
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_simulate_to_completion_recovers_the_true_ranking(
    collection_dir: Path, tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    code, _, err = run(
        *simulate_args(
            collection_dir,
            "--target",
            "1",
            "--model",
            "uniform",
            "--policy",
            "static",
            "--json",
            str(report),
        )
    )
    assert code == 0, err
    data = json.loads(report.read_text())
    assert data["sign_accuracy"] == 1.0
    assert data["kendall_tau"] == pytest.approx(1.0)
    assert data["mean_abs_error"] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize(
    ("measure", "label"), [("dcg", "MIREX nDCG@5"), ("ndcg", "trec_eval nDCG@5"), ("rbp", "RBP@5")]
)
def test_simulate_other_measures_and_batches(
    collection_dir: Path, tmp_path: Path, measure: str, label: str
) -> None:
    report = tmp_path / "r.json"
    code, out, err = run(
        *simulate_args(
            collection_dir,
            "--measure",
            measure,
            "--batch",
            "4",
            "--seed",
            "2",
            "--json",
            str(report),
        )
    )
    assert code == 0, err
    assert label in out
    data = json.loads(report.read_text())
    assert data["settings"]["batch"] == 4
    # every round but the last judges a whole batch
    steps = [t["judgments"] for t in data["trajectory"]]
    assert all(b - a == 4 for a, b in itertools.pairwise(steps[:-1]))


def test_simulate_svg_plot(collection_dir: Path, tmp_path: Path) -> None:
    plot = tmp_path / "replay.svg"
    code, _, err = run(
        *simulate_args(
            collection_dir, "--plot", str(plot), "--model", "uniform", "--max-judgments", "20"
        )
    )
    assert code == 0, err
    assert "<svg" in plot.read_text()


def test_simulate_broad_scale(collection_dir: Path) -> None:
    code, out, err = run(
        "simulate",
        "--runs",
        str(collection_dir / "runs.tsv"),
        "--judgments",
        str(collection_dir / "judgments-broad.tsv"),
        "--scale",
        "broad",
        "--quiet",
    )
    assert code == 0, err
    assert "BROAD" in out
    assert f"estimator {DEFAULT_ESTIMATOR} (the default)" in out  # a new campaign's estimator


def test_progress_bar_goes_to_stderr(collection_dir: Path) -> None:
    args = [a for a in simulate_args(collection_dir) if a != "--quiet"]
    code, out, err = run(*args, "--model", "uniform", "--target", "0.99")
    assert code == 0
    assert "confidence" in err
    assert "[" not in out.splitlines()[0]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("runs", "judgments", "message"),
    [
        ("A\tq1\td1\nA\tq1\nB\tq1\td2\n", "q1\td1\t50\nq1\td2\t40\n", r"runs\.tsv:2:"),
        (
            "q1 Q0 d1 1 1.0 A\nq1 Q0 d2 1 0.9 A\nq1 Q0 d3 1 1.0 B\n",
            "q1\td1\t1\n",
            r"runs\.tsv:2:.*rank",
        ),
        ("A\tq1\td1\nB\tq1\td2\n", "q1\td1\t50\nq1\td2\t140\n", r"judgments\.tsv:2:.*FINE"),
        (
            "A\tq1\td1\nB\tq1\td2\n",
            "q1\td1\t50\n",
            r"judgments\.tsv: 1 run pairs have no "
            r"judgment.*query q1 doc d2",
        ),
    ],
    ids=["ragged", "duplicate-rank", "out-of-scale", "missing-judgment"],
)
def test_bad_input_exits_2_with_file_and_line(
    tmp_path: Path, runs: str, judgments: str, message: str
) -> None:
    r = write(tmp_path / "runs.tsv", runs)
    j = write(tmp_path / "judgments.tsv", judgments)
    code, out, err = run("simulate", "--runs", str(r), "--judgments", str(j), "--quiet")
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert err.startswith("mtcjudge: error: ")
    assert re.search(message, err), err


def test_missing_file_and_bad_plot_name(collection_dir: Path, tmp_path: Path) -> None:
    code, _, err = run(
        "simulate",
        "--runs",
        str(tmp_path / "nope.tsv"),
        "--judgments",
        str(collection_dir / "judgments-fine.tsv"),
    )
    assert code == 2
    assert "nope.tsv" in err
    code, _, err = run(*simulate_args(collection_dir, "--plot", str(tmp_path / "x.jpg")))
    assert code == 2
    assert ".png or .svg" in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--target", "1.5"],
        ["--batch", "0"],
        ["--measure", "map"],
        ["--k", "x"],
        ["--volunteers", "-1"],
        ["--selection", "fastest"],
    ],
)
def test_bad_options_exit_2(
    collection_dir: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(simulate_args(collection_dir, *extra))
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_synthetic_command_writes_a_collection(tmp_path: Path) -> None:
    code, out, _ = run("synthetic", str(tmp_path / "c"), "--systems", "4", "--queries", "5")
    assert code == 0
    for name in ("runs.tsv", "judgments-fine.tsv", "judgments-broad.tsv", "metadata.tsv"):
        assert (tmp_path / "c" / name).stat().st_size > 0
    assert "runs" in out


def test_simulate_with_the_system_effect_estimator(collection_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, _, err = run(
        *simulate_args(collection_dir, "--model", "calibrated", "--json", str(report))
    )
    assert code == 0, err
    data = json.loads(report.read_text())
    assert data["settings"]["system_effect"] is True
    assert data["settings"]["m_jud"] is False
    assert data["final_confidence"] >= 0.95 or data["stop_reason"] == "complete"


@pytest.mark.parametrize(
    ("option", "name"), [("--plot", "x.png"), ("--json", "x.json")], ids=["plot", "json"]
)
def test_an_output_in_a_missing_directory_fails_before_the_replay(
    collection_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, name: str
) -> None:
    def no_replay(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the replay ran before the output was checked")

    monkeypatch.setattr("mtcjudge.cli.simulate.replay", no_replay)
    missing = tmp_path / "missing-dir" / name
    code, out, err = run(*simulate_args(collection_dir, option, str(missing)))
    assert (code, out) == (2, "")
    assert err == (
        f"mtcjudge: error: {option}: {missing}: the directory {missing.parent} does not exist\n"
    )


def test_a_replay_stopped_before_any_judgment_says_why_and_still_draws(
    collection_dir: Path, tmp_path: Path
) -> None:
    plot = tmp_path / "replay.svg"
    # the ordinal model (M_out) claims 0.5 before any judgment; the campaigns' default
    # never stops before 2 x systems judgments
    args = simulate_args(collection_dir, "--model", "ordinal", "--target", "0.5")
    code, out, err = run(*args, "--plot", str(plot))
    assert code == 0, err
    assert "judgments to target      0 (0.0 %)" in out
    assert "Nothing had to be judged: before any judgment, the estimates alone" in out
    svg = plot.read_text()
    assert "stopped before any judgment" in svg  # matplotlib keeps texts as comments


def test_the_readme_example_on_synthetic_output(tmp_path: Path) -> None:
    """The README's replay (ordinal models) on ``mtcjudge synthetic`` output, as a user runs it.

    On this collection the published M_out alone claims the target before any judgment (and
    its sign accuracy at 0 judgments bears that out): the replay says so instead of a bare
    "0 judgments", and the plot shows the point where it stopped.
    """
    assert run("synthetic", str(tmp_path / "c"))[0] == 0
    plot = tmp_path / "replay.svg"
    code, out, err = run(
        "simulate", "--runs", str(tmp_path / "c" / "runs.tsv"),
        "--judgments", str(tmp_path / "c" / "judgments-fine.tsv"),
        "--metadata", str(tmp_path / "c" / "metadata.tsv"),
        "--scale", "fine", "--measure", "cg", "--model", "ordinal", "--policy", "confidence",
        "--target", "0.95", "--json", str(tmp_path / "replay.json"), "--plot", str(plot),
    )  # fmt: skip
    assert code == 0, err
    data = json.loads((tmp_path / "replay.json").read_text())
    assert data["settings"]["metadata"] is not None
    assert data["initial_confidence"] > 0.5  # the metadata matched: M_out applied
    if data["judgments_to_target"] == 0:
        assert data["initial_confidence"] >= 0.95
        assert "Nothing had to be judged" in out
        assert "stopped before any judgment" in plot.read_text()
    else:
        assert len(data["trajectory"]) > 1


def test_progress_in_a_log_is_periodic_lines_ending_where_the_replay_stopped(
    collection_dir: Path, tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    args = [a for a in simulate_args(collection_dir) if a != "--quiet"]
    code, _, err = run(*args, "--model", "uniform", "--json", str(report))
    assert code == 0
    judged = json.loads(report.read_text())["judgments_to_target"]
    assert judged > 1
    lines = err.splitlines()
    assert "\r" not in err
    assert re.fullmatch(
        rf"simulate: judged {judged} of \d+ pairs, confidence 0\.9\d+ \(target 0\.95\), "
        r"\d+\.\d s",
        lines[-1],
    )


def test_progress_lines_come_every_interval_not_at_the_first_call() -> None:
    import io

    from mtcjudge.cli.progress import LOG_INTERVAL, ProgressBar

    now = [100.0]
    log = io.StringIO()
    bar = ProgressBar(log, 6924, 0.95, clock=lambda: now[0])
    for judged in range(1, 13):
        now[0] += 1.0
        bar(judged, 0.6 + judged / 100)
    bar.close()
    lines = log.getvalue().splitlines()
    assert LOG_INTERVAL == 5.0
    assert [line.split(",")[0] for line in lines] == [
        "simulate: judged 5 of 6924 pairs",
        "simulate: judged 10 of 6924 pairs",
        "simulate: judged 12 of 6924 pairs",
    ]
    assert lines[-1].endswith("confidence 0.7200 (target 0.95), 12.0 s")


def test_option_checks_are_the_engines(collection_dir: Path, capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit):
        main(simulate_args(collection_dir, "--k", "0"))
    assert "argument --k: k must be an integer >= 1, found 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(simulate_args(collection_dir, "--target", "1.5"))
    assert "must be a confidence between 0.5 and 1, found 1.5" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option", ["--system-effect", "--no-m-jud", "--calibrate-variance", "--refit-every=5"]
)
def test_the_experiment_switches_are_not_options_of_simulate(
    collection_dir: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """simulate runs an estimator by its name, as a campaign does; the switches that spelled
    experimental variants are the replay experiments of bench/experiments."""
    with pytest.raises(SystemExit) as exited:
        run(*simulate_args(collection_dir, option))
    assert exited.value.code == 2
    assert f"unrecognized arguments: {option}" in capsys.readouterr().err


def test_the_json_gives_the_listening_hours_to_the_target_and_the_time_model(
    collection_dir: Path, tmp_path: Path
) -> None:
    report = tmp_path / "r.json"
    code, out, err = run(*simulate_args(collection_dir, "--json", str(report), "--volunteers", "3"))
    assert code == 0, err
    data = json.loads(report.read_text())
    volunteers = data["volunteers"]
    assert 0 < data["listening_hours_to_target"] < data["hours_to_target"]
    assert data["hours_to_target"] == pytest.approx(volunteers["hours"])
    assert len(volunteers["volunteers"]) == 3
    assert sum(v["judgments"] for v in volunteers["volunteers"]) == volunteers["judgments"]
    # what the hours rest on, stated
    model = volunteers["time_model"]
    assert (model["selection"], model["volunteers"], model["decision_seconds"]) == ("cost", 3, 10)
    assert volunteers["full_pool_hours"] > data["hours_to_target"]
    assert "hours to target" in out
    assert "judging the whole pool" in out


def test_no_volunteers_no_hours(collection_dir: Path, tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, out, _ = run(*simulate_args(collection_dir, "--json", str(report), "--volunteers", "0"))
    assert code == 0
    data = json.loads(report.read_text())
    assert data["listening_hours_to_target"] is None
    assert data["volunteers"] is None
    assert "hours to target" not in out
