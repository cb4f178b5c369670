"""Loudness (ITU-R BS.1770-4), sample peak and waveform peaks of decoded audio.

The reference numbers are those of the browser's tests (tests/js/levels.test.js), which this
module must agree with, and of EBU Tech 3341's minimum requirements (its table 1, cases 1-5),
built here from sines.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf  # type: ignore[import-untyped]
from numpy.typing import NDArray
from scipy import signal

from mtcjudge.clips.loudness import (
    PEAK_BINS,
    channel_weights,
    integrated_loudness,
    k_weighting,
    sample_peak,
    waveform_peaks,
)
from tests.audio_files import many_channels

# BS.1770-4, table 1 and table 2: the two stages of the pre-filter at 48 kHz
PUBLISHED_48K = [
    [1.53512485958697, -2.69169618940638, 1.19839281085285, 1.0, -1.69065929318241,
     0.73248077421585],
    [1.0, -2.0, 1.0, 1.0, -1.99004745483398, 0.99007225036621],
]  # fmt: skip


def sine(rate: int, seconds: float, hz: float = 997, amplitude: float = 0.1) -> NDArray[np.float64]:
    """One channel, shape (n,)."""
    return np.asarray(amplitude * np.sin(2 * np.pi * hz * np.arange(round(rate * seconds)) / rate))


def sections(rate: int, *parts: tuple[float, float], hz: float = 1000) -> NDArray[np.float64]:
    """A stereo sine in (seconds, dBFS) parts, with no jump of phase between them."""
    gains = [np.full(round(rate * seconds), 10 ** (dbfs / 20)) for seconds, dbfs in parts]
    gain = np.concatenate(gains)
    tone = gain * np.sin(2 * np.pi * hz * np.arange(len(gain)) / rate)
    return np.stack([tone, tone], axis=1)


def test_the_filter_at_48_khz_is_the_published_one() -> None:
    assert np.allclose(k_weighting(48_000), PUBLISHED_48K, rtol=0, atol=1e-6)


def test_the_filter_at_other_rates_is_derived_again() -> None:
    assert not np.allclose(k_weighting(44_100), PUBLISHED_48K, rtol=0, atol=1e-3)
    with pytest.raises(ValueError, match="too low"):
        k_weighting(3_000)


# ---------------------------------------------------------------- the browser's references


def test_a_full_scale_997_hz_sine_on_one_channel_is_minus_3_01() -> None:
    samples = sine(48_000, 3, amplitude=1)
    assert integrated_loudness(samples, 48_000) == pytest.approx(-3.01, abs=0.01)
    assert sample_peak(samples) == pytest.approx(1, abs=1e-6)


def steady_sine(rate: int, hz: float = 997, amplitude: float = 0.1) -> float:
    """The loudness of a steady sine on one channel: its mean square through the filter."""
    _, response = signal.sosfreqz(k_weighting(rate), worN=[hz], fs=rate)
    return -0.691 + 10 * math.log10(amplitude**2 / 2 * abs(response[0]) ** 2)


@pytest.mark.parametrize("rate", [44_100, 48_000])
def test_20_db_quieter_is_20_lu_lower_at_48_and_44_1_khz(rate: int) -> None:
    assert integrated_loudness(sine(rate, 3), rate) == pytest.approx(-23.01, abs=0.01)


@pytest.mark.parametrize("rate", [22_050, 32_000, 44_100, 48_000, 88_200, 96_000, 192_000])
def test_a_steady_sine_at_any_rate(rate: int) -> None:
    # the high-pass keeps the standard's numerator [1, -2, 1] at every rate (as libebur128,
    # ffmpeg and the browser do), so its passband gain drifts a little with the rate: at
    # 22.05 kHz the sine reads -22.98, at 96 kHz -23.03
    expected = steady_sine(rate)
    assert expected == pytest.approx(-23.01, abs=0.1)
    assert integrated_loudness(sine(rate, 3), rate) == pytest.approx(expected, abs=0.001)


def test_the_same_sine_on_two_channels_is_3_01_lu_louder() -> None:
    tone = sine(48_000, 3)
    assert integrated_loudness(np.stack([tone, tone], axis=1), 48_000) == pytest.approx(
        -20.0, abs=0.01
    )


def test_k_weighting_counts_highs_more_and_deep_lows_much_less() -> None:
    def at(hz: float) -> float:
        loudness = integrated_loudness(sine(48_000, 3, hz), 48_000)
        assert loudness is not None
        return loudness

    assert 3 < at(5_000) - at(997) < 4
    assert at(20) - at(997) < -10


def test_the_relative_gate_leaves_out_a_quiet_half() -> None:
    # the browser's case: 17 loud blocks and the 3 across the change (3/4, 1/2, 1/4 loud) pass
    samples = np.concatenate([sine(48_000, 2), sine(48_000, 2, amplitude=0.001)])
    assert integrated_loudness(samples, 48_000) == pytest.approx(-23.35, abs=0.01)


def test_silence_and_sound_under_the_absolute_gate_have_no_loudness() -> None:
    assert integrated_loudness(np.zeros((48_000, 2)), 48_000) is None
    assert sample_peak(np.zeros((48_000, 2))) == 0
    faint = sine(48_000, 3, amplitude=0.0001)  # -83 LUFS
    assert integrated_loudness(faint, 48_000) is None
    assert sample_peak(faint) == pytest.approx(0.0001, abs=1e-9)


def test_the_peak_is_the_largest_absolute_sample_of_any_channel() -> None:
    samples = np.array([[0, 0.5], [0.25, -0.75], [-0.5, 0]])
    assert sample_peak(samples) == 0.75
    assert sample_peak(np.zeros((0, 2))) == 0


# ---------------------------------------------------------------- EBU Tech 3341, table 1


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        ([(20, -23)], -23),  # case 1
        ([(20, -33)], -33),  # case 2
        ([(10, -36), (60, -23), (10, -36)], -23),  # case 3: the relative gate
        ([(10, -72), (10, -36), (60, -23), (10, -36), (10, -72)], -23),  # case 4: both gates
        ([(20, -26), (20.1, -20), (20, -26)], -23),  # case 5
    ],
    ids=["case1", "case2", "case3", "case4", "case5"],
)
def test_ebu_tech_3341(parts: list[tuple[float, float]], expected: float) -> None:
    assert integrated_loudness(sections(48_000, *parts), 48_000) == pytest.approx(expected, abs=0.1)


def test_a_quieter_half_is_gated_out_exactly() -> None:
    rate, ratio = 48_000, 10 ** (-27 / 10)  # the quiet half is 27 LU down: -50 LUFS
    loud, quiet = sections(rate, (10, -20)), sections(rate, (10, -47))
    alone = integrated_loudness(loud, rate)
    both = integrated_loudness(np.concatenate([loud, quiet]), rate)
    assert alone is not None
    assert both is not None
    # 97 loud blocks and the 3 across the change pass; the 97 quiet ones are gated out
    across = sum((k + (4 - k) * ratio) / 4 for k in (3, 2, 1))
    assert both == pytest.approx(alone + 10 * math.log10((97 + across) / 100), abs=0.005)
    ungated = alone + 10 * math.log10((97 + across + 97 * ratio) / 197)
    assert both - ungated > 2.9


def test_shorter_than_a_block_has_no_loudness() -> None:
    # the browser measures it as one short block; here it is None
    assert integrated_loudness(sine(48_000, 0.399), 48_000) is None
    assert integrated_loudness(sine(48_000, 0.4), 48_000) == pytest.approx(-23.01, abs=0.01)


# ---------------------------------------------------------------- channels and inputs


def test_channel_weights() -> None:
    assert channel_weights(2).tolist() == [1, 1]
    assert channel_weights(5).tolist() == [1, 1, 1, 1.41, 1.41]
    assert channel_weights(6).tolist() == [1, 1, 1, 0, 1.41, 1.41]
    assert channel_weights(8).tolist() == [1] * 8


@pytest.mark.parametrize(("channels", "at", "expected"), [(5, 3, 1.41), (6, 4, 1.41), (4, 3, 1)])
def test_a_surround_channel_weighs_1_41(channels: int, at: int, expected: float) -> None:
    samples = np.zeros((48_000 * 3, channels))
    samples[:, at] = sine(48_000, 3, amplitude=1)
    assert integrated_loudness(samples, 48_000) == pytest.approx(
        -3.01 + 10 * math.log10(expected), abs=0.01
    )


def test_the_lfe_of_5_1_does_not_count() -> None:
    samples = np.zeros((48_000 * 3, 6))
    samples[:, 3] = sine(48_000, 3, amplitude=1)
    assert integrated_loudness(samples, 48_000) is None


def test_eight_channels_at_96_khz() -> None:
    samples = np.tile(sine(96_000, 2)[:, np.newaxis], (1, 8))
    expected = steady_sine(96_000) + 10 * math.log10(8)
    assert integrated_loudness(samples, 96_000) == pytest.approx(expected, abs=0.001)


def test_an_eight_channel_96_khz_file(tmp_path: Path) -> None:
    samples, rate = sf.read(many_channels(tmp_path / "surround.flac"), dtype="float32")
    assert samples.shape == (192_000, 8)
    loudness = integrated_loudness(samples, rate)
    assert loudness is not None
    assert -20 < loudness < 0


def test_float32_one_dimensional_and_float64_agree() -> None:
    tone = sine(44_100, 2)
    reference = integrated_loudness(tone[:, np.newaxis], 44_100)
    assert integrated_loudness(tone, 44_100) == reference
    assert integrated_loudness(tone.astype(np.float32), 44_100) == pytest.approx(
        reference, abs=1e-4
    )


def test_samples_of_three_dimensions_are_refused() -> None:
    with pytest.raises(ValueError, match="n_frames"):
        integrated_loudness(np.zeros((10, 2, 2)), 48_000)


# ---------------------------------------------------------------- waveform peaks


def test_waveform_peaks_of_equal_slices() -> None:
    peaks = waveform_peaks(np.array([0, 0.5, -0.8, 0.1, 0.2, -0.3]), 3)
    assert peaks.dtype == np.float32
    assert peaks.tolist() == pytest.approx([0.5, 0.8, 0.3])


def test_waveform_peaks_of_all_channels() -> None:
    samples = np.array([[0.25, 0], [0, 0], [0, -0.5], [0, 0]])
    assert waveform_peaks(samples, 2).tolist() == [0.25, 0.5]
    assert waveform_peaks(np.asfortranarray(samples), 2).tolist() == [0.25, 0.5]


def test_more_bins_than_frames_each_frame_fills_its_bins() -> None:
    assert waveform_peaks(np.array([0.25, -0.75]), 4).tolist() == [0.25, 0.25, 0.75, 0.75]


def test_waveform_peaks_bins_and_bounds() -> None:
    assert PEAK_BINS == 600
    assert len(waveform_peaks(np.full((5_000, 2), 0.5))) == PEAK_BINS
    assert waveform_peaks(np.array([1.5, -2.0, 0.5]), 3).tolist() == [1, 1, 0.5]
    assert waveform_peaks(np.zeros((0, 2)), 4).tolist() == [0, 0, 0, 0]


def test_a_short_click_shows_in_its_slice() -> None:
    samples = np.zeros((44_100 * 10, 2), dtype=np.float32)
    samples[44_100 * 5, 1] = -0.9  # 5 s in: slice 300 of 600
    peaks = waveform_peaks(samples)
    assert peaks[300] == pytest.approx(0.9)
    assert np.count_nonzero(peaks) == 1


def test_a_rate_too_low_for_the_filter_has_no_loudness() -> None:
    tone = 0.3 * np.sin(2 * np.pi * 300 * np.arange(3 * 3_000) / 3_000)
    assert integrated_loudness(tone, 3_000) is None
    assert integrated_loudness(tone, 8_000) is not None
