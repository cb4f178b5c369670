"""axe-core finds nothing on any page, at 1280 and at 390 pixels wide, light and dark.

The pages: home, sign-in, new campaign, manage (with an invited, a consented and a revoked
assessor), dashboard, the HTML report, the volunteer's welcome, the judging page (volume
check, a pair, the shortcuts), and an error page. axe-core is a development dependency
(``npm ci`` puts it in node_modules; ``MTCJUDGE_AXE`` may name another copy of
``axe.min.js``); it is injected with the Content-Security-Policy bypassed, which only lets
the test's own script in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mtcjudge import audit
from mtcjudge.campaigns.service import invite_assessor
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import utcnow
from mtcjudge.organizers import service as organizers
from tests.browser import AXE, axe_violations, chromium_page, needs_chromium
from tests.factories import make_campaign
from tests.support import PASSWORD
from tests.web.judging_site import TOKEN, LiveServer, serve, wait_ready, wait_until

pytestmark = [
    needs_chromium,
    pytest.mark.skipif(not AXE.exists(), reason=f"needs axe-core at {AXE} (npm ci)"),
]

WIDTHS = (1280, 390)
#: the pages follow the system's colour scheme
SCHEMES = ("light", "dark")


@pytest.fixture
def site(empty_database_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    """The judging site (an unconsented volunteer, clips, a 1-second listening rule), plus the
    organizer "ada" and a partly judged campaign with assessors in every state."""
    with serve(empty_database_url, tmp_path, listen_seconds=1.0) as server:
        engine = make_database_engine(empty_database_url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
                campaign = make_campaign(session, share=0.4).campaign
                invite_assessor(session, campaign, "Invited")
                consented, _ = invite_assessor(session, campaign, "Consented")
                consented.consented_at = utcnow()
                revoked, _ = invite_assessor(session, campaign, "Revoked")
                revoked.revoked_at = utcnow()
                slug = campaign.slug
        finally:
            engine.dispose()
        yield server, slug


def test_axe_finds_nothing_on_any_page(site: tuple[LiveServer, str]) -> None:
    from playwright.sync_api import expect

    server, slug = site
    base = server.base_url
    findings: dict[str, list[str]] = {}
    errors: list[str] = []

    def check(page: Any, name: str) -> None:
        for scheme in SCHEMES:
            # reduced motion: the colours are checked as they end, never halfway through a
            # transition (a loaded machine can take longer than the wait below to finish one)
            page.emulate_media(color_scheme=scheme, reduced_motion="reduce")
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 900})
                page.wait_for_timeout(150)  # charts redraw on resize
                # and every transition has ended (a loaded machine can be slow to start one)
                page.wait_for_function(
                    "document.getAnimations().every(a => a.playState !== 'running')"
                )
                found = axe_violations(page)
                if found:
                    findings[f"{name} at {width} px, {scheme}"] = found
        page.emulate_media(color_scheme="light", reduced_motion="reduce")

    with chromium_page(errors, timeout_ms=15_000, bypass_csp=True) as page:
        page.goto(f"{base}/login")
        check(page, "sign-in")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{base}/")
        check(page, "home")

        page.goto(f"{base}/new-campaign")
        check(page, "new campaign")

        page.goto(f"{base}/campaigns/{slug}/manage")
        expect(page.locator(".state-tag--invited").first).to_be_visible()
        check(page, "manage")

        page.goto(f"{base}/campaigns/{slug}")
        expect(page.locator("#live-status")).to_have_text("Live")
        # what each target would cost, as a share of the pool too
        expect(page.locator("#costs-body")).to_contain_text("% of the pool")
        check(page, "dashboard")

        report = page.request.get(f"{base}/api/campaigns/{slug}/report?format=html")
        assert report.status == 200
        page.set_content(report.text())
        check(page, "report")

        page.goto(f"{base}/a/no-such-invitation")
        check(page, "error")

        page.goto(f"{base}/a/{TOKEN}")
        check(page, "welcome")
        page.get_by_label("I understand the task").check()
        page.get_by_role("button", name="Start judging").click()
        judge = page.locator("#judge")
        expect(judge).to_have_attribute("data-state", "check")
        check(page, "judging: the volume check")
        page.get_by_role("button", name="Yes, start judging").click()
        expect(judge).to_have_attribute("data-state", "pair")
        wait_ready(page)
        page.keyboard.press("q")
        page.keyboard.press("a")  # a loop, so its bar and its button are checked too
        page.keyboard.press("2")
        page.keyboard.press("ArrowRight")
        check(page, "judging: a pair")
        # the query heard for the rule's second before the candidate takes over (on an idle
        # machine the check above can take less than that)
        wait_until(
            page, "document.querySelector('#main-query-player').classList.contains('is-heard')"
        )
        # judged: the recent judgments list its chip
        page.keyboard.press("c")
        wait_until(page, "document.querySelector('#judge').dataset.ready === 'true'")
        page.keyboard.press("Enter")
        expect(page.locator("#history-list li")).to_have_count(1)
        page.keyboard.press("1")
        # the next pair has arrived: a page still busy is dimmed on purpose (inactive controls)
        wait_until(page, "!document.querySelector('#judge').hasAttribute('aria-busy')")
        check(page, "judging: after a judgment")
        page.set_viewport_size({"width": 1280, "height": 900})
        page.locator("#help-button").click()
        expect(page.locator("#help-dialog")).to_be_visible()
        found = axe_violations(page)
        if found:
            findings["judging: the shortcuts"] = found

    assert findings == {}, "\n".join(f"{k}:\n  " + "\n  ".join(v) for k, v in findings.items())
    assert errors == []
