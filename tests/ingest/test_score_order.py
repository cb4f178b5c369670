"""TREC runs whose scores contradict their ranks: reported by file and line, and ordered by
score exactly as trec_eval (and pytrec_eval, ir_measures) order them when asked."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import pytrec_eval  # ir_measures' engine for trec_eval's measures (the test extra)
from hypothesis import given, settings
from hypothesis import strategies as st

from mtcjudge.ingest import formats
from mtcjudge.ingest.formats import InputError, Runs, read_runs, trec_eval_order


def score_order_warnings(runs: Runs, option: str) -> list[str]:
    return formats.score_order_warnings(
        runs.score_conflicts,
        n_lists=runs.n_lists,
        order_by=runs.order_by,
        hint=f"{option} orders them as those tools do.",
    )


def write(directory: Path, name: str, *lines: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_higher_score_below_is_reported_with_file_line_system_and_query(tmp_path) -> None:
    path = write(
        tmp_path,
        "runs.txt",
        "q1 Q0 d1 1 0.8 S1",
        "q1 Q0 d2 2 0.9 S1",
        "q1 Q0 d3 3 0.1 S1",
        "q2 Q0 d1 1 0.9 S1",
        "q2 Q0 d2 2 0.8 S1",
    )
    runs = read_runs(path)
    assert runs.lists["S1"]["q1"] == ["d1", "d2", "d3"]  # by rank: nothing changes silently
    (conflict,) = runs.score_conflicts
    assert (conflict.path, conflict.line, conflict.system, conflict.query) == (
        str(path),
        2,
        "S1",
        "q1",
    )
    assert str(conflict) == f"{path}:2: system S1 query q1: rank 2 has score 0.9 above rank 1's 0.8"
    warning = score_order_warnings(runs, "--order-by score")
    assert warning[0].startswith("the scores of 1 of the 2 lists order them otherwise than")
    assert "--order-by score orders them as those tools do" in warning[0]
    assert warning[1:] == [str(conflict)]


def test_ordering_by_score_follows_trec_eval(tmp_path) -> None:
    path = write(
        tmp_path,
        "runs.txt",
        "q1 Q0 d1 1 0.8 S1",
        "q1 Q0 d2 2 0.9 S1",
        "q1 Q0 d3 3 0.1 S1",
        "q1 Q0 a 1 5 S2",
        "q1 Q0 c 2 5 S2",
        "q1 Q0 b 3 5 S2",
    )
    runs = read_runs(path, order_by="score")
    assert runs.order_by == "score"
    assert runs.lists["S1"]["q1"] == ["d2", "d1", "d3"]
    assert runs.lists["S2"]["q1"] == ["c", "b", "a"]  # a tie: docno, descending
    assert [c.line for c in runs.score_conflicts] == [2, 5]  # still reported
    tie = runs.score_conflicts[1]
    assert tie.tie
    assert tie.message == (
        "system S2 query q1: rank 2 (c) ties rank 1 (a) at score 5; trec_eval breaks ties by "
        "docno, descending, and puts c first"
    )
    # every adjacent pair out of order is counted in its list
    reverse = write(tmp_path, "rev.txt", *(f"q Q0 d{r} {r} {r} S" for r in range(1, 5)))
    (conflict,) = read_runs(reverse).score_conflicts
    assert conflict.message.endswith(
        "rank 2 has score 2 above rank 1's 1 (and 2 more in this list)"
    )
    assert "They are ordered by score" in score_order_warnings(runs, "x")[0]


def test_scores_equal_as_32_bit_floats_are_a_tie(tmp_path) -> None:
    # 1.00000001 and 1.0 are one 32-bit float: pytrec_eval sees a tie and orders by docno
    path = write(tmp_path, "r.txt", "q Q0 a 1 1.00000001 S", "q Q0 b 2 1.0 S")
    runs = read_runs(path, order_by="score")
    assert runs.lists["S"]["q"] == ["b", "a"]
    (conflict,) = runs.score_conflicts
    assert "equal to rank 1's (a) 1.00000001 as a 32-bit float" in conflict.message


def test_runs_in_trec_eval_order_have_no_warning(tmp_path) -> None:
    path = write(
        tmp_path,
        "r.txt",
        "q Q0 a 1 3 S",
        "q Q0 c 2 2 S",
        "q Q0 b 3 2 S",  # a tie already in docno-descending order
        "q Q0 z 4 -1e3 S",
    )
    runs = read_runs(path)
    assert runs.score_conflicts == ()
    assert score_order_warnings(runs, "--order-by score") == []
    assert read_runs(path, order_by="score").lists == runs.lists


def test_many_conflicts_are_shown_first_ten_then_counted(tmp_path) -> None:
    lines = [f"q{q:02d} Q0 d{r} {r} {r} S{q % 3}" for q in range(25) for r in (1, 2)]
    runs = read_runs(write(tmp_path, "r.txt", *lines))
    assert len(runs.score_conflicts) == 25
    warning = score_order_warnings(runs, "--order-by score")
    assert warning[0].startswith("the scores of 25 of the 25 lists")
    assert "(systems S0, S1, S2)" in warning[0]
    assert len(warning) == 1 + 10 + 1
    assert warning[1].startswith(f"{tmp_path / 'r.txt'}:2: system S0 query q00: rank 2")
    assert warning[-1] == "and 15 more lists"


def test_a_directory_of_runs_names_each_file(tmp_path) -> None:
    write(tmp_path / "runs", "a.txt", "q Q0 x 1 1 A", "q Q0 y 2 2 A")
    write(tmp_path / "runs", "b.txt", "q Q0 x 1 2 B", "q Q0 y 2 1 B", "q Q0 z 3 5 B")
    runs = read_runs(tmp_path / "runs")
    assert [(Path(c.path).name, c.line, c.system) for c in runs.score_conflicts] == [
        ("a.txt", 2, "A"),
        ("b.txt", 3, "B"),
    ]


def test_ordering_a_tsv_run_by_score_is_refused(tmp_path) -> None:
    path = write(tmp_path, "runs.tsv", "S\tq\ta", "S\tq\tb")
    assert read_runs(path).score_conflicts == ()
    with pytest.raises(InputError, match="cannot order by score: this is a TSV run"):
        read_runs(path, order_by="score")
    with pytest.raises(ValueError, match="order_by must be"):
        read_runs(path, order_by="docno")


def test_trec_eval_order_helper() -> None:
    assert trec_eval_order([("d1", 0.5), ("d2", 0.9), ("d3", 0.5)]) == ["d2", "d3", "d1"]
    assert trec_eval_order([("b", 1e39), ("a", 1e40)]) == ["b", "a"]  # both inf as floats


# ------------------------------------------------------------------ against pytrec_eval

# few distinct values, some only 32-bit apart, so that ties and near-ties are common
_SCORES = st.sampled_from(["0", "1", "1.00000001", "1.0000001", "-2", "0.5", "1e-9", "3.25"])
_DOCS = st.lists(
    st.text(alphabet="abAB9_-é", min_size=1, max_size=3), min_size=1, max_size=7, unique=True
)


def _pytrec_eval_order(docs: list[str], scores: list[str]) -> list[str]:
    """Where pytrec_eval puts each document: its reciprocal rank when it alone is relevant."""
    run = {"q": {doc: float(score) for doc, score in zip(docs, scores, strict=True)}}
    position = {}
    for doc in docs:
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"})
        position[doc] = round(1 / evaluator.evaluate(run)["q"]["recip_rank"])
    return sorted(docs, key=position.__getitem__)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_order_by_score_is_pytrec_evals_order(tmp_path_factory, data) -> None:
    docs = data.draw(_DOCS)
    scores = data.draw(st.lists(_SCORES, min_size=len(docs), max_size=len(docs)))
    path = tmp_path_factory.mktemp("runs") / "run.txt"
    path.write_text(
        "".join(
            f"q Q0 {doc} {rank} {score} S\n"
            for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1)
        ),
        encoding="utf-8",
    )
    expected = _pytrec_eval_order(docs, scores)
    assert read_runs(path, order_by="score").lists["S"]["q"] == expected
    by_rank = read_runs(path)
    assert by_rank.lists["S"]["q"] == docs
    # a conflict is reported exactly when the rank order is not the tools' order
    assert bool(by_rank.score_conflicts) == (docs != expected)


def test_float32_rounding_is_the_one_pytrec_eval_makes() -> None:
    value = 1.00000001
    assert struct.unpack("f", struct.pack("f", value))[0] == 1.0
    order = _pytrec_eval_order(["a", "b"], ["1.00000001", "1"])
    assert order == ["b", "a"] == trec_eval_order([("a", value), ("b", 1.0)])
