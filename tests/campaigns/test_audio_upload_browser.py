"""In a real browser (Playwright + Chromium), 390 pixels wide and with the keyboard only: an
organizer chooses to upload the audio, sends a folder of clips (good ones, a text file named
.wav, an empty one, a cover image), sees the progress and then the files that cannot be used
and why, chooses whole files, checks and creates the campaign; its clips are stored in the
database. axe-core finds nothing on the page at each step. Then a zip with a member outside it.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import Campaign, Document
from tests.audio_files import text_named, write_clip, zero_length
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


def audio_folder(root: Path) -> Path:
    folder = root / "collection"
    (folder / "more").mkdir(parents=True)
    for i, doc in enumerate(DOCS):
        write_clip((folder if i % 2 else folder / "more") / f"{doc}.mp3", 1.0, seed=i % 12)
    text_named(folder / "notes.wav")
    zero_length(folder / "empty.flac")
    (folder / "cover.jpg").write_bytes(b"jpeg")
    return folder


def tab_to(page, selector: str, presses: int = 1) -> None:
    from playwright.sync_api import expect

    for _ in range(presses):
        page.keyboard.press("Tab")
    expect(page.locator(selector)).to_be_focused()


def test_an_organizer_uploads_a_folder_of_audio_with_the_keyboard_at_390_pixels(
    live_site: Site, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    base = live_site.url
    folder = audio_folder(tmp_path)
    shots = screenshots(tmp_path)
    errors: list[str] = []
    with chromium_page(errors, height=844, bypass_csp=True) as page:  # axe is injected
        page.set_viewport_size({"width": 390, "height": 844})
        sign_in_on_page(page, f"{base}/login")
        page.goto(f"{base}/new-campaign")
        runs = [upload(f"{s}.txt", trec_run(s, i)) for i, s in enumerate("ABC")]
        page.set_input_files("#field-runs", runs)  # the system's file chooser
        page.locator("#field-judgments_broad").focus()
        # the source of the clips: a radio group, then the folder, the zip and the button
        tab_to(page, "#audio-source-server")
        page.keyboard.press("ArrowDown")
        expect(page.locator("#audio-source-upload")).to_be_checked()
        expect(page.locator("#field-audio_dir")).to_be_hidden()
        tab_to(page, "#field-audio_folder")
        page.set_input_files("#field-audio_folder", folder)  # the chooser, as Space opens it
        tab_to(page, "#field-audio_zip")
        tab_to(page, "#upload-button")
        assert axe_violations(page) == []
        page.keyboard.press("Enter")

        heading = page.locator("#upload-report-heading")
        expect(heading).to_have_text("Audio uploaded: 16 of 18 files can be used", timeout=30_000)
        expect(heading).to_be_focused()
        status = page.locator("#upload-status")
        expect(status).to_have_text("Upload complete: 16 clips can be used.")
        report = page.locator("#upload-report")
        expect(report).to_contain_text("1 other file (not audio) was left out.")
        rows = report.locator("tbody tr")
        expect(rows).to_have_count(2)
        expect(report).to_contain_text("notes.wav")
        expect(report).to_contain_text("not readable as a WAV file (Format not recognised.)")
        expect(report).to_contain_text("empty.flac")
        expect(report).to_contain_text("empty file")
        page.screenshot(path=str(shots / "audio-upload-390.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert axe_violations(page) == []

        # the table of problems, then the cut: whole files
        tab_to(page, "#upload-report .table-wrap")
        tab_to(page, "#field-clip_cut")
        page.keyboard.press("ArrowDown")
        expect(page.locator("#clip_cut-whole")).to_be_checked()

        page.locator("#field-name").focus()
        page.keyboard.type("Uploaded study")
        page.keyboard.press("Enter")  # the form's submit: the preview
        expect(page.locator("#create-button")).to_be_enabled(timeout=20_000)
        expect(page.locator("#preview-body")).to_contain_text("every clip found and readable")
        assert axe_violations(page) == []
        page.locator("#create-button").focus()
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/campaigns/uploaded-study/manage?done=created")
    assert errors == []

    engine = make_database_engine(live_site.database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            campaign = session.scalars(select(Campaign)).one()
            assert campaign.clip_cut == "whole"
            documents = session.scalars(select(Document).where(Document.campaign_id == campaign.id))
            paths = {row.external_id: row.audio_path for row in documents}
    finally:
        engine.dispose()
    assert set(paths) == set(DOCS)
    assert all((path or "").startswith("blob:") for path in paths.values()), paths


def test_a_zip_upload_is_cancelled_sent_again_and_reports_its_unsafe_members(
    live_site: Site, tmp_path: Path
) -> None:
    import zipfile

    from playwright.sync_api import expect

    folder = audio_folder(tmp_path)
    archive = tmp_path / "clips.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out.write(path, path.relative_to(tmp_path).as_posix())
        out.writestr("../evil.wav", b"RIFF")
    errors: list[str] = []
    with chromium_page(errors) as page:
        sign_in_on_page(page, f"{live_site.url}/login")
        page.goto(f"{live_site.url}/new-campaign")
        page.check("#audio-source-upload")
        page.set_input_files("#field-audio_zip", archive)
        # a slow line: the progress shows, and the upload is cancelled from the keyboard
        network = page.context.new_cdp_session(page)
        slow = {"offline": False, "latency": 20, "downloadThroughput": -1}
        network.send("Network.emulateNetworkConditions", {**slow, "uploadThroughput": 20_000})
        page.click("#upload-button")
        expect(page.locator("#upload-cancel")).to_be_focused()
        expect(page.locator("#upload-text")).to_contain_text(" kB of ")
        expect(page.locator("#upload-bar")).to_be_visible()
        page.locator("#audio-upload-part").screenshot(
            path=str(screenshots(tmp_path) / "audio-upload-progress.png")
        )
        page.keyboard.press("Enter")
        expect(page.locator("#upload-status")).to_have_text(
            "Upload cancelled: nothing of it will be used."
        )
        expect(page.locator("#upload-button")).to_be_focused()
        network.send("Network.emulateNetworkConditions", {**slow, "uploadThroughput": -1})
        page.keyboard.press("Enter")
        expect(page.locator("#upload-report-heading")).to_have_text(
            "Audio uploaded: 16 of 19 files can be used", timeout=30_000
        )
        report = page.locator("#upload-report")
        expect(report).to_contain_text("../evil.wav")
        expect(report).to_contain_text("unsafe path in the zip")
        # a new choice forgets the upload: the form asks for another before checking
        other = tmp_path / "other.zip"
        other.write_bytes(archive.read_bytes())
        page.set_input_files("#field-audio_zip", other)
        expect(page.locator("#upload-status")).to_have_text(
            "The chosen audio has changed: upload it again."
        )
        page.set_input_files("#field-runs", [upload("a.txt", trec_run("A", 0))])
        page.click("#preview-button")
        expect(page.locator("#form-error")).to_contain_text("Upload the audio first")
        expect(page.locator("#upload-button")).to_be_focused()
    assert errors == []
