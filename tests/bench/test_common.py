"""bench/_common.py: what the benchmarks share."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench._common import central_interval, excess_interval


def test_the_central_interval_leaves_out_what_is_not_a_number() -> None:
    values = np.concatenate([np.arange(1.0, 1001.0), [math.nan, math.inf]])
    low, high = central_interval(values)
    assert low == pytest.approx(np.percentile(np.arange(1.0, 1001.0), 2.5))
    assert high == pytest.approx(np.percentile(np.arange(1.0, 1001.0), 97.5))
    assert all(math.isnan(x) for x in central_interval([math.nan]))


def test_the_excess_interval_needs_two_campaigns_and_one_allowance_each() -> None:
    rng = np.random.default_rng(0)
    assert excess_interval([3], [1.0], rng) is None
    with pytest.raises(ValueError, match="one allowance per campaign"):
        excess_interval([1, 2], [1.0], rng)
    # campaigns that all miss by the same amount: every resample's pooled excess is 3 x 2
    assert excess_interval([3, 3, 3], [1.0, 1.0, 1.0], rng) == (6.0, 6.0)
