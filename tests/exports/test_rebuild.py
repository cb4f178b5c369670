"""The results rebuilt from the exported files alone (docs/exports.md, "Rebuilding the
results"): for every estimator, on both scales and every measure, a partly judged campaign's
``entries`` and ``offsets`` exports give the ``results`` export's means exactly and its
variances, intervals, pair variances and confidences (the standalone exports and the bundle's
members alike). The files are parsed as text (:mod:`tests.exports.rebuild`); nothing is read
from the app's objects."""

from __future__ import annotations

import csv
import io
import json
import math
import zipfile
from collections import defaultdict

import pytest
from sqlalchemy import select

from mtcjudge.exports.estimate_files import ENTRY_COLUMNS
from mtcjudge.models import Document
from mtcjudge.mtc.factory import CALIBRATED, ESTIMATOR_CHOICES, JOINT
from tests.exports.rebuild import check_against_results, export, parse_entries, rebuild
from tests.factories import make_campaign
from tests.factories import partly_judged_campaign as partly_judged

SCALES = ("fine", "broad")


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
        "estimate stratum",
    ]
    # the noisy audit: joint's variance factors, one per stratum of the estimates' own
    # variances, already in the entries' variances (the one factor is then 1)
    assert about["variance_scale"] == 1.0
    assert [f["stratum"] for f in about["variance_factors"]] == ["1", "2", "3", "4", "5"]
    assert max(f["factor"] for f in about["variance_factors"]) > 1.0
    assert {e["stratum"] for e in entries} == {"1", "2", "3", "4", "5"}
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
    assert about["variance_factors"] == []
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
    ) == list(ENTRY_COLUMNS)
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
