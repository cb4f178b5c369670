"""Synthesised demo clips: valid WAV, normalised, deterministic, and audibly similar by artist."""

from __future__ import annotations

import itertools
import wave
from pathlib import Path

import numpy as np
import pytest

from mtcjudge.demo.audio import (
    INSTRUMENTS,
    artist_style,
    genre_style,
    render_clip,
    write_wav,
)

RATE = 22050


def clip(genre: int, artist: int, seed: int, seconds: float = 8.0) -> np.ndarray:
    return render_clip(genre_style(genre), artist_style(artist), seed, seconds=seconds, rate=RATE)


def test_write_wav_gives_16_bit_mono_pcm_of_the_clip_duration(tmp_path: Path) -> None:
    samples = clip(0, 1, seed=5, seconds=8.0)
    path = tmp_path / "D001.wav"
    write_wav(path, samples, RATE)
    with wave.open(str(path), "rb") as handle:
        assert handle.getnchannels() == 1
        assert handle.getsampwidth() == 2
        assert handle.getframerate() == RATE
        assert handle.getnframes() == 8 * RATE
        pcm = np.frombuffer(handle.readframes(handle.getnframes()), dtype="<i2")
    assert handle.getnframes() / handle.getframerate() == pytest.approx(8.0)
    np.testing.assert_allclose(pcm / 32767.0, samples, atol=1.0 / 32767)
    assert [p.name for p in tmp_path.iterdir()] == ["D001.wav"]  # no partial file left


@pytest.mark.parametrize("genre", range(len(INSTRUMENTS) + 1))
def test_clips_are_normalised_faded_and_never_clip(genre: int) -> None:
    for artist in range(3):
        samples = clip(genre, artist, seed=artist)
        assert samples.shape == (8 * RATE,)
        assert np.all(np.isfinite(samples))
        assert np.abs(samples).max() <= 0.9  # below -1 dBFS, far from int16 overflow
        rms = np.sqrt(np.mean(samples**2))
        assert 0.07 <= rms <= 0.101  # -20 dBFS, a little less when the peak limit acts
        assert abs(samples[0]) < 1e-3
        assert np.abs(samples[-50:]).max() < 1e-3
        # audible, not silence with a blip: sound in every second of the clip
        seconds = samples.reshape(8, RATE)
        assert np.sqrt(np.mean(seconds[:-1] ** 2, axis=1)).min() > 0.02


def test_the_same_seed_gives_the_same_clip_and_another_seed_a_variation() -> None:
    first = clip(2, 7, seed=11)
    np.testing.assert_array_equal(first, clip(2, 7, seed=11))
    assert not np.allclose(first, clip(2, 7, seed=12))
    assert artist_style(3) == artist_style(3)
    assert artist_style(3) != artist_style(4)


def test_each_of_the_first_genres_plays_another_instrument() -> None:
    assert [genre_style(i).instrument for i in range(4)] == list(INSTRUMENTS)
    fifth = genre_style(4)
    assert fifth.instrument == INSTRUMENTS[0]
    assert fifth.tonic != genre_style(0).tonic


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="seconds must be positive"):
        clip(0, 0, seed=0, seconds=0.0)
    with pytest.raises(ValueError, match="rate must be at least"):
        render_clip(genre_style(0), artist_style(0), 0, rate=4000)
    with pytest.raises(ValueError, match="genre index must be non-negative"):
        genre_style(-1)
    with pytest.raises(ValueError, match="mono"):
        write_wav("unused.wav", np.zeros((10, 2)), RATE)


def features(samples: np.ndarray) -> np.ndarray:
    """What a listener compares: pitch classes (chroma) and the spectral envelope (timbre).

    Power spectrum averaged over 2048-sample frames; chroma sums it by pitch class between
    60 Hz and 2 kHz; the envelope is the log power in 16 bands from 60 Hz to 8 kHz, centred.
    Both halves are unit vectors, so the dot product of two features is in [-1, 1].
    """
    size = 2048
    frames = samples[: samples.size // size * size].reshape(-1, size) * np.hanning(size)
    power = (np.abs(np.fft.rfft(frames, axis=1)) ** 2).mean(axis=0)
    freqs = np.fft.rfftfreq(size, 1.0 / RATE)
    tonal = (freqs > 60) & (freqs < 2000)
    pitch_class = np.rint(12 * np.log2(freqs[tonal] / 440.0) + 69).astype(int) % 12
    chroma = np.bincount(pitch_class, weights=power[tonal], minlength=12)
    edges = np.geomspace(60, 8000, 17)
    bands = np.log(
        np.array(
            [power[(freqs >= lo) & (freqs < hi)].sum() for lo, hi in itertools.pairwise(edges)]
        )
        + 1e-9
    )
    bands -= bands.mean()
    halves = [chroma / np.linalg.norm(chroma), bands / np.linalg.norm(bands)]
    vector: np.ndarray = np.concatenate(halves) / np.sqrt(2)
    return vector


def test_clips_of_an_artist_sound_more_alike_than_clips_of_other_genres() -> None:
    # 4 genres x 3 artists x 3 clips, each clip its own seed
    clips = [
        (genre, 10 * genre + artist, features(clip(genre, 10 * genre + artist, seed=100 + c)))
        for genre in range(4)
        for artist in range(3)
        for c in range(3)
    ]
    vectors = np.array([f for _, _, f in clips])
    similarity = vectors @ vectors.T
    same_artist, same_genre, other_genre = [], [], []
    for i, j in itertools.combinations(range(len(clips)), 2):
        (genre_i, artist_i, _), (genre_j, artist_j, _) = clips[i], clips[j]
        if artist_i == artist_j:
            same_artist.append(similarity[i, j])
        elif genre_i == genre_j:
            same_genre.append(similarity[i, j])
        else:
            other_genre.append(similarity[i, j])
    assert np.mean(same_artist) > np.mean(same_genre) + 0.05
    assert np.mean(same_genre) > np.mean(other_genre) + 0.2
    # not only on average: every pair of one artist beats every pair of different genres
    assert min(same_artist) > max(other_genre)
    # and a clip's nearest neighbour is always of its genre
    np.fill_diagonal(similarity, -np.inf)
    nearest = similarity.argmax(axis=1)
    assert all(clips[i][0] == clips[n][0] for i, n in enumerate(nearest))
