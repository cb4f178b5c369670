"""The judging page with a real collection's files: MP3, Ogg and FLAC clips of several seconds,
analysed at import and served as MP3. Judged with the keyboard alone on a phone-sized page,
each query fetched once for all its pairs, and axe-core clean (docs/audio.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.browser import AXE, axe_violations, chromium_page, needs_chromium
from tests.web.judging_site import (
    TOKEN,
    LiveServer,
    player,
    serve,
    start_judging,
    wait_ready,
    wait_until,
)

pytestmark = needs_chromium

LISTEN_SECONDS = 1.0


@pytest.fixture(params=["mp3", "ogg", "flac"])
def encoded(request, empty_database_url: str, tmp_path: Path, monkeypatch) -> Iterator[LiveServer]:
    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "cache"))
    with serve(
        empty_database_url,
        tmp_path,
        encoded=request.param,
        clip_seconds=3.0,
        listen_seconds=LISTEN_SECONDS,
        quality_rate=0.0,
    ) as server:
        yield server


def judge_by_keyboard(page) -> None:
    """Play each clip past the rule with Q and C, pausing each, score with 2 and the arrows,
    submit. Every step waits for the page to show it took the key (a busy machine delays the
    audio and the page), and a Submit that stays disabled says why (the page's hint)."""
    from playwright.sync_api import expect

    heard = (LISTEN_SECONDS + 0.2) * 1000
    for key, role in (("q", "query"), ("c", "candidate")):
        dataset = f"document.querySelector('#main-{role}-player').dataset"
        page.keyboard.press(key)
        wait_until(page, f"+{dataset}.listenedMs > {heard}", timeout=30.0)
        page.keyboard.press(key)  # pause
        wait_until(page, f"{dataset}.playing === 'false'")
        # what was heard stays heard once paused
        assert int(page.evaluate(f"{dataset}.listenedMs")) > heard
    page.keyboard.press("2")
    expect(page.locator('input[name="main-broad"][value="1"]')).to_be_checked()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#main-fine-value")).to_have_text("50")
    submit = page.locator("#submit-button")
    try:
        expect(submit).to_be_enabled(timeout=10_000)
    except AssertionError as error:
        hint = page.locator("#submit-hint").inner_text()
        raise AssertionError(f"Submit stayed disabled; the page says: {hint!r}") from error
    page.keyboard.press("Enter")


def test_encoded_clips_are_judged_by_keyboard_at_390_px(encoded: LiveServer) -> None:
    from playwright.sync_api import expect

    errors: list[str] = []
    fetched: list[str] = []
    with chromium_page(errors, timeout_ms=20_000, bypass_csp=True) as page:
        page.set_viewport_size({"width": 390, "height": 844})
        page.on("request", lambda request: fetched.append(urlsplit(request.url).path))
        start_judging(page, encoded.base_url)
        judge = page.locator("#judge")
        previous = ""
        for n in range(3):
            # the next pair is on screen (its players were still the last pair's until then)
            expect(judge).not_to_have_attribute("data-lease-id", previous, timeout=15_000)
            expect(judge).not_to_have_attribute("data-lease-id", "")
            previous = judge.get_attribute("data-lease-id") or ""
            wait_ready(page)
            # the stored measures: a level and the clip's duration, a waveform drawn
            assert float(player(page, "query", "loudness")) < 0
            duration = page.locator("#main-query-player [data-role=wave]").get_attribute(
                "aria-valuemax"
            )
            assert float(duration or "nan") == pytest.approx(3.0, abs=0.05)
            if n == 0 and AXE.exists():
                assert axe_violations(page) == []
            judge_by_keyboard(page)
            expect(page.locator("#assessor-judged")).to_have_text(str(n + 1), timeout=15_000)
        assert errors == []
    clips = [path for path in fetched if path.startswith(f"/a/{TOKEN}/") and "/api/" not in path]
    queries = [path for path in clips if "/query/" in path]
    candidates = [path for path in clips if path.endswith("/candidate")]
    # each candidate once, and each query once however many of its pairs were judged
    assert len(candidates) == len(set(candidates)) >= 3
    assert len(queries) == len(set(queries)) < len(candidates)
