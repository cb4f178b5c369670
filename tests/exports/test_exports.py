"""Exports: each format's columns, the qrels and runs against the app's own measures, a
partially judged campaign, the bundle's manifest, the API and the command line."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import zipfile
from collections import defaultdict
from typing import BinaryIO, cast

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import insert

from mtcjudge.config import Settings
from mtcjudge.errors import CampaignNotFound, InvalidInput
from mtcjudge.exports import service
from mtcjudge.exports.estimate_files import ESTIMATE_COLUMNS
from mtcjudge.exports.formats import aggregate, round_half_up
from mtcjudge.exports.judgment_files import JUDGMENT_COLUMNS
from mtcjudge.main import create_app
from mtcjudge.models import Assessor, Judgment, utcnow
from tests.factories import PlanningClient, build_campaign, make_campaign
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

LMAX = {"fine": 100, "broad": 2}


def export(session, slug: str, what: str, **options) -> bytes:
    out = io.BytesIO()
    service.write_export(session, slug, service.ExportSpec(what, **options), out)
    return out.getvalue()


def parse_qrels(text: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in text.splitlines():
        qid, zero, doc, rel = line.split()
        assert zero == "0"
        assert doc not in qrels[qid], "one line per pair"
        qrels[qid][doc] = int(rel)
    return qrels


def parse_runs(text: str) -> dict[str, dict[str, list[str]]]:
    """system -> query -> documents in the order trec_eval sorts them (score, decreasing)."""
    lines: dict[str, dict[str, list[tuple[float, int, str]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for line in text.splitlines():
        qid, q0, doc, rank, score, tag = line.split()
        assert q0 == "Q0"
        lines[tag][qid].append((float(score), int(rank), doc))
    runs: dict[str, dict[str, list[str]]] = {}
    for tag, per_query in lines.items():
        runs[tag] = {}
        for qid, entries in per_query.items():
            by_rank = sorted(entries, key=lambda e: e[1])
            assert [e[1] for e in by_rank] == list(range(1, len(entries) + 1))
            scores = [e[0] for e in by_rank]
            assert scores == sorted(scores, reverse=True)
            assert len(set(scores)) == len(scores)
            runs[tag][qid] = [e[2] for e in by_rank]
    return runs


def trec_style(qrels, runs, k: int, lmax: int) -> dict[str, dict[str, float]]:
    """CG@k and MIREX nDCG@k (the project's ``dcg``) from qrels and runs, unjudged = 0."""
    ideal = lmax * sum(1 / math.log2(i + 1) for i in range(1, k + 1))
    scores: dict[str, dict[str, float]] = {"cg": {}, "dcg": {}}
    for system, per_query in runs.items():
        cg, dcg = [], []
        for qid, docs in per_query.items():
            rels = [qrels.get(qid, {}).get(d, 0) for d in docs[:k]]
            cg.append(sum(rels) / (k * lmax))
            dcg.append(sum(r / math.log2(i + 2) for i, r in enumerate(rels)) / ideal)
        scores["cg"][system] = sum(cg) / len(cg)
        scores["dcg"][system] = sum(dcg) / len(dcg)
    return scores


# ------------------------------------------------------------------ formats


def test_aggregation_rounds_half_up() -> None:
    assert round_half_up(50.5) == 51
    assert round_half_up(50.49) == 50
    assert round_half_up(0.5) == 1
    assert aggregate([50.0, 51.0], "mean") == 51
    assert aggregate([10.0, 20.0, 90.0], "mean") == 40
    assert aggregate([10.0, 20.0, 90.0], "median") == 20
    assert aggregate([1.0, 2.0], "median") == 2  # 1.5 half up


def test_spec_refuses_what_the_export_cannot_be() -> None:
    with pytest.raises(InvalidInput, match="what must be one of"):
        service.ExportSpec("everything")
    with pytest.raises(InvalidInput, match="qrels exports as trec"):
        service.ExportSpec("qrels", format="csv")
    with pytest.raises(InvalidInput, match="scale must be"):
        service.ExportSpec("qrels", scale="coarse")
    with pytest.raises(InvalidInput, match="aggregate must be"):
        service.ExportSpec("qrels", aggregate="max")


def test_unknown_campaign(db_session) -> None:
    with pytest.raises(CampaignNotFound):
        export(db_session, "nope", "qrels")


@pytest.mark.parametrize("scale", ["fine", "broad"])
def test_qrels_and_runs_give_the_apps_cg_and_mirex_dcg(db_session, judged_campaign, scale) -> None:
    slug = judged_campaign.campaign.slug
    qrels = parse_qrels(export(db_session, slug, "qrels", scale=scale).decode())
    runs = parse_runs(export(db_session, slug, "runs").decode())
    truth = judged_campaign.synthetic.fine if scale == "fine" else judged_campaign.synthetic.broad
    assert sum(len(v) for v in qrels.values()) == len(truth)
    for (q, d), value in truth.items():
        assert qrels[q][d] == value
    document = json.loads(export(db_session, slug, "results", scale=scale))
    assert set(document["results"]) == {"cg", "dcg", "ndcg", "rbp"}
    assert "all-maximum" in document["measure_definitions"]["dcg"]["name"]
    assert "ideal" in document["measure_definitions"]["ndcg"]["name"]
    ours = trec_style(qrels, runs, k=5, lmax=LMAX[scale])
    for measure in ("cg", "dcg"):
        result = document["results"][measure]
        assert result["measure"] == measure
        assert result["scale"] == scale
        assert result["judgments"] == result["pool_pairs"]
        app = {s["name"]: s["mean"] for s in result["systems"]}
        assert app.keys() == ours[measure].keys()
        for name, value in app.items():
            assert ours[measure][name] == pytest.approx(value, rel=1e-12, abs=1e-15)


def test_judgments_columns_csv_and_jsonl(db_session, judged_campaign) -> None:
    campaign = judged_campaign.campaign
    assessor = Assessor(campaign_id=campaign.id, name="Ada", token_hash="a" * 64)
    other = Assessor(campaign_id=campaign.id, name="Bo", token_hash="b" * 64)
    db_session.add_all([assessor, other])
    db_session.flush()
    some = db_session.query(Judgment).filter_by(campaign_id=campaign.id).first()
    db_session.add(
        Judgment(
            campaign_id=campaign.id,
            query_id=some.query_id,
            document_id=some.document_id,
            assessor_id=other.id,
            broad=1,
            fine=44.0,
            revision=1,
            query_listen_ms=4000,
            candidate_listen_ms=5000,
        )
    )
    db_session.flush()
    rows = list(
        csv.DictReader(io.StringIO(export(db_session, campaign.slug, "judgments").decode()))
    )
    columns = list(rows[0])
    assert columns == list(JUDGMENT_COLUMNS)
    assert len(rows) == len(judged_campaign.judged) + 1
    mine = [r for r in rows if r["assessor"]]
    assert len(mine) == 1
    # pseudonyms as in the results document: A1, A2 in the order of invitation
    assert mine[0]["assessor"] == "A2"
    assert (mine[0]["broad"], mine[0]["fine"], mine[0]["revision"]) == ("1", "44.0", "1")
    assert mine[0]["query_listen_ms"] == "4000"
    assert mine[0]["candidate_listen_ms"] == "5000"
    assert mine[0]["created_at"].endswith("+00:00")
    assert mine[0]["revised_at"].endswith("+00:00")
    imported = rows[0]
    assert imported["source"] == "import"
    assert imported["assessor"] == ""
    assert imported["revised_at"] == ""
    assert imported["lease_id"] == ""
    lines = export(db_session, campaign.slug, "judgments", format="jsonl").decode().splitlines()
    records = [json.loads(line) for line in lines]
    assert [list(r) for r in records] == [columns] * len(records)
    assert records[0]["fine"] == float(rows[0]["fine"])
    assert records[0]["assessor"] is None
    # the pair now has two FINE judgments: the qrels line is their aggregate
    query, document = mine[0]["query"], mine[0]["document"]
    first = next(
        r for r in rows if (r["query"], r["document"]) == (query, document) and not r["assessor"]
    )
    values = [float(first["fine"]), 44.0]
    for rule in ("mean", "median"):
        qrels = parse_qrels(export(db_session, campaign.slug, "qrels", aggregate=rule).decode())
        assert qrels[query][document] == aggregate(values, rule) == round_half_up(sum(values) / 2)


def test_partially_judged_campaign_exports_what_exists_and_says_so(
    db_session, partial_campaign
) -> None:
    slug = partial_campaign.campaign.slug
    judged = partial_campaign.judged
    qrels = parse_qrels(export(db_session, slug, "qrels").decode())
    assert {(q, d) for q, docs in qrels.items() for d in docs} == judged
    estimates = list(csv.DictReader(io.StringIO(export(db_session, slug, "estimates").decode())))
    assert list(estimates[0]) == list(ESTIMATE_COLUMNS)
    pool = set(partial_campaign.synthetic.fine)
    assert {(e["query"], e["document"]) for e in estimates} == pool - judged
    for e in estimates:
        assert 0.0 <= float(e["expected_relevance"]) <= 100.0
        assert float(e["variance"]) > 0
        assert e["estimator"] == "uniform"
        assert e["scale"] == "fine"
    bundle = zipfile.ZipFile(io.BytesIO(export(db_session, slug, "bundle")))
    manifest = json.loads(bundle.read("manifest.json"))
    counts = manifest["counts"]
    assert counts["pool_pairs"] == len(pool)
    assert counts["judged_pool_pairs"] == counts["judged_pairs"] == len(judged)
    assert counts["unjudged_pool_pairs"] == len(pool - judged)
    assert counts["judgment_rows"] == len(judged)
    assert manifest["complete"] is False
    assert manifest["completeness"].startswith(f"partially judged: {len(judged)} of {len(pool)}")


def test_bundle_holds_every_file_with_its_sha256(db_session, judged_campaign) -> None:
    campaign = judged_campaign.campaign
    data = export(db_session, campaign.slug, "bundle")
    bundle = zipfile.ZipFile(io.BytesIO(data))
    names = bundle.namelist()
    assert names[-1] == "manifest.json"
    manifest = json.loads(bundle.read("manifest.json"))
    listed = {f["name"]: f for f in manifest["files"]}
    assert sorted(listed) == sorted(n for n in names if n != "manifest.json")
    for name, entry in listed.items():
        content = bundle.read(name)
        assert hashlib.sha256(content).hexdigest() == entry["sha256"], name
        assert len(content) == entry["bytes"]
    assert {
        "qrels-fine.txt",
        "qrels-broad.txt",
        "judgments.csv",
        "grades.json",
        "grades.md",
    } <= set(names)
    systems = judged_campaign.synthetic.systems
    assert sorted(n for n in names if n.startswith("runs/")) == [f"runs/{s}.txt" for s in systems]
    # the per-system run files are the runs export, split by system
    joined = b"".join(bundle.read(f"runs/{s}.txt") for s in systems)
    assert joined == export(db_session, campaign.slug, "runs")
    assert bundle.read("qrels-broad.txt") == export(
        db_session, campaign.slug, "qrels", scale="broad"
    )
    assert manifest["complete"] is True
    assert manifest["completeness"].startswith("complete")
    assert manifest["campaign"]["slug"] == campaign.slug
    assert manifest["campaign"]["k"] == 5
    assert manifest["software"]["name"] == "mtcjudge"
    assert manifest["software"]["version"]
    assert set(manifest["measure_definitions"]) == {"cg", "dcg", "ndcg", "rbp"}
    grades = json.loads(bundle.read("grades.json"))
    assert [g["label"] for g in grades["grades"]["broad"]["levels"]] == [
        "Not similar",
        "Somewhat similar",
        "Very similar",
    ]
    results = json.loads(bundle.read("results-fine.json"))
    assert results["results"]["cg"]["campaign"] == campaign.slug


# ------------------------------------------------------------------ API


@pytest.fixture
def client(session_factory):
    return TestClient(create_app(Settings(organizer_token=TOKEN), session_factory=session_factory))


def test_api_streams_the_export(db_session, judged_campaign, client) -> None:
    slug = judged_campaign.campaign.slug
    response = client.get(
        f"/api/campaigns/{slug}/export/qrels", params={"scale": "broad"}, headers=AUTH
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert (
        response.headers["content-disposition"] == f'attachment; filename="{slug}-qrels-broad.txt"'
    )
    assert response.content == export(db_session, slug, "qrels", scale="broad")
    response = client.get(f"/api/campaigns/{slug}/export/bundle", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    assert "manifest.json" in zipfile.ZipFile(io.BytesIO(response.content)).namelist()
    response = client.get(
        f"/api/campaigns/{slug}/export/judgments", params={"format": "jsonl"}, headers=AUTH
    )
    assert response.status_code == 200
    assert len(response.text.splitlines()) == len(judged_campaign.judged)


def test_api_errors(judged_campaign, client) -> None:
    slug = judged_campaign.campaign.slug
    assert client.get(f"/api/campaigns/{slug}/export/qrels").status_code == 401
    wrong = {"Authorization": "Bearer wrong"}
    assert client.get(f"/api/campaigns/{slug}/export/qrels", headers=wrong).status_code == 401
    response = client.get("/api/campaigns/nope/export/qrels", headers=AUTH)
    assert response.status_code == 404
    assert response.json()["error"] == "campaign_not_found"
    assert client.get(f"/api/campaigns/{slug}/export/everything", headers=AUTH).status_code == 404
    response = client.get(f"/api/campaigns/{slug}/export/qrels?scale=coarse", headers=AUTH)
    assert response.status_code == 422
    assert response.json()["error"] == "malformed_request"
    assert (
        client.get(f"/api/campaigns/{slug}/export/qrels?aggregate=max", headers=AUTH).status_code
        == 422
    )
    response = client.get(f"/api/campaigns/{slug}/export/qrels?format=csv", headers=AUTH)
    assert response.status_code == 400
    assert "qrels exports as trec" in response.json()["detail"]


# ------------------------------------------------------------------ memory


def _add_judgments(session, n_assessors: int, pairs) -> None:
    campaign_id = pairs[0].campaign_id
    assessors = [
        Assessor(campaign_id=campaign_id, name=f"V{i}", token_hash=f"{campaign_id:08x}{i:056x}")
        for i in range(n_assessors)
    ]
    session.add_all(assessors)
    session.flush()
    now = utcnow()
    session.execute(
        insert(Judgment),
        [
            {
                "campaign_id": campaign_id,
                "query_id": p.query_id,
                "document_id": p.document_id,
                "assessor_id": a.id,
                "broad": 1,
                "fine": float((i * 7 + j) % 101),
                "source": "assessor",
                "revision": 0,
                "created_at": now,
                "updated_at": now,
            }
            for i, a in enumerate(assessors)
            for j, p in enumerate(pairs)
        ],
    )
    session.flush()


def test_streaming_memory_does_not_grow_with_the_judgments(db_session) -> None:
    import tracemalloc

    from mtcjudge.models import Pair

    peaks = {}
    for n_judgments in (2_000, 20_000):
        campaign = make_campaign(db_session, share=0.0, seed=n_judgments).campaign
        pairs = db_session.query(Pair).filter_by(campaign_id=campaign.id).all()
        # the same pool judged by more assessors: only the number of judgments grows
        _add_judgments(db_session, -(-n_judgments // len(pairs)), pairs)
        rows = db_session.query(Judgment).filter_by(campaign_id=campaign.id).count()
        db_session.expunge_all()

        class Sink:
            size = 0

            def write(self, data: bytes) -> int:
                self.size += len(data)
                return len(data)

        tracemalloc.start()
        sink = cast("BinaryIO", Sink())
        for what in ("judgments", "qrels"):
            service.write_export(db_session, campaign.slug, service.ExportSpec(what), sink)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peaks[n_judgments] = (rows, peak)
    (small_rows, small_peak), (large_rows, large_peak) = peaks[2_000], peaks[20_000]
    assert large_rows >= 9 * small_rows
    # ten times the judgments, about the same peak (about 2 MB here, the cursor's batch of
    # rows); holding the rows, or the text, would add some 150 bytes per judgment
    assert large_peak < 1.5 * small_peak + 200_000, peaks


def test_judgments_through_the_judging_page_carry_their_lease_and_selection(
    db_session, session_factory
) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=3, k=3, n_assessors=2)
    client = PlanningClient(create_app(Settings(), session_factory=session_factory))
    handed = []
    for token, fine in ((fx.tokens[1], 70.0), (fx.tokens[0], 20.0), (fx.tokens[1], 45.0)):
        pair = client.get(f"/api/a/{token}/next").json()["pair"]
        handed.append(pair)
        response = client.post(
            f"/api/a/{token}/judgments",
            json={
                "lease_id": pair["lease_id"],
                "broad": 1,
                "fine": fine,
                "client_id": f"c-{len(handed)}",
                "query_listen_ms": 3000,
                "candidate_listen_ms": 4000,
            },
        )
        assert response.status_code == 201, response.text
    text = export(db_session, fx.campaign.slug, "judgments", format="jsonl").decode()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == 3
    # a lease is numbered in its campaign (1 = the first pair handed out), not by database id
    by_lease = {r["lease_id"]: r for r in records}
    assert sorted(by_lease) == [1, 2, 3]
    for number, fine, who in zip((1, 2, 3), (70.0, 20.0, 45.0), ("A2", "A1", "A2"), strict=True):
        record = by_lease[number]
        assert record["fine"] == fine
        assert record["assessor"] == who
        assert record["source"] == "assessor"
        assert record["leased_at"].endswith("+00:00")
        assert record["leased_at"] <= record["created_at"]
        assert record["selection_rule"] in ("plan", "own_query", "any_free")
        assert record["revision"] == 0
        assert record["revised_at"] is None
    # ordered by query, document (external ids), then assessor
    keys = [(r["query"], r["document"]) for r in records]
    assert keys == sorted(keys)


def test_bundle_of_a_campaign_whose_assessors_disagree_on_broad(db_session) -> None:
    """Two assessors give a pair BROAD 1 and 2: the pair counts as 2 (mean rounded half up)
    everywhere, in the engine (results, estimates) as in the qrels."""
    from mtcjudge.models import Pair

    campaign = make_campaign(db_session, share=0.0).campaign
    pair = db_session.query(Pair).filter_by(campaign_id=campaign.id).first()
    _add_judgments(db_session, 2, [pair])
    db_session.query(Judgment).filter_by(campaign_id=campaign.id).filter(
        Judgment.assessor_id
        == db_session.query(Assessor.id)
        .filter_by(campaign_id=campaign.id)
        .order_by(Assessor.id)
        .limit(1)
        .scalar_subquery()
    ).update({"broad": 2}, synchronize_session=False)
    qrels = parse_qrels(export(db_session, campaign.slug, "qrels", scale="broad").decode())
    assert [g for docs in qrels.values() for g in docs.values()] == [2]  # 1.5 half up
    export(db_session, campaign.slug, "bundle")
