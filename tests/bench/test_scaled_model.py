"""Relevance models with rescaled variances (bench/experiments/scaled_model.py): the replay
experiments' learnt variance factors."""

from __future__ import annotations

import numpy as np
import pytest

from bench.experiments.scaled_model import ScaledRelevanceModel, source_variance_factors
from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.estimators import SOURCE_M_OUT, RelevanceModel
from mtcjudge.mtc.scales import BROAD, get_scale
from mtcjudge.mtc.synthetic import generate
from tests.mtc import toy


@pytest.fixture(scope="module")
def loaded() -> LoadedCollection:
    return load_synthetic(generate(6, 12, 3, n_genres=4, docs_per_genre=60, n_artists=24, seed=5))


@pytest.fixture
def toy_collection():
    return toy.toy_collection()


@pytest.fixture
def toy_judgments():
    return toy.toy_judgments()


def test_variance_scale_multiplies_estimated_variances_only(toy_collection, toy_judgments) -> None:
    judged, values = toy_judgments
    model = ScaledRelevanceModel(toy_collection, BROAD, "uniform", variance_scale=2.0)
    _, var, _ = model.estimate_all(judged, values)
    np.testing.assert_allclose(var[~judged], 4.0 / 3.0)
    np.testing.assert_array_equal(var[judged], 0.0)


def test_scaled_model_validation(toy_collection) -> None:
    with pytest.raises(ValueError, match=r"variance_scale must be positive, found 0"):
        ScaledRelevanceModel(toy_collection, BROAD, "uniform", variance_scale=0)


def test_source_variance_scale_multiplies_by_source(loaded: LoadedCollection) -> None:
    c = loaded.collection
    scale = get_scale("fine")
    base = RelevanceModel(c, scale, "ordinal", loaded.metadata)
    scaled = ScaledRelevanceModel(
        c, scale, "ordinal", loaded.metadata, source_variance_scale=[1.0, 1.0, 2.5, 1.0]
    )
    none = np.zeros(c.n_pairs, dtype=bool)
    m0, v0, s0 = base.estimate_all(none, np.zeros(c.n_pairs))
    m1, v1, _ = scaled.estimate_all(none, np.zeros(c.n_pairs))
    assert m1 == pytest.approx(m0)
    assert v1 == pytest.approx(np.where(s0 == SOURCE_M_OUT, 2.5, 1.0) * v0)
    with pytest.raises(ValueError, match="4 positive"):
        scaled.set_source_variance_scale([1.0, 0.0, 1.0, 1.0])


def test_source_variance_factors_by_hand() -> None:
    # source 1: z^2 = 9 and 1 -> (prior 2 + 10) / (2 + 2) = 3; source 2: z^2 = 0.25 -> floor 1
    f = source_variance_factors(
        [1, 1, 2, 2], [3.0, 1.0, 0.5, 0.0], [1.0, 1.0, 1.0, 0.0], 4, prior=2.0
    )
    assert f == pytest.approx([1.0, 3.0, 1.0, 1.0])
