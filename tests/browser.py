"""The browser tests' set-up: Chromium driven by Playwright, the skip when it is missing, a live
site with an organizer, signing in on the page, and the waits and files the tests share.

Each test launches its own browser (:func:`chromium_page`): a Chromium kept open across tests
keeps Playwright's event loop marked as running, and ``asyncio.run`` in later tests fails. The
site (:func:`organizer_site`) is the app served on a thread of the test's process
(:func:`tests.servers.serve_in_thread`) on the test's empty database, migrated, with the
organizer "ada" (password :data:`tests.support.PASSWORD`) and what the test seeds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.main import create_app
from mtcjudge.organizers import service as organizers
from tests.servers import serve_in_thread
from tests.support import PASSWORD

if TYPE_CHECKING:
    from playwright.sync_api import FilePayload, Page

#: Debian's Chromium, which the browser tests drive through Playwright (skipped without it)
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]
#: the mark of every browser test: ``pytestmark = needs_chromium``
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"the browser tests need Chromium at {CHROMIUM}"
)

#: axe-core, a development dependency (``npm ci`` puts it in node_modules; ``MTCJUDGE_AXE`` may
#: name another copy of ``axe.min.js``)
AXE = Path(
    os.environ.get(
        "MTCJUDGE_AXE",
        Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js",
    )
)


def watch_policy(console_text: str, errors: list[str]) -> None:
    """Chromium reports what the Content-Security-Policy blocked on the console."""
    if "Content Security Policy" in console_text:
        errors.append(console_text)


@contextmanager
def chromium_page(
    errors: list[str], *, height: int = 800, timeout_ms: float | None = None, **options: Any
) -> Iterator[Page]:
    """A page of a headless Chromium, 1280 pixels wide and ``height`` high; closed afterwards.

    The page's uncaught errors and what the Content-Security-Policy blocked are appended to
    ``errors`` (the test asserts it stays empty); ``timeout_ms`` is Playwright's default
    timeout, ``options`` go to ``Browser.new_page`` (``accept_downloads``, ``permissions``,
    ``bypass_csp``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": height}, **options)
            if timeout_ms is not None:
                page.set_default_timeout(timeout_ms)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("console", lambda message: watch_policy(message.text, errors))
            yield page
        finally:
            browser.close()


@dataclass(frozen=True)
class Site:
    """A live site: its ``url``, its database and what the test's seed returned."""

    url: str
    database_url: str
    seeded: Any = None


@contextmanager
def organizer_site(
    database_url: str, seed: Callable[[Session], Any] | None = None, **settings: Any
) -> Iterator[Site]:
    """Migrate the empty database, add the organizer "ada" and what ``seed(session)`` adds (in
    one committed transaction), and serve the app on a thread; yields the :class:`Site`.

    The app does not delay failed sign-ins; ``settings`` are further :class:`Settings` fields.
    Once the port is known the app's ``base_url`` is the server's, so links name it."""
    upgrade_database(database_url)
    engine = make_database_engine(database_url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
            seeded = None if seed is None else seed(session)
    finally:
        engine.dispose()
    config = Settings(database_url=database_url, login_failure_delay=0.0, **settings)
    app = create_app(config)
    with serve_in_thread(app) as url:
        app.state.settings = replace(config, base_url=url)
        yield Site(url, database_url, seeded)


def sign_in_on_page(page: Page, url: str, *, then: str | None = None) -> None:
    """Open ``url`` (the sign-in form, or a page that asks for it), sign in as "ada" and wait
    for the page signing in leads to: ``then``, by default ``url`` itself (the site's home
    after ``/login``)."""
    page.goto(url)
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.keyboard.press("Enter")
    if then is None:
        then = url.removesuffix("login") if url.endswith("/login") else url
    page.wait_for_url(then)


def text_of(page: Page, selector: str) -> str:
    """The text of the element, stripped."""
    return str(page.inner_text(selector)).strip()


def wait_for_text(page: Page, selector: str, expected: str, timeout: float = 15.0) -> None:
    """Until the element reads ``expected`` (the page's scripts change it)."""
    deadline = time.monotonic() + timeout
    while text_of(page, selector) != expected:
        if time.monotonic() > deadline:
            raise AssertionError(f"{selector} shows {text_of(page, selector)!r}, not {expected!r}")
        page.wait_for_timeout(100)


def axe_violations(page: Page) -> list[str]:
    """What axe-core finds on the page as it is now, one line each (injected once a page)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate(
        "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)"
    )
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}"
        for v in found
    ]


def upload(name: str, data: bytes, mime: str = "text/plain") -> FilePayload:
    """A file for ``set_input_files``."""
    return {"name": name, "mimeType": mime, "buffer": data}


def screenshots(tmp_path: Path) -> Path:
    """Where a test's screenshots go: the folder ``MTCJUDGE_SCREENSHOTS`` names, else its tmp."""
    folder = os.environ.get("MTCJUDGE_SCREENSHOTS")
    return Path(folder) if folder else tmp_path
