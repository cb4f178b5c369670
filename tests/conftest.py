"""Database fixtures: one ``alembic upgrade head`` per run, each test in a rolled-back transaction.

SQLite by default (a file in a temporary directory); set ``TEST_DATABASE_URL`` to a
``postgresql+psycopg://`` URL to run the same tests on Postgres, in a schema of their own that
is dropped afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.db import alembic_config, make_engine
from tests.factories import Judged, make_campaign
from tests.support import empty_database


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


@pytest.fixture(scope="session")
def db_engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
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
