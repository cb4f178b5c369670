"""Listening on the judging page, in a real browser (Chromium through Playwright): the
listening rule gates Submit, the waveform seeks and loops, the seek keys move in seconds,
Enter submits from a player's buttons, the two clips are levelled to the same loudness, the
volume check and the practice pair come first (the practice is never sent), and Submit is on
screen on a phone.

Clips are real WAV files (``tests.support.write_tone``) decoded by the page with Web Audio;
Chromium runs with ``--autoplay-policy=no-user-gesture-required``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from mtcjudge.clips.analysis import analyse
from mtcjudge.clips.cut import Cut
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope
from mtcjudge.models import Document, Judgment
from tests.browser import chromium_page, needs_chromium
from tests.web.judging_site import (
    LOUD,
    QUERY_HZ,
    QUIET,
    TOKEN,
    LiveServer,
    k_weighted_loudness,
    player,
    serve,
    start_judging,
    wait_ready,
    wait_until,
)

pytestmark = needs_chromium


def judgments(url: str) -> list[Judgment]:
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            rows = list(session.scalars(select(Judgment).order_by(Judgment.id)))
            session.expunge_all()
            return rows
    finally:
        engine.dispose()


def score(page: Any, broad: str = "2", fine_steps: int = 1) -> None:
    page.keyboard.press(broad)
    for _ in range(fine_steps):
        page.keyboard.press("ArrowRight")


def position(page: Any, role: str = "query") -> float:
    return float(player(page, role, "position"))


@pytest.fixture
def short_clips_with_a_long_rule(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """A 5-second rule over 1.5-second clips: each clip must be played to its end."""
    with serve(empty_database_url, tmp_path, listen_seconds=5.0, clip_seconds=1.5) as server:
        yield server


def test_submit_waits_for_the_listening_rule_and_enter_submits_from_a_player_button(
    short_clips_with_a_long_rule: LiveServer,
) -> None:
    from playwright.sync_api import expect

    server = short_clips_with_a_long_rule
    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        # the welcome page states the rule
        page.goto(f"{server.base_url}/a/{TOKEN}")
        expect(page.locator(".welcome")).to_contain_text(
            re.compile(r"Listen to each clip for at least\s+5\s+seconds\s+\(or to its end")
        )
        start_judging(page, server.base_url)
        wait_ready(page)
        rule = page.locator("#listen-rule")
        expect(rule).to_be_visible()
        expect(rule).to_have_text(
            "Listen to each clip for at least 5 seconds (or to its end) before you submit: "
            "skipping ahead does not count."
        )
        hint = page.locator("#submit-hint")
        submit = page.locator("#submit-button")

        # scored but not listened: Submit stays disabled and says why (min(5 s, 1.5 s) each)
        score(page)
        expect(submit).to_be_disabled()
        expect(hint).to_have_text("To submit: listen to both clips for 1.5 s each.")
        query_line = page.locator("#main-query-player [data-role=listened-line]")
        expect(query_line).to_have_text("Listened 0:00 of 0:02 needed")
        # Enter is refused, and the reason read out
        page.keyboard.press("Enter")
        expect(page.locator("#announcer")).to_have_text(
            "To submit: listen to both clips for 1.5 s each."
        )
        expect(page.locator("#assessor-judged")).to_have_text("0")

        # skipping ahead is not listening: seek the query to its end, nothing counts
        page.locator("#main-query-player [data-role=wave]").focus()
        page.keyboard.press("End")
        assert player(page, "query", "listenedMs") == "0"

        # the query played to its end: heard (text, not colour only), the candidate still needed
        page.keyboard.press("q")  # from the end, play starts again at 0
        wait_until(
            page,
            "document.querySelector('#main-query-player').dataset.playing === 'false'"
            " && +document.querySelector('#main-query-player').dataset.listenedMs > 0",
        )
        expect(query_line).to_contain_text("Heard long enough")
        expect(page.locator("#main-query-player [data-role=listen-bar]")).to_have_attribute(
            "aria-valuetext", "heard long enough"
        )
        expect(hint).to_have_text("To submit: listen to the candidate clip for 1.5 s.")
        expect(submit).to_be_disabled()

        # play the candidate with its focused button (Space), then Enter on that button submits
        toggle = page.locator("#main-candidate-player [data-action=toggle]")
        toggle.focus()
        page.keyboard.press(" ")
        expect(submit).to_be_enabled(timeout=5_000)
        expect(hint).to_have_text("Ready: press Enter to submit.")
        expect(toggle).to_be_focused()
        page.keyboard.press("Enter")
        expect(page.locator("#assessor-judged")).to_have_text("1")
        assert errors == []

    [judgment] = judgments(server.database_url)
    assert judgment.query_listen_ms is not None
    assert judgment.query_listen_ms >= 1500
    assert judgment.candidate_listen_ms is not None
    assert judgment.candidate_listen_ms >= 1500


@pytest.fixture
def plain(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """No listening rule, 4-second clips, candidates 14 dB quieter than the queries."""
    with serve(empty_database_url, tmp_path, quiet_candidates=True) as server:
        yield server


def test_waveform_click_to_seek_seek_keys_and_loops(plain: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        start_judging(page, plain.base_url)
        wait_ready(page)
        wave = page.locator("#main-query-player [data-role=wave]")
        expect(wave).to_have_attribute("role", "slider")
        expect(wave).to_have_attribute("aria-valuemax", "4.0")
        box = wave.bounding_box()
        assert box is not None

        # a click seeks (and does not start playing)
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert abs(position(page) - 2.0) < 0.1
        assert player(page, "query", "playing") == "false"
        expect(wave).to_have_attribute("aria-valuetext", "0:02 of 0:04")

        # the focused waveform's arrows move 1 s (5 with Shift, to the ends), not FINE
        wave.focus()
        page.keyboard.press("Home")
        assert position(page) == 0.0
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        assert abs(position(page) - 2.0) < 1e-6
        page.keyboard.press("ArrowLeft")
        assert abs(position(page) - 1.0) < 1e-6
        page.keyboard.press("Shift+ArrowRight")
        assert abs(position(page) - 4.0) < 1e-6
        page.keyboard.press("PageDown")
        assert position(page) == 0.0
        expect(page.locator("#main-fine-value")).to_have_text("–")

        # J and L move the clip last used by 1 s from anywhere; the page's arrows stay FINE's
        page.locator("#pair-heading").focus()
        page.keyboard.press("l")
        page.keyboard.press("l")
        page.keyboard.press("l")
        page.keyboard.press("j")
        assert abs(position(page) - 2.0) < 1e-6
        page.keyboard.press("ArrowRight")
        expect(page.locator("#main-fine-value")).to_have_text("50")
        # ... and the candidate once it was used
        page.keyboard.press("c")
        page.keyboard.press("c")
        candidate_at = position(page, "candidate")
        page.keyboard.press("Shift+l")
        assert abs(position(page, "candidate") - min(4.0, candidate_at + 5)) < 0.05
        assert abs(position(page) - 2.0) < 1e-6

        # A and B set a loop on the clip last used; X clears it
        page.keyboard.press("q")
        page.keyboard.press("q")  # play and pause: the query is the clip in use again
        wave.focus()
        page.keyboard.press("Home")
        page.keyboard.press("ArrowRight")
        page.locator("#pair-heading").focus()
        page.keyboard.press("a")
        assert player(page, "query", "loopStart") == "1.000"
        assert player(page, "query", "loopEnd") == "4.000"
        page.keyboard.press("l")
        page.keyboard.press("b")
        assert (player(page, "query", "loopStart"), player(page, "query", "loopEnd")) == (
            "1.000",
            "2.000",
        )
        loop_bar = page.locator("#main-query-player [data-role=loopbar]")
        expect(loop_bar).to_contain_text("Looping 0:01.0–0:02.0")
        page.keyboard.press("x")
        expect(loop_bar).to_be_hidden()
        assert player(page, "query", "loopStart") == ""

        # a drag across the waveform loops that part, and playing stays inside it
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.25, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
        page.mouse.up()
        start, end = (
            float(player(page, "query", "loopStart")),
            float(player(page, "query", "loopEnd")),
        )
        assert abs(start - 1.0) < 0.1, start
        assert abs(end - 2.0) < 0.1, end
        expect(page.locator("#main-query-player [data-role=loop-region]")).to_be_visible()
        page.keyboard.press("q")
        # twice the loop's length later it still plays, inside the loop, and it all counts
        wait_until(page, "+document.querySelector('#main-query-player').dataset.listenedMs > 2300")
        assert player(page, "query", "playing") == "true"
        assert start - 0.05 <= position(page) <= end + 0.05
        # Shift+Q starts again from the loop's start
        page.keyboard.press("Shift+q")
        assert start - 0.05 <= position(page) < start + 0.3
        page.locator("#main-query-player [data-action=clear-loop]").click()
        expect(loop_bar).to_be_hidden()
        page.keyboard.press("q")
        assert player(page, "query", "playing") == "false"
        assert errors == []


def test_a_pair_whose_clip_does_not_load_cannot_be_submitted(plain: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        start_judging(page, plain.base_url, check=False)
        # the pair the page is about to get (the API hands the same lease again); its
        # candidate clip answers 404
        pair = page.request.get(f"{plain.base_url}/api/a/{TOKEN}/next").json()["pair"]
        candidate = plain.base_url + pair["candidate"]["audio_url"]
        page.route(candidate, lambda route: route.fulfill(status=404, body="gone"))
        page.get_by_role("button", name="Yes, start judging").click()
        expect(page.locator("#main-candidate-player")).to_have_attribute("data-state", "error")
        expect(page.locator("#main-candidate-player [data-role=status]")).to_have_text(
            "The clip could not be downloaded (the server answered 404). Please tell the organizer."
        )
        # no listening rule here, the scores are set: still no Submit, and the hint says why
        score(page)
        expect(page.locator("#submit-button")).to_be_disabled()
        expect(page.locator("#submit-hint")).to_contain_text(
            "A clip of this pair did not load, so it cannot be judged."
        )
        page.keyboard.press("Enter")
        expect(page.locator("#assessor-judged")).to_have_text("0")
        assert errors == []
    assert judgments(plain.database_url) == []


def test_the_clips_are_levelled_to_the_same_loudness(plain: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        start_judging(page, plain.base_url)
        wait_ready(page)
        rate = page.evaluate("new AudioContext().sampleRate")
        loudness = {r: float(player(page, r, "loudness")) for r in ("query", "candidate")}
        gain = {r: float(player(page, r, "gainDb")) for r in ("query", "candidate")}
        # the page's meter agrees with the standard's (computed here at 48 kHz)
        if rate == 48000:
            assert abs(loudness["query"] - k_weighted_loudness(QUERY_HZ, LOUD, 4.0)) < 0.05
        # the candidate is 14 dB quieter (amplitudes 0.25 and 0.05); levelled, both play at
        # -20 LUFS: the query lowered, the candidate raised within the 12 dB cap
        assert (
            abs((loudness["query"] - loudness["candidate"]) - 20 * math.log10(LOUD / QUIET)) < 0.5
        )
        assert (
            abs(loudness["query"] + gain["query"] - (loudness["candidate"] + gain["candidate"]))
            < 0.01
        )
        assert abs(loudness["query"] + gain["query"] - (-20.0)) < 0.01
        assert gain["query"] < 0 < gain["candidate"] <= 12
        expect(page.locator("#levels-note")).to_have_text(
            "Both clips play at the same loudness, the loudness of the test sound."
        )
        expect(page.locator("#main-candidate-player [data-role=level]")).to_have_text(
            re.compile(r"^Level \+\d+\.\d dB$")
        )
        assert errors == []


@pytest.fixture
def measured(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """As ``plain``, with every clip measured at import, and the measures marked: the query
    clips' loudness stored as -33.33 LUFS, their peaks as a ramp."""
    with serve(empty_database_url, tmp_path, quiet_candidates=True) as server:
        engine = make_database_engine(server.database_url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                for document in session.scalars(select(Document)):
                    assert document.audio_path is not None
                    analysis = analyse(document.audio_path, Cut("whole"))
                    document.loudness_lufs = analysis.sound.loudness_lufs
                    document.peaks = analysis.sound.peaks
                    if document.external_id.startswith("query"):
                        document.loudness_lufs = -33.33
                        document.peaks = bytes(range(0, 240, 2))
        finally:
            engine.dispose()
        yield server


def test_the_page_draws_and_levels_from_the_measures_made_at_import(measured: LiveServer) -> None:
    """The clips' loudness and peaks come with the pair (docs/audio.md): the page levels and
    draws from them instead of measuring what it decoded."""
    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        start_judging(page, measured.base_url)
        wait_ready(page)
        assert player(page, "query", "loudness") == "-33.33"
        candidate = float(player(page, "candidate", "loudness"))
        # the candidate's stored measure is the standard's, as the page would have measured it
        rate = page.evaluate("new AudioContext().sampleRate")
        if rate == 48000:
            assert abs(candidate - k_weighted_loudness(QUERY_HZ * 2 ** (1 / 12), QUIET, 4.0)) < 0.5
        # levelled from the stored figures: both play at the same loudness
        gain = {r: float(player(page, r, "gainDb")) for r in ("query", "candidate")}
        assert abs(-33.33 + gain["query"] - (candidate + gain["candidate"])) < 0.01
        assert errors == []


@pytest.fixture
def very_quiet_candidates(empty_database_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """Candidates about 34 dB below the queries (sine amplitude 0.005): more than the 12 dB a
    clip may be raised."""
    with serve(empty_database_url, tmp_path, candidate_amplitude=0.005) as server:
        yield server


def test_a_very_quiet_clip_is_raised_12_db_and_the_other_lowered_to_match(
    very_quiet_candidates: LiveServer,
) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        start_judging(page, very_quiet_candidates.base_url)
        wait_ready(page)
        loudness = {r: float(player(page, r, "loudness")) for r in ("query", "candidate")}
        gain = {r: float(player(page, r, "gainDb")) for r in ("query", "candidate")}
        assert loudness["candidate"] < -20 - 12
        # the candidate gets the cap, the query comes down to the same loudness
        assert abs(gain["candidate"] - 12.0) < 1e-6
        target = loudness["candidate"] + 12.0
        assert abs(loudness["query"] + gain["query"] - target) < 0.01
        expect(page.locator("#levels-note")).to_have_text(
            f"Both clips play at the same loudness, {round(-20 - target)} dB quieter than the "
            "test sound so that the quieter recording is not distorted."
        )
        assert errors == []


def test_volume_check_then_a_practice_pair_that_is_never_sent(
    short_clips_with_a_long_rule: LiveServer,
) -> None:
    from playwright.sync_api import expect

    server = short_clips_with_a_long_rule
    errors: list[str] = []
    posted: list[str] = []
    with chromium_page(errors, timeout_ms=15_000) as page:
        start_judging(page, server.base_url, check=False)
        # from here on, anything sent to the assessor API other than a read is a finding
        page.on("request", lambda r: posted.append(r.url) if r.method != "GET" else None)
        judge = page.locator("#judge")
        expect(page.get_by_role("heading", name="First, check your volume")).to_be_focused()
        expect(page.locator("#check-question")).to_have_text("Can you hear it comfortably?")
        play = page.get_by_role("button", name="Play the test sound")
        play.click()
        expect(page.locator("#check-play")).to_have_attribute("aria-pressed", "true")
        expect(page.locator("#check-play")).to_have_text(re.compile("Stop the test sound"))
        # it ends by itself after 2.4 s
        expect(page.locator("#check-play")).to_have_attribute(
            "aria-pressed", "false", timeout=5_000
        )
        assert page.evaluate("document.querySelector('#judge').dataset.leaseId") == ""

        page.get_by_role("button", name="Try a practice pair first").click()
        expect(judge).to_have_attribute("data-practice", "true")
        expect(page.locator("#practice-banner")).to_be_visible()
        expect(page.locator("#pair-label")).to_have_text("practice, not recorded")
        wait_ready(page)
        # the practice follows the campaign's rule too: 5 s of its 6-second clips
        expect(page.locator("#listen-rule")).to_contain_text("at least 5 seconds")
        score(page, "3")
        expect(page.locator("#submit-button")).to_be_disabled()
        # listen faster than real time is impossible; but the rule is the campaign's, so play
        # both clips for 5 s each
        page.keyboard.press("q")
        wait_until(
            page, "+document.querySelector('#main-query-player').dataset.listenedMs >= 5000", 10
        )
        page.keyboard.press("c")
        wait_until(
            page, "+document.querySelector('#main-candidate-player').dataset.listenedMs >= 5000", 10
        )
        expect(page.locator("#submit-hint")).to_have_text(
            "Ready: press Enter to finish the practice."
        )
        page.keyboard.press("Enter")

        # the first real pair, with a word that the practice was not recorded
        expect(judge).to_have_attribute("data-practice", "false")
        expect(judge).not_to_have_attribute("data-lease-id", "")
        expect(page.locator("#pair-notice")).to_contain_text(
            "Practice finished: nothing was recorded."
        )
        expect(page.locator("#practice-banner")).to_be_hidden()
        expect(page.locator("#assessor-judged")).to_have_text("0")
        assert posted == [], posted
        # the check is not asked again in this browser session
        page.reload()
        expect(judge).to_have_attribute("data-state", "pair")
        assert errors == []

    assert judgments(server.database_url) == []


def test_submit_is_on_screen_on_a_phone_for_every_pair(plain: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    with chromium_page(errors, timeout_ms=10_000) as page:
        page.set_viewport_size({"width": 390, "height": 844})
        start_judging(page, plain.base_url, check=False)
        page.get_by_role("button", name="Try a practice pair first").click()
        submit = page.locator("#submit-button")
        for pair in range(4):
            wait_ready(page)
            page.evaluate("window.scrollTo(0, 0)")
            found = submit.bounding_box()
            assert found is not None
            assert found["y"] >= 0, (pair, found)
            assert found["y"] + found["height"] <= 844, (pair, found)
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            # the players and the first BROAD choice are on screen too
            for role in ("query", "candidate"):
                toggle = page.locator(f"#main-{role}-player [data-action=toggle]").bounding_box()
                assert toggle is not None
                assert toggle["y"] + toggle["height"] <= 844
            page.locator("#score-form .broad__option--2").click()
            fine = page.locator("#main-fine")
            box = fine.bounding_box()
            assert box is not None
            fine.click(position={"x": box["width"] * 0.7, "y": box["height"] / 2})
            expect(submit).to_be_enabled()
            submit.click()
            if pair > 0:
                expect(page.locator("#assessor-judged")).to_have_text(str(pair))
            expect(page.locator("#main-fine-value")).to_have_text("–")
        assert errors == []
