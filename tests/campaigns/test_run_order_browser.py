"""In a real browser: run files whose scores contradict their ranks are named, file and line,
in the new-campaign preview and after adding systems on the management page; the form's
"order of each list" reaches the campaign (its runs export follows trec_eval's order)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.organizers import service as organizers
from tests.support import (
    CHROMIUM,
    ORGANIZER_HEADERS,
    ORGANIZER_TOKEN,
    PASSWORD,
    chromium_page,
    serve_in_thread,
)

if TYPE_CHECKING:
    from playwright.sync_api import FilePayload

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"needs Chromium at {CHROMIUM}")

#: where the screenshots go when MTCJUDGE_SCREENSHOTS names a folder (else the test's tmp)
SCREENSHOTS = os.environ.get("MTCJUDGE_SCREENSHOTS")


def _run(system: str, shift: int, *, backwards: bool = False) -> bytes:
    """Four queries of four documents, scores decreasing with rank, or increasing (a score
    that is a distance) with ``backwards``."""
    lines = [
        f"q{q} Q0 d{(q * 3 + shift + r) % 12} {r + 1} {(r + 1 if backwards else 10 - r)}.0 {system}"
        for q in range(4)
        for r in range(4)
    ]
    return ("\n".join(lines) + "\n").encode()


def _file(name: str, text: bytes) -> FilePayload:
    return {"name": name, "mimeType": "text/plain", "buffer": text}


@pytest.fixture
def live(empty_database_url: str) -> Iterator[str]:
    upgrade_database(empty_database_url)
    engine = make_engine(empty_database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
    finally:
        engine.dispose()
    settings = Settings(
        database_url=empty_database_url, login_failure_delay=0.0, organizer_token=ORGANIZER_TOKEN
    )
    app = create_app(settings)
    with serve_in_thread(app) as base:
        app.state.settings = replace(settings, base_url=base)
        yield base


def test_the_pages_name_the_lists_whose_scores_contradict_their_ranks(
    live: str, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    shots = Path(SCREENSHOTS) if SCREENSHOTS else tmp_path
    base = live
    errors: list[str] = []
    with chromium_page(errors, height=1400) as page:
        page.goto(f"{base}/login")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.get_by_role("link", name="New campaign").click()
        page.wait_for_url(f"{base}/new-campaign")

        files = [
            _file("a.txt", _run("A", 0)),
            _file("b.txt", _run("B", 1, backwards=True)),
            _file("c.txt", _run("C", 2)),
        ]
        page.set_input_files("#field-runs", files)
        page.fill("#field-name", "Scores")
        page.fill("#field-k", "3")
        page.get_by_role("button", name="Check the files").click()
        expect(page.locator("#create-button")).to_be_enabled(timeout=20_000)  # not a problem
        warnings = page.locator(".preview-warnings")
        expect(warnings).to_contain_text("The scores of some lists contradict their ranks")
        expect(warnings).to_contain_text("The scores of 4 of the 12 lists")
        expect(warnings).to_contain_text(
            "b.txt, line 2: system B query q0: rank 2 has score 2.0 above rank 1's 1.0 "
            "(and 2 more in this list)"
        )
        expect(warnings).to_contain_text("They are ordered by the rank column")
        assert page.locator(".preview-problems").count() == 0
        page.locator(".preview-warnings").scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "preview-score-warnings.png"), full_page=True)

        # by score: the form changed, check again, then create
        page.select_option("#field-order_by", "score")
        expect(page.locator("#create-button")).to_be_disabled()
        page.get_by_role("button", name="Check the files").click()
        expect(page.locator("#create-button")).to_be_enabled(timeout=20_000)
        expect(warnings).to_contain_text("They are ordered by score")
        page.locator("#create-button").click()
        page.wait_for_url(f"{base}/campaigns/scores/manage?done=created")

        # add a system whose scores are distances
        page.set_input_files("#add-runs-files", [_file("d.txt", _run("D", 3, backwards=True))])
        page.select_option("#add-runs-order", "score")
        page.get_by_role("button", name="Add the systems").click()
        added = page.locator("[data-reuse-warnings]")
        expect(added).to_contain_text("Added D; the scores of some lists contradict their ranks")
        expect(added).to_contain_text("d.txt, line 2: system D query q0")
        link = page.get_by_role("link", name="Show the campaign with the new systems")
        expect(link).to_be_focused()
        added.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "add-runs-score-warnings.png"), full_page=True)
        link.click()
        page.wait_for_url(f"{base}/campaigns/scores/manage?done=runs#add-runs")
    assert errors == []

    # the campaign's lists are in trec_eval's order: B's and D's reversed
    with httpx.Client(base_url=base, headers=ORGANIZER_HEADERS, timeout=10) as client:
        text = client.get("/api/campaigns/scores/export/runs").text
    by_system: dict[str, list[str]] = {}
    for line in text.splitlines():
        qid, _, doc, _, _, tag = line.split()
        if qid == "q0":
            by_system.setdefault(tag, []).append(doc)
    assert by_system["A"] == ["d0", "d1", "d2", "d3"]
    assert by_system["B"] == ["d4", "d3", "d2", "d1"]
    assert by_system["D"] == ["d6", "d5", "d4", "d3"]
