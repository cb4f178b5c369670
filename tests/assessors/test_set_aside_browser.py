"""Setting an assessor's judgments aside from the dashboard, in a real browser: the dialog
names how many judgments, the figures follow at once (the planner replans), the reliability
column says what it is in words; then bringing them back. axe-core finds nothing on the
dashboard and the management page when axe-core is installed (``npm ci``; ``MTCJUDGE_AXE`` may
name another ``axe.min.js``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.models import Assessor, Campaign, Document, Judgment, Query
from tests.browser import (
    AXE,
    axe_violations,
    chromium_page,
    needs_chromium,
    organizer_site,
    sign_in_on_page,
    text_of,
    wait_for_text,
)
from tests.factories import build_campaign, judge_in_turn
from tests.support import write_tone

pytestmark = needs_chromium


@pytest.fixture
def live(empty_database_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A server with its planner: campaign with real clips, A1 judged 3 pairs, A2 2, and the
    planner concludes A1 failed their hidden reference trials; yields (URL, slug)."""
    upgrade_database(empty_database_url)
    engine = make_database_engine(empty_database_url)
    try:
        factory = make_sessionmaker(engine)
        with session_scope(factory) as session:
            fx = build_campaign(
                session, n_assessors=2, n_queries=5, audio_dir=tmp_path, keep_collecting=True
            )
            for document in session.scalars(
                select(Document).where(Document.campaign_id == fx.campaign.id)
            ):
                write_tone(Path(str(document.audio_path)), 440.0, seconds=1.0)
            slug, tokens, campaign_id = fx.campaign.slug, fx.tokens, fx.campaign.id
        for token, n in zip(tokens, (3, 2), strict=True):
            judge_in_turn(factory, token, n, broad=2, fine=90.0)
        with session_scope(factory) as session:
            campaign = session.get_one(Campaign, campaign_id)
            first = session.scalars(
                select(Assessor.id).where(Assessor.campaign_id == campaign_id).order_by(Assessor.id)
            ).first()
            assert first is not None
            # A1 scored 4 of 5 hidden reference trials (a query against itself) as not
            # similar: the server's planner concludes they failed their quality trials
            queries = session.scalars(
                select(Query).where(Query.campaign_id == campaign_id).order_by(Query.id)
            ).all()
            for i, query in enumerate(queries[:5]):
                low = i < 4
                session.add(
                    Judgment(
                        campaign_id=campaign_id,
                        query_id=query.id,
                        document_id=query.document_id,
                        assessor_id=first,
                        broad=0 if low else 2,
                        fine=5.0 if low else 95.0,
                        kind="reference",
                        source="assessor",
                    )
                )
            del campaign
    finally:
        engine.dispose()
    with organizer_site(empty_database_url) as site:  # adds the organizer "ada", serves
        yield site.url, slug


def _reload_until_it_holds(page: Any, selector: str, part: str, timeout: float = 30.0) -> None:
    """Until the element's text holds ``part``, reloading the page (the planner's flag comes at
    one of its ticks)."""
    deadline = time.monotonic() + timeout
    while part not in text_of(page, selector):
        if time.monotonic() > deadline:
            raise AssertionError(f"{selector} shows {text_of(page, selector)!r}, not {part!r}")
        page.wait_for_timeout(200)
        page.reload()


def test_set_aside_from_the_dashboard_then_bring_back(live: tuple[str, str]) -> None:
    base, slug = live
    errors: list[str] = []
    with chromium_page(errors, height=1800, bypass_csp=True) as page:
        sign_in_on_page(page, f"{base}/campaigns/{slug}")
        wait_for_text(page, "#fig-judgments", "5")
        first = page.locator("#assessors-body tr[data-assessor=A1]")
        # the flag in words, with its reason (once the server's planner has looked)
        _reload_until_it_holds(page, "#assessors-body tr[data-assessor=A1]", "Flagged")
        assert "4 of 5 hidden checks where a clip was compared with itself" in (first.inner_text())
        assert "No concern" in page.inner_text("#assessors-body tr[data-assessor=A2]")

        first.get_by_role("button", name="Set aside the judgments of A1").click()
        dialog = page.locator("#assessor-dialog")
        assert dialog.is_visible()
        assert "3 judgments of A1 will count nowhere" in dialog.inner_text()
        # cancelling changes nothing
        dialog.get_by_role("button", name="Cancel").click()
        assert not dialog.is_visible()
        assert text_of(page, "#fig-judgments") == "5"

        first.get_by_role("button", name="Set aside the judgments of A1").click()
        page.keyboard.press("Escape")  # the keyboard closes it too, changing nothing
        assert not dialog.is_visible()
        first.get_by_role("button", name="Set aside the judgments of A1").click()
        dialog.get_by_role("button", name="Set aside 3 judgments").click()
        wait_for_text(
            page,
            "#assessor-action-status",
            "A1: 3 judgments set aside; their pairs are back in the pool.",
        )
        wait_for_text(page, "#fig-judgments", "2")
        assert "3 set aside" in first.inner_text()
        assert "set aside" in first.locator("td").nth(5).inner_text()  # the "Now" column
        if AXE.exists():
            assert axe_violations(page) == []

        first.get_by_role("button", name="Bring back the judgments of A1").click()
        assert "3 set-aside judgments of A1 count again" in dialog.inner_text()
        dialog.get_by_role("button", name="Bring back 3 judgments").click()
        wait_for_text(page, "#assessor-action-status", "A1: 3 judgments brought back.")
        wait_for_text(page, "#fig-judgments", "5")
        assert first.get_by_role("button", name="Set aside the judgments of A1").is_visible()

        # pausing with a message, and resuming
        first.get_by_role("button", name="Pause A1").click()
        page.fill("#assessor-dialog-message", "Back on Monday, thank you!")
        dialog.get_by_role("button", name="Pause").click()
        wait_for_text(page, "#assessor-action-status", "A1 is paused.")
        first.get_by_role("button", name="Resume A1").click()
        wait_for_text(page, "#assessor-action-status", "A1 may judge again.")

        # the management page shows the same, with names
        page.goto(f"{base}/campaigns/{slug}/manage")
        row = page.locator("#assessors tbody tr").first
        assert "Flagged" in row.inner_text()
        assert "Set aside their 3 judgments" in row.inner_text()
        if AXE.exists():
            assert axe_violations(page) == []
    assert errors == []
