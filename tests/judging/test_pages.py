"""The assessor's HTML pages: welcome and consent, the judging page shell, and the audio clips."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from mtcjudge.judging.clip_urls import candidate_clip_url, query_clip_url
from mtcjudge.models import Assessor, Campaign, Document, Judgment, Lease, Pair, Query, utcnow
from mtcjudge.security import hash_token
from tests.factories import CampaignFixture, build_campaign
from tests.support import served_clip, write_tone


@pytest.fixture
def fx(db_session, tmp_path) -> CampaignFixture:
    fixture = build_campaign(db_session, audio_dir=tmp_path, consented=False)
    for i, document in enumerate(fixture.documents.values()):
        assert document.audio_path is not None
        write_tone(Path(document.audio_path), 220.0 + 40 * i, seconds=0.5, rate=8000)
    db_session.commit()
    return fixture


def assessor(db_session, token: str) -> Assessor:
    return db_session.scalars(
        select(Assessor).where(Assessor.token_hash == hash_token(token))
    ).one()


def lease(
    db_session, fx: CampaignFixture, token: str, query_index: int = 0, candidate: str = ""
) -> Lease:
    """Lease the first candidate of a query (or ``candidate``) to the assessor, as the API
    would."""
    query = fx.queries[query_index]
    candidate_document = fx.documents[candidate or f"cand{query_index}-1"]
    pair = db_session.scalars(
        select(Pair).where(Pair.query_id == query.id, Pair.document_id == candidate_document.id)
    ).one()
    row = Lease(
        campaign_id=fx.campaign.id,
        pair_id=pair.id,
        query_id=query.id,
        document_id=candidate_document.id,
        assessor_id=assessor(db_session, token).id,
        expires_at=utcnow() + timedelta(minutes=10),
    )
    db_session.add(row)
    db_session.commit()
    return row


def consent(db_session, token: str) -> None:
    assessor(db_session, token).consented_at = utcnow()
    db_session.commit()


# ---------------------------------------------------------------- welcome and consent


def test_welcome_page_explains_the_task_and_asks_for_consent(fx, client) -> None:
    response = client.get(f"/a/{fx.tokens[0]}")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert "Welcome, Volunteer 1" in html
    assert "Test campaign" in html
    for words in ("BROAD", "FINE", "Not similar", "Somewhat similar", "Very similar", "30 seconds"):
        assert words in html
    assert "<kbd>Q</kbd>" in html
    assert "<kbd>Enter</kbd>" in html
    assert 'type="checkbox" name="consent"' in html
    assert f'action="/a/{fx.tokens[0]}/consent"' in html
    assert "Start judging" in html
    assert "/static/css/app.css" in html


def test_judging_page_redirects_to_welcome_until_consent(fx, client) -> None:
    token = fx.tokens[0]
    response = client.get(f"/a/{token}/judge", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"/a/{token}"


def test_consent_sets_consented_at_and_redirects_to_judging(db_session, fx, client) -> None:
    token = fx.tokens[0]
    response = client.post(f"/a/{token}/consent", data={"consent": "yes"}, follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == f"/a/{token}/judge"
    db_session.expire_all()
    first = assessor(db_session, token).consented_at
    assert first is not None
    page = client.get(f"/a/{token}/judge")
    assert page.status_code == 200
    assert f'data-api="/api/a/{token}"' in page.text
    # coming back: the welcome page offers to continue, and consent keeps its first time
    assert "Continue judging" in client.get(f"/a/{token}").text
    client.post(f"/a/{token}/consent", data={"consent": "yes"}, follow_redirects=False)
    db_session.expire_all()
    assert assessor(db_session, token).consented_at == first
    # the other assessor has not consented
    assert assessor(db_session, fx.tokens[1]).consented_at is None


def test_consent_without_the_checkbox_asks_again(db_session, fx, client) -> None:
    token = fx.tokens[0]
    response = client.post(f"/a/{token}/consent", data={}, follow_redirects=False)
    assert response.status_code == 400
    assert "Please tick the box" in response.text
    db_session.expire_all()
    assert assessor(db_session, token).consented_at is None


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/a/{token}"),
        ("GET", "/a/{token}/judge"),
        ("POST", "/a/{token}/consent"),
        ("GET", "/a/{token}/query/" + "0" * 32),
        ("GET", "/a/{token}/lease/1/candidate"),
    ],
)
def test_unknown_token_gets_a_friendly_404_page(fx, client, method, path) -> None:
    response = client.request(
        method, path.format(token="not-a-real-token"), data={"consent": "yes"}
    )
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")
    assert "This invitation link is not valid" in response.text
    assert "<html" in response.text


# ---------------------------------------------------------------- the judging page


def test_judging_page_is_a_blind_shell(db_session, fx, client) -> None:
    token = fx.tokens[0]
    consent(db_session, token)
    lease(db_session, fx, token)
    db_session.add(
        Judgment(
            campaign_id=fx.campaign.id,
            query_id=fx.queries[1].id,
            document_id=fx.documents["cand1-2"].id,
            assessor_id=assessor(db_session, fx.tokens[1]).id,
            broad=2,
            fine=91.0,
            client_id="other",
        )
    )
    db_session.commit()
    html = client.get(f"/a/{token}/judge").text
    for system in fx.systems:
        assert system.name not in html
        assert system.team is None or system.team not in html
    for external_id in fx.external_ids:
        assert external_id not in html
    for document in fx.documents.values():
        assert f"/audio/{document.id}" not in html
    assert "/lease/" not in html  # the clips' URLs come from the API, per lease
    # "rank" appears only in the campaign-wide wording, never as a result's rank
    allowed = ("Ranking confidence", "ranking of the systems", "rank the systems")
    stripped = html.replace(token, "")
    for phrase in allowed:
        stripped = stripped.replace(phrase, "")
    assert "rank" not in stripped.lower()
    # (the page carries the assessor's own random token, which may hold "91" by chance)
    assert "91" not in re.sub(r"#[0-9a-fA-F]{3,8}\b", "", html.replace(token, ""))
    # the parts the script drives are there
    for element_id in (
        'id="main-query-player"',
        'id="main-candidate-player"',
        'id="main-fine"',
        'name="main-broad"',
        'id="submit-button"',
        'id="pause-button"',
        'id="history-list"',
        'id="help-dialog"',
        'id="edit-dialog"',
    ):
        assert element_id in html
    assert 'data-state="loading"' in html
    assert "/static/js/judge.js" in html


def test_closed_campaign_shows_the_thank_you_state(db_session, fx, client) -> None:
    token = fx.tokens[0]
    consent(db_session, token)
    db_session.get(Campaign, fx.campaign.id).status = "closed"
    db_session.commit()
    html = client.get(f"/a/{token}/judge").text
    assert 'data-state="done"' in html
    done = re.search(r'<section class="state state--done[^>]*>', html)
    assert done is not None
    assert "hidden" not in done.group(0)


def test_static_assets_are_served(client) -> None:
    for path, kind in (
        ("/static/css/app.css", "text/css"),
        ("/static/js/judge.js", "javascript"),
        ("/static/favicon.svg", "image/svg+xml"),
    ):
        response = client.get(path)
        assert response.status_code == 200, path
        assert kind in response.headers["content-type"]


# ---------------------------------------------------------------- audio


def clip_url(db_session, token: str, lease_id: int, which: str) -> str:
    """A lease's clip URL: the candidate's names the lease, the query's is the query's
    (mtcjudge.judging.clip_urls); a lease that does not exist gives a query no one has."""
    if which == "candidate":
        return candidate_clip_url(token, lease_id)
    lease_row = db_session.get(Lease, lease_id)
    if lease_row is None:
        return query_clip_url(token, 10**9)
    return query_clip_url(token, db_session.get(Query, lease_row.query_id).document_id)


def served(db_session, lease_id: int) -> tuple[int, int]:
    db_session.expire_all()
    row = db_session.get(Lease, lease_id)
    return row.served_query_bytes, row.served_candidate_bytes


def test_audio_of_a_leased_pair_is_served_with_range_support(db_session, fx, client) -> None:
    token = fx.tokens[0]
    row = lease(db_session, fx, token)
    query_document = fx.documents["query0"]
    expected = {"query": 0, "candidate": 0}
    for which, document_id in (("query", query_document.id), ("candidate", row.document_id)):
        url = clip_url(db_session, token, row.id, which)
        document = db_session.get(Document, document_id)
        content = served_clip(document)
        whole = client.get(url)
        assert whole.status_code == 200
        assert whole.headers["content-type"] == "audio/mpeg"
        assert whole.headers["accept-ranges"] == "bytes"
        assert whole.content == content
        part = client.get(url, headers={"Range": "bytes=0-99"})
        assert part.status_code == 206
        assert part.headers["content-range"] == f"bytes 0-99/{len(content)}"
        assert part.content == content[:100]
        tail = client.get(url, headers={"Range": "bytes=200-"})
        assert tail.status_code == 206
        assert tail.content == content[200:]
        # the server's evidence: every byte it sent for the lease, ranges as sent
        expected[which] = len(content) + 100 + len(content) - 200
        assert served(db_session, row.id) == (expected["query"], expected["candidate"])


def test_a_transfer_cut_short_counts_only_what_was_sent(tmp_path) -> None:
    """The client goes away after the first chunk: the lease is credited with that chunk
    only (the count is of what the server took, recorded even when the send fails)."""
    import anyio

    from mtcjudge.judging.clip_pages import CountedFileResponse

    path = tmp_path / "clip.wav"
    write_tone(path, 220.0, seconds=2.0, rate=44100)  # several 64 KiB chunks
    recorded: list[int] = []
    bodies: list[int] = []

    async def record(n: int) -> None:
        recorded.append(n)

    async def send(message) -> None:
        if message["type"] == "http.response.body":
            if bodies:
                raise OSError("the client went away")
            bodies.append(len(message["body"]))

    async def receive():
        await anyio.sleep(10)
        return {"type": "http.disconnect"}

    scope = {
        "type": "http",
        "method": "GET",
        "headers": [],
        "asgi": {"spec_version": "2.4"},
    }
    response = CountedFileResponse(path, record=record, media_type="audio/wav")
    with pytest.raises(OSError, match="went away"):
        anyio.run(response, scope, receive, send)
    assert bodies == [64 * 1024]
    assert recorded == [64 * 1024]
    assert path.stat().st_size > 2 * 64 * 1024


def test_a_clip_url_never_names_the_document(db_session, fx, client) -> None:
    token = fx.tokens[0]
    row = lease(db_session, fx, token)
    pair = client.get(f"/api/a/{token}/next")
    consent(db_session, token)
    pair = client.get(f"/api/a/{token}/next").json()["pair"]
    assert pair["lease_id"] == row.id
    assert pair["query"]["audio_url"] == clip_url(db_session, token, row.id, "query")
    assert pair["candidate"]["audio_url"] == clip_url(db_session, token, row.id, "candidate")
    # the old route, which named documents, is gone
    assert client.get(f"/a/{token}/audio/{row.document_id}").status_code == 404


def test_audio_of_documents_outside_the_assessors_pairs_is_404(db_session, fx, client) -> None:
    token, other = fx.tokens
    row = lease(db_session, fx, token)
    # another assessor's lease opens nothing for this one
    for which in ("query", "candidate"):
        response = client.get(clip_url(db_session, other, row.id, which))
        assert response.status_code == 404
        assert "not part of your pairs" in response.text
        assert client.get(clip_url(db_session, token, row.id + 1, which)).status_code == 404
        assert client.get(clip_url(db_session, token, 999999, which)).status_code == 404
    assert client.get(f"/a/{token}/lease/{row.id}/other").status_code == 404
    assert served(db_session, row.id) == (0, 0)


def test_audio_of_judged_pairs_stays_playable_for_revision(db_session, fx, client) -> None:
    token = fx.tokens[0]
    done = lease(db_session, fx, token, query_index=1, candidate="cand1-2")
    done.state = "done"
    db_session.add(
        Judgment(
            campaign_id=fx.campaign.id,
            query_id=fx.queries[1].id,
            document_id=done.document_id,
            assessor_id=assessor(db_session, token).id,
            broad=1,
            fine=50.0,
            client_id="c-1",
            lease_id=done.id,
        )
    )
    db_session.commit()
    assert client.get(clip_url(db_session, token, done.id, "candidate")).status_code == 200
    assert client.get(clip_url(db_session, token, done.id, "query")).status_code == 200
    assert client.get(clip_url(db_session, fx.tokens[1], done.id, "query")).status_code == 404


def test_missing_audio_file_is_a_404_not_a_500(db_session, fx, client) -> None:
    token = fx.tokens[0]
    row = lease(db_session, fx, token)
    Path(db_session.get(Document, row.document_id).audio_path).unlink()
    response = client.get(clip_url(db_session, token, row.id, "candidate"))
    assert response.status_code == 404
    assert "missing" in response.text
    assert client.get(clip_url(db_session, token, row.id, "query")).status_code == 200
