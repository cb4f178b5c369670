"""The exported qrels and run files, read and evaluated by ranx, give the app's own CG@5 and
MIREX nDCG@5 (the project's ``dcg``) per system, and trec_eval's nDCG@5 (``ndcg``).

Slow: ranx compiles its measures with numba on first use; it comes with the ``crosscheck``
extra."""

from __future__ import annotations

import io
import json
import math
import warnings
import zipfile
from pathlib import Path

import pytest

from mtcjudge.exports import service

LMAX = {"fine": 100, "broad": 2}
K = 5


def _evaluate(ranx, qrels, run, metric: str) -> dict[str, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ranx.evaluate(qrels, run, metric, return_mean=False)
    return dict(run.scores[metric])


def _cg_sum(ranx, qrels_dict: dict[str, dict[str, int]], run) -> dict[str, float]:
    """Sum of the grades of the top k per query, from ranx's hits@k: the sum over the grade
    levels t of the documents with grade >= t (weighted by the gap to the level below)."""
    levels = sorted({g for docs in qrels_dict.values() for g in docs.values() if g > 0})
    total: dict[str, float] = dict.fromkeys(run.keys(), 0.0)
    below = 0
    for level in levels:
        # every query kept (ranx wants the run's queries), grade 0 below the level
        binary = {
            q: {d: int(g >= level) for d, g in docs.items()} for q, docs in qrels_dict.items()
        }
        hits = _evaluate(ranx, ranx.Qrels(binary), run, f"hits@{K}")
        for q, n in hits.items():
            total[q] += (level - below) * n
        below = level
    return total


@pytest.mark.slow
@pytest.mark.parametrize("scale", ["fine", "broad"])
def test_ranx_on_exported_files_gives_the_apps_measures(
    db_session, judged_campaign, tmp_path: Path, scale: str
) -> None:
    ranx = pytest.importorskip("ranx")
    slug = judged_campaign.campaign.slug
    out = io.BytesIO()
    service.write_export(db_session, slug, service.ExportSpec("bundle"), out)
    bundle = zipfile.ZipFile(out)
    bundle.extractall(tmp_path)
    results = json.loads((tmp_path / f"results-{scale}.json").read_text())["results"]
    qrels_path = tmp_path / f"qrels-{scale}.txt"
    qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
    qrels_dict: dict[str, dict[str, int]] = {}
    for line in qrels_path.read_text().splitlines():
        q, _, d, g = line.split()
        qrels_dict.setdefault(q, {})[d] = int(g)
    ideal = LMAX[scale] * sum(1 / math.log2(i + 1) for i in range(1, K + 1))
    app = {m: {s["name"]: s["mean"] for s in results[m]["systems"]} for m in results}
    systems = sorted(app["cg"])
    assert sorted(p.stem for p in (tmp_path / "runs").iterdir()) == systems
    for system in systems:
        run = ranx.Run.from_file(str(tmp_path / "runs" / f"{system}.txt"), kind="trec")
        queries = list(run.keys())
        dcg = _evaluate(ranx, qrels, run, f"dcg@{K}")
        ndcg = _evaluate(ranx, qrels, run, f"ndcg@{K}")
        cg = _cg_sum(ranx, qrels_dict, run)
        n = len(queries)
        # MIREX normalisation: by an all-maximum list (the project's dcg), by k * max (cg)
        assert sum(dcg[q] for q in queries) / n / ideal == pytest.approx(
            app["dcg"][system], rel=1e-12
        )
        assert sum(cg[q] for q in queries) / n / (K * LMAX[scale]) == pytest.approx(
            app["cg"][system], rel=1e-12
        )
        # trec_eval's normalisation, by the ideal ordering of the (complete) qrels
        assert sum(ndcg[q] for q in queries) / n == pytest.approx(app["ndcg"][system], rel=1e-9)


def test_ir_measures_on_exported_files_gives_the_apps_measures(db_session, judged_campaign) -> None:
    """trec_eval's own code (pytrec_eval, through ir_measures) and cwl_eval's scaled DCG read
    the exported files: CG@5 from P(rel=t)@5, MIREX nDCG@5 is SDCG@5, trec_eval's nDCG@5."""
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("cwl")  # cwl-eval: the scaled DCG
    from ir_measures import SDCG, P, nDCG

    slug = judged_campaign.campaign.slug
    out = io.BytesIO()
    service.write_export(db_session, slug, service.ExportSpec("bundle"), out)
    bundle = zipfile.ZipFile(out)
    systems = sorted(n[len("runs/") : -len(".txt")] for n in bundle.namelist() if "runs/" in n)
    for scale in ("fine", "broad"):
        qrels = list(ir_measures.read_trec_qrels(bundle.read(f"qrels-{scale}.txt").decode()))
        levels = sorted({q.relevance for q in qrels if q.relevance > 0})
        results = json.loads(bundle.read(f"results-{scale}.json"))["results"]
        app = {m: {s["name"]: s["mean"] for s in results[m]["systems"]} for m in results}
        lmax = LMAX[scale]
        measures = [SDCG(max_rel=lmax) @ K, nDCG @ K, *(P(rel=t) @ K for t in levels)]
        for system in systems:
            run = list(ir_measures.read_trec_run(bundle.read(f"runs/{system}.txt").decode()))
            queries = {r.query_id for r in run}
            per_query: dict[object, dict[str, float]] = {m: {} for m in measures}
            for metric in ir_measures.iter_calc(measures, qrels, run):
                per_query[metric.measure][metric.query_id] = float(metric.value)
            n = len(queries)

            def mean(measure, queries=queries, per_query=per_query, n=n) -> float:
                return sum(per_query[measure].get(q, 0.0) for q in queries) / n

            assert mean(SDCG(max_rel=lmax) @ K) == pytest.approx(app["dcg"][system], rel=1e-12)
            assert mean(nDCG @ K) == pytest.approx(app["ndcg"][system], rel=1e-9)
            # P(rel=t)@k * k documents of the top k have a grade >= t
            below, grades = 0, 0.0
            for t in levels:
                grades += (t - below) * mean(P(rel=t) @ K) * K
                below = t
            assert grades / (K * lmax) == pytest.approx(app["cg"][system], rel=1e-12)
