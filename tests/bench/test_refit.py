"""Refits of the ordinal models on the judgments (bench/experiments/refit.py): an experiment
no campaign runs."""

from __future__ import annotations

import numpy as np
import pytest

from bench.experiments.refit import refit_model
from mtcjudge.mtc.collection import build_collection
from mtcjudge.mtc.estimators import TABLE_A1, OrdinalModel, output_features
from mtcjudge.mtc.scales import BROAD, FINE
from tests.mtc.random_collections import random_metadata, random_runs


def simulate(model: OrdinalModel, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draw one judgment per row of ``x`` from ``model``."""
    cumulative = np.cumsum(model.probabilities(x), axis=1)[:, :-1]
    level = (rng.random((x.shape[0], 1)) > cumulative).sum(axis=1)
    return np.take(model.values, level)


TRUE_MODEL = OrdinalModel(
    ("x1", "x2"), np.array([1.5, -1.0]), np.array([0.5, -1.0]), BROAD.model_values
)
WRONG_MODEL = OrdinalModel(
    ("x1", "x2"), np.array([-1.0, 1.0]), np.array([0.5, -1.0]), BROAD.model_values
)


@pytest.fixture(scope="module")
def simulated() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(42)
    x = rng.normal(size=(2000, 2))
    return x, simulate(TRUE_MODEL, x, rng)


def test_refit_recovers_the_generating_model_and_replaces_a_wrong_one(simulated) -> None:
    x, y = simulated
    result = refit_model(WRONG_MODEL, x, y, BROAD, np.random.default_rng(0))
    assert result.used
    assert result.n_observations == 2000
    assert result.rmse_refit < result.rmse_published
    assert result.model.features == ("x1", "x2")
    np.testing.assert_allclose(result.model.beta, TRUE_MODEL.beta, atol=0.15)
    np.testing.assert_allclose(result.model.alphas, TRUE_MODEL.alphas, atol=0.25)
    np.testing.assert_array_equal(result.model.values, BROAD.model_values)


def test_refit_on_fine_judgments_uses_the_fine_10_levels() -> None:
    rng = np.random.default_rng(7)
    true = OrdinalModel(("x1",), np.array([2.0]), np.linspace(2, -2, 9), FINE.model_values)
    x = rng.normal(size=(1500, 1))
    y = simulate(true, x, rng) - 5 + rng.integers(0, 10, size=1500)  # raw 0..99 in the bin
    wrong = OrdinalModel(("x1",), np.array([-2.0]), np.linspace(2, -2, 9), FINE.model_values)
    result = refit_model(wrong, x, y, FINE, np.random.default_rng(0))
    assert result.used
    np.testing.assert_array_equal(result.model.values, FINE.model_values)
    assert result.model.beta[0] == pytest.approx(2.0, abs=0.3)
    assert np.all(np.diff(result.model.alphas) < 0)


def test_refit_is_not_used_with_too_few_observations(simulated) -> None:
    x, y = simulated
    result = refit_model(WRONG_MODEL, x[:30], y[:30], BROAD, np.random.default_rng(0))
    assert not result.used
    assert result.model is WRONG_MODEL
    assert np.isnan(result.rmse_refit)
    assert result.rmse_published > 0
    assert result.n_observations == 30


def test_refit_is_not_used_when_a_single_level_is_observed() -> None:
    x = np.random.default_rng(1).normal(size=(200, 2))
    result = refit_model(WRONG_MODEL, x, np.ones(200), BROAD, np.random.default_rng(0))
    assert not result.used
    assert result.model is WRONG_MODEL


def test_refit_with_no_observations() -> None:
    result = refit_model(WRONG_MODEL, np.empty((0, 2)), [], BROAD, np.random.default_rng(0))
    assert not result.used
    assert np.isnan(result.rmse_published)


def test_refit_validation(simulated) -> None:
    x, y = simulated
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\), found \(2000, 3\)"):
        refit_model(WRONG_MODEL, np.column_stack([x, x[:, 0]]), y, BROAD, rng)
    with pytest.raises(ValueError, match=r"x must have shape \(n, 2\), found \(2000,\)"):
        refit_model(WRONG_MODEL, x[:, 0], y, BROAD, rng)
    with pytest.raises(ValueError, match=r"x has 2000 rows but 1999 judged values were given"):
        refit_model(WRONG_MODEL, x, y[:-1], BROAD, rng)
    with pytest.raises(ValueError, match=r"folds must be at least 2, found 1"):
        refit_model(WRONG_MODEL, x, y, BROAD, rng, folds=1)
    with pytest.raises(ValueError, match=r"judged value .*5\.0.* is outside the BROAD scale"):
        refit_model(WRONG_MODEL, x[:2], [0, 5], BROAD, rng)


def test_m_out_refit_on_one_collection_is_used_when_the_published_model_is_wrong() -> None:
    collection = build_collection(random_runs(3, 6, 20, 5, 25, False), k=5)
    feats = output_features(collection, random_metadata(3, 25, 20))
    x = np.repeat(feats.matrix()[feats.applicable], 12, axis=0)
    published = TABLE_A1[("broad", "out")]
    # the truth: every pool document is far more similar than Table A.1 predicts
    truth = OrdinalModel(published.features, published.beta, published.alphas + 4, published.values)
    y = simulate(truth, x, np.random.default_rng(0))
    result = refit_model(published, x, y, BROAD, np.random.default_rng(0))
    assert result.used
