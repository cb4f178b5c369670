"""The database a command works on: which one, whether it exists, one transaction.

Only ``campaign create`` (and ``serve``, ``demo``) may bring a database into being: every other
command needs one that mtcjudge already set up, so a mistyped path or URL is an error (exit
status 2) instead of a new, empty database that answers "no campaigns yet".
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mtcjudge.cli.common import UsageError
from mtcjudge.config import DEFAULT_DATABASE_URL, Settings

if TYPE_CHECKING:
    from sqlalchemy.engine import URL
    from sqlalchemy.orm import Session

__all__ = [
    "add_database_option",
    "check_database_url",
    "database_errors",
    "organizer_session",
    "run_in_session",
    "settings_for",
    "url_source",
]

_EXPECTED = "expected sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/NAME"


def add_database_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help=f"SQLAlchemy URL (default: $DATABASE_URL, else {DEFAULT_DATABASE_URL})",
    )


def url_source(option_value: str | None) -> str:
    """Where the URL came from, to name it in messages."""
    if option_value:
        return "--database-url"
    return "DATABASE_URL" if os.environ.get("DATABASE_URL") else "the default database"


def settings_for(option_value: str | None, **overrides: object) -> Settings:
    """The settings with the database of ``--database-url`` (else the environment), checked."""
    if option_value:
        overrides["database_url"] = option_value
    settings = Settings.from_env(**overrides)
    check_database_url(settings.database_url, url_source(option_value))
    return settings


def check_database_url(url: str, source: str) -> URL:
    """Parse ``url`` and load its driver, or raise UsageError saying what is wrong."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
        dialect = parsed.get_dialect()
    except ArgumentError:
        # never echo the URL: it may hold a password
        kind = url.split("://", 1)[0] if "://" in url else None
        found = f"an unknown kind of database {kind!r}" if kind else "no URL"
        raise UsageError(f"{source}: {_EXPECTED}, found {found}") from None
    try:
        dialect.import_dbapi()
    except ImportError as exc:
        if exc.name == "psycopg":
            raise UsageError(
                f"{source}: PostgreSQL needs the driver psycopg, an optional dependency: "
                "pip install 'mtcjudge[postgres]'"
            ) from None
        raise UsageError(
            f"{source}: the driver of {parsed.drivername} URLs is not installed "
            f"(no module {exc.name!r}); {_EXPECTED}"
        ) from None
    return parsed


def _shown(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


@contextmanager
def database_errors(url: str) -> Iterator[None]:
    """A database that cannot be reached (refused, locked, unreadable) is one line, exit 2."""
    from sqlalchemy.exc import OperationalError

    try:
        yield
    except OperationalError as exc:
        reason = str(exc.orig or exc)
        reason = "; ".join(line.strip() for line in reason.splitlines() if line.strip())
        raise UsageError(f"database {_shown(url)}: {reason}") from None


def _require_existing(url: str, source: str) -> None:
    """An SQLite file that is not there is a mistyped path: say so, create nothing."""
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return
    path = Path(database).expanduser()
    if not path.is_file():
        raise UsageError(
            f"{source}: no database at {path}: check the path, or create a campaign first "
            "with 'mtcjudge campaign create'"
        )


def _require_schema(url: str, source: str) -> None:
    """A database mtcjudge never set up is not given a schema by a command that only reads."""
    from sqlalchemy import inspect

    from mtcjudge.db import make_database_engine

    engine = make_database_engine(url)
    try:
        with engine.connect() as connection:
            initialised = inspect(connection).has_table("alembic_version")
    finally:
        engine.dispose()
    if not initialised:
        raise UsageError(
            f"{source}: {_shown(url)} holds no mtcjudge database: check the URL, or create a "
            "campaign first with 'mtcjudge campaign create'"
        )


@contextmanager
def organizer_session(
    option_value: str | None, *, create: bool = False, base_url: str | None = None
) -> Iterator[tuple[Session, Settings]]:
    """One migrated database, one transaction: committed only if the command succeeds.

    Without ``create`` the database must exist and be mtcjudge's (UsageError otherwise).
    ``base_url`` overrides ``MTCJUDGE_BASE_URL`` for the links the command prints.
    """
    from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database

    settings = settings_for(option_value, **({"base_url": base_url} if base_url else {}))
    url = settings.database_url
    source = url_source(option_value)
    with database_errors(url):
        if not create:
            _require_existing(url, source)
            _require_schema(url, source)
        upgrade_database(url)
        engine = make_database_engine(url)
        try:
            with session_scope(make_sessionmaker(engine)) as session:
                yield session, settings
        finally:
            engine.dispose()


def run_in_session(
    args: argparse.Namespace,
    err: TextIO,
    work: Callable[[Session, Settings], None],
    *,
    create: bool = False,
    base_url: str | None = None,
) -> int:
    """Run ``work`` in the command's database (``--database-url``); a domain error is exit 2."""
    from mtcjudge.errors import DomainError

    session_of = organizer_session(args.database_url, create=create, base_url=base_url)
    try:
        with session_of as (session, settings):
            work(session, settings)
    except DomainError as exc:
        err.write(f"mtcjudge: error: {exc.message}\n")
        return 2
    return 0
