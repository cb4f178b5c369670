"""Real encoded audio files for tests, written with soundfile (libsndfile), and broken ones.

``write_clip`` encodes a short tone in the format its path's suffix names (or ``fmt``); the
others make what an upload can go wrong with: a truncated file, an empty one, text named as
audio, an MPEG-4 file libsndfile does not read, a two-hour file, a many-channel one.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import soundfile as sf  # type: ignore[import-untyped]

# suffix (or fmt) -> libsndfile's (format, subtype)
FORMATS: dict[str, tuple[str, str]] = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "ogg": ("OGG", "VORBIS"),
    "opus": ("OGG", "OPUS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
}
OPUS_RATE = 48_000
"""Opus files are always written at 48 kHz, whatever rate is asked for."""
MP3_FRAME = 1152
"""Samples in an MPEG-1 Layer III frame: how far an MP3's length may round."""


def write_clip(
    path: Path,
    seconds: float,
    *,
    rate: int = 44_100,
    channels: int = 2,
    fmt: str | None = None,
    frequency: float = 440.0,
    amplitude: float = 0.3,
    seed: int = 0,
) -> Path:
    """Encode a tone of ``seconds`` at ``path``, in the format of its suffix or of ``fmt``.

    A sine with its octave, a slow swell and a little noise, peaking near ``amplitude``; each
    ``seed`` moves the pitch up a semitone and draws other noise, so clips differ, and the same
    arguments give the same file. ``fmt`` (a key of FORMATS) overrides the suffix, to misname
    a file.
    """
    kind = (fmt or path.suffix.removeprefix(".")).lower()
    if kind not in FORMATS:
        raise ValueError(f"no writer for {kind!r}: one of {', '.join(FORMATS)}")
    container, subtype = FORMATS[kind]
    rate = OPUS_RATE if kind == "opus" else rate
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * rate))[:, np.newaxis] / rate
    pitch = frequency * 2 ** (seed / 12)
    phase = np.arange(channels)[np.newaxis, :] * 0.5  # the channels differ a little
    tone = (np.sin(2 * np.pi * pitch * t + phase) + 0.3 * np.sin(4 * np.pi * pitch * t)) / 1.3
    swell = 0.8 + 0.2 * np.sin(2 * np.pi * 0.5 * t)
    noise = 0.02 * rng.standard_normal((len(t), channels))
    samples = (amplitude * (tone * swell + noise)).astype(np.float32)
    sf.write(path, samples, rate, format=container, subtype=subtype)
    return path


def truncated(path: Path, keep_fraction: float = 0.3) -> Path:
    """Cut a file's bytes to their first ``keep_fraction``, in place (a broken upload)."""
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep_fraction)])
    return path


def zero_length(path: Path) -> Path:
    """An empty file."""
    path.write_bytes(b"")
    return path


def text_named(path: Path, text: str = "not audio") -> Path:
    """A text file under an audio file's name (``x.wav``)."""
    path.write_text(text, encoding="utf-8")
    return path


def fake_m4a(path: Path) -> Path:
    """The opening boxes of an MPEG-4 audio file (ftyp M4A, an empty mdat): no audio, and a
    container libsndfile does not read at all."""
    ftyp = b"ftyp" + b"M4A " + struct.pack(">I", 0) + b"M4A isom"
    mdat = b"mdat" + bytes(8)
    path.write_bytes(
        struct.pack(">I", 4 + len(ftyp)) + ftyp + struct.pack(">I", 4 + len(mdat)) + mdat
    )
    return path


def long_silence_flac(
    path: Path, seconds: float = 7200, *, rate: int = 8_000, channels: int = 1
) -> Path:
    """A long FLAC file of silence (two hours unless asked), written in blocks.

    At 8 kHz mono two hours take about half a second and 180 kB; 44.1 kHz takes ~3 s.
    """
    block = np.zeros((1 << 20, channels), dtype=np.int16)
    remaining = round(seconds * rate)
    with sf.SoundFile(
        path, "w", samplerate=rate, channels=channels, format="FLAC", subtype="PCM_16"
    ) as out:
        while remaining > 0:
            frames = min(remaining, len(block))
            out.write(block[:frames])
            remaining -= frames
    return path


def many_channels(path: Path, rate: int = 96_000, channels: int = 8, seconds: float = 2) -> Path:
    """A high-rate, many-channel clip (WAV or FLAC by the suffix)."""
    return write_clip(path, seconds, rate=rate, channels=channels)
