"""Migrations are the only way the schema is created: they go up and down cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from mtcjudge.db import alembic_config, make_database_engine
from mtcjudge.models import Base

EXPECTED_TABLES = {
    "campaign",
    "system",
    "document",
    "query",
    "result",
    "assessor",
    "assessor_pace",
    "lease",
    "judgment",
    "pair",
    "plan_entry",
    "planner_state",
    "organizer",
    "organizer_session",
    "audit_event",
    "campaign_results",
    "trajectory_point",
    "assessor_reliability",
    "clip_delivery",
    "audio_blob",
    "audio_upload",
    "audio_upload_file",
}


@pytest.fixture
def scratch_url(empty_database_url: str) -> str:
    return empty_database_url


def tables(url: str) -> set[str]:
    engine = make_database_engine(url)
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
    engine = make_database_engine(scratch_url)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    finally:
        engine.dispose()
    assert diff == []


def test_upgrading_keeps_every_row(scratch_url: str) -> None:
    """0001 -> head on a database with a campaign in progress: nothing is lost (SQLite
    rebuilds tables to alter them, which must not cascade into deleting their children),
    invitation links keep working, and the pool can be built from the rows."""
    from sqlalchemy import func, select, text

    from mtcjudge.db import make_sessionmaker
    from mtcjudge.judging.repository.context import assessor_by_token
    from mtcjudge.models import Campaign, Judgment, Pair, Result
    from mtcjudge.pool.service import ensure_pool

    config = alembic_config(scratch_url)
    command.upgrade(config, "0001")
    engine = make_database_engine(scratch_url)
    now = "2026-01-01 00:00:00"
    try:
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO campaign (id, slug, name, description, status, scale, k, measure,"
                    " estimator, policy, target, lease_minutes, judgments_per_pair, seed,"
                    " keep_collecting, judgment_version, created_at, updated_at) VALUES (1, 'c',"
                    " 'C', '', 'open', 'fine', 2, 'cg', 'uniform', 'confidence', 0.95, 10, 1, 0,"
                    " :no, 3, :now, :now)"
                ),
                {"no": False, "now": now},
            )
            for system in (1, 2):
                conn.execute(
                    text("INSERT INTO system (id, campaign_id, name) VALUES (:s, 1, :n)"),
                    {"s": system, "n": f"S{system}"},
                )
            for doc in (1, 2, 3):
                conn.execute(
                    text("INSERT INTO document (id, campaign_id, external_id) VALUES (:d, 1, :e)"),
                    {"d": doc, "e": f"d{doc}"},
                )
            conn.execute(text("INSERT INTO query (id, campaign_id, document_id) VALUES (1, 1, 1)"))
            for system, rank, doc in ((1, 1, 2), (1, 2, 3), (2, 1, 3), (2, 2, 2)):
                conn.execute(
                    text(
                        "INSERT INTO result (campaign_id, system_id, query_id, rank, document_id)"
                        " VALUES (1, :s, 1, :r, :d)"
                    ),
                    {"s": system, "r": rank, "d": doc},
                )
            conn.execute(
                text(
                    "INSERT INTO assessor (id, campaign_id, name, token, created_at)"
                    " VALUES (1, 1, 'Ada', 'old-link-token', :now)"
                ),
                {"now": now},
            )
            conn.execute(
                text(
                    "INSERT INTO judgment (campaign_id, query_id, document_id, assessor_id, broad,"
                    " fine, client_id, source, revision, version, created_at, updated_at)"
                    " VALUES (1, 1, 2, 1, 2, 90.0, 'c1', 'assessor', 0, 3, :now, :now)"
                ),
                {"now": now},
            )
    finally:
        engine.dispose()
    command.upgrade(config, "head")
    engine = make_database_engine(scratch_url)
    try:
        with make_sessionmaker(engine)() as session:
            assert session.scalar(select(func.count()).select_from(Result)) == 4
            assert session.scalar(select(func.count()).select_from(Judgment)) == 1
            ada = assessor_by_token(session, "old-link-token")
            assert ada is not None
            assert ada.name == "Ada"
            ensure_pool(session, session.get_one(Campaign, 1))
            judged = session.execute(select(Pair.document_id, Pair.judged)).all()
            assert sorted(judged) == [(2, 1), (3, 0)]
            session.rollback()
    finally:
        engine.dispose()
