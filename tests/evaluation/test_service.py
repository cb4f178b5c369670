"""evaluate_files on hand-computed examples: every measure, the conventions for unjudged
documents and unanswered queries, the scale, several judgments of a pair."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mtcjudge.evaluation.service import (
    evaluate_files,
    mirex_analysis,
    significance_rules,
    tukey_groups,
)
from mtcjudge.ingest.formats import InputError
from tests.evaluation.support import write_qrels, write_trec_runs

LOG3 = math.log2(3)

# q1: a=100, b=50, c=0, d=80; q2: e=30. S1 ranks b, x (unjudged), a, d on q1 and skips q2.
QRELS = [("q1", "a", 100), ("q1", "b", 50), ("q1", "c", 0), ("q1", "d", 80), ("q2", "e", 30)]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    runs = write_trec_runs(
        tmp_path / "runs.txt",
        {"S1": {"q1": ["b", "x", "a", "d"]}, "S2": {"q1": ["a", "d", "b"], "q2": ["e"]}},
    )
    return runs, write_qrels(tmp_path / "qrels.txt", QRELS)


def test_every_measure_of_a_list_with_an_unjudged_document(files) -> None:
    result = evaluate_files(*files, k=3)
    s1 = {c: float(v[0, 0]) for c, v in result.per_query.items()}
    # top 3 gains 50, 0 (x is unjudged), 100
    assert s1["cg@3"] == pytest.approx(150 / 300)
    dcg = 50 + 0 / LOG3 + 100 / 2
    assert s1["dcg@3"] == pytest.approx(dcg / (100 * (1 + 1 / LOG3 + 1 / 2)))
    # ideal ordering of q1's judgments: 100, 80, 50
    assert s1["ndcg@3"] == pytest.approx(dcg / (100 + 80 / LOG3 + 50 / 2))
    assert s1["rbp@3"] == pytest.approx((50 + 0.64 * 100) / (100 + 0.8 * 80 + 0.64 * 50))
    # relevant (>= 50): a, b, d; the list has them at ranks 1, 3 and 4
    assert s1["p@3"] == pytest.approx(2 / 3)
    assert s1["recall@3"] == pytest.approx(2 / 3)
    assert s1["recall"] == pytest.approx(1.0)
    assert s1["ap"] == pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 3)
    assert s1["rr"] == pytest.approx(1.0)
    assert s1["judged@3"] == pytest.approx(2 / 3)


def test_an_unanswered_query_scores_zero_and_counts_in_the_mean(files) -> None:
    result = evaluate_files(*files, k=3)
    assert result.queries == ["q1", "q2"]
    assert result.answered.tolist() == [[True, False], [True, True]]
    means = result.means()
    for column in result.columns:
        assert result.per_query[column][0, 1] == 0.0
        assert means[column][0] == pytest.approx(result.per_query[column][0, 0] / 2)
    assert result.answered_counts().tolist() == [1, 2]


def test_a_perfect_list_and_a_query_without_relevant_documents(files) -> None:
    result = evaluate_files(*files, k=3)
    s2 = {c: v[1].tolist() for c, v in result.per_query.items()}
    # S2 on q1 is the ideal ordering; on q2 it finds e (30: judged, not relevant)
    assert s2["ndcg@3"][0] == pytest.approx(1.0)
    assert s2["rbp@3"][0] == pytest.approx(1.0)
    assert s2["ap"][0] == pytest.approx(1.0)
    assert s2["cg@3"][1] == pytest.approx(30 / 300)
    assert s2["ndcg@3"][1] == pytest.approx(1.0)  # e is q2's best judged document
    assert [s2[c][1] for c in ("p@3", "recall@3", "recall", "ap", "rr")] == [0, 0, 0, 0, 0]
    assert s2["judged@3"][1] == 1.0


def test_threshold_changes_only_the_classic_measures(files) -> None:
    low = evaluate_files(*files, k=3, threshold=30)
    high = evaluate_files(*files, k=3)
    assert low.per_query["rr"][1, 1] == 1.0  # e (30) is relevant now
    for column in ("cg@3", "dcg@3", "ndcg@3", "rbp@3", "judged@3"):
        np.testing.assert_array_equal(low.per_query[column], high.per_query[column])


@pytest.mark.parametrize("threshold", [0, -1, 100.5, float("nan")])
def test_a_threshold_outside_the_scale_is_refused(files, threshold) -> None:
    with pytest.raises(ValueError, match="--threshold must be above 0 and at most 100"):
        evaluate_files(*files, threshold=threshold)


def test_the_scale_is_detected_from_the_grades(tmp_path: Path) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a", "b"]}, "T": {"q": ["b"]}})
    broad = write_qrels(tmp_path / "broad.txt", [("q", "a", 2), ("q", "b", 1)])
    result = evaluate_files(runs, broad, k=2)
    assert (result.scale, result.scale_detected, result.threshold) == ("broad", True, 1.0)
    assert result.per_query["cg@2"][0, 0] == pytest.approx(3 / 4)
    # the same grades read as FINE are tiny
    fine = evaluate_files(runs, broad, k=2, scale="fine")
    assert (fine.scale, fine.scale_detected, fine.threshold) == ("fine", False, 50.0)
    assert fine.per_query["cg@2"][0, 0] == pytest.approx(3 / 200)


def test_a_grade_on_no_scale_names_the_file_and_line(tmp_path: Path) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a"]}})
    qrels = write_qrels(tmp_path / "qrels.txt", [("q", "a", 2), ("q", "b", 150)])
    with pytest.raises(InputError, match=r"qrels.txt:2: .*found 150 \(without --scale"):
        evaluate_files(runs, qrels)
    with pytest.raises(InputError, match=r"qrels.txt:2: BROAD scores must be 0, 1 or 2"):
        evaluate_files(runs, qrels, scale="broad")


def test_several_judgments_of_a_pair_count_as_their_mean_rounded_half_up_on_broad(
    tmp_path: Path,
) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a"]}})
    qrels = write_qrels(tmp_path / "qrels.txt", [("q", "a", 1), ("q", "a", 2)])
    assert evaluate_files(runs, qrels, k=1).per_query["cg@1"][0, 0] == 1.0  # 1.5 -> 2, of 2
    fine = evaluate_files(runs, qrels, k=1, scale="fine")
    assert fine.per_query["cg@1"][0, 0] == pytest.approx(0.015)  # 1.5 of 100


def test_queries_only_the_runs_know_are_ignored(tmp_path: Path) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a"], "extra": ["a"]}})
    result = evaluate_files(runs, write_qrels(tmp_path / "q.txt", [("q", "a", 100)]), k=1)
    assert result.queries == ["q"]
    assert result.ignored_queries == ["extra"]
    assert result.means()["cg@1"].tolist() == [1.0]


def test_a_system_that_answers_no_judged_query_is_an_error(tmp_path: Path) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a"]}, "T": {"other": ["a"]}})
    qrels = write_qrels(tmp_path / "qrels.txt", [("q", "a", 100)])
    with pytest.raises(InputError, match=r"runs.txt: system T answers none of the 1 queries"):
        evaluate_files(runs, qrels)


def test_nothing_to_score_against(tmp_path: Path) -> None:
    runs = write_trec_runs(tmp_path / "runs.txt", {"S": {"q": ["a"]}})
    with pytest.raises(ValueError, match="give --qrels, --ground-truth or both"):
        evaluate_files(runs)


def test_a_cut_off_beyond_the_lists(files) -> None:
    result = evaluate_files(*files, k=10)
    # S2's q2 list has one document: CG@10 divides by 10 documents all the same (MIREX)
    assert result.per_query["cg@10"][1, 1] == pytest.approx(30 / 1000)
    assert result.per_query["p@10"][1, 0] == pytest.approx(3 / 10)
    assert result.per_query["judged@10"][0, 0] == pytest.approx(3 / 4)


def test_mirex_analysis_on_the_method_example(tmp_path: Path) -> None:
    """docs/method.md §6's 6 queries x systems A, B, C as CG@1 on FINE (grade = 50 x the
    example's score): the per-query scores are the example's halved, which changes no rank."""
    scores = [[1.2, 1.0, 0.8], [0.6, 0.8, 0.4], [1.4, 1.0, 1.2],
              [1.0, 0.6, 0.6], [0.8, 0.4, 0.2], [1.6, 1.2, 1.4]]  # fmt: skip
    lists: dict[str, dict[str, list[str]]] = {s: {} for s in "ABC"}
    grades = []
    for q, row in enumerate(scores):
        for system, value in zip("ABC", row, strict=True):
            doc = f"{system}{q}"
            lists[system][f"q{q}"] = [doc]
            grades.append((f"q{q}", doc, value * 50))
    runs = write_trec_runs(tmp_path / "runs.txt", lists)
    result = evaluate_files(runs, write_qrels(tmp_path / "q.txt", grades), k=1, scale="fine")
    mirex = mirex_analysis(result, "cg@1")
    assert mirex.n_queries == 6
    assert mirex.analysis.mean_ranks.round(4).tolist() == [2.8333, 1.75, 1.4167]
    assert round(mirex.analysis.chi2, 4) == 6.8696
    # A differs from C only: groups A (A, B) and B (B, C)
    assert mirex.groups == ["A", "AB", "B"]
    with pytest.raises(ValueError, match="--measure must be one of the computed measures"):
        mirex_analysis(result, "adr")


def test_tukey_groups_of_distinct_and_indistinguishable_systems() -> None:
    apart = ~np.eye(3, dtype=bool)
    assert tukey_groups(np.array([1.0, 3.0, 2.0]), apart) == ["C", "A", "B"]
    assert tukey_groups(np.array([1.0, 3.0, 2.0]), np.zeros((3, 3), dtype=bool)) == ["A"] * 3


def test_significance_rules_with_complete_and_incomplete_judgments(tmp_path: Path) -> None:
    # A beats B by one grade on every query: with complete judgments rule 2 decides
    lists = {
        "A": {f"q{i}": [f"a{i}"] for i in range(4)},
        "B": {f"q{i}": [f"b{i}"] for i in range(4)},
    }
    grades = [(f"q{i}", f"a{i}", 2) for i in range(4)] + [(f"q{i}", f"b{i}", 1) for i in range(4)]
    runs = write_trec_runs(tmp_path / "runs.txt", lists)
    result = evaluate_files(runs, write_qrels(tmp_path / "q.txt", grades), k=1)
    rules = significance_rules(result)
    assert rules.pairs == [(0, 1)]
    assert rules.mean_difference.tolist() == [0.5]
    verdict = rules.verdicts.verdict(0)
    assert (verdict.outcome.value, verdict.rule, verdict.final) == ("a_better", 2, True)
    # without B's judgments, B's best case (2 on every query) could beat A: undecided by
    # rules 1-3, and rule 4 takes the sign of the difference with unjudged as 0
    partial = [g for g in grades if g[1].startswith("a")]
    result = evaluate_files(runs, write_qrels(tmp_path / "p.txt", partial), k=1)
    verdict = significance_rules(result).verdicts.verdict(0)
    assert (verdict.outcome.value, verdict.rule, verdict.final) == ("a_better", 4, False)


@pytest.mark.parametrize("scale", ["fine", "broad"])
def test_graded_measures_are_the_engines_on_a_fully_judged_collection(
    tmp_path: Path, scale: str
) -> None:
    """With the qrels judging the whole pool, evaluate's cg, dcg, ndcg and rbp are the
    engine's own per-query scores (mtcjudge.mtc.measures.per_query_scores)."""
    from mtcjudge.ingest.loader import load_synthetic
    from mtcjudge.mtc.measures import per_query_scores
    from mtcjudge.mtc.scales import get_scale
    from mtcjudge.mtc.synthetic import generate

    synthetic = generate(5, 8, 5, n_genres=3, docs_per_genre=40, n_artists=30, seed=3)
    truth = synthetic.fine if scale == "fine" else synthetic.broad
    runs = write_trec_runs(tmp_path / "runs.txt", synthetic.runs)
    qrels = write_qrels(tmp_path / "qrels.txt", [(q, d, g) for (q, d), g in truth.items()])
    result = evaluate_files(runs, qrels, k=5, scale=scale)
    loaded = load_synthetic(synthetic, scale)
    assert (loaded.systems, loaded.queries) == (result.systems, result.queries)
    for measure in ("cg", "dcg", "ndcg", "rbp"):
        engine = per_query_scores(
            loaded.collection, loaded.judged_values, measure, get_scale(scale)
        ).T
        np.testing.assert_allclose(result.per_query[f"{measure}@5"], engine, rtol=0, atol=1e-12)
    assert result.means()["judged@5"].tolist() == [1.0] * 5


@pytest.mark.parametrize("k", [0, 10_001])
def test_a_cut_off_outside_1_to_10000_is_refused(files, k: int) -> None:
    with pytest.raises(ValueError, match="k must be an integer from 1 to 10000"):
        evaluate_files(*files, k=k)
