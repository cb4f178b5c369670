"""The one form every clip is served in: an MP3 of its excerpt, encoded once and cached.

Every clip a volunteer hears, a pool pair's or a hidden trial's, is decoded from the
collection's file, cut (:mod:`mtcjudge.clips.cut`), brought to 44.1 kHz stereo, given 10 ms
fades at its ends, and encoded as constant-bitrate MP3 at 128 kbit/s. So nothing in a
response tells one clip from another but its sound: not the format, not the rate, not the
size class (a constant bitrate makes the size follow the length), not the URL
(docs/audio.md). MP3 because every browser decodes it (docs/decisions.md).

A reference trial's candidate is another excerpt of the query's recording
(:func:`~mtcjudge.clips.cut.other_window`), or, when the file has no other stretch, the clip
**rotated** (it starts :data:`ROTATE_FRACTION` of the way in and wraps round, with a short
cross-fade at the seam); either way it has the clip's length.

A rendition is named by a hash of what it is made from (the file's content hash, the
stretch, the variant, the encoder), written once into this machine's cache directory
(atomically: several processes may write the same one) and never changed: derived data
that every machine can make again, nothing shared through files.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
import soundfile
from numpy.typing import NDArray
from scipy.signal import resample_poly

from mtcjudge.clips.cut import Window, other_window
from mtcjudge.clips.decode import SourceInfo, UnreadableAudio, inspect, read_window

__all__ = [
    "BITRATE",
    "ENCODER",
    "RATE",
    "SERVED_MIME",
    "ClipSource",
    "clip_source",
    "render",
    "rendition",
    "rendition_key",
    "rotated",
    "served_bytes_estimate",
    "write_atomically",
]

log = logging.getLogger(__name__)

FloatArray = NDArray[np.float32]

SERVED_MIME = "audio/mpeg"
RATE = 44_100
BITRATE = 128_000
#: libsndfile's compression level that gives LAME's 128 kbit/s at a constant bitrate
_COMPRESSION_LEVEL = 0.65
#: names the encoding in every rendition's key: a change of encoder or settings makes new files
ENCODER = f"mp3-cbr{BITRATE // 1000}-{RATE}-2ch-libsndfile{soundfile.__libsndfile_version__}"
#: where a rotated clip starts
ROTATE_FRACTION = 0.4
#: the fades at a clip's ends and either side of a rotated clip's seam
FADE_SECONDS = 0.01
VARIANTS = ("clip", "other")


@dataclass(frozen=True)
class ClipSource:
    """What a rendition is made from: the file, its content hash and length, and the stretch
    of it that is the clip."""

    path: str
    sha256: str
    source_seconds: float
    window: Window


def clip_source(
    audio_path: str,
    sha256: str | None,
    excerpt_start: float | None,
    duration_seconds: float | None,
    source_seconds: float | None,
) -> ClipSource:
    """A stored document's clip. Documents imported before clips were analysed have no
    content hash: they are named by their path, size and modification time and played whole.

    Raises
    ------
    UnreadableAudio
        When such a file cannot be read (any more).
    """
    if sha256 is not None and duration_seconds is not None:
        window = Window(excerpt_start or 0.0, duration_seconds)
        return ClipSource(audio_path, sha256, source_seconds or duration_seconds, window)
    try:
        stat = os.stat(audio_path)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    seconds = inspect(audio_path).seconds
    name = f"file:{audio_path}:{stat.st_size}:{stat.st_mtime_ns}"
    return ClipSource(audio_path, name, seconds, Window(0.0, seconds))


def rendition_key(clip: ClipSource, variant: str = "clip") -> str:
    """The name of a clip's rendition (hex SHA-256): the same inputs give the same name on
    every machine."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    text = f"{clip.sha256}|{clip.window.start:.3f}|{clip.window.seconds:.3f}|{variant}|{ENCODER}"
    return hashlib.sha256(text.encode()).hexdigest()


def cache_directory() -> Path:
    """This machine's rendition cache (``MTCJUDGE_CLIP_CACHE``, else the temporary
    directory's ``mtcjudge-clips``)."""
    configured = os.environ.get("MTCJUDGE_CLIP_CACHE")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "mtcjudge-clips"


def rendition_file(clip: ClipSource, variant: str = "clip") -> Path:
    """Where this machine keeps a clip's rendition (made or not)."""
    key = rendition_key(clip, variant)
    return cache_directory() / key[:2] / f"{key}.mp3"


def rendition(clip: ClipSource, variant: str = "clip") -> Path:
    """The file of a clip's rendition, made now if this machine has not made it yet.

    Raises
    ------
    UnreadableAudio
        When the collection's file cannot be decoded (any more).
    """
    target = rendition_file(clip, variant)
    if target.is_file():
        return target
    write_atomically(target, render(clip, variant))
    return target


def write_atomically(target: Path, data: bytes) -> None:
    """Write ``data`` at ``target`` whole or not at all: into a scratch file of the same
    directory, then renamed (several processes may write the same file; none reads half)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(scratch, target)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def render(clip: ClipSource, variant: str = "clip") -> bytes:
    """The MP3 bytes of a clip (``variant="clip"``) or of a reference trial's candidate made
    from it (``"other"``)."""
    source = inspect(clip.path)
    window = clip.window
    rotate = False
    if variant == "other":
        other = other_window(window, source.seconds)
        rotate = other is None
        window = other or window
    samples = _stereo(_resampled(read_window(source, window.start, window.seconds), source))
    if rotate:
        samples = rotated(samples, int(FADE_SECONDS * RATE))
    _fade_ends(samples)
    out = io.BytesIO()
    soundfile.write(
        out,
        samples,
        RATE,
        format="MP3",
        subtype="MPEG_LAYER_III",
        bitrate_mode="CONSTANT",
        compression_level=_COMPRESSION_LEVEL,
    )
    return out.getvalue()


def served_bytes_estimate(seconds: float) -> int:
    """About how many bytes a rendition of ``seconds`` has: the constant bitrate's (the
    encoder adds a frame of header and pads the last frame)."""
    return int(seconds * BITRATE / 8)


def _resampled(samples: FloatArray, source: SourceInfo) -> FloatArray:
    if source.sample_rate == RATE or samples.shape[0] == 0:
        return samples
    common = gcd(RATE, source.sample_rate)
    out = resample_poly(samples, RATE // common, source.sample_rate // common, axis=0)
    return np.asarray(out, dtype=np.float32)


def _stereo(samples: FloatArray) -> FloatArray:
    """Two channels: mono doubled; more than two mixed down, odd channels left, even right."""
    channels = samples.shape[1]
    if channels == 2:
        return np.ascontiguousarray(samples)
    if channels == 1:
        return np.ascontiguousarray(np.repeat(samples, 2, axis=1))
    left = samples[:, 0::2].mean(axis=1)
    right = samples[:, 1::2].mean(axis=1)
    return np.ascontiguousarray(np.column_stack([left, right]), dtype=np.float32)


def _fade(n: int) -> FloatArray:
    return np.linspace(0.0, 1.0, n, endpoint=False, dtype=np.float32)[:, None]


def _fade_ends(samples: FloatArray) -> None:
    n = min(int(FADE_SECONDS * RATE), samples.shape[0] // 2)
    if n > 0:
        samples[:n] *= _fade(n)
        samples[-n:] *= _fade(n)[::-1]


def rotated(samples: FloatArray, fade: int = 0) -> FloatArray:
    """The clip starting :data:`ROTATE_FRACTION` in and wrapping round, faded for ``fade``
    frames either side of the seam."""
    n = samples.shape[0]
    start = int(n * ROTATE_FRACTION)
    if n < 4 or start == 0:
        return samples
    out = np.concatenate([samples[start:], samples[:start]])
    seam = n - start
    fade = max(1, min(fade, seam // 2, start // 2))
    out[seam - fade : seam] *= _fade(fade)[::-1]
    out[seam : seam + fade] *= _fade(fade)
    return out


def safe_rendition(clip: ClipSource, variant: str = "clip") -> Path | None:
    """:func:`rendition`, or None (logged) when the file cannot be decoded or written."""
    try:
        return rendition(clip, variant)
    except (UnreadableAudio, OSError, soundfile.LibsndfileError):
        log.warning("could not make the %s rendition of %s", variant, clip.path, exc_info=True)
        return None
