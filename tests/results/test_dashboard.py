"""The campaign dashboard (``GET /campaigns/{slug}``): who may open it, and in a real browser,
that it draws the results and changes without a reload when a judgment arrives."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaigns.creation import create_campaign
from mtcjudge.campaigns.service import invite_assessor
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.ingest.formats import Runs
from mtcjudge.models import utcnow
from mtcjudge.results import routes as results_routes
from tests.browser import (
    Site,
    chromium_page,
    needs_chromium,
    organizer_site,
    sign_in_on_page,
    text_of,
    wait_for_text,
)
from tests.factories import TEST_AUDIO, make_campaign, write_clips
from tests.support import ORGANIZER_HEADERS, PASSWORD, csrf_field

#: 4 systems x 3 queries x k=3 over overlapping candidates
RUNS = {
    f"S{s}": {f"q{q}": [f"d{q}-{(s + r) % 5}" for r in range(3)] for q in range(3)}
    for s in range(4)
}


def _campaign(session: Session) -> str:
    """The campaign "ams" with one consented assessor; returns the assessor's token."""
    spec = CampaignSpec(name="AMS dashboard", slug="ams", k=3, status="open", estimator="uniform")
    docs = {d for lists in RUNS.values() for per_query in lists.values() for d in per_query}
    clips = write_clips(TEST_AUDIO / "dashboard", docs | set(RUNS["S0"]))
    campaign, _ = create_campaign(session, spec, Runs(RUNS, "tsv"), audio_dir=clips)
    # judged without listening: the rule and the trials are off
    campaign.listen_seconds, campaign.quality_rate = 0.0, 0.0
    assessor, token = invite_assessor(session, campaign, "Ada")
    assessor.consented_at = utcnow()
    return token


@pytest.fixture
def campaign(session_factory: sessionmaker[Session]) -> str:
    """The campaign "ams", committed for the apps; returns its assessor's token."""
    with session_factory() as session:
        token = _campaign(session)
        session.commit()
    return token


def test_signed_out_visitors_get_the_sign_in_form(client: TestClient, campaign: str) -> None:
    page = client.get("/campaigns/ams")
    assert page.status_code == 401
    assert 'name="password"' in page.text
    assert "/campaigns/ams" in page.text  # where the form returns to


def test_an_assessor_token_does_not_open_it(client: TestClient, campaign: str) -> None:
    bearer = client.get("/campaigns/ams", headers={"Authorization": f"Bearer {campaign}"})
    assert bearer.status_code == 401
    client.cookies.set("mtcjudge_session", campaign)
    assert client.get("/campaigns/ams").status_code == 401


def test_the_signed_in_organizer_gets_the_dashboard(signed_in: TestClient, campaign: str) -> None:
    page = signed_in.get("/campaigns/ams")
    assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert 'data-results-url="/api/campaigns/ams/results"' in page.text
    assert 'data-events-url="/api/campaigns/ams/events"' in page.text
    assert "AMS dashboard" in page.text
    assert "<script>" not in page.text  # the CSP allows no inline script


def test_the_api_token_opens_it_too(client: TestClient, campaign: str) -> None:
    assert client.get("/campaigns/ams", headers=ORGANIZER_HEADERS).status_code == 200


def test_an_unknown_campaign_is_a_404_page(signed_in: TestClient, campaign: str) -> None:
    page = signed_in.get("/campaigns/nope")
    assert page.status_code == 404
    assert "nope" in page.text


# --------------------------------------------------------------------------- in a browser


@pytest.fixture
def live(empty_database_url: str) -> Iterator[Site]:
    """A server with its planner on a migrated database holding an organizer "ada" and the
    campaign "ams"; ``seeded`` is the assessor's token."""
    with organizer_site(empty_database_url, _campaign) as site:
        yield site


@needs_chromium
def test_the_dashboard_follows_judging_without_a_reload(live: Site) -> None:
    base, token = live.url, live.seeded
    errors: list[str] = []
    with chromium_page(errors, height=1800) as page:
        sign_in_on_page(page, f"{base}/campaigns/ams")
        wait_for_text(page, "#fig-judgments", "0")
        wait_for_text(page, "#live-status", "Live")
        # the pictures: one row per system, two cells per system pair
        assert page.locator("#forest .forest-row").count() == 4
        assert page.locator("#heatmap rect.cell:not(.diagonal)").count() == 2 * 6
        assert page.locator("#curve path.curve").count() == 1
        # the volunteers' time: nothing spent yet, and what it rests on
        wait_for_text(page, "#fig-hours", "0 s")
        assert "over 0 judgments" in text_of(page, "#fig-hours-of")
        assert "Judging the whole pool once" in text_of(page, "#hours-method")
        page.evaluate("window.notReloaded = true")

        with httpx.Client(base_url=base, timeout=10) as assessor:
            lease = assessor.get(f"/api/a/{token}/next").json()["pair"]["lease_id"]
            body = {"lease_id": lease, "broad": 2, "fine": 90, "client_id": str(uuid.uuid4())}
            assert assessor.post(f"/api/a/{token}/judgments", json=body).status_code == 201

        wait_for_text(page, "#fig-judgments", "1")
        assert page.evaluate("window.notReloaded") is True
        # the hours follow (the planner computes them again within seconds of a judgment)
        deadline = time.monotonic() + 20
        while not text_of(page, "#fig-hours-of").endswith("over 1 judgment"):
            assert time.monotonic() < deadline, text_of(page, "#fig-hours-of")
            page.wait_for_timeout(100)
        spent = text_of(page, "#assessors-body tr td:nth-child(3)")
        assert "listening" in spent
        assert spent.split()[0].isdigit()
        # each target's hours beside its judgments, with an interval unless reached
        rows = page.locator("#costs-body tr").count()
        assert rows >= 3
        hours = page.locator("#costs-body tr td:nth-child(4)").all_text_contents()
        assert len(hours) == rows
        assert all(h == "reached" or h.startswith("≈") or h == "not within the pool" for h in hours)

        # another measure, with the keyboard: the ranking is redrawn, the loop is not changed
        page.focus("#measure")
        page.keyboard.press("ArrowDown")  # CG -> MIREX nDCG
        page.wait_for_selector("#measure-note:not([hidden])")
        page.wait_for_function(
            "document.querySelector('#forest .axis-label').textContent.startsWith('MIREX nDCG@')"
        )
        assert text_of(page, "#fig-judgments") == "1"
        assert "Ada" not in page.inner_text("#assessors-body")  # pseudonyms only
        assert text_of(page, "#assessors-body tr th") == "A1"

        # on a 390 px phone the page fits its width: wide tables scroll in their own region
        page.set_viewport_size({"width": 390, "height": 800})
        page.wait_for_timeout(300)  # the charts redraw on resize
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert errors == []


def test_an_open_event_stream_ends_when_its_organizer_signs_out(
    live: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results_routes, "RECHECK_SECONDS", 0.0)
    base, token = live.url, live.seeded
    with httpx.Client(base_url=base, timeout=20) as organizer:
        form = organizer.get("/login")
        fields = {"username": "ada", "password": PASSWORD, "csrf_token": csrf_field(form.text)}
        assert organizer.post("/login", data=fields).status_code == 303
        csrf = csrf_field(organizer.get("/").text)
        events: list[str] = []
        with organizer.stream("GET", "/api/campaigns/ams/events") as stream:
            lines = stream.iter_lines()
            for line in lines:  # the latest document comes at once
                if line.startswith("event: results"):
                    events.append(line)
                    break
            assert organizer.post("/logout", data={"csrf_token": csrf}).status_code in (200, 303)
            with httpx.Client(base_url=base, timeout=10) as assessor:
                lease = assessor.get(f"/api/a/{token}/next").json()["pair"]["lease_id"]
                body = {"lease_id": lease, "broad": 1, "fine": 50, "client_id": str(uuid.uuid4())}
                assert assessor.post(f"/api/a/{token}/judgments", json=body).status_code == 201
            # the judgment makes a new version: the stream ends instead of sending it
            deadline = time.monotonic() + 8
            ended = True
            for line in lines:
                if line.startswith("event: results"):
                    events.append(line)
                if time.monotonic() > deadline:
                    ended = False
                    break
    assert len(events) == 1
    assert ended


def _tied_campaign(session: Session) -> str:
    """A joint campaign, 30 % judged, whose system S02-rerun repeats S02's run; its slug."""
    judged = make_campaign(session, share=0.3, estimator="joint", twin="S02-rerun")
    return judged.campaign.slug


@pytest.fixture
def live_ties(empty_database_url: str) -> Iterator[Site]:
    """A server on a database holding an organizer "ada" and :func:`_tied_campaign`;
    ``seeded`` is the campaign's slug."""
    with organizer_site(empty_database_url, _tied_campaign) as site:
        yield site


@needs_chromium
def test_the_dashboard_shows_a_tie_as_a_tie(live_ties: Site) -> None:
    """Two systems with the same run share their rank (3=) in the chart and the table, their
    cell of the pair map is the tie's (=, no colour of confidence), and the figures and the
    help say how many pairs are ties and what the intervals are."""
    base, slug = live_ties.url, live_ties.seeded
    errors: list[str] = []
    with chromium_page(errors, height=1800) as page:
        sign_in_on_page(page, f"{base}/campaigns/{slug}")
        page.wait_for_selector("#heatmap rect.cell.tied")
        assert page.locator("#heatmap rect.cell.tied").count() == 2  # both halves of the pair
        assert page.locator("#heatmap .tie-mark").count() == 2
        labels = [
            str(t) for t in page.locator("#forest .forest-row text.label").all_text_contents()
        ]
        tied = [label for label in labels if "=" in label]
        assert len(tied) == 2
        assert {label.split("= ")[1] for label in tied} == {"S02", "S02-rerun"}
        assert len({label.split("=")[0] for label in tied}) == 1  # one shared rank
        ranks = page.locator("#systems-body tr td:first-child").all_text_contents()
        assert sum(rank.endswith("=") for rank in ranks) == 2
        assert "1 of them tied" in text_of(page, "#fig-settled-of")
        assert "(1 of them tied)" in text_of(page, "#heatmap-count")
        assert page.locator("#heatmap-tied-key").is_visible()
        help_text = text_of(page, "#forest-desc")
        assert "joint estimator" in help_text
        assert "not the spread over queries" in help_text
        assert "tied" in help_text
        # the tied pair is settled: not in the table of unsettled pairs
        unsettled = page.locator("#pairs-body th").all_text_contents()
        assert "S02 – S02-rerun" not in unsettled
    assert errors == []
