"""bench/experiments/variants.py: the estimator variants no campaign runs (refits swapped
into a relevance model)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.experiments.variants import design_matrices, with_models
from mtcjudge.mtc.estimators import SOURCE_M_OUT, TABLE_A1, OrdinalModel


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
