"""In a real browser (Playwright + Chromium), 390 pixels wide and with the keyboard only: an
organizer chooses clips cut from a start given per file, whose label says the excerpt length
typed, sends an offsets file with a bad line (named under the field, which is marked invalid
and described by the message), sends a good one, sees in the preview how the clips are cut,
and creates the campaign; its clips start where the file says. axe-core finds nothing on the
page at each step."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import Campaign, Document
from tests.audio_files import write_clip
from tests.browser import (
    Site,
    axe_violations,
    chromium_page,
    needs_chromium,
    screenshots,
    sign_in_on_page,
    upload,
)
from tests.factories import trec_run

pytestmark = needs_chromium

DOCS = [f"d{i}" for i in range(12)] + [f"q{q}" for q in range(4)]
SECONDS = 20.0


def tab_to(page, selector: str) -> None:
    from playwright.sync_api import expect

    page.keyboard.press("Tab")
    expect(page.locator(selector)).to_be_focused()


def test_an_organizer_cuts_clips_from_an_offsets_file_with_the_keyboard_at_390_pixels(
    live_site: Site, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base = live_site.url
    audio = tmp_path / "audio"
    audio.mkdir()
    for seed, doc in enumerate(DOCS):
        write_clip(audio / f"{doc}.flac", SECONDS, channels=1, rate=8000, seed=seed % 12)
    shots = screenshots(tmp_path)
    errors: list[str] = []
    with chromium_page(errors, height=844, bypass_csp=True) as page:  # axe is injected
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in_on_page(page, f"{base}/login")
        page.goto(f"{base}/new-campaign")
        runs = [upload(f"{s}.txt", trec_run(s, i)) for i, s in enumerate("ABC")]
        page.set_input_files("#field-runs", runs)  # the system's file chooser
        page.locator("#field-audio_dir").focus()
        page.keyboard.type(str(audio))

        # the choices of the cut, then the offsets file that comes with the third
        excerpt_words = page.locator("#clip_cut-excerpt-words")
        offsets_words = page.locator("#clip_cut-offsets-words")
        expect(excerpt_words).to_have_text("30-second excerpts (from 30\u00a0% of the way in)")
        expect(page.locator("#field-clip_offsets")).to_be_hidden()
        tab_to(page, "#field-clip_cut")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowDown")
        expect(page.locator("#clip_cut-offsets")).to_be_checked()
        expect(
            page.get_by_role("radio", name="30-second excerpts from a start given per file")
        ).to_be_checked()
        tab_to(page, "#field-clip_offsets")
        bad = "doc\tstart_seconds\nq0\t2\nd1\tsoon\n"
        page.set_input_files("#field-clip_offsets", [upload("starts.tsv", bad.encode())])
        assert axe_violations(page) == []

        # a shorter excerpt: the choices say so
        tab_to(page, "details.advanced summary >> nth=0")
        page.keyboard.press("Enter")
        tab_to(page, "#field-excerpt_seconds")
        page.keyboard.press("Control+A")
        page.keyboard.type("12")
        expect(offsets_words).to_have_text("12-second excerpts from a start given per file")
        expect(excerpt_words).to_have_text("12-second excerpts (from 30\u00a0% of the way in)")
        page.keyboard.press("Control+A")
        page.keyboard.type("1")  # out of range: the length is left out of the words
        expect(offsets_words).to_have_text("Excerpts from a start given per file")
        page.keyboard.press("Control+A")
        page.keyboard.type("12")
        expect(
            page.get_by_role("radio", name="12-second excerpts from a start given per file")
        ).to_be_checked()

        page.locator("#field-name").focus()
        page.keyboard.type("Offsets study")
        page.keyboard.press("Enter")  # the form's submit: the preview
        error = page.locator("#error-clip_offsets")
        expect(error).to_have_text(
            "Line 3: start_seconds: must be a number of seconds from 0, found 'soon'",
            timeout=20_000,
        )
        field = page.locator("#field-clip_offsets")
        expect(field).to_have_attribute("aria-invalid", "true")
        described = (field.get_attribute("aria-describedby") or "").split()
        assert described == ["hint-clip_offsets", "error-clip_offsets"]
        problems = page.locator(".preview-problems")
        expect(problems).to_contain_text("starts.tsv, line 3 (start_seconds)")
        expect(page.locator("#create-button")).to_be_disabled()
        page.screenshot(path=str(shots / "clip-offsets-problem-390.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert axe_violations(page) == []

        # the problem's link leads to the field; a good file, checked again
        problems.get_by_role("link").focus()
        page.keyboard.press("Enter")
        expect(field).to_be_focused()
        good = "doc\tstart_seconds\nq0\t2\nd1\t19\n"
        page.set_input_files("#field-clip_offsets", [upload("starts.tsv", good.encode())])
        page.get_by_role("button", name="Check the files").focus()
        page.keyboard.press("Enter")
        create = page.locator("#create-button")
        expect(create).to_be_enabled(timeout=20_000)
        expect(error).to_be_hidden()
        expect(field).not_to_have_attribute("aria-invalid", "true")
        preview = page.locator("#preview-body")
        expect(preview).to_contain_text("Clips cut")
        expect(preview).to_contain_text(
            "12 s excerpts from each file's start in the offsets (else 30% of the way in); "
            "2 documents named in the offsets file"
        )
        expect(preview).to_contain_text("every clip found and readable")
        page.screenshot(path=str(shots / "clip-offsets-preview-390.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert axe_violations(page) == []
        create.focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/campaigns/offsets-study/manage?done=created")
    assert errors == []

    engine = make_database_engine(live_site.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = session.scalars(select(Campaign)).one()
            assert (campaign.clip_cut, campaign.excerpt_seconds) == ("offsets", 12.0)
            rows = session.scalars(select(Document).where(Document.campaign_id == campaign.id))
            starts = {row.external_id: row.excerpt_start for row in rows}
    finally:
        engine.dispose()
    assert starts["q0"] == pytest.approx(2.0)
    assert starts["d1"] == pytest.approx(SECONDS - 12.0)  # moved back: the file ends first
    assert starts["d0"] == pytest.approx(0.3 * SECONDS)  # not named: as the other excerpts
