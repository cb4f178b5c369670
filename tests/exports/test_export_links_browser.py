"""In a real browser: the dashboard's export links. An export without rows is not a silent
failed download: the reason is shown beside the links, with a link to the empty file; the
runs come as one file per system (a zip) or as one file."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from sqlalchemy.orm import Session

from tests.browser import (
    chromium_page,
    needs_chromium,
    organizer_site,
    screenshots,
    sign_in_on_page,
)
from tests.factories import make_campaign

pytestmark = needs_chromium


def _unjudged(session: Session) -> tuple[str, list[str]]:
    """A campaign nothing is judged of and nobody is invited to: its slug and systems."""
    judged = make_campaign(session, share=0.0)
    return judged.campaign.slug, judged.synthetic.systems


def test_dashboard_downloads_say_why_an_export_is_empty(empty_database_url, tmp_path) -> None:
    from playwright.sync_api import expect

    shots = screenshots(tmp_path)
    errors: list[str] = []
    with (
        organizer_site(empty_database_url, _unjudged) as site,
        chromium_page(errors, height=1400, accept_downloads=True) as page,
    ):
        base, (slug, systems) = site.url, site.seeded
        sign_in_on_page(page, f"{base}/login")
        page.get_by_role("link", name="New campaign").wait_for()
        page.goto(f"{base}/campaigns/{slug}")

        status = page.locator("[data-download-status]")
        expect(status).to_be_hidden()
        page.get_by_role("link", name="qrels BROAD").click()
        expect(status).to_be_visible()
        expect(status).to_have_text(
            "qrels BROAD: nothing to export: no judgments yet: nobody has judged a pair of this "
            "campaign and none were imported. Download the empty file anyway"
        )
        status.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "dashboard-empty-export.png"), full_page=True)
        with page.expect_download() as info:
            page.get_by_role("link", name="Download the empty file anyway").click()
        assert info.value.suggested_filename == f"{slug}-qrels-broad.txt"
        assert Path(info.value.path()).read_bytes() == b""

        with page.expect_download() as info:
            page.get_by_role("link", name="Runs, one file per system (zip)").click()
        assert info.value.suggested_filename == f"{slug}-runs.zip"
        archive = zipfile.ZipFile(io.BytesIO(Path(info.value.path()).read_bytes()))
        assert archive.namelist() == [f"runs/{s}.txt" for s in systems]
        expect(status).to_be_hidden()
        with page.expect_download() as info:
            page.get_by_role("link", name="Runs, one file", exact=True).click()
        assert info.value.suggested_filename == f"{slug}-runs.txt"
    assert errors == []
