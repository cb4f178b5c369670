"""An export bundle opened for a restore: the zip checked whole before anything is read (the
manifest of an mtcjudge bundle of this format version, every member listed in it with the
SHA-256 it gives, nothing else), then its ``state/`` members read record by record, each field
parsed with the member, line and field named in every error (docs/exports.md, "Importing a
bundle")."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from mtcjudge.exports.manifest import BUNDLE_FORMAT, BUNDLE_FORMAT_VERSION
from mtcjudge.exports.state import ADDED_COLUMNS, OPTIONAL_STATE, STATE_COLUMNS
from mtcjudge.ingest.formats import InputError
from mtcjudge.validation import DECIMAL, INTEGER, NAME_MAX

__all__ = ["Bundle", "Fields", "open_bundle"]

_HASH_CHUNK = 1 << 20


@dataclass(frozen=True)
class Bundle:
    """An export bundle whose manifest and checksums were verified (:func:`open_bundle`)."""

    name: str
    archive: zipfile.ZipFile
    manifest: dict[str, Any]

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.manifest["campaign"])

    def records(self, member: str) -> Iterator[Fields]:
        """The records of a ``state/`` member, as :class:`Fields` to parse."""
        where = f"{self.name}/{member}"
        for line, record in self.rows(member):
            yield Fields(where, line, record)

    def rows(self, member: str) -> Iterator[tuple[int, dict[str, str]]]:
        """(line, record) of a ``state/`` member, its header checked."""
        where = f"{self.name}/{member}"
        columns = STATE_COLUMNS[member]
        with self.archive.open(member) as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
            reader = csv.reader(text)
            try:
                header = next(reader, None)
                added = ADDED_COLUMNS.get(member, ())
                earlier = columns[: len(columns) - len(added)]
                if header is None or tuple(header) not in (columns, earlier):
                    raise InputError(
                        where, 1, f"expected the columns {','.join(columns)}, found {header}"
                    )
                # a member written by an earlier version lacks the columns added since
                present = tuple(header)
                missing = dict.fromkeys(columns[len(present) :], "")
                for record in reader:
                    line = reader.line_num
                    if len(record) != len(present):
                        raise InputError(
                            where, line, f"expected {len(present)} fields, found {len(record)}"
                        )
                    yield line, {**dict(zip(present, record, strict=True)), **missing}
            except UnicodeDecodeError as exc:
                raise InputError(where, None, f"not UTF-8 text ({exc.reason})") from exc
            except csv.Error as exc:
                raise InputError(where, reader.line_num, f"not CSV: {exc}") from exc


def _refuse(name: str, message: str) -> InputError:
    return InputError(name, None, message)


def open_bundle(source: str | Path | BinaryIO, name: str | None = None) -> Bundle:
    """Open ``source`` (a path or a binary file) as an export bundle and verify it: a zip,
    an mtcjudge manifest of this format version, every listed member present with its
    SHA-256 and size, and no member the manifest does not list.

    Raises
    ------
    InputError
        Naming the bundle (and the member) and what is wrong.
    """
    shown = name or (str(source) if isinstance(source, str | Path) else "bundle")
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise _refuse(
            shown,
            "not a zip file: an export bundle is the zip 'mtcjudge export SLUG --what bundle' "
            "writes",
        ) from exc
    except FileNotFoundError as exc:
        raise _refuse(shown, "no such file") from exc
    except IsADirectoryError as exc:
        raise _refuse(shown, "is a directory, expected a zip file") from exc
    try:
        manifest = _manifest(archive, shown)
        _verify_members(archive, manifest, shown)
    except BaseException:
        archive.close()
        raise
    return Bundle(shown, archive, manifest)


def _manifest(archive: zipfile.ZipFile, name: str) -> dict[str, Any]:
    if "manifest.json" not in archive.namelist():
        raise _refuse(name, "no manifest.json: not an mtcjudge export bundle")
    where = f"{name}/manifest.json"
    try:
        manifest = json.loads(archive.read("manifest.json").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(where, None, "not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise InputError(where, exc.lineno, f"not JSON: {exc.msg}") from exc
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputError(where, None, f"cannot be read: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise InputError(
            where, None, f"format is {found!r}, not {BUNDLE_FORMAT!r}: not an mtcjudge bundle"
        )
    version = manifest.get("format_version")
    if version != BUNDLE_FORMAT_VERSION:
        hint = (
            ": it holds no state/ members (it was made before bundles could be imported); "
            "export the campaign again"
            if version == 1
            else ""
        )
        raise InputError(
            where,
            None,
            f"format_version is {version!r}; this mtcjudge imports {BUNDLE_FORMAT_VERSION}{hint}",
        )
    files = manifest.get("files")
    if (
        not isinstance(files, list)
        or not all(isinstance(f, dict) for f in files)
        or not isinstance(manifest.get("campaign"), dict)
    ):
        raise InputError(where, None, "files must be a list of members and campaign an object")
    return manifest


def _verify_members(archive: zipfile.ZipFile, manifest: dict[str, Any], name: str) -> None:
    listed: dict[str, dict[str, Any]] = {}
    for entry in manifest["files"]:
        member = entry.get("name")
        if not isinstance(member, str) or not isinstance(entry.get("sha256"), str):
            raise InputError(f"{name}/manifest.json", None, f"files: a malformed entry {entry!r}")
        listed[member] = entry
    present = [n for n in archive.namelist() if n != "manifest.json"]
    unlisted = sorted(set(present) - set(listed))
    if unlisted:
        raise _refuse(
            name,
            f"{unlisted[0]} is not listed in manifest.json: the bundle was changed after it "
            "was made (or is not an mtcjudge bundle)",
        )
    if len(present) != len(set(present)):
        raise _refuse(name, "a member is in the zip twice")
    missing = [m for m in STATE_COLUMNS if m not in listed and m not in OPTIONAL_STATE]
    missing += sorted(m for m in listed if m not in present)
    if missing:
        raise _refuse(name, f"{missing[0]} is missing: the bundle is incomplete")
    for member, entry in listed.items():
        digest = hashlib.sha256()
        size = 0
        try:
            with archive.open(member) as stream:
                while chunk := stream.read(_HASH_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _refuse(f"{name}/{member}", f"cannot be read: {exc}") from exc
        if digest.hexdigest() != entry["sha256"] or size != entry.get("bytes", size):
            raise _refuse(
                f"{name}/{member}",
                "its SHA-256 is not the one manifest.json gives: the file was changed or "
                "damaged after the bundle was made",
            )


class Fields:
    """Parses the fields of one record, naming the member, line and field in every error."""

    def __init__(self, where: str, line: int, record: dict[str, str]) -> None:
        self.where, self.line, self.record = where, line, record

    def error(self, field: str, message: str) -> InputError:
        return InputError(self.where, self.line, f"{field}: {message}", field=field)

    def text(self, field: str, *, optional: bool = False) -> str | None:
        value = self.record[field]
        if value == "":
            if optional:
                return None
            raise self.error(field, "is empty")
        if len(value) > NAME_MAX:
            raise self.error(field, f"is longer than {NAME_MAX} characters")
        return value

    def name(self, field: str) -> str:
        value = self.text(field)
        assert value is not None
        return value

    def integer(self, field: str, *, optional: bool = False, minimum: int = 0) -> int | None:
        value = self.record[field]
        if value == "" and optional:
            return None
        if not INTEGER.fullmatch(value) or int(value) < minimum or int(value) > 2**31 - 1:
            raise self.error(field, f"must be an integer of at least {minimum}, found {value!r}")
        return int(value)

    def number(
        self, field: str, *, optional: bool = False, low: float = -math.inf, high: float = math.inf
    ) -> float | None:
        value = self.record[field]
        if value == "" and optional:
            return None
        if not DECIMAL.fullmatch(value) or not low <= float(value) <= high:
            raise self.error(field, f"must be a number from {low:g} to {high:g}, found {value!r}")
        return float(value)

    def time(self, field: str, *, optional: bool = False) -> datetime | None:
        value = self.record[field]
        if value == "" and optional:
            return None
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise self.error(field, f"must be a time in ISO 8601 with its offset, found {value!r}")
        return moment

    def choice(self, field: str, allowed: tuple[str, ...], *, optional: bool = False) -> str | None:
        value = self.record[field]
        if value == "" and optional:
            return None
        if value not in allowed:
            raise self.error(field, f"must be one of {', '.join(allowed)}, found {value!r}")
        return value

    def known(self, field: str, value: str, known: dict[str, Any] | set[str], what: str) -> None:
        if value not in known:
            raise self.error(field, f"{value!r} is not {what} of the bundle")
