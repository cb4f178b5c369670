"""The results service: the document against the engine's own numbers, other measures and
scales, the planner's versions and curve, the assessors' summary, the API and the CLI."""

from __future__ import annotations

import io
import json
import uuid
from datetime import datetime

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from mtcjudge.campaign_engine.build import engine_from_rows, load_campaign_engine
from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.service import invite_assessor
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.cli import main as cli_main
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.ingest.formats import Metadata, Runs
from mtcjudge.main import create_app
from mtcjudge.models import CampaignResults, TrajectoryPoint, utcnow
from mtcjudge.mtc.synthetic import generate
from mtcjudge.planner.projector import Projector
from mtcjudge.planner.service import Planner
from mtcjudge.results import read as results
from tests.factories import TEST_AUDIO, PlanningClient, build_campaign, clips_for
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN


@pytest.fixture
def app_client(session_factory):
    """An app on the test's transaction whose planner projects in the request's thread."""
    app = create_app(Settings(organizer_token=TOKEN), session_factory=session_factory)
    app.state.planner.projector = Projector(inline=True, runs=4, max_seconds=None)
    return PlanningClient(app)


def judge(client: TestClient, token: str, fine: float, *, listen_ms: int = 9000) -> None:
    pair = client.get(f"/api/a/{token}/next").json()
    assert pair["status"] == "pair", pair
    response = client.post(
        f"/api/a/{token}/judgments",
        json={
            "lease_id": pair["pair"]["lease_id"],
            "broad": 2 if fine > 66 else 1 if fine > 33 else 0,
            "fine": fine,
            "client_id": str(uuid.uuid4()),
            "query_listen_ms": listen_ms // 2,
            "candidate_listen_ms": listen_ms - listen_ms // 2,
        },
    )
    assert response.status_code == 201, response.text


def get_results(client: TestClient, slug: str, **params: str) -> dict:
    response = client.get(f"/api/campaigns/{slug}/results", params=params, headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def check_against_engine(document: dict, engine) -> None:
    """Every figure of the document is the engine's own."""
    ev = engine.evaluation()
    assert document["judgments"] == engine.n_judged
    assert document["ranking_confidence"] == pytest.approx(ev.ranking_confidence, abs=1e-9)
    assert document["stop_reason"] == engine.stop_reason()
    assert document["can_stop"] == (engine.stop_reason() is not None)


def engine_checks(document: dict, state, target: float) -> None:
    engine = state.engine
    check_against_engine(document, engine)
    ev = engine.evaluation()
    names = state.system_names
    by_name = {s["name"]: s for s in document["systems"]}
    assert sorted(by_name) == sorted(names)
    order = [names[i] for i in ev.ranking()]
    assert [s["name"] for s in document["systems"]] == order
    assert [s["rank"] for s in document["systems"]] == list(range(1, len(names) + 1))
    for i, name in enumerate(names):
        system = by_name[name]
        assert system["mean"] == pytest.approx(ev.mean[i], abs=1e-9)
        assert system["var"] == pytest.approx(ev.var[i], abs=1e-12)
        assert system["ci_low"] == pytest.approx(ev.ci_low[i], abs=1e-9)
        assert system["ci_high"] == pytest.approx(ev.ci_high[i], abs=1e-9)
    a, b = np.triu_indices(len(names), 1)
    verdicts = engine.significance()
    assert len(document["pairs"]) == a.shape[0] == document["system_pairs"]
    settled = 0
    for n, (pair, i, j) in enumerate(zip(document["pairs"], a.tolist(), b.tolist(), strict=True)):
        assert (pair["a"], pair["b"]) == (names[i], names[j])
        assert pair["diff_mean"] == pytest.approx(ev.diff_mean[i, j], abs=1e-9)
        assert pair["diff_var"] == pytest.approx(ev.diff_var[i, j], abs=1e-12)
        assert pair["confidence"] == pytest.approx(ev.pair_confidence[i, j], abs=1e-9)
        assert pair["settled"] == (ev.pair_confidence[i, j] >= target)
        settled += pair["settled"]
        verdict = verdicts.verdict(n)
        assert pair["verdict"] == verdict.outcome.value
        assert pair["verdict_rule"] == verdict.rule
        assert pair["verdict_final"] == verdict.final
    assert document["system_pairs_settled"] == settled


def test_a_campaign_stored_with_an_estimator_no_longer_offered_still_loads_and_plans(
    db_session, app_client
) -> None:
    """New campaigns offer joint and uniform only; one stored with ordinal keeps running."""
    fx = build_campaign(db_session, n_systems=4, n_queries=4, k=3, estimator="ordinal")
    for value in (90.0, 10.0, 55.0):
        judge(app_client, fx.tokens[0], value)
    app_client.plan()
    document = get_results(app_client, fx.campaign.slug)
    assert document["estimator"] == "ordinal"
    state = load_campaign_engine(db_session, fx.campaign)
    assert state.engine.n_judged == 3
    assert state.model.kind == "ordinal"
    engine_checks(document, state, fx.campaign.target)


def test_the_document_is_the_engines_numbers(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=4, k=3, estimator="calibrated")
    campaign = fx.campaign
    for value in (90.0, 10.0, 55.0, 70.0, 20.0):
        judge(app_client, fx.tokens[0], value)
    judge(app_client, fx.tokens[1], 80.0, listen_ms=4000)
    app_client.plan()
    document = get_results(app_client, campaign.slug)
    # an engine built from scratch on the same rows, independently of the planner's, which
    # took the judgments in one at a time
    state = load_campaign_engine(db_session, campaign)
    assert state.engine.n_judged == 6
    engine_checks(document, state, campaign.target)
    assert document["campaign"] == campaign.slug
    assert document["driving"] is True
    assert (document["measure"], document["scale"], document["k"]) == ("cg", "fine", 3)
    assert (document["estimator"], document["policy"]) == ("calibrated", "confidence")
    assert document["target"] == campaign.target
    assert document["pool_pairs"] == state.n_pairs == document["playable_pairs"]
    assert document["judgment_rows"] == 6
    assert document["unplayable_clips"] == []
    assert document["version"] >= 1
    assert datetime.fromisoformat(document["computed_at"]).utcoffset() is not None
    # the projection of the campaign's target and of the usual others
    projections = document["projections"]
    assert [p["target"] for p in projections] == [0.9, 0.95, 0.99]
    assert document["projected_judgments_to_target"] == projections[1]
    assert document["projection"]["runs"] == 4
    for p in projections:
        assert p["reached"] or p["median"] is None or p["low"] <= p["median"] <= p["high"]
    # the curve: one point per number of judged pairs the planner saw, in order
    curve = document["trajectory"]
    assert [t["judgments"] for t in curve] == list(range(7))
    assert curve[-1]["ranking_confidence"] == pytest.approx(document["ranking_confidence"])
    assert curve[-1]["settled"] == document["system_pairs_settled"]


def test_assessors_by_pseudonym(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=3, k=3, n_assessors=3)
    for value in (90.0, 10.0, 55.0):
        judge(app_client, fx.tokens[0], value, listen_ms=9000)
    judge(app_client, fx.tokens[1], 80.0, listen_ms=4000)
    app_client.get(f"/api/a/{fx.tokens[1]}/next")  # holds a pair now
    document = get_results(app_client, fx.campaign.slug)
    first, second, third = document["assessors"]
    assert [a["pseudonym"] for a in document["assessors"]] == ["A1", "A2", "A3"]
    assert "Volunteer" not in json.dumps(document)
    assert (first["judged"], second["judged"], third["judged"]) == (3, 1, 0)
    assert first["median_listen_ms"] == 9000.0
    assert second["median_listen_ms"] == 4000.0
    assert third["median_listen_ms"] is None
    assert first["median_seconds_per_judgment"] >= 0
    assert third["median_seconds_per_judgment"] is None
    assert (first["live_lease"], second["live_lease"], third["live_lease"]) == (
        False,
        True,
        False,
    )
    expires = datetime.fromisoformat(second["lease_expires_at"])
    assert expires > utcnow()
    last = datetime.fromisoformat(first["last_active"])
    assert last.utcoffset() is not None
    assert last <= utcnow()
    assert third["last_active"] is None
    assert first["revoked"] is False


def test_another_measure_and_scale_leave_the_loop_alone(
    db_session, app_client, monkeypatch
) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, estimator="uniform")
    for value in (90.0, 10.0, 55.0):
        judge(app_client, fx.tokens[0], value)
    app_client.plan()
    own = get_results(app_client, fx.campaign.slug)
    built = []
    original = engine_from_rows

    def counted(*args, **kwargs):
        built.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr("mtcjudge.results.read.engine_from_rows", counted)
    other = get_results(app_client, fx.campaign.slug, measure="ndcg", scale="broad")
    state = load_campaign_engine(db_session, fx.campaign, measure="ndcg", scale="broad")
    assert state.engine.config.measure == "ndcg"
    engine_checks(other, state, fx.campaign.target)
    assert (other["measure"], other["scale"], other["driving"]) == ("ndcg", "broad", False)
    assert other["trajectory"] == []  # the curve is the driving measure's
    assert other["projections"] == []
    assert other["projected_judgments_to_target"] is None
    assert other["version"] == own["version"]
    assert other["ranking_confidence"] != own["ranking_confidence"]
    # computed once, then served from this process's cache until the judgments change
    assert get_results(app_client, fx.campaign.slug, measure="ndcg", scale="broad") == other
    assert len(built) == 1
    # the loop still runs on the campaign's own measure and scale
    assert get_results(app_client, fx.campaign.slug) == own
    stored = db_session.get(CampaignResults, fx.campaign.id)
    assert json.loads(stored.document)["results"]["measure"] == "cg"
    judge(app_client, fx.tokens[0], 40.0)
    newer = get_results(app_client, fx.campaign.slug, measure="ndcg", scale="broad")
    assert newer["judgments"] == other["judgments"] + 1
    assert len(built) == 2


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        ("?measure=map", 422, "malformed_request"),
        ("?scale=coarse", 422, "malformed_request"),
        ("?measure=", 422, "malformed_request"),
        ("?measure=CG", 422, "malformed_request"),
    ],
)
def test_bad_parameters_are_refused_with_the_envelope(
    db_session, app_client, query: str, status: int, error: str
) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2)
    response = app_client.get(f"/api/campaigns/{fx.campaign.slug}/results{query}", headers=AUTH)
    assert response.status_code == status
    assert response.json()["error"] == error


def test_unknown_campaigns_and_strangers(db_session, app_client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2)
    for path in ("/api/campaigns/no-such/results", "/api/campaigns/NOT_A_SLUG/results"):
        response = app_client.get(path, headers=AUTH)
        assert response.status_code == 404
        assert response.json()["error"] == "campaign_not_found"
    url = f"/api/campaigns/{fx.campaign.slug}/results"
    assert app_client.get(url).status_code == 401
    assert app_client.get(url, headers={"Authorization": "Bearer nope"}).status_code == 401
    events = f"/api/campaigns/{fx.campaign.slug}/events"
    assert app_client.get(events).status_code == 401
    missing = app_client.get("/api/campaigns/no-such/events", headers=AUTH)
    assert (missing.status_code, missing.json()["error"]) == (404, "campaign_not_found")


def test_versions_and_curve_follow_the_judgments(db_session, session_factory) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=3, k=2, estimator="uniform")
    planner = Planner(session_factory, projector=Projector(inline=True, runs=2))
    planner.run_once()
    first = db_session.get(CampaignResults, fx.campaign.id)
    assert (first.version, first.judged_pairs) == (1, 0)
    planner.run_once()  # the projection made after the first plan lands: a new version
    db_session.expire_all()
    assert db_session.get(CampaignResults, fx.campaign.id).version == 2
    planner.run_once(force=True)  # nothing new: no new document
    db_session.expire_all()
    assert db_session.get(CampaignResults, fx.campaign.id).version == 2
    points = db_session.scalar(select(func.count()).select_from(TrajectoryPoint))
    assert points == 1
    with session_scope(session_factory) as session:
        document = results.results_for(session, fx.campaign.slug)
    assert document.version == 2
    assert document.projection is not None
    assert [(t.judgments, t.settled) for t in document.trajectory] == [
        (0, document.system_pairs_settled)
    ]


def test_a_campaign_not_planned_yet_is_computed_on_demand(db_session, session_factory) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=2, status="closed")
    with session_scope(session_factory) as session:
        document = results.results_for(session, fx.campaign.slug)
    assert (document.version, document.driving) == (0, True)
    assert document.computed_at is not None
    assert document.computed_at <= utcnow()
    assert document.status == "closed"
    engine_state = load_campaign_engine(db_session, fx.campaign)
    assert document.ranking_confidence == pytest.approx(engine_state.engine.ranking_confidence())
    assert document.projection is None


def test_trajectory_is_thinned() -> None:
    points = [(n, n / 2000, n // 10) for n in range(2000)]
    thinned = results._trajectory(points)
    assert len(thinned) == results.TRAJECTORY_POINTS
    assert (thinned[0].judgments, thinned[-1].judgments) == (0, 1999)
    assert [t.judgments for t in thinned] == sorted({t.judgments for t in thinned})


# ------------------------------------------------------------------ CLI and API agree


def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def judged_database(empty_database_url: str) -> tuple[str, str]:
    """A database (SQLite file or Postgres schema) with a judged campaign, planned."""
    url = empty_database_url
    upgrade_database(url)
    synthetic = generate(5, 6, 4, n_genres=3, docs_per_genre=30, n_artists=15, seed=5)
    engine = make_database_engine(url)
    factory = make_sessionmaker(engine)
    try:
        with session_scope(factory) as session:
            campaign, _ = create_campaign(
                session,
                CampaignSpec(name="Agree", status="open"),
                Runs(synthetic.runs, "tsv"),
                Metadata(dict(synthetic.artist), dict(synthetic.genre)),
                audio_dir=clips_for(synthetic, TEST_AUDIO / "agree"),
            )
            # judged without listening (no audio): the rule and the trials are off
            campaign.listen_seconds, campaign.quality_rate = 0.0, 0.0
            slug = campaign.slug
            tokens = []
            for name in ("Ada", "Bo"):
                assessor, token = invite_assessor(session, campaign, name)
                assessor.consented_at = utcnow()
                tokens.append(token)
        app = create_app(Settings(database_url=url, organizer_token=TOKEN), session_factory=factory)
        app.state.planner.projector = Projector(inline=True, runs=2)
        client = PlanningClient(app)
        for i in range(4):
            judge(client, tokens[i % 2], 20.0 * i + 5)
        client.plan()
        client.plan()
    finally:
        engine.dispose()
    return url, slug


def test_cli_json_is_the_api_document(judged_database, monkeypatch) -> None:
    url, slug = judged_database
    monkeypatch.delenv("DATABASE_URL", raising=False)
    app = create_app(Settings(database_url=url, organizer_token=TOKEN, run_planner=False))
    with TestClient(app) as client:
        api = get_results(client, slug)
        api_other = get_results(client, slug, measure="dcg")
    code, out, err = run_cli("campaign", "status", slug, "--json", "--database-url", url)
    assert code == 0, err
    assert json.loads(out) == api
    assert api["judgments"] == 4
    assert api["projection"] is not None
    code, out, err = run_cli(
        "campaign", "status", slug, "--json", "--measure", "dcg", "--database-url", url
    )
    assert code == 0, err
    cli_other = json.loads(out)
    # computed on demand by each process: the same but for when
    assert cli_other.pop("computed_at")
    assert api_other.pop("computed_at")
    assert cli_other == api_other
    # the human form is built from the same document
    code, text, _ = run_cli("campaign", "status", slug, "--database-url", url)
    assert code == 0
    assert f"pairs judged         4 of {api['pool_pairs']}" in text
    assert f"ranking confidence   {api['ranking_confidence']:.4f}" in text
    ranking = [line.split()[1] for line in text.splitlines() if line.startswith("       ")]
    assert ranking == [s["name"] for s in api["systems"]]
    assert "still needed" in text or api["projected_judgments_to_target"]["reached"]


def test_cli_refuses_an_unknown_measure(judged_database, capsys) -> None:
    url, slug = judged_database
    with pytest.raises(SystemExit) as stop:
        run_cli("campaign", "status", slug, "--measure", "map", "--database-url", url)
    assert stop.value.code == 2
