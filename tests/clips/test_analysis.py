"""The import's analysis of one file (mtcjudge.clips.analysis.analyse), on real encoded files.

Every format's clip is cut, decoded and measured as the loudness module measures the same
stretch decoded apart; every kind of bad upload is refused with a reason an organizer can act
on; a two-hour file is refused whole but cut quickly as an excerpt (only the excerpt is
decoded); a 96 kHz 8-channel file is accepted as it is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf  # type: ignore[import-untyped]

from mtcjudge.clips.analysis import ClipAnalysis, analyse
from mtcjudge.clips.cut import Cut
from mtcjudge.clips.decode import UnreadableAudio
from mtcjudge.clips.loudness import PEAK_BINS, integrated_loudness, waveform_peaks
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

EXCERPT = Cut(mode="excerpt", seconds=3, start_fraction=0.3)
SECONDS = 6.0  # the test files' length: the excerpt is 3 s from 1.8 s
FORMATS = ["wav", "flac", "ogg", "opus", "mp3"]


def rate_of(fmt: str) -> int:
    return OPUS_RATE if fmt == "opus" else 44_100


def peaks_of(analysis: ClipAnalysis) -> np.ndarray:
    """The analysis's packed peaks, back in [0, 1]."""
    return np.frombuffer(analysis.sound.peaks, dtype=np.uint8) / 255.0


def decoded_stretch(path: Path, start: float, seconds: float) -> tuple[np.ndarray, int]:
    """The stretch of the file from ``start`` for ``seconds``, decoded whole and sliced here
    (no seeking: the analysis's own reading is what is checked)."""
    samples, rate = sf.read(path, dtype="float32", always_2d=True)
    first = round(start * rate)
    return samples[first : first + round(seconds * rate)], rate


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_excerpt_of_every_format_is_cut_and_measured(tmp_path: Path, fmt: str) -> None:
    path = write_clip(tmp_path / f"clip.{fmt}", SECONDS, channels=2)
    analysis = analyse(path, EXCERPT)

    assert analysis.path == path.resolve()
    assert (analysis.sample_rate, analysis.channels) == (rate_of(fmt), 2)
    slack = MP3_FRAME / 44_100 if fmt == "mp3" else 0.02
    assert analysis.source_seconds == pytest.approx(SECONDS, abs=slack)
    # 3 s from 30 % of the way in
    assert analysis.window.start == pytest.approx(0.3 * analysis.source_seconds)
    assert analysis.window.seconds == pytest.approx(3.0, abs=1 / analysis.sample_rate)
    assert analysis.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()

    reference, rate = decoded_stretch(path, analysis.window.start, analysis.window.seconds)
    expected = integrated_loudness(reference, rate)
    assert expected is not None
    assert analysis.sound.loudness_lufs == pytest.approx(expected, abs=0.5)
    assert len(analysis.sound.peaks) == PEAK_BINS
    peaks = peaks_of(analysis)
    assert np.max(np.abs(peaks - waveform_peaks(reference, PEAK_BINS))) < 0.05
    assert 0.2 < peaks.max() < 0.45  # the tone's amplitude of 0.3, with its swell and noise


@pytest.mark.parametrize("fmt", ["flac", "mp3"])
def test_a_whole_cut_is_the_whole_file(tmp_path: Path, fmt: str) -> None:
    path = write_clip(tmp_path / f"clip.{fmt}", SECONDS)
    analysis = analyse(path, Cut(mode="whole"))
    assert analysis.window.start == 0.0
    assert analysis.window.seconds == pytest.approx(analysis.source_seconds, abs=0.03)
    reference, rate = decoded_stretch(path, 0.0, analysis.source_seconds)
    assert analysis.sound.loudness_lufs == pytest.approx(
        integrated_loudness(reference, rate), abs=0.5
    )


def test_a_file_shorter_than_the_excerpt_is_played_whole(tmp_path: Path) -> None:
    analysis = analyse(write_clip(tmp_path / "short.wav", 2.0), EXCERPT)
    assert (analysis.window.start, analysis.window.seconds) == (0.0, pytest.approx(2.0))
    assert analysis.source_seconds == pytest.approx(2.0)


def refused(path: Path, cut: Cut = EXCERPT) -> str:
    with pytest.raises(UnreadableAudio) as caught:
        analyse(path, cut)
    return str(caught.value)


@pytest.mark.parametrize("cut", [EXCERPT, Cut(mode="whole")], ids=["excerpt", "whole"])
def test_a_truncated_mp3_is_refused_for_decoding_short_of_its_header(
    tmp_path: Path, cut: Cut
) -> None:
    path = truncated(write_clip(tmp_path / "broken.mp3", SECONDS))
    reason = refused(path, cut)
    assert reason.startswith("truncated or damaged: it decodes to ")
    assert reason.endswith(f" s of the {SECONDS:.1f} s its header declares")


def test_a_truncated_flac_is_refused_whatever_the_cut(tmp_path: Path) -> None:
    path = truncated(write_clip(tmp_path / "broken.flac", SECONDS))
    # the excerpt starts past what is left: libsndfile's seek fails, said in plain words
    assert refused(path) == (
        f"truncated or damaged: it cannot be read from 1.8 s of the {SECONDS:.1f} s its "
        "header declares"
    )
    assert refused(path, Cut(mode="whole")) == "cannot be decoded (flac decoder lost sync.)"


@pytest.mark.parametrize("name", ["empty.wav", "empty.mp3", "empty.flac"])
def test_a_zero_length_file_is_an_empty_file(tmp_path: Path, name: str) -> None:
    assert refused(zero_length(tmp_path / name)) == "empty file"


@pytest.mark.parametrize(
    ("name", "what"),
    [("notes.wav", "a WAV file"), ("notes.mp3", "an MP3 file"), ("notes.flac", "a FLAC file")],
)
def test_a_text_file_named_as_audio_is_not_readable_as_its_format(
    tmp_path: Path, name: str, what: str
) -> None:
    path = text_named(tmp_path / name, "title\tartist\nnot audio at all\n")
    assert refused(path) == f"not readable as {what} (Format not recognised.)"


def test_audio_of_another_format_under_a_name_is_refused_naming_what_it_holds(
    tmp_path: Path,
) -> None:
    assert refused(write_clip(tmp_path / "a.mp3", 1.0, fmt="wav")) == (
        "not an MP3 file (it holds WAV (Microsoft))"
    )
    assert refused(write_clip(tmp_path / "a.wav", 1.0, fmt="mp3")) == (
        "not a WAV file (it holds MPEG-1/2 Audio)"
    )


def test_an_m4a_file_is_refused_with_the_way_out(tmp_path: Path) -> None:
    assert refused(fake_m4a(tmp_path / "song.m4a")) == (
        "M4A/AAC cannot be decoded here: convert it to FLAC, MP3 or Ogg"
    )


@pytest.fixture(scope="module")
def two_hours(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two hours of 8 kHz mono silence (180 kB, half a second to write)."""
    return long_silence_flac(tmp_path_factory.mktemp("long") / "two-hours.flac")


def test_a_two_hour_file_is_refused_whole_naming_its_minutes(two_hours: Path) -> None:
    assert refused(two_hours, Cut(mode="whole")) == (
        "120 minutes long: whole files are clips up to 15 minutes; cut excerpts instead"
    )


def test_a_two_hour_file_gives_an_excerpt_decoding_only_the_excerpt(two_hours: Path) -> None:
    """Only the excerpt is decoded: milliseconds here, where the whole two hours would take
    seconds (not timed: a shared machine's times are no test)."""
    analysis = analyse(two_hours, Cut(mode="excerpt", seconds=30, start_fraction=0.3))
    assert analysis.source_seconds == 7200.0
    assert (analysis.window.start, analysis.window.seconds) == (2160.0, 30.0)
    assert analysis.sound.loudness_lufs is None  # silence has no loudness
    assert analysis.sound.peaks == bytes(PEAK_BINS)


@pytest.mark.parametrize("suffix", ["wav", "flac"])
def test_96_khz_8_channel_audio_is_accepted(tmp_path: Path, suffix: str) -> None:
    path = many_channels(tmp_path / f"surround.{suffix}", rate=96_000, channels=8, seconds=4)
    analysis = analyse(path, EXCERPT)
    assert (analysis.sample_rate, analysis.channels) == (96_000, 8)
    assert (analysis.window.start, analysis.window.seconds) == (pytest.approx(1.0), 3.0)
    reference, rate = decoded_stretch(path, analysis.window.start, analysis.window.seconds)
    assert reference.shape[1] == 8
    assert analysis.sound.loudness_lufs == pytest.approx(
        integrated_loudness(reference, rate), abs=0.5
    )


@pytest.mark.parametrize("rate", [2_000, 3_000])
def test_audio_too_low_in_rate_to_k_weight_is_accepted_unmeasured(
    tmp_path: Path, rate: int
) -> None:
    """A playable file whose rate is at most twice the K-weighting shelf (~3.4 kHz): its
    clip is cut and its peaks drawn, its loudness left unmeasured (it used to raise the
    filter's ValueError out of the analysis, failing the whole import)."""
    path = write_clip(tmp_path / "phone.wav", SECONDS, rate=rate, channels=1, frequency=300.0)
    analysis = analyse(path, EXCERPT)
    assert analysis.sample_rate == rate
    assert (analysis.window.start, analysis.window.seconds) == (pytest.approx(1.8), 3.0)
    assert analysis.sound.loudness_lufs is None
    assert analysis.sound.peaks != bytes(PEAK_BINS)  # a tone, drawn
