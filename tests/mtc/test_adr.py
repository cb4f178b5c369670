"""Tests for mtcjudge.mtc.adr: original [TVW] ADR, graded ADR@k (2.17) and user ADR@k (3.9)."""

from __future__ import annotations

import numpy as np
import pytest

from mtcjudge.mtc.adr import adr_graded, adr_partial_order, adr_user

TVW_GROUPS = ((1, 2), (3, 4, 5))


# --------------------------------------------------------------------------------------
# Original ADR of Typke et al.
# --------------------------------------------------------------------------------------


def test_tvw_example() -> None:
    # Recalls 1, 0.5, 1, 1, 0.8 (docs/method.md §7.2).
    assert adr_partial_order(TVW_GROUPS, (2, 3, 1, 5, 7, 8, 9, 4)) == pytest.approx(0.86, abs=1e-12)


def test_tvw_example_with_false_positive() -> None:
    value = adr_partial_order(TVW_GROUPS, (2, 10, 3, 1, 5, 7, 8, 9, 4))
    assert value == pytest.approx(0.7433, abs=5e-5)
    assert value == pytest.approx((1 + 1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 5, abs=1e-12)


def test_ideal_result_scores_one_and_order_within_groups_is_free() -> None:
    assert adr_partial_order(TVW_GROUPS, (1, 2, 3, 4, 5)) == pytest.approx(1.0)
    assert adr_partial_order(TVW_GROUPS, (2, 1, 5, 3, 4)) == pytest.approx(1.0)


def test_tvw_documented_weakness_ties_orders() -> None:
    # [TVW] Section 4: <4,3,5,6> and <3,4,5,6> score the same against <(1),(2),(3),(4)>.
    groups = ((1,), (2,), (3,), (4,))
    assert adr_partial_order(groups, (4, 3, 5, 6)) == pytest.approx(
        adr_partial_order(groups, (3, 4, 5, 6))
    )


def test_short_and_empty_results() -> None:
    # Missing ranks find nothing: recalls 1, 0.5, 1/3, 1/4, 1/5.
    expected = (1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 5
    assert adr_partial_order(TVW_GROUPS, (1,)) == pytest.approx(expected)
    assert adr_partial_order(TVW_GROUPS, ()) == 0.0


def test_items_can_be_strings() -> None:
    groups = (("a", "b"), ("c", "d", "e"))
    assert adr_partial_order(groups, ["b", "c", "a", "e", "x"]) == pytest.approx(0.86)


def test_custom_cutoff() -> None:
    result = (2, 3, 1, 5, 7, 8, 9, 4)
    # k = 3: recalls 1, 0.5, 1.
    assert adr_partial_order(TVW_GROUPS, result, k=3) == pytest.approx(2.5 / 3)
    # k = 8: beyond n = 5 the dynamic set is the whole ground truth: 4/6, 4/7, 5/8.
    expected = (1 + 0.5 + 1 + 1 + 0.8 + 4 / 6 + 4 / 7 + 5 / 8) / 8
    assert adr_partial_order(TVW_GROUPS, result, k=8) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("groups", "result", "kwargs", "match"),
    [
        ((), (1,), {}, "groups must be a non-empty sequence of groups"),
        ("ab", (1,), {}, "groups must be a non-empty sequence of groups"),
        (((1, 2), ()), (1,), {}, "each group must be a non-empty sequence of ids"),
        (((1, 2), "cd"), (1,), {}, "each group must be a non-empty sequence of ids"),
        (((1, 2), (2, 3)), (1,), {}, "each item must be in one group only, found 2 twice"),
        (TVW_GROUPS, (1, 2, 1), {}, "result must not repeat an item"),
        (TVW_GROUPS, "12345", {}, "result must be a sequence of ids"),
        (TVW_GROUPS, (1, 2), {"k": 0}, "k must be an integer >= 1, found 0"),
        (TVW_GROUPS, (1, 2), {"k": 2.0}, "k must be an integer >= 1, found 2.0"),
    ],
)
def test_adr_partial_order_validation(
    groups: object, result: object, kwargs: dict[str, object], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        adr_partial_order(groups, result, **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# Graded ADR@k ([T] 2.17)
# --------------------------------------------------------------------------------------


def test_graded_reproduces_tvw_false_positive_example() -> None:
    # a=b=2, c=d=e=1, f=0; ranking (b, c, x, a, d) with x unjudged.
    value = adr_graded([2, 1, 0, 2, 1], [2, 2, 1, 1, 1, 0], k=5)
    assert value == pytest.approx(0.7433, abs=5e-5)
    assert value == pytest.approx((1 + 1 / 2 + 2 / 3 + 3 / 4 + 4 / 5) / 5, abs=1e-12)


def test_graded_pool_order_is_irrelevant() -> None:
    assert adr_graded([2, 1, 0, 2, 1], [0, 1, 2, 1, 2, 1], 5) == pytest.approx(
        adr_graded([2, 1, 0, 2, 1], [2, 2, 1, 1, 1, 0], 5)
    )


def test_graded_ideal_ranking_scores_one() -> None:
    pool = np.array([2, 1, 2, 0, 1, 1])
    ideal = np.sort(pool)[::-1]
    assert adr_graded(ideal, pool, k=5) == pytest.approx(1.0)
    # Past the judged documents r_I = 0 and every retrieved document counts.
    assert adr_graded(ideal, pool, k=6) == pytest.approx(1.0)


def test_graded_only_first_k_and_short_rankings() -> None:
    pool = [2, 2, 1, 1, 1, 0]
    assert adr_graded([2, 1, 0, 2, 1, 1], pool, 5) == pytest.approx(
        adr_graded([2, 1, 0, 2, 1], pool, 5)
    )
    # Ranking of 2: (1 + 1/2 + 2/3 + 2/4 + 2/5) / 5 with (b, c).
    assert adr_graded([2, 1], pool, 5) == pytest.approx((1 + 1 / 2 + 2 / 3 + 2 / 4 + 2 / 5) / 5)
    assert adr_graded([], pool, 3) == 0.0


def test_graded_with_nothing_relevant_counts_every_document() -> None:
    # No judged relevant documents: every r_I is 0 and every term is 1.
    assert adr_graded([0, 0, 0], [0, 0, 0], 3) == pytest.approx(1.0)
    assert adr_graded([0, 0, 0], [], 3) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(20))
def test_graded_equals_partial_order_on_random_groups(seed: int) -> None:
    # Groups of equal relevance form a partial order; the two definitions coincide at
    # k = n (the number of ground-truth items) when non-ground-truth items are 0.
    rng = np.random.default_rng(seed)
    n_levels = int(rng.integers(2, 5))
    sizes = rng.integers(1, 4, size=n_levels)
    items = np.arange(int(sizes.sum()))
    level_of_item = np.repeat(np.arange(n_levels, 0, -1), sizes)  # first group most relevant
    groups = [
        tuple(int(i) for i in items[level_of_item == level]) for level in range(n_levels, 0, -1)
    ]
    candidates = np.arange(items.size + 5)  # 5 false positives
    result = [int(c) for c in rng.permutation(candidates)[: int(rng.integers(1, candidates.size))]]
    relevance = {int(i): float(level) for i, level in zip(items, level_of_item, strict=True)}
    ranking_relevance = [relevance.get(item, 0.0) for item in result]
    pool_relevance = list(relevance.values()) + [0.0] * 5
    n = items.size
    assert adr_graded(ranking_relevance, pool_relevance, n) == pytest.approx(
        adr_partial_order(groups, result)
    )


@pytest.mark.parametrize("seed", range(10))
def test_graded_is_in_unit_interval(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    pool = rng.integers(0, 3, size=12).astype(float)
    ranking = rng.permutation(pool)[:7]
    value = adr_graded(ranking, pool, int(rng.integers(1, 10)))
    assert 0.0 <= value <= 1.0


@pytest.mark.parametrize(
    ("ranking", "pool", "k", "match"),
    [
        ([[2, 1]], [2, 1], 2, "ranking_relevance must be 1-D"),
        ([2, 1], [[2, 1]], 2, "pool_relevance must be 1-D"),
        ([2, np.nan], [2, 1], 2, "ranking_relevance must be finite"),
        ([2, 1], [2, np.inf], 2, "pool_relevance must be finite"),
        ([2, -1], [2, 1], 2, r"ranking_relevance must be >= 0 \(relevance levels\), found -1"),
        ([2, 1], [2, -1], 2, "pool_relevance must be >= 0"),
        ([2, 1], [2, 1], 0, "k must be an integer >= 1, found 0"),
        ([2, 1], [2, 1], 1.5, "k must be an integer >= 1, found 1.5"),
        (
            [2, 2, 1],
            [2, 1, 1],
            3,
            "pool_relevance must hold every judged document of the ranking: the ranking "
            "has 2 documents of relevance 2, the pool 1",
        ),
    ],
)
def test_adr_graded_validation(ranking: object, pool: object, k: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        adr_graded(ranking, pool, k)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# User-oriented ADR@k ([T] 3.9)
# --------------------------------------------------------------------------------------


def test_user_adr_spec_broad_example() -> None:
    value = adr_user([2, 0, 1, 2, 1], k=5, lmax=2)
    assert value == pytest.approx(0.5467, abs=5e-5)
    assert value == pytest.approx((1 + 1 / 2 + 1 / 3 + 2 / 4 + 2 / 5) / 5, abs=1e-12)


def test_user_adr_extremes() -> None:
    assert adr_user([2, 2, 2, 2, 2], 5, 2) == pytest.approx(1.0)
    assert adr_user([1, 1, 1, 1, 1], 5, 2) == 0.0
    assert adr_user([4, 3], 5, 4) == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 5)


def test_user_adr_is_graded_adr_against_an_ideal_of_k_top_documents() -> None:
    ranking = [2, 0, 1, 2, 1]
    assert adr_user(ranking, 5, 2) == pytest.approx(adr_graded(ranking, [2.0] * 7 + [1.0, 1.0], 5))


@pytest.mark.parametrize(
    ("ranking", "k", "lmax", "match"),
    [
        ([2, 1], 0, 2, "k must be an integer >= 1, found 0"),
        ([2, 1], 2, 0, "lmax must be finite and > 0, found 0.0"),
        ([2, 1], 2, np.nan, "lmax must be finite and > 0"),
        ([3, 1], 2, 2, "ranking_relevance must be <= lmax=2, found 3"),
        ([2, np.nan], 2, 2, "ranking_relevance must be finite"),
        ([[2, 1]], 2, 2, "ranking_relevance must be 1-D"),
    ],
)
def test_adr_user_validation(ranking: object, k: object, lmax: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        adr_user(ranking, k, lmax)  # type: ignore[arg-type]
