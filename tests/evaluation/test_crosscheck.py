"""The classic measures and trec_eval's nDCG cross-checked with trec_eval's own code
(pytrec_eval, through ir_measures) on a small random collection, per query.

The collection has what trips evaluators up: unjudged retrieved documents, judged documents
no system retrieves, lists of different lengths (some shorter than k), a query without
relevant documents, and queries a system did not answer (ir_measures skips them; evaluate
scores them 0, as trec_eval -c)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mtcjudge.evaluation.service import evaluate_files
from tests.evaluation.support import write_qrels, write_trec_runs

ir_measures = pytest.importorskip("ir_measures")
from ir_measures import AP, RR, SDCG, Judged, P, R, nDCG  # noqa: E402

K = 5


def _collection(seed: int, scale: str) -> tuple[dict, list[tuple[str, str, int]]]:
    rng = np.random.default_rng(seed)
    top = 100 if scale == "fine" else 2
    lists: dict[str, dict[str, list[str]]] = {}
    for system in ("sysA", "sysB", "sysC", "sysD"):
        lists[system] = {}
        for q in range(8):
            if rng.random() < 0.15:
                continue  # not answered
            depth = int(rng.integers(1, 12))
            docs = rng.choice(20, size=depth, replace=False)
            lists[system][f"q{q}"] = [f"d{q}_{d}" for d in docs]
    grades = []
    for q in range(8):
        for d in range(20):
            if rng.random() < 0.7:  # the rest stay unjudged
                grade = 0 if q == 3 and scale == "broad" else int(rng.integers(0, top + 1))
                grades.append((f"q{q}", f"d{q}_{d}", grade))
    if scale == "fine":  # q3: judged, nothing relevant
        grades = [(q, d, min(g, 40) if q == "q3" else g) for q, d, g in grades]
    return lists, grades


@pytest.mark.parametrize(("scale", "threshold"), [("fine", 50), ("fine", 75), ("broad", 1)])
@pytest.mark.parametrize("seed", [1, 2])
def test_per_query_scores_agree_with_trec_eval(
    tmp_path: Path, scale: str, threshold: int, seed: int
) -> None:
    lists, grades = _collection(seed, scale)
    runs = tmp_path / "runs"  # one system per file, as trec_eval takes them
    runs.mkdir()
    for system, per_query in lists.items():
        write_trec_runs(runs / f"{system}.txt", {system: per_query})
    qrels_path = write_qrels(tmp_path / "qrels.txt", grades)
    result = evaluate_files(runs, qrels_path, k=K, scale=scale, threshold=threshold)
    lmax = 100 if scale == "fine" else 2
    ours = {
        P(rel=threshold) @ K: f"p@{K}",
        R(rel=threshold) @ K: f"recall@{K}",
        R(rel=threshold) @ 1000: "recall",
        AP(rel=threshold): "ap",
        RR(rel=threshold): "rr",
        nDCG @ K: f"ndcg@{K}",
        SDCG(max_rel=lmax) @ K: f"dcg@{K}",
        Judged @ K: f"judged@{K}",
    }
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    compared = 0
    for s, system in enumerate(result.systems):
        theirs: dict[tuple[object, str], float] = {}
        run = list(ir_measures.read_trec_run(str(runs / f"{system}.txt")))
        for metric in ir_measures.iter_calc(list(ours), qrels, run):
            theirs[(metric.measure, metric.query_id)] = float(metric.value)
        for q, query in enumerate(result.queries):
            for measure, column in ours.items():
                value = result.per_query[column][s, q]
                if query in lists[system]:
                    assert value == pytest.approx(theirs[(measure, query)], abs=1e-12), (
                        system,
                        query,
                        column,
                    )
                    compared += 1
                else:
                    assert value == 0.0  # trec_eval -c: an unanswered query scores 0
    assert compared > 150
    assert 0 < result.answered.mean() < 1  # both cases were exercised
