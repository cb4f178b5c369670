"""Average Dynamic Recall through ``evaluate`` against the worked examples of its paper
(Typke, Veltkamp and Wiering, section 3 and 4), and the ground-truth reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mtcjudge.evaluation.ground_truth import GroundTruth, read_ground_truth
from mtcjudge.evaluation.service import evaluate_files, mirex_analysis
from mtcjudge.ingest.formats import InputError
from mtcjudge.mtc.adr import adr_partial_order
from tests.evaluation.support import write_ground_truth, write_qrels, write_trec_runs

# Section 3: ground truth <(1, 2), (3, 4, 5)>, result <2, 3, 1, 5, 7, 8, 9, 4>, ADR 0.86;
# with a false positive at rank 2, <2, 10, 3, 1, 5, 7, 8, 9, 4>, ADR 0.7433.
GROUPS = [["1", "2"], ["3", "4", "5"]]
RESULT = ["2", "3", "1", "5", "7", "8", "9", "4"]
WITH_FALSE_POSITIVE = ["2", "10", "3", "1", "5", "7", "8", "9", "4"]


@pytest.fixture
def paper(tmp_path: Path) -> tuple[Path, Path]:
    runs = write_trec_runs(
        tmp_path / "runs.txt",
        {"plain": {"q": RESULT}, "false_positive": {"q": WITH_FALSE_POSITIVE}},
    )
    return runs, write_ground_truth(tmp_path / "truth.txt", {"q": GROUPS})


def test_the_papers_two_results(paper) -> None:
    result = evaluate_files(paper[0], ground_truth_path=paper[1])
    assert result.systems == ["false_positive", "plain"]
    assert result.columns == ["adr"]
    adr = result.per_query["adr"][:, 0]
    assert adr[1] == pytest.approx(0.86)
    assert round(float(adr[0]), 4) == 0.7433


def test_the_papers_table_of_dynamic_recall_by_position() -> None:
    """Recall after each of the first 5 positions: 1, 0.5, 1, 1, 0.8 (the table of section 3);
    ADR over the first i ranks times i is their running sum."""
    recalls = [1, 0.5, 1, 1, 0.8]
    for i in range(1, 6):
        assert adr_partial_order(GROUPS, RESULT, k=i) * i == pytest.approx(sum(recalls[:i]))


def test_the_papers_tie_that_adr_cannot_break(tmp_path: Path) -> None:
    """Section 4: against <(1), (2), (3), (4)>, <4, 3, 5, 6> and <3, 4, 5, 6> score the same,
    although 3 should come before 4: (0 + 0 + 1/3 + 2/4) / 4."""
    runs = write_trec_runs(
        tmp_path / "runs.txt",
        {"four_first": {"q": ["4", "3", "5", "6"]}, "three_first": {"q": ["3", "4", "5", "6"]}},
    )
    truth = write_ground_truth(tmp_path / "truth.txt", {"q": [["1"], ["2"], ["3"], ["4"]]})
    adr = evaluate_files(runs, ground_truth_path=truth).per_query["adr"][:, 0]
    assert adr.tolist() == pytest.approx([(1 / 3 + 2 / 4) / 4] * 2)


def test_adr_with_qrels_covers_each_files_queries(paper, tmp_path: Path) -> None:
    """Graded measures on the qrels' queries, ADR on the ground truth's: a query of one file
    only has no value for the other's measures (NaN), and the means skip it."""
    runs = write_trec_runs(
        tmp_path / "runs2.txt",
        {
            "plain": {"q": RESULT, "r": ["x"]},
            "false_positive": {"q": WITH_FALSE_POSITIVE, "r": ["y"]},
        },
    )
    qrels = write_qrels(tmp_path / "qrels.txt", [("r", "x", 2)])
    result = evaluate_files(runs, qrels, paper[1], k=1)
    assert result.queries == ["q", "r"]
    assert result.qrels_queries == ["r"]
    assert result.ground_truth_queries == ["q"]
    assert np.isnan(result.per_query["cg@1"][:, 0]).all()  # q: not in the qrels
    assert np.isnan(result.per_query["adr"][:, 1]).all()  # r: not in the ground truth
    assert result.means()["cg@1"].tolist() == [0.0, 1.0]
    assert result.means()["adr"][1] == pytest.approx(0.86)
    with pytest.raises(ValueError, match="needs at least 2 systems and 2 queries, found 2 sys"):
        mirex_analysis(result, "adr")


def test_an_unanswered_ground_truth_query_scores_zero(paper, tmp_path: Path) -> None:
    truth = write_ground_truth(tmp_path / "truth2.txt", {"q": GROUPS, "z": [["1"]]})
    result = evaluate_files(paper[0], ground_truth_path=truth)
    assert result.per_query["adr"][:, 1].tolist() == [0.0, 0.0]
    assert result.means()["adr"][1] == pytest.approx(0.43)


def test_reader_orders_groups_by_rank_and_skips_a_header(tmp_path: Path) -> None:
    path = tmp_path / "truth.txt"
    path.write_text("query group_rank document\n# comment\nq 3 c\nq 1 a\nq 1 b\n\nq 3 d\np 1 e\n")
    assert read_ground_truth(path) == GroundTruth({"p": [["e"]], "q": [["a", "b"], ["c", "d"]]})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q 1 a\nq 1\n", r"truth.txt:2: expected 3 whitespace-separated fields .* found 2"),
        ("q 1 a\nq one b\n", r"truth.txt:2: group_rank must be a positive integer .* 'one'"),
        ("q 0 a\n", r"truth.txt:1: group_rank must be a positive integer"),
        (
            "q 1 a\nq 2 a\n",
            r"truth.txt:2: document a is listed twice for query q \(first at line 1\)",
        ),
        ("# nothing\n\n", r"truth.txt: empty file \(no data lines\)"),
        (b"q 1 \xff\n", r"truth.txt:1: not a UTF-8 text file"),
    ],
)
def test_reader_errors_name_file_line_and_field(tmp_path: Path, text, message) -> None:
    path = tmp_path / "truth.txt"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_ground_truth(path)


def test_reader_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        read_ground_truth(tmp_path / "absent.txt")
