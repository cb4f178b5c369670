"""Every clip is served as one form: a constant-bitrate MP3 of its excerpt, encoded once and
named by what it is made from; a reference trial's candidate is another excerpt of the same
recording, encoded the same way (docs/audio.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from mtcjudge.clips import rendition
from mtcjudge.clips.cut import Window
from mtcjudge.clips.decode import UnreadableAudio
from mtcjudge.clips.rendition import ClipSource, clip_source, render, rendition_key


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTCJUDGE_CLIP_CACHE", str(tmp_path / "cache"))


def _write(path: Path, seconds: float, rate: int = 22_050, channels: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    tone = 0.3 * np.sin(2 * np.pi * (220 + 40 * seed) * t * (1 + t / seconds))
    data = np.column_stack([tone + 0.02 * rng.standard_normal(t.size)] * channels)
    soundfile.write(str(path), data.astype(np.float32), rate)
    return path


def _source(path: Path, seconds: float, window: Window | None = None) -> ClipSource:
    return ClipSource(str(path), "a" * 64, seconds, window or Window(0.0, seconds))


def _decoded(data: bytes) -> tuple[np.ndarray, int]:
    import io

    samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    return samples, rate


@pytest.mark.parametrize(
    ("suffix", "rate", "channels"), [(".wav", 22_050, 1), (".flac", 48_000, 2)]
)
def test_every_clip_is_served_as_44k_stereo_mp3_of_its_window(tmp_path, suffix, rate, channels):
    path = _write(tmp_path / f"a{suffix}", 4.0, rate, channels)
    data = render(_source(path, 4.0, Window(1.0, 2.0)))
    info = soundfile.info(__import__("io").BytesIO(data))
    assert info.format == "MP3"
    assert info.samplerate == rendition.RATE
    assert info.channels == 2
    assert info.duration == pytest.approx(2.0, abs=0.06)
    # a constant bitrate: the size follows the length
    assert len(data) == pytest.approx(rendition.served_bytes_estimate(2.0), rel=0.05)


def test_a_trial_candidate_is_another_excerpt_of_the_same_length_and_size(tmp_path):
    path = _write(tmp_path / "long.wav", 12.0)
    clip = _source(path, 12.0, Window(3.0, 4.0))
    query, other = render(clip), render(clip, "other")
    assert query != other
    assert len(other) == len(query)  # same length, same bitrate: the same number of bytes
    a, _ = _decoded(query)
    b, _ = _decoded(other)
    assert a.shape == b.shape
    assert not np.allclose(a, b, atol=1e-3)


def test_a_whole_file_clip_is_rotated_for_its_trial(tmp_path):
    path = _write(tmp_path / "short.wav", 3.0)
    clip = _source(path, 3.0)
    query, other = render(clip), render(clip, "other")
    assert len(other) == len(query)
    a, _ = _decoded(query)
    b, _ = _decoded(other)
    assert a.shape == b.shape
    # the rotated clip holds the clip's second part first
    n = a.shape[0]
    start = int(n * rendition.ROTATE_FRACTION)
    lag = np.argmax(np.correlate(b[: n // 4, 0], a[start : start + n // 8, 0], mode="valid"))
    assert lag < n // 50


def test_a_rendition_is_made_once_and_named_by_what_it_is_made_from(tmp_path):
    path = _write(tmp_path / "a.wav", 2.0)
    clip = _source(path, 2.0)
    first = rendition.rendition(clip)
    made = first.stat().st_mtime_ns
    assert rendition.rendition(clip) == first
    assert first.stat().st_mtime_ns == made
    assert first.name == f"{rendition_key(clip)}.mp3"
    assert rendition_key(clip, "other") != rendition_key(clip)
    moved = ClipSource(clip.path, clip.sha256, 2.0, Window(0.5, 1.5))
    assert rendition_key(moved) != rendition_key(clip)
    assert not list(first.parent.glob("*.part"))  # written atomically


def test_documents_imported_before_the_analysis_are_named_by_their_file(tmp_path):
    path = _write(tmp_path / "old.wav", 1.5)
    clip = clip_source(str(path), None, None, None, None)
    assert clip.window.start == 0.0
    assert clip.window.seconds == pytest.approx(1.5)
    assert clip.sha256.startswith("file:")
    with pytest.raises(UnreadableAudio, match="cannot open"):
        clip_source(str(tmp_path / "gone.wav"), None, None, None, None)


def test_a_file_that_went_bad_is_not_served(tmp_path):
    path = _write(tmp_path / "a.wav", 2.0)
    clip = _source(path, 2.0)
    path.write_bytes(b"no longer audio")
    assert rendition.safe_rendition(clip) is None
