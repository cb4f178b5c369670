"""Which assessors does the reliability flag catch, and what do careless ones do to a ranking?

Usage::

    nice .venv/bin/python bench/assessors.py --collections 8 --mirex $MIREX2011 \\
        --json assessors.json

Simulated campaigns on the calibration suite's collections
(:func:`bench.experiments.synthetic_zoo.suite_settings`, as ``bench/calibration.py``) and, with
``--mirex DIR``, MIREX 2011 FINE (CG). Every campaign runs the engine a campaign builds
(:func:`mtcjudge.mtc.factory.build_engine`, the default estimator ``joint``,
confidence-weighted selection, target 0.95): the planner ranks the pairs, the active
assessors take turns (each prefers a pair of the query they are on, as the product's
locality rule does), and at the product's default rate (:data:`QUALITY_RATE`) a turn is a
hidden quality trial instead: a reference (the query against itself), an anchor (a clearly
dissimilar clip) or a repeat of a pair the assessor judged. Every assessor is assessed with
:func:`mtcjudge.mtc.reliability.assess` every :data:`ASSESS_EVERY` of their answers, with
the expectations of :func:`mtcjudge.mtc.reliability.expected_moments` left out their own
judgments (what the planner does).

Assessor types (:data:`TYPES`; docs/quality.md gives the model): careful (the true score
plus a personal offset and noise the size of the thesis' disagreement between assessors),
random clickers, "always the middle", harsh and lenient (careful with a large offset),
fatigue (noise growing with every answer) and zero-listening (scores that ignore the clip;
reported listening 0 when the campaign's listening rule is off).

Scenarios, each on every collection with the same seed:

* ``exact``: every answer is the true score (no assessor noise at all: what
  ``bench/calibration.py`` replays), the reference for what careful assessors' noise costs;
* ``clean``: careful assessors only (the baseline of the judgments);
* ``mixed``: careful assessors and one of each other type, nobody set aside; run past the
  stop until every assessor has given :data:`MIN_ANSWERS` answers (or the pool is
  exhausted), for the flag figures; the ranking is read at the stop;
* ``random20 kept`` and ``random20 set aside``: 20 % random clickers, their judgments kept,
  or set aside when flagged (removed from the engine, their pairs back in the pool, judging
  on to the target).

Reported: per type, the share flagged and the answers until flagged (and the share flagged
within 30 answers among those who gave 30); the share of careful assessors flagged; per
scenario, the wrong system pairs at the stop against the allowance ``(1 - 0.95) x pairs``,
pooled, and the judgments against the clean campaign's. Wrong against the ranking careful
assessors give on average (:func:`careful_average`; the truth's in ``exact``), which the
claim is about; the count against the truth is kept beside it. Figures are printed and
written as JSON, never asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr

if __package__ in (None, ""):  # run as ``python bench/assessors.py``: bench.* from the tree
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    allowance,
    excess_interval,
    in_processes,
    non_negative_int,
    positive_int,
    run_benchmark,
)
from bench.experiments.synthetic_zoo import ZooSettings, generate_zoo, smoke_sized, suite_settings
from mtcjudge.cli.common import UsageError, check_output_file
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection, load_synthetic
from mtcjudge.mtc.assessor_offsets import JudgmentShares, apply_judged_noise
from mtcjudge.mtc.collection import Collection
from mtcjudge.mtc.disagreement import Disagreement, disagreement
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, build_engine
from mtcjudge.mtc.measures import evaluate
from mtcjudge.mtc.reliability import (
    DEFAULT_THRESHOLDS,
    Answer,
    Thresholds,
    assess,
    expected_moments,
)
from mtcjudge.mtc.replay import correct_signs
from mtcjudge.mtc.scales import Scale, get_scale

__all__ = [
    "DESCRIPTION",
    "TYPES",
    "AssessorRecord",
    "CampaignRecord",
    "Task",
    "add_arguments",
    "load_case",
    "main",
    "run_from_args",
    "run_task",
    "summarise",
]

DESCRIPTION = (
    "Simulated campaigns with careful, random, middle, harsh, lenient, fatigued and "
    "zero-listening assessors on the calibration suite (and MIREX 2011 with --mirex): who "
    "gets flagged and when, and the ranking's wrong pairs at 0.95 with and without setting "
    "flagged assessors aside, against a clean campaign."
)
TYPES = ("careful", "random", "middle", "harsh", "lenient", "fatigue", "zero_listening")
SCENARIOS = ("exact", "clean", "mixed", "random20 kept", "random20 set aside")
#: the product's default share of hand-outs that are hidden quality trials
QUALITY_RATE = 0.1
#: each assessor is assessed every this many of their answers
ASSESS_EVERY = 3
#: the mixed scenario runs on until every assessor has given this many answers
MIN_ANSWERS = 40
#: the detection target's horizon (issue 22)
WITHIN = 30
TARGET = 0.95
#: planned rounds at most per campaign: larger pools hand out several pairs per turn
ROUNDS = 300
#: a careful assessor's offset (standard deviation, FINE over 1), the range their own noise's
#: standard deviation is drawn from, and the chance of a slip to a neighbouring BROAD grade
OFFSET_SD = 0.05
NOISE_RANGE = (0.10, 0.25)
SLIP = 0.03


# ---------------------------------------------------------------------------- assessors
@dataclass(eq=False)
class Assessor:
    """A simulated volunteer: what they answer for a pair whose true FINE score is t."""

    index: int
    kind: str
    rng: np.random.Generator
    offset: float = 0.0
    noise: float = 0.15
    centre: float = 0.45
    answers: list[Answer] = field(default_factory=list)
    pairs: list[int] = field(default_factory=list)  # pool pairs judged, in order
    seconds: list[int] = field(default_factory=list)  # pairs given a second opinion, in order
    scores: dict[int, float] = field(default_factory=dict)  # pair -> first score
    persistent: dict[int, float] = field(default_factory=dict)
    query: int | None = None
    flagged_at: int | None = None
    failed_trials_at: int | None = None
    reasons: tuple[str, ...] = ()
    set_aside: bool = False
    assessed: int = 0  # answers at the last assessment

    @classmethod
    def make(cls, index: int, kind: str, seed: int) -> Assessor:
        rng = np.random.default_rng(np.random.SeedSequence([seed, index, 0xA55E]))
        a = cls(index, kind, rng)
        a.offset = float(rng.normal(0.0, OFFSET_SD))
        a.noise = float(rng.uniform(*NOISE_RANGE))
        if kind == "harsh":
            a.offset = -float(rng.uniform(0.15, 0.30))
        elif kind == "lenient":
            a.offset = float(rng.uniform(0.15, 0.30))
        a.centre = float(rng.uniform(0.3, 0.6))
        return a

    def view(self, truth: float, pair: int | None) -> float:
        """A careful assessor's score: the truth, their offset, a part of their own that
        stays with the pair (repeats keep it) and a part that does not."""
        n = len(self.answers)
        transient = 0.6 * self.noise
        if self.kind == "fatigue":
            transient *= 1.0 + n / 25.0
        if pair is None:
            persistent = float(self.rng.normal(0.0, 0.8 * self.noise))
        else:
            if pair not in self.persistent:
                self.persistent[pair] = float(self.rng.normal(0.0, 0.8 * self.noise))
            persistent = self.persistent[pair]
        value = truth + self.offset + persistent + float(self.rng.normal(0.0, transient))
        return float(np.clip(value, 0.0, 1.0))

    def answer(
        self, truth: float, pair: int | None, grade_truth: int | None = None
    ) -> tuple[float, int]:
        """(FINE score over 100, BROAD grade) for a pair of true score ``truth``.

        ``grade_truth``: the pair's true BROAD grade, where the collection has one of its
        own (a suite's BROAD collection, whose grades are not always the band of its FINE
        scores). A careful assessor's grade is then that grade moved by as many bands as
        their view of the score moved from the truth's band, so that what they give on
        average is the collection's truth on either scale; without it, the band of their
        view."""
        rng = self.rng
        if self.kind == "random":
            return round(float(rng.uniform()) * 100) / 100, int(rng.integers(0, 3))
        if self.kind == "middle":
            score = float(np.clip(0.5 + rng.normal(0.0, 0.02), 0, 1))
            return round(score * 100) / 100, 1
        if self.kind == "zero_listening":
            score = float(np.clip(rng.normal(self.centre, 0.15), 0, 1))
            return round(score * 100) / 100, band(score)
        if self.kind == "exact":
            return round(truth * 100) / 100, band(truth) if grade_truth is None else grade_truth
        score = round(self.view(truth, pair) * 100) / 100
        grade = band(score)
        if grade_truth is not None:
            grade = min(2, max(0, grade_truth + grade - band(truth)))
        if rng.uniform() < SLIP:  # a slip to a neighbouring grade
            grade = min(2, grade + 1) if rng.uniform() < 0.5 else max(0, grade - 1)
        return score, grade

    def listen_fraction(self, rule_on: bool) -> float | None:
        """Reported listening over the rule; None when the rule is on (the server enforces
        it, so the fraction says nothing)."""
        if rule_on:
            return None
        rng = self.rng
        if self.kind == "zero_listening":
            return 0.0
        if self.kind == "random":
            return float(rng.uniform(0.0, 0.3))
        u = rng.uniform()
        return 1.0 if u < 0.95 else (float(rng.uniform(0.5, 1.0)) if u < 0.98 else 0.0)


def band(score: float) -> int:
    return 0 if score < 0.34 else (1 if score < 0.67 else 2)


def careful_average(
    truth: ArrayLike, grade_truth: ArrayLike | None = None, nodes: int = 64
) -> NDArray[np.float64]:
    """What careful assessors give each pair on average, on the campaign's scale: FINE
    points (0-100) for a true FINE score ``truth`` (over 1), or, with ``grade_truth`` (a
    BROAD collection's own grades), the mean BROAD grade.

    A careful assessor's view is the truth moved by their offset and their own noise,
    normal with standard deviation ``sqrt(OFFSET_SD^2 + s^2)`` for their noise ``s``
    (uniform over ``NOISE_RANGE``, integrated by the midpoint rule), and kept within the
    scale: near its ends the average moves inwards, and near a band's edge their grades
    spread to both sides and are cut at 0 and 2. This is the ranking the product's claim is
    about (the assessors' ranking on average, docs/method.md §10), which the truth's is not
    where the scale's ends move it."""
    t = np.asarray(truth, dtype=np.float64).reshape(-1, 1, 1)
    low, high = NOISE_RANGE
    s = low + (high - low) * (np.arange(nodes) + 0.5) / nodes
    sd = np.sqrt(OFFSET_SD**2 + s**2).reshape(1, -1, 1)
    if grade_truth is None:
        # the score in points is the count of the 100 half-point steps the view passes
        steps = ((np.arange(1, 101) - 0.5) / 100.0).reshape(1, 1, -1)
        points = ndtr((t - steps) / sd).sum(axis=2)
        return np.asarray(points.mean(axis=1), dtype=np.float64)
    g = np.asarray(grade_truth, dtype=np.float64).reshape(-1, 1)
    # the view's band after rounding to a hundredth (0.335 and 0.665 its edges)
    zero = ndtr((0.335 - t) / sd)[..., 0]
    two = 1.0 - ndtr((0.665 - t) / sd)[..., 0]
    own = np.digitize(t[:, :, 0], (0.34, 0.67)).astype(np.float64)  # band() of each truth
    mean = np.zeros_like(zero)
    for view, share in ((0, zero), (1, 1.0 - zero - two), (2, two)):
        grade = np.clip(g + view - own, 0, 2)
        # a slip moves a grade up or down by one, half the time each, within 0-2
        grade = grade + 0.5 * SLIP * ((grade < 2).astype(float) - (grade > 0).astype(float))
        mean += share * grade
    return np.asarray(mean.mean(axis=1), dtype=np.float64)


def grade_truth(scale: Scale, truth: NDArray[np.float64], pair: int) -> int | None:
    """A pair's true BROAD grade on a BROAD collection, whose grades are its own (None on
    FINE): what :meth:`Assessor.answer` centres a careful grade on."""
    return None if scale.name == "fine" else int(truth[pair])


def value_of(scale: Scale, score: float, grade: int) -> float:
    """The judgment the engine gets on the campaign's scale from an answer of
    :meth:`Assessor.answer`: FINE points, or the BROAD grade."""
    return float(round(score * 100)) if scale.name == "fine" else float(grade)


def average_means(
    collection: Collection,
    truth: NDArray[np.float64],
    fine: NDArray[np.float64],
    measure: str,
    scale: Scale,
) -> NDArray[np.float64]:
    """Each system's score by what careful assessors give on average
    (:func:`careful_average`): the ranking a measured campaign's claim is about."""
    average = careful_average(fine, None if scale.name == "fine" else truth)
    return np.asarray(
        evaluate(collection, average, np.zeros_like(average), measure, scale).mean,
        dtype=np.float64,
    )


def population(kind: str, n: int) -> list[str]:
    """The assessor types of a scenario's ``n`` assessors."""
    if kind == "exact":
        return ["exact"] * n
    if kind == "clean":
        return ["careful"] * n
    if kind == "mixed":
        others = list(TYPES[1:])
        return ["careful"] * max(n - len(others), 1) + others
    n_random = max(1, round(0.2 * n))
    return ["random"] * n_random + ["careful"] * (n - n_random)


# ---------------------------------------------------------------------------- records
@dataclass
class AssessorRecord:
    kind: str
    answers: int
    pool: int
    flagged_at: int | None
    failed_trials_at: int | None
    reasons: list[str]
    metrics: dict[str, float | int | None]


@dataclass
class CampaignRecord:
    collection: str
    kind: str  # suite or mirex
    scenario: str
    rule_on: bool
    n_systems: int
    pool: int
    pairs: int
    wrong: int
    #: wrong pairs against the truth's ranking (``wrong`` is against the careful assessors'
    #: average, which the claim is about; the same with exact answers)
    wrong_vs_truth: int
    allowed: float
    confidence: float
    judgments_at_stop: int  # pool judgments counted in the engine at the stop
    pool_answers: int  # pool judgments made, set-aside ones included, until the stop
    trials: int  # quality trials until the stop
    set_aside_judgments: int
    stop: str
    second_opinions: int  # second opinions counted in the disagreement at the stop
    noise_sd: float  # the disagreement the confidence included at the stop (FINE points)
    seconds: float
    assessors: list[AssessorRecord]


@dataclass(frozen=True)
class Task:
    scenario: str
    settings: ZooSettings | None = None
    mirex: str | None = None
    measure: str = "cg"
    n_assessors: int = 10
    rule_on: bool = False
    seed: int = 0
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    #: an experiment (docs/experiments/2026-11-27-assessor-noise.md): judged pairs keep this
    #: standard deviation (FINE points) in the score distributions instead of 0
    judged_sd: float = 0.0
    #: "measured": judged pairs keep the assessor disagreement measured from the second
    #: opinions (the product, mtcjudge.mtc.disagreement); "off": judged pairs are exact
    noise: str = "measured"

    @property
    def cost(self) -> float:
        if self.settings is None:
            return 18 * 18 * 100 * 5.0
        s = self.settings
        return float(s.n_systems**2 * s.n_queries * s.k)


def load_case(
    settings: ZooSettings | None, mirex: str | None, measure: str = "cg"
) -> tuple[str, str, str, LoadedCollection, np.ndarray]:
    """(name, measure, scale, collection on its scale, true FINE score over 1 per pair) of a
    suite collection, or of MIREX 2011 FINE (from the directory ``mirex``) at ``measure``."""
    if settings is not None:
        zoo = generate_zoo(settings)
        loaded = load_synthetic(zoo.collection, settings.scale)
        fine = load_synthetic(zoo.collection, "fine").judged_values / 100.0
        return settings.name, settings.measure, settings.scale, loaded, fine
    assert mirex is not None
    d = Path(mirex)
    loaded = load_collection(
        read_runs(d / "runs.tsv"),
        5,
        read_metadata(d / "metadata.tsv"),
        read_judgments(d / "judgments-fine.tsv", "fine"),
    )
    return f"mirex2011 ({measure})", measure, "fine", loaded, loaded.judged_values / 100


def _load(task: Task) -> tuple[str, str, str, LoadedCollection, np.ndarray]:
    return load_case(task.settings, task.mirex, task.measure)


# ---------------------------------------------------------------------------- one campaign
class Campaign:
    """One simulated campaign: engine, assessors, hand-out and assessments."""

    def __init__(self, task: Task) -> None:
        self.task = task
        name, measure, scale_name, loaded, fine = _load(task)
        self.name, self.measure = name, measure
        self.scale = get_scale(scale_name)
        self.loaded = loaded
        self.collection = loaded.collection
        self.fine = np.nan_to_num(fine, nan=0.5)
        self.config = EngineConfig(measure=measure, target=TARGET)
        self.engine, _ = build_engine(
            self.collection, loaded.metadata, self.scale, DEFAULT_ESTIMATOR, self.config
        )
        truth = loaded.judged_values
        self.true_means = evaluate(
            self.collection, truth, np.zeros_like(truth), measure, self.scale
        ).mean
        # the claim is about the ranking the assessors give on average (docs/method.md
        # §10): careful volunteers' average, or the truth where every answer is exact
        self.claimed_means = self.true_means
        if task.scenario != "exact":
            self.claimed_means = average_means(
                self.collection, truth, self.fine, measure, self.scale
            )
        self.rng = np.random.default_rng(np.random.SeedSequence([task.seed, 0xC0FFEE]))
        kinds = population(
            "mixed" if task.scenario == "mixed" else task.scenario.split()[0], task.n_assessors
        )
        self.assessors = [Assessor.make(i, k, task.seed) for i, k in enumerate(kinds)]
        n = self.collection.n_pairs
        self.owner = np.full(n, -1, dtype=np.intp)  # who judged each pair (counted)
        self.taken = np.zeros(n, dtype=bool)  # judged by anybody, set-aside ones excluded
        self.set_aside_judgments = 0
        self.pool_answers = 0
        self.trials = 0
        #: second opinions: (assessor index, pair, value on the campaign's scale)
        self.second: list[tuple[int, int, float]] = []
        self.per_turn = max(1, math.ceil(0.25 * n / (ROUNDS * max(task.n_assessors, 1))))

    def grade_truth(self, pair: int) -> int | None:
        return grade_truth(self.scale, self.loaded.judged_values, pair)

    def value_of(self, score: float, grade: int) -> float:
        return value_of(self.scale, score, grade)

    def active(self) -> list[Assessor]:
        return [a for a in self.assessors if not a.set_aside]

    def run(self) -> CampaignRecord:
        started = time.perf_counter()
        task = self.task
        stop_state: dict[str, Any] | None = None
        set_aside = task.scenario.endswith("set aside")
        while True:
            reason = self.engine.stop_reason()
            if reason is not None and stop_state is None:
                stop_state = self._stop_state(reason)
            if stop_state is not None:
                if task.scenario != "mixed":
                    break
                if all(len(a.answers) >= MIN_ANSWERS for a in self.assessors):
                    break
            if self.engine.n_unjudged == 0 or not self.active():
                if stop_state is None:
                    stop_state = self._stop_state("complete")
                break
            answered = self._round()
            if not answered:
                if stop_state is None:
                    stop_state = self._stop_state("complete")
                break
            for a in answered:
                self._assess(a, set_aside=set_aside)
        assert stop_state is not None
        return CampaignRecord(
            collection=self.name,
            kind="suite" if task.settings is not None else "mirex",
            scenario=task.scenario,
            rule_on=task.rule_on,
            n_systems=self.collection.n_systems,
            pool=self.collection.n_pairs,
            seconds=time.perf_counter() - started,
            assessors=[
                AssessorRecord(
                    kind=a.kind,
                    answers=len(a.answers),
                    pool=len(a.pairs),
                    flagged_at=a.flagged_at,
                    failed_trials_at=a.failed_trials_at,
                    reasons=list(a.reasons),
                    metrics=assess(self._answers(a), task.thresholds).metrics,
                )
                for a in self.assessors
            ],
            **stop_state,
        )

    def _stop_state(self, reason: str) -> dict[str, Any]:
        measured = self._disagreement()
        evaluation = self.engine.evaluation()
        correct = correct_signs(evaluation.mean, self.claimed_means)
        return {
            "pairs": int(correct.size),
            "wrong": int((~correct).sum()),
            "wrong_vs_truth": int((~correct_signs(evaluation.mean, self.true_means)).sum()),
            # a pool judged to the end below the target claims only the confidence it has
            "allowed": allowance(TARGET, reason, evaluation.ranking_confidence) * int(correct.size),
            "confidence": float(evaluation.ranking_confidence),
            "judgments_at_stop": int(self.engine.n_judged),
            "pool_answers": self.pool_answers,
            "trials": self.trials,
            "set_aside_judgments": self.set_aside_judgments,
            "stop": reason,
            "second_opinions": measured.pairs,
            "noise_sd": float(np.sqrt(self.engine.judged_var.max(initial=0.0)))
            * 100.0
            / float(self.scale.lmax),
        }

    # ---- hand-out
    def _round(self) -> list[Assessor]:
        """Every active assessor takes ``per_turn`` turns; the pool answers are judged as
        one batch (the planner's plan). Returns who answered."""
        engine = self.engine
        active = self.active()
        order = self.rng.permutation(len(active))
        free = ~(engine.judged | self.taken)
        if not free.any():
            return []
        plan, _ = engine.ranked(2 * len(active) * self.per_turn + 10, free)
        queue = [int(p) for p in plan]
        used: set[int] = set()
        pairs: list[int] = []
        values: list[float] = []
        answered: list[Assessor] = []
        for i in order:
            a = active[int(i)]
            for _ in range(self.per_turn):
                if self.rng.uniform() < QUALITY_RATE:
                    self._trial(a)
                    answered.append(a)
                    continue
                pair = self._pick(a, queue, used)
                if pair is None:
                    continue
                used.add(pair)
                score, grade = a.answer(float(self.fine[pair]), pair, self.grade_truth(pair))
                a.answers.append(
                    Answer(
                        "pool",
                        score,
                        grade,
                        listen_fraction=a.listen_fraction(self.task.rule_on),
                        query=int(self.collection.pair_query[pair]),
                    )
                )
                a.pairs.append(pair)
                a.scores[pair] = score
                self.owner[pair] = a.index
                self.taken[pair] = True
                self.pool_answers += 1
                pairs.append(pair)
                values.append(self.value_of(score, grade))
                answered.append(a)
        if pairs:
            engine.judge(np.asarray(pairs, dtype=np.intp), np.asarray(values))
        self._widen()
        return list(dict.fromkeys(answered))

    def _disagreement(self) -> Disagreement:
        """The assessor disagreement measured as the planner does: every second opinion whose
        giver and original judge are both still counted, against the original's value."""
        engine = self.engine
        groups = [
            (float(engine.values[pair]), value)
            for who, pair, value in self.second
            if not self.assessors[who].set_aside and self.owner[pair] >= 0 and engine.judged[pair]
        ]
        return disagreement(groups)

    def _widen(self) -> None:
        """Judged pairs keep a variance: the measured disagreement (:attr:`Task.noise`) with
        the assessors' offsets, or the fixed one of the experiment :attr:`Task.judged_sd`.
        Every pair is judged once here, so one number serves every pair."""
        if self.task.judged_sd > 0:
            sd = self.task.judged_sd / 100.0 * float(self.scale.lmax)
            self.engine.set_judged_variance(sd * sd)
        elif self.task.noise == "measured":
            # as the planner measures it: the assessors' offsets too (docs/method.md §10.1)
            engine = self.engine
            counted = engine.judged & (self.owner >= 0)
            counted[counted] = [not self.assessors[w].set_aside for w in self.owner[counted]]
            pairs = np.flatnonzero(counted)
            shares = JudgmentShares.of(pairs, list(self.owner[pairs]), engine.values[pairs])
            apply_judged_noise(engine, self._disagreement(), 1.0, shares)

    def _pick(self, a: Assessor, queue: list[int], used: set[int]) -> int | None:
        """The assessor's next pair: the first planned one of their query while it is in
        the plan's first half, else the first planned one (they move to its query)."""
        q = self.collection.pair_query
        half = max(1, len(queue) // 2)
        first = None
        for rank, p in enumerate(queue):
            if p in used:
                continue
            if first is None:
                first = p
            if a.query is not None and int(q[p]) == a.query and rank < half:
                return p
        if first is not None:
            a.query = int(q[first])
        return first

    def _second_candidate(self, a: Assessor) -> int | None:
        """A pair for a second opinion: judged (counted) by another assessor, never by
        ``a``; of the query ``a`` is on when there is one, else of any query."""
        owned = (self.owner >= 0) & (self.owner != a.index)
        mine = set(a.scores) | set(a.seconds)
        for sl in ((self.collection.pairs_of_query(a.query),) if a.query is not None else ()) + (
            slice(0, self.collection.n_pairs),
        ):
            found = [p for p in (np.flatnonzero(owned[sl]) + sl.start) if int(p) not in mine]
            if found:
                return int(found[int(self.rng.integers(len(found)))])
        return None

    def _trial(self, a: Assessor) -> None:
        """A hidden trial of a kind drawn as the product draws it (judging/trials.py): a
        start among the four kinds, the next one when a kind cannot be made."""
        rng = self.rng
        self.trials += 1
        listen = a.listen_fraction(self.task.rule_on)
        kinds = ("reference", "anchor", "repeat", "second")
        start = int(rng.integers(len(kinds)))
        for kind in kinds[start:] + kinds[:start]:
            if kind == "repeat":
                if not a.pairs:
                    continue
                pair = a.pairs[int(rng.integers(len(a.pairs)))]
                score, grade = a.answer(float(self.fine[pair]), pair, self.grade_truth(pair))
                a.answers.append(
                    Answer("repeat", score, grade, repeat_of=a.scores[pair], listen_fraction=listen)
                )
                return
            if kind == "second":
                found = self._second_candidate(a)
                if found is None:
                    continue
                score, grade = a.answer(float(self.fine[found]), found, self.grade_truth(found))
                a.seconds.append(found)
                a.answers.append(
                    Answer(
                        "second",
                        score,
                        grade,
                        listen_fraction=listen,
                        query=int(self.collection.pair_query[found]),
                    )
                )
                self.second.append((a.index, found, self.value_of(score, grade)))
                return
            truth = (
                float(rng.uniform(0.9, 1.0))
                if kind == "reference"
                else float(rng.uniform(0.0, 0.15))
            )
            score, grade = a.answer(truth, None)
            a.answers.append(Answer(kind, score, grade, listen_fraction=listen))
            return

    # ---- assessment
    def _answers(self, a: Assessor) -> list[Answer]:
        """The assessor's answers with the expectations of their pool pairs filled in, their
        own judgments left out (what the planner does)."""
        if not a.pairs and not a.seconds:
            return list(a.answers)
        leave = np.zeros(self.collection.n_pairs, dtype=bool)
        leave[a.pairs] = True
        mean, var = expected_moments(self.engine, leave)
        out: list[Answer] = []
        k = j = 0
        for ans in a.answers:
            if ans.kind in ("pool", "second"):
                if ans.kind == "pool":
                    p = a.pairs[k]
                    k += 1
                else:
                    p = a.seconds[j]
                    j += 1
                ans = dataclasses.replace(ans, expected=float(mean[p]), expected_var=float(var[p]))
            out.append(ans)
        return out

    def _assess(self, a: Assessor, *, set_aside: bool) -> None:
        n = len(a.answers)
        if a.flagged_at is not None or n - a.assessed < ASSESS_EVERY:
            return
        a.assessed = n
        result = assess(self._answers(a), self.task.thresholds)
        if result.flagged:
            a.flagged_at = n
            a.reasons = result.reasons
            if result.failed_trials:
                a.failed_trials_at = n
            if set_aside:
                self._set_aside(a)

    def _set_aside(self, a: Assessor) -> None:
        """Remove the assessor's judgments: their pairs return to the pool and the engine is
        rebuilt from the judgments left (the planner does the same), keeping the audit's
        draws."""
        a.set_aside = True
        mine = self.owner == a.index
        self.set_aside_judgments += int(mine.sum())
        self.owner[mine] = -1
        self.taken[mine] = False
        jv = np.where(self.engine.judged, self.engine.values, np.nan)
        jv[mine] = np.nan
        drawn = getattr(self.engine, "audit_drawn", None)
        self.engine, _ = build_engine(
            self.collection,
            self.loaded.metadata,
            self.scale,
            DEFAULT_ESTIMATOR,
            self.config,
            judged_values=jv,
            audit_drawn=None if drawn is None else drawn.copy(),
        )
        self._widen()


def run_task(task: Task) -> CampaignRecord:
    return Campaign(task).run()


# ---------------------------------------------------------------------------- summaries
def flag_summary(records: Sequence[CampaignRecord], within: int = WITHIN) -> dict[str, Any]:
    """Per assessor type: share flagged, answers until flagged, share flagged within
    ``within`` answers among those who gave that many (or were flagged before)."""
    out: dict[str, Any] = {}
    for kind in (*TYPES, "exact"):
        people = [a for r in records for a in r.assessors if a.kind == kind]
        if not people:
            continue
        flagged = [a for a in people if a.flagged_at is not None]
        # who could be judged on their first ``within`` answers: those who gave that many,
        # or were flagged (and perhaps set aside) before
        early = [a for a in people if a.flagged_at is not None and a.flagged_at <= within]
        long = [a for a in people if a.answers >= within or a in early]
        at = [a.flagged_at for a in flagged if a.flagged_at is not None]
        out[kind] = {
            "assessors": len(people),
            "flagged": len(flagged),
            "share_flagged": len(flagged) / len(people),
            "failed_trials": sum(a.failed_trials_at is not None for a in people),
            "median_answers": statistics.median(a.answers for a in people),
            f"gave_{within}": len(long),
            f"flagged_within_{within}": len(early),
            f"share_flagged_within_{within}": len(early) / len(long) if long else None,
            "median_answers_until_flagged": statistics.median(at) if at else None,
            "max_answers_until_flagged": max(at) if at else None,
        }
    return out


def ranking_summary(records: Sequence[CampaignRecord]) -> dict[str, Any]:
    """Per scenario, pooled: wrong pairs against the allowance (with the 95 % bootstrap
    interval over campaigns of the excess, :func:`bench._common.excess_interval`),
    judgments against clean."""
    clean = {r.collection: r for r in records if r.scenario == "clean"}
    out: dict[str, Any] = {}
    for number, scenario in enumerate(SCENARIOS):
        mine = [r for r in records if r.scenario == scenario]
        if not mine:
            continue
        # a generator of the scenario's own: its interval whatever other scenarios ran
        rng = np.random.default_rng([20261130, number])
        paired = [(r, clean[r.collection]) for r in mine if r.collection in clean]
        base = sum(c.pool_answers for _, c in paired)
        out[scenario] = {
            "campaigns": len(mine),
            "pairs": sum(r.pairs for r in mine),
            "wrong": sum(r.wrong for r in mine),
            "wrong_vs_truth": sum(r.wrong_vs_truth for r in mine),
            "allowed": sum(r.allowed for r in mine),
            "honest": sum(r.wrong for r in mine) <= sum(r.allowed for r in mine),
            "excess_interval": excess_interval(
                [r.wrong for r in mine], [r.allowed for r in mine], rng
            ),
            "mean_confidence": statistics.fmean(r.confidence for r in mine),
            "pool_answers": sum(r.pool_answers for r in mine),
            "judgments_at_stop": sum(r.judgments_at_stop for r in mine),
            "set_aside_judgments": sum(r.set_aside_judgments for r in mine),
            "trials": sum(r.trials for r in mine),
            "second_opinions": sum(r.second_opinions for r in mine),
            "mean_noise_sd": statistics.fmean(r.noise_sd for r in mine),
            "judgments_vs_clean": sum(r.pool_answers for r, _ in paired) / base if base else None,
            "stops": {s: sum(r.stop == s for r in mine) for s in {r.stop for r in mine}},
        }
    return out


def summarise(records: Sequence[CampaignRecord]) -> dict[str, Any]:
    groups = {
        "suite": [r for r in records if r.kind == "suite"],
        "mirex": [r for r in records if r.kind == "mirex"],
        "all": list(records),
    }
    result: dict[str, Any] = {}
    for name, members in groups.items():
        if not members:
            continue
        result[name] = {
            "flags": flag_summary(members),
            "ranking": ranking_summary(members),
        }
    careful = [a for r in records for a in r.assessors if a.kind == "careful"]
    result["careful_flagged"] = {
        "assessors": len(careful),
        "flagged": sum(a.flagged_at is not None for a in careful),
        "share": sum(a.flagged_at is not None for a in careful) / len(careful) if careful else None,
    }
    return result


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def print_summary(summary: dict[str, Any], out: TextIO) -> None:
    titles = {"suite": "calibration suite", "mirex": "MIREX 2011 FINE", "all": "all collections"}
    for group in ("suite", "mirex", "all"):
        part = summary.get(group)
        if not part:
            continue
        print(f"\n{titles[group]}: flags per type (every scenario)", file=out)
        print(
            f"  {'type':<15}{'n':>5}{'flagged':>9}{'share':>7}{f'>={WITHIN}':>6}"
            f"{f'in {WITHIN}':>7}{'share':>7}{'median at':>10}{'max at':>7}{'trials':>7}",
            file=out,
        )
        for kind, f in part["flags"].items():
            print(
                f"  {kind:<15}{f['assessors']:>5}{f['flagged']:>9}{f['share_flagged']:>7.2f}"
                f"{f[f'gave_{WITHIN}']:>6}{f[f'flagged_within_{WITHIN}']:>7}"
                f"{_fmt(f[f'share_flagged_within_{WITHIN}']):>7}"
                f"{_fmt(f['median_answers_until_flagged'], '.0f'):>10}"
                f"{_fmt(f['max_answers_until_flagged'], '.0f'):>7}{f['failed_trials']:>7}",
                file=out,
            )
        print(f"\n{titles[group]}: the ranking at the stop (target {TARGET})", file=out)
        print(
            f"  {'scenario':<20}{'n':>4}{'wrong/allowed':>16}{'conf':>7}{'judgments':>10}"
            f"{'vs clean':>9}{'set aside':>10}{'trials':>7}{'2nd op.':>8}{'noise sd':>9}"
            f"{'vs truth':>9}{'excess, 95 % interval':>24}",
            file=out,
        )
        for scenario, r in part["ranking"].items():
            interval = r["excess_interval"]
            excess = r["wrong"] - r["allowed"]
            spread = "" if interval is None else f" [{interval[0]:+.1f}, {interval[1]:+.1f}]"
            print(
                f"  {scenario:<20}{r['campaigns']:>4}{r['wrong']:>7}/{r['allowed']:>8.1f}"
                f"{r['mean_confidence']:>7.3f}{r['pool_answers']:>10}"
                f"{_fmt(r['judgments_vs_clean']):>9}{r['set_aside_judgments']:>10}"
                f"{r['trials']:>7}{r['second_opinions']:>8}{r['mean_noise_sd']:>9.1f}"
                f"{r['wrong_vs_truth']:>9}{f'{excess:+.1f}{spread}':>24}",
                file=out,
            )
    c = summary["careful_flagged"]
    print(
        f"\ncareful assessors flagged: {c['flagged']} of {c['assessors']} "
        f"({_fmt(c['share'], '.3f')})",
        file=out,
    )
    print(
        f"\n  n: assessors; >={WITHIN}: those who gave at least {WITHIN} answers or were "
        f"flagged before; in {WITHIN}: "
        f"flagged within their first {WITHIN}; median/max at: answers until flagged;\n  trials: "
        "flagged with the quality trials weighing (auto-pause); judgments: pool judgments made "
        "until the stop, set-aside ones included;\n  2nd op.: second opinions in the measured "
        "disagreement at the stop; noise sd: the disagreement the confidence included (FINE "
        "points, mean over campaigns);\n  wrong: against the ranking careful assessors give on "
        "average (the truth's in exact); vs truth: wrong against the truth's ranking;\n  "
        "excess: wrong less allowed, with a 95 % bootstrap interval over campaigns (one that "
        "includes 0: chance alone can make it)",
        file=out,
    )


# ---------------------------------------------------------------------------- command line
def tasks_for(args: argparse.Namespace) -> list[Task]:
    settings = suite_settings(args.collections, args.seed)
    if args.quick:
        settings = [smoke_sized(s, 8, 30) for s in settings]
    args.suite = settings
    rules = {"on": (True,), "off": (False,), "both": (False, True)}[args.listening_rule]
    tasks: list[Task] = []
    for rule_on in rules:
        for scenario in args.scenario:
            for i, s in enumerate(settings):
                tasks.append(
                    Task(
                        scenario,
                        settings=s,
                        n_assessors=args.assessors,
                        rule_on=rule_on,
                        seed=args.seed * 1000 + i,
                        judged_sd=args.judged_sd,
                        noise=args.noise,
                    )
                )
            if args.mirex is not None:
                tasks.append(
                    Task(
                        scenario,
                        mirex=str(args.mirex),
                        n_assessors=args.assessors,
                        rule_on=rule_on,
                        seed=args.seed * 1000 + 999,
                        judged_sd=args.judged_sd,
                        noise=args.noise,
                    )
                )
    return sorted(tasks, key=lambda t: -t.cost)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--collections", type=non_negative_int, default=8, help="suite collections (8)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the suite and assessors (0)")
    parser.add_argument(
        "--mirex", type=Path, metavar="DIR", help="MIREX 2011 AMS directory (runs.tsv, ...)"
    )
    parser.add_argument(
        "--assessors", type=positive_int, default=10, help="assessors per campaign (10)"
    )
    parser.add_argument(
        "--scenario",
        action="append",
        choices=SCENARIOS,
        help="scenario to run (repeatable; default: all)",
    )
    parser.add_argument(
        "--listening-rule",
        choices=("off", "on", "both"),
        default="off",
        help="campaigns' listening rule: off (listening is evidence), on (the server "
        "enforces it and it is no evidence) or both (off)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_THRESHOLDS.alpha,
        help=f"the flag rule's alpha ({DEFAULT_THRESHOLDS.alpha})",
    )
    parser.add_argument(
        "--judged-sd",
        type=float,
        default=0.0,
        metavar="POINTS",
        help="experiment: judged pairs keep this standard deviation (FINE points) in the "
        "score distributions, as if assessors' noise widened the confidence (0: the product)",
    )
    parser.add_argument(
        "--noise",
        choices=("measured", "off"),
        default="measured",
        help="measured (the product): judged pairs keep the assessor disagreement measured "
        "from the second opinions; off: judged pairs are taken as exact (before 2026-11-27)",
    )
    parser.add_argument("--workers", type=positive_int, default=2, help="processes (2)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small collections (8 systems x 30 queries), 5 "
        "assessors unless --assessors: a smoke run",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every figure here")


def run_from_args(args: argparse.Namespace, out: TextIO) -> int:
    started = time.perf_counter()
    args.scenario = args.scenario or list(SCENARIOS)
    if args.mirex is not None and not (args.mirex / "runs.tsv").is_file():
        raise UsageError(f"--mirex {args.mirex}: no runs.tsv there")
    if not 0.0 < args.alpha < 1.0:
        raise UsageError(f"--alpha must be in (0, 1), got {args.alpha}")
    if not 0.0 <= args.judged_sd <= 100.0:
        raise UsageError(f"--judged-sd must be between 0 and 100, got {args.judged_sd}")
    check_output_file("--json", args.json)
    if args.quick and args.assessors == 10:
        args.assessors = 5
    thresholds = dataclasses.replace(DEFAULT_THRESHOLDS, alpha=args.alpha)
    tasks = [dataclasses.replace(t, thresholds=thresholds) for t in tasks_for(args)]
    if not tasks:
        raise UsageError("nothing to run: give --collections above 0 or --mirex")
    records: list[CampaignRecord] = []

    def report(record: CampaignRecord) -> None:
        records.append(record)
        flagged = sum(a.flagged_at is not None for a in record.assessors)
        print(
            f"[{len(records)}/{len(tasks)} {time.perf_counter() - started:6.0f} s] "
            f"{record.collection} {record.scenario}{' rule on' if record.rule_on else ''}: "
            f"wrong {record.wrong}/{record.allowed:.1f}, {record.pool_answers} judgments, "
            f"{flagged} flagged ({record.seconds:.1f} s)",
            file=sys.stderr,
            flush=True,
        )

    for record in in_processes(run_task, tasks, args.workers):
        report(record)
    records.sort(key=lambda r: (r.kind, r.collection, SCENARIOS.index(r.scenario), r.rule_on))
    summary: dict[str, Any] = {}
    for rule_on in sorted({r.rule_on for r in records}):
        mine = [r for r in records if r.rule_on == rule_on]
        label = "listening rule on" if rule_on else "listening rule off"
        print(f"\n=== {label} ===", file=out)
        summary[label] = summarise(mine)
        print_summary(summary[label], out)
    seconds = time.perf_counter() - started
    print(f"\n{len(records)} campaigns in {seconds:.0f} s with {args.workers} workers", file=out)
    if args.json is not None:
        payload = {
            "settings": {
                "collections": args.collections,
                "seed": args.seed,
                "quick": args.quick,
                "assessors": args.assessors,
                "scenarios": args.scenario,
                "listening_rule": args.listening_rule,
                "alpha": args.alpha,
                "judged_sd": args.judged_sd,
                "noise": args.noise,
                "quality_rate": QUALITY_RATE,
                "estimator": DEFAULT_ESTIMATOR,
                "target": TARGET,
                "mirex": str(args.mirex) if args.mirex else None,
                "workers": args.workers,
            },
            "seconds": seconds,
            "summary": summary,
            "suite": [s.as_dict() for s in args.suite],
            "records": [dataclasses.asdict(r) for r in records],
        }
        args.json.write_text(json.dumps(payload, indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return run_benchmark(argv, DESCRIPTION, add_arguments, run_from_args)


if __name__ == "__main__":
    raise SystemExit(main())
