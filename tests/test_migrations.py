"""Migrations are the only way the schema is created: they go up and down cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from app.db import alembic_config, make_engine
from app.models import Base

EXPECTED_TABLES = {
    "campaign",
    "system",
    "document",
    "query",
    "result",
    "assessor",
    "lease",
    "judgment",
    "pair",
    "plan_entry",
    "planner_state",
}


@pytest.fixture
def scratch_url(empty_database_url: str) -> str:
    return empty_database_url


def tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade(scratch_url: str) -> None:
    config = alembic_config(scratch_url)
    command.upgrade(config, "head")
    assert tables(scratch_url) == EXPECTED_TABLES
    command.downgrade(config, "base")
    assert tables(scratch_url) == set()
    command.upgrade(config, "head")
    assert tables(scratch_url) == EXPECTED_TABLES


def test_every_revision_steps_down_and_up(scratch_url: str) -> None:
    config = alembic_config(scratch_url)
    revisions = list(ScriptDirectory.from_config(config).walk_revisions("base", "heads"))
    command.upgrade(config, "head")
    for _ in revisions:
        command.downgrade(config, "-1")
    assert tables(scratch_url) == set()
    for _ in revisions:
        command.upgrade(config, "+1")
    assert tables(scratch_url) == EXPECTED_TABLES


def test_models_match_the_migrations(scratch_url: str) -> None:
    """Autogenerate finds nothing to do: the models and the migrations agree."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    command.upgrade(alembic_config(scratch_url), "head")
    engine = make_engine(scratch_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []
