"""The judging invariants hold under real concurrency: separate processes (as several server
processes would be), each with its own connections and transactions, against a migrated
scratch database (an SQLite file, or Postgres when ``TEST_DATABASE_URL`` is set). Each race is
lined up on a barrier and repeated.

Invariants: at most ``judgments_per_pair`` judgments per pair; at most one live lease per
assessor; a pair held by at most ``judgments_per_pair`` assessors at once; one judgment per
(pair, assessor); idempotency by ``client_id``. Each test also covers a race measured on the
allocation that kept its lock in the process (see docs/judging-at-scale.md).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.db import make_database_engine, make_sessionmaker, session_scope, upgrade_database
from mtcjudge.judging import trials
from mtcjudge.models import Assessor, Judgment, Lease, Pair, counted_judgment, utcnow
from mtcjudge.security import hash_token
from tests.factories import TEST_AUDIO, build_campaign
from tests.judging.workers import Workers, op_next, op_submit


@dataclass
class Scratch:
    url: str
    engine: Engine
    factory: sessionmaker[Session]
    campaign_id: int
    tokens: list[str]


@pytest.fixture
def scratch_url(empty_database_url: str) -> str:
    upgrade_database(empty_database_url)
    return empty_database_url


@pytest.fixture
def scratch(scratch_url: str) -> Iterator[Callable[..., Scratch]]:
    engines: list[Engine] = []

    def make(audio_dir: Path | None = TEST_AUDIO, **settings: Any) -> Scratch:
        engine = make_database_engine(scratch_url)
        engines.append(engine)
        factory = make_sessionmaker(engine)
        with session_scope(factory) as session:
            fx = build_campaign(session, audio_dir=audio_dir, **settings)
            campaign_id, tokens = fx.campaign.id, fx.tokens
        return Scratch(scratch_url, engine, factory, campaign_id, tokens)

    yield make
    for engine in engines:
        engine.dispose()


@pytest.fixture
def workers() -> Iterator[Callable[[str, int], Workers]]:
    started: list[Workers] = []

    def start(url: str, n: int) -> Workers:
        started.append(Workers(url, n))
        return started[-1]

    yield start
    for w in started:
        w.close()


def rows(s: Scratch, stmt: Any) -> list[Any]:
    with s.engine.connect() as conn:
        return list(conn.execute(stmt).all())


def live_leases(s: Scratch) -> list[tuple[int, int]]:
    return [
        (a, p)
        for a, p in rows(s, select(Lease.assessor_id, Lease.pair_id).where(Lease.state == "live"))
    ]


def judgments_per_pair(s: Scratch) -> Counter[tuple[int, int]]:
    return Counter((q, d) for q, d in rows(s, select(Judgment.query_id, Judgment.document_id)))


def expire_all_leases(s: Scratch) -> None:
    past = utcnow() - timedelta(minutes=1)
    with session_scope(s.factory) as session:
        session.execute(update(Lease).where(Lease.state == "live").values(expires_at=past))
        session.execute(update(Pair).where(Pair.leased > 0).values(leased_until=past))


def oks(results: list[tuple[str, Any]]) -> list[Any]:
    assert not [r for r in results if r[0] == "exception"], results
    return [value for kind, value in results if kind == "ok"]


def test_concurrent_next_of_one_assessor_leases_one_pair(scratch, workers) -> None:
    s = scratch(n_systems=4, n_queries=4, k=3)
    token = s.tokens[0]
    w = workers(s.url, 6)
    for _round in range(5):
        leases = oks(w.run([("next", (token,))] * 6))
        assert len(leases) == 6
        assert len(set(leases)) == 1, leases  # every call answered with the same lease
        assert len(live_leases(s)) == 1
        # pause gives back everything the assessor holds
        oks(w.run([("pause", (token,))] * 6))
        assert live_leases(s) == []


def test_concurrent_submits_with_one_client_id_store_one_judgment(scratch, workers) -> None:
    s = scratch(n_systems=3, n_queries=3, k=3)
    token = s.tokens[0]
    w = workers(s.url, 6)
    for _round in range(5):
        lease_id = oks(w.run([("next", (token,))] * 6))[0]
        client_id = str(uuid.uuid4())
        stored = oks(w.run([("submit", (token, lease_id, client_id))] * 6))
        assert len(stored) == 6  # all answered 200/201, none failed
        assert len(set(stored)) == 1  # with the one stored judgment
    assert sum(judgments_per_pair(s).values()) == 5


def test_concurrent_submits_of_one_lease_judge_the_pair_once(scratch, workers) -> None:
    s = scratch(n_systems=3, n_queries=3, k=3)
    token = s.tokens[0]
    w = workers(s.url, 5)
    for _round in range(5):
        lease_id = oks(w.run([("next", (token,))] * 5))[0]
        results = w.run([("submit", (token, lease_id))] * 5)
        assert len(oks(results)) == 1, results
        assert sorted(v for kind, v in results if kind == "error") == [409] * 4, results
    assert max(judgments_per_pair(s).values()) == 1


def test_late_submit_racing_another_assessors_next_never_double_judges(scratch, workers) -> None:
    """The lease of A ran out; A submits late while B asks for a pair: either A's judgment
    counts and B gets another pair, or B gets the pair and A is told 410 — never both."""
    s = scratch(n_systems=3, n_queries=4, k=2, n_assessors=2)
    a, b = s.tokens
    w = workers(s.url, 2)
    for _round in range(10):
        lease_a = oks(w.run([("next", (a,)), ("pause", (b,))]))[0]
        if lease_a is None:
            break
        with session_scope(s.factory) as session:
            held = session.get_one(Lease, lease_a).pair_id
        expire_all_leases(s)
        late, next_b = w.run([("submit", (a, lease_a)), ("next", (b,))])
        assert next_b[0] == "ok", next_b
        lease_b = next_b[1]
        with session_scope(s.factory) as session:
            b_pair = session.get_one(Lease, lease_b).pair_id if lease_b else None
        if late[0] == "error":
            assert late[1] == 410, late
            assert b_pair == held
        else:
            assert late[0] == "ok", late
            assert b_pair != held
        if lease_b is not None:
            oks(w.run([("submit", (b, lease_b)), ("pause", (a,))]))
    assert max(judgments_per_pair(s).values()) == 1


@pytest.mark.parametrize("per_pair", [1, 2])
def test_many_assessors_judging_at_once_respect_every_invariant(scratch, workers, per_pair):
    n = 6
    s = scratch(n_systems=4, n_queries=4, k=3, n_assessors=n, judgments_per_pair=per_pair)
    w = workers(s.url, n)
    results = oks(w.run([("judge_loop", (token, 60)) for token in s.tokens]))
    assert len(results) == n
    assert max(most_held for _, most_held in results) <= per_pair
    per_pair_counts = judgments_per_pair(s)
    assert max(per_pair_counts.values()) <= per_pair
    # one judgment per (pair, assessor)
    judged = rows(s, select(Judgment.assessor_id, Judgment.query_id, Judgment.document_id))
    assert len(judged) == len(set(judged))
    # the counters the claims rely on agree with the rows
    live = Counter(p for _, p in live_leases(s))
    for pair_id, q, d, n_judged, n_leased in rows(
        s, select(Pair.id, Pair.query_id, Pair.document_id, Pair.judged, Pair.leased)
    ):
        assert n_judged == per_pair_counts.get((q, d), 0)
        assert n_leased == live.get(pair_id, 0)
    # and nothing was left out: the whole pool got its judgments
    n_pool = rows(s, select(func.count()).select_from(Pair))[0][0]
    assert sum(per_pair_counts.values()) == per_pair * n_pool


# ---------------------------------------------------------------- with hidden quality trials
#: the clips (a trial is only made of clips that have audio)
AUDIO = TEST_AUDIO


def counted_per_pair(s: Scratch) -> Counter[tuple[int, int]]:
    stmt = select(Judgment.query_id, Judgment.document_id).where(counted_judgment())
    return Counter((q, d) for q, d in rows(s, stmt))


def warm_up(s: Scratch, token: str) -> None:
    """Judge the assessor's first hand-outs (pool pairs), after which a trial is due."""
    for _ in range(trials.WARMUP):
        lease_id = op_next(s.factory, token)
        assert lease_id is not None
        op_submit(s.factory, token, lease_id)


def pair_counters(s: Scratch) -> tuple[int, int, int]:
    judged, leased, changes = rows(
        s, select(func.sum(Pair.judged), func.sum(Pair.leased), func.sum(Pair.changes))
    )[0]
    return int(judged or 0), int(leased or 0), int(changes or 0)


def judged_in_full_with_trials(
    s: Scratch, per_pair: int, results: list[tuple[int, int]], n: int
) -> Counter[str]:
    """The invariants after assessors judged the whole pool with trials among their pairs;
    the judgments by kind."""
    assert len(results) == n
    assert max(most_held for _, most_held in results) <= per_pair
    counted = counted_per_pair(s)
    assert max(counted.values()) <= per_pair
    n_pool = rows(s, select(func.count()).select_from(Pair))[0][0]
    assert sum(counted.values()) == per_pair * n_pool  # trials took no pool pair's slot
    # the counters the claims rely on agree with the rows: trials moved none of them
    live = Counter(p for _, p in live_leases(s))
    for pair_id, q, d, n_judged, n_leased in rows(
        s, select(Pair.id, Pair.query_id, Pair.document_id, Pair.judged, Pair.leased)
    ):
        assert n_judged == counted.get((q, d), 0)
        assert n_leased == live.get(pair_id, 0)
    # trials were handed out, each answered once, each on a lease without a pair
    answers = rows(
        s,
        select(
            Judgment.assessor_id,
            Judgment.query_id,
            Judgment.document_id,
            Judgment.kind,
            Judgment.repeat_of,
            Lease.kind,
            Lease.pair_id,
        ).join(Lease, Lease.id == Judgment.lease_id),
    )
    kinds = Counter(row[3] for row in answers)
    assert kinds["pool"] == per_pair * n_pool
    assert sum(v for k, v in kinds.items() if k != "pool") > 0
    for _a, _q, _d, kind, _repeat_of, lease_kind, pair_id in answers:
        assert kind == lease_kind
        assert (pair_id is None) == (kind != "pool")
    keys = [(a, q, d, kind) for a, q, d, kind, *_ in answers]
    assert len(keys) == len(set(keys))  # one judgment per pair, assessor and kind
    # no assessor was handed one trial twice
    trial_leases = rows(
        s,
        select(Lease.assessor_id, Lease.query_id, Lease.document_id, Lease.kind).where(
            Lease.kind != "pool"
        ),
    )
    assert len(trial_leases) == len(set(trial_leases))
    trial_pairs = rows(s, select(Lease.pair_id).where(Lease.kind != "pool"))
    assert all(pair_id is None for (pair_id,) in trial_pairs)
    # each second opinion is of a playable pair judged by another assessor with a judgment
    # that counts (the earliest), never one its assessor judged as a pool pair
    pool_of = {(a, q, d) for a, q, d, kind, *_ in answers if kind == "pool"}
    judgments = {
        j: (a, q, d, kind, aside)
        for j, a, q, d, kind, aside in rows(
            s,
            select(
                Judgment.id,
                Judgment.assessor_id,
                Judgment.query_id,
                Judgment.document_id,
                Judgment.kind,
                Judgment.set_aside,
            ),
        )
    }
    playable = {
        (q, d): p for q, d, p in rows(s, select(Pair.query_id, Pair.document_id, Pair.playable))
    }
    for a, q, d, kind, repeat_of, _lease_kind, _pair_id in answers:
        if kind != "second":
            continue
        original = judgments[repeat_of]
        assert original[0] != a
        assert original[1:] == (q, d, "pool", False)
        assert (a, q, d) not in pool_of
        assert playable[(q, d)]
        earlier = [
            j
            for j, (who, oq, od, okind, _aside) in judgments.items()
            if (oq, od) == (q, d) and okind == "pool" and who != a and j < repeat_of
        ]
        assert earlier == []
    return kinds


@pytest.mark.parametrize("per_pair", [1, 2])
def test_many_assessors_with_quality_trials_respect_every_invariant(scratch, workers, per_pair):
    """Every other hand-out a trial (rate 1): the pool is still judged in full, each pair
    exactly ``per_pair`` times, its counters agree with the rows, and no trial held a pair."""
    n = 6
    s = scratch(
        audio_dir=AUDIO,
        n_systems=4,
        n_queries=8,
        k=3,
        n_assessors=n,
        judgments_per_pair=per_pair,
        quality_rate=1.0,
    )
    w = workers(s.url, n)
    results = oks(w.run([("judge_loop", (token, 400)) for token in s.tokens]))
    judged_in_full_with_trials(s, per_pair, results, n)


@pytest.mark.parametrize("per_pair", [1, 2])
def test_second_opinions_under_concurrency_respect_every_invariant(scratch, workers, per_pair):
    """Each assessor judges their warm-up first, so that every one of them can be handed
    another's pair for a second opinion from their first trial on; then all judge at once
    (rate 1). Second opinions are handed out, take no slot, and every invariant holds."""
    n = 6
    s = scratch(
        audio_dir=AUDIO,
        n_systems=4,
        n_queries=8,
        k=3,
        n_assessors=n,
        judgments_per_pair=per_pair,
        quality_rate=1.0,
    )
    for token in s.tokens:
        warm_up(s, token)
    w = workers(s.url, n)
    results = oks(w.run([("judge_loop", (token, 400)) for token in s.tokens]))
    kinds = judged_in_full_with_trials(s, per_pair, results, n)
    assert kinds["second"] > 0, kinds


def test_concurrent_next_of_an_assessor_due_a_trial_leases_one_trial(scratch, workers) -> None:
    s = scratch(audio_dir=AUDIO, n_systems=4, n_queries=3, k=3, n_assessors=1, quality_rate=1.0)
    token = s.tokens[0]
    warm_up(s, token)
    w = workers(s.url, 6)
    for _round in range(4):
        before = pair_counters(s)
        leases = oks(w.run([("next", (token,))] * 6))
        assert len(set(leases)) == 1, leases  # one lease, every call answered with it
        assert len(live_leases(s)) == 1
        ((kind, pair_id),) = rows(s, select(Lease.kind, Lease.pair_id).where(Lease.id == leases[0]))
        assert (kind != "pool", pair_id) == (True, None)
        assert pair_counters(s) == before  # the trial took no slot
        # five submissions of the trial with new client ids: one judgment, four 409
        results = w.run([("submit", (token, leases[0]))] * 5 + [("pause", (token,))])
        assert len(oks(results)) == 2, results  # one submission, and the pause
        assert sorted(v for k, v in results if k == "error") == [409] * 4, results
        assert pair_counters(s) == before
        # then a pool pair (never two trials in a row), judged, and a trial is due again
        lease_id = op_next(s.factory, token)
        assert lease_id is not None
        assert rows(s, select(Lease.kind).where(Lease.id == lease_id))[0][0] == "pool"
        op_submit(s.factory, token, lease_id)
    trial_answers = rows(s, select(Judgment.kind).where(Judgment.kind != "pool"))
    assert len(trial_answers) == 4


def test_a_trial_never_takes_the_last_free_pair(scratch, workers) -> None:
    """The pool has one free pair; an assessor due a trial and a newcomer ask at once: the
    newcomer gets the pair, the other a trial, every time."""
    rounds = 6
    s = scratch(
        audio_dir=AUDIO,
        n_systems=4,
        n_queries=6,
        k=4,
        n_assessors=1 + 2 * rounds,
        quality_rate=1.0,
    )
    holder = s.tokens[0]
    due, newcomers = s.tokens[1 : 1 + rounds], s.tokens[1 + rounds :]
    for a in due:  # each judged its warm-up: a trial is due
        warm_up(s, a)
    # every pair but one judged
    while True:
        free = rows(s, select(func.count()).where(Pair.judged + Pair.leased < 1))[0][0]
        if free <= 1:
            break
        lease_id = op_next(s.factory, holder)
        assert lease_id is not None
        op_submit(s.factory, holder, lease_id)
    assert free == 1
    w = workers(s.url, 2)
    for a, b in zip(due, newcomers, strict=True):
        got_a, got_b = oks(w.run([("next", (a,)), ("next", (b,))]))
        kind_a, pair_a = rows(s, select(Lease.kind, Lease.pair_id).where(Lease.id == got_a))[0]
        kind_b, pair_b = rows(s, select(Lease.kind, Lease.pair_id).where(Lease.id == got_b))[0]
        assert (kind_a != "pool", pair_a) == (True, None)
        assert kind_b == "pool"
        assert pair_b is not None
        assert pair_counters(s)[1] == 1  # one slot held: the newcomer's
        # both give back what they hold; the next two race for the same pair
        oks(w.run([("pause", (b,)), ("pause", (a,))]))
        assert pair_counters(s)[1] == 0


def test_a_late_second_opinion_racing_a_pool_answer_of_its_pair_stores_one(
    scratch, workers
) -> None:
    """A2's second opinion of a pair lapsed unanswered; the pair came back to the pool (its
    original set aside) and A2 holds it as a pool pair. The late second opinion and the pool
    answer come in at once: one is stored, the other refused (409), never both (each takes
    the pair's row first and then looks for the other)."""
    rounds = 6
    s = scratch(audio_dir=AUDIO, n_systems=4, n_queries=3, k=3, n_assessors=2, keep_collecting=True)
    first, second = s.tokens
    for _ in range(rounds):
        lease_id = op_next(s.factory, first)
        assert lease_id is not None
        op_submit(s.factory, first, lease_id)
    with session_scope(s.factory) as session:
        originals = session.execute(
            select(Judgment.id, Judgment.query_id, Judgment.document_id).order_by(Judgment.id)
        ).all()
        b = session.scalars(
            select(Assessor.id).where(Assessor.token_hash == hash_token(second))
        ).one()
    w = workers(s.url, 2)
    outcomes: Counter[str] = Counter()
    for n, (original, q, d) in enumerate(originals):
        now = utcnow()
        with session_scope(s.factory) as session:
            pair = session.scalars(
                select(Pair).where(Pair.query_id == q, Pair.document_id == d)
            ).one()
            lapsed = Lease(
                campaign_id=s.campaign_id,
                query_id=q,
                document_id=d,
                assessor_id=b,
                kind="second",
                repeat_of=original,
                state="expired",
                leased_at=now - timedelta(minutes=20),
                expires_at=now - timedelta(minutes=10),
            )
            session.add(lapsed)
            session.execute(update(Judgment).where(Judgment.id == original).values(set_aside=True))
            pair.judged, pair.leased = 0, 1
            pair.leased_until = now + timedelta(minutes=10)
            held = Lease(
                campaign_id=s.campaign_id,
                pair_id=pair.id,
                query_id=q,
                document_id=d,
                assessor_id=b,
                state="live",
                leased_at=now,
                expires_at=now + timedelta(minutes=10),
            )
            session.add(held)
            session.flush()
            lapsed_id, held_id = lapsed.id, held.id
        calls = [("submit", (second, lapsed_id)), ("submit", (second, held_id))]
        if n % 2:
            calls.reverse()
        results = w.run(calls)
        assert sorted(kind for kind, _ in results) == ["error", "ok"], results
        assert [v for kind, v in results if kind == "error"] == [409], results
        stored = rows(
            s,
            select(Judgment.kind).where(
                Judgment.assessor_id == b, Judgment.query_id == q, Judgment.document_id == d
            ),
        )
        assert len(stored) == 1, stored
        outcomes[stored[0][0]] += 1
        # the pair's counters agree with its rows whichever won
        judged, leased = rows(s, select(Pair.judged, Pair.leased).where(Pair.id == pair.id))[0]
        assert judged == (1 if stored[0][0] == "pool" else 0)
        if stored[0][0] == "second":
            # the pool lease stays live, its slot counted; give it back for the next round
            assert leased == 1
            oks(w.run([("pause", (second,)), ("pause", (first,))]))
    assert sum(outcomes.values()) == len(originals)
