"""Measure decoded audio: integrated loudness (ITU-R BS.1770-4), sample peak, waveform peaks.

The server's twin of ``static/js/judge/levels.js`` (``measureLoudness``, ``measurePeaks``): the
same K-weighting filters, blocks and gates, so a clip measured here and in the browser gets the
same numbers. Pure numpy/scipy: an array of samples of shape ``(n_frames, n_channels)`` (a 1-D
array is one channel), floats in [-1, 1], in; numbers out.

Where it differs from the browser, on purpose: a clip shorter than one 400 ms block has no
loudness here (``None``; the browser measures it as one short block), only complete blocks
count (the browser also counts a last block that ends in a partial 100 ms step), and the
surround channels of 5.0 and 5.1 clips are weighted as BS.1770 says (see ``channel_weights``).
"""

from __future__ import annotations

import math
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray
from scipy import signal

__all__ = [
    "PEAK_BINS",
    "Samples",
    "channel_weights",
    "integrated_loudness",
    "k_weighting",
    "sample_peak",
    "waveform_peaks",
]

Samples: TypeAlias = NDArray[np.float32] | NDArray[np.float64]
"""Decoded audio: shape ``(n_frames, n_channels)``, or ``(n_frames,)`` for one channel."""

PEAK_BINS: Final = 600
"""The number of values ``waveform_peaks`` returns unless asked for another."""

# The analogue prototypes of BS.1770's two filters, as libebur128 fits them to the standard's
# 48 kHz coefficients: a high shelf (+4 dB above ~1.7 kHz) and the RLB high-pass (~38 Hz).
_SHELF_HZ: Final = 1681.974450955533
_SHELF_GAIN_DB: Final = 3.999843853973347
_SHELF_Q: Final = 0.7071752369554196
_SHELF_MID_EXPONENT: Final = 0.4996667741545416
_HIGHPASS_HZ: Final = 38.13547087602444
_HIGHPASS_Q: Final = 0.5003270373238773

_STEPS_PER_BLOCK: Final = 4  # 400 ms blocks every 100 ms: 75 % overlap
_OFFSET_DB: Final = -0.691
_ABSOLUTE_GATE_LUFS: Final = -70.0
_RELATIVE_GATE_LU: Final = -10.0
_SURROUND_WEIGHT: Final = 1.41


def k_weighting(rate: int) -> NDArray[np.float64]:
    """The K-weighting filter at a sample rate, as second-order sections for ``sosfilt``.

    The bilinear transform (with prewarping) of the analogue shelf and high-pass, so any rate
    works; at 48 kHz the sections are the coefficients BS.1770-4 publishes.

    Parameters
    ----------
    rate
        Sample rate in Hz; above twice the shelf's frequency (~3.4 kHz).

    Returns
    -------
    numpy.ndarray
        Shape ``(2, 6)``: rows ``[b0, b1, b2, 1, a1, a2]``, the shelf then the high-pass.
    """
    if rate <= 2 * _SHELF_HZ:
        raise ValueError(f"a sample rate of {rate} Hz is too low for K-weighting")
    k = math.tan(math.pi * _SHELF_HZ / rate)
    vh = 10 ** (_SHELF_GAIN_DB / 20)
    vb = vh**_SHELF_MID_EXPONENT
    a0 = 1 + k / _SHELF_Q + k * k
    shelf = [
        (vh + vb * k / _SHELF_Q + k * k) / a0,
        2 * (k * k - vh) / a0,
        (vh - vb * k / _SHELF_Q + k * k) / a0,
        1.0,
        2 * (k * k - 1) / a0,
        (1 - k / _SHELF_Q + k * k) / a0,
    ]
    k = math.tan(math.pi * _HIGHPASS_HZ / rate)
    a0 = 1 + k / _HIGHPASS_Q + k * k
    highpass = [1.0, -2.0, 1.0, 1.0, 2 * (k * k - 1) / a0, (1 - k / _HIGHPASS_Q + k * k) / a0]
    return np.array([shelf, highpass], dtype=np.float64)


def channel_weights(n_channels: int) -> NDArray[np.float64]:
    """The weight of each channel in the loudness sum.

    Only two layouts are recognised by their channel count: 5 channels are L, R, C, Ls, Rs and
    6 are 5.1 in the WAV/FLAC order L, R, C, LFE, Ls, Rs (the surrounds weigh 1.41, the LFE 0,
    as in BS.1770 and libebur128). Every other count, mono and stereo included, weighs each
    channel 1.0: their layout cannot be told from the count, and the browser does the same.
    """
    weights = np.ones(n_channels, dtype=np.float64)
    if n_channels == 5:
        weights[3:5] = _SURROUND_WEIGHT
    elif n_channels == 6:
        weights[3] = 0.0
        weights[4:6] = _SURROUND_WEIGHT
    return weights


def integrated_loudness(samples: Samples, rate: int) -> float | None:
    """The integrated loudness of a clip (LUFS), after ITU-R BS.1770-4.

    K-weighted mean squares of 400 ms blocks every 100 ms, summed over the channels by
    ``channel_weights``; the blocks above -70 LUFS, then those above 10 LU under their mean,
    are averaged.

    Parameters
    ----------
    samples
        Shape ``(n_frames, n_channels)`` or ``(n_frames,)``, full scale at 1.0.
    rate
        Sample rate in Hz.

    Returns
    -------
    float or None
        LUFS; None when no block passes the gates (silence, or shorter than 400 ms), and
        when the sample rate is too low for the K-weighting filter (at most twice its shelf's
        ~1.7 kHz: such a file plays, upsampled, but its loudness is not measured and it is
        not levelled).
    """
    if rate <= 2 * _SHELF_HZ:
        return None
    sos = k_weighting(rate)
    frames = _frames(samples)
    step = math.floor(rate * 0.1 + 0.5)  # rounded half up, as the browser's Math.round
    steps = frames.shape[0] // step
    if steps < _STEPS_PER_BLOCK:
        return None
    channels = np.ascontiguousarray(frames[: steps * step].T, dtype=np.float64)
    filtered: NDArray[np.float64] = signal.sosfilt(sos, channels, axis=1)
    by_step = filtered.reshape(len(channels), steps, step)
    per_step = np.einsum("csk,csk->cs", by_step, by_step)  # sums of squares per 100 ms
    weighted = channel_weights(len(channels)) @ per_step
    windows = np.lib.stride_tricks.sliding_window_view(weighted, _STEPS_PER_BLOCK)
    blocks = windows.sum(axis=1) / (_STEPS_PER_BLOCK * step)
    loud = blocks[blocks > _energy(_ABSOLUTE_GATE_LUFS)]
    if loud.size == 0:
        return None
    threshold = float(np.mean(loud)) * 10 ** (_RELATIVE_GATE_LU / 10)
    return _OFFSET_DB + 10 * math.log10(float(np.mean(loud[loud > threshold])))


def sample_peak(samples: Samples) -> float:
    """The largest absolute sample of any channel (0.0 for an empty clip)."""
    return float(np.max(np.abs(samples), initial=0.0))


def waveform_peaks(samples: Samples, bins: int = PEAK_BINS) -> NDArray[np.float32]:
    """The largest absolute sample, over all channels, of each of ``bins`` equal slices.

    Slice ``i`` runs from frame ``floor(i * n / bins)`` and holds one frame at least, as in the
    browser: with fewer frames than bins, each frame fills the bins that fall on it.

    Parameters
    ----------
    samples
        Shape ``(n_frames, n_channels)`` or ``(n_frames,)``.
    bins
        The number of values.

    Returns
    -------
    numpy.ndarray
        ``bins`` float32 values in [0, 1] (louder samples count as 1); zeros for an empty clip.
    """
    frames = _frames(samples)
    n, channels = frames.shape
    if frames.size == 0 or bins <= 0:
        return np.zeros(max(bins, 0), dtype=np.float32)
    magnitudes = np.abs(frames)
    starts = np.arange(bins, dtype=np.int64) * n // bins
    peaks: Samples
    if n < bins:
        peaks = magnitudes.max(axis=1)[starts]
    else:  # a slice of frames is a slice of the samples flattened frame by frame
        peaks = np.maximum.reduceat(magnitudes.reshape(-1), starts * channels)
    return np.minimum(peaks, 1.0).astype(np.float32)


def _frames(samples: Samples) -> Samples:
    if samples.ndim == 1:
        return samples[:, np.newaxis]
    if samples.ndim != 2:
        raise ValueError(f"samples must be (n_frames, n_channels), not of shape {samples.shape}")
    return samples


def _energy(lufs: float) -> float:
    """The mean square of a block of this loudness."""
    return float(10 ** ((lufs - _OFFSET_DB) / 10))
