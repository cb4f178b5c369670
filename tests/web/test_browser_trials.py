"""A hidden quality trial in a real browser: after an assessor's first pairs, the page is
handed a reference trial (the query against itself) and it is played, scored and stored
exactly as a pool pair is, under the campaign's listening rule.

The site is :mod:`tests.web.judging_site`'s (uvicorn in a thread on its own database:
SQLite, or a Postgres schema when ``TEST_DATABASE_URL`` is set), here with every hand-out
after the warm-up a trial; Chromium drives the page through Playwright, as a volunteer
does: consent, the volume check, then each pair's clips played (Web Audio) past the rule,
scored with the keyboard and submitted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.judging import trials
from mtcjudge.judging.clip_urls import query_clip_key, query_clip_url
from mtcjudge.models import ClipDelivery, Document, Judgment, Lease, Query
from mtcjudge.security import hash_token
from tests.browser import chromium_page, needs_chromium
from tests.support import served_clip
from tests.web.judging_site import (
    TOKEN,
    LiveServer,
    player,
    serve,
    start_judging,
    wait_ready,
    wait_until,
)

#: the campaign's listening rule: each clip played this long before a score is taken
LISTEN_SECONDS = 0.5
#: every clip lasts this long (longer than the rule, so the rule is what gates Submit)
CLIP_SECONDS = 3.0

pytestmark = needs_chromium


@pytest.fixture
def live_server(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """3 systems x 2 queries x k=3 over real WAV clips (no genres: the trial is the
    reference), every hand-out after the warm-up a trial, under a listening rule."""
    with serve(
        empty_database_url,
        tmp_path,
        listen_seconds=LISTEN_SECONDS,
        quality_rate=1.0,
        clip_seconds=CLIP_SECONDS,
    ) as server:
        yield server


def judge_shown_pair(page: Any, judged_before: int, previous: int | None) -> dict[str, Any]:
    """Score with the keyboard, play both clips past the rule, submit; what the page showed
    (once it shows a lease other than ``previous``)."""
    from playwright.sync_api import expect

    judge = page.locator("#judge")
    expect(judge).to_have_attribute("data-state", "pair")
    if previous is not None:
        expect(judge).not_to_have_attribute("data-lease-id", str(previous))
    expect(judge).not_to_have_attribute("data-lease-id", "")
    wait_ready(page)
    shown = {
        "lease_id": int(judge.get_attribute("data-lease-id") or 0),
        "label": page.locator("#pair-label").inner_text(),
        "durations": [
            float(
                page.locator(f"#main-{role}-player [data-role=wave]").get_attribute("aria-valuemax")
                or "nan"
            )
            for role in ("query", "candidate")
        ],
    }
    submit = page.locator("#submit-button")
    page.keyboard.press("3")
    page.keyboard.press("ArrowRight")
    # scored but not heard: the rule holds Submit back, for a trial as for a pool pair
    expect(submit).to_be_disabled()
    expect(page.locator("#submit-hint")).to_have_text(
        f"To submit: listen to both clips for {LISTEN_SECONDS:g} s each."
    )
    heard = (LISTEN_SECONDS + 0.3) * 1000
    page.keyboard.press("q")
    wait_until(page, f"+document.querySelector('#main-query-player').dataset.listenedMs > {heard}")
    page.keyboard.press("c")
    wait_until(
        page, f"+document.querySelector('#main-candidate-player').dataset.listenedMs > {heard}"
    )
    shown["listened_ms"] = [
        int(player(page, role, "listenedMs")) for role in ("query", "candidate")
    ]
    expect(submit).to_be_enabled()
    page.keyboard.press("Enter")
    expect(page.locator("#assessor-judged")).to_have_text(str(judged_before + 1))
    return shown


def test_a_hidden_trial_is_judged_through_the_page_like_a_pool_pair(
    live_server: LiveServer,
) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    requests: list[tuple[str, str]] = []  # (resource type, URL) of what the page asked for
    with chromium_page(errors, timeout_ms=15_000) as page:
        page.on("request", lambda request: requests.append((request.resource_type, request.url)))
        start_judging(page, live_server.base_url)
        shown: list[dict[str, Any]] = []
        for n in range(trials.WARMUP + 1):
            shown.append(judge_shown_pair(page, n, shown[-1]["lease_id"] if shown else None))
        html = page.content()
        # the page goes on to the next hand-out (and fetches its clips)
        judge = page.locator("#judge")
        expect(judge).not_to_have_attribute("data-lease-id", str(shown[-1]["lease_id"]))
        expect(judge).not_to_have_attribute("data-lease-id", "")
        wait_ready(page)
        next_lease = int(judge.get_attribute("data-lease-id") or 0)
        assert errors == []

    # what the page fetched besides itself, its scripts and styles and the assessor API
    fetched = {
        urlsplit(url).path
        for kind, url in requests
        if kind != "document"
        and not urlsplit(url).path.startswith(("/static/", f"/api/a/{TOKEN}/"))
    }
    lease_ids = [s["lease_id"] for s in shown] + [next_lease]

    engine = make_database_engine(live_server.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            leases = {lease.id: lease for lease in session.scalars(select(Lease))}
            judgments = session.scalars(select(Judgment).order_by(Judgment.id)).all()
            query_docs = dict(session.execute(select(Query.id, Query.document_id)).all())
            # the clips of each lease it showed, and nothing else: the candidate at the
            # lease's URL, the query at the query's, fetched once for all its pairs
            queries = {query_docs[leases[i].query_id] for i in lease_ids}
            clip_urls = {f"/a/{TOKEN}/lease/{i}/candidate" for i in lease_ids}
            clip_urls |= {query_clip_url(TOKEN, document) for document in queries}
            assert fetched == clip_urls
            delivered = session.scalars(select(ClipDelivery)).all()
            assert len(delivered) == len(queries)
            for delivery in delivered:
                size = rendition_size(session, delivery.clip_key, queries)
                assert delivery.bytes_sent == size  # once, though several pairs played it
            kinds = [leases[s["lease_id"]].kind for s in shown]
            assert next_lease in leases
            assert kinds == ["pool"] * trials.WARMUP + ["reference"]
            trial = leases[shown[-1]["lease_id"]]
            assert trial.pair_id is None
            assert trial.document_id == query_docs[trial.query_id]
            # the page showed it as it shows every pair: a name, two clips of their length,
            # played past the rule
            for s in shown:
                assert re.fullmatch(r"query \d+, candidate \d+", s["label"].strip().lower())
                assert s["durations"] == [pytest.approx(CLIP_SECONDS, abs=0.05)] * 2
                assert min(s["listened_ms"]) >= LISTEN_SECONDS * 1000
            # ("anchor" is a word of the FINE scale's labels, not of a trial)
            for word in ("reference", "repeat", "trial", "quality", "/audio/"):
                assert word not in html
            # stored as what it is, with the listening and the server's evidence like the rest
            assert [j.kind for j in judgments] == kinds
            for judgment in judgments:
                assert (judgment.broad, judgment.fine) == (2, 50.0)
                assert judgment.query_listen_ms is not None
                assert judgment.query_listen_ms >= LISTEN_SECONDS * 1000
                assert judgment.candidate_listen_ms is not None
                assert judgment.candidate_listen_ms >= LISTEN_SECONDS * 1000
                assert (judgment.served_query_bytes or 0) > 0
                assert (judgment.served_candidate_bytes or 0) > 0
    finally:
        engine.dispose()


def rendition_size(session: Any, key: str, documents: set[int]) -> int:
    """The bytes of the rendition of the query clip whose key is ``key``."""
    (document,) = [d for d in documents if query_clip_key(hash_token(TOKEN), d) == key]
    return len(served_clip(session.get(Document, document)))
