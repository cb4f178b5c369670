"""Import benchmark: the analysis of a collection's audio when a campaign is created, timed.

Usage::

    .venv/bin/python bench/import_audio.py [--clips N] [--workers W] [--json FILE]

Makes ``N`` (default 2,000) 30-second stereo 44.1 kHz MP3 clips in a temporary folder and
times what a campaign's import does with them: :func:`mtcjudge.clips.audio.scan_audio` with
the default cut (30 s from 30 % of the way in), which matches each document to its file and
analyses the file once (decoded, cut, loudness, peaks, content hash; docs/audio.md,
"Analysed once"). Encoding 2,000 MP3s would take longer than analysing them, so a few
distinct clips (``--distinct``, 16) are encoded and copied to ``N`` files: every file is
opened, hashed and decoded on its own, so a copy costs the analysis what a distinct clip
does. The files were just written, so they are read from the page cache; a cold disk adds
its reading time (about 0.5 MB a clip).

Figures are printed, never asserted; the target (issue 30) is 2,000 clips in under 2 minutes
on 2 cores. ``met`` compares the time per clip, times 2,000, with it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import soundfile

if __package__ in (None, ""):  # run as ``python bench/import_audio.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import positive_int, run_benchmark
from mtcjudge.clips.audio import scan_audio
from mtcjudge.clips.cut import Cut
from mtcjudge.clips.rendition import RATE

__all__ = ["DESCRIPTION", "add_arguments", "import_audio_benchmark", "main", "run_from_args"]

DESCRIPTION = (
    "Time the analysis a campaign's import makes of its audio (each file decoded, cut and "
    "measured once): N 30-second stereo MP3 clips, copies of a few distinct encodings, "
    "against the target of 2,000 clips in 2 minutes."
)
TARGET_CLIPS = 2000
TARGET_SECONDS = 120.0
CHANNELS = 2
#: the cut of a new campaign: 30 s from 30 % of the way in
CUT = Cut(mode="excerpt", seconds=30.0, start_fraction=0.3)


def write_mp3(path: Path, seconds: float, seed: int) -> Path:
    """A stereo 44.1 kHz MP3 of ``seconds``: a tone and its octave, a swell and noise,
    a semitone higher for each ``seed``."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(seconds * RATE))[:, np.newaxis] / RATE
    pitch = 220.0 * 2 ** (seed / 12)
    phase = np.arange(CHANNELS)[np.newaxis, :] * 0.5
    tone = (np.sin(2 * np.pi * pitch * t + phase) + 0.3 * np.sin(4 * np.pi * pitch * t)) / 1.3
    swell = 0.8 + 0.2 * np.sin(2 * np.pi * 0.25 * t)
    noise = 0.05 * rng.standard_normal((len(t), CHANNELS))
    samples = (0.3 * (tone * swell + noise)).astype(np.float32)
    soundfile.write(path, samples, RATE, format="MP3", subtype="MPEG_LAYER_III")
    return path


def make_clips(folder: Path, clips: int, distinct: int, seconds: float) -> list[str]:
    """``clips`` files ``clip00001.mp3``... in ``folder``, copies of ``distinct`` encodings in
    turn; their document ids."""
    sources = [
        write_mp3(folder / f"source{i:02d}.tmp.mp3", seconds, seed=i)
        for i in range(min(distinct, clips))
    ]
    ids = [f"clip{i + 1:05d}" for i in range(clips)]
    for i, doc in enumerate(ids):
        shutil.copyfile(sources[i % len(sources)], folder / f"{doc}.mp3")
    for source in sources:
        source.unlink()
    return ids


def import_audio_benchmark(
    clips: int = TARGET_CLIPS,
    *,
    distinct: int = 16,
    seconds: float = 30.0,
    workers: int | None = None,
    workdir: Path | None = None,
    out: TextIO | None = None,
) -> dict[str, Any]:
    """Make the clips, time their analysis, and return the figures (also printed to ``out``).

    Raises
    ------
    ValueError
        When a clip is not found or not usable (the figures would not be the import's).
    """
    out = out or sys.stdout
    workers = workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="mtcjudge-import-audio-", dir=workdir) as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        ids = make_clips(folder, clips, distinct, seconds)
        made = time.perf_counter() - started
        file_bytes = sum(entry.stat().st_size for entry in os.scandir(folder)) / clips
        out.write(
            f"import_audio: {clips} clips of {seconds:g} s, stereo {RATE / 1000:g} kHz MP3 "
            f"({file_bytes / 1024:.0f} KiB each): {min(distinct, clips)} distinct encodings "
            f"copied to {clips} files (each file is hashed and decoded on its own), made in "
            f"{made:.1f} s\n"
        )
        load = os.getloadavg()[0]  # a shared machine's other work slows the figures
        cpu0, wall0 = time.process_time(), time.perf_counter()
        scan = scan_audio(folder, ids, cut=CUT, workers=workers)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
    problems = [*scan.missing, *(f"{doc}: {reason}" for doc, reason in scan.unreadable)]
    if problems or len(scan.found) != clips:
        raise ValueError(f"not every clip was analysed: {'; '.join(problems[:5])}")
    per_clip = wall / clips
    projected = per_clip * TARGET_CLIPS
    figures: dict[str, Any] = {
        "benchmark": "import_audio",
        "clips": clips,
        "distinct_encodings": min(distinct, clips),
        "clip_seconds": seconds,
        "format": "mp3",
        "sample_rate": RATE,
        "channels": CHANNELS,
        "mean_file_bytes": round(file_bytes),
        "cut": {"mode": CUT.mode, "seconds": CUT.seconds, "start_fraction": CUT.start_fraction},
        "workers": workers,
        "cores": os.cpu_count(),
        "load_average_before": round(load, 2),
        "make_seconds": round(made, 3),
        "seconds": round(wall, 3),
        "clips_per_second": round(clips / wall, 2),
        "seconds_per_clip": round(per_clip, 5),
        "cpu_seconds": round(cpu, 3),
        "cpu_seconds_per_clip": round(cpu / clips, 5),
        "projected_seconds_for_target_clips": round(projected, 2),
        "target_clips": TARGET_CLIPS,
        "target_seconds": TARGET_SECONDS,
        "met": projected <= TARGET_SECONDS,
    }
    out.write(
        f"  analysed in {wall:.1f} s with {workers} worker(s) (load average {load:.1f} on "
        f"{os.cpu_count()} cores before): {clips / wall:.1f} clips/s, "
        f"{per_clip * 1000:.1f} ms per clip (CPU {cpu:.1f} s, {cpu / clips * 1000:.1f} ms "
        "per clip)\n"
        f"  target: {TARGET_CLIPS} clips in {TARGET_SECONDS:.0f} s; at this rate "
        f"{TARGET_CLIPS} take {projected:.1f} s: {'met' if figures['met'] else 'NOT met'}\n"
    )
    return figures


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the figures here")
    parser.add_argument(
        "--clips", type=positive_int, default=TARGET_CLIPS, metavar="N", help="clips to analyse"
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="W",
        help="files analysed at once (default: the machine's cores, as the import does)",
    )
    parser.add_argument(
        "--distinct",
        type=positive_int,
        default=16,
        metavar="D",
        help="distinct clips encoded, then copied to N files",
    )
    parser.add_argument(
        "--seconds", type=float, default=30.0, metavar="S", help="length of each clip"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        metavar="DIR",
        help="where the temporary folder of clips goes (default: the system's; N x 0.5 MB)",
    )


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    if not 1.0 <= args.seconds <= 600.0:
        raise ValueError(f"--seconds must be from 1 to 600, not {args.seconds:g}")
    figures = import_audio_benchmark(
        args.clips,
        distinct=args.distinct,
        seconds=args.seconds,
        workers=args.workers,
        workdir=args.workdir,
        out=out,
    )
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args, name="import_audio")


if __name__ == "__main__":
    raise SystemExit(main())
