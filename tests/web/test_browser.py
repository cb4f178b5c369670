"""The judging page in a real browser: consent, play both clips, score with the keyboard, submit.

A uvicorn server runs in a thread on its own database (a migrated SQLite file, or a fresh
Postgres schema when ``TEST_DATABASE_URL`` is set); Chromium drives the page through
Playwright. ``MTCJUDGE_SCREENSHOT=1`` also writes ``docs/judging-page.png``.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import Assessor, Judgment
from tests.browser import chromium_page, needs_chromium
from tests.web.judging_site import TOKEN, LiveServer, serve, start_judging, wait_until

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "judging-page.png"

pytestmark = needs_chromium


@pytest.fixture
def live_server(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """The campaign without a listening rule (the rule has its own tests)."""
    with serve(empty_database_url, tmp_path) as server:
        yield server


@pytest.fixture
def with_rule(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A 2-second listening rule, 4-second clips of notes."""
    with serve(empty_database_url, tmp_path, notes=True, listen_seconds=2.0) as server:
        yield server


def test_judge_a_pair_with_the_keyboard(with_rule: LiveServer) -> None:
    from playwright.sync_api import expect

    live_server = with_rule
    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        # welcome, consent, the volume check
        page.goto(f"{live_server.base_url}/a/{TOKEN}")
        expect(page.get_by_role("heading", name="Welcome, Ada")).to_be_visible()
        start_judging(page, live_server.base_url)
        page.wait_for_url(re.compile(rf"/a/{TOKEN}/judge$"))

        judge = page.locator("#judge")
        expect(judge).to_have_attribute("data-state", "pair")
        first_lease = judge.get_attribute("data-lease-id")
        assert first_lease
        expect(page.locator("#assessor-judged")).to_have_text("0")
        expect(page.locator("#submit-button")).to_be_disabled()
        expect(page.locator("#main-fine-value")).to_have_text("–")

        # play the query, then the candidate (which pauses the query)
        query_audio = "document.querySelector('#main-query-player').dataset"
        candidate_audio = "document.querySelector('#main-candidate-player').dataset"
        page.keyboard.press("q")
        wait_until(page, f"{query_audio}.position > 2.1")
        page.keyboard.press("c")
        wait_until(page, f"{candidate_audio}.position > 2.1")
        assert page.evaluate(f"{query_audio}.playing") == "false"
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
            wait_until(page, f"{query_audio}.position > 1.5")
            page.keyboard.press("2")
            for key in ("ArrowRight", "Shift+ArrowRight", "ArrowRight", "ArrowRight"):
                page.keyboard.press(key)
            # and a loop on the candidate, dragged across its waveform
            wave = page.locator("#main-candidate-player [data-role=wave]").bounding_box()
            assert wave is not None
            y = wave["y"] + wave["height"] / 2
            page.mouse.move(wave["x"] + wave["width"] * 0.3, y)
            page.mouse.down()
            page.mouse.move(wave["x"] + wave["width"] * 0.62, y, steps=5)
            page.mouse.up()
            page.keyboard.press("c")
            wait_until(page, f"{candidate_audio}.position > 1.6")
            page.mouse.move(0, 0)
            page.set_viewport_size({"width": 1280, "height": 900})
            page.screenshot(path=str(SCREENSHOT))
        assert errors == []

    engine = make_database_engine(live_server.database_url)
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
        start_judging(page, live_server.base_url)
        judge = page.locator("#judge")

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
        # no listening rule in this campaign: Submit is ready without playing anything
        expect(page.locator("#listen-rule")).to_be_hidden()
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
        # (the volume check was answered in this browser session: not asked again)
        page.goto(f"{live_server.base_url}/a/{TOKEN}/judge")
        expect(judge).to_have_attribute("data-state", "pair")
        expect(page.locator("#assessor-judged")).to_have_text("1")
        expect(page.locator("#main-fine-value")).to_have_text("–")
        assert errors == []

    engine = make_database_engine(live_server.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            judgment = session.scalars(select(Judgment)).one()
            assert (judgment.broad, judgment.fine, judgment.revision) == (1, 25.0, 1)
    finally:
        engine.dispose()
