"""Audio from the browser: an upload of a folder or a zip of clips, stored in the database.

An organizer's page starts an upload (:func:`new_upload`, a random token), sends the files
one by one or as one zip, and marks it complete; a campaign is then created from the
complete upload (:func:`scan_upload`) in one transaction. Each file is checked when it
arrives (its name, its extension, then decoded whole: :func:`mtcjudge.clips.decode.verify`);
a usable file's bytes are stored once by their SHA-256 (``audio_blob``), an unusable one is
kept as its name and the reason. Nothing lives in one process's memory or files: every
process can take the next file of an upload, and serve its clips
(:mod:`mtcjudge.clips.sources`).

The bodies are received by the routes (streamed to a temporary file, hashed on the way);
checking a file (decoding it) happens with no database connection held.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import tempfile
import unicodedata
import zipfile
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge import audit
from mtcjudge.campaigns import repository
from mtcjudge.clips import repository as clip_store
from mtcjudge.clips.audio import AudioScan, scan_audio
from mtcjudge.clips.cut import Cut
from mtcjudge.clips.decode import AUDIO_TYPES, NOT_DECODED_TYPES, UnreadableAudio, verify
from mtcjudge.clips.decode import extension_problem as decode_extension_problem
from mtcjudge.clips.sources import blob_path, local_path, session_loader
from mtcjudge.db import session_scope
from mtcjudge.errors import Conflict, InvalidInput, NotFound
from mtcjudge.models import AudioUpload, AudioUploadFile
from mtcjudge.validation import text_problem

__all__ = [
    "FileReport",
    "UploadLimits",
    "UploadReport",
    "cancel_upload",
    "check_file",
    "complete_upload",
    "find_upload",
    "format_bytes",
    "is_audio_name",
    "name_problem",
    "new_upload",
    "receive_zip",
    "scan_upload",
    "split_name",
    "store_file",
    "too_large",
    "upload_report",
    "uploaded_names",
]

#: members of one zip read at most
MAX_ZIP_MEMBERS = 20_000
#: a file name's longest form, in bytes of UTF-8 (what file systems store)
MAX_NAME_BYTES = 255
_UNPACKED_AT_ONCE = 1 << 20
#: what operating systems put in folders and zips beside the files: never reported
_SYSTEM_FILES = (".DS_Store", "Thumbs.db", "desktop.ini")


@dataclass(frozen=True)
class UploadLimits:
    """Bytes allowed for one file and for a whole upload (``Settings``)."""

    file_bytes: int
    upload_bytes: int
    zip_members: int = MAX_ZIP_MEMBERS


@dataclass(frozen=True)
class FileReport:
    """One file of an upload: its name as sent, the document it is for (``name``), its
    extension and size, and whether it can be used (else the ``problem``)."""

    file_name: str
    name: str
    extension: str
    size: int
    usable: bool
    problem: str | None = None


@dataclass(frozen=True)
class UploadReport:
    """An upload as it stands: its files, usable or not, and the bytes stored."""

    token: str
    state: str
    total_bytes: int
    max_file_bytes: int
    max_upload_bytes: int
    files: list[FileReport]

    @property
    def n_usable(self) -> int:
        return sum(1 for f in self.files if f.usable)


def format_bytes(n: int) -> str:
    """1048576 -> "1 MiB", 1500000 -> "1.4 MiB"."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return (
                f"{value:.0f} {unit}"
                if value >= 10 or value == int(value)
                else (f"{value:.1f} {unit}")
            )
    return f"{n} bytes"


# ------------------------------------------------------------------ the upload


def new_upload(session: Session, actor: audit.Actor) -> AudioUpload:
    """A new upload, receiving files, named by a random token (43 characters)."""
    upload = AudioUpload(
        token=secrets.token_urlsafe(32),
        organizer_id=actor.organizer_id,
        actor=actor.name[:200],
        state="receiving",
        total_bytes=0,
    )
    repository.add(session, upload)
    return upload


def find_upload(session: Session, token: str, *, receiving: bool = False) -> AudioUpload:
    """The upload of this token; with ``receiving``, one that still takes files.

    Raises
    ------
    NotFound
        No such upload.
    Conflict
        ``receiving`` and the upload is complete.
    """
    upload = repository.upload_by_token(session, token)
    if upload is None:
        raise NotFound("no such audio upload (it was cancelled, or never started)")
    if receiving and upload.state != "receiving":
        raise Conflict("this audio upload is complete: start a new one to send more files")
    return upload


def upload_report(session: Session, upload: AudioUpload, limits: UploadLimits) -> UploadReport:
    rows = repository.upload_file_rows(session, upload.id)
    return UploadReport(
        token=upload.token,
        state=upload.state,
        total_bytes=upload.total_bytes,
        max_file_bytes=limits.file_bytes,
        max_upload_bytes=limits.upload_bytes,
        files=[_file_report(row) for row in rows],
    )


def complete_upload(session: Session, upload: AudioUpload, limits: UploadLimits) -> UploadReport:
    """No more files: a campaign may now be made from the upload (idempotent)."""
    repository.complete_upload(session, upload.id)
    session.refresh(upload)
    return upload_report(session, upload, limits)


def cancel_upload(session: Session, upload: AudioUpload) -> None:
    """Forget the upload and its files' report. The stored audio stays: it is named by its
    content and may be another upload's or a campaign's too."""
    session.delete(upload)
    session.flush()


def _file_report(row: AudioUploadFile) -> FileReport:
    return FileReport(
        row.file_name, row.name, row.extension, row.size, row.sha256 is not None, row.problem
    )


# ------------------------------------------------------------------ one file


def split_name(file_name: str) -> tuple[str, str]:
    """(document name, extension) of a file name: its stem in NFC (a name given on macOS
    is decomposed) and its extension in lower case."""
    stem, dot, ext = file_name.rpartition(".")
    if not dot:
        return unicodedata.normalize("NFC", file_name), ""
    return unicodedata.normalize("NFC", stem), ext.lower()


def name_problem(file_name: str) -> str | None:
    """Why a file of this name cannot be a clip (None when it may be)."""
    if not file_name or file_name in (".", ".."):
        return "no file name"
    if "/" in file_name or "\\" in file_name:
        return "a file name cannot hold / or \\"
    if (problem := text_problem(file_name)) is not None:
        return f"the name {problem}"
    if any(ord(char) < 32 for char in file_name):
        return "the name contains control characters"
    if len(file_name.encode("utf-8")) > MAX_NAME_BYTES:
        return f"the name is longer than {MAX_NAME_BYTES} bytes"
    if not split_name(file_name)[0]:
        return "the name has no document id before its extension"
    return decode_extension_problem(file_name)


def is_audio_name(file_name: str) -> bool:
    """Whether the name's extension is an audio format's (accepted or reported with a way
    out): other files of a folder or zip (covers, notes) are not the collection's."""
    return split_name(file_name)[1] in (*AUDIO_TYPES, *NOT_DECODED_TYPES)


def check_file(path: Path) -> str | None:
    """Why the received file cannot be used (None when it decodes whole); the path's
    extension is the uploaded name's."""
    try:
        verify(path)
    except UnreadableAudio as exc:
        return str(exc)
    return None


def too_large(limits: UploadLimits) -> str:
    return f"larger than the {format_bytes(limits.file_bytes)} allowed for one file"


def store_file(
    session: Session,
    upload: AudioUpload,
    limits: UploadLimits,
    file_name: str,
    received: tuple[Path, int, str] | None,
    problem: str | None,
) -> FileReport:
    """Record one received file of an upload: with its bytes when it is usable (``received``:
    the checked file, its size and SHA-256), else with its ``problem``.

    A usable file whose name and extension the upload holds already is the same file sent
    again (same bytes: its report, nothing stored twice) or a duplicate (reported, the
    first one kept). Past the upload's limit the file is reported, not stored.
    """
    size = received[1] if received else 0
    if problem is None and received is not None:
        name, ext = split_name(file_name)
        earlier = repository.usable_upload_file(session, upload.id, name, ext)
        if earlier is not None and earlier.sha256 == received[2]:
            return _file_report(earlier)
        if earlier is not None:
            problem = _duplicate(earlier.file_name)
        else:
            stored = _store_usable(session, upload.id, limits, file_name, received)
            if isinstance(stored, AudioUploadFile):
                return _file_report(stored)
            problem = stored
    row = _add_row(session, upload.id, file_name, size, None, problem or "not usable")
    assert row is not None  # unusable rows have no unique index
    return _file_report(row)


def _store_usable(
    session: Session,
    upload_id: int,
    limits: UploadLimits,
    file_name: str,
    received: tuple[Path, int, str],
) -> AudioUploadFile | str:
    """Count the file's bytes, store them and its row, all or nothing; the problem when the
    upload's limit or a file of its name stored by another request at once stops it."""
    path, size, sha256 = received
    name, ext = split_name(file_name)
    try:
        with session.begin_nested():
            if not repository.add_upload_bytes(session, upload_id, size, limits.upload_bytes):
                return (
                    f"not stored: the upload would pass the {format_bytes(limits.upload_bytes)} "
                    "allowed for one upload"
                )
            clip_store.insert_blob(session, sha256, path.read_bytes())
            row = AudioUploadFile(
                upload_id=upload_id,
                file_name=file_name,
                name=name,
                extension=ext[:16],
                size=size,
                sha256=sha256,
                problem=None,
            )
            repository.add(session, row)
    except IntegrityError:  # another request stored a file of this name just now
        return _duplicate(f"{name}.{ext}")
    return row


def _duplicate(other: str) -> str:
    return f"duplicate name: {other} was received first and is the one used"


def _add_row(
    session: Session,
    upload_id: int,
    file_name: str,
    size: int,
    sha256: str | None,
    problem: str | None,
) -> AudioUploadFile | None:
    """The file's row; None when a usable one of its name and extension came first."""
    name, ext = split_name(file_name)
    row = AudioUploadFile(
        upload_id=upload_id,
        file_name=file_name,
        name=name,
        extension=ext[:16],
        size=size,
        sha256=sha256,
        problem=problem,
    )
    try:
        with session.begin_nested():
            repository.add(session, row)
    except IntegrityError:
        return None
    return row


# ------------------------------------------------------------------ a zip


@dataclass
class _ZipBudget:
    """What a zip may still unpack to."""

    left: int


def receive_zip(
    session_factory: sessionmaker[Session],
    token: str,
    zip_path: Path,
    limits: UploadLimits,
) -> list[FileReport]:
    """Check and store every audio member of a received zip, each in a short transaction of
    its own (a member's failure never affects the others). Members in folders are taken by
    their base name; a path leaving the zip (``../x.wav``, ``/x.wav``) is reported and not
    read; what the zip unpacks to is counted as it is read (a zip bomb stops at the limits).

    Raises
    ------
    InvalidInput
        Not a zip, or more members than :attr:`UploadLimits.zip_members`.
    """
    try:
        archive = zipfile.ZipFile(zip_path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidInput(f"zip: not a zip file ({exc})") from exc
    with archive, tempfile.TemporaryDirectory(prefix="mtcjudge-zip-") as scratch:
        members = [info for info in archive.infolist() if not info.is_dir()]
        if len(members) > limits.zip_members:
            raise InvalidInput(
                f"zip: {len(members):,} files, more than the {limits.zip_members:,} read from one"
            )
        budget = _ZipBudget(limits.upload_bytes)
        seen: dict[tuple[str, str], str] = {}
        reports: list[FileReport] = []
        for info in members:
            report = _zip_member(
                session_factory, token, archive, info, Path(scratch), limits, budget, seen
            )
            if report is not None:
                reports.append(report)
    return reports


def _zip_member(
    session_factory: sessionmaker[Session],
    token: str,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    scratch: Path,
    limits: UploadLimits,
    budget: _ZipBudget,
    seen: dict[tuple[str, str], str],
) -> FileReport | None:
    """Check and store one member (None: a system file, or not audio at all, skipped)."""
    parts = info.filename.replace("\\", "/").split("/")
    base = parts[-1]
    if "__MACOSX" in parts or base.startswith("._") or base in _SYSTEM_FILES:
        return None
    problem: str | None = None
    received: tuple[Path, int, str] | None = None
    if info.filename.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        problem = "unsafe path in the zip (it leads outside the zip): not read"
    elif not is_audio_name(base):
        return None
    elif (problem := name_problem(base)) is None:
        key = split_name(base)
        if key in seen:
            problem = f"duplicate name in the zip: {seen[key]} comes first and is the one used"
        else:
            seen[key] = info.filename
            received, problem = _unpack(archive, info, scratch, split_name(base)[1], limits, budget)
            if received is not None and problem is None:
                problem = check_file(received[0])
    try:
        with session_scope(session_factory) as session:
            upload = find_upload(session, token, receiving=True)
            name = info.filename if problem and problem.startswith("unsafe") else base
            return store_file(session, upload, limits, name, received, problem)
    finally:
        if received is not None:
            received[0].unlink(missing_ok=True)


def _unpack(
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    scratch: Path,
    ext: str,
    limits: UploadLimits,
    budget: _ZipBudget,
) -> tuple[tuple[Path, int, str] | None, str | None]:
    """The member written to a scratch file, counted and hashed as it is unpacked."""
    if info.flag_bits & 0x1:
        return None, "encrypted in the zip: not read"
    if budget.left <= 0:
        return None, "not read: the zip unpacks to more than one upload may hold"
    target = scratch / f"member.{ext}"
    digest = hashlib.sha256()
    size = 0
    try:
        with archive.open(info) as source, open(target, "wb") as out:
            while chunk := source.read(_UNPACKED_AT_ONCE):
                size += len(chunk)
                if size > limits.file_bytes:
                    return None, too_large(limits) + " (unpacked)"
                if size > budget.left:
                    budget.left = 0
                    return None, "not read: the zip unpacks to more than one upload may hold"
                digest.update(chunk)
                out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        return None, f"damaged in the zip: {exc}"
    budget.left -= size
    return (target, size, digest.hexdigest()), None


# ------------------------------------------------------------------ a campaign from it


def uploaded_names(session: Session, token: str) -> Mapping[str, str | None]:
    """Each document name of a complete upload and why it cannot be used (None: it can),
    for the preview.

    Raises
    ------
    InvalidInput
        No such upload, or it is not complete.
    """
    upload = _complete(session, token)
    found: dict[str, str | None] = {}
    for row in repository.upload_file_rows(session, upload.id):
        if row.sha256 is not None:
            found[row.name] = None
        elif found.get(row.name, "") is not None:
            found[row.name] = f"{row.file_name}: {row.problem}"
    return found


def _complete(session: Session, token: str) -> AudioUpload:
    upload = repository.upload_by_token(session, token)
    if upload is None:
        raise InvalidInput("audio_upload: no such audio upload (it was cancelled?)")
    if upload.state != "complete":
        raise InvalidInput("audio_upload: the audio upload is not complete yet")
    return upload


def scan_upload(
    session: Session,
    token: str,
    names: list[str],
    cut: Cut,
    queries: Collection[str],
    offsets: Mapping[str, float] | None = None,
) -> AudioScan:
    """The clips of ``names`` in a complete upload, analysed as a folder's are
    (:func:`mtcjudge.clips.audio.scan_audio`, on this machine's copies of the stored audio):
    each found clip is stored as its blob (``AudioFile.stored_as``), and a document whose
    only files were unusable at upload is reported with the upload's reason.

    Raises
    ------
    InvalidInput
        No such upload, or it is not complete.
    """
    upload = _complete(session, token)
    rows = repository.upload_file_rows(session, upload.id)
    load = session_loader(session)
    wanted = {unicodedata.normalize("NFC", n) for n in names}
    with tempfile.TemporaryDirectory(prefix="mtcjudge-upload-scan-") as directory:
        stored: dict[str, str] = {}
        for row in rows:
            if row.sha256 is None or row.name not in wanted:
                continue
            path = blob_path(row.sha256, row.extension)
            _place(local_path(path, load), Path(directory) / f"{row.name}.{row.extension}")
            stored[f"{row.name}.{row.extension}"] = path
        scan = scan_audio(directory, names, cut=cut, queries=queries, offsets=offsets)
    found = {doc: replace(a, stored_as=stored[a.path.name]) for doc, a in scan.found.items()}
    problems = {
        unicodedata.normalize("NFC", row.name): f"{row.file_name}: {row.problem}"
        for row in rows
        if row.problem is not None
    }
    missing = [d for d in scan.missing if unicodedata.normalize("NFC", d) not in problems]
    unreadable = scan.unreadable + [
        (d, problems[unicodedata.normalize("NFC", d)])
        for d in scan.missing
        if unicodedata.normalize("NFC", d) in problems
    ]
    return AudioScan(found, missing, unreadable, scan.notes)


def _place(source: Path, target: Path) -> None:
    """``source`` under the name ``target``: a hard link, else a copy."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
