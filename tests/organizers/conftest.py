"""Organizer fixtures: a cheap password hasher, apps bound to the test's transaction, and
signing in through the real form."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.main import create_app
from mtcjudge.organizers import passwords
from mtcjudge.organizers import service as organizers
from tests.support import ORGANIZER_TOKEN

PASSWORD = "correct horse battery"
#: argon2's smallest sensible parameters: these tests sign in often (the real ones take ~0.1 s)
CHEAP_HASHER = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
_CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(autouse=True)
def cheap_hasher(monkeypatch: pytest.MonkeyPatch) -> PasswordHasher:
    monkeypatch.setattr(passwords, "_HASHER", CHEAP_HASHER)
    return CHEAP_HASHER


def csrf_field(html: str) -> str:
    """The first CSRF token of a page's forms."""
    found = _CSRF_FIELD.search(html)
    assert found, "no csrf_token field on the page"
    return found.group(1)


def sign_in(client: TestClient, username: str, password: str = PASSWORD, **extra: str) -> Any:
    """Open the sign-in page and send its form, as a browser does; returns the answer to the
    form (not followed)."""
    form = client.get("/login")
    assert form.status_code == 200, form.text
    data = {"username": username, "password": password, "csrf_token": csrf_field(form.text)}
    data.update(extra)
    return client.post("/login", data=data, follow_redirects=False)


def session_csrf(client: TestClient) -> str:
    """The CSRF token of the client's signed-in session, from the landing page's sign-out
    form."""
    page = client.get("/")
    assert "Signed in as" in page.text, page.text
    return csrf_field(page.text)


@pytest.fixture
def app_settings() -> Settings:
    return Settings(
        database_url="sqlite://",
        base_url="http://testserver",
        organizer_token=ORGANIZER_TOKEN,
        login_failure_delay=0.0,
    )


@pytest.fixture
def make_client(
    session_factory: sessionmaker[Session], app_settings: Settings
) -> Callable[..., TestClient]:
    """A client of a new app (as another server process would be) on the test's database."""

    def make(settings: Settings | None = None, **kwargs: Any) -> TestClient:
        app = create_app(settings or app_settings, session_factory=session_factory)
        return TestClient(app, **kwargs)

    return make


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> Iterator[TestClient]:
    with make_client() as test_client:
        yield test_client


@pytest.fixture
def organizer(session_factory: sessionmaker[Session]) -> str:
    """An organizer account "ada" (password :data:`PASSWORD`), committed for the apps."""
    with session_factory() as session:
        organizers.create_organizer(session, "ada", PASSWORD, audit.Actor("test"))
        session.commit()
    return "ada"


@pytest.fixture
def signed_in(client: TestClient, organizer: str) -> TestClient:
    """The client, signed in as the organizer."""
    assert sign_in(client, organizer).status_code == 303
    return client
