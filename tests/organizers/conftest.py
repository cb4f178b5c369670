"""Organizer fixtures: a cheap password hasher, apps bound to the test's transaction, an
organizer account, and a client signed in through the real form (``tests.support.sign_in``)."""

from __future__ import annotations

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
from tests.support import CHEAP_HASHER, ORGANIZER_TOKEN, PASSWORD, sign_in


@pytest.fixture(autouse=True)
def cheap_hasher(monkeypatch: pytest.MonkeyPatch) -> PasswordHasher:
    monkeypatch.setattr(passwords, "_HASHER", CHEAP_HASHER)
    return CHEAP_HASHER


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
