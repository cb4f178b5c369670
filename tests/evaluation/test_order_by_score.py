"""``mtcjudge evaluate --order-by score`` gives ir_measures' (trec_eval's) numbers on runs
whose scores contradict their ranks; by default it orders by rank and warns, file and line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import ir_measures
import pytest

from tests.cli import run

SYSTEMS = ("A", "B", "C", "D")
QUERIES = tuple(f"q{q}" for q in range(1, 7))
K = 5


@pytest.fixture
def collection(tmp_path: Path) -> tuple[Path, Path]:
    """Runs whose scores are drawn from few values (ties), unrelated to the ranks, and FINE
    qrels over every retrieved document."""
    rng = random.Random(11)
    docs = [f"d{i:02d}" for i in range(20)]
    lines, qrels = [], {}
    for system in SYSTEMS:
        for query in QUERIES:
            for rank, doc in enumerate(rng.sample(docs, 8), start=1):
                lines.append(f"{query} Q0 {doc} {rank} {rng.choice([0.25, 0.5, 1, 2])} {system}")
                qrels[query, doc] = rng.randrange(0, 101)
    runs = tmp_path / "runs.txt"
    runs.write_text("\n".join(lines) + "\n")
    judgments = tmp_path / "qrels.txt"
    judgments.write_text("".join(f"{q} 0 {d} {r}\n" for (q, d), r in sorted(qrels.items())))
    return runs, judgments


def ir_measures_ndcg(runs: Path, judgments: Path, tmp_path: Path) -> dict[str, float]:
    """nDCG@K per system, each system's lines given to ir_measures as a run of their own."""
    qrels = list(ir_measures.read_trec_qrels(str(judgments)))
    values = {}
    for system in SYSTEMS:
        own = tmp_path / f"{system}.txt"
        own.write_text(
            "".join(line + "\n" for line in runs.read_text().splitlines() if line.endswith(system))
        )
        measure = ir_measures.nDCG @ K
        values[system] = ir_measures.calc_aggregate(
            [measure], qrels, ir_measures.read_trec_run(str(own))
        )[measure]
    return values


def evaluate(runs: Path, judgments: Path, *options: str) -> tuple[dict[str, float], dict, str]:
    status, out, err = run("evaluate", "--runs", runs, "--judgments", judgments, "--k", K,
                           "--format", "json", *options)  # fmt: skip
    assert status == 0, err
    document = json.loads(out)
    ndcg = {s["system"]: s["measures"][f"ndcg@{K}"] for s in document["systems"]}
    return ndcg, document, err


def test_ordering_by_score_gives_ir_measures_numbers(collection, tmp_path) -> None:
    runs, judgments = collection
    expected = ir_measures_ndcg(runs, judgments, tmp_path)
    by_score, document, err = evaluate(runs, judgments, "--order-by", "score")
    assert document["order_by"] == "score"
    assert "decreasing score, ties by decreasing docno" in document["conventions"]["order"]
    for system in SYSTEMS:
        assert by_score[system] == pytest.approx(expected[system], abs=1e-12)
    assert "They are ordered by score" in err
    # by rank (the default) the numbers differ, and the warning says where and why
    by_rank, document, err = evaluate(runs, judgments)
    assert document["order_by"] == "rank"
    assert any(abs(by_rank[s] - expected[s]) > 1e-6 for s in SYSTEMS)
    conflicts = document["score_conflicts"]
    assert conflicts["of"] == len(SYSTEMS) * len(QUERIES)
    assert 0 < conflicts["lists"] <= conflicts["of"]
    first = conflicts["first"][0]
    assert (first["file"], first["system"]) == (str(runs), "A")
    line = runs.read_text().splitlines()[first["line"] - 1].split()
    assert (line[0], line[5]) == (first["query"], first["system"])
    assert err.startswith("mtcjudge: warning: the scores of ")
    assert f"\n  {runs}:{first['line']}: system A query {first['query']}: rank " in err
    assert "--order-by score orders them as those tools do" in err


def test_a_tsv_run_cannot_be_ordered_by_score(tmp_path) -> None:
    runs = tmp_path / "runs.tsv"
    runs.write_text("A\tq1\td1\nB\tq1\td2\n")
    judgments = tmp_path / "q.txt"
    judgments.write_text("q1 0 d1 1\n")
    status, _, err = run("evaluate", "--runs", runs, "--judgments", judgments,
                         "--order-by", "score")  # fmt: skip
    assert status == 2
    assert err == (
        f"mtcjudge: error: {runs}: cannot order by score: this is a TSV run (system query "
        "doc), which has no score column; its lines are in rank order (order by rank)\n"
    )
