"""The judging page in a real browser: consent, play both clips, score with the keyboard, submit.

A uvicorn server runs in a thread on its own database (a migrated SQLite file, or a fresh
Postgres schema when ``TEST_DATABASE_URL`` is set); Chromium drives the page through
Playwright. ``MTCJUDGE_SCREENSHOT=1`` also writes ``docs/judging-page.png``.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.models import Assessor, Campaign, Document, Judgment, Query, Result, System
from mtcjudge.security import hash_token
from tests.support import (
    CHROMIUM,
    chromium_page,
    serve_in_thread,
    write_tone,
)

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "judging-page.png"
TOKEN = "browser-test-token"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"the browser test needs Chromium at {CHROMIUM}"
)


@pytest.fixture
def server_database_url(empty_database_url: str) -> str:
    upgrade_database(empty_database_url)
    return empty_database_url


def seed(url: str, audio_dir: Path) -> None:
    """3 systems x 2 queries x k=3 over real WAV clips, one assessor who has not consented."""
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = Campaign(
                slug="browser",
                name="Browser test campaign",
                status="open",
                scale="fine",
                k=3,
                estimator="uniform",
                policy="confidence",
                target=0.95,
                # the listening rule and hidden trials have their own browser test
                listen_seconds=0.0,
                quality_rate=0.0,
            )
            session.add(campaign)
            session.flush()
            documents: dict[str, Document] = {}

            def document(external_id: str) -> Document:
                if external_id not in documents:
                    path = audio_dir / f"{external_id}.wav"
                    write_tone(path, 196.0 * 2 ** (len(documents) / 12))
                    documents[external_id] = Document(
                        campaign_id=campaign.id,
                        external_id=external_id,
                        audio_path=str(path),
                        audio_type="audio/wav",
                        duration_seconds=4.0,
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
            session.add(Assessor(campaign_id=campaign.id, name="Ada", token_hash=hash_token(TOKEN)))
    finally:
        engine.dispose()


@dataclass
class LiveServer:
    base_url: str
    database_url: str


@pytest.fixture
def live_server(server_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    audio_dir = tmp_path / "audio"
    audio_dir.mkdir()
    seed(server_database_url, audio_dir)
    app = create_app(Settings(database_url=server_database_url))
    with serve_in_thread(app) as base:
        yield LiveServer(base, server_database_url)


def wait_until(page: Any, expression: str, timeout: float = 10.0) -> None:
    """Poll a JavaScript expression from outside the page.

    ``page.wait_for_function`` evaluates its expression with ``eval`` inside the page,
    which the Content-Security-Policy forbids (no 'unsafe-eval'); ``page.evaluate`` goes
    through the DevTools protocol and is not subject to it.
    """
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        time.sleep(0.05)


def test_judge_a_pair_with_the_keyboard(live_server: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        # welcome and consent
        page.goto(f"{live_server.base_url}/a/{TOKEN}")
        expect(page.get_by_role("heading", name="Welcome, Ada")).to_be_visible()
        page.get_by_label("I understand the task").check()
        page.get_by_role("button", name="Start judging").click()
        page.wait_for_url(re.compile(rf"/a/{TOKEN}/judge$"))

        judge = page.locator("#judge")
        expect(judge).to_have_attribute("data-state", "pair")
        first_lease = judge.get_attribute("data-lease-id")
        assert first_lease
        expect(page.locator("#assessor-judged")).to_have_text("0")
        expect(page.locator("#submit-button")).to_be_disabled()
        expect(page.locator("#main-fine-value")).to_have_text("–")

        # play the query, then the candidate (which pauses the query)
        query_audio = "document.querySelector('#main-query-player audio')"
        candidate_audio = "document.querySelector('#main-candidate-player audio')"
        page.keyboard.press("q")
        wait_until(page, f"{query_audio}.currentTime > 0.3")
        page.keyboard.press("c")
        wait_until(page, f"{candidate_audio}.currentTime > 0.3")
        assert page.evaluate(f"{query_audio}.paused")
        expect(page.locator("#main-query-player")).not_to_have_class(re.compile("is-playing"))
        expect(page.locator("#main-candidate-player")).to_have_class(re.compile("is-playing"))

        expect(page.locator("#pair-label")).to_have_text(re.compile(r"query \d+, candidate \d+"))
        # score: 3 = very similar; first arrow sets FINE to 50, Shift+arrow moves by 10
        page.keyboard.press("3")
        expect(page.locator('input[name="main-broad"][value="2"]')).to_be_checked()
        page.keyboard.press("ArrowRight")
        expect(page.locator("#main-fine-value")).to_have_text("50")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("Shift+ArrowRight")
        page.keyboard.press("ArrowLeft")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        expect(page.locator("#main-fine-value")).to_have_text("71")
        expect(page.locator("#submit-button")).to_be_enabled()
        expect(page.locator("#score-form [data-role=disagreement]")).to_be_hidden()

        page.keyboard.press("Enter")
        expect(page.locator("#assessor-judged")).to_have_text("1")
        expect(judge).to_have_attribute("data-state", "pair")
        expect(judge).not_to_have_attribute("data-lease-id", first_lease)
        expect(page.locator("#main-fine-value")).to_have_text("–")
        expect(page.locator("#history-list li")).to_have_count(1)
        # the pair is named, the same way on the page and in the history
        expect(page.locator("#history-list li")).to_contain_text(
            re.compile(r"Query \d+ · candidate \d+")
        )
        expect(page.locator("#history-list li").first).to_contain_text("Very similar")
        expect(page.locator("#history-list li").first).to_contain_text("FINE 71")

        if os.environ.get("MTCJUDGE_SCREENSHOT") == "1":
            # a second pair mid-judgment, for the docs
            page.keyboard.press("q")
            wait_until(page, f"{query_audio}.currentTime > 1.5")
            page.keyboard.press("2")
            for key in ("ArrowRight", "Shift+ArrowRight", "ArrowRight", "ArrowRight"):
                page.keyboard.press(key)
            page.keyboard.press("c")
            wait_until(page, f"{candidate_audio}.currentTime > 1.1")
            page.mouse.move(0, 0)
            page.screenshot(path=str(SCREENSHOT))
        assert errors == []

    engine = make_engine(live_server.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            judgment = session.scalars(select(Judgment)).one()
            assert (judgment.broad, judgment.fine) == (2, 71.0)
            assert judgment.source == "assessor"
            assert judgment.query_listen_ms is not None
            assert judgment.query_listen_ms > 0
            assert judgment.candidate_listen_ms is not None
            assert judgment.candidate_listen_ms > 0
            assert judgment.client_id is not None
            assert uuid.UUID(judgment.client_id).version == 4
            consented = session.scalars(select(Assessor.consented_at)).one()
            assert consented is not None
    finally:
        engine.dispose()


def test_help_warning_revision_and_break(live_server: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        page.goto(f"{live_server.base_url}/a/{TOKEN}")
        page.get_by_label("I understand the task").check()
        page.get_by_role("button", name="Start judging").click()
        judge = page.locator("#judge")
        expect(judge).to_have_attribute("data-state", "pair")

        # ? opens the list of keys, Esc closes it
        help_dialog = page.locator("#help-dialog")
        page.keyboard.press("?")
        expect(help_dialog).to_be_visible()
        expect(help_dialog).to_contain_text("Play or pause the query clip")
        page.keyboard.press("Escape")
        expect(help_dialog).to_be_hidden()

        # Very similar with FINE 20: a gentle warning that does not block
        warning = page.locator("#score-form [data-role=disagreement]")
        page.keyboard.press("3")
        for key in ("ArrowLeft", "Shift+ArrowLeft", "Shift+ArrowLeft", "Shift+ArrowLeft"):
            page.keyboard.press(key)
        expect(page.locator("#main-fine-value")).to_have_text("20")
        expect(warning).to_be_visible()
        expect(page.locator("#submit-button")).to_be_enabled()
        page.keyboard.press("1")
        expect(warning).to_be_hidden()
        page.keyboard.press("Enter")
        expect(page.locator("#assessor-judged")).to_have_text("1")

        # revise it from the recent judgments, with the keyboard inside the dialog
        page.locator("#history-list").get_by_role("button", name=re.compile("^Edit")).click()
        edit_dialog = page.locator("#edit-dialog")
        expect(edit_dialog).to_be_visible()
        expect(page.locator("#edit-fine-value")).to_have_text("20")
        expect(page.locator('input[name="edit-broad"][value="0"]')).to_be_checked()
        page.keyboard.press("2")
        for _ in range(5):
            page.keyboard.press("ArrowRight")
        expect(page.locator("#edit-fine-value")).to_have_text("25")
        page.keyboard.press("Enter")
        expect(edit_dialog).to_be_hidden()
        item = page.locator("#history-list li").first
        expect(item).to_contain_text("Somewhat similar")
        expect(item).to_contain_text("FINE 25")
        expect(item).to_contain_text("revised")

        # a break gives the pair back; the same link resumes
        page.get_by_role("button", name="Take a break").click()
        expect(judge).to_have_attribute("data-state", "paused")
        expect(page.get_by_role("heading", name=re.compile("^Paused"))).to_be_visible()
        page.goto(f"{live_server.base_url}/a/{TOKEN}/judge")
        expect(judge).to_have_attribute("data-state", "pair")
        expect(page.locator("#assessor-judged")).to_have_text("1")
        expect(page.locator("#main-fine-value")).to_have_text("–")
        assert errors == []

    engine = make_engine(live_server.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            judgment = session.scalars(select(Judgment)).one()
            assert (judgment.broad, judgment.fine, judgment.revision) == (1, 25.0, 1)
    finally:
        engine.dispose()
