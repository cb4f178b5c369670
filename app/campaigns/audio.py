"""Find the clip of each document in an audio directory and check that it can be played.

One file per document, named ``<doc_id>.<ext>`` with ``ext`` one of wav, flac, ogg, mp3 (any
case), directly in the directory. "Readable" means the file opens and its header is what its
extension promises; the duration is read from the header where the format keeps it. Nothing
is decoded: a browser plays the file, this only catches empty, truncated or misnamed files
before an assessor meets them.
"""

from __future__ import annotations

import os
import struct
import wave
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "AUDIO_TYPES",
    "AudioFile",
    "AudioScan",
    "UnreadableAudio",
    "probe_audio",
    "scan_audio",
]

#: extension -> MIME type, in order of preference when one document has several files
AUDIO_TYPES = {"wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg", "mp3": "audio/mpeg"}

_OGG_TAIL = 65_536 + 27 + 255  # an Ogg page is at most 65,307 bytes
_MP3_PADDING_SCAN = 4096  # zero bytes some taggers leave between the ID3 tag and the audio


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
    """Check the header of one clip, chosen by its extension, and read its duration.

    Raises
    ------
    UnreadableAudio
        With the reason when the file cannot be used.
    """
    file = Path(path)
    ext = file.suffix[1:].lower()
    if ext not in AUDIO_TYPES:
        raise UnreadableAudio(f"unsupported extension .{ext} (expected {', '.join(AUDIO_TYPES)})")
    try:
        size = file.stat().st_size
        if size == 0:
            raise UnreadableAudio("empty file")
        with file.open("rb") as handle:
            duration = _PROBES[ext](handle, size)
    except OSError as exc:
        raise UnreadableAudio(f"cannot open: {exc.strerror or exc}") from exc
    return AudioFile(file, AUDIO_TYPES[ext], duration)


# ---------------------------------------------------------------- WAV
def _probe_wav(handle: BinaryIO, size: int) -> float | None:  # noqa: ARG001
    head = handle.read(12)
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        raise UnreadableAudio("not a WAV file (no RIFF/WAVE header)")
    handle.seek(0)
    try:
        with wave.open(handle, "rb") as wav:
            frames, rate = wav.getnframes(), wav.getframerate()
    except wave.Error:
        # The wave module reads only integer PCM; float and WAVE_FORMAT_EXTENSIBLE files
        # (24-bit exports) play in every browser, so read their chunks by hand.
        handle.seek(0)
        return _riff_duration(handle)
    except EOFError as exc:
        raise UnreadableAudio("truncated WAV header") from exc
    if rate <= 0:
        raise UnreadableAudio("WAV header gives a sample rate of 0")
    if frames == 0:
        raise UnreadableAudio("WAV file holds no audio frames")
    return frames / rate


def _riff_duration(handle: BinaryIO) -> float:
    handle.seek(12)
    byte_rate = 0
    while True:
        header = handle.read(8)
        if len(header) < 8:
            raise UnreadableAudio("WAV file has no fmt and data chunks")
        chunk_id, chunk_size = header[:4], struct.unpack("<I", header[4:])[0]
        if chunk_id == b"fmt ":
            fmt = handle.read(chunk_size)
            if len(fmt) < 16:
                raise UnreadableAudio("truncated WAV fmt chunk")
            format_tag, _channels, _rate, byte_rate = struct.unpack("<HHII", fmt[:12])
            if format_tag not in (1, 3, 0xFFFE):
                raise UnreadableAudio(f"unsupported WAV encoding (format tag {format_tag})")
            if chunk_size % 2:
                handle.read(1)
        elif chunk_id == b"data":
            if byte_rate <= 0:
                raise UnreadableAudio("WAV data chunk before a valid fmt chunk")
            if chunk_size == 0:
                raise UnreadableAudio("WAV file holds no audio frames")
            return float(chunk_size / byte_rate)
        else:
            handle.seek(chunk_size + chunk_size % 2, os.SEEK_CUR)


# ---------------------------------------------------------------- FLAC
def _id3v2_size(head: bytes) -> int:
    """Bytes taken by an ID3v2 tag at the start of ``head`` (0 when there is none)."""
    if len(head) < 10 or head[:3] != b"ID3" or any(b & 0x80 for b in head[6:10]):
        return 0
    body = (head[6] << 21) | (head[7] << 14) | (head[8] << 7) | head[9]
    footer = 10 if head[5] & 0x10 else 0
    return 10 + body + footer


def _streaminfo(block: bytes) -> tuple[int, int]:
    """(sample rate, total samples) from the 34 bytes of a FLAC STREAMINFO block."""
    packed = int.from_bytes(block[10:18], "big")
    return packed >> 44, packed & ((1 << 36) - 1)


def _probe_flac(handle: BinaryIO, size: int) -> float | None:  # noqa: ARG001
    offset = _id3v2_size(handle.read(10))
    handle.seek(offset)
    head = handle.read(4 + 4 + 34)
    if head[:4] != b"fLaC":
        raise UnreadableAudio("not a FLAC file (no fLaC marker)")
    if len(head) < 8 or head[4] & 0x7F != 0:
        raise UnreadableAudio("FLAC file does not start with a STREAMINFO block")
    if int.from_bytes(head[5:8], "big") < 34 or len(head) < 42:
        raise UnreadableAudio("truncated FLAC STREAMINFO block")
    rate, total = _streaminfo(head[8:42])
    if rate == 0:
        raise UnreadableAudio("FLAC STREAMINFO gives a sample rate of 0")
    return total / rate if total else None


# ---------------------------------------------------------------- Ogg
def _probe_ogg(handle: BinaryIO, size: int) -> float | None:
    page = handle.read(27 + 255)
    if page[:4] != b"OggS":
        raise UnreadableAudio("not an Ogg file (no OggS page)")
    if len(page) < 27 or page[4] != 0:
        raise UnreadableAudio("truncated or unknown Ogg page header")
    serial = page[14:18]
    segments = page[26]
    body_start = 27 + segments
    if len(page) < body_start:
        raise UnreadableAudio("truncated Ogg page header")
    packet_length = sum(page[27:body_start])
    handle.seek(body_start)
    packet = handle.read(min(packet_length, 64))
    rate: int
    pre_skip: int
    if packet.startswith(b"\x01vorbis") and len(packet) >= 16:
        rate, pre_skip = struct.unpack("<I", packet[12:16])[0], 0
    elif packet.startswith(b"OpusHead") and len(packet) >= 12:
        rate, pre_skip = 48_000, struct.unpack("<H", packet[10:12])[0]  # Opus granules: 48 kHz
    elif packet.startswith(b"\x7fFLAC") and len(packet) >= 51 and packet[9:13] == b"fLaC":
        rate, pre_skip = _streaminfo(packet[17:51])[0], 0
    else:
        raise UnreadableAudio("Ogg stream is not Vorbis, Opus or FLAC audio")
    if rate == 0:
        raise UnreadableAudio("Ogg audio header gives a sample rate of 0")
    granule = _last_granule(handle, size, serial)
    if granule is None or granule <= pre_skip:
        return None
    return (granule - pre_skip) / rate


def _last_granule(handle: BinaryIO, size: int, serial: bytes) -> int | None:
    start = max(0, size - _OGG_TAIL)
    handle.seek(start)
    tail = handle.read()
    at = len(tail)
    while (at := tail.rfind(b"OggS", 0, at)) >= 0:
        header = tail[at : at + 27]
        if len(header) == 27 and header[4] == 0 and header[14:18] == serial:
            granule: int = struct.unpack("<q", header[6:14])[0]
            if granule >= 0:  # -1: no packet ends on this page
                return granule
    return None


# ---------------------------------------------------------------- MP3
_MP3_BITRATES = {  # kbit/s by (MPEG-1?, layer) and bitrate index 1..14
    (True, 1): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (True, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (True, 3): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (False, 1): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (False, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
    (False, 3): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
_MP3_RATES = {3: (44_100, 48_000, 32_000), 2: (22_050, 24_000, 16_000), 0: (11_025, 12_000, 8_000)}


@dataclass(frozen=True)
class _MpegFrame:
    mpeg1: bool
    layer: int
    bitrate: int  # bit/s
    sample_rate: int
    mono: bool

    @property
    def samples(self) -> int:
        if self.layer == 1:
            return 384
        return 1152 if self.mpeg1 or self.layer == 2 else 576


def _mpeg_frame(header: bytes) -> _MpegFrame | None:
    if len(header) < 4 or header[0] != 0xFF or header[1] & 0xE0 != 0xE0:
        return None
    version, layer_bits = (header[1] >> 3) & 3, (header[1] >> 1) & 3
    bitrate_index, rate_index = header[2] >> 4, (header[2] >> 2) & 3
    if version == 1 or layer_bits == 0 or bitrate_index in (0, 15) or rate_index == 3:
        return None  # reserved values, or "free" bitrate whose frames cannot be measured
    mpeg1, layer = version == 3, 4 - layer_bits
    return _MpegFrame(
        mpeg1=mpeg1,
        layer=layer,
        bitrate=_MP3_BITRATES[(mpeg1, layer)][bitrate_index - 1] * 1000,
        sample_rate=_MP3_RATES[version][rate_index],
        mono=(header[3] >> 6) == 3,
    )


def _probe_mp3(handle: BinaryIO, size: int) -> float | None:
    head = handle.read(10)
    offset = _id3v2_size(head)
    has_tag = offset > 0 or head[:3] == b"ID3"
    handle.seek(offset)
    window = handle.read(_MP3_PADDING_SCAN + 4 if has_tag else 4)
    if has_tag:
        skipped = len(window) - len(window.lstrip(b"\x00"))
        offset += skipped
        window = window[skipped:]
    frame = _mpeg_frame(window)
    if frame is None:
        if has_tag:
            return None  # tagged, but the audio starts where we do not look: let it play
        raise UnreadableAudio("not an MP3 file (no ID3 tag or MPEG frame sync)")
    handle.seek(offset)
    first = handle.read(4 + 32 + 16)
    if frame.layer == 3:
        side_info = (32 if not frame.mono else 17) if frame.mpeg1 else (17 if not frame.mono else 9)
        xing = first[4 + side_info : 4 + side_info + 12]
        if xing[:4] in (b"Xing", b"Info") and len(xing) == 12:
            flags, frames = struct.unpack(">II", xing[4:12])
            if flags & 1 and frames:
                return float(frames * frame.samples / frame.sample_rate)
    # constant bitrate: the audio bytes (without an ID3v1 tag at the end) over the bitrate
    handle.seek(max(0, size - 128))
    audio_bytes = size - offset - (128 if handle.read(3) == b"TAG" else 0)
    return max(audio_bytes, 0) * 8 / frame.bitrate


_PROBES: dict[str, Callable[[BinaryIO, int], float | None]] = {
    "wav": _probe_wav,
    "flac": _probe_flac,
    "ogg": _probe_ogg,
    "mp3": _probe_mp3,
}
