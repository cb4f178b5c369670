"""Hidden quality trials (docs/web-architecture.md, "Hidden quality trials"): when they are
handed out, which trial is made, that nothing in the API tells them from pool pairs, and
that they are never counted."""

from __future__ import annotations

import itertools
import json
import math
import re
import uuid
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select, update

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.exports.trec_files import qrels_lines
from mtcjudge.judging import trials
from mtcjudge.judging.repository import trials as trial_queries
from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    Query,
    Result,
    utcnow,
)
from mtcjudge.pool import repository as pool_repository
from mtcjudge.security import hash_token
from tests.factories import build_campaign
from tests.support import judge_pool, lease_of, next_body, no_genres, served_clip


# ---------------------------------------------------------------- helpers
def submit(client, token, lease_id, *, fine: float = 40.0, broad: int = 1):
    body = {"lease_id": lease_id, "broad": broad, "fine": fine, "client_id": str(uuid.uuid4())}
    response = client.post(f"/api/a/{token}/judgments", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def pair_counters(db_session) -> tuple[int, int, int]:
    db_session.expire_all()
    row = db_session.execute(
        select(func.sum(Pair.judged), func.sum(Pair.leased), func.sum(Pair.changes))
    ).one()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def shape(value: Any) -> Any:
    """The JSON's structure: keys and value types, not values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value[:1]]
    if isinstance(value, float) and value.is_integer():
        return "number"
    return type(value).__name__ if not isinstance(value, int | float) else "number"


def assessor_id(db_session, token: str) -> int:
    return db_session.scalars(
        select(Assessor.id).where(Assessor.token_hash == hash_token(token))
    ).one()


# ---------------------------------------------------------------- the draw
@pytest.mark.parametrize("rate", [0.05, 0.1, 0.3, 0.5, 1.0])
def test_the_share_of_trials_is_the_campaigns_rate(rate) -> None:
    n = 20_000
    handed: list[bool] = []
    for handout in range(n):
        last = handed[-1] if handed else False
        draw = trials.unit_draw(7, 3, handout, "trial")
        handed.append(trials.trial_due(rate, handout, last, draw))
    assert not any(handed[: trials.WARMUP])
    assert not any(a and b for a, b in itertools.pairwise(handed))
    expected = min(rate, 0.5)
    share = sum(handed) / n
    # 5 standard errors of a binomial share (the draws are fixed: this never flickers)
    assert abs(share - expected) <= 5 * math.sqrt(expected * (1 - expected) / n), share
    assert not any(trials.trial_due(0.0, h, False, 0.0) for h in range(100))


def test_a_hand_out_always_draws_the_same() -> None:
    assert trials.unit_draw(1, 2, 3, "trial") == trials.unit_draw(1, 2, 3, "trial")
    draws = {trials.unit_draw(1, 2, h, "trial") for h in range(1000)}
    assert len(draws) == 1000
    assert all(0.0 <= d < 1.0 for d in draws)


# ---------------------------------------------------------------- hand-outs through the API
def test_a_reference_trial_looks_exactly_like_a_pool_pair(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=2, quality_rate=1.0, target=1.0)
    no_genres(db_session, fx)  # no anchors: the first trial is the reference
    token = fx.tokens[0]
    pools = judge_pool(db_session, client, token, trials.WARMUP)
    body = next_body(client, token)
    trial = body["pair"]
    lease = lease_of(db_session, trial)
    assert (lease.kind, lease.pair_id, lease.repeat_of) == ("reference", None, None)
    query_document = db_session.get(Query, lease.query_id).document_id
    assert lease.document_id == query_document  # the query against itself
    assert lease.query_id == lease_of(db_session, pools[-1]).query_id  # the current query
    # the same JSON, key for key and type for type, as the pool pairs
    for pool in pools:
        assert shape(pool) == shape(trial)
    assert shape(body) == shape({**body, "pair": pools[-1]})
    assert trial["same_query_as_previous"] is True
    assert trial["query_number"] == pools[-1]["query_number"]
    # the query's URL is the query's, the same as for its pool pairs; the candidate's names
    # the lease only
    assert trial["query"]["audio_url"] == pools[-1]["query"]["audio_url"]
    assert trial["candidate"]["audio_url"] == f"/a/{token}/lease/{trial['lease_id']}/candidate"
    text = json.dumps(body)
    for external_id in fx.external_ids:
        assert external_id not in text
    assert "reference" not in text
    assert "kind" not in text
    assert not re.search(r"document|pair_id|repeat", text)
    # a candidate number that no pool pair of the query has
    n_pairs = db_session.scalar(select(func.count()).where(Pair.query_id == lease.query_id))
    assert trial["candidate_number"] == n_pairs + 1
    # judged like any pair; shown in the history the same way, with the same number
    answer = submit(client, token, trial["lease_id"], broad=2, fine=97.0)
    assert shape(answer["judgment"]) == shape(client.get(f"/api/a/{token}/history").json()[1])
    assert answer["progress"]["assessor_judged"] == trials.WARMUP + 1
    history = client.get(f"/api/a/{token}/history").json()
    assert len(history) == trials.WARMUP + 1
    latest = history[0]
    assert (latest["query_number"], latest["candidate_number"]) == (
        trial["query_number"],
        trial["candidate_number"],
    )
    assert latest["candidate"]["audio_url"] == trial["candidate"]["audio_url"]
    stored = db_session.get(Judgment, answer["judgment"]["id"])
    assert (stored.kind, stored.lease_id, stored.fine) == ("reference", trial["lease_id"], 97.0)
    # and the clip route serves the trial's clips like any other: the candidate as another
    # excerpt of the query clip, as long and as large, so no identical waveform shows
    served = client.get(trial["query"]["audio_url"])
    assert served.status_code == 200
    assert served.headers["content-type"] == "audio/mpeg"
    candidate = client.get(trial["candidate"]["audio_url"])
    assert candidate.status_code == 200
    assert candidate.headers["content-type"] == "audio/mpeg"
    assert len(candidate.content) == len(served.content)
    assert candidate.content != served.content
    # a pool pair's candidate is its clip's rendition, the same MP3 form
    pool = pools[-1]
    pool_doc = db_session.get(Document, lease_of(db_session, pool).document_id)
    pool_clip = client.get(pool["candidate"]["audio_url"])
    assert pool_clip.content == served_clip(pool_doc)
    assert pool_clip.headers["content-type"] == "audio/mpeg"


def test_trials_never_touch_the_pool_and_are_never_counted(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=2, quality_rate=1.0, target=1.0)
    token = fx.tokens[0]
    judge_pool(db_session, client, token, trials.WARMUP)
    counters = pair_counters(db_session)
    means = engine_repository.pair_means(db_session, fx.campaign.id, "fine")
    counts = pool_repository.judgment_counts(db_session, fx.campaign.id)
    campaign = db_session.get(Campaign, fx.campaign.id)
    qrels = list(qrels_lines(db_session, campaign, "fine", "mean"))
    progress = next_body(client, token)
    trial = progress["pair"]
    lease = lease_of(db_session, trial)
    assert lease.kind != "pool"
    assert pair_counters(db_session) == counters  # handed out: no slot taken
    answer = submit(client, token, trial["lease_id"], fine=3.0)
    assert pair_counters(db_session) == counters  # judged: nothing counted
    assert answer["progress"]["campaign_judged"] == progress["progress"]["campaign_judged"]
    assert answer["progress"]["assessor_judged"] == progress["progress"]["assessor_judged"] + 1
    revised = client.put(
        f"/api/a/{token}/judgments/{answer['judgment']['id']}", json={"broad": 0, "fine": 1.0}
    )
    assert revised.status_code == 200, revised.text
    assert pair_counters(db_session) == counters  # revised: the planner has nothing to read
    db_session.expire_all()
    assert engine_repository.pair_means(db_session, fx.campaign.id, "fine") == means
    assert pool_repository.judgment_counts(db_session, fx.campaign.id) == counts
    assert list(qrels_lines(db_session, campaign, "fine", "mean")) == qrels
    kinds = db_session.scalars(select(Judgment.kind).order_by(Judgment.id)).all()
    assert kinds == ["pool"] * trials.WARMUP + [lease.kind]
    # the next hand-out is a pool pair again: never two trials in a row
    assert lease_of(db_session, next_body(client, token)["pair"]).kind == "pool"


def test_trials_alternate_with_pool_pairs_at_rate_one(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=4, k=3, quality_rate=1.0, target=1.0)
    token = fx.tokens[0]
    kinds = []
    for _ in range(14):
        body = next_body(client, token)
        if body["status"] != "pair":
            break
        kinds.append(lease_of(db_session, body["pair"]).kind)
        submit(client, token, body["pair"]["lease_id"])
    assert kinds[: trials.WARMUP] == ["pool"] * trials.WARMUP
    assert all(k in ("reference", "anchor", "repeat") for k in kinds[trials.WARMUP :: 2]), str(
        kinds
    )
    assert all(k == "pool" for k in kinds[trials.WARMUP + 1 :: 2]), str(kinds)
    assert len(kinds) == 14


def test_a_rate_of_a_fifth_hands_out_about_a_fifth(db_session, session_factory) -> None:
    """One assessor judges a whole pool of 60-odd pairs; with trials always available (genres
    for anchors), about a fifth of the hand-outs after the warm-up are trials."""
    from mtcjudge.db import session_scope
    from mtcjudge.judging import service

    fx = build_campaign(
        db_session, n_systems=5, n_queries=12, k=5, n_assessors=1, quality_rate=0.2, target=1.0
    )
    token = fx.tokens[0]
    db_session.commit()
    kinds = []
    for _ in range(200):
        with session_scope(session_factory) as session:
            result = service.next_pair(session, token)
            if result.lease is None:
                break
            kinds.append(result.lease.kind)
            service.submit_judgment(
                session,
                token,
                lease_id=result.lease.id,
                broad=1,
                fine=50.0,
                client_id=str(uuid.uuid4()),
            )
    n_pool = db_session.scalar(select(func.count()).select_from(Pair))
    assert kinds.count("pool") == n_pool  # every pool pair, each once
    after = kinds[trials.WARMUP :]
    share = sum(k != "pool" for k in after) / len(after)
    assert 0.1 <= share <= 0.3, (share, len(after))


# ---------------------------------------------------------------- which trial
def test_anchors_are_clearly_unlike_the_query_and_never_retrieved_for_it(db_session) -> None:
    fx = build_campaign(db_session, n_queries=6, k=3)
    query = fx.queries[0]
    query_doc = db_session.get(Document, query.document_id)
    retrieved = set(
        db_session.scalars(select(Result.document_id).where(Result.query_id == query.id))
    )
    query_docs = set(db_session.scalars(select(Query.document_id)))
    a = assessor_id(db_session, fx.tokens[0])
    target = trial_queries.trial_query(db_session, a, query.id)
    assert target is not None
    assert (target.genre, target.artist) == (query_doc.genre, query_doc.artist)
    found = set()
    for salt in range(0, 2**31, 2**31 // 40):
        anchor = trial_queries.anchor_document(db_session, fx.campaign.id, a, target, salt)
        assert anchor is not None
        found.add(anchor)
    assert len(found) > 1  # the salt spreads the choice
    for document_id in found:
        document = db_session.get(Document, document_id)
        assert document.audio_path is not None
        assert document.genre is not None
        assert document.genre != query_doc.genre
        assert document.artist != query_doc.artist
        assert document_id not in retrieved
        assert document_id not in query_docs
    # without genres in the campaign there are no anchors
    no_genres(db_session, fx)
    target = trial_queries.trial_query(db_session, a, query.id)
    assert target is not None
    assert trial_queries.anchor_document(db_session, fx.campaign.id, a, target, 0) is None


def test_an_anchor_with_another_artist_only(db_session) -> None:
    fx = build_campaign(db_session, n_queries=2, k=3)
    query = fx.queries[0]
    query_doc = db_session.get(Document, query.document_id)
    a = assessor_id(db_session, fx.tokens[0])
    # every other-genre clip by the query's artist: no anchor left
    db_session.execute(
        update(Document)
        .where(Document.campaign_id == fx.campaign.id, Document.genre != query_doc.genre)
        .values(artist=query_doc.artist)
    )
    db_session.flush()
    target = trial_queries.trial_query(db_session, a, query.id)
    assert target is not None
    assert trial_queries.anchor_document(db_session, fx.campaign.id, a, target, 0) is None


def test_repeats_are_of_judgments_made_long_enough_ago(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=4, k=3, n_assessors=1, target=1.0)
    token = fx.tokens[0]
    a = assessor_id(db_session, token)
    pools = judge_pool(db_session, client, token, trials.REPEAT_GAP - 1)
    # nine hand-outs: the coming tenth is not yet REPEAT_GAP after the first
    assert trial_queries.repeat_judgment(db_session, a, 0, trials.REPEAT_GAP, 0) is None
    pools += judge_pool(db_session, client, token, 1)
    first = db_session.scalars(select(Judgment).order_by(Judgment.id)).first()
    found = trial_queries.repeat_judgment(db_session, a, 0, trials.REPEAT_GAP, 0)
    assert found == (first.id, first.query_id, first.document_id)
    # the current query's when it has one
    pools += judge_pool(db_session, client, token, 3)
    old = db_session.scalars(select(Judgment).order_by(Judgment.id).limit(4)).all()
    queries = {j.query_id for j in old}
    for query_id in queries:
        for salt in range(5):
            found = trial_queries.repeat_judgment(db_session, a, query_id, trials.REPEAT_GAP, salt)
            assert found is not None
            assert found[1] == query_id
    # handed out as a trial: only repeats can be made (no genres; references used up)
    no_genres(db_session, fx)
    for query in fx.queries:
        db_session.add(
            Lease(
                campaign_id=fx.campaign.id,
                query_id=query.id,
                document_id=query.document_id,
                assessor_id=a,
                kind="reference",
                state="released",
                expires_at=utcnow(),
            )
        )
    fx.campaign.quality_rate = 1.0
    db_session.flush()
    pools += judge_pool(db_session, client, token, 1)  # never two trials in a row
    trial = next_body(client, token)["pair"]
    lease = lease_of(db_session, trial)
    assert lease.kind == "repeat"
    original = db_session.get(Judgment, lease.repeat_of)
    assert (original.query_id, original.document_id) == (lease.query_id, lease.document_id)
    assert original.assessor_id == a
    shown = {(p["query_number"], p["candidate_number"]) for p in pools}
    assert (trial["query_number"], trial["candidate_number"]) not in shown
    answer = submit(client, token, trial["lease_id"], fine=12.0)
    stored = db_session.get(Judgment, answer["judgment"]["id"])
    assert (stored.kind, stored.repeat_of) == ("repeat", original.id)
    # both are kept, the repeat beside the original
    db_session.refresh(original)
    assert original.kind == "pool"


def test_each_reference_is_handed_out_once(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=2, k=3, quality_rate=1.0, target=1.0)
    no_genres(db_session, fx)
    token = fx.tokens[0]
    references = []
    for _ in range(20):
        body = next_body(client, token)
        if body["status"] != "pair":
            break
        lease = lease_of(db_session, body["pair"])
        if lease.kind == "reference":
            references.append(lease.query_id)
        submit(client, token, body["pair"]["lease_id"])
    assert references
    assert len(references) == len(set(references))


# ---------------------------------------------------------------- trial leases end
def test_a_lapsed_or_released_trial_just_ends(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=2, quality_rate=1.0, target=1.0)
    token = fx.tokens[0]
    judge_pool(db_session, client, token, trials.WARMUP)
    trial = next_body(client, token)["pair"]
    counters = pair_counters(db_session)
    db_session.execute(
        update(Lease)
        .where(Lease.id == trial["lease_id"])
        .values(expires_at=utcnow() - timedelta(minutes=1))
    )
    db_session.flush()
    following = next_body(client, token)["pair"]
    assert lease_of(db_session, trial).state == "expired"
    assert lease_of(db_session, following).kind == "pool"
    # the pool pair took its slot; the trial gave none back
    judged, leased, changes = pair_counters(db_session)
    assert (judged, leased, changes) == (counters[0], counters[1] + 1, counters[2])
    # a late answer to the lapsed trial is still stored as what it is
    late = submit(client, token, trial["lease_id"])
    assert db_session.get(Judgment, late["judgment"]["id"]).kind == lease_of(db_session, trial).kind
    assert client.post(f"/api/a/{token}/pause").status_code == 204
    assert pair_counters(db_session) == counters


# ---------------------------------------------------------------- set aside, paused
@pytest.mark.parametrize("what", ["set_aside_at", "paused_at"])
def test_set_aside_or_paused_assessors_are_handed_nothing(db_session, client, what) -> None:
    fx = build_campaign(db_session, n_queries=2, target=1.0)
    token = fx.tokens[0]
    held = next_body(client, token)["pair"]
    person = db_session.get(Assessor, assessor_id(db_session, token))
    setattr(person, what, utcnow())
    db_session.flush()
    body = next_body(client, token)
    assert (body["status"], body["pair"]) == ("done", None)
    assert "Thank you" in body["message"]
    # the pair they held went back to the pool
    assert lease_of(db_session, held).state == "released"
    assert pair_counters(db_session)[1] == 0
    person.pause_reason = "Thanks! We will be in touch about your next session."
    db_session.flush()
    assert next_body(client, token)["message"] == person.pause_reason
    assert db_session.scalar(select(func.count()).select_from(Lease)) == 1


def test_a_set_aside_assessors_submission_is_refused_kindly(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=2, target=1.0)
    token = fx.tokens[0]
    pair = next_body(client, token)["pair"]
    db_session.get(Assessor, assessor_id(db_session, token)).set_aside_at = utcnow()
    db_session.flush()
    body = {"lease_id": pair["lease_id"], "broad": 1, "fine": 5.0, "client_id": "x-1"}
    response = client.post(f"/api/a/{token}/judgments", json=body)
    assert response.status_code == 409
    assert response.json()["error"] == "assessor_paused"
    assert "Thank you" in response.json()["detail"]
    assert db_session.scalar(select(func.count()).select_from(Judgment)) == 0


def test_a_paused_assessor_may_finish_the_pair_they_hold(db_session, client) -> None:
    fx = build_campaign(db_session, n_queries=2, target=1.0)
    token = fx.tokens[0]
    pair = next_body(client, token)["pair"]
    db_session.get(Assessor, assessor_id(db_session, token)).paused_at = utcnow()
    db_session.flush()
    submit(client, token, pair["lease_id"])
    assert pair_counters(db_session)[:2] == (1, 0)
    assert next_body(client, token)["status"] == "done"
