"""In a real browser: run files whose scores contradict their ranks are named, file and line,
in the new-campaign preview and after adding systems on the management page; the form's
"order of each list" reaches the campaign (its runs export follows trec_eval's order)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.browser import (
    Site,
    chromium_page,
    needs_chromium,
    organizer_site,
    screenshots,
    sign_in_on_page,
    upload,
)
from tests.factories import trec_run
from tests.support import ORGANIZER_HEADERS, ORGANIZER_TOKEN

pytestmark = needs_chromium


@pytest.fixture
def live(empty_database_url: str) -> Iterator[Site]:
    with organizer_site(empty_database_url, organizer_token=ORGANIZER_TOKEN) as site:
        yield site


def test_the_pages_name_the_lists_whose_scores_contradict_their_ranks(
    live: Site, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    shots = screenshots(tmp_path)
    base = live.url
    errors: list[str] = []
    with chromium_page(errors, height=1400) as page:
        sign_in_on_page(page, f"{base}/login")
        page.get_by_role("link", name="New campaign").click()
        page.wait_for_url(f"{base}/new-campaign")

        files = [
            upload("a.txt", trec_run("A", 0)),
            upload("b.txt", trec_run("B", 1, backwards=True)),
            upload("c.txt", trec_run("C", 2)),
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
        page.set_input_files("#add-runs-files", [upload("d.txt", trec_run("D", 3, backwards=True))])
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
