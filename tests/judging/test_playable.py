"""Only playable pairs, ever: a pair whose query or candidate clip has no readable audio is
never handed out and never judged, whatever the share of clips that have one (none
included), and a clip that goes missing or unreadable after the import takes its pairs out
of judging, through the database, in every app process (docs/judging-at-scale.md)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select

from mtcjudge.campaign_engine.build import playable_mask
from mtcjudge.config import Settings
from mtcjudge.judging.repository import leases as lease_queries
from mtcjudge.main import create_app
from mtcjudge.models import (
    Assessor,
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    PlannerState,
    Query,
    utcnow,
)
from tests.factories import CampaignFixture, PlanningClient, build_campaign, write_clips
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN


@pytest.fixture
def make_client(session_factory):
    """A client of a new app (a process of its own, with its planner) that also answers the
    organizer API."""

    def make() -> PlanningClient:
        settings = Settings(organizer_token=ORGANIZER_TOKEN)
        return PlanningClient(create_app(settings, session_factory=session_factory))

    return make


def judge(client, token: str, lease_id: int):
    body = {"lease_id": lease_id, "broad": 1, "fine": 50.0, "client_id": str(uuid.uuid4())}
    return client.post(f"/api/a/{token}/judgments", json=body)


def every_tick(client) -> None:
    """The client's planner looks at the clips on every tick (by default every few seconds)."""
    client.app.state.planner.audio_check_seconds = 0.0


def pairs_of(db_session, document_id: int) -> list[Pair]:
    """The pool pairs a document is in, as query clip or as candidate."""
    query_ids = select(Query.id).where(Query.document_id == document_id)
    return list(
        db_session.scalars(
            select(Pair).where((Pair.document_id == document_id) | Pair.query_id.in_(query_ids))
        )
    )


def lease_document(db_session, lease_id: int) -> int:
    return db_session.get_one(Lease, lease_id).document_id


def test_a_campaign_without_audio_has_nothing_to_judge(db_session, make_client) -> None:
    fx = build_campaign(db_session, audio_dir=None)
    db_session.commit()
    pairs = db_session.scalars(select(Pair)).all()
    assert pairs
    assert not any(p.playable for p in pairs)  # the old rule counted every pair playable
    ids = [(p.query_id, p.document_id) for p in pairs]
    assert not playable_mask(db_session, fx.campaign.id, ids).any()

    client = make_client()
    answer = client.get(f"/api/a/{fx.tokens[0]}/next").json()
    assert answer["status"] == "done"
    assert answer["pair"] is None
    assert "cannot be played" in answer["message"]
    assert answer["progress"]["campaign_pairs"] == 0
    assert db_session.scalar(select(func.count()).select_from(Lease)) == 0

    state = db_session.get_one(PlannerState, fx.campaign.id)
    db_session.refresh(state)
    assert (state.pool_pairs, state.playable_pairs) == (len(pairs), 0)
    results = client.get(
        f"/api/campaigns/{fx.campaign.slug}/results", headers=ORGANIZER_HEADERS
    ).json()
    assert (results["pool_pairs"], results["playable_pairs"]) == (len(pairs), 0)
    in_pool = {p.document_id for p in pairs} | {q.document_id for q in fx.queries}
    names = {d.id: d.external_id for d in fx.documents.values()}
    assert results["unplayable_clips"] == sorted(names[d] for d in in_pool)


def test_a_pair_with_one_clip_missing_is_never_handed_out(db_session, make_client) -> None:
    fx = build_campaign(db_session)
    silent = fx.documents["cand0-1"]
    silent.audio_path = None
    db_session.commit()
    # the pool was stored with the clip's audio; the planner finds it gone on its first look
    client = make_client()
    handed: set[int] = set()
    for token in fx.tokens * 20:
        answer = client.get(f"/api/a/{token}/next").json()
        if answer["status"] != "pair":
            continue
        lease_id = answer["pair"]["lease_id"]
        handed.add(lease_document(db_session, lease_id))
        assert judge(client, token, lease_id).status_code == 201
    assert handed
    assert silent.id not in handed
    assert {p.playable for p in pairs_of(db_session, silent.id)} == {False}
    results = client.get(
        f"/api/campaigns/{fx.campaign.slug}/results", headers=ORGANIZER_HEADERS
    ).json()
    assert results["unplayable_clips"] == ["cand0-1"]
    assert results["playable_pairs"] == results["pool_pairs"] - len(pairs_of(db_session, silent.id))


def test_a_clip_gone_after_the_import_takes_its_pairs_out_until_it_returns(
    db_session, make_client, tmp_path: Path
) -> None:
    fx: CampaignFixture = build_campaign(db_session, audio_dir=tmp_path, n_assessors=3)
    db_session.commit()
    planning, other = make_client(), make_client()  # two app processes over one database
    every_tick(planning)
    token, second, third = fx.tokens
    answer = planning.get(f"/api/a/{token}/next").json()
    assert answer["status"] == "pair"
    lease_id = answer["pair"]["lease_id"]
    lease = db_session.get_one(Lease, lease_id)
    gone = db_session.get_one(Document, lease.document_id)
    clip = Path(gone.audio_path or "")
    moved = clip.with_suffix(".away")
    clip.rename(moved)

    # the planner's next tick marks the pairs, ends the lease and leaves them out of the plan
    planning.app.state.planner.run_once(force=True)
    db_session.expire_all()
    affected = pairs_of(db_session, gone.id)
    assert affected
    assert {p.playable for p in affected} == {False}
    assert {p.leased for p in affected} == {0}
    assert db_session.get_one(Lease, lease_id).state == "released"
    planned = set(db_session.scalars(select(PlanEntry.pair_id)))
    assert planned
    assert planned.isdisjoint({p.id for p in affected})

    # the other process refuses a judgment of it: 409, nothing stored
    refused = judge(other, token, lease_id)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "pair_unplayable"
    assert "missing or unreadable" in refused.json()["detail"]
    assert db_session.scalar(select(func.count()).select_from(Judgment)) == 0
    # ... and hands out other pairs only, to everyone
    for t in (token, second, third):
        answer = other.get(f"/api/a/{t}/next").json()
        assert answer["status"] == "pair"
        assert lease_document(db_session, answer["pair"]["lease_id"]) != gone.id
    results = other.get(
        f"/api/campaigns/{fx.campaign.slug}/results", headers=ORGANIZER_HEADERS
    ).json()
    assert results["unplayable_clips"] == [gone.external_id]
    assert results["playable_pairs"] == results["pool_pairs"] - len(affected)

    # the clip comes back: its pairs are handed out again
    moved.rename(clip)
    planning.app.state.planner.run_once(force=True)
    db_session.expire_all()
    assert {p.playable for p in pairs_of(db_session, gone.id)} == {True}
    results = other.get(
        f"/api/campaigns/{fx.campaign.slug}/results", headers=ORGANIZER_HEADERS
    ).json()
    assert (results["unplayable_clips"], results["playable_pairs"]) == ([], results["pool_pairs"])


def test_a_damaged_clip_is_unreadable(db_session, make_client, tmp_path: Path) -> None:
    fx = build_campaign(db_session, audio_dir=tmp_path)
    db_session.commit()
    client = make_client()
    every_tick(client)
    client.app.state.planner.run_once(force=True)
    damaged = fx.documents["query1"]
    Path(damaged.audio_path or "").write_bytes(b"RIFF, but not a wave file at all")
    client.app.state.planner.run_once(force=True)
    db_session.expire_all()
    assert {p.playable for p in pairs_of(db_session, damaged.id)} == {False}
    others = db_session.scalars(select(Pair).where(Pair.query_id == fx.queries[0].id)).all()
    assert {p.playable for p in others} == {True}
    write_clips(tmp_path, ["query1-again"])
    Path(tmp_path / "query1-again.wav").replace(damaged.audio_path or "")
    client.app.state.planner.run_once(force=True)
    db_session.expire_all()
    assert {p.playable for p in pairs_of(db_session, damaged.id)} == {True}


def test_an_unplayable_pair_takes_no_lease_slot(db_session) -> None:
    """The claim's conditional UPDATE itself refuses an unplayable pair: a request that read
    the pair as free before the planner marked it cannot lease it after."""
    fx = build_campaign(db_session)
    pair = db_session.scalars(select(Pair)).first()
    assert pair is not None
    pair.playable = False
    db_session.flush()
    expires = utcnow()
    assessor = db_session.scalars(select(Assessor.id)).first()
    assert assessor is not None
    assert lease_queries.take_slot(db_session, pair.id, 1, expires, assessor) is False
    pair.playable = True
    db_session.flush()
    assert lease_queries.take_slot(db_session, pair.id, 1, expires, assessor) is True
    assert fx.campaign.id == pair.campaign_id
