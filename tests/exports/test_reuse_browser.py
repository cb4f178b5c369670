"""In a real browser (Playwright + Chromium): an organizer restores a campaign from its export
bundle on the new-campaign page (a damaged bundle is refused with the reason), then adds a
system on the restored campaign's management page (a name it has already is refused)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.exports import service as exports
from mtcjudge.main import create_app
from mtcjudge.models import Campaign, System
from mtcjudge.organizers import service as organizers
from tests.factories import make_campaign
from tests.support import (
    CHROMIUM,
    PASSWORD,
    chromium_page,
    serve_in_thread,
)

if TYPE_CHECKING:
    from playwright.sync_api import FilePayload

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")


@pytest.fixture
def live(empty_database_url: str) -> Iterator[tuple[str, str, bytes, dict]]:
    """A server whose database holds an organizer; the bundle of a campaign made elsewhere."""
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
            judged = make_campaign(session, share=0.5)
            out = io.BytesIO()
            exports.write_export(session, judged.campaign.slug, exports.ExportSpec("bundle"), out)
            runs = judged.synthetic.runs
            # the bundle is of another server's campaign: this one does not hold it
            session.delete(session.get(Campaign, judged.campaign.id))
    finally:
        engine.dispose()
    settings = Settings(database_url=empty_database_url, login_failure_delay=0.0)
    app = create_app(settings)
    with serve_in_thread(app) as base:
        app.state.settings = replace(settings, base_url=base)
        yield base, empty_database_url, out.getvalue(), runs


def _file(name: str, data: bytes, mime: str = "text/plain") -> FilePayload:
    return {"name": name, "mimeType": mime, "buffer": data}


def test_restore_a_bundle_then_add_a_system(live, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    base, url, bundle, runs = live
    damaged = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(bundle)) as source, zipfile.ZipFile(damaged, "w") as copy:
        for name in source.namelist():
            data = source.read(name)
            copy.writestr(name, data + b"\n" if name == "state/lists.csv" else data)
    new_system = "".join(
        f"S09\t{query}\t{doc}\n" for query, docs in runs["S02"].items() for doc in docs[::-1]
    ).encode()
    errors: list[str] = []
    with chromium_page(errors, height=1800) as page:
        page.goto(f"{base}/login")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/")
        page.goto(f"{base}/new-campaign")

        restore = page.locator("#restore-form")
        restore.locator("#restore-file").set_input_files(
            _file("damaged.zip", damaged.getvalue(), "application/zip")
        )
        restore.get_by_role("button", name="Restore the campaign").click()
        alert = page.locator("#restore-error")
        expect(alert).to_be_visible()
        expect(alert).to_contain_text("damaged.zip/state/lists.csv: its SHA-256 is not")
        expect(alert).to_be_focused()
        page.locator("#restore").screenshot(path=str(tmp_path / "refused.png"))

        restore.locator("#restore-file").set_input_files(
            _file("exported.zip", bundle, "application/zip")
        )
        restore.locator("#restore-slug").fill("restored")
        restore.get_by_role("button", name="Restore the campaign").click()
        page.wait_for_url(f"{base}/campaigns/restored/manage?done=restored")
        expect(page.locator("#page-notice")).to_contain_text("restored from its bundle")
        expect(page.get_by_role("heading", name="Manage Exported")).to_be_visible()
        page.screenshot(path=str(tmp_path / "restored.png"), full_page=True)

        add = page.locator("#add-runs-form")
        add.locator("#add-runs-files").set_input_files(
            _file("s01.tsv", "".join(f"S01\tq\td{i}\n" for i in range(3)).encode())
        )
        add.get_by_role("button", name="Add the systems").click()
        expect(page.locator("#add-runs-error")).to_contain_text(
            "system 'S01' is already in campaign 'restored'"
        )
        add.locator("#add-runs-files").set_input_files(_file("s09.tsv", new_system))
        add.get_by_role("button", name="Add the systems").click()
        page.wait_for_url(f"{base}/campaigns/restored/manage?done=runs#add-runs")
        expect(page.locator("#page-notice")).to_contain_text("The systems are added")
        expect(page.locator("#audit-log")).to_contain_text("S09")
        page.screenshot(path=str(tmp_path / "added.png"), full_page=True)
    assert errors == []
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = session.query(Campaign).filter_by(slug="restored").one()
            names = sorted(
                name for (name,) in session.query(System.name).filter_by(campaign_id=campaign.id)
            )
    finally:
        engine.dispose()
    assert names == ["S01", "S02", "S03", "S04", "S05", "S09"]
