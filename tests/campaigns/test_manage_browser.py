"""In a real browser (Playwright + Chromium): an organizer signs in, uploads run files, sees
the problems of a bad file by file and line, then the preview of good ones, creates the
campaign, invites an assessor, copies the link and opens the campaign; the assessor opens
the link in a second browser context and gives consent, judges a pair, and the dashboard
shows it without a reload."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
from sqlalchemy import update

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
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


def test_an_organizer_creates_a_campaign_from_files_and_invites(
    live_site: Site, tmp_path: Path, empty_database_url: str
) -> None:
    from playwright.sync_api import expect

    base = live_site.url
    errors: list[str] = []
    with chromium_page(
        errors, height=1600, permissions=["clipboard-read", "clipboard-write"]
    ) as page:
        browser = page.context.browser
        assert browser is not None

        sign_in_on_page(page, f"{base}/login")
        page.get_by_role("link", name="New campaign").click()
        page.wait_for_url(f"{base}/new-campaign")

        # a bad file: its problem, by file and line, tied to the field
        bad = trec_run("B", 1).replace(b"q2 Q0", b"q2 Q0 extra", 1)
        page.set_input_files(
            "#field-runs", [upload("a.txt", trec_run("A", 0)), upload("b.txt", bad)]
        )
        page.get_by_role("button", name="Check the files").click()
        problems = page.locator(".preview-problems")
        expect(problems).to_contain_text("b.txt, line 9")
        expect(page.locator("#create-button")).to_be_disabled()
        assert "error-runs" in (page.get_attribute("#field-runs", "aria-describedby") or "")
        expect(page.locator("#error-runs")).to_contain_text("Line 9")

        # good files: the preview, then create
        page.set_input_files(
            "#field-runs",
            [
                upload("a.txt", trec_run("A", 0)),
                upload("b.txt", trec_run("B", 1)),
                upload("c.txt", trec_run("C", 2)),
            ],
        )
        page.fill("#field-name", "Browser study")
        # a clip per document: only pairs whose two clips can be played are handed out
        audio = write_clips(tmp_path / "audio", [f"d{i}" for i in range(12)])
        write_clips(audio, [f"q{q}" for q in range(4)])
        page.fill("#field-audio_dir", str(audio))
        page.fill("#field-k", "3")
        page.press("#field-k", "Enter")  # the form's submit: the preview
        expect(page.locator("#create-button")).to_be_enabled(timeout=20_000)
        preview = page.locator("#preview-body")
        expect(preview).to_contain_text("Pool at k = 3")
        expect(preview).to_contain_text("to reach a ranking confidence of 0.95")
        expect(preview).to_contain_text("simulated campaign")
        expect(preview).to_contain_text("of volunteers' time")
        expect(preview).to_contain_text("Hours from the defaults, nothing being measured yet")
        expect(preview).to_contain_text("every clip found and readable")
        assert page.locator(".preview-problems").count() == 0
        page.screenshot(path=str(tmp_path / "new-campaign.png"), full_page=True)
        expect(page.locator("#preview")).to_be_focused()  # read next by a screen reader
        page.locator("#create-button").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/campaigns/browser-study/manage?done=created")
        expect(page.locator("#page-notice")).to_contain_text("created")

        # invite, copy the link
        page.get_by_label("Names, one per line").fill("Ann")
        page.get_by_role("button", name="Invite").click()
        link = page.locator("#link-1").input_value()
        assert link.startswith(f"{base}/a/")
        # with the keyboard: the new links have the focus, then the field, then the button
        expect(page.locator("#new-links")).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.locator("#link-1")).to_be_focused()
        page.keyboard.press("Tab")
        expect(page.get_by_role("button", name="Copy link")).to_be_focused()
        assert page.evaluate("document.activeElement.matches(':focus-visible')") is True
        page.keyboard.press("Enter")
        expect(page.locator("[data-copy-status]")).to_contain_text("Ann")
        assert page.evaluate("navigator.clipboard.readText()") == link
        expect(page.locator("#audit-log")).to_contain_text("invited an assessor: Ann")
        page.screenshot(path=str(tmp_path / "manage-page.png"), full_page=True)

        # open the campaign; the dashboard follows what the assessor does
        page.get_by_role("button", name="Open", exact=True).click()
        expect(page.locator("#page-notice")).to_contain_text("The campaign is open")
        page.get_by_role("link", name="Open the dashboard").click()
        page.wait_for_url(f"{base}/campaigns/browser-study")
        expect(page.locator("#fig-judgments")).to_have_text("0", timeout=15_000)
        page.evaluate("window.notReloaded = true")

        # the link opens the assessor's pages, in another browser context
        assessor = browser.new_context().new_page()
        assessor.goto(link)
        assert "Sign in" not in assessor.content()
        assessor.check("#consent")
        assessor.click("#start")
        assessor.wait_for_url(f"{link}/judge")
        token = link.rsplit("/", 1)[1]
        # the campaign has no audio and is judged without listening: rule and trials off
        engine = make_database_engine(empty_database_url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                session.execute(update(Campaign).values(listen_seconds=0.0, quality_rate=0.0))
        finally:
            engine.dispose()
        with httpx.Client(base_url=base, timeout=10) as client:
            deadline = time.monotonic() + 15
            while (answer := client.get(f"/api/a/{token}/next").json())["status"] != "pair":
                assert time.monotonic() < deadline, answer
                time.sleep(0.2)
            body = {
                "lease_id": answer["pair"]["lease_id"],
                "broad": 2,
                "fine": 80,
                "client_id": str(uuid.uuid4()),
            }
            assert client.post(f"/api/a/{token}/judgments", json=body).status_code == 201
        expect(page.locator("#fig-judgments")).to_have_text("1", timeout=15_000)
        assert page.evaluate("window.notReloaded") is True
    assert errors == []
