"""In a real browser (Playwright + Chromium), as a new organizer: a campaign whose audio folder
matches none of its clips. The preview says no pair can be played, the management page says
so beside Open, Open asks for a confirmation (nothing changes until "Open anyway"), and the
dashboard's "Needs a look" says that nothing can be judged."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker
from mtcjudge.models import Campaign
from tests.browser import (
    Site,
    chromium_page,
    needs_chromium,
    sign_in_on_page,
    upload,
)
from tests.factories import trec_run, write_clips

pytestmark = needs_chromium


def status_of(url: str, slug: str) -> str:
    engine = make_database_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return session.scalars(select(Campaign.status).where(Campaign.slug == slug)).one()
    finally:
        engine.dispose()


def test_open_asks_to_confirm_when_no_pair_can_be_played(live_site: Site, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    base, url = live_site.url, live_site.database_url
    # the folder holds clips, but none named after this collection's documents
    folder = write_clips(tmp_path / "mirex-audio", ["001", "002", "003"])
    errors: list[str] = []
    with chromium_page(errors, height=1600) as page:
        sign_in_on_page(page, f"{base}/login")
        page.get_by_role("link", name="New campaign").click()
        page.wait_for_url(f"{base}/new-campaign")
        page.set_input_files(
            "#field-runs", [upload(f"{s}.txt", trec_run(s, shift)) for shift, s in enumerate("ABC")]
        )
        page.fill("#field-name", "Silent study")
        page.fill("#field-audio_dir", str(folder))
        page.get_by_role("button", name="Check the files").click()
        expect(page.locator("#create-button")).to_be_enabled(timeout=20_000)
        preview = page.locator("#preview-body")
        expect(preview).to_contain_text("0 of 16")  # the clips figure: none found
        expect(preview).to_contain_text("pool pairs can be played")
        expect(preview).to_contain_text("assessors would be given nothing to judge")
        page.screenshot(path=str(tmp_path / "preview.png"), full_page=True)

        page.get_by_role("button", name="Create the campaign").click()
        page.wait_for_url(f"{base}/campaigns/silent-study/manage?done=created")
        warning = page.locator("#open-warning")
        expect(warning).to_contain_text("Pairs cannot be played: none of the")
        expect(warning).to_contain_text("Opening asks you to confirm")

        # Open: a confirmation, nothing changed yet
        page.get_by_role("button", name="Open", exact=True).click()
        confirm = page.get_by_role("alert").filter(
            has_text="Open with pairs that cannot be played?"
        )
        expect(confirm).to_be_visible()
        expect(confirm).to_contain_text("They will never be handed out or judged")
        page.screenshot(path=str(tmp_path / "confirm.png"), full_page=True)
        assert status_of(url, "silent-study") == "draft"
        # Cancel keeps it a draft
        confirm.get_by_role("link", name="Cancel").click()
        expect(page.get_by_role("button", name="Open anyway")).to_have_count(0)
        assert status_of(url, "silent-study") == "draft"

        # confirmed with the keyboard
        page.get_by_role("button", name="Open", exact=True).click()
        page.get_by_role("button", name="Open anyway").focus()
        page.keyboard.press("Enter")
        expect(page.locator("#page-notice")).to_contain_text("The campaign is open")
        assert status_of(url, "silent-study") == "open"
        expect(page.locator("#audit-log")).to_contain_text("confirmed: none of the")

        page.get_by_role("link", name="Open the dashboard").click()
        page.wait_for_url(f"{base}/campaigns/silent-study")
        needs = page.locator("#warnings")
        expect(needs).to_be_visible(timeout=15_000)
        expect(needs).to_contain_text("No pair can be judged")
        expect(needs).to_contain_text("No readable audio for d")
        page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    assert errors == []
