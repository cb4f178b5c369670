"""Open and decode a music file: WAV, FLAC, Ogg (Vorbis, Opus, FLAC) and MP3.

The decoder is libsndfile through ``soundfile`` (docs/decisions.md, "One decoder"): its wheels
carry the library, so nothing is installed on the system. M4A/AAC is not among its formats;
such files are reported as unusable with a way out (convert them), never guessed at.

:func:`inspect` reads a file's header; :func:`read_window` decodes a stretch of it, checking
that the frames the header promises are really there (a truncated MP3 declares more than it
holds). Errors are :class:`UnreadableAudio`, whose message an organizer reads in a report.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile
from numpy.typing import NDArray

__all__ = [
    "AUDIO_TYPES",
    "MAX_CHANNELS",
    "MAX_SAMPLE_RATE",
    "NOT_DECODED_TYPES",
    "SourceInfo",
    "UnreadableAudio",
    "inspect",
    "read_window",
    "verify",
]

FloatArray = NDArray[np.float32]

#: extension -> MIME type of the files a collection may hand in, in order of preference when
#: one document has several files
AUDIO_TYPES = {
    "wav": "audio/wav",
    "flac": "audio/flac",
    "ogg": "audio/ogg",
    "oga": "audio/ogg",
    "opus": "audio/ogg",
    "mp3": "audio/mpeg",
}
#: what libsndfile calls each extension's container
_CONTAINERS = {
    "wav": ("WAV", "WAVEX", "RF64", "W64"),
    "flac": ("FLAC",),
    "ogg": ("OGG",),
    "oga": ("OGG",),
    "opus": ("OGG",),
    "mp3": ("MP3",),
}
#: how a report names each extension's format ("not <what>")
_WHAT = {
    "wav": "a WAV file",
    "flac": "a FLAC file",
    "ogg": "an Ogg Vorbis, Opus or FLAC file",
    "oga": "an Ogg Vorbis, Opus or FLAC file",
    "opus": "an Ogg Opus file",
    "mp3": "an MP3 file",
}
#: formats people have that this decoder cannot read, with the way out
_NOT_DECODED = {
    "m4a": "M4A/AAC cannot be decoded here: convert it to FLAC, MP3 or Ogg",
    "aac": "AAC cannot be decoded here: convert it to FLAC, MP3 or Ogg",
    "mp4": "MP4 cannot be decoded here: convert its audio to FLAC, MP3 or Ogg",
    "wma": "WMA cannot be decoded here: convert it to FLAC, MP3 or Ogg",
    "aif": "AIFF is not accepted: convert it to WAV or FLAC",
    "aiff": "AIFF is not accepted: convert it to WAV or FLAC",
}
#: their extensions: a document's file of one of them is reported with the way out, not missed
NOT_DECODED_TYPES = tuple(_NOT_DECODED)
#: beyond these the file is refused (no music collection needs more; a damaged header can
#: declare anything)
MAX_SAMPLE_RATE = 384_000
MAX_CHANNELS = 32
#: libsndfile's frame count of a file whose header does not record its length
_UNKNOWN_FRAMES = 1 << 62
#: a decoded stretch may fall this far short of what the header declares (encoder padding)
_SHORT_TOLERANCE_SECONDS = 0.25


class UnreadableAudio(ValueError):
    """The file cannot be used; the message says why, in words an organizer understands."""


@dataclass(frozen=True)
class SourceInfo:
    """What a file's header says: format, rate, channels and length."""

    path: Path
    extension: str
    mime: str
    container: str
    sample_rate: int
    channels: int
    frames: int

    @property
    def seconds(self) -> float:
        return self.frames / self.sample_rate


def extension_problem(name: str) -> str | None:
    """Why a file of this name is not accepted (None when its extension is)."""
    ext = name.rpartition(".")[2].lower() if "." in name else ""
    if ext in AUDIO_TYPES:
        return None
    if ext in _NOT_DECODED:
        return _NOT_DECODED[ext]
    accepted = ", ".join(sorted({e for e in AUDIO_TYPES if e not in ("oga",)}))
    return f"unsupported extension .{ext} (accepted: {accepted})" if ext else "no extension"


def inspect(path: str | os.PathLike[str]) -> SourceInfo:
    """Read the header of the file at ``path`` as the format its extension names.

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    file = Path(path)
    problem = extension_problem(file.name)
    if problem is not None:
        raise UnreadableAudio(problem)
    ext = file.suffix[1:].lower()
    try:
        if file.stat().st_size == 0:
            raise UnreadableAudio("empty file")
        info = soundfile.info(str(file))
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise UnreadableAudio(f"not readable as {_WHAT[ext]} ({_reason(exc)})") from exc
    if info.format not in _CONTAINERS[ext]:
        raise UnreadableAudio(f"not {_WHAT[ext]} (it holds {info.format_info or info.format})")
    if not 0 < info.samplerate <= MAX_SAMPLE_RATE:
        raise UnreadableAudio(f"sample rate {info.samplerate} Hz is not usable")
    if not 0 < info.channels <= MAX_CHANNELS:
        raise UnreadableAudio(f"{info.channels} channels is not usable")
    frames = info.frames
    if frames >= _UNKNOWN_FRAMES:  # the header does not record the length: count them
        frames = _count_frames(file)
    if frames <= 0:
        raise UnreadableAudio("the file holds no audio frames")
    return SourceInfo(
        file, ext, AUDIO_TYPES[ext], info.format, info.samplerate, info.channels, frames
    )


def _count_frames(file: Path) -> int:
    """The frames of a file whose header does not say, counted by decoding it."""
    frames = 0
    try:
        with soundfile.SoundFile(str(file)) as handle:
            for block in handle.blocks(blocksize=1 << 16, dtype="float32"):
                frames += len(block)
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise UnreadableAudio(f"cannot be decoded ({_reason(exc)})") from exc
    return frames


def verify(path: str | os.PathLike[str]) -> SourceInfo:
    """Read the header of the file at ``path`` and decode all of it, block by block (an
    upload's check: the whole file must be there, whatever stretch a campaign will cut).

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    source = inspect(path)
    got = 0
    try:
        with soundfile.SoundFile(str(source.path)) as handle:
            # read() rather than blocks(), which pads to the frames the header declares
            while len(block := handle.read(1 << 16, dtype="float32", always_2d=True)):
                if not np.all(np.isfinite(block)):
                    raise UnreadableAudio("damaged: it decodes to samples that are not numbers")
                got += len(block)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise UnreadableAudio(f"cannot be decoded ({_reason(exc)})") from exc
    if source.frames - got > _SHORT_TOLERANCE_SECONDS * source.sample_rate:
        raise UnreadableAudio(
            f"truncated or damaged: it decodes to {got / source.sample_rate:.1f} s of the "
            f"{source.seconds:.1f} s its header declares"
        )
    return source


def read_window(source: SourceInfo, start: float, seconds: float) -> FloatArray:
    """Decode ``seconds`` of ``source`` from ``start`` (both in seconds), all channels,
    float32 of shape (frames, channels).

    Raises
    ------
    UnreadableAudio
        When the file cannot be decoded, or holds clearly less than its header declares there.
    """
    rate = source.sample_rate
    first = max(0, round(start * rate))
    wanted = max(0, min(source.frames - first, round(seconds * rate)))
    try:
        with soundfile.SoundFile(str(source.path)) as handle:
            if first:
                try:
                    handle.seek(first)
                except (RuntimeError, soundfile.LibsndfileError) as exc:
                    # libsndfile's reason ("Internal psf_fseek() failed.") tells an organizer
                    # nothing: the stretch is not in the file
                    raise UnreadableAudio(
                        f"truncated or damaged: it cannot be read from {first / rate:.1f} s of "
                        f"the {source.seconds:.1f} s its header declares"
                    ) from exc
            data = handle.read(wanted, dtype="float32", always_2d=True)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    except (RuntimeError, soundfile.LibsndfileError) as exc:
        raise UnreadableAudio(f"cannot be decoded ({_reason(exc)})") from exc
    got = data.shape[0]
    if wanted - got > _SHORT_TOLERANCE_SECONDS * rate:
        raise UnreadableAudio(
            f"truncated or damaged: it decodes to {(first + got) / rate:.1f} s of the "
            f"{source.seconds:.1f} s its header declares"
        )
    if not np.all(np.isfinite(data)):
        raise UnreadableAudio("damaged: it decodes to samples that are not numbers")
    return np.asarray(data, dtype=np.float32)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    # libsndfile prefixes the path; the report names the file already
    text = text.rpartition(": ")[2] if ": " in text else (text or type(exc).__name__)
    if "does not exist or is not a regular file" in text:
        # what libsndfile says of an existing file none of its MP3 readers recognises
        return "Format not recognised."
    return text
