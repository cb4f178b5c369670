"""Database plumbing: a busy SQLite database makes requests wait, never fail."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import text

import mtcjudge.db
from mtcjudge.db import make_database_engine, make_sessionmaker, read_only, session_scope


def test_sqlite_busy_is_retried_past_the_busy_timeout(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(mtcjudge.db, "SQLITE_BUSY_TIMEOUT_MS", 100)
    url = f"sqlite:///{tmp_path / 'busy.sqlite3'}"
    engine = make_database_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        holder = engine.connect()
        holder.begin()  # BEGIN IMMEDIATE: holds the write lock
        holder.execute(text("INSERT INTO t VALUES (1)"))
        done: list[float] = []
        errors: list[Exception] = []

        def writer() -> None:
            started = time.monotonic()
            try:
                with engine.begin() as conn:
                    conn.execute(text("INSERT INTO t VALUES (2)"))
                done.append(time.monotonic() - started)
            except Exception as exc:
                errors.append(exc)

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(0.6)  # several busy timeouts go by
        holder.commit()
        holder.close()
        thread.join(timeout=10)
        assert errors == []
        assert done
        assert done[0] >= 0.5
        with engine.connect() as conn:
            assert conn.scalar(text("SELECT count(*) FROM t")) == 2
    finally:
        engine.dispose()


def test_sqlite_gives_up_after_the_deadline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(mtcjudge.db, "SQLITE_BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(mtcjudge.db, "SQLITE_LOCK_WAIT_SECONDS", 0.3)
    engine = make_database_engine(f"sqlite:///{tmp_path / 'stuck.sqlite3'}")
    try:
        holder = engine.connect()
        holder.begin()
        with pytest.raises(Exception, match="locked"), engine.begin() as conn:
            conn.execute(text("SELECT 1"))
        holder.rollback()
        holder.close()
    finally:
        engine.dispose()


def test_a_sqlite_read_only_transaction_takes_no_write_lock(tmp_path: Path, monkeypatch) -> None:
    """The clip route's lookup reads while writers hold the lock: it neither waits for them
    nor sees what they have not committed."""
    monkeypatch.setattr(mtcjudge.db, "SQLITE_BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(mtcjudge.db, "SQLITE_LOCK_WAIT_SECONDS", 0.3)
    engine = make_database_engine(f"sqlite:///{tmp_path / 'read.sqlite3'}")
    factory = make_sessionmaker(engine)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
            conn.execute(text("INSERT INTO t VALUES (1)"))
        holder = engine.connect()
        holder.begin()  # BEGIN IMMEDIATE: holds the write lock
        holder.execute(text("INSERT INTO t VALUES (2)"))
        started = time.monotonic()
        with session_scope(factory) as session:
            assert read_only(session).scalar(text("SELECT count(*) FROM t")) == 1
        assert time.monotonic() - started < 0.25  # no wait for the lock
        # an ordinary transaction does wait for it (and gives up here)
        with pytest.raises(Exception, match="locked"), session_scope(factory) as session:
            session.execute(text("SELECT count(*) FROM t"))
        holder.rollback()
        holder.close()
    finally:
        engine.dispose()
