"""A hidden quality trial in a real browser: after an assessor's first pairs, the page is
handed a reference trial (the query against itself) and it is played, scored and stored
exactly as a pool pair is, under the campaign's listening rule.

A uvicorn server runs in a thread on its own database (SQLite, or a Postgres schema when
``TEST_DATABASE_URL`` is set); Chromium drives the page through Playwright.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.judging import trials
from mtcjudge.main import create_app
from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Query,
    Result,
    System,
    utcnow,
)
from mtcjudge.security import hash_token
from tests.support import CHROMIUM, chromium_page, serve_in_thread, write_tone

TOKEN = "hidden-check-token"
#: the campaign's listening rule: each clip played this long before a score is taken
LISTEN_SECONDS = 0.5

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"the browser test needs Chromium at {CHROMIUM}"
)


def seed(url: str, audio_dir: Path) -> None:
    """3 systems x 2 queries x k=3 over real WAV clips (no genres: the trial is the
    reference), every hand-out after the warm-up a trial, one consented assessor."""
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = Campaign(
                slug="listening",
                name="Listening campaign",
                status="open",
                k=3,
                estimator="uniform",
                target=1.0,
                listen_seconds=LISTEN_SECONDS,
                quality_rate=1.0,
            )
            session.add(campaign)
            session.flush()
            documents: dict[str, Document] = {}

            def document(external_id: str) -> Document:
                if external_id not in documents:
                    path = audio_dir / f"{external_id}.wav"
                    write_tone(path, 220.0 * 2 ** (len(documents) / 12), seconds=3.0)
                    documents[external_id] = Document(
                        campaign_id=campaign.id,
                        external_id=external_id,
                        audio_path=str(path),
                        audio_type="audio/wav",
                        duration_seconds=3.0,
                    )
                    session.add(documents[external_id])
                    session.flush()
                return documents[external_id]

            queries = []
            for q in range(2):
                query = Query(campaign_id=campaign.id, document_id=document(f"query-{q}").id)
                session.add(query)
                queries.append(query)
            systems = [System(campaign_id=campaign.id, name=f"SYSTEM-{s}") for s in range(3)]
            session.add_all(systems)
            session.flush()
            for s, system in enumerate(systems):
                for q, query in enumerate(queries):
                    for rank in range(1, 4):
                        session.add(
                            Result(
                                campaign_id=campaign.id,
                                system_id=system.id,
                                query_id=query.id,
                                rank=rank,
                                document_id=document(f"cand-{q}-{(s + rank) % 4}").id,
                            )
                        )
            session.add(
                Assessor(
                    campaign_id=campaign.id,
                    name="Ada",
                    token_hash=hash_token(TOKEN),
                    consented_at=utcnow(),
                )
            )
    finally:
        engine.dispose()


@dataclass
class LiveServer:
    base_url: str
    database_url: str


@pytest.fixture
def live_server(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    upgrade_database(empty_database_url)
    audio_dir = tmp_path / "audio"
    audio_dir.mkdir()
    seed(empty_database_url, audio_dir)
    app = create_app(Settings(database_url=empty_database_url))
    with serve_in_thread(app) as base:
        yield LiveServer(base, empty_database_url)


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression from outside the page (the page's CSP forbids eval)."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


QUERY_AUDIO = "document.querySelector('#main-query-player audio')"
CANDIDATE_AUDIO = "document.querySelector('#main-candidate-player audio')"


def judge_shown_pair(page: Any, judged_before: int, previous: int | None) -> dict[str, Any]:
    """Play both clips past the rule, score with the keyboard, submit; what the page showed
    (once it shows a lease other than ``previous``)."""
    from playwright.sync_api import expect

    judge = page.locator("#judge")
    expect(judge).to_have_attribute("data-state", "pair")
    if previous is not None:
        expect(judge).not_to_have_attribute("data-lease-id", str(previous))
    wait_until(page, f"{QUERY_AUDIO}.readyState >= 1 && {CANDIDATE_AUDIO}.readyState >= 1")
    shown = {
        "lease_id": int(judge.get_attribute("data-lease-id") or 0),
        "label": page.locator("#pair-label").inner_text(),
        "query_url": page.evaluate(f"{QUERY_AUDIO}.getAttribute('src')"),
        "candidate_url": page.evaluate(f"{CANDIDATE_AUDIO}.getAttribute('src')"),
    }
    page.keyboard.press("q")
    wait_until(page, f"{QUERY_AUDIO}.currentTime > {LISTEN_SECONDS + 0.3}")
    page.keyboard.press("c")
    wait_until(page, f"{CANDIDATE_AUDIO}.currentTime > {LISTEN_SECONDS + 0.3}")
    shown["durations"] = page.evaluate(f"[{QUERY_AUDIO}.duration, {CANDIDATE_AUDIO}.duration]")
    page.keyboard.press("3")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect(page.locator("#assessor-judged")).to_have_text(str(judged_before + 1))
    return shown


def test_a_hidden_trial_is_judged_through_the_page_like_a_pool_pair(
    live_server: LiveServer,
) -> None:
    errors: list[str] = []
    with chromium_page(errors, timeout_ms=15_000) as page:
        page.goto(f"{live_server.base_url}/a/{TOKEN}/judge")
        shown: list[dict[str, Any]] = []
        for n in range(trials.WARMUP + 1):
            shown.append(judge_shown_pair(page, n, shown[-1]["lease_id"] if shown else None))
        html = page.content()
        assert errors == []

    engine = make_engine(live_server.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            leases = {lease.id: lease for lease in session.scalars(select(Lease))}
            judgments = session.scalars(select(Judgment).order_by(Judgment.id)).all()
            query_docs = dict(session.execute(select(Query.id, Query.document_id)).all())
            kinds = [leases[s["lease_id"]].kind for s in shown]
            assert kinds == ["pool"] * trials.WARMUP + ["reference"]
            trial = leases[shown[-1]["lease_id"]]
            assert trial.pair_id is None
            assert trial.document_id == query_docs[trial.query_id]
            # the page showed it as it shows every pair: a name, two clips of the lease
            for s in shown:
                assert re.fullmatch(r"query \d+, candidate \d+", s["label"].strip().lower())
                assert s["query_url"].endswith(f"/a/{TOKEN}/lease/{s['lease_id']}/query")
                assert s["candidate_url"].endswith(f"/a/{TOKEN}/lease/{s['lease_id']}/candidate")
                assert s["durations"] == [pytest.approx(3.0, abs=0.05)] * 2
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
