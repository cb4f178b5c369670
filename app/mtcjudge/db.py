"""Database engine, sessions and migrations (SQLite embedded by default, Postgres in production).

One request, one transaction: :func:`session_scope` (and the request dependency built on it)
commits on success and rolls back on error; services and repositories only ``flush()``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge._resources import resource_dir

__all__ = [
    "execute_plain",
    "make_database_engine",
    "make_sessionmaker",
    "read_only",
    "session_scope",
    "upgrade_database",
]


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # WAL lets the judging page read while another process writes; foreign keys are off
    # by default in SQLite; the busy timeout rides out concurrent writers instead of failing.
    # pysqlite's own transaction handling breaks SAVEPOINTs: SQLAlchemy's documented recipe
    # turns it off and emits BEGIN itself (see _sqlite_begin).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


#: the execution option of a connection whose transaction only reads (see read_only)
READ_ONLY = "mtcjudge_read_only"
#: one wait of SQLite's own busy handler; BEGIN is retried after it (see _sqlite_begin)
SQLITE_BUSY_TIMEOUT_MS = 5000
#: how long a transaction waits in all for SQLite's write lock before the error surfaces
SQLITE_LOCK_WAIT_SECONDS = 30.0


def _sqlite_begin(connection: Any) -> None:
    # IMMEDIATE takes the write lock up front: a deferred transaction that reads, then writes
    # after another process committed, fails at once with SQLITE_BUSY (no busy-timeout wait),
    # which several server processes on one file would hit. Writers queue instead.
    # BEGIN is the only statement that can then be told "database is locked" (the lock is
    # held from there on), and nothing has run yet, so it is retried until the deadline:
    # a busy database makes a request slower, never an error.
    if connection.get_execution_options().get(READ_ONLY):
        # a transaction that only reads takes no write lock: in WAL mode it reads a snapshot
        # and never waits for writers (nor they for it)
        connection.exec_driver_sql("BEGIN")
        return
    deadline = time.monotonic() + SQLITE_LOCK_WAIT_SECONDS
    while True:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise


def execute_plain(session: Session, statement: Any, params: dict[str, Any] | None = None) -> Any:
    """Execute on the session's connection, in its transaction, without the ORM: the
    judging path reads and writes plain rows, which costs a fraction of loading objects."""
    return session.connection().execute(statement, params or {})


def make_database_engine(url: str, **kwargs: Any) -> Engine:
    """Create the SQLAlchemy engine for ``url`` with the dialect's settings applied."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs.setdefault("connect_args", {"check_same_thread": False})
        database = parsed.database
        if database and database != ":memory:":
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    # an unreachable host answers 503 after this, not after the system's TCP timeout
    kwargs.setdefault("connect_args", {"connect_timeout": 5})
    # a server process runs up to 40 requests at once (the thread pool) and holds a
    # connection only for a request's short transaction
    kwargs.setdefault("pool_size", 10)
    kwargs.setdefault("max_overflow", 20)
    try:
        return create_engine(url, **kwargs)
    except ModuleNotFoundError as exc:
        if exc.name != "psycopg":
            raise
        raise ModuleNotFoundError(
            "PostgreSQL needs the driver psycopg, an optional dependency: "
            "pip install 'mtcjudge[postgres]'",
            name=exc.name,
        ) from exc


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def read_only(session: Session) -> Session:
    """Mark the session's transaction as one that only reads, before its first statement:
    on SQLite it then begins without the write lock (every other transaction takes it up
    front); elsewhere nothing changes. Writing in it on SQLite may fail with "database is
    locked" instead of waiting, so only reads belong there."""
    session.connection(execution_options={READ_ONLY: True})
    return session


def alembic_config(url: str) -> Any:
    """Alembic's configuration for ``url``, in code: an installed package has no alembic.ini
    (the repository's is for running ``alembic`` by hand in a checkout)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(resource_dir("migrations")))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["url_from_caller"] = True
    return config


def upgrade_database(url: str, revision: str = "head") -> None:
    """Bring the schema to ``revision`` with Alembic (the only way the schema is created)."""
    from alembic import command

    command.upgrade(alembic_config(url), revision)
