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

from mtcjudge.clips.cut import Cut, Window, other_window
from mtcjudge.clips.decode import FloatArray, SourceInfo, UnreadableAudio, inspect, read_window
from mtcjudge.clips.loudness import PEAK_BINS, integrated_loudness, waveform_peaks
from mtcjudge.clips.rendition import rotated

__all__ = ["ClipAnalysis", "Sound", "analyse", "file_sha256", "measure", "pack_peaks"]

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Sound:
    """A clip's integrated loudness (None: silent, or too short to measure) and its
    :data:`PEAK_BINS` waveform peaks, one byte each (255 = full scale)."""

    loudness_lufs: float | None
    peaks: bytes


def measure(samples: FloatArray, rate: int) -> Sound:
    """What decoded samples sound like: loudness (LUFS, to 0.01) and packed peaks."""
    loudness = integrated_loudness(samples, rate)
    return Sound(
        None if loudness is None else round(float(loudness), 2),
        pack_peaks(waveform_peaks(samples, PEAK_BINS)),
    )


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
    sound : Sound
        What the clip sounds like.
    other : Sound or None
        What a reference trial's candidate made from the clip sounds like (another excerpt of
        the recording, :func:`mtcjudge.clips.rendition.render`); measured for query clips
        only, None for the others.
    """

    path: Path
    mime: str
    sha256: str
    sample_rate: int
    channels: int
    source_seconds: float
    window: Window
    sound: Sound
    other: Sound | None = None


def analyse(
    path: str | os.PathLike[str], cut: Cut, offset: float | None = None, *, query: bool = False
) -> ClipAnalysis:
    """Analyse the file at ``path`` for a campaign that cuts clips by ``cut`` (``offset``: the
    file's start from an offsets file); a ``query`` clip's reference-trial excerpt too.

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    source = inspect(path)
    try:
        window = cut.window(source.seconds, offset)
    except ValueError as exc:
        raise UnreadableAudio(str(exc)) from exc
    samples = read_window(source, window.start, window.seconds)
    window = Window(window.start, samples.shape[0] / source.sample_rate)
    other = _other_sound(source, window, samples) if query else None
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
        sound=measure(samples, source.sample_rate),
        other=other,
    )


def _other_sound(source: SourceInfo, window: Window, samples: FloatArray) -> Sound:
    """The sound of the reference-trial excerpt :func:`~mtcjudge.clips.rendition.render`
    makes of this clip: another stretch of the file, or the clip rotated."""
    other = other_window(window, source.seconds)
    if other is None:
        return measure(rotated(samples), source.sample_rate)
    return measure(read_window(source, other.start, other.seconds), source.sample_rate)


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pack_peaks(peaks: np.ndarray) -> bytes:
    """Peaks in [0, 1] as one byte each (255 = full scale)."""
    return bytes(np.clip(np.rint(np.asarray(peaks) * 255.0), 0, 255).astype(np.uint8))
