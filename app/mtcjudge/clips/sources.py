"""Where a stored clip's file is on this machine: a path on the server, or audio uploaded
from the browser and kept in the database.

A document's ``audio_path`` is either a file path (a folder on the server) or
``blob:<sha256>.<ext>``: a file uploaded from the browser, stored in the database by its
content hash (``audio_blob``), so that every process on every machine can serve it.
:func:`local_path` gives the file to read: a path as it is, a blob written from the database
into this machine's cache (``sources/`` beside the renditions, :mod:`mtcjudge.clips.rendition`)
the first time it is needed, atomically (several processes may write the same one). The
copy is derived data: a machine with an empty cache writes it again, nothing is shared
through files.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.clips import repository
from mtcjudge.clips.decode import AUDIO_TYPES, UnreadableAudio
from mtcjudge.clips.rendition import cache_directory, write_atomically
from mtcjudge.db import session_scope

__all__ = [
    "BLOB_PREFIX",
    "BlobLoader",
    "blob_of",
    "blob_path",
    "factory_loader",
    "is_stored",
    "local_path",
    "present",
    "session_loader",
    "sources_directory",
]

BLOB_PREFIX = "blob:"
_BLOB = re.compile(r"blob:([0-9a-f]{64})\.([a-z0-9]{1,8})")

#: the stored bytes of a hash (None: not stored)
BlobLoader = Callable[[str], bytes | None]


def blob_path(sha256: str, extension: str) -> str:
    """The ``audio_path`` of uploaded audio: ``blob:<sha256>.<ext>``."""
    return f"{BLOB_PREFIX}{sha256}.{extension.lower()}"


def blob_of(audio_path: str) -> tuple[str, str] | None:
    """(sha256, extension) of a blob's ``audio_path``; None for a file path."""
    match = _BLOB.fullmatch(audio_path)
    if match is None or match.group(2) not in AUDIO_TYPES:
        return None
    return match.group(1), match.group(2)


def is_stored(audio_path: str) -> bool:
    """Whether the clip is audio kept in the database (checked when it was uploaded and
    imported, never changed or deleted)."""
    return blob_of(audio_path) is not None


def present(audio_path: str) -> bool:
    """Whether the clip's audio is there: stored in the database, or a file on the server."""
    return is_stored(audio_path) or os.path.isfile(audio_path)


def sources_directory() -> Path:
    """This machine's copies of uploaded audio (in the rendition cache)."""
    return cache_directory() / "sources"


def local_path(audio_path: str, load: BlobLoader) -> Path:
    """The file to read for a clip: a path as it is; a blob's copy in this machine's cache,
    written from ``load(sha256)`` when the cache does not have it yet.

    Raises
    ------
    UnreadableAudio
        When the blob is not in the database, or its bytes are not the ones it is named by.
    """
    found = blob_of(audio_path)
    if found is None:
        return Path(audio_path)
    sha256, extension = found
    target = sources_directory() / sha256[:2] / f"{sha256}.{extension}"
    if target.is_file():
        return target
    data = load(sha256)
    if data is None:
        raise UnreadableAudio("the uploaded audio is not in the database")
    if hashlib.sha256(data).hexdigest() != sha256:
        raise UnreadableAudio("the uploaded audio in the database is damaged")
    write_atomically(target, data)
    return target


def session_loader(session: Session) -> BlobLoader:
    """Blobs read in the caller's transaction."""
    return lambda sha256: repository.blob_data(session, sha256)


def factory_loader(session_factory: sessionmaker[Session]) -> BlobLoader:
    """Blobs read each in a short transaction of its own (outside a request's)."""

    def load(sha256: str) -> bytes | None:
        with session_scope(session_factory) as session:
            return repository.blob_data(session, sha256)

    return load
