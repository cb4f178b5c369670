"""The fixtures every folder shares.

Databases: one ``alembic upgrade head`` per run, each test in a rolled-back transaction. SQLite
by default (a file in a temporary directory); set ``TEST_DATABASE_URL`` to a
``postgresql+psycopg://`` URL to run the same tests on Postgres, in a schema of their own that
is dropped afterwards.

Organizers: a cheap password hasher for every test, apps bound to the test's transaction, an
organizer account, and a client signed in through the real form (``tests.support.sign_in``);
for the browser tests, a live site with the organizer (``tests.browser.organizer_site``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.config import Settings
from mtcjudge.db import alembic_config, make_database_engine, make_sessionmaker
from mtcjudge.main import create_app
from mtcjudge.organizers import passwords
from mtcjudge.organizers import service as organizers
from tests.browser import Site, organizer_site
from tests.factories import Judged, make_campaign
from tests.support import CHEAP_HASHER, ORGANIZER_TOKEN, PASSWORD, empty_database, sign_in


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh, migrated database for this test run."""
    from alembic import command

    with empty_database(tmp_path_factory.mktemp("db"), "test") as url:
        command.upgrade(alembic_config(url), "head")
        yield url


@pytest.fixture
def empty_database_url(tmp_path: Path) -> Iterator[str]:
    """A new database with no schema yet, for tests that migrate it themselves."""
    with empty_database(tmp_path, "scratch") as url:
        yield url


@pytest.fixture
def read_session(empty_database_url: str) -> Iterator[sessionmaker[Session]]:
    """Sessions on :func:`empty_database_url`, to read what a command or a server wrote there."""
    engine = make_database_engine(empty_database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


@pytest.fixture(scope="session")
def db_engine(database_url: str) -> Iterator[Engine]:
    engine = make_database_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def db_connection(db_engine: Engine) -> Iterator[Connection]:
    """A connection inside a transaction that is rolled back after the test."""
    connection = db_engine.connect()
    transaction = connection.begin()
    try:
        yield connection
    finally:
        transaction.rollback()
        connection.close()


@pytest.fixture
def session_factory(db_connection: Connection) -> sessionmaker[Session]:
    """Sessions whose commits become savepoints of the test's transaction."""
    return sessionmaker(
        bind=db_connection,
        expire_on_commit=False,
        autoflush=False,
        join_transaction_mode="create_savepoint",
    )


@pytest.fixture
def db_session(session_factory: sessionmaker[Session]) -> Iterator[Session]:
    session = session_factory()
    try:
        yield session
    finally:
        session.close()


@pytest.fixture
def partial_campaign(db_session: Session) -> Judged:
    """The exports' synthetic campaign with imported judgments of 40 % of its pool."""
    return make_campaign(db_session, share=0.4)


# ------------------------------------------------------------------ organizers


@pytest.fixture(autouse=True)
def cheap_hasher(monkeypatch: pytest.MonkeyPatch) -> PasswordHasher:
    """Every test hashes passwords with argon2's cheapest parameters (they sign in often; the
    real ones take ~0.1 s); a test of the hashing sets its own."""
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


@pytest.fixture
def live_site(empty_database_url: str) -> Iterator[Site]:
    """The app served on a thread on a migrated database holding only the organizer "ada", for
    the browser tests (:func:`tests.browser.organizer_site`)."""
    with organizer_site(empty_database_url) as site:
        yield site
