"""``mtcjudge assessor set-aside|bring-back|pause|resume``: the command line acts as the
organizer API does, and ``assessor list`` says who is set aside, paused or flagged."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.models import AuditEvent
from tests.cli import run
from tests.factories import build_campaign, judge_in_turn


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[str, str]:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    upgrade_database(url)
    engine = make_database_engine(url)
    try:
        factory = make_sessionmaker(engine)
        with session_scope(factory) as session:
            fx = build_campaign(session, n_assessors=2)
            slug, token = fx.campaign.slug, fx.tokens[0]
        judge_in_turn(factory, token, 2, broad=1, fine=40.0)
    finally:
        engine.dispose()
    return url, slug


def test_set_aside_bring_back_pause_resume(seeded: tuple[str, str]) -> None:
    url, slug = seeded
    db = ("--database-url", url)
    code, out, _ = run("assessor", "set-aside", slug, "--name", "Volunteer 1", *db)
    assert (code, out) == (0, "Volunteer 1: 2 judgments set aside, their pairs back in the pool\n")
    code, out, _ = run("assessor", "list", slug, *db)
    assert out.splitlines()[0] == "Volunteer 1  consented; 2 judgment(s) set aside"
    code, out, _ = run("assessor", "bring-back", slug, "--name", "Volunteer 1", *db)
    assert (code, out) == (0, "Volunteer 1: 2 judgments brought back\n")
    code, out, _ = run(
        "assessor", "pause", slug, "--name", "Volunteer 2", "--message", "See you soon", *db
    )
    assert (code, out) == (0, "Volunteer 2 is paused and is told: See you soon\n")
    assert run("assessor", "list", slug, *db)[1].splitlines()[1] == "Volunteer 2  consented; paused"
    assert run("assessor", "resume", slug, "--name", "Volunteer 2", *db)[0] == 0
    # who did it: the command line
    engine = make_database_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            actors = set(session.scalars(select(AuditEvent.actor)))
    finally:
        engine.dispose()
    assert len(actors) == 1
    assert next(iter(actors)).startswith("command line (")


def test_unknown_names_and_bad_messages_exit_2(seeded: tuple[str, str]) -> None:
    url, slug = seeded
    db = ("--database-url", url)
    code, _, err = run("assessor", "set-aside", slug, "--name", "Nobody", *db)
    assert code == 2
    assert "no assessor named 'Nobody'" in err
    code, _, err = run(
        "assessor", "pause", slug, "--name", "Volunteer 1", "--message", "x" * 1001, *db
    )
    assert code == 2
    assert "at most 1000 characters" in err
    assert run("assessor", "resume", "no-such", "--name", "Volunteer 1", *db)[0] == 2
