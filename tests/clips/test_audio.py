"""Audio scan: one clip per document, headers checked, durations read where the header has them.

The clips are made here, byte by byte where the standard library has no writer, after each
format's specification: tiny, but what an encoder writes (mutagen reads them as real files).
"""

from __future__ import annotations

import struct
import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile

from mtcjudge.clips.audio import UnreadableAudio, probe_audio, scan_audio
from tests.audio_files import MP3_FRAME, write_clip


def write_wav(path: Path, seconds: float, rate: int = 8000) -> Path:
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(b"\x00\x00" * int(seconds * rate))
    return path


def riff_wav(fmt: bytes, data: bytes) -> bytes:
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data))
    body = b"WAVE" + chunks + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def float_wav(rate: int = 8000, frames: int = 4000) -> bytes:
    """IEEE-float WAV (format tag 3), which the wave module refuses but browsers play."""
    return riff_wav(struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32), b"\x00" * (frames * 4))


def extensible_wav(rate: int = 48_000, frames: int = 12_000) -> bytes:
    """24-bit stereo WAVE_FORMAT_EXTENSIBLE, as audio editors export it."""
    block = 2 * 3
    fmt = struct.pack("<HHIIHHHHI", 0xFFFE, 2, rate, rate * block, block, 24, 22, 24, 3)
    fmt += bytes.fromhex("0100000000001000800000aa00389b71")  # KSDATAFORMAT_SUBTYPE_PCM
    return riff_wav(fmt, b"\x00" * (frames * block))


def adpcm_wav(rate: int = 8000) -> bytes:
    """IMA ADPCM (format tag 0x11): a WAV browsers do not play."""
    return riff_wav(struct.pack("<HHIIHH", 0x11, 1, rate, rate // 2, 256, 4), b"\x00" * 1024)


def streaminfo(rate: int, total_samples: int) -> bytes:
    packed = (rate << 44) | (1 << 41) | (15 << 36) | total_samples  # stereo, 16 bit
    return struct.pack(">HH", 4096, 4096) + b"\x00" * 6 + packed.to_bytes(8, "big") + b"\x00" * 16


def flac(rate: int = 44_100, total_samples: int = 88_200) -> bytes:
    return b"fLaC" + bytes([0x80, 0, 0, 34]) + streaminfo(rate, total_samples) + b"\x00" * 32


def id3_tag(body_size: int = 20) -> bytes:
    size = bytes([(body_size >> s) & 0x7F for s in (21, 14, 7, 0)])
    return b"ID3\x03\x00\x00" + size + b"\x00" * body_size


def ogg_page(payload: bytes, granule: int, serial: int = 7, sequence: int = 0) -> bytes:
    lacing = [255] * (len(payload) // 255) + [len(payload) % 255]
    flags = 0x02 if sequence == 0 else 0x00  # beginning of stream
    header = b"OggS\x00" + bytes([flags]) + struct.pack("<qIII", granule, serial, sequence, 0)
    return header + bytes([len(lacing), *lacing]) + payload


def vorbis_ogg(rate: int = 44_100, samples: int = 132_300) -> bytes:
    identification = b"\x01vorbis" + struct.pack("<IBIiiiB", 0, 2, rate, 0, 0, 0, 0xB8) + b"\x01"
    comments = b"\x03vorbis" + struct.pack("<II", 0, 0) + b"\x01"  # no vendor, no comment
    return (
        ogg_page(identification, 0)
        + ogg_page(comments, 0, sequence=1)
        + ogg_page(b"\x00" * 300, samples // 2, sequence=2)
        + ogg_page(b"\x00" * 300, samples, sequence=3)
    )


def opus_ogg(pre_skip: int = 312, seconds: float = 1.5) -> bytes:
    head = b"OpusHead" + bytes([1, 2]) + struct.pack("<HIhB", pre_skip, 48_000, 0, 0)
    tags = b"OpusTags" + struct.pack("<II", 0, 0)
    return (
        ogg_page(head, 0)
        + ogg_page(tags, 0, sequence=1)
        + ogg_page(b"\x00" * 100, pre_skip + int(seconds * 48_000), sequence=2)
    )


MP3_128K_STEREO = bytes([0xFF, 0xFB, 0x90, 0x00])  # MPEG-1 Layer III, 128 kbit/s, 44.1 kHz
MP3_FRAME_BYTES = 144 * 128_000 // 44_100  # 417, without padding


def cbr_mp3(size: int = 16_000) -> bytes:
    """Constant-bitrate frames (silence) filling ``size`` bytes."""
    frame = MP3_128K_STEREO + bytes(MP3_FRAME_BYTES - 4)
    return (frame * (size // MP3_FRAME_BYTES + 1))[:size]


def xing_mp3(frames: int = 100) -> bytes:
    """A tagged VBR file: a first frame holding a Xing header with the frame count."""
    xing = b"Xing" + struct.pack(">II", 1, frames)
    first = (MP3_128K_STEREO + b"\x00" * 32 + xing).ljust(MP3_FRAME_BYTES, b"\x00")
    return id3_tag() + first + cbr_mp3(4 * MP3_FRAME_BYTES)


def test_wav_duration_from_frames_and_rate(tmp_path: Path) -> None:
    clip = probe_audio(write_wav(tmp_path / "a.wav", 1.25))
    assert clip.mime == "audio/wav"
    assert clip.duration_seconds == pytest.approx(1.25)


@pytest.mark.parametrize(
    ("content", "seconds"), [(float_wav(8000, 4000), 0.5), (extensible_wav(48_000, 12_000), 0.25)]
)
def test_float_and_extensible_wavs_are_read(tmp_path: Path, content: bytes, seconds: float) -> None:
    (tmp_path / "a.wav").write_bytes(content)
    assert probe_audio(tmp_path / "a.wav").duration_seconds == pytest.approx(seconds)


def test_wav_without_frames_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableAudio, match="no audio frames"):
        probe_audio(write_wav(tmp_path / "a.wav", 0))


def test_a_wav_encoding_browsers_do_not_play_is_read_and_served_as_mp3(tmp_path: Path) -> None:
    """IMA ADPCM (format tag 17): browsers do not play it, but every clip is served as MP3
    (mtcjudge.clips.rendition), so the decoder reading it is enough."""
    soundfile.write(str(tmp_path / "a.wav"), np.zeros((8000, 1)), 8000, subtype="IMA_ADPCM")
    clip = probe_audio(tmp_path / "a.wav")
    assert clip.duration_seconds is not None
    assert clip.duration_seconds > 0


def test_flac_duration_from_streaminfo(tmp_path: Path) -> None:
    (tmp_path / "a.flac").write_bytes(flac(44_100, 88_200))
    clip = probe_audio(tmp_path / "a.flac")
    assert (clip.mime, clip.duration_seconds) == ("audio/flac", pytest.approx(2.0))


def test_flac_with_unknown_length_and_no_frames_is_unreadable(tmp_path: Path) -> None:
    """A header that does not record the length: the frames are counted by decoding."""
    (tmp_path / "a.flac").write_bytes(id3_tag() + flac(48_000, 0))
    with pytest.raises(UnreadableAudio, match="cannot be decoded"):
        probe_audio(tmp_path / "a.flac")


@pytest.mark.parametrize(
    ("name", "mime", "slack"),
    [
        ("a.wav", "audio/wav", 0.0),
        ("a.flac", "audio/flac", 0.0),
        ("a.ogg", "audio/ogg", 0.0),
        ("a.opus", "audio/ogg", 0.02),
        ("a.mp3", "audio/mpeg", MP3_FRAME / 44_100),
    ],
)
def test_real_encoded_files_of_every_format_are_read(
    tmp_path: Path, name: str, mime: str, slack: float
) -> None:
    clip = probe_audio(write_clip(tmp_path / name, 3.0))
    assert clip.mime == mime
    assert clip.duration_seconds == pytest.approx(3.0, abs=slack + 1e-6)


def test_ogg_of_another_codec_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "a.ogg").write_bytes(ogg_page(b"\x80theora" + b"\x00" * 40, 0))
    with pytest.raises(UnreadableAudio, match="an Ogg Vorbis, Opus or FLAC file"):
        probe_audio(tmp_path / "a.ogg")


def test_mp3_with_an_id3_tag_but_no_audio_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "a.mp3").write_bytes(id3_tag() + b"\x12\x34" * 100)
    with pytest.raises(UnreadableAudio, match="not readable as an MP3 file"):
        probe_audio(tmp_path / "a.mp3")


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("a.wav", b"", "empty file"),
        ("a.mp3", b"", "empty file"),
        ("a.wav", b"hello, this is text", "not readable as a WAV file"),
        ("a.wav", b"RIFF\x10\x00\x00\x00WAVEfmt ", "not readable as a WAV file"),
        ("a.flac", b"OggS" + b"\x00" * 60, "not readable as a FLAC file"),
        ("a.flac", b"fLaC\x80\x00\x00\x22" + b"\x00" * 10, "not readable as a FLAC file"),
        ("a.ogg", b"ID3\x03" + b"\x00" * 60, "an Ogg Vorbis, Opus or FLAC file"),
        ("a.mp3", b"<html>not found</html>", "not readable as an MP3 file"),
        ("a.mp3", MP3_128K_STEREO + bytes(1000), "not readable as an MP3 file"),  # one frame header
    ],
)
def test_empty_truncated_and_misnamed_files_are_unreadable(
    tmp_path: Path, name: str, content: bytes, reason: str
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(UnreadableAudio, match=reason):
        probe_audio(tmp_path / name)


def _valid_clips(tmp_path: Path) -> dict[str, bytes]:
    return {
        "wav": write_wav(tmp_path / "tone.wav", 0.1).read_bytes(),
        "flac": flac(),
        "ogg": vorbis_ogg() + opus_ogg(),
        "mp3": xing_mp3(),
    }


@pytest.mark.parametrize("ext", ["wav", "flac", "ogg", "mp3"])
def test_garbage_truncated_and_corrupted_files_never_crash_the_scan(
    tmp_path: Path, ext: str
) -> None:
    """Whatever the bytes, a file is either usable or reported unreadable, never an error."""
    rng = np.random.default_rng(sum(map(ord, ext)))
    valid = _valid_clips(tmp_path)[ext]
    contents = [rng.bytes(int(n)) for n in rng.integers(1, 4000, 20)]
    contents += [valid[:n] for n in (1, 4, 8, 12, 27, 40, 44, 60, 100, len(valid) - 1)]
    for _ in range(30):  # a few bytes overwritten
        corrupted = bytearray(valid)
        at = rng.integers(0, len(valid), 3)
        corrupted[at[0] : at[0] + 4] = rng.bytes(4)
        corrupted[at[1]] ^= 0xFF
        del corrupted[at[2] : at[2] + 2]
        contents.append(bytes(corrupted))
    path = tmp_path / f"clip.{ext}"
    reasons = []
    for content in contents:
        path.write_bytes(content)
        try:
            clip = probe_audio(path)
        except UnreadableAudio as exc:
            reasons.append(str(exc))
            continue
        assert clip.duration_seconds is None or clip.duration_seconds > 0
    assert reasons
    assert all(reasons)


def test_scan_reports_found_missing_and_unreadable(tmp_path: Path) -> None:
    write_wav(tmp_path / "d1.wav", 0.5)
    (tmp_path / "d2.FLAC").write_bytes(flac())  # extensions in any case
    write_clip(tmp_path / "d3.ogg", 0.5)
    write_clip(tmp_path / "d4.mp3", 0.5)
    (tmp_path / "d5.wav").write_bytes(b"")
    (tmp_path / "d6.mp3").write_bytes(b"plain text")
    (tmp_path / "other.wav").write_bytes(b"")  # no such document: not looked at
    (tmp_path / "d7.txt").write_text("not audio")
    (tmp_path / "d8.wav").mkdir()
    scan = scan_audio(tmp_path, ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9"])
    assert sorted(scan.found) == ["d1", "d2", "d3", "d4"]
    assert scan.found["d1"].path == (tmp_path / "d1.wav").resolve()
    assert scan.found["d2"].mime == "audio/flac"
    assert scan.missing == ["d7", "d8", "d9"]
    assert scan.unreadable == [
        ("d5", "d5.wav: empty file"),
        ("d6", "d6.mp3: not readable as an MP3 file (Format not recognised.)"),
    ]
    assert scan.notes == []


def test_several_files_for_one_document_prefer_wav_flac_ogg_mp3(tmp_path: Path) -> None:
    write_wav(tmp_path / "a.wav", 0.5)
    (tmp_path / "a.mp3").write_bytes(cbr_mp3(2000))
    (tmp_path / "b.ogg").write_bytes(vorbis_ogg())
    (tmp_path / "b.flac").write_bytes(flac())
    scan = scan_audio(tmp_path, ["a", "b"])
    assert scan.found["a"].path.name == "a.wav"
    assert scan.found["b"].path.name == "b.flac"
    assert scan.notes == ["a: using a.wav, not a.mp3", "b: using b.flac, not b.ogg"]


def test_an_unreadable_preferred_file_falls_back_to_the_next(tmp_path: Path) -> None:
    (tmp_path / "a.wav").write_bytes(b"")
    (tmp_path / "a.mp3").write_bytes(cbr_mp3(2000))
    (tmp_path / "b.wav").write_bytes(b"")
    (tmp_path / "b.ogg").write_bytes(b"junk")
    scan = scan_audio(tmp_path, ["a", "b"])
    assert scan.found["a"].path.name == "a.mp3"
    assert scan.notes == ["a: using a.mp3, not a.wav (a.wav: empty file)"]
    assert scan.unreadable == [
        (
            "b",
            "b.wav: empty file; b.ogg: not readable as an Ogg Vorbis, Opus or FLAC file "
            "(Format not recognised.)",
        )
    ]


def test_scan_of_a_missing_directory_fails(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such directory"):
        scan_audio(tmp_path / "nope", ["a"])
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        scan_audio(tmp_path / "file", ["a"])
