"""Offline replay of the MTC loop on a fully judged synthetic collection."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from mtcjudge.ingest.formats import Judgments, Runs
from mtcjudge.ingest.formats import Metadata as MetadataFile
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.measures import Evaluation, evaluate
from mtcjudge.mtc.replay import (
    CONFIDENCE_BINS,
    ReplayConfig,
    ReplayResult,
    calibration_table,
    replay,
    sign_accuracy,
)
from mtcjudge.mtc.scales import BROAD, FINE
from mtcjudge.mtc.synthetic import generate

N_SYSTEMS = 6
N_SYSTEM_PAIRS = N_SYSTEMS * (N_SYSTEMS - 1) // 2


@pytest.fixture(scope="module")
def synthetic() -> dict[str, LoadedCollection]:
    """6 systems x 10 queries x top 5, loaded through the ingest boundary, per scale."""
    s = generate(n_systems=N_SYSTEMS, n_queries=10, k=5, seed=1)
    runs = Runs(s.runs, "tsv")
    metadata = MetadataFile(dict(s.artist), dict(s.genre))
    loaded = {}
    for name, scores in (("broad", s.broad), ("fine", s.fine)):
        judgments = Judgments({pair: [float(v)] for pair, v in scores.items()}, "tsv")
        loaded[name] = load_collection(runs, 5, metadata, judgments)
    return loaded


@pytest.fixture(scope="module")
def broad(synthetic) -> LoadedCollection:
    return synthetic["broad"]


def run(loaded: LoadedCollection, scale=BROAD, **config) -> ReplayResult:
    engine = config.pop("engine", EngineConfig())
    config["estimator"] = config.pop("model", "ordinal")
    return replay(
        loaded.collection,
        loaded.metadata,
        loaded.judged_values,
        scale,
        ReplayConfig(engine=engine, **config),
    )


def test_the_synthetic_collection_is_completely_judged(broad) -> None:
    c = broad.collection
    assert (c.n_systems, c.n_queries, c.k) == (N_SYSTEMS, 10, 5)
    assert not np.isnan(broad.judged_values).any()
    assert broad.metadata is not None
    assert broad.n_filtered == 0  # the generator already filtered the runs


def test_replay_reaches_the_target(broad) -> None:
    result = run(broad, engine=EngineConfig(target=0.95))
    assert result.stop_reason == "confidence"
    assert result.final_confidence >= 0.95
    assert 0 < result.judgments_to_target <= result.pool_size == broad.collection.n_pairs
    assert result.fraction_judged == result.judgments_to_target / result.pool_size
    judgments = [point.judgments for point in result.trajectory]
    assert judgments[0] == 0
    assert judgments == sorted(judgments)
    assert judgments[-1] == result.judgments_to_target
    assert result.trajectory[0].ranking_confidence == result.initial_confidence
    assert result.trajectory[0].sign_accuracy == result.initial_accuracy
    assert result.trajectory[-1].ranking_confidence == result.final_confidence
    assert sum(b.count for b in result.calibration) == N_SYSTEM_PAIRS
    assert [(b.low, b.high) for b in result.calibration] == list(
        itertools.pairwise(CONFIDENCE_BINS)
    )
    assert 0.0 <= result.sign_accuracy <= 1.0


def test_replay_to_completion_recovers_the_true_ranking(broad) -> None:
    result = run(broad, engine=EngineConfig(target=1.0, stop="complete"))
    assert result.stop_reason == "complete"
    assert result.judgments_to_target == result.pool_size
    assert result.fraction_judged == 1.0
    assert result.final_confidence == 1.0
    assert result.sign_accuracy == 1.0
    assert result.kendall_tau == pytest.approx(1.0)
    assert result.mean_abs_error == pytest.approx(0.0, abs=1e-12)
    assert result.rmse_difference == pytest.approx(0.0, abs=1e-12)
    truth = evaluate(broad.collection, broad.judged_values, np.zeros(result.pool_size), "cg", BROAD)
    np.testing.assert_allclose(result.true_means, truth.mean)
    np.testing.assert_allclose(result.estimated_means, truth.mean, atol=1e-12)
    assert [p.judgments for p in result.trajectory] == list(range(result.pool_size + 1))
    last = result.calibration[-1]
    assert (last.count, last.accuracy, last.mean_confidence) == (N_SYSTEM_PAIRS, 1.0, 1.0)


def test_batches_and_progress(broad) -> None:
    calls: list[tuple[int, float]] = []
    result = replay(
        broad.collection,
        broad.metadata,
        broad.judged_values,
        BROAD,
        ReplayConfig(
            engine=EngineConfig(measure="ndcg", target=0.97), estimator="ordinal", batch=4
        ),
        progress=lambda n, conf: calls.append((n, conf)),
    )
    steps = np.diff([p.judgments for p in result.trajectory])
    assert np.all((steps >= 1) & (steps <= 4))
    assert result.judgments_to_target <= result.pool_size
    assert calls == [(p.judgments, p.ranking_confidence) for p in result.trajectory[1:]]


def test_max_judgments_gives_up(broad) -> None:
    result = run(broad, engine=EngineConfig(target=1.0), max_judgments=10, batch=3)
    assert result.stop_reason == "max_judgments"
    assert result.judgments_to_target == 10  # the last batch is cut to the limit


@pytest.mark.parametrize("model", ["uniform", "historical", "ordinal"])
def test_fine_scale_replay(synthetic, model) -> None:
    result = run(synthetic["fine"], FINE, model=model, engine=EngineConfig(target=0.95))
    assert result.stop_reason in ("confidence", "complete")
    assert result.final_confidence >= 0.95
    assert result.judgments_to_target <= result.pool_size


def test_summary_is_json_ready(broad) -> None:
    summary = run(broad, max_judgments=5, engine=EngineConfig(target=1.0)).summary()
    decoded = json.loads(json.dumps(summary, allow_nan=False))
    assert decoded["judgments_to_target"] == 5
    assert len(decoded["trajectory"]) == 6
    empty = [b for b in decoded["calibration"] if b["count"] == 0]
    assert all(b["accuracy"] is None and b["mean_confidence"] is None for b in empty)


def test_a_constant_estimated_ranking_has_no_rank_agreement(broad) -> None:
    result = run(broad, model="uniform", max_judgments=0)
    assert result.sign_accuracy == 0.0
    assert result.kendall_tau != 1.0


# ---------------------------------------------------------------------- hand examples


def test_sign_accuracy_by_hand() -> None:
    truth = np.array([3.0, 2.0, 1.0])
    assert sign_accuracy(np.array([0.9, 0.5, 0.1]), truth) == 1.0
    assert sign_accuracy(np.array([1.0, 2.0, 3.0]), truth) == 0.0
    # (A, B) wrong, (A, C) wrong, (B, C) right
    assert sign_accuracy(np.array([1.0, 3.0, 2.0]), truth) == pytest.approx(1 / 3)
    # a true tie is counted strictly: wrong unless the estimate is a tie too (issue 11)
    assert sign_accuracy(np.array([2.0, 1.0, 3.0]), np.array([1.0, 1.0, 2.0])) == pytest.approx(
        2 / 3
    )
    assert sign_accuracy(np.array([1.0, 1.0, 3.0]), np.array([1.0, 1.0, 2.0])) == 1.0
    # an estimated tie of a real difference is wrong
    assert sign_accuracy(np.array([1.0, 1.0]), np.array([2.0, 1.0])) == 0.0
    assert sign_accuracy(np.array([1.0]), np.array([5.0])) == 1.0  # no pairs


def hand_evaluation(mean, pair_confidence) -> Evaluation:
    n = len(mean)
    zeros = np.zeros((n, n))
    mean = np.asarray(mean, dtype=float)
    return Evaluation(
        mean, np.zeros(n), mean, mean, zeros, zeros, np.asarray(pair_confidence, dtype=float), 1.0
    )


def test_calibration_table_by_hand() -> None:
    # pairs (0,1) C = 0.55 right, (0,2) C = 0.97 right, (1,2) C = 1.0 wrong
    conf = [[1, 0.55, 0.97], [0.55, 1, 1.0], [0.97, 1.0, 1]]
    table = calibration_table(hand_evaluation([3, 2, 1], conf), np.array([3.0, 1.0, 2.0]))
    by_bin = {(b.low, b.high): b for b in table}
    assert [b.count for b in table] == [1, 0, 0, 0, 0, 1, 1]
    assert (by_bin[0.5, 0.6].accuracy, by_bin[0.5, 0.6].mean_confidence) == (1.0, 0.55)
    assert (by_bin[0.95, 0.99].accuracy, by_bin[0.95, 0.99].mean_confidence) == (1.0, 0.97)
    # the last bin includes 1.0
    assert (by_bin[0.99, 1.0].accuracy, by_bin[0.99, 1.0].mean_confidence) == (0.0, 1.0)
    assert np.isnan(by_bin[0.6, 0.7].accuracy)
    assert np.isnan(by_bin[0.6, 0.7].mean_confidence)


def test_calibration_table_with_custom_bins() -> None:
    conf = [[1, 0.6, 0.8], [0.6, 1, 0.7], [0.8, 0.7, 1]]
    table = calibration_table(
        hand_evaluation([3, 2, 1], conf), np.array([3.0, 2.0, 1.0]), bins=(0.5, 0.7, 1.0)
    )
    assert [(b.low, b.high, b.count) for b in table] == [(0.5, 0.7, 1), (0.7, 1.0, 2)]
    assert table[1].mean_confidence == pytest.approx(0.75)


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"batch": 0}, r"batch must be at least 1, found 0"),
        ({"estimator": "oracle"}, r"unknown estimator 'oracle'"),
    ],
)
def test_replay_config_validation(config, message) -> None:
    with pytest.raises(ValueError, match=message):
        ReplayConfig(**config)


def test_replay_validation(broad) -> None:
    c, meta, truth = broad.collection, broad.metadata, broad.judged_values
    config = ReplayConfig(estimator="ordinal")
    bad = truth.copy()
    bad[0] = 3
    with pytest.raises(ValueError, match=r"true judgment .* is outside the BROAD scale"):
        replay(c, meta, bad, BROAD, config)
    bad[0] = np.nan
    with pytest.raises(ValueError, match=r"true judgment .* is outside the BROAD scale"):
        replay(c, meta, bad, BROAD, config)
    with pytest.raises(ValueError, match=rf"one judgment per pool pair \({c.n_pairs}\)"):
        replay(c, meta, truth[:-1], BROAD, config)
