"""In a real browser (Playwright + Chromium): the dashboard's "Report and exports" panel
downloads the entries and the offsets on the scale picked, files from which the results are
rebuilt (docs/exports.md)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from mtcjudge.exports.estimate_files import ENTRY_COLUMNS
from tests.browser import Site, chromium_page, needs_chromium, organizer_site, sign_in_on_page
from tests.factories import make_campaign

pytestmark = needs_chromium


def _campaign(session: Session) -> str:
    """A partly judged ``joint`` campaign; its slug."""
    return make_campaign(session, share=0.4, estimator="joint").campaign.slug


@pytest.fixture
def live(empty_database_url: str) -> Iterator[Site]:
    """A server on a database with the organizer "ada" and :func:`_campaign`; ``seeded`` is
    the campaign's slug."""
    with organizer_site(empty_database_url, _campaign) as site:
        yield site


def test_download_the_entries_and_the_offsets_on_the_scale_picked(
    live: Site, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base, slug = live.url, live.seeded
    errors: list[str] = []
    with chromium_page(errors, height=1600, accept_downloads=True) as page:
        sign_in_on_page(page, f"{base}/campaigns/{slug}")
        page.get_by_role("link", name="Report and exports").click()
        panel = page.locator("#downloads")
        expect(panel).to_be_visible()

        with page.expect_download() as entries_download:
            panel.get_by_role("link", name="Entries (CSV)").click()
        assert entries_download.value.suggested_filename == f"{slug}-entries-fine.csv"
        with Path(entries_download.value.path()).open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert tuple(rows[0]) == ENTRY_COLUMNS
        assert {r["scale"] for r in rows} == {"fine"}
        assert {r["judged"] for r in rows} == {"0", "1"}
        assert {r["estimator"] for r in rows} == {"joint"}

        # the scale picker moves both links to BROAD
        page.select_option("#scale", "broad")
        expect(panel.locator("[data-download-scale]").first).to_have_text("BROAD")
        offsets_link = panel.get_by_role("link", name="Offsets (JSON)")
        offsets_link.focus()
        with page.expect_download() as offsets_download:
            page.keyboard.press("Enter")
        assert offsets_download.value.suggested_filename == f"{slug}-offsets-broad.json"
        about = json.loads(Path(offsets_download.value.path()).read_text())
        assert about["scale"] == "broad"
        assert about["max"] == 2
        assert [f["name"] for f in about["factors"]][:1] == ["system"]
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(tmp_path / "downloads.png"), full_page=True)
    assert errors == []
