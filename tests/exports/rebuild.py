"""Rebuilding the results from the exported files alone (docs/exports.md, "Rebuilding the
results"), written independently of the page's code: the files are parsed as text, nothing is
read from the app's objects. Used by tests/exports/test_rebuild.py and test_docs_rebuild.py."""

from __future__ import annotations

import csv
import io
import json
import math
from collections import defaultdict
from itertools import product
from typing import Any

import pytest
from scipy import stats

from mtcjudge.exports import service

MEASURES = ("cg", "dcg", "ndcg", "rbp")


def export(session, slug: str, what: str, **options) -> bytes:
    out = io.BytesIO()
    service.write_export(session, slug, service.ExportSpec(what, **options), out)
    return out.getvalue()


def parse_entries(data: bytes, fmt: str = "csv") -> list[dict[str, Any]]:
    """The entries file's rows with their numbers as numbers (empty cells None)."""
    text = data.decode("utf-8")
    if fmt == "jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        rows = [
            {k: (v if v != "" else None) for k, v in r.items()}
            for r in csv.DictReader(io.StringIO(text))
        ]
    for r in rows:
        for column in ("expected_relevance", "pair_expected_relevance", "offset", "variance"):
            r[column] = float(r[column])
        r["rank"], r["judged"] = int(r["rank"]), int(r["judged"])
    return rows


def discount(measure: str, rank: int, p: float) -> float:
    if measure == "cg":
        return 1.0
    if measure in ("dcg", "ndcg"):
        return 1.0 / math.log2(rank + 1)
    return p ** (rank - 1)


def rebuild(
    entries: list[dict[str, Any]], about: dict[str, Any], measure: str
) -> tuple[dict[str, float], dict[tuple[str, str], float]]:
    """Every system's expected score and the scores' covariance, from the files' rows."""
    k, nq, p = about["k"], about["queries"], about["rbp_p"]
    pool: dict[str, dict[str, float]] = defaultdict(dict)
    var: dict[tuple[str, str], float] = {}
    for e in entries:
        # the ideal list takes each pool pair at the largest expectation of its entries
        docs = pool[e["query"]]
        docs[e["document"]] = max(docs.get(e["document"], -math.inf), e["expected_relevance"])
        var[e["query"], e["document"]] = e["variance"]
    norm: dict[str, tuple[float, float]] = {}
    for q, docs in pool.items():
        if measure in ("cg", "dcg"):
            norm[q] = (about["max"] * sum(discount(measure, i, p) for i in range(1, k + 1)), 0.0)
            continue
        # the ideal: the top k of the pool by those values, ties in (query, document) order
        top = sorted(sorted(docs), key=lambda d: -docs[d])[:k]
        norm[q] = (
            sum(docs[d] * discount(measure, i, p) for i, d in enumerate(top, 1)),
            sum(var[q, d] * discount(measure, i, p) ** 2 for i, d in enumerate(top, 1)),
        )
    mean: dict[str, float] = defaultdict(float)
    weight: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    x: dict[tuple[str, str], float] = defaultdict(float)
    mass: dict[tuple[str, str, tuple[Any, ...]], float] = defaultdict(float)
    for e in entries:
        y = norm[e["query"]][0]
        c = discount(measure, e["rank"], p)
        w = c / y / nq if y > 0 else 0.0
        mean[e["system"]] += w * e["expected_relevance"]
        weight[e["query"], e["document"]][e["system"]] = w
        x[e["system"], e["query"]] += c * e["expected_relevance"]
        if not e["judged"]:
            for f in about["factors"]:
                level = tuple(e[c] for c in f["columns"])
                if all(v is not None for v in level):
                    mass[e["system"], f["name"], level] += w
    levels = {
        (f["name"], tuple(lv[c] for c in f["columns"])): lv["variance"]
        for f in about["factors"]
        for lv in f["levels"]
    }
    # the assessors' offsets: each system's judged weight in each assessor's shares
    judged: dict[tuple[str, int], float] = defaultdict(float)
    for j in about["assessor_offsets"]["judgments"]:
        for system, w in weight[j["query"], j["document"]].items():
            judged[system, j["assessor"]] += j["share"] * w
    systems = sorted(mean)
    cov = {}
    for a, b in product(systems, systems):
        independent = sum(
            var[pair] * w[a] * w[b] for pair, w in weight.items() if a in w and b in w
        )
        for q, (y, vy) in norm.items():
            if y > 0:
                independent += x[a, q] * x[b, q] * vy / y**4 / nq**2
        shared = sum(
            v * mass.get((a, name, level), 0.0) * mass.get((b, name, level), 0.0)
            for (name, level), v in levels.items()
        )
        assessors = sum(
            about["assessor_offsets"]["variance"]
            * judged.get((a, who), 0.0)
            * judged.get((b, who), 0.0)
            for who in {j["assessor"] for j in about["assessor_offsets"]["judgments"]}
        )
        cov[a, b] = about["variance_scale"] * independent + shared + assessors
    return dict(mean), cov


def check_against_results(
    entries: list[dict[str, Any]], about: dict[str, Any], results: dict[str, Any]
) -> None:
    for measure in MEASURES:
        result = results["results"][measure]
        mean, cov = rebuild(entries, about, measure)
        systems = {s["name"]: s for s in result["systems"]}
        assert set(systems) == set(mean)
        top = max(s["var"] for s in systems.values())
        for name, s in systems.items():
            assert mean[name] == pytest.approx(s["mean"], abs=1e-12, rel=0), (measure, name)
            assert max(cov[name, name], 0.0) == pytest.approx(s["var"], abs=1e-10 * top, rel=0)
            # the interval: mean -+ t(0.975, queries - 1) sd, cut to the measure's range [0, 1]
            half = stats.t.ppf(0.975, about["queries"] - 1) * math.sqrt(max(cov[name, name], 0))
            assert s["ci_low"] == pytest.approx(max(0.0, mean[name] - half), abs=1e-9)
            assert s["ci_high"] == pytest.approx(min(1.0, mean[name] + half), abs=1e-9)
        confidences = []
        for pair in result["pairs"]:
            a, b = pair["a"], pair["b"]
            assert mean[a] - mean[b] == pytest.approx(pair["diff_mean"], abs=1e-12, rel=0)
            diff_var = cov[a, a] + cov[b, b] - 2 * cov[a, b]
            assert diff_var == pytest.approx(pair["diff_var"], abs=1e-10 * top, rel=0), (a, b)
            # the confidence in the pair's order: max(P, 1 - P), P = F(-E / sd)
            if pair["diff_var"] == 0:
                confidence = 1.0
            else:
                tail = stats.t.cdf(
                    -abs(mean[a] - mean[b]) / math.sqrt(diff_var), about["queries"] - 1
                )
                confidence = 1.0 - tail
            assert confidence == pytest.approx(pair["confidence"], abs=1e-8), (a, b)
            confidences.append(confidence)
        assert sum(confidences) / len(confidences) == pytest.approx(
            result["ranking_confidence"], abs=1e-8
        )
