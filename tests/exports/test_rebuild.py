"""The results rebuilt from the exported files alone (docs/exports.md, "Rebuilding the
results"): for every estimator, on both scales and every measure, a partly judged campaign's
``entries`` and ``offsets`` exports give the ``results`` export's means exactly and its
variances and pair variances (the standalone exports and the bundle's members alike). The
files are parsed as text here; nothing is read from the app's objects."""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile
from collections import defaultdict
from itertools import product
from typing import Any

import numpy as np
import pytest
from scipy import stats
from sqlalchemy import insert, select

from mtcjudge.exports import service
from mtcjudge.exports.repository import recount_pairs
from mtcjudge.models import Assessor, Campaign, Document, Judgment, Pair, Query, utcnow
from mtcjudge.mtc.calibration import CALIBRATED, ESTIMATOR_CHOICES, JOINT
from mtcjudge.planner.service import plan_in_session
from tests.factories import Judged, make_campaign

MEASURES = ("cg", "dcg", "ndcg", "rbp")
SCALES = ("fine", "broad")


def export(session, slug: str, what: str, **options) -> bytes:
    out = io.BytesIO()
    service.write_export(session, slug, service.ExportSpec(what, **options), out)
    return out.getvalue()


# ------------------------------------------------------------------ a partly judged campaign


def _pairs(session, campaign: Campaign) -> list[tuple[str, str, int, int]]:
    """(query, document, query_id, document_id) of every pool pair, by external ids."""
    external = dict(
        session.execute(
            select(Document.id, Document.external_id).where(Document.campaign_id == campaign.id)
        ).all()
    )
    query_doc = dict(session.execute(select(Query.id, Query.document_id)).all())
    rows = session.execute(
        select(Pair.query_id, Pair.document_id).where(Pair.campaign_id == campaign.id)
    ).all()
    return sorted((external[query_doc[q]], external[d], q, d) for q, d in rows)


def _judge(session, campaign: Campaign, rows: list[dict[str, Any]]) -> None:
    now = utcnow()
    session.execute(
        insert(Judgment),
        [
            {
                "campaign_id": campaign.id,
                "revision": 0,
                "created_at": now,
                "updated_at": now,
                **row,
            }
            for row in rows
        ],
    )
    recount_pairs(session, campaign.id)
    session.flush()


def partly_judged(session, estimator: str, seed: int = 11) -> Judged:
    """The exports' synthetic campaign under ``estimator``: a random 35 % of its pool judged
    (imported), eight pairs of them by two assessors who disagree (a fractional FINE mean,
    BROAD 1 and 2), planned (``joint`` draws its audit), then the audit's pairs judged with
    a noisy hand (so that ``joint`` learns a variance factor above 1) and planned again:
    the results document of the campaign's measure and scale is the planner's."""
    made = make_campaign(session, share=0.0)
    campaign = made.campaign
    campaign.estimator = estimator  # a stored campaign may hold any estimator
    session.flush()
    truth_fine, truth_broad = made.synthetic.fine, made.synthetic.broad
    pairs = _pairs(session, campaign)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(pairs), size=round(0.35 * len(pairs)), replace=False)
    people = [
        Assessor(campaign_id=campaign.id, name=name, token_hash=f"{campaign.id:08x}{i:056x}")
        for i, name in enumerate(("Ann", "Ben"))
    ]
    session.add_all(people)
    session.flush()
    rows = []
    for n, i in enumerate(chosen.tolist()):
        q, d, query_id, document_id = pairs[i]
        key = {"query_id": query_id, "document_id": document_id}
        fine, broad = float(truth_fine[q, d]), int(truth_broad[q, d])
        if n < 8:  # two assessors who disagree
            rows.append({**key, "assessor_id": people[0].id, "fine": fine, "broad": 1})
            rows.append(
                {**key, "assessor_id": people[1].id, "fine": min(fine + 3.0, 100.0), "broad": 2}
            )
        else:
            rows.append({**key, "fine": fine, "broad": broad, "source": "import"})
    _judge(session, campaign, rows)
    plan_in_session(session, campaign)
    drawn = set(
        session.execute(
            select(Pair.query_id, Pair.document_id).where(
                Pair.campaign_id == campaign.id, Pair.audit.is_(True), Pair.judged == 0
            )
        ).all()
    )
    noisy = []
    for q, d, query_id, document_id in pairs:
        if (query_id, document_id) in drawn:
            value = float(np.clip(truth_fine[q, d] + rng.choice([-45.0, 45.0]), 0, 100))
            noisy.append(
                {
                    "query_id": query_id,
                    "document_id": document_id,
                    "fine": value,
                    "broad": 2 - int(truth_broad[q, d]),
                    "source": "import",
                }
            )
    if noisy:
        _judge(session, campaign, noisy)
    plan_in_session(session, campaign)
    judged = {(q, d) for i, (q, d, _, _) in enumerate(pairs) if i in set(chosen.tolist())}
    return Judged(campaign, made.synthetic, judged)


# ------------------------------------------------------------------ the rebuild, from text


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
        pool[e["query"]][e["document"]] = e["pair_expected_relevance"]
        var[e["query"], e["document"]] = e["variance"]
    norm: dict[str, tuple[float, float]] = {}
    for q, docs in pool.items():
        if measure in ("cg", "dcg"):
            norm[q] = (about["max"] * sum(discount(measure, i, p) for i in range(1, k + 1)), 0.0)
            continue
        # the ideal: the top k of the pool by the pairs' E[R], ties in (query, document) order
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
        x[e["system"], e["query"]] += c * e["pair_expected_relevance"]
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
        cov[a, b] = about["variance_scale"] * independent + shared
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
            # the interval: mean -+ t(0.975, queries - 1) sd
            half = stats.t.ppf(0.975, about["queries"] - 1) * math.sqrt(max(cov[name, name], 0))
            assert s["ci_low"] == pytest.approx(mean[name] - half, abs=1e-9)
            assert s["ci_high"] == pytest.approx(mean[name] + half, abs=1e-9)
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


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("estimator", ESTIMATOR_CHOICES)
def test_entries_and_offsets_rebuild_the_results_for_every_estimator(
    db_session, estimator: str
) -> None:
    campaign = partly_judged(db_session, estimator).campaign
    slug = campaign.slug
    bundle = zipfile.ZipFile(io.BytesIO(export(db_session, slug, "bundle")))
    for scale in SCALES:
        entries = parse_entries(export(db_session, slug, "entries", scale=scale))
        about = json.loads(export(db_session, slug, "offsets", scale=scale))
        results = json.loads(export(db_session, slug, "results", scale=scale))
        assert about["estimator"] == estimator
        assert {e["estimator"] for e in entries} == {estimator}
        assert 0 < sum(e["judged"] for e in entries) < len(entries)  # partly judged
        check_against_results(entries, about, results)
        # the bundle's members: the same files, and its results (computed from its rows)
        assert bundle.read(f"entries-{scale}.csv") == export(
            db_session, slug, "entries", scale=scale
        )
        assert json.loads(bundle.read(f"offsets-{scale}.json")) == about
        check_against_results(
            parse_entries(bundle.read(f"entries-{scale}.csv")),
            json.loads(bundle.read(f"offsets-{scale}.json")),
            json.loads(bundle.read(f"results-{scale}.json")),
        )


def test_what_joint_learns_is_in_the_entries_and_the_offsets(db_session) -> None:
    """The finding of issue 23: joint's results are not the measures of the pairs' estimates
    (the pair-level estimates export), but of the entries' expectations, which differ by
    system; its offsets and variance factor are exported."""
    campaign = partly_judged(db_session, JOINT).campaign
    entries = parse_entries(export(db_session, campaign.slug, "entries"))
    about = json.loads(export(db_session, campaign.slug, "offsets"))
    results = json.loads(export(db_session, campaign.slug, "results"))
    assert [f["name"] for f in about["factors"]] == [
        "system",
        "result group",
        "query",
        "artist",
        "genre pair",
    ]
    assert about["variance_scale"] > 1.0  # the noisy audit
    unjudged = [e for e in entries if not e["judged"]]
    assert all(
        e["expected_relevance"] == e["pair_expected_relevance"] + e["offset"] for e in entries
    )
    assert all(e["offset"] == 0.0 for e in entries if e["judged"])
    assert max(abs(e["offset"]) for e in unjudged) > 1.0
    # a pair two systems retrieved unjudged: two expectations
    by_pair = defaultdict(set)
    for e in unjudged:
        by_pair[e["query"], e["document"]].add(e["expected_relevance"])
    assert any(len(values) > 1 for values in by_pair.values())
    # the pair-level estimates alone miss joint's means
    plain = [{**e, "expected_relevance": e["pair_expected_relevance"]} for e in entries]
    mean, _ = rebuild(plain, about, "cg")
    app = {s["name"]: s["mean"] for s in results["results"]["cg"]["systems"]}
    assert max(abs(mean[n] - app[n]) for n in app) > 1e-3
    # the offsets of an entry are the means of its levels
    means = {
        (f["name"], tuple(lv[c] for c in f["columns"])): lv["mean"]
        for f in about["factors"]
        for lv in f["levels"]
    }
    for e in unjudged:
        total = sum(
            means[f["name"], level]
            for f in about["factors"]
            if all(level := tuple(e[c] for c in f["columns"]))
        )
        assert e["offset"] == pytest.approx(total, abs=1e-12)


def test_calibrated_learns_system_offsets_and_the_others_none(db_session) -> None:
    calibrated = partly_judged(db_session, CALIBRATED).campaign
    about = json.loads(export(db_session, calibrated.slug, "offsets"))
    assert [f["name"] for f in about["factors"]] == ["system"]
    assert about["variance_scale"] == 1.0
    uniform = partly_judged(db_session, "uniform", seed=12).campaign
    about = json.loads(export(db_session, uniform.slug, "offsets"))
    assert about["factors"] == []
    assert about["variance_scale"] == 1.0
    entries = parse_entries(export(db_session, uniform.slug, "entries"))
    assert all(e["offset"] == 0.0 for e in entries)
    assert all(e["expected_relevance"] == e["pair_expected_relevance"] for e in entries)


def test_entries_agree_with_the_qrels_estimates_runs_and_judgments(db_session) -> None:
    """Judged entries hold the engine's value of the pair (the unrounded mean of its
    judgments, which the qrels round half up), unjudged ones the pair-level estimate plus the
    offset; every entry of the runs' top k is there, at its rank; JSON Lines holds the same."""
    made = partly_judged(db_session, JOINT)
    slug = made.campaign.slug
    entries = parse_entries(export(db_session, slug, "entries"))
    assert list(
        csv.DictReader(io.StringIO(export(db_session, slug, "entries").decode())).fieldnames or []
    ) == list(service.ENTRY_COLUMNS)
    assert parse_entries(export(db_session, slug, "entries", format="jsonl"), "jsonl") == entries
    keys = [(e["query"], e["document"], e["system"]) for e in entries]
    assert keys == sorted(keys)
    qrels = {}
    for line in export(db_session, slug, "qrels").decode().splitlines():
        q, _, d, rel = line.split()
        qrels[q, d] = int(rel)
    values = defaultdict(list)
    for j in csv.DictReader(io.StringIO(export(db_session, slug, "judgments").decode())):
        values[j["query"], j["document"]].append(float(j["fine"]))
    estimates = {
        (e["query"], e["document"]): float(e["expected_relevance"])
        for e in csv.DictReader(io.StringIO(export(db_session, slug, "estimates").decode()))
    }
    several = 0
    for e in entries:
        pair = (e["query"], e["document"])
        if e["judged"]:
            assert e["source"] == "judged"
            assert e["expected_relevance"] == pytest.approx(
                sum(values[pair]) / len(values[pair]), abs=1e-12
            )
            assert qrels[pair] == math.floor(e["expected_relevance"] + 0.5)
            several += len(values[pair]) > 1
            if len(values[pair]) == 1:
                assert qrels[pair] == e["expected_relevance"]
        else:
            assert pair not in qrels
            assert estimates[pair] == e["pair_expected_relevance"]
            assert e["source"] in ("prior", "m_out")
    assert several >= 8
    assert {(e["query"], e["document"]) for e in entries if not e["judged"]} == set(estimates)
    # every entry is a result of the runs' top k, at its rank
    ranks = {}
    for line in export(db_session, slug, "runs").decode().splitlines():
        q, _, d, rank, _, system = line.split()
        if int(rank) <= made.campaign.k:
            ranks[q, d, system] = int(rank)
    assert {(e["query"], e["document"], e["system"]): e["rank"] for e in entries} == ranks


def test_the_command_line_and_the_api_write_them(
    db_session, session_factory, empty_database_url, tmp_path
) -> None:
    """``mtcjudge export --what entries|offsets`` (a file, stdout; a format they do not have
    is exit status 2) and ``GET /api/campaigns/{slug}/export/entries|offsets``."""
    from fastapi.testclient import TestClient

    from mtcjudge.config import Settings
    from mtcjudge.main import create_app
    from tests.cli import run
    from tests.factories import seed_judged_campaign
    from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN

    slug = seed_judged_campaign(empty_database_url, share=0.5)
    url = empty_database_url
    path = tmp_path / "entries.jsonl"
    status, _, err = run("export", slug, "--what", "entries", "--scale", "broad", "--format",
                         "jsonl", "--out", str(path), "--database-url", url)  # fmt: skip
    assert status == 0, err
    assert f"({slug}-entries-broad.jsonl," in err
    rows = parse_entries(path.read_bytes(), "jsonl")
    assert {r["scale"] for r in rows} == {"broad"}
    assert {r["judged"] for r in rows} == {0, 1}
    status, out, err = run("export", slug, "--what", "offsets", "--out", "-", "--database-url", url)
    assert status == 0, err
    assert json.loads(out)["scale"] == "fine"
    status, _, err = run("export", slug, "--what", "entries", "--format", "json",
                         "--out", str(tmp_path / "x.json"), "--database-url", url)  # fmt: skip
    assert status == 2
    assert "entries exports as csv or jsonl" in err
    assert not (tmp_path / "x.json").exists()

    campaign = make_campaign(db_session, share=0.3, estimator="joint").campaign
    client = TestClient(
        create_app(Settings(organizer_token=ORGANIZER_TOKEN), session_factory=session_factory)
    )
    api = f"/api/campaigns/{campaign.slug}/export"
    response = client.get(f"{api}/entries", params={"scale": "fine"}, headers=ORGANIZER_HEADERS)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"] == (
        f'attachment; filename="{campaign.slug}-entries-fine.csv"'
    )
    assert response.content == export(db_session, campaign.slug, "entries", scale="fine")
    response = client.get(f"{api}/offsets", params={"scale": "broad"}, headers=ORGANIZER_HEADERS)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    assert json.loads(response.content)["estimator"] == "joint"
    assert (
        client.get(
            f"{api}/offsets", params={"format": "csv"}, headers=ORGANIZER_HEADERS
        ).status_code
        == 400
    )
    assert client.get(f"{api}/entries").status_code == 401


def test_a_query_whose_results_were_all_filtered_out_counts_in_the_means(db_session) -> None:
    """Every result of one query is by the query's artist, so the measures drop them all: the
    query has no entry and scores 0, and the means are over every query, which the offsets
    export says (counting the entries' queries would miss it)."""
    from tests.factories import build_campaign

    made = build_campaign(db_session, n_queries=3, estimator="joint")
    campaign = made.campaign
    emptied = made.queries[2]
    query_doc = db_session.get(Document, emptied.document_id)
    candidates = select(Document).where(
        Document.campaign_id == campaign.id, Document.external_id.like("cand2-%")
    )
    for document in db_session.scalars(candidates):
        document.artist = query_doc.artist
    db_session.flush()
    entries = parse_entries(export(db_session, campaign.slug, "entries"))
    about = json.loads(export(db_session, campaign.slug, "offsets"))
    results = json.loads(export(db_session, campaign.slug, "results"))
    assert about["queries"] == 3
    assert len({e["query"] for e in entries}) == 2
    assert query_doc.external_id not in {e["query"] for e in entries}
    check_against_results(entries, about, results)
