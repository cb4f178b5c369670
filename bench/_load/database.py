"""A fresh scratch database for one run, and engines without the app's hooks."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from bench._load.config import LoadConfig


def plain_engine(url: str, **kwargs: Any) -> Engine:
    """An engine without the app's hooks: on SQLite, reads must not take the write lock."""
    if url.startswith("sqlite"):
        kwargs.setdefault("connect_args", {"timeout": 30})
    return create_engine(url, **kwargs)


@contextlib.contextmanager
def fresh_database(config: LoadConfig, workdir: Path) -> Iterator[tuple[str, str | None]]:
    """(URL, Postgres database name or None) of a new empty database, dropped afterwards."""
    if config.db == "sqlite":
        yield f"sqlite:///{workdir / 'load.sqlite3'}", None
        return
    name = f"mtcjudge_load_{secrets.token_hex(5)}"
    admin = plain_engine(config.postgres_url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        try:
            url = make_url(config.postgres_url).set(database=name)
            yield url.render_as_string(hide_password=False), name
        finally:
            with admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        admin.dispose()
