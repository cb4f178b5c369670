"""The listening-time model (docs/method.md §11): recovery of known speeds, the robustness
rules on bad input, shrinkage of a newcomer, defaults before data, hours spent."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest

from mtcjudge.mtc.listening_time import (
    BYTES_PER_SECOND,
    PRIOR_WEIGHT,
    QUERY_CHANGE_PRIOR,
    QUERY_CHANGE_WEIGHT,
    Defaults,
    Observation,
    PairToCome,
    break_cap_seconds,
    clean,
    fit,
    forecast_hours,
    forecast_judgments,
    hours_spent,
    pool_hours,
    query_changes,
)


@dataclass(frozen=True)
class Volunteer:
    """A simulated volunteer: shares of each clip heard, a decision in seconds."""

    assessor: int
    query_new: float
    query_same: float
    candidate: float
    decision: float
    per_query: int = 5  # pairs of one query before the next


def simulate(
    v: Volunteer,
    n: int,
    rng: np.random.Generator,
    start: float = 0.0,
    clip: float = 30.0,
    noise: float = 0.1,
) -> tuple[list[Observation], float]:
    """``n`` judgments of ``v`` back to back, each leased at the previous submit."""
    out: list[Observation] = []
    t = start
    for i in range(n):
        query = v.assessor * 10_000 + i // v.per_query
        changed = i % v.per_query == 0
        share_q = v.query_new if changed else v.query_same
        ql = max(0.0, share_q * clip * (1 + noise * rng.standard_normal()))
        cl = max(0.0, v.candidate * clip * (1 + noise * rng.standard_normal()))
        dec = max(0.0, v.decision * (1 + noise * rng.standard_normal()))
        leased = t + 0.3
        t = leased + ql + cl + dec
        out.append(
            Observation(
                assessor=v.assessor,
                query=query,
                submitted_at=t,
                leased_at=leased,
                query_seconds=clip,
                candidate_seconds=clip,
                query_listen_ms=round(ql * 1000),
                candidate_listen_ms=round(cl * 1000),
                served_query_bytes=int(clip * BYTES_PER_SECOND),
                served_candidate_bytes=int(clip * BYTES_PER_SECOND),
            )
        )
    return out, t


FAST = Volunteer(1, query_new=0.6, query_same=0.1, candidate=0.5, decision=5.0)
SLOW = Volunteer(2, query_new=1.5, query_same=0.4, candidate=1.2, decision=20.0)


def test_synthetic_volunteers_with_known_speeds_recover_their_parameters() -> None:
    rng = np.random.default_rng(7)
    fast, _ = simulate(FAST, 400, rng)
    slow, _ = simulate(SLOW, 400, rng)
    model = fit(fast + slow)
    for v in (FAST, SLOW):
        s = model.speeds(v.assessor)
        assert s.judgments == 400
        assert s.query_new.value == pytest.approx(v.query_new, rel=0.12)
        assert s.query_same.value == pytest.approx(v.query_same, rel=0.12, abs=0.03)
        assert s.candidate.value == pytest.approx(v.candidate, rel=0.08)
        assert s.decision.value == pytest.approx(v.decision, rel=0.08)
        e = model.expected_seconds(v.assessor, True, 30.0, 30.0)
        truth = 30 * v.query_new + 30 * v.candidate + v.decision
        assert e.seconds == pytest.approx(truth, rel=0.08)
        assert e.low <= e.seconds <= e.high
    # the pool lies between them
    pooled = model.pooled
    assert FAST.decision < pooled.decision.value < SLOW.decision
    assert FAST.candidate < pooled.candidate.value < SLOW.candidate


def test_a_pair_of_the_current_query_is_cheaper_and_short_clips_cheaper_than_long() -> None:
    rng = np.random.default_rng(1)
    model = fit(simulate(FAST, 200, rng)[0])
    new = model.expected_seconds(1, True, 30.0, 30.0).seconds
    same = model.expected_seconds(1, False, 30.0, 30.0).seconds
    short = model.expected_seconds(1, False, 30.0, 10.0).seconds
    assert same < new
    assert short < same
    # a new query costs about the share of it heard more
    assert new - same == pytest.approx(30 * (FAST.query_new - FAST.query_same), rel=0.15)


def test_defaults_before_any_data_are_the_stated_ones() -> None:
    model = fit([])
    d = Defaults()
    assert (d.clip_seconds, d.decision_seconds) == (30.0, 10.0)
    e = model.expected_seconds(None, True)
    # the whole query, the whole candidate, a 10 s decision
    assert e.seconds == pytest.approx(30 + 30 + 10)
    assert e.listening == pytest.approx(60)
    assert e.low < e.seconds < e.high
    same = model.expected_seconds(None, False, 30.0, 30.0)
    assert same.seconds == pytest.approx(30 + 10)
    # an assessor not seen is the pool
    assert model.expected_seconds(99, True) == e


def test_the_listening_rule_floors_each_clip() -> None:
    model = fit([], Defaults(listen_rule_seconds=5.0))
    # the query again on a pair of the same query: at least the rule's 5 s
    assert model.expected_seconds(None, False, 30.0, 30.0).seconds == pytest.approx(5 + 30 + 10)
    # a clip shorter than the rule: its whole length
    assert model.expected_seconds(None, False, 3.0, 30.0).seconds == pytest.approx(3 + 30 + 10)


def test_a_few_judgments_move_the_pool_off_the_defaults_in_proportion() -> None:
    rng = np.random.default_rng(3)
    obs, _ = simulate(replace(FAST, per_query=1), 10, rng, noise=0.0)
    pooled = fit(obs).pooled
    # 10 measured decisions of 5 s against the default's 10 judgments' weight of 10 s
    assert pooled.decision.n == 10
    expected = (10 * FAST.decision + PRIOR_WEIGHT * 10.0) / (10 + PRIOR_WEIGHT)
    assert pooled.decision.value == pytest.approx(expected, rel=0.02)


def test_a_newcomer_with_three_judgments_is_shrunk_toward_the_pool() -> None:
    rng = np.random.default_rng(11)
    crowd = []
    t = 0.0
    for a in range(1, 6):
        v = Volunteer(a, 1.0, 0.2, 1.0, 10.0 + a)
        obs, t = simulate(v, 150, rng, start=t)
        crowd += obs
    wild = Volunteer(50, 2.5, 2.0, 2.5, 200.0)
    newcomer, _ = simulate(wild, 3, rng, start=t + 10_000, noise=0.0)
    model = fit(crowd + newcomer)
    pool = model.pooled
    s = model.speeds(50)
    assert s.judgments == 3
    assert s.decision.n == 3
    # 3/13 their own
    own = 3 / (3 + PRIOR_WEIGHT)
    shrunk = own * 200 + (1 - own) * pool.decision.value
    assert s.decision.value == pytest.approx(shrunk, rel=1e-9)
    assert s.decision.value < 0.5 * 200
    assert s.candidate.value < 2.0
    # more uncertain than a regular, and the interval says so
    regular = model.expected_seconds(1, True, 30.0, 30.0)
    fresh = model.expected_seconds(50, True, 30.0, 30.0)
    assert fresh.se > regular.se
    # a regular is hardly shrunk
    assert model.speeds(1).decision.value == pytest.approx(11.0, rel=0.08)


def test_a_tab_left_open_overnight_is_a_break_not_judging() -> None:
    rng = np.random.default_rng(5)
    obs, _t = simulate(FAST, 60, rng)
    overnight = replace(obs[30], leased_at=obs[29].submitted_at, submitted_at=None)
    # the pair leased in the evening, submitted ten hours later
    evening = obs[29].submitted_at
    assert evening is not None
    night = replace(overnight, submitted_at=evening + 10 * 3600)
    later = [
        replace(
            o,
            leased_at=(o.leased_at or 0) + 10 * 3600,
            submitted_at=(o.submitted_at or 0) + 10 * 3600,
        )
        for o in obs[31:]
    ]
    data = [*obs[:30], night, *later]
    cleaned = clean(data)
    assert cleaned[30].is_break
    assert cleaned[30].decision is None
    model = fit(data)
    assert model.speeds(1).decision.value == pytest.approx(FAST.decision, rel=0.12)
    spent = hours_spent(data, model)
    clean_spent = hours_spent(obs, model)
    # the night is not counted: about what the same judgments take without it
    assert spent.total.hours == pytest.approx(clean_spent.total.hours, rel=0.05)
    assert spent.total.hours < 1.0
    assert spent.total.imputed >= 1


def test_an_idle_tab_looping_a_clip_all_night_is_not_listening() -> None:
    rng = np.random.default_rng(6)
    obs, _ = simulate(FAST, 40, rng)
    looped = replace(obs[10], candidate_listen_ms=8 * 3600 * 1000)
    data = [*obs[:10], looped, *obs[11:]]
    c = clean(data)[10]
    assert c.candidate_listen is None  # more than 4 plays of a 30 s clip
    model = fit(data)
    assert model.speeds(1).candidate.value == pytest.approx(FAST.candidate, rel=0.1)
    assert hours_spent(data, model).total.hours < 1.0


def test_a_clock_stepped_back_or_forward_leaves_the_model_sane() -> None:
    rng = np.random.default_rng(8)
    obs, _ = simulate(FAST, 80, rng)
    back = [
        replace(o, submitted_at=(o.submitted_at or 0) - 3600, leased_at=(o.leased_at or 0) - 3600)
        if i >= 40
        else o
        for i, o in enumerate(obs)
    ]
    # the judgment during the step: submitted "before" it was leased and before the previous
    stepped = replace(back[40], leased_at=obs[40].leased_at)
    back[40] = stepped
    cleaned = clean(back)
    assert cleaned[40].wall is None
    assert cleaned[40].decision is None
    forward = [
        replace(o, submitted_at=(o.submitted_at or 0) + 86_400 * 30) if i == 40 else o
        for i, o in enumerate(obs)
    ]
    for data in (back, forward):
        model = fit(data)
        s = model.speeds(1)
        assert s.decision.value == pytest.approx(FAST.decision, rel=0.12)
        assert all(math.isfinite(x) for x in (s.decision.se, s.candidate.se, s.query_new.se))
        spent = hours_spent(data, model)
        assert 0 < spent.total.hours < 1.0
        assert spent.total.hours == pytest.approx(hours_spent(obs).total.hours, rel=0.05)


def test_a_clip_of_unknown_duration() -> None:
    rng = np.random.default_rng(9)
    obs, _ = simulate(FAST, 40, rng)
    unknown = [
        replace(o, query_seconds=None, candidate_seconds=None, served_candidate_bytes=None)
        for o in obs
    ]
    c = clean(unknown)
    assert all(x.query_duration is None and x.candidate_duration is None for x in c)
    # reports still count as seconds, but inform no share; the decision is still measured
    assert all(x.candidate_listen is not None for x in c)
    model = fit(unknown)
    s = model.speeds(1)
    assert s.candidate.n == 0
    assert s.candidate.value == pytest.approx(1.0)
    assert s.decision.value == pytest.approx(FAST.decision, rel=0.12)
    # a pair to come of unknown duration counts as the default clip
    e = model.expected_seconds(1, True, None, None)
    assert e.seconds == pytest.approx(model.expected_seconds(1, True, 30.0, 30.0).seconds)
    assert math.isfinite(e.seconds)
    assert e.seconds > 0
    # the candidate's duration is read from the bytes sent for the lease when it is unknown
    by_bytes = clean([replace(obs[0], candidate_seconds=None)])[0]
    assert by_bytes.candidate_duration == pytest.approx(30.0)
    # the time spent is finite
    assert 0 < hours_spent(unknown, model).total.hours < 1.0


def test_a_missing_report_falls_back_on_the_bytes_sent_then_on_the_model() -> None:
    obs = Observation(
        assessor=1,
        query=1,
        submitted_at=100.0,
        leased_at=30.0,
        query_seconds=30.0,
        candidate_seconds=30.0,
        served_query_bytes=30 * BYTES_PER_SECOND,
        served_candidate_bytes=15 * BYTES_PER_SECOND,
    )
    c = clean([obs])[0]
    assert c.query_listen == pytest.approx(30.0)
    assert c.candidate_listen == pytest.approx(15.0)
    assert c.decision == pytest.approx(25.0)
    # a query's bytes count over all the assessor's pairs of it: on a pair of the same
    # query they say nothing of this pair's listening
    again = replace(obs, submitted_at=200.0, leased_at=100.5)
    same = clean([obs, again])[1]
    assert not same.query_changed  # the same query as the previous judgment
    assert same.query_listen is None
    assert same.candidate_listen == pytest.approx(15.0)
    nothing = replace(obs, served_query_bytes=None, served_candidate_bytes=0)
    c = clean([nothing])[0]
    assert c.query_listen is None
    assert c.candidate_listen is None
    assert c.decision is None
    spent = hours_spent([nothing], fit([]))
    assert spent.total.imputed == 1
    assert spent.total.seconds == pytest.approx(70.0)  # the defaults


def test_two_tabs_are_not_counted_twice() -> None:
    # tab A leased at 0, tab B leased at 10; A submitted at 60, B at 100
    a = Observation(
        1,
        1,
        submitted_at=60.0,
        leased_at=0.0,
        query_seconds=30.0,
        candidate_seconds=30.0,
        query_listen_ms=20_000,
        candidate_listen_ms=20_000,
    )
    b = replace(a, submitted_at=100.0, leased_at=10.0, query_listen_ms=0)
    b = replace(b, candidate_listen_ms=30_000)
    ca, cb = clean([a, b])
    assert not ca.overlapped
    assert ca.wall == pytest.approx(60.0)
    assert cb.overlapped
    assert cb.wall == pytest.approx(40.0)
    assert cb.decision is None  # not a clean measure of the decision
    spent = hours_spent([a, b], fit([a, b]))
    # never more than the 100 s the assessor's tabs were open
    assert spent.total.seconds <= 100.0 + 1e-9
    assert spent.total.judgments == 2


def test_many_overlapping_tabs_stay_within_the_time_the_assessor_was_there() -> None:
    rng = np.random.default_rng(12)
    obs, t_end = simulate(FAST, 50, rng)
    # every other judgment leased well before the previous one was submitted
    tabs = [
        replace(o, leased_at=(o.leased_at or 0) - 40.0) if i % 2 and i > 0 else o
        for i, o in enumerate(obs)
    ]
    first = tabs[0].leased_at or 0.0
    spent = hours_spent(tabs)
    assert spent.total.seconds <= t_end - first + 1e-6
    assert fit(tabs).speeds(1).decision.value == pytest.approx(FAST.decision, rel=0.15)


def test_hours_spent_per_assessor_and_total() -> None:
    rng = np.random.default_rng(13)
    fast, t_fast = simulate(FAST, 100, rng)
    slow, t_slow = simulate(SLOW, 100, rng, start=0.0)
    spent = hours_spent(fast + slow)
    assert set(spent.assessors) == {1, 2}
    # clean back-to-back judgments: their wall time (the 0.3 s of each lease aside)
    assert spent.assessors[1].seconds == pytest.approx(t_fast - 100 * 0.3, rel=1e-6)
    assert spent.assessors[2].seconds == pytest.approx(t_slow - 100 * 0.3, rel=1e-6)
    assert spent.total.hours == pytest.approx(spent.assessors[1].hours + spent.assessors[2].hours)
    assert spent.total.judgments == 200
    assert spent.total.imputed == 0
    assert 0 < spent.total.listening_hours < spent.total.hours


def test_break_cap() -> None:
    assert break_cap_seconds(30.0, 30.0) == pytest.approx(480.0)
    assert break_cap_seconds(None, None) == pytest.approx(480.0)
    assert break_cap_seconds(10.0, 10.0) == pytest.approx(360.0)


def test_forecast_hours_has_an_interval_that_narrows_relatively_with_data() -> None:
    pairs = [PairToCome(None, i % 5 == 0, 30.0, 30.0) for i in range(1000)]
    before = forecast_hours(fit([]), pairs)
    # 200 query changes × (30 + 30 + 10) + 800 × (30 + 10) s
    assert before.hours == pytest.approx((200 * 70 + 800 * 40) / 3600)
    assert before.low < before.hours < before.high
    rng = np.random.default_rng(14)
    obs: list[Observation] = []
    t = 0.0
    for a in range(1, 8):
        o, t = simulate(Volunteer(a, 1.0, 0.0, 1.0, 10.0), 200, rng, start=t)
        obs += o
    after = forecast_hours(fit(obs), pairs)
    assert after.hours == pytest.approx(before.hours, rel=0.05)
    assert (after.high - after.low) < (before.high - before.low)
    with pytest.raises(ValueError, match="level"):
        forecast_hours(fit([]), pairs, level=1.0)


def test_garbage_in_keeps_every_figure_finite_and_non_negative() -> None:
    rng = np.random.default_rng(15)

    def maybe(x: float) -> float | None:
        return None if rng.random() < 0.2 else x

    def any_ms() -> int | None:
        choices = [0, 5_000, 30_000, 10**9, 2**31 - 1]
        return None if rng.random() < 0.2 else int(rng.choice(choices))

    obs = [
        Observation(
            assessor=int(rng.integers(1, 4)),
            query=int(rng.integers(1, 3)),
            submitted_at=maybe(float(rng.uniform(-1e9, 1e9))),
            leased_at=maybe(float(rng.uniform(-1e9, 1e9))),
            query_seconds=maybe(float(rng.choice([0.0, -3.0, 30.0, math.inf, math.nan]))),
            candidate_seconds=maybe(float(rng.choice([0.0, 7.5, 30.0, 600.0]))),
            query_listen_ms=any_ms(),
            candidate_listen_ms=any_ms(),
            served_query_bytes=int(rng.choice([0, 10**6])) if rng.random() < 0.8 else None,
            served_candidate_bytes=int(rng.choice([0, 10**6])) if rng.random() < 0.8 else None,
        )
        for _ in range(300)
    ]
    model = fit(obs)
    for a in (None, 1, 2, 3):
        for changes in (True, False):
            e = model.expected_seconds(a, changes, None, 30.0)
            assert all(math.isfinite(x) for x in (e.seconds, e.low, e.high, e.se, e.sd))
            assert 0 <= e.low <= e.seconds <= e.high
    spent = hours_spent(obs, model)
    assert math.isfinite(spent.total.seconds)
    assert spent.total.listening_seconds >= 0
    assert spent.total.decision_seconds >= 0
    assert spent.total.judgments == 300


def test_the_defaults_put_mirex_2011_above_the_53_hour_floor_of_u12() -> None:
    # 6,322 judgments of 100 queries, each query heard once (docs/method.md §11)
    per_query = [64] * 22 + [63] * 78
    assert sum(per_query) == 6_322
    pairs = [PairToCome(None, i == 0, 30.0, 30.0) for n in per_query for i in range(n)]
    hours = forecast_hours(fit([]), pairs).hours
    assert hours == pytest.approx((100 * 70 + 6_222 * 40) / 3600)
    assert hours == pytest.approx(71.1, abs=0.05)
    assert hours > 53.0


def test_a_count_stands_for_that_many_pairs_alike() -> None:
    rng = np.random.default_rng(16)
    obs, _ = simulate(SLOW, 60, rng)
    model = fit(obs)
    one_by_one = [PairToCome(2, i % 4 == 0, 20.0, 40.0) for i in range(200)]
    counted = [PairToCome(2, True, 20.0, 40.0, 50), PairToCome(2, False, 20.0, 40.0, 150)]
    a, b = forecast_hours(model, one_by_one), forecast_hours(model, counted)
    assert (b.hours, b.low, b.high) == pytest.approx((a.hours, a.low, a.high))
    assert forecast_hours(model, [PairToCome(2, True, count=0)]).hours == 0.0
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="count"):
            forecast_hours(model, [PairToCome(2, True, count=bad)])


def test_the_query_change_share_is_shrunk_toward_the_stated_prior() -> None:
    assert query_changes([]).share == QUERY_CHANGE_PRIOR == 0.2
    # one assessor on queries 1, 1, 2, 2, 2, 1; another's first judgment changes query too
    order = [(1, 1), (1, 1), (1, 2), (2, 2), (1, 2), (1, 2), (1, 1)]
    obs = [Observation(a, q, float(i)) for i, (a, q) in enumerate(order)]
    counted = query_changes(obs)
    assert (counted.changes, counted.judgments) == (4, 7)
    assert counted.share == pytest.approx((4 + QUERY_CHANGE_WEIGHT * 0.2) / (7 + 20))
    # what the page says wins over the order
    told = [replace(o, query_changed=False) for o in obs]
    assert query_changes(told).changes == 0
    # many judgments: the measured share
    many = [Observation(1, i // 2, float(i)) for i in range(2000)]
    assert query_changes(many).share == pytest.approx(0.5, abs=0.01)


def test_forecast_judgments_is_forecast_hours_of_that_many_pairs() -> None:
    model = fit([])
    f = forecast_judgments(model, 1000, 0.2, 30.0, 30.0)
    assert f.hours == pytest.approx((200 * 70 + 800 * 40) / 3600)
    pairs = [PairToCome(None, i % 5 == 0, 30.0, 30.0) for i in range(1000)]
    assert (f.low, f.high) == pytest.approx(
        (forecast_hours(model, pairs).low, forecast_hours(model, pairs).high)
    )
    assert forecast_judgments(model, 0, 0.2).hours == 0.0
    for judgments, share in ((-1, 0.2), (math.inf, 0.2), (10, 1.5), (10, -0.1)):
        with pytest.raises(ValueError, match=r"judgments|share"):
            forecast_judgments(model, judgments, share)


def test_the_whole_pool_hears_each_query_once() -> None:
    # MIREX 2011 with the defaults: 100 queries, 6,322 pairs (docs/method.md §11)
    pool = pool_hours(fit([]), 100, 6_322, 30.0, 30.0)
    assert pool.hours == pytest.approx((100 * 70 + 6_222 * 40) / 3600)
    assert pool.listening_hours == pytest.approx((100 * 60 + 6_222 * 30) / 3600)
    assert pool.low < pool.hours < pool.high
    # unknown durations count as the default clip
    assert pool_hours(fit([]), 100, 6_322).hours == pytest.approx(pool.hours)
    assert pool_hours(fit([]), 0, 0).hours == 0.0
    with pytest.raises(ValueError, match="every query"):
        pool_hours(fit([]), 10, 5)
    with pytest.raises(ValueError, match=">= 0"):
        pool_hours(fit([]), -1, 5)
