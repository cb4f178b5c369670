"""In a real browser (Playwright + Chromium), as a new organizer: a campaign whose audio folder
matches none of its clips. The preview says no pair can be played, the management page says
so beside Open, Open asks for a confirmation (nothing changes until "Open anyway"), and the
dashboard's "Needs a look" says that nothing can be judged."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import select

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.models import Campaign
from mtcjudge.organizers import service as organizers
from tests.factories import write_clips
from tests.support import CHROMIUM, PASSWORD, chromium_page, serve_in_thread

if TYPE_CHECKING:
    from playwright.sync_api import FilePayload

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")


def _run(system: str, shift: int) -> FilePayload:
    lines = [
        f"q{q} Q0 d{(q * 3 + shift + r) % 12} {r + 1} {10 - r}.0 {system}"
        for q in range(4)
        for r in range(4)
    ]
    return {"name": f"{system}.txt", "mimeType": "text/plain", "buffer": "\n".join(lines).encode()}


@pytest.fixture
def live(empty_database_url: str) -> Iterator[tuple[str, str]]:
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
    finally:
        engine.dispose()
    settings = Settings(database_url=empty_database_url, login_failure_delay=0.0)
    app = create_app(settings)
    with serve_in_thread(app) as base:
        app.state.settings = replace(settings, base_url=base)
        yield base, empty_database_url


def status_of(url: str, slug: str) -> str:
    engine = make_engine(url)
    try:
        with make_sessionmaker(engine)() as session:
            return session.scalars(select(Campaign.status).where(Campaign.slug == slug)).one()
    finally:
        engine.dispose()


def test_open_asks_to_confirm_when_no_pair_can_be_played(
    live: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base, url = live
    # the folder holds clips, but none named after this collection's documents
    folder = write_clips(tmp_path / "mirex-audio", ["001", "002", "003"])
    errors: list[str] = []
    with chromium_page(errors, height=1600) as page:
        page.goto(f"{base}/login")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.get_by_role("link", name="New campaign").click()
        page.wait_for_url(f"{base}/new-campaign")
        page.set_input_files("#field-runs", [_run("A", 0), _run("B", 1), _run("C", 2)])
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
