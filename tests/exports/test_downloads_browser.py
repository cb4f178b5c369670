"""In a real browser (Playwright + Chromium): the dashboard's "Report and exports" panel
downloads the entries and the offsets on the scale picked, files from which the results are
rebuilt (docs/exports.md)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.exports.estimate_files import ENTRY_COLUMNS
from mtcjudge.main import create_app
from mtcjudge.organizers import passwords
from mtcjudge.organizers import service as organizers
from tests.factories import make_campaign
from tests.support import CHEAP_HASHER, CHROMIUM, PASSWORD, chromium_page, serve_in_thread

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")


@pytest.fixture
def live(empty_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    """A server on a database with the organizer "ada" and a partly judged ``joint``
    campaign; yields (its URL, the campaign's slug)."""
    monkeypatch.setattr(passwords, "_HASHER", CHEAP_HASHER)
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
            slug = make_campaign(session, share=0.4, estimator="joint").campaign.slug
    finally:
        engine.dispose()
    settings = Settings(database_url=empty_database_url, login_failure_delay=0.0)
    with serve_in_thread(create_app(settings)) as base:
        yield base, slug


def test_download_the_entries_and_the_offsets_on_the_scale_picked(
    live: tuple[str, str], tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base, slug = live
    errors: list[str] = []
    with chromium_page(errors, height=1600, accept_downloads=True) as page:
        page.goto(f"{base}/campaigns/{slug}")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/campaigns/{slug}")
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
