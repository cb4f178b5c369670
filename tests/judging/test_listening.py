"""The listening rule (docs/web-architecture.md, "The listening rule"): a judgment is taken
only when each clip was played for min(listen_seconds, its duration), as the page reports,
and when the server sent enough of each clip for this lease for that to be true."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from mtcjudge.clips.rendition import served_bytes_estimate
from mtcjudge.judging.listening import EVIDENCE_SHARE, REPORT_TOLERANCE_MS, required_ms
from mtcjudge.models import Document, Judgment, Lease
from tests.factories import CampaignFixture, build_campaign
from tests.support import write_tone

CLIP_SECONDS = 2.0
RATE = 8000  # 16-bit mono: 16,000 bytes a second


def with_tones(db_session, tmp_path: Path, **settings) -> CampaignFixture:
    tmp_path.mkdir(parents=True, exist_ok=True)
    fx = build_campaign(db_session, audio_dir=tmp_path, **settings)
    for i, document in enumerate(fx.documents.values()):
        assert document.audio_path is not None
        write_tone(Path(document.audio_path), 220.0 + 30 * i, seconds=CLIP_SECONDS, rate=RATE)
        document.duration_seconds = CLIP_SECONDS
    db_session.flush()
    return fx


def next_pair(client, token) -> dict:
    response = client.get(f"/api/a/{token}/next")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "pair", body
    return body["pair"]


def submit(client, token, pair, *, query_ms=None, candidate_ms=None, client_id=None):
    body = {
        "lease_id": pair["lease_id"],
        "broad": 1,
        "fine": 40.0,
        "client_id": client_id or str(uuid.uuid4()),
    }
    if query_ms is not None:
        body["query_listen_ms"] = query_ms
    if candidate_ms is not None:
        body["candidate_listen_ms"] = candidate_ms
    return client.post(f"/api/a/{token}/judgments", json=body)


def fetch(client, pair, which: str, headers: dict | None = None) -> int:
    response = client.get(pair[which]["audio_url"], headers=headers or {})
    assert response.status_code in (200, 206), response.text
    return len(response.content)


def judgments(db_session) -> int:
    return db_session.scalar(select(func.count()).select_from(Judgment))


def assert_refused(response, *words: str) -> None:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "listening_required"
    for word in words:
        assert word in body["detail"], body["detail"]


def test_the_rule_is_in_every_pair(db_session, client, tmp_path) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=1.5)
    assert next_pair(client, fx.tokens[0])["listen_seconds"] == 1.5
    off = with_tones(db_session, tmp_path / "off", listen_seconds=0.0)
    assert next_pair(client, off.tokens[0])["listen_seconds"] == 0.0


def test_missing_or_short_listening_is_refused_with_a_clear_message(
    db_session, client, tmp_path
) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=1.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    fetch(client, pair, "query")
    fetch(client, pair, "candidate")
    assert_refused(submit(client, token, pair), "1 s", "query_listen_ms")
    assert_refused(submit(client, token, pair, query_ms=1000), "candidate_listen_ms")
    short = submit(client, token, pair, query_ms=1000, candidate_ms=600)
    assert_refused(short, "listen to the candidate for at least 1 s", "played 0.6 s")
    assert_refused(submit(client, token, pair, query_ms=0, candidate_ms=5000), "query")
    assert judgments(db_session) == 0
    # the pair is still the assessor's: listen on, then submit
    assert next_pair(client, token)["lease_id"] == pair["lease_id"]
    stored = submit(client, token, pair, query_ms=1000, candidate_ms=1000)
    assert stored.status_code == 201, stored.text


def test_a_clip_shorter_than_the_rule_is_played_to_its_end(db_session, client, tmp_path) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=30.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    fetch(client, pair, "query")
    fetch(client, pair, "candidate")
    need = required_ms(30.0, CLIP_SECONDS)
    assert need == 2000
    too_short = need - REPORT_TOLERANCE_MS - 1
    assert_refused(submit(client, token, pair, query_ms=need, candidate_ms=too_short), "2 s")
    # the page's clock may end a little before the header's duration
    within = need - REPORT_TOLERANCE_MS
    assert submit(client, token, pair, query_ms=within, candidate_ms=within).status_code == 201


def test_the_server_must_have_sent_enough_of_each_clip(db_session, client, tmp_path) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=1.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    # the page says both were played, but the server sent nothing
    assert_refused(
        submit(client, token, pair, query_ms=1500, candidate_ms=1500),
        "has not sent enough of the query",
    )
    size = fetch(client, pair, "query")
    # half a second's worth of the candidate is less than half of what one second is (of
    # the constant-bitrate MP3 every clip is served as)
    assert size == pytest.approx(served_bytes_estimate(CLIP_SECONDS), rel=0.1)
    needed = EVIDENCE_SHARE * served_bytes_estimate(CLIP_SECONDS) * (1.0 / CLIP_SECONDS)
    part = int(needed) - 1
    assert fetch(client, pair, "candidate", {"Range": f"bytes=0-{part - 1}"}) == part
    assert_refused(
        submit(client, token, pair, query_ms=1500, candidate_ms=1500),
        "has not sent enough of the candidate",
    )
    fetch(client, pair, "candidate", {"Range": f"bytes={part}-{part + 100}"})
    stored = submit(client, token, pair, query_ms=1500, candidate_ms=1500)
    assert stored.status_code == 201, stored.text
    # the evidence goes with the judgment
    judgment = db_session.scalars(select(Judgment)).one()
    lease = db_session.get(Lease, pair["lease_id"])
    db_session.refresh(lease)
    assert (judgment.served_query_bytes, judgment.served_candidate_bytes) == (size, part + 101)
    assert (lease.served_query_bytes, lease.served_candidate_bytes) == (size, part + 101)


def test_an_unknown_duration_asks_for_the_rules_seconds_and_some_audio(
    db_session, client, tmp_path
) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=3.0)
    db_session.execute(update(Document).values(duration_seconds=None))
    db_session.flush()
    token = fx.tokens[0]
    pair = next_pair(client, token)
    assert pair["query"]["duration_seconds"] is None
    fetch(client, pair, "query", {"Range": "bytes=0-99"})
    fetch(client, pair, "candidate", {"Range": "bytes=0-99"})
    # without a duration the clip cannot be shorter than the rule: 3 s each
    assert_refused(submit(client, token, pair, query_ms=2000, candidate_ms=3000), "3 s")
    assert submit(client, token, pair, query_ms=3000, candidate_ms=3000).status_code == 201


def test_a_clip_without_audio_cannot_be_judged_under_the_rule(db_session, client, tmp_path):
    fx = with_tones(db_session, tmp_path, listen_seconds=1.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    fetch(client, pair, "query")
    fetch(client, pair, "candidate")
    lease = db_session.get(Lease, pair["lease_id"])
    db_session.get(Document, lease.document_id).audio_path = None
    db_session.flush()
    assert_refused(submit(client, token, pair, query_ms=1000, candidate_ms=1000), "no audio")
    # and a file gone from the server is no evidence either
    db_session.get(Document, lease.document_id).audio_path = str(tmp_path / "gone.wav")
    db_session.flush()
    assert_refused(submit(client, token, pair, query_ms=1000, candidate_ms=1000), "missing")
    assert judgments(db_session) == 0


def test_with_the_rule_off_nothing_is_asked(db_session, client, tmp_path) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=0.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    response = submit(client, token, pair)
    assert response.status_code == 201, response.text
    judgment = db_session.scalars(select(Judgment)).one()
    assert (judgment.query_listen_ms, judgment.candidate_listen_ms) == (None, None)
    assert (judgment.served_query_bytes, judgment.served_candidate_bytes) == (0, 0)


def test_revisions_and_retries_are_not_gated_again(db_session, client, tmp_path) -> None:
    fx = with_tones(db_session, tmp_path, listen_seconds=1.0)
    token = fx.tokens[0]
    pair = next_pair(client, token)
    fetch(client, pair, "query")
    fetch(client, pair, "candidate")
    client_id = str(uuid.uuid4())
    first = submit(client, token, pair, query_ms=1000, candidate_ms=1000, client_id=client_id)
    assert first.status_code == 201
    # the page retries with the same client_id (and whatever listening): the stored one
    again = submit(client, token, pair, client_id=client_id)
    assert again.status_code == 200
    assert again.json()["judgment"]["id"] == first.json()["judgment"]["id"]
    judgment_id = first.json()["judgment"]["id"]
    revised = client.put(f"/api/a/{token}/judgments/{judgment_id}", json={"broad": 2, "fine": 90})
    assert revised.status_code == 200, revised.text


@pytest.mark.parametrize(
    ("seconds", "duration", "expected"),
    [(5.0, 30.0, 5000), (5.0, 2.5, 2500), (5.0, None, 5000), (0.25, 30.0, 250), (5.0, 0.0, 5000)],
)
def test_required_listening(seconds, duration, expected) -> None:
    assert required_ms(seconds, duration) == expected


def test_a_query_fetched_for_an_earlier_pair_counts_for_the_next_pairs_of_the_query(
    db_session, client, tmp_path
) -> None:
    """The browser keeps the query it fetched once (docs/audio.md, "Fetched once"): the next
    pair of the same query is judged without fetching it again, and what was sent of it is
    the evidence of every pair of the query, stored with each judgment."""
    fx = with_tones(db_session, tmp_path, listen_seconds=1.0, n_queries=1)
    token = fx.tokens[0]
    first = next_pair(client, token)
    size = fetch(client, first, "query")
    fetch(client, first, "candidate")
    assert submit(client, token, first, query_ms=1500, candidate_ms=1500).status_code == 201
    second = next_pair(client, token)
    assert second["lease_id"] != first["lease_id"]
    assert second["query"]["audio_url"] == first["query"]["audio_url"]  # one URL per query
    assert second["candidate"]["audio_url"] != first["candidate"]["audio_url"]
    # a browser with the query asks whether it changed and is answered 304, nothing sent
    etag = client.get(second["query"]["audio_url"], headers={"Range": "bytes=0-0"}).headers["etag"]
    cached = client.get(second["query"]["audio_url"], headers={"If-None-Match": etag})
    assert cached.status_code == 304
    assert cached.content == b""
    # the candidate is new: without it the pair is refused, with it taken
    assert_refused(
        submit(client, token, second, query_ms=1500, candidate_ms=1500),
        "has not sent enough of the candidate",
    )
    fetch(client, second, "candidate")
    assert submit(client, token, second, query_ms=1500, candidate_ms=1500).status_code == 201
    stored = db_session.scalars(select(Judgment).order_by(Judgment.id)).all()
    # the query's evidence is what was sent of it for any pair of the query (one byte of it
    # again, for the Range request above)
    assert [j.served_query_bytes for j in stored] == [size, size + 1]
    second_lease = db_session.get(Lease, second["lease_id"])
    db_session.refresh(second_lease)
    assert second_lease.served_query_bytes == 1  # sent for this pair itself
