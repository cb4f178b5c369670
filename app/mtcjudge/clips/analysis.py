"""Analyse a collection's file once, at import: what the clip cut from it is and sounds like.

:func:`analyse` reads the header, decodes the clip's stretch (so a file that cannot be
decoded is reported now, not when a volunteer meets it), and measures it: duration, the
file's rate and channels, integrated loudness (ITU-R BS.1770) and waveform peaks, with the
file's content hash that names its renditions (:mod:`mtcjudge.clips.rendition`). The judging
page draws and levels from these numbers instead of measuring every clip it plays.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mtcjudge.clips.cut import Cut, Window
from mtcjudge.clips.decode import UnreadableAudio, inspect, read_window
from mtcjudge.clips.loudness import PEAK_BINS, integrated_loudness, waveform_peaks
from mtcjudge.errors import InvalidInput

__all__ = ["ClipAnalysis", "analyse", "file_sha256", "pack_peaks", "unpack_peaks"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ClipAnalysis:
    """One file, analysed: the clip cut from it and what it sounds like.

    Attributes
    ----------
    path : Path
    mime : str
        The file's MIME type (the served form is always MP3).
    sha256 : str
        The file's content hash.
    sample_rate, channels : int
        The file's.
    source_seconds : float
        The whole file's length.
    window : Window
        The stretch that is the clip; ``window.seconds`` is the clip's duration.
    loudness_lufs : float or None
        Integrated loudness of the clip (None: silent, or too short to measure).
    peaks : bytes
        :data:`PEAK_BINS` waveform peaks of the clip, 0-255 each (:func:`unpack_peaks`).
    """

    path: Path
    mime: str
    sha256: str
    sample_rate: int
    channels: int
    source_seconds: float
    window: Window
    loudness_lufs: float | None
    peaks: bytes


def analyse(path: str | os.PathLike[str], cut: Cut, offset: float | None = None) -> ClipAnalysis:
    """Analyse the file at ``path`` for a campaign that cuts clips by ``cut`` (``offset``: the
    file's start from an offsets file).

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    source = inspect(path)
    try:
        window = cut.window(source.seconds, offset)
    except InvalidInput as exc:
        raise UnreadableAudio(exc.message) from exc
    samples = read_window(source, window.start, window.seconds)
    window = Window(window.start, samples.shape[0] / source.sample_rate)
    loudness = integrated_loudness(samples, source.sample_rate)
    try:
        digest = file_sha256(source.path)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    return ClipAnalysis(
        path=source.path,
        mime=source.mime,
        sha256=digest,
        sample_rate=source.sample_rate,
        channels=source.channels,
        source_seconds=source.seconds,
        window=window,
        loudness_lufs=None if loudness is None else round(float(loudness), 2),
        peaks=pack_peaks(waveform_peaks(samples, PEAK_BINS)),
    )


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pack_peaks(peaks: np.ndarray) -> bytes:
    """Peaks in [0, 1] as one byte each (255 = full scale)."""
    return bytes(np.clip(np.rint(np.asarray(peaks) * 255.0), 0, 255).astype(np.uint8))


def unpack_peaks(packed: bytes | None) -> list[float] | None:
    """The peaks of :func:`pack_peaks`, in [0, 1], rounded to 3 decimals."""
    if not packed:
        return None
    return [round(b / 255.0, 3) for b in packed]
