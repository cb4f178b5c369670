"""Ties told as ties (issue 23): a system whose run repeats another's shares its rank in the
results document, its pair is marked tied and settled (the tie is known), the counts say
how many settled pairs are ties, and the API, the stored document and ``campaign status``
say the same, on the campaign's measure and on the others."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from mtcjudge.campaign_engine.build import load_campaign_engine
from mtcjudge.cli import main as cli_main
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.planner.projector import Projector
from mtcjudge.planner.service import Planner
from mtcjudge.results import read as results
from mtcjudge.results.document import results_json
from tests.factories import make_campaign
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN

TWIN = "S02-rerun"


def _check_ties(document: dict) -> None:
    by_name = {s["name"]: s for s in document["systems"]}
    twin, original = by_name[TWIN], by_name["S02"]
    assert twin["tied"]
    assert original["tied"]
    assert twin["rank"] == original["rank"]
    assert twin["mean"] == original["mean"]
    assert (twin["ci_low"], twin["ci_high"]) == (original["ci_low"], original["ci_high"])
    assert sum(s["tied"] for s in document["systems"]) == 2
    # competition ranking: the tie's two places are taken, the next rank skips one
    ranks = [s["rank"] for s in document["systems"]]
    assert ranks == sorted(ranks)
    shared = twin["rank"]
    assert ranks.count(shared) == 2
    assert shared + 1 not in ranks
    positions = [i for i, s in enumerate(document["systems"]) if s["tied"]]
    assert positions[1] == positions[0] + 1  # listed together
    pair = next(p for p in document["pairs"] if {p["a"], p["b"]} == {TWIN, "S02"})
    assert pair["tied"]
    assert pair["diff_mean"] == 0.0
    assert pair["diff_var"] == 0.0
    assert pair["confidence"] == 1.0
    assert pair["settled"]
    assert sum(p["tied"] for p in document["pairs"]) == document["system_pairs_tied"] == 1
    assert document["system_pairs_settled"] >= 1


@pytest.mark.parametrize("share", [0.0, 0.4, 1.0])
def test_a_repeated_run_is_tied_on_every_measure(db_session, share: float) -> None:
    fx = make_campaign(db_session, share=share, estimator="joint", twin=TWIN)
    for measure in MEASURES:
        document = results.results_for(db_session, fx.campaign.slug, measure)
        _check_ties(json.loads(results_json(document)))
    state = load_campaign_engine(db_session, fx.campaign)
    ev = state.engine.evaluation()
    names = state.system_names
    assert ev.tied[names.index(TWIN), names.index("S02")]


def test_no_tie_without_one(db_session) -> None:
    fx = make_campaign(db_session, share=0.4, estimator="joint")
    document = json.loads(results_json(results.results_for(db_session, fx.campaign.slug)))
    assert document["system_pairs_tied"] == 0
    assert not any(s["tied"] for s in document["systems"])
    assert not any(p["tied"] for p in document["pairs"])
    assert [s["rank"] for s in document["systems"]] == list(range(1, 6))


def test_the_planner_stores_the_ties_and_the_api_sends_them(db_session, session_factory) -> None:
    fx = make_campaign(db_session, share=0.4, estimator="joint", twin=TWIN)
    Planner(session_factory, projector=Projector(inline=True, runs=2)).run_once()
    with session_scope(session_factory) as session:
        stored = results.results_for(session, fx.campaign.slug)
    assert stored.version >= 1  # the planner's document, not one computed on demand
    _check_ties(stored.to_dict())
    app = create_app(
        Settings(organizer_token=TOKEN, run_planner=False), session_factory=session_factory
    )
    with TestClient(app) as client:
        response = client.get(f"/api/campaigns/{fx.campaign.slug}/results", headers=AUTH)
        assert response.status_code == 200, response.text
        _check_ties(response.json())
        response = client.get(
            f"/api/campaigns/{fx.campaign.slug}/results", params={"measure": "ndcg"}, headers=AUTH
        )
        _check_ties(response.json())


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_campaign_status_marks_the_tie(empty_database_url: str, monkeypatch) -> None:
    url = empty_database_url
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            slug = make_campaign(session, share=0.4, estimator="joint", twin=TWIN).campaign.slug
    finally:
        engine.dispose()
    monkeypatch.delenv("DATABASE_URL", raising=False)
    code, text, err = run_cli("campaign", "status", slug, "--database-url", url)
    assert code == 0, err
    rows = {line.split()[1]: line.split()[0] for line in text.splitlines() if "[" in line}
    assert rows[TWIN] == rows["S02"]
    assert rows[TWIN].endswith("=")
    assert sum(rank.endswith("=") for rank in rows.values()) == 2
    assert "(1 of them tied)" in text
    assert "'=': tied" in text
    assert "joint estimator expects" in text
    code, out, err = run_cli("campaign", "status", slug, "--json", "--database-url", url)
    assert code == 0, err
    _check_ties(json.loads(out))
    assert np.isclose(json.loads(out)["system_pairs_tied"], 1)


@pytest.mark.parametrize(("share", "says"), [(1.0, "the scores are exact"), (0.4, "joint")])
def test_campaign_status_says_what_the_intervals_are(
    empty_database_url: str, monkeypatch, share: float, says: str
) -> None:
    url = empty_database_url
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            slug = make_campaign(session, share=share, estimator="joint").campaign.slug
    finally:
        engine.dispose()
    monkeypatch.delenv("DATABASE_URL", raising=False)
    code, text, err = run_cli("campaign", "status", slug, "--database-url", url)
    assert code == 0, err
    assert says in text
    assert "not the spread over queries" in text
    assert "tied" not in text
    widths = [
        float(line.split("[")[1].split(",")[1].rstrip("]"))
        - float(line.split("[")[1].split(",")[0])
        for line in text.splitlines()
        if "[" in line
    ]
    assert (max(widths) == 0.0) == (share == 1.0)
