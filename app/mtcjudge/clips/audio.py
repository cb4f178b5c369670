"""Find the clip of each document in an audio directory and check that it can be played.

One file per document, named ``<doc_id>.<ext>`` with ``ext`` one of wav, flac, ogg, mp3 (any
case), directly in the directory. "Readable" means that mutagen (the audio-metadata library)
opens the file as the format its extension promises and finds its audio stream; the duration
is the stream's where the format records it. Nothing is decoded: a browser plays the file,
this only catches empty, truncated or misnamed files before an assessor meets them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import mutagen
from mutagen.flac import FLAC
from mutagen.mp3 import MP3
from mutagen.oggflac import OggFLAC
from mutagen.oggopus import OggOpus
from mutagen.oggvorbis import OggVorbis
from mutagen.wave import WAVE

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
class _Format:
    mime: str
    what: str  # as an organizer reads it in a report: "not <what>"
    kinds: tuple[type[mutagen.FileType], ...]  # what mutagen may open a file of it as
    # a WAV data chunk always has a size, so a length of 0 means no audio; FLAC and Ogg
    # streams may leave their length unrecorded (0)
    zero_length_is_empty: bool = False


_FORMATS = {
    "wav": _Format("audio/wav", "a WAV file", (WAVE,), zero_length_is_empty=True),
    "flac": _Format("audio/flac", "a FLAC file", (FLAC,)),
    "ogg": _Format("audio/ogg", "an Ogg Vorbis, Opus or FLAC file", (OggVorbis, OggOpus, OggFLAC)),
    "mp3": _Format("audio/mpeg", "an MP3 file", (MP3,)),
}
#: extension -> MIME type, in order of preference when one document has several files
AUDIO_TYPES = {ext: audio_format.mime for ext, audio_format in _FORMATS.items()}
#: WAV encodings browsers play: PCM, IEEE float, WAVE_FORMAT_EXTENSIBLE
_PLAYABLE_WAV_ENCODINGS = (1, 3, 0xFFFE)


@dataclass(frozen=True)
class AudioFile:
    """A playable clip: where it is, its MIME type and its duration when the header tells."""

    path: Path
    mime: str
    duration_seconds: float | None


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


class UnreadableAudio(ValueError):
    """The file cannot be used; the message says why, in words an organizer understands."""


def scan_audio(directory: str | os.PathLike[str], doc_ids: Iterable[str]) -> AudioScan:
    """Match documents to the audio files of ``directory`` and check each file's header.

    When a document has several files (``a.wav`` and ``a.mp3``), the first readable one in
    the order wav, flac, ogg, mp3 is used and a note says which files were passed over.

    Parameters
    ----------
    directory : str or os.PathLike
        Directory holding ``<doc_id>.<ext>`` files (subdirectories are not searched).
    doc_ids : iterable of str
        The documents that need a clip.

    Returns
    -------
    AudioScan

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
    wanted_set = set(wanted)
    preference = {ext: i for i, ext in enumerate(AUDIO_TYPES)}
    candidates: dict[str, list[Path]] = {}
    with os.scandir(root) as entries:
        for entry in entries:
            stem, dot, ext = entry.name.rpartition(".")
            if dot and ext.lower() in AUDIO_TYPES and stem in wanted_set and entry.is_file():
                candidates.setdefault(stem, []).append(Path(entry.path).resolve())
    found: dict[str, AudioFile] = {}
    missing: list[str] = []
    unreadable: list[tuple[str, str]] = []
    notes: list[str] = []
    for doc in wanted:
        paths = sorted(
            candidates.get(doc, []), key=lambda p: (preference[p.suffix[1:].lower()], p.name)
        )
        if not paths:
            missing.append(doc)
            continue
        failures: list[str] = []
        for path in paths:
            try:
                found[doc] = probe_audio(path)
            except UnreadableAudio as exc:
                failures.append(f"{path.name}: {exc}")
                continue
            break
        if doc not in found:
            unreadable.append((doc, "; ".join(failures)))
        elif len(paths) > 1:
            used = found[doc].path.name
            others = ", ".join(p.name for p in paths if p.name != used)
            why = f" ({'; '.join(failures)})" if failures else ""
            notes.append(f"{doc}: using {used}, not {others}{why}")
    return AudioScan(found, missing, unreadable, notes)


def probe_audio(path: str | os.PathLike[str]) -> AudioFile:
    """Open one clip as the format its extension names and read its duration.

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    file = Path(path)
    ext = file.suffix[1:].lower()
    audio_format = _FORMATS.get(ext)
    if audio_format is None:
        raise UnreadableAudio(f"unsupported extension .{ext} (expected {', '.join(AUDIO_TYPES)})")
    try:
        if file.stat().st_size == 0:
            raise UnreadableAudio("empty file")
        with file.open("rb") as handle:
            duration = _duration(handle, audio_format)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    return AudioFile(file, audio_format.mime, duration)


def _duration(handle: BinaryIO, audio_format: _Format) -> float | None:
    """The clip's duration in seconds (None when its header does not record it)."""
    try:
        audio = mutagen.File(handle, options=audio_format.kinds)
    except Exception as exc:  # a damaged file can trip any error in a parser, not only its own
        reason = str(exc) or type(exc).__name__
        raise UnreadableAudio(f"not readable as {audio_format.what} ({reason})") from exc
    if audio is None:
        raise UnreadableAudio(f"not {audio_format.what}")
    encoding = getattr(audio.info, "audio_format", None)
    if isinstance(audio, WAVE) and encoding not in _PLAYABLE_WAV_ENCODINGS:
        raise UnreadableAudio(f"unsupported WAV encoding (format tag {encoding})")
    length = float(audio.info.length)
    if length > 0:
        return length
    if audio_format.zero_length_is_empty:
        raise UnreadableAudio("the file holds no audio frames")
    return None


class ClipWatch:
    """Whether stored clips can still be played: the file exists and :func:`probe_audio`
    reads it. A file is probed again only when its size, times, inode or mode changed
    since this process last probed it (``os.stat``), so checking a campaign's clips every
    few seconds costs one ``stat`` per clip. The memory is per process and only saves
    work: every process finds the same answers from the files themselves.
    """

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, ...], str | None]] = {}
        self._lock = threading.Lock()

    def problem(self, path: str) -> str | None:
        """Why the clip at ``path`` cannot be played now (None when it can)."""
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
