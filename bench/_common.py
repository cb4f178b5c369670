"""What the benchmarks share: the confidence targets they study, the collection they time,
their ``main``, the types of their counting options and the pool that runs their tasks."""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import wave
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from mtcjudge.ingest.formats import Runs, read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection, load_synthetic
from mtcjudge.mtc.synthetic import generate

__all__ = [
    "SILENT_CLIP_BYTES",
    "SILENT_CLIP_SECONDS",
    "TARGETS",
    "allowance",
    "central_interval",
    "excess_interval",
    "in_processes",
    "mirex_or_synthetic",
    "non_negative_int",
    "positive_int",
    "run_benchmark",
    "write_silent_clips",
]

#: the ranking-confidence targets the calibration, projection and stop-margin benchmarks study
TARGETS = (0.90, 0.95, 0.99)

#: the judging benchmarks' clips: a short silence (16-bit mono WAV at 8 kHz), played to its end
SILENT_CLIP_SECONDS = 0.25
_SILENT_CLIP_RATE = 8000
#: the bytes of one such file (the 44-byte WAV header and the samples)
SILENT_CLIP_BYTES = 44 + 2 * int(SILENT_CLIP_SECONDS * _SILENT_CLIP_RATE)
#: the rate of clips of a given length (``write_silent_clips(seconds=...)``)
_LONG_CLIP_RATE = 2000


def write_silent_clips(runs: Runs, folder: Path, seconds: float | None = None) -> Path:
    """A silent WAV per query and document of ``runs``, named by its id, in ``folder``
    (created): a campaign made with it has audio for every pair. By default a quarter of a
    second (16-bit at 8 kHz); with ``seconds``, clips that long at 2 kHz in 8 bits (60 kB per
    30 s), so a campaign's clips have real lengths at little cost on disk (the server serves
    its own rendition of each)."""
    ids = set(runs.queries)
    for per_query in runs.lists.values():
        for documents in per_query.values():
            ids.update(documents)
    folder.mkdir(parents=True, exist_ok=True)
    if seconds is None:
        rate, width, frames = (
            _SILENT_CLIP_RATE,
            2,
            b"\x00\x00" * int(SILENT_CLIP_SECONDS * _SILENT_CLIP_RATE),
        )
    else:
        rate, width = _LONG_CLIP_RATE, 1
        frames = b"\x80" * round(seconds * _LONG_CLIP_RATE)  # unsigned 8-bit silence
    for clip_id in ids:
        with wave.open(str(folder / f"{clip_id}.wav"), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(width)
            out.setframerate(rate)
            out.writeframes(frames)
    return folder


def run_benchmark(
    argv: Sequence[str] | None,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run_from_args: Callable[[argparse.Namespace, TextIO], int],
    *,
    name: str | None = None,
) -> int:
    """Parse ``argv`` and run the benchmark, writing to standard output; its exit status.

    With ``name``, a ``ValueError`` (a bad input file) is reported as ``NAME: error: ...``
    with status 2 instead of a traceback."""
    parser = argparse.ArgumentParser(description=description)
    add_arguments(parser)
    args = parser.parse_args(argv)
    if name is None:
        return run_from_args(args, sys.stdout)
    try:
        return run_from_args(args, sys.stdout)
    except ValueError as exc:
        sys.stderr.write(f"{name}: error: {exc}\n")
        return 2


def mirex_or_synthetic(
    runs: Path | None, metadata: Path | None, judgments: Path | None, *, judgments_for: str
) -> tuple[LoadedCollection, str]:
    """The collection a timing benchmark measures, and its name: the runs given (with their
    FINE judgments, ``judgments_for`` saying what they are used as, and the metadata) at
    k = 5, or a synthetic 18 x 100 x 5 one of MIREX 2011's shape."""
    if runs is None:
        return load_synthetic(generate(18, 100, 5, seed=0)), "synthetic 18x100x5"
    if judgments is None:
        raise ValueError(f"--runs needs --judgments ({judgments_for})")
    collection = load_collection(
        read_runs(runs),
        5,
        read_metadata(metadata) if metadata else None,
        read_judgments(judgments, "fine"),
    )
    return collection, str(runs)


def positive_int(text: str) -> int:
    """An option's count of 1 or more (``type=`` of ``add_argument``)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def non_negative_int(text: str) -> int:
    """An option's count of 0 or more (``type=`` of ``add_argument``)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text}")
    return value


TaskT = TypeVar("TaskT")
ResultT = TypeVar("ResultT")


def in_processes(
    run: Callable[[TaskT], ResultT], tasks: Sequence[TaskT], workers: int
) -> Iterator[ResultT]:
    """``run`` of every task, as each finishes: in ``workers`` spawned processes, or in this one
    with one worker or one task (``run`` is a module's function, the tasks pickle)."""
    if workers > 1 and len(tasks) > 1:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            yield from pool.imap_unordered(run, tasks)
    else:
        for task in tasks:
            yield run(task)


def allowance(target: float, stop: str, confidence: float) -> float:
    """The share of system pairs a campaign's stop may get wrong: ``1 - target`` when it
    stopped confident, else ``1 - `` the confidence it ended with (a pool judged to the end
    claims no more than that)."""
    claimed = target if stop == "confidence" else min(target, confidence)
    return 1.0 - claimed


#: bootstrap resamples behind the intervals of the benchmarks' pooled figures
RESAMPLES = 4000


def central_interval(values: ArrayLike) -> tuple[float, float]:
    """The central 95 % of ``values`` (bootstrap replicates; NaN ones left out); NaN when
    there are none."""
    x = np.asarray(values, dtype=np.float64)
    finite = x[np.isfinite(x)]
    if finite.size == 0:
        return (math.nan, math.nan)
    low, high = np.percentile(finite, [2.5, 97.5])
    return (float(low), float(high))


def excess_interval(
    wrong: Sequence[float], allowed: Sequence[float], rng: np.random.Generator
) -> tuple[float, float] | None:
    """95 % bootstrap interval over campaigns (drawn with replacement) of the pooled wrong
    pairs less the pooled allowance: an excess whose interval includes 0 is one that chance
    alone can make. None with fewer than two campaigns (one says nothing of the spread)."""
    if len(wrong) != len(allowed):
        raise ValueError("one allowance per campaign")
    if len(wrong) < 2:
        return None
    excess = np.asarray(wrong, dtype=np.float64) - np.asarray(allowed, dtype=np.float64)
    draws = rng.integers(0, excess.size, size=(RESAMPLES, excess.size))
    return central_interval(excess[draws].sum(axis=1))
