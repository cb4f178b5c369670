"""In a real browser (Playwright + Chromium): an organizer restores a campaign from its export
bundle on the new-campaign page (a damaged bundle is refused with the reason), then adds a
system on the restored campaign's management page (a name it has already is refused)."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.exports import service as exports
from mtcjudge.models import Campaign, System
from tests.browser import (
    Site,
    chromium_page,
    needs_chromium,
    organizer_site,
    sign_in_on_page,
    upload,
)
from tests.factories import make_campaign

pytestmark = needs_chromium


def _bundle_from_elsewhere(session: Session) -> tuple[bytes, dict[str, Any]]:
    """The bundle of a campaign made elsewhere (this server does not hold it), and its runs."""
    judged = make_campaign(session, share=0.5)
    out = io.BytesIO()
    exports.write_export(session, judged.campaign.slug, exports.ExportSpec("bundle"), out)
    session.delete(session.get(Campaign, judged.campaign.id))
    return out.getvalue(), judged.synthetic.runs


@pytest.fixture
def live(empty_database_url: str) -> Iterator[Site]:
    """A server whose database holds an organizer; ``seeded`` is :func:`_bundle_from_elsewhere`."""
    with organizer_site(empty_database_url, _bundle_from_elsewhere) as site:
        yield site


def test_restore_a_bundle_then_add_a_system(live: Site, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    base, url, (bundle, runs) = live.url, live.database_url, live.seeded
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
        sign_in_on_page(page, f"{base}/login")
        page.goto(f"{base}/new-campaign")

        restore = page.locator("#restore-form")
        restore.locator("#restore-file").set_input_files(
            upload("damaged.zip", damaged.getvalue(), "application/zip")
        )
        restore.get_by_role("button", name="Restore the campaign").click()
        alert = page.locator("#restore-error")
        expect(alert).to_be_visible()
        expect(alert).to_contain_text("damaged.zip/state/lists.csv: its SHA-256 is not")
        expect(alert).to_be_focused()
        page.locator("#restore").screenshot(path=str(tmp_path / "refused.png"))

        restore.locator("#restore-file").set_input_files(
            upload("exported.zip", bundle, "application/zip")
        )
        restore.locator("#restore-slug").fill("restored")
        restore.get_by_role("button", name="Restore the campaign").click()
        page.wait_for_url(f"{base}/campaigns/restored/manage?done=restored")
        expect(page.locator("#page-notice")).to_contain_text("restored from its bundle")
        expect(page.get_by_role("heading", name="Manage Exported")).to_be_visible()
        page.screenshot(path=str(tmp_path / "restored.png"), full_page=True)

        add = page.locator("#add-runs-form")
        add.locator("#add-runs-files").set_input_files(
            upload("s01.tsv", "".join(f"S01\tq\td{i}\n" for i in range(3)).encode())
        )
        add.get_by_role("button", name="Add the systems").click()
        expect(page.locator("#add-runs-error")).to_contain_text(
            "system 'S01' is already in campaign 'restored'"
        )
        add.locator("#add-runs-files").set_input_files(upload("s09.tsv", new_system))
        add.get_by_role("button", name="Add the systems").click()
        page.wait_for_url(f"{base}/campaigns/restored/manage?done=runs#add-runs")
        expect(page.locator("#page-notice")).to_contain_text("The systems are added")
        expect(page.locator("#audit-log")).to_contain_text("S09")
        page.screenshot(path=str(tmp_path / "added.png"), full_page=True)
    assert errors == []
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = session.query(Campaign).filter_by(slug="restored").one()
            names = sorted(
                name for (name,) in session.query(System.name).filter_by(campaign_id=campaign.id)
            )
    finally:
        engine.dispose()
    assert names == ["S01", "S02", "S03", "S04", "S05", "S09"]
