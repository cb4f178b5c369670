"""In a real browser: the dashboard's export links. An export without rows is not a silent
failed download: the reason is shown beside the links, with a link to the empty file; the
runs come as one file per system (a zip) or as one file."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.organizers import service as organizers
from tests.factories import make_campaign
from tests.support import CHROMIUM, PASSWORD, chromium_page, serve_in_thread

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")

SCREENSHOTS = os.environ.get("MTCJUDGE_SCREENSHOTS")


def test_dashboard_downloads_say_why_an_export_is_empty(empty_database_url, tmp_path) -> None:
    from playwright.sync_api import expect

    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
            judged = make_campaign(session, share=0.0)  # nothing judged, nobody invited
            slug, systems = judged.campaign.slug, judged.synthetic.systems
    finally:
        engine.dispose()
    app = create_app(Settings(database_url=empty_database_url, login_failure_delay=0.0))
    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    errors: list[str] = []
    with (
        serve_in_thread(app) as base,
        chromium_page(errors, height=1400, accept_downloads=True) as page,
    ):
        page.goto(f"{base}/login")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
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
