"""``mtcjudge evaluate``: the outputs' shapes, files written, and bad input as one line with
exit status 2."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from mtcjudge.cli import main as cli_main
from tests.cli import run
from tests.evaluation.support import write_ground_truth, write_qrels, write_trec_runs

MEASURES = ["cg@5", "dcg@5", "ndcg@5", "rbp@5", "p@5", "recall@5", "recall", "ap", "rr", "judged@5"]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Three systems on three BROAD queries; C is best, A worst, and A skips q3."""
    lists = {
        "A": {"q1": ["d1", "d2"], "q2": ["d4"]},
        "B": {"q1": ["d2", "d1"], "q2": ["d5", "d4"], "q3": ["d7"]},
        "C": {"q1": ["d3", "d2"], "q2": ["d5"], "q3": ["d6", "d7"]},
    }
    grades = [("q1", "d1", 0), ("q1", "d2", 1), ("q1", "d3", 2), ("q2", "d4", 0),
              ("q2", "d5", 2), ("q3", "d6", 2), ("q3", "d7", 1)]  # fmt: skip
    return write_trec_runs(tmp_path / "runs.txt", lists), write_qrels(tmp_path / "q.txt", grades)


def test_default_is_a_table_with_a_legend(files) -> None:
    status, out, err = run("evaluate", "--runs", files[0], "--judgments", files[1])
    assert status == 0, err
    assert "BROAD scale, detected from the grades" in err
    lines = out.splitlines()
    assert lines[0].startswith("mtcjudge evaluate: 3 systems, 3 queries, qrels BROAD")
    assert lines[2].split() == ["system", "answered", *MEASURES]
    # A's CG@5: (0 + 1) / (5 * 2) on q1, 0 on q2 and on the unanswered q3
    assert lines[3].split()[:3] == ["A", "2/3", "0.0333"]
    assert "dcg@5 = MIREX nDCG@5 (all-maximum normalisation)" in out
    assert "ndcg@5 = trec_eval nDCG@5 (ideal ordering of the qrels)" in out


def test_csv_per_query_has_a_row_per_system_and_query_then_the_mean(files) -> None:
    status, out, _ = run("evaluate", "--runs", files[0], "--judgments", files[1], "--k", "2",
                         "--format", "csv", "--per-query")  # fmt: skip
    assert status == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["system", "query", "answered", "cg@2", "dcg@2", "ndcg@2", "rbp@2",
                             "p@2", "recall@2", "recall", "ap", "rr", "judged@2"]  # fmt: skip
    assert [(r["system"], r["query"], r["answered"]) for r in rows[:4]] == [
        ("A", "q1", "1"), ("A", "q2", "1"), ("A", "q3", "0"), ("A", "all", "2"),
    ]  # fmt: skip
    by_key = {(r["system"], r["query"]): r for r in rows}
    assert float(by_key["A", "q3"]["cg@2"]) == 0.0
    assert float(by_key["C", "q1"]["cg@2"]) == pytest.approx(3 / 4)
    assert float(by_key["C", "all"]["ndcg@2"]) == pytest.approx(
        sum(float(by_key["C", q]["ndcg@2"]) for q in ("q1", "q2", "q3")) / 3
    )


def test_json_carries_definitions_conventions_and_every_analysis(files) -> None:
    status, out, _ = run("evaluate", "--runs", files[0], "--judgments", files[1], "--format",
                         "json", "--per-query", "--mirex", "--significance")  # fmt: skip
    assert status == 0
    document = json.loads(out)
    assert document["scale"] == "broad"
    assert document["scale_detected"] is True
    assert document["relevance_threshold"] == 1.0
    assert document["queries"] == {"evaluated": 3, "qrels": 3, "ground_truth": 0, "ignored": []}
    assert list(document["measure_definitions"]) == MEASURES
    assert document["measure_definitions"]["dcg@5"]["name"].startswith("MIREX nDCG@k")
    assert document["measure_definitions"]["ndcg@5"]["trec_eval"] == "ndcg_cut.5"
    assert "trec_eval -c" in document["conventions"]["queries"]
    assert [s["system"] for s in document["systems"]] == ["A", "B", "C"]
    assert document["systems"][0]["answered"] == 2
    assert list(document["systems"][0]["measures"]) == MEASURES
    assert len(document["per_query"]) == 9
    assert document["mirex"]["measure"] == "cg@5"
    assert document["mirex"]["systems"][0]["system"] == "C"  # best mean rank first
    assert {p["verdict"] for p in document["significance"]["pairs"]} <= {
        "a_better", "b_better", "not_different", "undecided"
    }  # fmt: skip
    assert [(p["system_a"], p["system_b"]) for p in document["significance"]["pairs"]] == [
        ("A", "B"), ("A", "C"), ("B", "C"),
    ]  # fmt: skip


def test_out_picks_the_format_from_the_suffix_and_csv_analyses_go_beside(
    files, tmp_path: Path
) -> None:
    target = tmp_path / "scores.json"
    status, out, err = run("evaluate", "--runs", files[0], "--judgments", files[1], "--out", target)
    assert status == 0
    assert out == ""
    assert json.loads(target.read_text())["k"] == 5
    target = tmp_path / "scores.csv"
    status, _, err = run("evaluate", "--runs", files[0], "--judgments", files[1], "--out", target,
                         "--mirex", "--significance")  # fmt: skip
    assert status == 0, err
    assert target.read_text().startswith("system,query,answered,cg@5")
    mirex = list(csv.DictReader(io.StringIO((tmp_path / "scores-mirex.csv").read_text())))
    assert [r["system"] for r in mirex] == ["C", "B", "A"]
    assert list(mirex[0]) == ["system", "mean", "mean_rank", "group"]
    significance = (tmp_path / "scores-significance.csv").read_text().splitlines()
    assert significance[0].startswith("system_a,system_b,mean_difference,verdict,rule,final")
    assert len(significance) == 4
    assert "scores-significance.csv" in err


def test_ground_truth_alone_gives_adr(files, tmp_path: Path) -> None:
    truth = write_ground_truth(tmp_path / "truth.txt", {"q1": [["d3"], ["d2"]]})
    status, out, err = run("evaluate", "--runs", files[0], "--ground-truth", truth,
                           "--format", "csv")  # fmt: skip
    assert status == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["system", "query", "answered", "adr"]
    # C: d3 then d2, perfect; A: d1, d2: (0 + 1/2) / 2
    assert [float(r["adr"]) for r in rows] == pytest.approx([0.25, 0.25, 1.0])
    assert "2 queries of the runs are in no judgment file and not evaluated" in err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: ("--runs", d / "absent", "--judgments", d / "q.txt"), r"absent: no such file"),
        (lambda d: ("--runs", d / "runs.txt"), "give --judgments, --ground-truth or both"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "bad.txt"),
         r"bad.txt:2: expected 3 tab-separated fields|bad.txt:2: expected 4 whitespace"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--scale", "fine",
                    "--threshold", "0"), "--threshold must be above 0 and at most 100"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "three.txt", "--scale", "broad"),
         r"three.txt:1: BROAD scores must be 0, 1 or 2, found 3"),
        (lambda d: ("--runs", d / "other.txt", "--judgments", d / "q.txt"),
         r"other.txt: system Z answers none of the 3 queries of .*q.txt"),
        (lambda d: ("--runs", d / "runs.txt", "--ground-truth", d / "t.txt", "--significance"),
         "--significance works on cg@k: it needs --judgments"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--format", "csv",
                    "--mirex"), "CSV holds one table"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--mirex",
                    "--measure", "adr"), "--measure must be one of the computed measures"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--measure", "ap"),
         "--measure chooses the measure of the MIREX analysis: add --mirex"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "one.txt", "--mirex"),
         "the MIREX analysis needs at least 2 systems and 2 queries"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--alpha", "1.5"),
         "--alpha must be between 0 and 1"),
        (lambda d: ("--runs", d / "runs.txt", "--judgments", d / "q.txt", "--out",
                    d / "missing" / "x.csv"), "the directory .*missing does not exist"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_status_2(files, tmp_path: Path, make, message) -> None:
    (tmp_path / "bad.txt").write_text("q1 0 d1 1\nq1 0 d2\n")
    (tmp_path / "three.txt").write_text("q1 0 d1 3\n")
    (tmp_path / "one.txt").write_text("q1 0 d1 1\n")
    write_trec_runs(tmp_path / "other.txt", {"Y": {"q1": ["d1"]}, "Z": {"elsewhere": ["d1"]}})
    write_ground_truth(tmp_path / "t.txt", {"q1": [["d1"]]})
    status, out, err = run("evaluate", *make(tmp_path))
    assert status == 2
    assert out == ""
    assert err.startswith("mtcjudge: error: ")
    assert err.count("\n") == 1
    assert re.search(message, err), err


def test_an_unknown_scale_is_a_usage_error(files, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli_main(
            ["evaluate", "--runs", str(files[0]), "--judgments", str(files[1]), "--scale", "x"]
        )
    assert exit_info.value.code == 2
    assert "argument --scale: invalid choice: 'x'" in capsys.readouterr().err


def test_a_failed_run_leaves_no_file(files, tmp_path: Path) -> None:
    target = tmp_path / "scores.csv"
    status, _, _ = run("evaluate", "--runs", files[0], "--judgments", tmp_path / "absent.txt",
                       "--out", target)  # fmt: skip
    assert status == 2
    assert list(tmp_path.glob("*scores*")) == []
