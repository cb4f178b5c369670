"""Signing in, seeing the campaigns and signing out in a real browser, with the keyboard only.

A uvicorn server runs in a thread on its own database (SQLite, or a Postgres schema with
``TEST_DATABASE_URL``); Chromium drives it through Playwright, as in tests/web/test_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.campaigns.changes import record_campaign_created
from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.ingest.formats import Runs
from tests.browser import chromium_page, needs_chromium, organizer_site
from tests.factories import TEST_AUDIO, write_clips
from tests.support import PASSWORD

pytestmark = needs_chromium


def _campaign(session: Session) -> None:
    """The open campaign "AMS 2025", created by "ada"."""
    runs = {"S1": {"q1": ["d1", "d2"]}, "S2": {"q1": ["d2", "d3"]}}
    spec = CampaignSpec(name="AMS 2025", slug="ams-2025", k=2, status="open")
    clips = write_clips(TEST_AUDIO / "browser", ["q1", "d1", "d2", "d3"])
    campaign, report = create_campaign(session, spec, Runs(runs, "tsv"), audio_dir=clips)
    record_campaign_created(session, campaign, audit.Actor("ada"), report)


@pytest.fixture
def live_server(empty_database_url: str) -> Iterator[str]:
    with organizer_site(empty_database_url, _campaign, run_planner=False) as site:
        yield site.url


def focused(page) -> str:
    return page.evaluate("document.activeElement.textContent.trim()")


def focus_ring(page) -> str:
    return page.evaluate("getComputedStyle(document.activeElement).outlineStyle")


def tab_to(page, text: str, most: int = 10) -> None:
    """Press Tab until the focused element reads ``text`` (and shows it has the focus)."""
    for _ in range(most):
        page.keyboard.press("Tab")
        if focused(page) == text:
            assert focus_ring(page) != "none", f"{text!r} has the focus but shows no ring"
            return
    raise AssertionError(f"{text!r} is not reachable with Tab; focus is on {focused(page)!r}")


def test_sign_in_see_the_campaigns_and_sign_out_with_the_keyboard(
    live_server: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        page.goto(f"{live_server}/")
        expect(page.get_by_role("heading", name="Here to listen and judge?")).to_be_visible()
        tab_to(page, "Sign in as an organizer")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server}/login")
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()

        # the username field has the focus; a wrong password first
        assert page.evaluate("document.activeElement.id") == "username"
        page.keyboard.type("ada")
        page.keyboard.press("Tab")
        page.keyboard.type("not the password")
        page.keyboard.press("Enter")
        expect(page.get_by_role("alert")).to_have_text("The username or the password is not right.")
        # the username is kept and the password field has the focus
        assert page.evaluate("document.activeElement.id") == "password"
        page.keyboard.type(PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server}/")

        expect(page.get_by_role("heading", name="Campaigns")).to_be_visible()
        row = page.get_by_role("row", name="AMS 2025")
        expect(row).to_contain_text("open")
        expect(row.get_by_role("link", name="AMS 2025", exact=True)).to_have_attribute(
            "href", "/campaigns/ams-2025"
        )
        expect(page.locator(".activity")).to_contain_text("ada created the campaign")
        expect(page.locator(".organizer-bar")).to_contain_text("Signed in as ada")

        tab_to(page, "Sign out")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{live_server}/login?signed_out=1")
        expect(page.get_by_role("status")).to_have_text("You are signed out.")
        status = page.evaluate("fetch('/api/campaigns').then(r => r.status)")
        assert status == 401
        page.goto(f"{live_server}/")
        expect(page.get_by_role("heading", name="Running a campaign?")).to_be_visible()
        assert errors == []
