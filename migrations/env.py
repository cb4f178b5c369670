"""Alembic environment: the URL comes from the caller's config, else DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

from mtcjudge.db import make_database_engine
from mtcjudge.models import Base

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    explicit = config.get_main_option("sqlalchemy.url")
    if config.attributes.get("url_from_caller") or "DATABASE_URL" not in os.environ:
        return str(explicit)
    return os.environ["DATABASE_URL"]


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite ALTERs
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(), target_metadata=target_metadata, render_as_batch=True, literal_binds=True
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_database_engine(_url())
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            _run_sqlite(conn)
        else:
            _run(conn)
    engine.dispose()


def _run_sqlite(conn: Connection) -> None:
    """SQLite ALTERs copy a table into a new one and drop the old: with foreign keys on,
    dropping a parent table deletes (ON DELETE CASCADE) every child row. Turn them off
    for the migration (outside any transaction, where the pragma takes effect), then check
    that every reference still holds."""
    raw = conn.connection.driver_connection
    assert raw is not None
    raw.execute("PRAGMA foreign_keys=OFF")
    try:
        _run(conn)
        broken = raw.execute("PRAGMA foreign_key_check").fetchall()
        if broken:
            raise RuntimeError(f"the migration left broken references: {broken[:5]}")
    finally:
        raw.execute("PRAGMA foreign_keys=ON")


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
