"""Adding one system to a finished campaign: what MTC asks for, against judging all its pairs.

Usage::

    nice .venv/bin/python bench/add_system.py --data $MIREX2011 --json add-system.json
    mtcjudge bench add_system --data DIR --quick

For every system S (``--systems``, default all), on a fully judged collection (MIREX 2011
from ``--data DIR``, or ``--synthetic SEED`` for a seeded MIREX-shaped one):

1. **phase 1**: MTC runs on the pool of the *other* systems with the engine a campaign builds
   (:func:`mtcjudge.mtc.factory.engine_for_settings`: the ``calibrated`` estimator, the
   confidence-weighted policy, CG@5, target 0.95 unless told otherwise), judging with the
   true scores, pair by pair (``judge``, as a campaign does), until its
   stopping rule holds;
2. **phase 2**: S is added. The pool grows by S's *new* pairs only (those no other system
   retrieved); the pairs S shares with the old pool keep the state phase 1 left them in,
   judged or not. A fresh engine is built over all the systems with phase 1's judgments as
   known values (``judged_values``: what a campaign's planner does after ``campaign
   add-runs``) and MTC continues until the stopping rule holds again;
3. the report: S's new pairs, the judgments of phase 2 split into S's new pairs, S's pairs
   shared with the old pool, and old pairs S does not retrieve; their share of S's new pairs;
   the sign accuracy of S against every other system (estimated differences against those
   under complete judgments) and the confidence the engine claims for them.

Two baselines: the *classic* way, judging all of S's new pairs on top of phase 1 (its cost
is the number of new pairs; the accuracy and confidence are those of the engine at that
state, with no further MTC), and MTC *from scratch* on all the systems.

The default confidence-weighted policy is deterministic. ``--repeats R`` replays every
system R times: repeat 0 is that deterministic path, the others multiply the selection
weights by ``1 + jitter * u`` (``u`` uniform in [-1, 1], ``--jitter``, 0.1 %) before every
choice, as bench/projection.py does, so near-ties fall differently and the spread shows how
much of a figure is the path rather than the system. Figures are printed, never asserted
(docs/add-system.md has the measured ones).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

if __package__ in (None, ""):  # run as ``python bench/add_system.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import positive_int, run_benchmark
from mtcjudge.cli.common import UsageError
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection, load_synthetic
from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.factory import CALIBRATED, ESTIMATOR_CHOICES, engine_for_settings
from mtcjudge.mtc.measures import (
    MEASURES,
    RATIO_MEASURES,
    Evaluation,
    evaluate,
    inverse_denominators,
)
from mtcjudge.mtc.replay import correct_signs, sign_accuracy
from mtcjudge.mtc.scales import FINE, Scale
from mtcjudge.mtc.selection import POLICIES, CoRetrieval, best_pairs, confidence_weights
from mtcjudge.mtc.synthetic import generate

__all__ = [
    "DESCRIPTION",
    "AddSystemResult",
    "Pools",
    "ScratchResult",
    "Settings",
    "add_arguments",
    "main",
    "replay_add_system",
    "replay_from_scratch",
    "run_from_args",
    "run_mtc",
    "runs_array",
    "split_pools",
]

DESCRIPTION = (
    "Replay adding one system to a finished MTC campaign (MIREX 2011 or synthetic): the "
    "judgments MTC asks for against judging all of the system's new pairs, and against "
    "MTC from scratch."
)

IntArray = NDArray[np.intp]
FloatArray = NDArray[np.float64]

#: MIREX 2011's systems are few enough for all; --quick takes every third by true rank
QUICK_EVERY = 3


@dataclass(frozen=True)
class Settings:
    """The engine a campaign would build, and the replay's path noise."""

    estimator: str = CALIBRATED
    measure: str = "cg"
    policy: str = "confidence"
    target: float = 0.95
    jitter: float = 0.001
    seed: int = 0

    def engine(
        self,
        collection: Collection,
        metadata: Metadata | None,
        scale: Scale,
        judged_values: FloatArray | None = None,
    ) -> MTCEngine:
        engine, _ = engine_for_settings(
            collection,
            metadata,
            scale,
            self.estimator,
            measure=self.measure,
            policy=self.policy,
            target=self.target,
            seed=self.seed,
            judged_values=judged_values,
        )
        return engine


# ---------------------------------------------------------------- the two pools
def runs_array(collection: Collection) -> IntArray:
    """The systems' top-k lists back from the entries: ``(n_systems, n_queries, k)``, -1 padded."""
    c = collection
    runs = np.full((c.n_systems, c.n_queries, c.k), -1, dtype=np.intp)
    runs[c.entry_system, c.pair_query[c.entry_pair], c.entry_rank - 1] = c.pair_doc[c.entry_pair]
    return runs


@dataclass(frozen=True, eq=False)
class Pools:
    """The pool without system ``system`` ("old") inside the pool of every system ("full").

    Attributes
    ----------
    full, old : Collection
        Same queries, documents and k; ``old`` holds every system but ``system``, in order.
    system : int
        Index of the added system in ``full``.
    others : ndarray of int
        Index in ``full`` of each system of ``old``.
    old_to_full : ndarray of int, shape (old.n_pairs,)
        The ``full`` pair of every ``old`` pair (same query and document).
    system_pairs : ndarray of int
        ``full`` pairs that ``system`` retrieves.
    new_pairs : ndarray of int
        The part of ``system_pairs`` no other system retrieves: what adding it adds.
    """

    full: Collection
    old: Collection
    system: int
    others: IntArray
    old_to_full: IntArray
    system_pairs: IntArray
    new_pairs: IntArray

    @property
    def shared_pairs(self) -> IntArray:
        """``system_pairs`` that were already in the old pool."""
        return np.setdiff1d(self.system_pairs, self.new_pairs)


def split_pools(collection: Collection, system: int) -> Pools:
    """The pool of every system but ``system``, and how its pairs map into the full pool."""
    if not 0 <= system < collection.n_systems:
        raise ValueError(f"system must be in 0..{collection.n_systems - 1}, found {system}")
    if collection.n_systems < 3:
        raise ValueError("adding a system needs at least 2 others to rank it against")
    others = np.flatnonzero(np.arange(collection.n_systems) != system).astype(np.intp)
    old = build_collection(runs_array(collection)[others], collection.k)
    n_docs = int(max(collection.pair_doc.max(initial=0), old.pair_doc.max(initial=0))) + 1
    # pairs are sorted by (query, document) in both pools, so the keys are sorted too
    full_keys = collection.pair_query * n_docs + collection.pair_doc
    old_keys = old.pair_query * n_docs + old.pair_doc
    old_to_full = np.searchsorted(full_keys, old_keys).astype(np.intp)
    in_old = np.zeros(collection.n_pairs, dtype=bool)
    in_old[old_to_full] = True
    system_pairs = np.unique(collection.entry_pair[collection.entry_system == system])
    return Pools(
        full=collection,
        old=old,
        system=system,
        others=others,
        old_to_full=old_to_full,
        system_pairs=system_pairs.astype(np.intp),
        new_pairs=system_pairs[~in_old[system_pairs]].astype(np.intp),
    )


# ---------------------------------------------------------------- the loop
def run_mtc(
    engine: MTCEngine,
    truth: FloatArray,
    rng: np.random.Generator,
    jitter: float = 0.0,
    *,
    focus: int | None = None,
) -> list[int]:
    """Judge from ``truth`` one pair at a time until the engine's stopping rule holds.

    Each judgment is applied as a campaign applies it (``judge``).
    With ``jitter`` > 0 the selection weights are multiplied by ``1 + jitter * u`` first.
    With ``focus`` (a system index), the selection weighs only the system pairs of that
    system (:func:`focused_weights`) and judging stops only when, besides the stopping rule,
    the mean confidence of its pairs reaches the engine's target (or nothing is left).
    Returns the pairs judged, in order.
    """
    c = engine.collection
    co = CoRetrieval.build(c, engine.coef) if focus is not None else None
    judged: list[int] = []
    while not _done(engine, focus):
        if focus is None and jitter == 0:
            pair = engine.select(1)
        else:
            weights = engine.weights() if focus is None else focused_weights(engine, focus, co)
            if jitter > 0:
                weights = weights * (1.0 + jitter * rng.uniform(-1.0, 1.0, c.n_pairs))
            pair = best_pairs(weights, ~engine.judged, engine.var, c.mean_rank, c.pair_query, 1)
        engine.judge(pair, truth[pair])
        judged.extend(int(p) for p in pair)
    return judged


def _done(engine: MTCEngine, focus: int | None) -> bool:
    reason = engine.stop_reason()
    if reason is None:
        return False
    if focus is None or reason == "complete":
        return True
    return system_confidence(engine.evaluation(), focus) >= engine.config.target


def focused_weights(engine: MTCEngine, system: int, co: CoRetrieval | None = None) -> FloatArray:
    """[U12] confidence weights (docs/method.md §4.2) over the system pairs of ``system`` only.

    The other system pairs are treated as settled (confidence 1), so a pair is worth
    judging in proportion to how much it moves ``system``'s differences that are still
    uncertain: its own results first, then the results of the systems it is close to.
    """
    c = engine.collection
    confidence = engine.evaluation().pair_confidence
    masked = np.ones_like(confidence)
    masked[system, :] = confidence[system, :]
    masked[:, system] = confidence[:, system]
    weights = confidence_weights(c, engine.coef, masked, engine.config.confident_level, co)
    if engine.config.measure in RATIO_MEASURES:
        weights = weights * inverse_denominators(engine.ey)[c.pair_query] ** 2
    return weights


def complete_means(
    collection: Collection, truth: FloatArray, scale: Scale, measure: str
) -> FloatArray:
    """Every system's score under complete judgments: the truth the estimates are held to."""
    return evaluate(collection, truth, np.zeros_like(truth), measure, scale).mean


def system_accuracy(estimated: FloatArray, true: FloatArray, system: int) -> float:
    """Share of the other systems that ``system`` is ordered against as under complete
    judgments, true ties counted strictly as in :func:`mtcjudge.mtc.replay.correct_signs`."""
    a, b = np.triu_indices(true.shape[0], 1)
    involved = (a == system) | (b == system)
    return float(correct_signs(estimated, true)[involved].mean())


def overall_accuracy(estimated: FloatArray, true: FloatArray) -> float:
    """Share of all system pairs ordered as under complete judgments (strict ties)."""
    return sign_accuracy(estimated, true)


def misordered(
    estimated: FloatArray, true: FloatArray, system: int, names: Sequence[str]
) -> tuple[tuple[str, float], ...]:
    """The systems ``system`` is ordered against wrongly, each with the true difference
    ``true[system] - true[other]`` (how close a call it was)."""
    a, b = np.triu_indices(true.shape[0], 1)
    wrong = ~correct_signs(estimated, true)
    others = [
        int(b[i] if a[i] == system else a[i])
        for i in np.flatnonzero(wrong)
        if system in (a[i], b[i])
    ]
    return tuple((names[o], float(true[system] - true[o])) for o in sorted(others))


def system_confidence(evaluation: Evaluation, system: int) -> float:
    """Mean confidence the engine claims in the order of ``system`` against each other one."""
    conf = evaluation.pair_confidence[system]
    return float(np.delete(conf, system).mean())


def rank_of(means: FloatArray, system: int) -> int:
    """1-based rank of ``system`` by decreasing score."""
    return int((means > means[system]).sum()) + 1


# ---------------------------------------------------------------- one replay
@dataclass(frozen=True)
class AddSystemResult:
    """Phase 1 without the system, phase 2 with it, and the classic baseline."""

    system: str
    repeat: int
    system_pairs: int  # pool pairs S retrieves
    new_pairs: int  # of those, not in the old pool: the classic cost of adding S
    shared_pairs: int  # of those, already in the old pool
    shared_judged: int  # shared pairs phase 1 judged
    phase1_pool: int
    phase1_judgments: int
    phase1_confidence: float
    phase1_accuracy: float  # sign accuracy of the old systems among themselves
    start_confidence: float  # the engine over every system before phase 2 judges anything
    start_system_confidence: float
    start_system_accuracy: float
    phase2_judgments: int
    phase2_new: int  # of S's new pairs
    phase2_shared: int  # of S's pairs shared with the old pool
    phase2_old: int  # old pairs S does not retrieve
    final_confidence: float
    final_accuracy: float
    system_confidence: float  # mean C(S, other) claimed at the stop
    system_accuracy: float  # share of the others S is ordered against correctly
    true_rank: int
    estimated_rank: int
    classic_confidence: float  # the engine after judging every new pair of S, no MTC
    classic_system_confidence: float
    classic_system_accuracy: float
    # phase 2 focused on S (run_mtc's focus): from the same start as phase 2
    focused_judgments: int
    focused_new: int
    focused_shared: int
    focused_old: int
    focused_confidence: float
    focused_system_confidence: float
    focused_system_accuracy: float
    seconds: float
    misordered: tuple[tuple[str, float], ...] = ()  # at phase 2's stop: (other, true gap)
    focused_misordered: tuple[tuple[str, float], ...] = ()
    phase1_pairs: tuple[int, ...] = field(repr=False, default=())  # full-pool indices
    phase2_pairs: tuple[int, ...] = field(repr=False, default=())  # in judging order
    focused_pairs: tuple[int, ...] = field(repr=False, default=())

    @property
    def cost_share(self) -> float | None:
        """Phase-2 judgments as a share of S's new pairs (None when S adds no pair)."""
        return self.phase2_judgments / self.new_pairs if self.new_pairs else None

    @property
    def focused_cost_share(self) -> float | None:
        """The same for the phase 2 focused on S."""
        return self.focused_judgments / self.new_pairs if self.new_pairs else None

    def summary(self) -> dict[str, Any]:
        row = asdict(self)
        del row["phase1_pairs"], row["phase2_pairs"], row["focused_pairs"]
        row["cost_share"] = self.cost_share
        row["focused_cost_share"] = self.focused_cost_share
        return row


def replay_add_system(
    loaded: LoadedCollection, system: int, scale: Scale, settings: Settings, repeat: int = 0
) -> AddSystemResult:
    """Phase 1 on the pool without ``system``, phase 2 with it (module docstring).

    ``loaded.judged_values`` must hold the true judgment of every pool pair.
    """
    started = time.perf_counter()
    truth = scale.check_values(loaded.judged_values, "true judgment")
    pools = split_pools(loaded.collection, system)
    rng = np.random.default_rng([settings.seed, repeat, system])
    jitter = settings.jitter if repeat else 0.0
    measure = settings.measure

    phase1_old, old_final, phase1_accuracy, known = _phase1(
        loaded, pools, truth, scale, settings, rng, jitter
    )
    engine = settings.engine(pools.full, loaded.metadata, scale, judged_values=known)
    true_means = complete_means(pools.full, truth, scale, measure)
    start = engine.evaluation()
    phase2 = run_mtc(engine, truth, rng, jitter)
    final = engine.evaluation()

    classic_known = known.copy()
    classic_known[pools.new_pairs] = truth[pools.new_pairs]
    classic = settings.engine(
        pools.full, loaded.metadata, scale, judged_values=classic_known
    ).evaluation()

    focused_engine = settings.engine(pools.full, loaded.metadata, scale, judged_values=known)
    focused_rng = np.random.default_rng([settings.seed, repeat, system, 1])
    focused = run_mtc(focused_engine, truth, focused_rng, jitter, focus=system)
    focused_final = focused_engine.evaluation()

    phase2_new, phase2_shared, phase2_old = _by_origin(phase2, pools)
    focused_new, focused_shared, focused_old = _by_origin(focused, pools)
    shared = pools.shared_pairs
    return AddSystemResult(
        system=loaded.systems[system],
        repeat=repeat,
        system_pairs=int(pools.system_pairs.shape[0]),
        new_pairs=int(pools.new_pairs.shape[0]),
        shared_pairs=int(shared.shape[0]),
        shared_judged=int((~np.isnan(known[shared])).sum()),
        phase1_pool=pools.old.n_pairs,
        phase1_judgments=len(phase1_old),
        phase1_confidence=old_final.ranking_confidence,
        phase1_accuracy=phase1_accuracy,
        start_confidence=start.ranking_confidence,
        start_system_confidence=system_confidence(start, system),
        start_system_accuracy=system_accuracy(start.mean, true_means, system),
        phase2_judgments=len(phase2),
        phase2_new=phase2_new,
        phase2_shared=phase2_shared,
        phase2_old=phase2_old,
        final_confidence=final.ranking_confidence,
        final_accuracy=overall_accuracy(final.mean, true_means),
        system_confidence=system_confidence(final, system),
        system_accuracy=system_accuracy(final.mean, true_means, system),
        true_rank=rank_of(true_means, system),
        estimated_rank=rank_of(final.mean, system),
        classic_confidence=classic.ranking_confidence,
        classic_system_confidence=system_confidence(classic, system),
        classic_system_accuracy=system_accuracy(classic.mean, true_means, system),
        focused_judgments=len(focused),
        focused_new=focused_new,
        focused_shared=focused_shared,
        focused_old=focused_old,
        focused_confidence=focused_final.ranking_confidence,
        focused_system_confidence=system_confidence(focused_final, system),
        focused_system_accuracy=system_accuracy(focused_final.mean, true_means, system),
        seconds=time.perf_counter() - started,
        misordered=misordered(final.mean, true_means, system, loaded.systems),
        focused_misordered=misordered(focused_final.mean, true_means, system, loaded.systems),
        phase1_pairs=tuple(int(p) for p in pools.old_to_full[np.asarray(phase1_old, np.intp)]),
        phase2_pairs=tuple(phase2),
        focused_pairs=tuple(focused),
    )


def _phase1(
    loaded: LoadedCollection,
    pools: Pools,
    truth: FloatArray,
    scale: Scale,
    settings: Settings,
    rng: np.random.Generator,
    jitter: float,
) -> tuple[list[int], Evaluation, float, FloatArray]:
    """Phase 1, the loop on the pool without the system: the pairs it judged (old pool's
    indices), its final evaluation and accuracy, and every full-pool pair's judgment it
    leaves (NaN where none)."""
    old_truth = truth[pools.old_to_full]
    old_engine = settings.engine(pools.old, loaded.metadata, scale)
    phase1_old = run_mtc(old_engine, old_truth, rng, jitter)
    old_final = old_engine.evaluation()
    accuracy = overall_accuracy(
        old_final.mean, complete_means(pools.old, old_truth, scale, settings.measure)
    )
    known = np.full(pools.full.n_pairs, np.nan)
    judged_old = np.flatnonzero(old_engine.judged)
    known[pools.old_to_full[judged_old]] = old_engine.values[judged_old]
    return phase1_old, old_final, accuracy, known


def _by_origin(pairs: list[int], pools: Pools) -> tuple[int, int, int]:
    """How many of the full pool's ``pairs`` are new (the added system's alone), shared (the
    system's, retrieved by others too) and old (not the system's)."""
    is_new = np.zeros(pools.full.n_pairs, dtype=bool)
    is_new[pools.new_pairs] = True
    is_system = np.zeros(pools.full.n_pairs, dtype=bool)
    is_system[pools.system_pairs] = True
    p = np.asarray(pairs, dtype=np.intp)
    return int(is_new[p].sum()), int((is_system[p] & ~is_new[p]).sum()), int((~is_system[p]).sum())


@dataclass(frozen=True)
class ScratchResult:
    """MTC from scratch on every system."""

    repeat: int
    pool: int
    judgments: int
    confidence: float
    accuracy: float
    system_accuracy: dict[str, float]  # per system, against the others
    system_confidence: dict[str, float]
    seconds: float


def replay_from_scratch(
    loaded: LoadedCollection, scale: Scale, settings: Settings, repeat: int = 0
) -> ScratchResult:
    started = time.perf_counter()
    truth = scale.check_values(loaded.judged_values, "true judgment")
    c = loaded.collection
    engine = settings.engine(c, loaded.metadata, scale)
    rng = np.random.default_rng([settings.seed, repeat, c.n_systems])
    judged = run_mtc(engine, truth, rng, settings.jitter if repeat else 0.0)
    final = engine.evaluation()
    true_means = complete_means(c, truth, scale, settings.measure)
    return ScratchResult(
        repeat=repeat,
        pool=c.n_pairs,
        judgments=len(judged),
        confidence=final.ranking_confidence,
        accuracy=overall_accuracy(final.mean, true_means),
        system_accuracy={
            name: system_accuracy(final.mean, true_means, s)
            for s, name in enumerate(loaded.systems)
        },
        system_confidence={
            name: system_confidence(final, s) for s, name in enumerate(loaded.systems)
        },
        seconds=time.perf_counter() - started,
    )


# ---------------------------------------------------------------- the benchmark
def load_mirex(directory: Path) -> LoadedCollection:
    runs = read_runs(directory / "runs.tsv")
    judgments = read_judgments(directory / "judgments-fine.tsv", "fine")
    metadata = read_metadata(directory / "metadata.tsv")
    loaded = load_collection(runs, 5, metadata, judgments)
    missing = int(np.isnan(loaded.judged_values).sum())
    if missing:
        raise UsageError(
            f"{directory / 'judgments-fine.tsv'}: {missing} pool pairs have no judgment; "
            "the replay needs every pair judged"
        )
    return loaded


# the worker processes inherit these (fork): the collection is loaded once
_LOADED: LoadedCollection | None = None
_SETTINGS = Settings()


def _task(task: tuple[str, int, int]) -> AddSystemResult | ScratchResult:
    kind, system, repeat = task
    if _LOADED is None:
        raise RuntimeError("run_from_args sets the collection before the tasks run")
    if kind == "scratch":
        return replay_from_scratch(_LOADED, FINE, _SETTINGS, repeat)
    return replay_add_system(_LOADED, system, FINE, _SETTINGS, repeat)


def _choose_systems(loaded: LoadedCollection, args: argparse.Namespace) -> list[int]:
    true_means = complete_means(loaded.collection, loaded.judged_values, FINE, args.measure)
    by_rank = [int(s) for s in np.argsort(-true_means, kind="stable")]
    if args.systems:
        names = [n.strip() for item in args.systems for n in item.split(",") if n.strip()]
        unknown = [n for n in names if n not in loaded.systems]
        if unknown:
            raise UsageError(
                f"--systems: unknown system {unknown[0]!r} (known: {', '.join(loaded.systems)})"
            )
        chosen = {loaded.systems.index(n) for n in names}
        return [s for s in by_rank if s in chosen]
    if args.quick:
        return by_rank[::QUICK_EVERY]
    return by_rank


def _median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def _figures(rows: list[AddSystemResult], prefix: str) -> dict[str, Any]:
    """Medians over the repeats of one phase 2 (``phase2`` or ``focused``)."""
    judgments = "phase2_judgments" if prefix == "phase2" else "focused_judgments"
    share = "cost_share" if prefix == "phase2" else "focused_cost_share"
    conf = "system_confidence" if prefix == "phase2" else "focused_system_confidence"
    acc = "system_accuracy" if prefix == "phase2" else "focused_system_accuracy"
    counts = [getattr(r, judgments) for r in rows]
    shares = [v for r in rows if (v := getattr(r, share)) is not None]
    return {
        f"{prefix}_judgments": _median(counts),
        f"{prefix}_judgments_min": min(counts),
        f"{prefix}_judgments_max": max(counts),
        f"{prefix}_new": _median([getattr(r, f"{prefix}_new") for r in rows]),
        f"{prefix}_shared": _median([getattr(r, f"{prefix}_shared") for r in rows]),
        f"{prefix}_old": _median([getattr(r, f"{prefix}_old") for r in rows]),
        f"{prefix}_cost_share": _median(shares),
        f"{prefix}_system_confidence": _median([getattr(r, conf) for r in rows]),
        f"{prefix}_system_accuracy": _median([getattr(r, acc) for r in rows]),
        f"{prefix}_system_accuracy_min": min(getattr(r, acc) for r in rows),
    }


def _overall(results: list[AddSystemResult], prefix: str) -> dict[str, Any]:
    """Figures over every run of one phase 2 (``phase2`` or ``focused``)."""
    focused = prefix == "focused"
    counts = [r.focused_judgments if focused else r.phase2_judgments for r in results]
    shares = [
        v for r in results if (v := r.focused_cost_share if focused else r.cost_share) is not None
    ]
    new = [r.focused_new if focused else r.phase2_new for r in results]
    acc = [r.focused_system_accuracy if focused else r.system_accuracy for r in results]
    conf = [r.focused_system_confidence if focused else r.system_confidence for r in results]
    gaps = [
        abs(gap) for r in results for _, gap in (r.focused_misordered if focused else r.misordered)
    ]
    return {
        f"{prefix}_misordered": len(gaps),
        f"{prefix}_misordered_gap_median": _median(gaps),
        f"{prefix}_misordered_gap_max": max(gaps, default=float("nan")),
        f"{prefix}_misordered_below_0_01": sum(g < 0.01 for g in gaps),
        f"{prefix}_judgments_median": _median(counts),
        f"{prefix}_judgments_mean": float(np.mean(counts)),
        f"{prefix}_cost_share_median": _median(shares),
        f"{prefix}_cost_share_mean": float(np.mean(shares)) if shares else float("nan"),
        f"{prefix}_cost_share_min": min(shares, default=float("nan")),
        f"{prefix}_cost_share_max": max(shares, default=float("nan")),
        f"{prefix}_new_share": sum(new) / max(1, sum(counts)),
        f"{prefix}_system_accuracy_mean": float(np.mean(acc)),
        f"{prefix}_system_confidence_mean": float(np.mean(conf)),
        f"{prefix}_runs_accuracy_below_confidence": sum(
            a < c for a, c in zip(acc, conf, strict=True)
        ),
    }


def summarise(results: list[AddSystemResult], scratch: list[ScratchResult]) -> dict[str, Any]:
    """Per system (medians over the repeats) and overall figures."""
    per_system: list[dict[str, Any]] = []
    for name in dict.fromkeys(r.system for r in results):
        rows = [r for r in results if r.system == name]
        per_system.append(
            {
                "system": name,
                "true_rank": rows[0].true_rank,
                "new_pairs": rows[0].new_pairs,
                "shared_pairs": rows[0].shared_pairs,
                "repeats": len(rows),
                "shared_judged": _median([r.shared_judged for r in rows]),
                "phase1_judgments": _median([r.phase1_judgments for r in rows]),
                "start_system_confidence": _median([r.start_system_confidence for r in rows]),
                "start_system_accuracy": _median([r.start_system_accuracy for r in rows]),
                **_figures(rows, "phase2"),
                **_figures(rows, "focused"),
                "classic_system_accuracy": _median([r.classic_system_accuracy for r in rows]),
                "classic_system_confidence": _median([r.classic_system_confidence for r in rows]),
                "incremental_total": _median(
                    [r.phase1_judgments + r.phase2_judgments for r in rows]
                ),
                "scratch_system_accuracy": _median([s.system_accuracy[name] for s in scratch]),
            }
        )
    summary: dict[str, Any] = {
        "runs": len(results),
        "systems": len(per_system),
        "new_pairs_median": _median([r.new_pairs for r in results]),
        **_overall(results, "phase2"),
        **_overall(results, "focused"),
        "classic_system_accuracy_mean": float(
            np.mean([r.classic_system_accuracy for r in results])
        ),
        "classic_system_confidence_mean": float(
            np.mean([r.classic_system_confidence for r in results])
        ),
        "incremental_total_median": _median(
            [r.phase1_judgments + r.phase2_judgments for r in results]
        ),
    }
    if scratch:
        summary["scratch_judgments_median"] = _median([s.judgments for s in scratch])
        summary["scratch_accuracy_median"] = _median([s.accuracy for s in scratch])
    return {"per_system": per_system, "summary": summary}


def _phase_cell(row: dict[str, Any], prefix: str) -> str:
    spread = (
        f" [{row[prefix + '_judgments_min']}-{row[prefix + '_judgments_max']}]"
        if row["repeats"] > 1
        else ""
    )
    return (
        f"{row[prefix + '_judgments']:.0f}{spread} ({row[prefix + '_new']:.0f} / "
        f"{row[prefix + '_shared']:.0f} / {row[prefix + '_old']:.0f}) "
        f"| {100 * row[prefix + '_cost_share']:.1f} "
        f"| {row[prefix + '_system_confidence']:.3f} | {row[prefix + '_system_accuracy']:.3f}"
    )


def _overall_line(s: dict[str, Any], prefix: str, label: str) -> str:
    return (
        f"{label}: median {s[prefix + '_judgments_median']:.0f} judgments (mean "
        f"{s[prefix + '_judgments_mean']:.0f}) for a median of {s['new_pairs_median']:.0f} new "
        f"pairs; as % of S's new pairs: median {100 * s[prefix + '_cost_share_median']:.1f}, "
        f"mean {100 * s[prefix + '_cost_share_mean']:.1f} (range "
        f"{100 * s[prefix + '_cost_share_min']:.1f}-{100 * s[prefix + '_cost_share_max']:.1f}); "
        f"{100 * s[prefix + '_new_share']:.0f} % of them S's new pairs; S's accuracy "
        f"{s[prefix + '_system_accuracy_mean']:.3f} for a claimed confidence of "
        f"{s[prefix + '_system_confidence_mean']:.3f} (means), below the claim in "
        f"{s[prefix + '_runs_accuracy_below_confidence']} of {s['runs']} runs; "
        f"{s[prefix + '_misordered']} misordered pairs, true gap median "
        f"{s[prefix + '_misordered_gap_median']:.4f}, max {s[prefix + '_misordered_gap_max']:.4f}, "
        f"{s[prefix + '_misordered_below_0_01']} under 0.01"
    )


def print_table(report: dict[str, Any], out: TextIO) -> None:
    print(
        "\n| S | rank | new pairs | phase 1 "
        "| phase 2: judged (new / shared / old) | % of new | C(S) | acc(S) "
        "| focused: judged (new / shared / old) | % of new | C(S) | acc(S) "
        "| classic: acc(S) / C(S) | scratch: acc(S) |",
        file=out,
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", file=out)
    for row in report["per_system"]:
        print(
            f"| {row['system']} | {row['true_rank']} | {row['new_pairs']} "
            f"| {row['phase1_judgments']:.0f} | {_phase_cell(row, 'phase2')} "
            f"| {_phase_cell(row, 'focused')} "
            f"| {row['classic_system_accuracy']:.3f} / {row['classic_system_confidence']:.3f} "
            f"| {row['scratch_system_accuracy']:.3f} |",
            file=out,
        )
    s = report["summary"]
    print("", file=out)
    print(_overall_line(s, "phase2", "phase 2 (as a campaign)"), file=out)
    print(_overall_line(s, "focused", "phase 2 focused on S"), file=out)
    print(
        f"classic (every new pair of S judged, no MTC): S's accuracy "
        f"{s['classic_system_accuracy_mean']:.3f}, claimed confidence "
        f"{s['classic_system_confidence_mean']:.3f} (means)",
        file=out,
    )
    if "scratch_judgments_median" in s:
        print(
            f"phase 1 + phase 2: median {s['incremental_total_median']:.0f} judgments; MTC from "
            f"scratch on all systems: median {s['scratch_judgments_median']:.0f} (accuracy "
            f"{s['scratch_accuracy_median']:.3f})",
            file=out,
        )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--data", type=Path, help="MIREX 2011 AMS directory (runs.tsv, ...)")
    source.add_argument(
        "--synthetic",
        type=int,
        metavar="SEED",
        help="a seeded synthetic collection instead (MIREX-shaped: k=5, sizes below)",
    )
    parser.add_argument(
        "--synthetic-systems",
        type=positive_int,
        default=18,
        help="its systems (default: %(default)s)",
    )
    parser.add_argument(
        "--synthetic-queries",
        type=positive_int,
        default=100,
        help="its queries (default: %(default)s)",
    )
    parser.add_argument(
        "--systems",
        action="append",
        metavar="ID[,ID...]",
        help="the systems to add, one at a time (default: all, or every third with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="every third system by true rank, one repeat (overrides --repeats)",
    )
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=3,
        help="replays per system: the deterministic path, then jittered ones "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--jitter",
        type=float,
        default=0.001,
        help="selection weight jitter of repeats 1.. (default: %(default)s)",
    )
    parser.add_argument(
        "--measure",
        choices=MEASURES,
        default="cg",
        help="the measure MTC ranks by: cg = CG@5, dcg = MIREX nDCG@5 (all-maximum "
        "normaliser), ndcg = trec_eval nDCG@5 (ideal ordering), rbp (default: %(default)s)",
    )
    parser.add_argument(
        "--estimator", choices=ESTIMATOR_CHOICES, default=CALIBRATED, help="(default: %(default)s)"
    )
    parser.add_argument(
        "--policy", choices=POLICIES, default="confidence", help="(default: %(default)s)"
    )
    parser.add_argument(
        "--target", type=float, default=0.95, help="ranking confidence (default: %(default)s)"
    )
    parser.add_argument("--no-scratch", action="store_true", help="skip MTC from scratch")
    parser.add_argument(
        "--jobs", type=positive_int, default=2, help="worker processes (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the jittered paths (default: %(default)s)"
    )
    parser.add_argument("--json", type=Path, help="write every figure here")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    global _LOADED, _SETTINGS
    started = time.perf_counter()
    if args.data is None and args.synthetic is None:
        raise UsageError("bench add_system: give --data DIR (MIREX 2011) or --synthetic SEED")
    if not 0.5 <= args.target <= 1.0:
        raise UsageError(f"--target must be in [0.5, 1], found {args.target}")
    if args.jitter < 0:
        raise UsageError(f"--jitter must be >= 0, found {args.jitter}")
    if args.data is not None:
        loaded, source = load_mirex(args.data), "mirex2011"
    else:
        synthetic = generate(args.synthetic_systems, args.synthetic_queries, 5, seed=args.synthetic)
        loaded, source = load_synthetic(synthetic), f"synthetic-{args.synthetic}"
    repeats = 1 if args.quick else args.repeats
    systems = _choose_systems(loaded, args)
    _LOADED = loaded
    _SETTINGS = Settings(
        estimator=args.estimator,
        measure=args.measure,
        policy=args.policy,
        target=args.target,
        jitter=args.jitter,
        seed=args.seed,
    )
    tasks = [("scratch", -1, r) for r in range(repeats) if not args.no_scratch]
    tasks += [("add", s, r) for s in systems for r in range(repeats)]
    print(
        f"{source}: {loaded.collection.n_systems} systems, {loaded.collection.n_pairs} pool "
        f"pairs; adding {len(systems)} systems x {repeats} repeats "
        f"({_SETTINGS.estimator}, {_SETTINGS.measure}, {_SETTINGS.policy}, target "
        f"{_SETTINGS.target}) on {args.jobs} processes",
        file=out,
        flush=True,
    )
    results: list[AddSystemResult] = []
    scratch: list[ScratchResult] = []
    if args.jobs > 1:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            done = list(pool.map(_task, tasks))
    else:
        done = [_task(t) for t in tasks]
    for item in done:
        if isinstance(item, ScratchResult):
            scratch.append(item)
        else:
            results.append(item)
    report: dict[str, Any] = {
        "source": source,
        "settings": asdict(_SETTINGS),
        "repeats": repeats,
        "n_systems": loaded.collection.n_systems,
        "pool": loaded.collection.n_pairs,
        **summarise(results, scratch),
        "runs": [r.summary() for r in results],
        "scratch": [asdict(s) for s in scratch],
    }
    print_table(report, out)
    report["seconds"] = time.perf_counter() - started
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1))
    print(f"done in {report['seconds']:.0f} s", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args)


if __name__ == "__main__":
    raise SystemExit(main())
