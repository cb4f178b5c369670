"""In a real browser (Playwright + Chromium): an organizer signs in, opens the dashboard and
downloads the report and an export from its "Report and exports" panel, with the mouse and
with the keyboard; the scale picker moves the scale of the report's link."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from tests.browser import Site, chromium_page, needs_chromium, organizer_site, sign_in_on_page
from tests.factories import make_campaign

pytestmark = needs_chromium


def _campaign(session: Session) -> str:
    """A partly judged campaign; its slug."""
    return make_campaign(session, share=0.4).campaign.slug


@pytest.fixture
def live(empty_database_url: str) -> Iterator[Site]:
    """A server on a database with the organizer "ada" and :func:`_campaign`; ``seeded`` is
    the campaign's slug."""
    with organizer_site(empty_database_url, _campaign) as site:
        yield site


def test_download_the_report_and_an_export_from_the_dashboard(live: Site, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    base, slug = live.url, live.seeded
    errors: list[str] = []
    with chromium_page(errors, height=1600, accept_downloads=True) as page:
        sign_in_on_page(page, f"{base}/campaigns/{slug}")  # the sign-in form, then the dashboard
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


def test_the_report_reads_on_a_phone_without_scrolling_the_page_sideways(
    live: Site, tmp_path: Path
) -> None:
    """At 390 pixels the report's settings stack and each table wider than the screen
    scrolls in its own box, which takes the keyboard's focus; axe finds nothing."""
    from playwright.sync_api import expect

    from tests.browser import axe_violations

    base, slug = live.url, live.seeded
    errors: list[str] = []
    with chromium_page(errors, accept_downloads=True) as page:
        sign_in_on_page(page, f"{base}/campaigns/{slug}")
        page.get_by_role("link", name="Report and exports").click()
        with page.expect_download() as download:
            page.locator("#downloads").get_by_role("link", name="Report (HTML)").click()
        report = tmp_path / "report.html"
        download.value.save_as(report)

        page.set_viewport_size({"width": 390, "height": 800})
        page.goto(report.as_uri())
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page_width = page.evaluate("document.documentElement.scrollWidth")
        assert page_width <= 390, f"the page scrolls sideways: {page_width} px wide"

        scores = page.locator("caption", has_text="The same numbers")
        wide = page.locator(".table-wrap").filter(has=scores)
        box_width, table_width = wide.evaluate("b => [b.clientWidth, b.scrollWidth]")
        assert table_width > box_width  # the scores table is wider than a phone
        wide.focus()
        expect(wide).to_be_focused()
        page.keyboard.press("ArrowRight")
        page.wait_for_function("b => b.scrollLeft > 0", arg=wide.element_handle(), timeout=5000)

        assert axe_violations(page) == []
        page.screenshot(path=str(tmp_path / "report-390.png"), full_page=True)
    assert errors == []
