"""Organizer accounts and sessions (mtcjudge.organizers.service), on the test database."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Literal

import pytest
from argon2 import PasswordHasher
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.auth.principal import hash_session_token, principal_for_session
from mtcjudge.config import Settings
from mtcjudge.errors import Conflict, InvalidInput, NotFound
from mtcjudge.models import AuditEvent, Organizer, OrganizerSession, utcnow
from mtcjudge.organizers import passwords
from mtcjudge.organizers import service as organizers
from tests.support import PASSWORD

ACTOR = audit.Actor("test")


def test_create_normalizes_the_username_and_stores_only_a_hash(db_session: Session) -> None:
    created = organizers.create_organizer(db_session, "  Ada.Lovelace ", PASSWORD, ACTOR)
    assert created.username == "ada.lovelace"
    assert created.password_hash.startswith("$argon2id$")
    assert PASSWORD not in created.password_hash
    event = db_session.scalars(select(AuditEvent)).one()
    assert (event.campaign_id, event.actor, event.action, event.detail) == (
        None,
        "test",
        "organizer_created",
        "ada.lovelace",
    )


def test_create_refuses_a_taken_name_a_bad_name_and_a_short_password(db_session: Session) -> None:
    organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    with pytest.raises(Conflict, match="the username 'ada' is taken"):
        organizers.create_organizer(db_session, "ADA", PASSWORD, ACTOR)
    with pytest.raises(InvalidInput, match="lowercase letters, digits"):
        organizers.create_organizer(db_session, "ada lovelace", PASSWORD, ACTOR)
    with pytest.raises(InvalidInput, match="1 to 64 characters"):
        organizers.create_organizer(db_session, "a" * 65, PASSWORD, ACTOR)
    with pytest.raises(InvalidInput, match="at least 10 characters"):
        organizers.create_organizer(db_session, "bob", "short", ACTOR)
    assert db_session.scalar(select(func.count()).select_from(Organizer)) == 1


def test_authenticate(db_session: Session) -> None:
    organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    signed = organizers.authenticate(db_session, "Ada", PASSWORD)
    assert signed is not None
    assert signed.username == "ada"
    assert organizers.authenticate(db_session, "ada", "wrong password") is None
    assert organizers.authenticate(db_session, "nobody", PASSWORD) is None
    assert organizers.authenticate(db_session, "not a name!", PASSWORD) is None
    organizers.set_disabled(db_session, "ada", True, ACTOR)
    assert organizers.authenticate(db_session, "ada", PASSWORD) is None


def test_unknown_and_known_usernames_cost_one_verification_each(
    db_session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    counted: list[str] = []

    class Counting(PasswordHasher):
        def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
            counted.append("verify")
            return super().verify(hash, password)

    monkeypatch.setattr(
        passwords, "_HASHER", Counting(time_cost=1, memory_cost=1024, parallelism=1)
    )
    for username in ("ada", "nobody", "bad name!"):
        counted.clear()
        organizers.authenticate(db_session, username, "wrong password")
        assert counted == ["verify"], username


def test_a_successful_sign_in_rehashes_an_old_hash(db_session: Session) -> None:
    organizer = organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    old = PasswordHasher(time_cost=1, memory_cost=512, parallelism=1).hash(PASSWORD)
    organizer.password_hash = old
    db_session.flush()
    stored = organizers.stored_credentials(db_session, "ada")
    matches, new_hash = organizers.check_credentials(stored, PASSWORD)
    assert matches
    assert new_hash is not None
    assert stored is not None
    signed = organizers.sign_in(db_session, stored, new_hash, timedelta(hours=1))
    assert signed is not None
    db_session.refresh(organizer)
    assert organizer.password_hash == new_hash != old
    assert passwords.verify_password(organizer.password_hash, PASSWORD) == (True, None)


def test_a_sign_in_fails_when_the_password_changed_meanwhile(db_session: Session) -> None:
    organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    stored = organizers.stored_credentials(db_session, "ada")
    assert stored is not None
    assert organizers.check_credentials(stored, PASSWORD) == (True, None)
    organizers.set_password(db_session, "ada", "another long password", ACTOR)
    assert organizers.sign_in(db_session, stored, None, timedelta(hours=1)) is None


def test_sessions_store_a_hash_and_end(db_session: Session) -> None:
    organizer = organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    token, row = organizers.start_session(db_session, organizer, timedelta(hours=12))
    assert row.token_hash == hash_session_token(token) != token
    assert len(row.token_hash) == 64
    principal = principal_for_session(db_session, token)
    assert principal is not None
    assert principal.username == "ada"
    assert principal.csrf_token == row.csrf_token
    assert principal.actor == audit.Actor("ada", organizer.id)
    assert principal_for_session(db_session, token + "x") is None
    assert organizers.end_session(db_session, token)
    assert principal_for_session(db_session, token) is None
    assert not organizers.end_session(db_session, token)


def test_expired_sessions_count_for_nothing_and_are_swept(db_session: Session) -> None:
    organizer = organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    token, row = organizers.start_session(db_session, organizer, timedelta(hours=12))
    row.expires_at = utcnow() - timedelta(seconds=1)
    db_session.flush()
    assert principal_for_session(db_session, token) is None
    organizers.start_session(db_session, organizer, timedelta(hours=12))  # sweeps
    assert db_session.scalar(select(func.count()).select_from(OrganizerSession)) == 1


def test_a_new_password_or_disabling_ends_every_session(db_session: Session) -> None:
    organizer = organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    first, _ = organizers.start_session(db_session, organizer, timedelta(hours=1))
    second, _ = organizers.start_session(db_session, organizer, timedelta(hours=1))
    assert organizers.set_password(db_session, "ada", "another long password", ACTOR) == 2
    assert principal_for_session(db_session, first) is None
    assert principal_for_session(db_session, second) is None
    assert organizers.authenticate(db_session, "ada", PASSWORD) is None
    assert organizers.authenticate(db_session, "ada", "another long password") is not None

    third, _ = organizers.start_session(db_session, organizer, timedelta(hours=1))
    assert organizers.set_disabled(db_session, "ada", True, ACTOR)
    assert not organizers.set_disabled(db_session, "ada", True, ACTOR)  # already
    assert principal_for_session(db_session, third) is None
    assert organizers.set_disabled(db_session, "ada", False, ACTOR)
    assert organizers.authenticate(db_session, "ada", "another long password") is not None
    actions = [e.action for e in audit.events(db_session, None)]
    assert actions == [
        "organizer_enabled",
        "organizer_disabled",
        "organizer_password_changed",
        "organizer_created",
    ]
    with pytest.raises(NotFound, match="no organizer 'bob'"):
        organizers.set_password(db_session, "bob", "another long password", ACTOR)


def test_list_organizers(db_session: Session) -> None:
    ada = organizers.create_organizer(db_session, "ada", PASSWORD, ACTOR)
    organizers.create_organizer(db_session, "bob", PASSWORD, ACTOR)
    organizers.set_disabled(db_session, "bob", True, ACTOR)
    organizers.start_session(db_session, ada, timedelta(hours=1))
    accounts = organizers.list_organizers(db_session)
    assert [(a.username, a.disabled, a.live_sessions) for a in accounts] == [
        ("ada", False, 1),
        ("bob", True, 0),
    ]


# ---------------------------------------------------------------- the first account


def test_the_environment_names_the_first_account(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MTCJUDGE_ADMIN_USERNAME", "admin")
    monkeypatch.setenv("MTCJUDGE_ADMIN_PASSWORD", PASSWORD)
    settings = Settings.from_env()
    assert (settings.admin_username, settings.admin_password) == ("admin", PASSWORD)
    assert PASSWORD not in repr(settings)
    monkeypatch.delenv("MTCJUDGE_ADMIN_PASSWORD")
    with pytest.raises(ValueError, match="both MTCJUDGE_ADMIN_USERNAME and"):
        Settings.from_env()


def test_the_first_account_is_made_only_when_there_is_no_organizer(
    session_factory: sessionmaker[Session],
) -> None:
    settings = Settings(admin_username="Admin", admin_password=PASSWORD)
    assert organizers.ensure_first_organizer(session_factory, Settings()) is None
    assert organizers.ensure_first_organizer(session_factory, settings) == "admin"
    again = Settings(admin_username="other", admin_password=PASSWORD)
    assert organizers.ensure_first_organizer(session_factory, again) is None
    with session_factory() as session:
        assert [a.username for a in organizers.list_organizers(session)] == ["admin"]
        assert organizers.authenticate(session, "admin", PASSWORD) is not None


def test_a_short_first_password_stops_the_start(session_factory: sessionmaker[Session]) -> None:
    settings = Settings(admin_username="admin", admin_password="short")
    with pytest.raises(InvalidInput, match="at least 10 characters"):
        organizers.ensure_first_organizer(session_factory, settings)


def test_processes_starting_together_make_one_first_account(
    empty_database_url: str,
) -> None:
    from mtcjudge.db import make_database_engine, make_sessionmaker, upgrade_database

    upgrade_database(empty_database_url)
    settings = Settings(admin_username="admin", admin_password=PASSWORD)
    engines = [make_database_engine(empty_database_url) for _ in range(3)]
    barrier = threading.Barrier(len(engines))
    made: list[str | None] = []
    failures: list[BaseException] = []

    def start(engine_index: int) -> None:
        try:
            barrier.wait()
            factory = make_sessionmaker(engines[engine_index])
            made.append(organizers.ensure_first_organizer(factory, settings))
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(engines))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert failures == []
        assert sorted(made, key=str) == [None, None, "admin"]
        with make_sessionmaker(engines[0])() as session:
            assert session.scalar(select(func.count()).select_from(Organizer)) == 1
    finally:
        for engine in engines:
            engine.dispose()
