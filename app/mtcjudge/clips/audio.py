"""Find the clip of each document in an audio directory and analyse it.

One file per document, named ``<doc_id>.<ext>`` with ``ext`` one of wav, flac, ogg, oga, opus,
mp3 (any case), directly in the directory. :func:`scan_audio` matches documents to files and,
for a campaign's import, analyses each file once (:func:`mtcjudge.clips.analysis.analyse`:
decoded, cut, measured); for a preview only the headers are read
(:func:`mtcjudge.clips.decode.inspect`). A file that cannot be used is reported with its
reason and never stops the others.
"""

from __future__ import annotations

import os
import threading
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mtcjudge.clips.analysis import ClipAnalysis, analyse
from mtcjudge.clips.cut import Cut
from mtcjudge.clips.decode import AUDIO_TYPES, NOT_DECODED_TYPES, UnreadableAudio, inspect
from mtcjudge.clips.sources import is_stored

__all__ = [
    "AUDIO_TYPES",
    "AudioFile",
    "AudioScan",
    "ClipWatch",
    "UnreadableAudio",
    "probe_audio",
    "scan_audio",
]


@dataclass(frozen=True)
class AudioFile:
    """A usable clip: where its file is, the file's MIME type, the clip's duration, the
    import's analysis (None for a preview, which reads headers only), and the ``audio_path``
    to store when it is not the file's path (uploaded audio: ``blob:<sha256>.<ext>``)."""

    path: Path
    mime: str
    duration_seconds: float | None
    analysis: ClipAnalysis | None = None
    stored_as: str | None = None


@dataclass(frozen=True)
class AudioScan:
    """What :func:`scan_audio` found.

    Attributes
    ----------
    found : dict of str to AudioFile
        Document id -> its clip.
    missing : list of str
        Documents without any file, in the order they were asked for.
    unreadable : list of (str, str)
        (document id, reason) for documents whose every file failed the header check.
    notes : list of str
        Documents with several files: which one is used and why.
    """

    found: dict[str, AudioFile]
    missing: list[str]
    unreadable: list[tuple[str, str]]
    notes: list[str] = field(default_factory=list)


def scan_audio(
    directory: str | os.PathLike[str],
    doc_ids: Iterable[str],
    *,
    cut: Cut | None = None,
    queries: Collection[str] = (),
    offsets: Mapping[str, float] | None = None,
    workers: int | None = None,
) -> AudioScan:
    """Match documents to the audio files of ``directory``, and check or analyse each file.

    When a document has several files (``a.wav`` and ``a.mp3``), the first usable one in the
    order of :data:`AUDIO_TYPES` is used and a note says which files were passed over.

    Parameters
    ----------
    directory : str or os.PathLike
        Directory holding ``<doc_id>.<ext>`` files (subdirectories are not searched).
    doc_ids : iterable of str
        The documents that need a clip.
    cut : Cut, optional
        Analyse each file for a campaign that cuts clips this way (decoded, cut, measured);
        without it only the headers are read.
    queries : collection of str
        The documents that are queries: their reference-trial excerpt is measured too.
    offsets : mapping of str to float, optional
        A start in seconds per document (``cut.mode == "offsets"``).
    workers : int, optional
        Files analysed at once (default: the machine's cores).

    Raises
    ------
    ValueError
        If ``directory`` does not exist or is not a directory.
    """
    root = Path(directory)
    if not root.is_dir():
        problem = "no such directory" if not root.exists() else "not a directory"
        raise ValueError(f"{root}: {problem}")
    wanted = list(dict.fromkeys(doc_ids))
    candidates = _candidates(root, set(wanted))
    offsets = offsets or {}

    def look(doc: str) -> tuple[AudioFile | None, list[str], list[Path]]:
        paths = candidates.get(doc, [])
        failures: list[str] = []
        for path in paths:
            try:
                return _look(path, cut, offsets.get(doc), doc in queries), failures, paths
            except UnreadableAudio as exc:
                failures.append(f"{path.name}: {exc}")
        return None, failures, paths

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        looked = list(pool.map(look, wanted))
    found: dict[str, AudioFile] = {}
    missing: list[str] = []
    unreadable: list[tuple[str, str]] = []
    notes: list[str] = []
    for doc, (audio, failures, paths) in zip(wanted, looked, strict=True):
        if not paths:
            missing.append(doc)
        elif audio is None:
            unreadable.append((doc, "; ".join(failures)))
        else:
            found[doc] = audio
            if len(paths) > 1:
                others = ", ".join(p.name for p in paths if p != audio.path)
                why = f" ({'; '.join(failures)})" if failures else ""
                notes.append(f"{doc}: using {audio.path.name}, not {others}{why}")
    return AudioScan(found, missing, unreadable, notes)


def _candidates(root: Path, wanted: set[str]) -> dict[str, list[Path]]:
    """Each wanted document's files, in order of preference: the accepted types, then those
    refused with a way out (``a.m4a``: reported, not missing). A name matches its document
    in any Unicode normalisation (a file named on macOS is decomposed, ids rarely are)."""
    preference = {ext: i for i, ext in enumerate((*AUDIO_TYPES, *NOT_DECODED_TYPES))}
    composed = {unicodedata.normalize("NFC", doc): doc for doc in wanted}
    candidates: dict[str, list[Path]] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            stem, dot, ext = entry.name.rpartition(".")
            doc = stem if stem in wanted else composed.get(unicodedata.normalize("NFC", stem))
            if dot and ext.lower() in preference and doc is not None and entry.is_file():
                candidates.setdefault(doc, []).append(Path(entry.path).resolve())
    for paths in candidates.values():
        paths.sort(key=lambda p: (preference[p.suffix[1:].lower()], p.name))
    return candidates


def _look(path: Path, cut: Cut | None, offset: float | None, query: bool) -> AudioFile:
    if cut is None:
        return probe_audio(path)
    analysis = analyse(path, cut, offset, query=query)
    return AudioFile(analysis.path, analysis.mime, analysis.window.seconds, analysis)


def probe_audio(path: str | os.PathLike[str]) -> AudioFile:
    """Read one file's header as the format its extension names (nothing decoded).

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    source = inspect(path)
    return AudioFile(source.path, source.mime, source.seconds)


class ClipWatch:
    """Whether stored clips can still be played: the file exists and :func:`probe_audio`
    reads it (audio uploaded into the database, checked at its upload and import and never
    changed, can always be played). A file is probed again only when its size, times, inode
    or mode changed since this process last probed it (``os.stat``), so checking a
    campaign's clips every few seconds costs one ``stat`` per clip. The memory is per
    process and only saves work: every process finds the same answers from the files
    themselves.
    """

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, ...], str | None]] = {}
        self._lock = threading.Lock()

    def problem(self, path: str) -> str | None:
        """Why the clip at ``path`` cannot be played now (None when it can)."""
        if is_stored(path):
            return None
        try:
            stat = os.stat(path)
        except OSError as exc:
            with self._lock:
                self._seen.pop(path, None)
            return "missing" if isinstance(exc, FileNotFoundError) else (exc.strerror or str(exc))
        signature = (stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_mode)
        with self._lock:
            seen = self._seen.get(path)
        if seen is not None and seen[0] == signature:
            return seen[1]
        try:
            probe_audio(path)
            found: str | None = None
        except UnreadableAudio as exc:
            found = str(exc)
        with self._lock:
            self._seen[path] = (signature, found)
        return found
