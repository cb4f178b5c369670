"""In a real browser (Playwright + Chromium): an organizer signs in, opens the dashboard and
downloads the report and an export from its "Report and exports" panel, with the mouse and
with the keyboard; the scale picker moves the scale of the report's link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.organizers import passwords
from mtcjudge.organizers import service as organizers
from tests.factories import make_campaign
from tests.support import (
    CHEAP_HASHER,
    CHROMIUM,
    PASSWORD,
    chromium_page,
    serve_in_thread,
)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")


@pytest.fixture
def live(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A server on a database with the organizer "ada" and a partly judged campaign; yields
    (its URL, the campaign's slug)."""
    monkeypatch.setattr(passwords, "_HASHER", CHEAP_HASHER)
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
            slug = make_campaign(session, share=0.4).campaign.slug
    finally:
        engine.dispose()
    settings = Settings(database_url=empty_database_url, login_failure_delay=0.0)
    with serve_in_thread(create_app(settings)) as base:
        yield base, slug


def test_download_the_report_and_an_export_from_the_dashboard(
    live: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base, slug = live
    errors: list[str] = []
    with chromium_page(errors, height=1600, accept_downloads=True) as page:
        page.goto(f"{base}/campaigns/{slug}")  # the sign-in form, then the dashboard
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/campaigns/{slug}")
        page.get_by_role("link", name="Report and exports").click()
        panel = page.locator("#downloads")
        expect(panel).to_be_visible()

        with page.expect_download() as report_download:
            panel.get_by_role("link", name="Report (HTML)").click()
        report = report_download.value
        assert report.suggested_filename == f"{slug}-report-fine.html"
        html = Path(report.path()).read_text()
        assert html.startswith("<!doctype html>")
        assert "<svg" in html
        assert "Estimated ranking with intervals" in html

        # with the keyboard: focus the link, Enter
        qrels = panel.get_by_role("link", name="qrels BROAD")
        qrels.focus()
        with page.expect_download() as qrels_download:
            page.keyboard.press("Enter")
        assert qrels_download.value.suggested_filename == f"{slug}-qrels-broad.txt"
        lines = Path(qrels_download.value.path()).read_text().splitlines()
        assert lines
        assert all(line.split()[1] == "0" and line.split()[3] in "012" for line in lines)

        # the scale picker moves the report to the other scale
        page.select_option("#scale", "broad")
        expect(panel.locator("[data-download-scale]")).to_have_text("BROAD")
        with page.expect_download() as json_download:
            panel.get_by_role("link", name="Report (JSON)").click()
        assert json_download.value.suggested_filename == f"{slug}-report-broad.json"
        page.screenshot(path=str(tmp_path / "dashboard-downloads.png"), full_page=True)
    assert errors == []
