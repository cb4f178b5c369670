"""Another excerpt of the query clip, for a reference trial's candidate.

A reference trial plays the query against itself (judging/trials.py). Served as the same file
twice, the judging page would draw two identical waveforms, and a volunteer who looks rather
than listens would spot the trial. The candidate of a reference trial is therefore served as
another excerpt of the same recording: the clip **rotated** (it starts
:data:`START_FRACTION` of the way in and wraps round to its beginning), with a short fade on
each side of the seam so that the join does not click. It has the same length, the same
duration and the same number of bytes as the clip, so the listening rule and the server's
byte evidence (docs/quality.md) read it exactly as they read any clip.

Only uncompressed PCM WAV can be rotated without a decoder; any other file (MP3, Ogg, FLAC)
is served as it is, and its reference trials keep the tell (docs/quality.md, "Known limit").
The excerpts are derived files, written once per clip into a cache directory of this
machine's temporary directory (atomically: several processes may write the same one), named
by the clip's path, size and modification time; nothing is shared through them.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FADE_SECONDS", "START_FRACTION", "another_excerpt", "cache_directory"]

log = logging.getLogger(__name__)

#: where the excerpt starts in the clip
START_FRACTION = 0.4
#: the fade out before the seam and the fade in after it
FADE_SECONDS = 0.03
_DTYPES = {1: np.uint8, 2: np.int16, 4: np.int32}


def cache_directory() -> Path:
    return Path(tempfile.gettempdir()) / "mtcjudge-excerpts"


def another_excerpt(path: Path) -> Path:
    """The rotated excerpt of the WAV clip at ``path``, or ``path`` itself when it cannot be
    made (not PCM WAV, unreadable, too short)."""
    if path.suffix.lower() not in (".wav", ".wave"):
        return path
    try:
        stat = path.stat()
        key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
        target = cache_directory() / (hashlib.sha256(key).hexdigest()[:32] + ".wav")
        if target.is_file():
            return target
        data = _rotated(path)
        if data is None:
            return path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(dir=target.parent, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(scratch, target)
        return target
    except (OSError, wave.Error, EOFError, ValueError):
        log.warning("could not make another excerpt of %s; serving the clip", path, exc_info=True)
        return path


def _rotated(path: Path) -> bytes | None:
    """The bytes of the rotated clip, header included, or None when it is not PCM WAV."""
    with wave.open(str(path), "rb") as clip:
        params = clip.getparams()
        frames = clip.readframes(params.nframes)
    dtype = _DTYPES.get(params.sampwidth)
    n = params.nframes
    if dtype is None or n < 4 or len(frames) != n * params.sampwidth * params.nchannels:
        return None
    samples = np.frombuffer(frames, dtype=dtype).reshape(n, params.nchannels)
    start = int(n * START_FRACTION)
    out = np.concatenate([samples[start:], samples[:start]]).astype(np.float64)
    fade = max(1, min(int(FADE_SECONDS * params.framerate), (n - start) // 2, start // 2))
    centre = 128.0 if dtype is np.uint8 else 0.0  # 8-bit WAV is unsigned around 128
    seam = n - start
    ramp = np.linspace(1.0, 0.0, fade, endpoint=False)[:, None]
    out[seam - fade : seam] = centre + (out[seam - fade : seam] - centre) * ramp
    out[seam : seam + fade] = centre + (out[seam : seam + fade] - centre) * ramp[::-1]
    info = np.iinfo(samples.dtype)
    rotated = np.clip(np.rint(out), info.min, info.max).astype(dtype)
    return _wav_bytes(params, rotated.tobytes())


def _wav_bytes(params: Any, frames: bytes) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as clip:
        clip.setparams(params)
        clip.writeframes(frames)
    return out.getvalue()
