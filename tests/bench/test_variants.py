"""bench/experiments/variants.py: the engine and estimator variants no campaign runs, put
together from the product's pieces (another error model, refits swapped into a relevance
model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.experiments.variants import build_engine_with_errors, design_matrices, with_models
from mtcjudge.ingest.formats import read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.calibration import CALIBRATED, JOINT, build_engine
from mtcjudge.mtc.engine import EngineConfig
from mtcjudge.mtc.estimators import SOURCE_M_OUT, TABLE_A1, OrdinalModel
from mtcjudge.mtc.joint import CALIBRATED_ERRORS, JOINT_ERRORS
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.synthetic import generate

K = 3


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> LoadedCollection:
    col = generate(6, 12, K, n_genres=4, docs_per_genre=60, n_artists=24, seed=5)
    paths = col.write(Path(tmp_path_factory.mktemp("syn")))
    return load_collection(
        read_runs(paths["runs"]),
        K,
        read_metadata(paths["metadata"]),
        read_judgments(paths["judgments-fine"], "fine"),
    )


# ------------------------------------------------------------------ another error model
@pytest.mark.parametrize(
    ("estimator", "errors"), [(CALIBRATED, CALIBRATED_ERRORS), (JOINT, JOINT_ERRORS)]
)
def test_an_engine_with_the_estimators_own_error_model_is_its_engine(
    loaded: LoadedCollection, estimator, errors
) -> None:
    """The variants differ from the product's engines by their error model only."""
    c, truth = loaded.collection, loaded.judged_values
    config = EngineConfig(measure="ndcg")
    product, _ = build_engine(c, loaded.metadata, get_scale("fine"), estimator, config, seed=3)
    variant, _ = build_engine_with_errors(
        c, loaded.metadata, get_scale("fine"), estimator, config, errors=errors, seed=3
    )
    assert variant.config == product.config
    for _ in range(4):
        pairs = product.select(5)
        np.testing.assert_array_equal(variant.select(5), pairs)
        product.judge(pairs, truth[pairs])
        variant.judge(pairs, truth[pairs])
    np.testing.assert_array_equal(variant.evaluation().mean, product.evaluation().mean)
    np.testing.assert_array_equal(variant.evaluation().diff_var, product.evaluation().diff_var)
    with pytest.raises(ValueError, match="error model"):
        build_engine_with_errors(c, loaded.metadata, get_scale("fine"), "uniform", errors=errors)


def test_design_matrices_hide_the_pair_itself(make_toy_model, toy_judgments) -> None:
    judged, values = toy_judgments
    model = make_toy_model()
    pairs = np.array([0, 2])
    x_out, x_jud = design_matrices(model, judged, values, pairs)
    assert x_out is not None
    np.testing.assert_allclose(x_out, model.features.matrix()[pairs])
    # d1 with its own judgment hidden: A sees d2 (1), B sees d2, d6 (0.5), C sees d2, d6 (0.5)
    # aART of d1: other judged docs of artist P: d2 = 1
    np.testing.assert_allclose(x_jud[0], [1.0, (1 + 0.5 + 0.5) / 3, 1.0])
    x3, _ = model.jud_design(judged, values, 0)
    np.testing.assert_allclose(x_jud[1], x3[2])  # d3 is unjudged: nothing to hide


def test_with_models_swaps_in_a_refit(make_toy_model, toy_judgments) -> None:
    judged, values = toy_judgments
    model = make_toy_model()
    published = TABLE_A1[("broad", "out")]
    shifted = OrdinalModel(
        published.features, published.beta, published.alphas - 5, published.values
    )
    before, _, _ = model.estimate_all(judged, values)
    with_models(model, m_out=shifted)
    mean, _, source = model.estimate_all(judged, values)
    assert source[3] == SOURCE_M_OUT
    assert before[3] == pytest.approx(1.607662, abs=1e-6)
    assert mean[3] < 0.2  # alphas lowered by 5: almost surely not similar
