"""mtc/reliability.py: the signals, the flag rule on simulated answer sequences, and the
expectations that leave a pair's own judgment out."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.factory import build_engine
from mtcjudge.mtc.reliability import (
    DEFAULT_THRESHOLDS,
    Answer,
    Reliability,
    Thresholds,
    assess,
    expected_moments,
    expected_scores,
)
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate


def band(score: float) -> int:
    return 0 if score < 0.34 else (1 if score < 0.67 else 2)


def session(
    kind: str,
    n: int,
    seed: int,
    *,
    listen: float | None = None,
    offset: float = 0.0,
    trials_every: int = 10,
) -> list[Answer]:
    """A seeded answer sequence: pool pairs whose truth the expectation predicts with some
    error, a reference or anchor trial every ``trials_every`` answers, now and then a
    repeat. ``kind``: careful, random, middle or zero (plausible scores that ignore the pair)."""
    rng = np.random.default_rng(seed)
    answers: list[Answer] = []
    earlier: list[tuple[float, float]] = []
    for i in range(n):
        query = i // 6
        if i % trials_every == trials_every - 1:
            trial = ("reference", "anchor", "repeat")[(i // trials_every) % 3]
        else:
            trial = "pool"
        expected = None
        repeat_of = None
        if trial == "pool":
            expected = float(np.clip(rng.normal(0.45, 0.18), 0.02, 0.98))
            truth = float(np.clip(expected + rng.normal(0, 0.2), 0, 1))
        elif trial == "reference":
            truth = float(rng.uniform(0.9, 1.0))
        elif trial == "anchor":
            truth = float(rng.uniform(0.0, 0.15))
        else:
            if not earlier:
                continue
            truth, repeat_of = earlier[int(rng.integers(len(earlier)))]
        if kind == "careful":
            score = float(np.clip(truth + offset + rng.normal(0, 0.12), 0, 1))
            grade = band(score)
        elif kind == "random":
            score, grade = float(rng.uniform()), int(rng.integers(3))
        elif kind == "middle":
            score, grade = 0.5, 1
        else:
            score = float(np.clip(rng.normal(0.45, 0.15), 0, 1))
            grade = band(score)
        score = round(score * 100) / 100
        if trial == "pool":
            earlier.append((truth, score))
        answers.append(
            Answer(
                trial,
                score,
                grade,
                expected=expected,
                expected_var=0.2**2 if expected is not None else None,
                repeat_of=repeat_of,
                listen_fraction=listen,
                query=query if trial == "pool" else None,
            )
        )
    return answers


def metric(result: Reliability, name: str) -> float:
    value = result.metrics[name]
    assert value is not None, name
    return float(value)


def test_no_answers_no_flag() -> None:
    result = assess([])
    assert not result.flagged
    assert result.reasons == ()
    assert result.metrics["n_answers"] == 0
    assert result.metrics["reference_accuracy"] is None
    assert result.metrics["offset"] is None


def test_the_signals_are_what_the_answers_say() -> None:
    answers = [
        Answer("reference", 0.95, 2),
        Answer("reference", 0.20, 0),
        Answer("anchor", 0.10, 0),
        Answer("pool", 0.70, 2, expected=0.5, others=0.6, listen_fraction=1.0, seconds=10.0),
        Answer("pool", 0.30, 0, expected=0.4, listen_fraction=0.2, seconds=20.0),
        Answer("repeat", 0.60, 1, repeat_of=0.70),
    ]
    m = assess(answers).metrics
    assert m["n_answers"] == 6
    assert m["n_pool"] == 2
    assert m["n_trials"] == 4
    assert m["reference_accuracy"] == 0.5
    assert m["anchor_accuracy"] == 1.0
    assert m["repeat_consistency"] == pytest.approx(0.10)
    assert m["agreement"] == pytest.approx(0.10)
    assert m["median_listen_fraction"] == pytest.approx(0.6)
    assert m["low_listen_share"] == pytest.approx(0.5)
    assert m["median_seconds"] == pytest.approx(15.0)
    assert m["incoherent_share"] == 0.0


@pytest.mark.parametrize("seed", range(20))
def test_careful_assessors_are_not_flagged(seed: int) -> None:
    result = assess(session("careful", 120, seed, listen=1.0))
    assert not result.flagged, result.reasons
    assert metric(result, "evidence") < 0


def test_careful_assessor_is_not_flagged_for_one_early_slip() -> None:
    answers = [
        Answer("reference", 0.30, 0),  # a failed reference trial among the first answers
        Answer("pool", 0.6, 1, expected=0.5),
        Answer("anchor", 0.1, 0),
    ]
    assert not assess(answers).flagged


@pytest.mark.parametrize("seed", range(5))
def test_random_clickers_are_flagged_with_reasons(seed: int) -> None:
    result = assess(session("random", 60, seed))
    assert result.flagged
    assert result.reasons
    assert all(r.endswith(".") for r in result.reasons)
    assert metric(result, "evidence") >= np.log10(1 / DEFAULT_THRESHOLDS.alpha)


def test_always_the_middle_is_flagged_and_the_trials_say_why() -> None:
    result = assess(session("middle", 40, 1))
    assert result.flagged
    assert result.failed_trials
    assert any("hidden checks" in r for r in result.reasons)
    assert result.metrics["reference_accuracy"] == 0.0


def test_not_listening_is_flagged_quickly() -> None:
    answers = session("zero", 10, 2, listen=0.0)
    result = assess(answers)
    assert result.flagged
    assert any("Listened to less than" in r for r in result.reasons)
    # the same answers with listening not known carry no such reason
    unknown = assess([Answer(a.kind, a.score, a.broad, a.expected) for a in answers])
    assert not any("Listened" in r for r in unknown.reasons)


def test_a_harsh_assessor_is_flagged_for_the_offset_only_when_asked() -> None:
    answers = session("careful", 150, 3, offset=-0.45, listen=1.0)
    assert not assess(answers).flagged  # no offset flag by default
    result = assess(answers, Thresholds(offset_limit=0.2))
    assert result.flagged
    assert metric(result, "offset") < -0.2
    assert any("lower than expected" in r for r in result.reasons)
    assert not result.failed_trials


def test_offsets_shrink_with_few_answers() -> None:
    few = assess([Answer("pool", 0.9, 2, expected=0.5, query=1)])
    assert 0 < metric(few, "offset") < 0.2  # shrunk from 0.4
    assert not few.flagged


def test_a_stricter_alpha_flags_later() -> None:
    answers = session("random", 60, 0)
    loose = Thresholds(alpha=0.2)
    strict = Thresholds(alpha=1e-6)
    first = [
        next((n for n in range(1, 61) if assess(answers[:n], t).flagged), 99)
        for t in (loose, strict)
    ]
    assert first[0] <= first[1]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "gold", "score": 0.5}, "unknown answer kind"),
        ({"kind": "pool", "score": 1.5}, "score must be in"),
        ({"kind": "pool", "score": 0.5, "broad": 3}, "broad must be"),
        ({"kind": "pool", "score": 0.5, "expected": -0.1}, "expected must be"),
        ({"kind": "pool", "score": 0.5, "listen_fraction": float("nan")}, "listen_fraction"),
    ],
)
def test_bad_answers_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Answer(**kwargs)


def test_bad_thresholds_are_refused() -> None:
    with pytest.raises(ValueError, match="alpha"):
        Thresholds(alpha=0.0)
    with pytest.raises(ValueError, match="careful_sd"):
        Thresholds(careful_sd=0.0)


# ---------------------------------------------------------------------------- expectations
@pytest.fixture(scope="module")
def loaded() -> LoadedCollection:
    return load_synthetic(generate(6, 12, 5, n_genres=4, docs_per_genre=60, n_artists=24, seed=5))


def _judged_engine(loaded: LoadedCollection, estimator: str, values: np.ndarray | None = None):
    truth = loaded.judged_values if values is None else values
    jv = np.full(loaded.collection.n_pairs, np.nan)
    picked = np.random.default_rng(0).choice(loaded.collection.n_pairs, 60, replace=False)
    jv[picked] = truth[picked]
    engine, _ = build_engine(
        loaded.collection, loaded.metadata, FINE, estimator, EngineConfig(), judged_values=jv
    )
    return engine, picked


def test_uniform_expects_the_middle_everywhere(loaded: LoadedCollection) -> None:
    engine, _ = _judged_engine(loaded, "uniform")
    mean, var = expected_moments(engine)
    assert np.allclose(mean, 0.5)
    assert np.allclose(var, FINE.uniform[1] / 100**2)


@pytest.mark.parametrize("estimator", ["joint", "calibrated"])
def test_a_judged_pair_is_expected_without_its_own_judgment(
    loaded: LoadedCollection, estimator: str
) -> None:
    engine, picked = _judged_engine(loaded, estimator)
    before = expected_scores(engine)
    assert np.all((before >= 0) & (before <= 1))
    # another judgment of the same pair (and of the rest of its query) changes nothing there
    values = loaded.judged_values.copy()
    p = int(picked[0])
    values[p] = 100.0 - values[p]
    changed, _ = _judged_engine(loaded, estimator, values)
    after = expected_scores(changed)
    assert after[p] == pytest.approx(before[p])
    # leave-out by assessor: the pairs left out do not inform their own expectations
    leave = np.zeros(loaded.collection.n_pairs, dtype=bool)
    leave[picked[:10]] = True
    assert np.allclose(
        expected_scores(engine, leave)[picked[:10]], expected_scores(changed, leave)[picked[:10]]
    )


def test_the_offsets_learnt_from_other_judgments_move_the_expectation(
    loaded: LoadedCollection,
) -> None:
    engine, _ = _judged_engine(loaded, "joint")
    prior = engine.model.prior_estimates()[0] / 100
    expected = expected_scores(engine)
    assert not np.allclose(expected, prior)  # the judgments taught the engine something
    _, var = expected_moments(engine)
    assert np.all(var > 0)
    with pytest.raises(ValueError, match="leave_out"):
        expected_moments(engine, np.zeros(3, dtype=bool))


@pytest.mark.parametrize("estimator", ["joint", "calibrated", "ordinal"])
def test_the_expectation_from_some_judgments_changes_nothing_in_the_engine(
    loaded: LoadedCollection, estimator: str
) -> None:
    """The engine hook ``expectation_from`` learns from the judgments kept without touching
    the engine: its offsets, its variance factors and its scores stay as they were. The plain
    engine learns nothing from judgments: it expects the judgment-free estimates."""
    engine, picked = _judged_engine(loaded, estimator)
    kept = engine.judged.copy()
    kept[picked[:30]] = False
    offsets, factor = engine.offsets, engine.var_factor
    scores = engine.evaluation().mean.copy()
    mean, var = engine.expectation_from(kept)
    after = engine.offsets
    if offsets is None:
        assert after is None
    else:  # the very posteriors the engine held
        assert after is not None
        assert after.system is offsets.system
    assert engine.var_factor is factor
    np.testing.assert_array_equal(engine.evaluation().mean, scores)
    prior_mean, prior_var = engine.model.prior_estimates()
    if estimator == "ordinal":
        np.testing.assert_array_equal(mean, prior_mean)
        np.testing.assert_array_equal(var, prior_var)
    else:  # what the judgments kept teach differs from what all of them teach
        assert not np.array_equal(mean, engine.expectation_from(engine.judged)[0])
        assert np.all(var >= prior_var)
