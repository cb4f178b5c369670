"""New systems over an existing campaign: ``add_runs``, ``mtcjudge campaign add-runs`` and
the planner's view of the grown pool (SQLite or Postgres, as the fixtures give)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from mtcjudge import audit
from mtcjudge.campaigns.creation import add_runs, create_campaign
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.errors import InvalidInput
from mtcjudge.ingest.formats import Judgments, Metadata, Runs
from mtcjudge.ingest.loader import load_collection
from mtcjudge.models import AuditEvent, Campaign, Document, Judgment, Pair, Query, System
from mtcjudge.mtc.synthetic import generate
from mtcjudge.planner import repository as planner_repository
from mtcjudge.planner.projector import Projector
from mtcjudge.planner.service import Planner
from tests.cli import run
from tests.factories import TEST_AUDIO, clips_for
from tests.support import ORGANIZER_HEADERS as AUTH
from tests.support import ORGANIZER_TOKEN as TOKEN
from tests.support import plan_rows

OLD = ("S01", "S02", "S03", "S04")


def synthetic():
    return generate(5, 8, 5, n_genres=3, docs_per_genre=30, n_artists=15, seed=3)


def clips() -> Path:
    """A clip for every document of :func:`synthetic`, the new systems' too (only pairs whose
    two clips can be played are handed out)."""
    return clips_for(synthetic(), TEST_AUDIO / "add-runs")


def pool_of(runs: dict, metadata: Metadata) -> set[tuple[str, str]]:
    loaded = load_collection(Runs(runs, "tsv"), 5, metadata)
    return {loaded.pair_ids(p) for p in range(loaded.collection.n_pairs)}


def make_settled(session, *, judged_share: float = 1.0):
    """S01-S04 with every pool pair judged (imported FINE and BROAD): judging can stop."""
    syn = synthetic()
    metadata = Metadata(dict(syn.artist), dict(syn.genre))
    old = {s: syn.runs[s] for s in OLD}
    pool = sorted(pool_of(old, metadata))
    judged = pool[: round(judged_share * len(pool))]
    campaign, _ = create_campaign(
        session,
        CampaignSpec(name="Settled", status="open", estimator="uniform", target=0.99),
        Runs(old, "tsv"),
        metadata,
        judgments_fine=Judgments({p: [float(syn.fine[p])] for p in judged}, "tsv"),
        judgments_broad=Judgments({p: [float(syn.broad[p])] for p in judged}, "tsv"),
        audio_dir=clips(),
    )
    session.flush()
    return campaign, syn, metadata, set(pool)


def external_plan(session, campaign_id: int) -> list[tuple[str, str]]:
    query_doc = {q.id: q.document_id for q in session.scalars(select(Query))}
    external = {d.id: d.external_id for d in session.scalars(select(Document))}
    return [(external[query_doc[q]], external[d]) for q, d in plan_rows(session, campaign_id)]


def judgment_values(session, campaign_id: int) -> list[tuple]:
    return sorted(
        session.execute(
            select(Judgment.query_id, Judgment.document_id, Judgment.fine, Judgment.broad).where(
                Judgment.campaign_id == campaign_id
            )
        ).all()
    )


def test_new_system_grows_the_pool_by_its_new_pairs_only_and_judging_goes_on(
    db_session, session_factory
) -> None:
    campaign, syn, metadata, old_pool = make_settled(db_session)
    db_session.commit()
    planner = Planner(session_factory, projector=Projector(inline=True, runs=2))
    planner.run_once(force=True)
    state = planner_repository.planner_state(db_session, campaign.id)
    assert state is not None
    assert state.stop_reason == "complete"
    cached = planner._plans[campaign.id]
    judgments_before = judgment_values(db_session, campaign.id)
    stored_before = db_session.scalar(select(func.count()).where(Pair.campaign_id == campaign.id))
    assert stored_before == len(old_pool)

    report = add_runs(
        db_session,
        campaign,
        Runs({"S05": syn.runs["S05"]}, "tsv"),
        audio_dir=clips(),
        actor=audit.API_TOKEN,
    )
    db_session.commit()

    full_pool = pool_of(syn.runs, metadata)
    new_pairs = full_pool - old_pool
    assert new_pairs, "the synthetic S05 retrieves documents no other system does"
    assert (report.pool_pairs_before, report.pool_pairs) == (len(old_pool), len(full_pool))
    assert report.new_pairs == len(new_pairs)
    assert report.systems == ["S05"]
    assert report.judgments_kept == len(judgments_before)
    # the stored pool: the old pairs once each, plus the new ones
    assert db_session.scalar(select(func.count()).where(Pair.campaign_id == campaign.id)) == len(
        full_pool
    )
    assert judgment_values(db_session, campaign.id) == judgments_before
    # judging could stop; now the new system's comparisons are uncertain
    assert report.stop_reason_before == "complete"
    assert report.stop_reason is None
    assert report.system_pairs == 10
    db_session.expire_all()
    state = planner_repository.planner_state(db_session, campaign.id)
    assert state is not None
    assert state.stop_reason is None
    assert state.system_pairs == 10
    # the plan written with the change asks for the new system's pairs, and only those
    plan = external_plan(db_session, campaign.id)
    assert plan
    assert set(plan) == new_pairs
    assert campaign.collection_version == 1
    events = db_session.scalars(
        select(AuditEvent).where(
            AuditEvent.campaign_id == campaign.id, AuditEvent.action == audit.RUNS_ADDED
        )
    ).all()
    assert len(events) == 1
    assert "S05" in events[0].detail
    assert events[0].actor == "API token"

    # a running planner notices the new collection on its next tick and rebuilds its engine
    planner.run_once()
    rebuilt = planner._plans[campaign.id]
    assert rebuilt is not cached
    assert rebuilt.state.system_names == [*OLD, "S05"]
    assert set(external_plan(db_session, campaign.id)) == new_pairs


def test_judging_the_new_pairs_settles_the_campaign_again(db_session, session_factory) -> None:
    campaign, syn, _metadata, old_pool = make_settled(db_session)
    add_runs(db_session, campaign, Runs({"S05": syn.runs["S05"]}, "tsv"), audio_dir=clips())
    new_pairs = set(external_plan(db_session, campaign.id))
    query_ids = {
        d.external_id: q.id
        for q, d in db_session.execute(
            select(Query, Document).join(Document, Document.id == Query.document_id)
        )
    }
    document_ids = {d.external_id: d.id for d in db_session.scalars(select(Document))}
    for q, d in sorted(new_pairs):
        db_session.add(
            Judgment(
                campaign_id=campaign.id,
                query_id=query_ids[q],
                document_id=document_ids[d],
                fine=float(syn.fine[(q, d)]),
                broad=int(syn.broad[(q, d)]),
                source="import",
            )
        )
        db_session.execute(
            update(Pair)
            .where(Pair.query_id == query_ids[q], Pair.document_id == document_ids[d])
            .values(judged=1, changes=1)
        )
    db_session.commit()
    Planner(session_factory, projector=Projector(inline=True, runs=2)).run_once(force=True)
    db_session.expire_all()
    state = planner_repository.planner_state(db_session, campaign.id)
    assert state is not None
    assert state.stop_reason == "complete"
    assert external_plan(db_session, campaign.id) == []
    assert not old_pool & new_pairs


def test_existing_system_name_and_unknown_query_are_refused(db_session) -> None:
    campaign, syn, _metadata, _pool = make_settled(db_session)
    with pytest.raises(InvalidInput, match=r"system 'S02' is already in campaign 'settled'"):
        add_runs(db_session, campaign, Runs({"S02": syn.runs["S05"]}, "tsv"))
    foreign = {"S09": {**syn.runs["S05"], "not-a-query": ["D001", "D002"]}}
    with pytest.raises(InvalidInput, match=r"query 'not-a-query' is not a query of campaign"):
        add_runs(db_session, campaign, Runs(foreign, "tsv"))
    assert db_session.scalar(select(func.count()).where(System.campaign_id == campaign.id)) == 4
    assert campaign.collection_version == 0


def test_new_documents_come_with_their_metadata(db_session) -> None:
    campaign, syn, _metadata, _pool = make_settled(db_session)
    query = sorted(syn.runs["S05"])[0]
    lists = {q: list(docs) for q, docs in syn.runs["S05"].items()}
    lists[query] = ["NEW1", "NEW2", *lists[query][:3]]
    report = add_runs(
        db_session,
        campaign,
        Runs({"S06": lists}, "tsv"),
        Metadata({"NEW1": "artist-x", "NEW2": None}, {"NEW1": "rock", "NEW2": None}),
    )
    assert report.n_new_documents == 2
    stored = db_session.execute(
        select(Document.external_id, Document.artist, Document.genre).where(
            Document.campaign_id == campaign.id, Document.external_id.in_(["NEW1", "NEW2"])
        )
    ).all()
    assert sorted(stored) == [("NEW1", "artist-x", "rock"), ("NEW2", None, None)]
    assert report.pool_pairs - report.pool_pairs_before >= 2


# ------------------------------------------------------------------ command line


@pytest.fixture
def database(empty_database_url):
    """A database (SQLite file or Postgres schema) with the settled campaign."""
    upgrade_database(empty_database_url)
    engine = make_database_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign, syn, _metadata, _pool = make_settled(session)
            slug = campaign.slug
    finally:
        engine.dispose()
    return empty_database_url, slug, syn


def write_runs(path: Path, runs: dict[str, dict[str, list[str]]]) -> Path:
    path.write_text(
        "".join(
            f"{system}\t{query}\t{doc}\n"
            for system, per_query in runs.items()
            for query, docs in per_query.items()
            for doc in docs
        )
    )
    return path


def test_cli_adds_runs_and_refuses_what_it_cannot_add(database, tmp_path) -> None:
    url, slug, syn = database
    runs = write_runs(tmp_path / "s05.tsv", {"S05": syn.runs["S05"]})
    status, out, err = run(
        "campaign", "add-runs", slug, "--runs", str(runs), "--audio", str(clips()),
        "--database-url", url,
    )  # fmt: skip
    assert status == 0, err
    assert f"added 1 system(s) to {slug}: S05" in out
    assert "judging             goes on\n" in out
    status, _, err = run("campaign", "add-runs", slug, "--runs", str(runs), "--database-url", url)
    assert status == 2
    assert err == (
        f"mtcjudge: error: runs: system 'S05' is already in campaign '{slug}': new runs need "
        "names of their own\n"
    )
    broken = tmp_path / "broken.txt"
    broken.write_text("q1 Q0 d1 1 0.9 S07\nq1 Q0 d2 two 0.8 S07\n")
    status, _, err = run("campaign", "add-runs", slug, "--runs", str(broken), "--database-url", url)
    assert status == 2
    assert err.startswith(f"mtcjudge: error: {broken}:2: ")
    assert "rank" in err
    status, _, err = run("campaign", "add-runs", "nope", "--runs", str(runs), "--database-url", url)
    assert status == 2
    assert "no campaign 'nope'" in err
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = session.scalars(select(Campaign).where(Campaign.slug == slug)).one()
            names = session.scalars(
                select(System.name).where(System.campaign_id == campaign.id).order_by(System.name)
            ).all()
    finally:
        engine.dispose()
    assert names == [*OLD, "S05"]


# ------------------------------------------------------------------ API


def runs_text(runs: dict[str, dict[str, list[str]]]) -> str:
    return "".join(
        f"{system}\t{query}\t{doc}\n"
        for system, per_query in runs.items()
        for query, docs in per_query.items()
        for doc in docs
    )


def test_api_adds_runs_and_names_the_problem(db_session, session_factory) -> None:
    from fastapi.testclient import TestClient

    from mtcjudge.config import Settings
    from mtcjudge.main import create_app

    campaign, syn, _metadata, old_pool = make_settled(db_session)
    client = TestClient(
        create_app(Settings(organizer_token=TOKEN), session_factory=session_factory)
    )
    url = f"/api/campaigns/{campaign.slug}/runs"
    body = {"runs": [{"name": "s05.tsv", "text": runs_text({"S05": syn.runs["S05"]})}]}
    assert client.post(url, json=body).status_code == 401
    response = client.post(url, json=body, headers=AUTH)
    assert response.status_code == 201, response.text
    answer = response.json()
    assert answer["systems"] == ["S05"]
    assert answer["pool_pairs_before"] == len(old_pool)
    assert answer["pool_pairs"] == len(old_pool) + 13
    assert answer["stop_reason"] is None
    again = client.post(url, json=body, headers=AUTH)
    assert again.status_code == 400
    assert "system 'S05' is already in campaign" in again.json()["detail"]
    broken = {"runs": [{"name": "s06.txt", "text": "q Q0 d 1 0.5 S06\nq Q0 e x 0.4 S06\n"}]}
    response = client.post(url, json=broken, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["detail"] == "s06.txt, line 2: rank must be an integer, found 'x'"
    assert client.post("/api/campaigns/nope/runs", json=body, headers=AUTH).status_code == 404
    # a run file larger than the default body limit (64 KiB) is accepted on this route
    big = {
        q: [*docs, *(f"X{q}-{i:04d}" for i in range(2000))] for q, docs in syn.runs["S04"].items()
    }
    large = {"runs": [{"name": "s07.tsv", "text": runs_text({"S07": big})}]}
    assert len(large["runs"][0]["text"]) > 64 * 1024
    response = client.post(url, json=large, headers=AUTH)
    assert response.status_code == 201, response.text
    assert response.json()["new_documents"] == 16000
