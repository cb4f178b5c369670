"""tests/audio_files.py: the files it writes are what they claim, as libsndfile reads them.

The broken files also record what libsndfile does with each kind of damage, which the code
that reads uploads has to expect.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf  # type: ignore[import-untyped]

from tests.audio_files import (
    MP3_FRAME,
    OPUS_RATE,
    fake_m4a,
    long_silence_flac,
    many_channels,
    text_named,
    truncated,
    write_clip,
    zero_length,
)

CODECS = {
    "wav": ("WAV", "PCM_16"),
    "flac": ("FLAC", "PCM_16"),
    "ogg": ("OGG", "VORBIS"),
    "opus": ("OGG", "OPUS"),
    "mp3": ("MP3", "MPEG_LAYER_III"),
}


@pytest.mark.parametrize("suffix", list(CODECS))
def test_every_format_round_trips(tmp_path: Path, suffix: str) -> None:
    path = write_clip(tmp_path / f"clip.{suffix}", 1.5, rate=44_100, channels=2)
    info = sf.info(path)
    assert (info.format, info.subtype) == CODECS[suffix]
    assert info.samplerate == (OPUS_RATE if suffix == "opus" else 44_100)
    assert info.channels == 2
    assert info.duration == pytest.approx(1.5, abs=MP3_FRAME / info.samplerate)
    samples, _ = sf.read(path)
    assert 0.1 < np.max(np.abs(samples)) < 0.5  # the tone, near its amplitude of 0.3


def test_fmt_overrides_the_suffix(tmp_path: Path) -> None:
    info = sf.info(write_clip(tmp_path / "misnamed.wav", 1, fmt="mp3"))
    assert info.format == "MP3"


def test_an_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="m4a"):
        write_clip(tmp_path / "clip.m4a", 1)


def test_clips_are_deterministic_and_differ_by_seed(tmp_path: Path) -> None:
    def read(name: str, seed: int) -> np.ndarray:
        samples, _ = sf.read(write_clip(tmp_path / name, 0.5, seed=seed, channels=1))
        return np.asarray(samples)

    assert np.array_equal(read("a.wav", 0), read("b.wav", 0))
    assert not np.allclose(read("a.wav", 0), read("c.wav", 1), atol=0.05)


def opened(path: Path) -> Any:
    """soundfile's info on the file, or libsndfile's message when it does not open."""
    try:
        return sf.info(path)
    except sf.LibsndfileError as error:
        return str(error)


@pytest.mark.parametrize("suffix", ["ogg", "opus"])
@pytest.mark.parametrize("keep", [0.3, 0.5, 0.9])
def test_a_truncated_ogg_is_shorter_or_does_not_open(
    tmp_path: Path, suffix: str, keep: float
) -> None:
    # libsndfile reads the length from the last complete page: the clip is silently shorter,
    # or, where the cut falls badly, "Supported file format but file is malformed"
    path = write_clip(tmp_path / f"clip.{suffix}", 2)
    written = sf.info(path).frames
    info = opened(truncated(path, keep))
    if isinstance(info, str):
        assert "malformed" in info
    else:
        assert info.frames < keep * written
        assert len(sf.read(path)[0]) == info.frames


def test_a_truncated_flac_opens_but_fails_to_decode(tmp_path: Path) -> None:
    path = truncated(write_clip(tmp_path / "clip.flac", 2))
    assert sf.info(path).duration == pytest.approx(2)  # STREAMINFO's, not the file's
    with pytest.raises(sf.LibsndfileError):
        sf.read(path)


def test_a_truncated_wav_is_silently_shorter(tmp_path: Path) -> None:
    path = truncated(write_clip(tmp_path / "clip.wav", 2))
    info = sf.info(path)
    assert info.duration == pytest.approx(0.6, abs=0.01)  # the data there is, no error
    assert len(sf.read(path)[0]) == info.frames


def test_a_truncated_mp3_declares_its_length_and_decodes_less(tmp_path: Path) -> None:
    path = truncated(write_clip(tmp_path / "clip.mp3", 3))
    info = sf.info(path)
    assert info.duration == pytest.approx(3, abs=MP3_FRAME / info.samplerate)  # Xing header
    samples, _ = sf.read(path)  # no error: mpg123 only warns on stderr
    assert len(samples) < 0.4 * info.frames
    # beware: SoundFile.blocks() counts down the declared frames, so it yields them all
    with sf.SoundFile(path) as clip:
        assert sum(len(block) for block in clip.blocks(4096)) == info.frames


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("empty.wav", zero_length, "Format not recognised"),
        ("text.wav", text_named, "Format not recognised"),
        ("clip.m4a", fake_m4a, "Format not recognised"),
        # for a .mp3 name, libsndfile's message is misleading
        ("empty.mp3", zero_length, "not a regular file"),
        ("text.mp3", text_named, "not a regular file"),
    ],
)
def test_files_that_are_not_audio_do_not_open(
    tmp_path: Path, name: str, make: Callable[[Path], Path], message: str
) -> None:
    path = make(tmp_path / name)
    with pytest.raises(sf.LibsndfileError, match=message):
        sf.info(path)


def test_zero_length_and_text_named(tmp_path: Path) -> None:
    assert zero_length(tmp_path / "a.wav").stat().st_size == 0
    assert text_named(tmp_path / "b.wav").read_text(encoding="utf-8") == "not audio"


def test_long_silence_flac_is_two_hours_and_small(tmp_path: Path) -> None:
    path = long_silence_flac(tmp_path / "long.flac")
    info = sf.info(path)
    assert (info.duration, info.samplerate, info.channels) == (7200, 8_000, 1)
    assert path.stat().st_size < 1_000_000
    with sf.SoundFile(path) as clip:
        assert not np.any(clip.read(8_000))


@pytest.mark.parametrize("suffix", ["wav", "flac"])
def test_many_channels(tmp_path: Path, suffix: str) -> None:
    info = sf.info(many_channels(tmp_path / f"surround.{suffix}"))
    assert (info.samplerate, info.channels, info.duration) == (96_000, 8, 2)
