"""Audio uploads raced for real: two requests (threads, each its own transaction, on a
database file or a Postgres schema) storing files at the same moment. The database decides:
one usable file of a name per upload, one blob per content, an upload's limit never passed.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.campaigns import audio_upload as uploads
from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.models import AudioBlob, AudioUploadFile
from tests.audio_files import write_clip

LIMITS = uploads.UploadLimits(file_bytes=10_000_000, upload_bytes=10_000_000)


@pytest.fixture
def factory(empty_database_url: str) -> Iterator[sessionmaker[Session]]:
    upgrade_database(empty_database_url)
    engine = make_database_engine(empty_database_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def new_upload(factory: sessionmaker[Session]) -> str:
    with session_scope(factory) as session:
        return uploads.new_upload(session, audit.Actor("test")).token


def received(path: Path) -> tuple[Path, int, str]:
    data = path.read_bytes()
    return path, len(data), hashlib.sha256(data).hexdigest()


def race(*work: Callable[[], uploads.FileReport]) -> list[uploads.FileReport]:
    """Run each at the same moment on its own thread; their reports."""
    barrier = threading.Barrier(len(work))
    results: list[uploads.FileReport | BaseException] = [None] * len(work)  # type: ignore[list-item]

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work[i]()
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(work))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def storing(
    factory: sessionmaker[Session],
    token: str,
    name: str,
    path: Path,
    limits: uploads.UploadLimits = LIMITS,
) -> Callable[[], uploads.FileReport]:
    def store() -> uploads.FileReport:
        with session_scope(factory) as session:
            upload = uploads.find_upload(session, token, receiving=True)
            return uploads.store_file(session, upload, limits, name, received(path), None)

    return store


def test_two_files_of_one_name_at_once_one_is_used(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    token = new_upload(factory)
    first = write_clip(tmp_path / "one.flac", 1.0, seed=1)
    second = write_clip(tmp_path / "two.flac", 1.0, seed=2)
    reports = race(
        storing(factory, token, "a.flac", first), storing(factory, token, "a.flac", second)
    )
    assert sorted(r.usable for r in reports) == [False, True]
    (refused,) = [r for r in reports if not r.usable]
    assert refused.problem is not None
    assert refused.problem.startswith("duplicate name: a.flac")
    with session_scope(factory) as session:
        usable = session.scalars(
            select(AudioUploadFile).where(AudioUploadFile.sha256.is_not(None))
        ).all()
        assert len(usable) == 1
        # the duplicate's bytes are neither counted nor stored
        assert uploads.find_upload(session, token).total_bytes == usable[0].size
        assert session.scalar(select(func.count()).select_from(AudioBlob)) == 1


def test_the_same_bytes_in_two_uploads_at_once_are_stored_once(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    path = write_clip(tmp_path / "x.mp3", 1.0)
    tokens = [new_upload(factory), new_upload(factory)]
    reports = race(*(storing(factory, token, "x.mp3", path) for token in tokens))
    assert [r.usable for r in reports] == [True, True]
    with session_scope(factory) as session:
        assert session.scalar(select(func.count()).select_from(AudioBlob)) == 1


def test_two_files_at_once_never_pass_the_upload_limit(
    factory: sessionmaker[Session], tmp_path: Path
) -> None:
    token = new_upload(factory)
    first = write_clip(tmp_path / "one.mp3", 1.0, seed=1)
    second = write_clip(tmp_path / "two.mp3", 1.0, seed=2)
    limit = max(first.stat().st_size, second.stat().st_size) + 10  # room for one
    limits = uploads.UploadLimits(file_bytes=limit, upload_bytes=limit)
    reports = race(
        storing(factory, token, "one.mp3", first, limits),
        storing(factory, token, "two.mp3", second, limits),
    )
    assert sorted(r.usable for r in reports) == [False, True]
    with session_scope(factory) as session:
        upload = uploads.find_upload(session, token)
        assert upload.total_bytes <= limit
