"""A reference trial's candidate is served as another excerpt of the query clip: the clip
rotated, the same length and bytes, so that no identical waveform gives the trial away."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from mtcjudge.clips import excerpt


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(excerpt, "cache_directory", lambda: tmp_path / "cache")


def _write(path: Path, samples: np.ndarray, rate: int = 8000, width: int = 2) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(samples.shape[1])
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return path


def _read(path: Path) -> tuple[wave._wave_params, np.ndarray]:
    with wave.open(str(path), "rb") as clip:
        params = clip.getparams()
        frames = clip.readframes(params.nframes)
    dtype = {1: np.uint8, 2: np.int16, 4: np.int32}[params.sampwidth]
    return params, np.frombuffer(frames, dtype=dtype).reshape(params.nframes, params.nchannels)


@pytest.mark.parametrize(("width", "dtype"), [(1, np.uint8), (2, np.int16), (4, np.int32)])
def test_the_excerpt_is_the_clip_rotated_with_the_same_length(tmp_path, width, dtype) -> None:
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    samples = rng.integers(info.min // 2, info.max // 2, size=(8000, 2)).astype(dtype)
    clip = _write(tmp_path / "q.wav", samples, width=width)
    made = excerpt.another_excerpt(clip)
    assert made != clip
    assert made.stat().st_size == clip.stat().st_size  # the byte evidence reads it the same
    params, got = _read(made)
    assert params == _read(clip)[0]
    start = int(8000 * excerpt.START_FRACTION)
    fade = int(excerpt.FADE_SECONDS * 8000)
    seam = 8000 - start
    # away from the seam: the clip from START_FRACTION on, then its beginning
    np.testing.assert_array_equal(got[: seam - fade], samples[start : 8000 - fade])
    np.testing.assert_array_equal(got[seam + fade :], samples[fade:start])
    # the seam fades to silence rather than clicking
    centre = 128 if dtype is np.uint8 else 0
    assert abs(int(got[seam - 1, 0]) - centre) < abs(int(info.max)) * 0.05
    assert abs(int(got[seam, 0]) - centre) < abs(int(info.max)) * 0.05
    assert got.tobytes() != samples.tobytes()


def test_the_excerpt_is_made_once_and_remade_when_the_clip_changes(tmp_path) -> None:
    clip = _write(tmp_path / "q.wav", np.arange(1000, dtype=np.int16).reshape(-1, 1))
    first = excerpt.another_excerpt(clip)
    assert excerpt.another_excerpt(clip) == first
    assert not list(first.parent.glob("*.part"))
    _write(clip, np.arange(2000, dtype=np.int16).reshape(-1, 1))
    second = excerpt.another_excerpt(clip)
    assert second != first
    assert second.stat().st_size == clip.stat().st_size


def test_what_cannot_be_rotated_is_served_as_it_is(tmp_path) -> None:
    mp3 = tmp_path / "q.mp3"
    mp3.write_bytes(b"ID3not really audio")
    assert excerpt.another_excerpt(mp3) == mp3
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"RIFF....WAVEnothing")
    assert excerpt.another_excerpt(broken) == broken
    tiny = _write(tmp_path / "tiny.wav", np.zeros((2, 1), dtype=np.int16))
    assert excerpt.another_excerpt(tiny) == tiny
