"""Second opinions, the fourth kind of hidden quality trial (docs/web-architecture.md, "Hidden
quality trials"): a pool pair another assessor judged with a judgment that counts, handed
blind to an assessor who never had it. Which pairs qualify, that nothing tells them from a
pool pair, that they are counted nowhere, and that an assessor never answers one pair both
as a second opinion and as a pool pair."""

from __future__ import annotations

import json
import math
import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import and_, func, select, text, update
from sqlalchemy.orm import aliased

from mtcjudge import audit
from mtcjudge.assessors import actions as actions
from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.exports.trec_files import qrels_lines
from mtcjudge.judging import trials
from mtcjudge.judging.repository import judgments as judgment_queries
from mtcjudge.judging.repository import leases as lease_queries
from mtcjudge.judging.repository import progress as progress_queries
from mtcjudge.judging.repository import trials as trial_queries
from mtcjudge.models import (
    Assessor,
    Campaign,
    Document,
    Judgment,
    Lease,
    Pair,
    PlanEntry,
    counted_judgment,
    utcnow,
)
from mtcjudge.pool import repository as pool_repository
from mtcjudge.security import hash_token
from tests.factories import CampaignFixture, build_campaign
from tests.support import next_body

ACTOR = audit.Actor("tester")


# ---------------------------------------------------------------- helpers
def hand_as_pool(db_session, pair: Pair, assessor: int) -> Lease:
    """Lease ``pair`` to ``assessor`` as a pool pair, as the planner would once it needs a
    judgment again (not judged, leased once)."""
    db_session.execute(update(Pair).where(Pair.id == pair.id).values(judged=0, leased=1))
    handed = Lease(
        campaign_id=pair.campaign_id,
        pair_id=pair.id,
        query_id=pair.query_id,
        document_id=pair.document_id,
        assessor_id=assessor,
        state="live",
        leased_at=utcnow(),
        expires_at=utcnow() + timedelta(minutes=10),
    )
    db_session.add(handed)
    db_session.flush()
    return handed


def post(client, token, lease_id, *, fine: float = 40.0, broad: int = 1):
    body = {"lease_id": lease_id, "broad": broad, "fine": fine, "client_id": str(uuid.uuid4())}
    return client.post(f"/api/a/{token}/judgments", json=body)


def submit(client, token, lease_id, **scores: Any) -> dict[str, Any]:
    response = post(client, token, lease_id, **scores)
    assert response.status_code == 201, response.text
    return response.json()


def lease_of(db_session, lease_id: int) -> Lease:
    lease = db_session.get(Lease, lease_id)
    db_session.refresh(lease)
    return lease


def assessor_id(db_session, token: str) -> int:
    return db_session.scalars(
        select(Assessor.id).where(Assessor.token_hash == hash_token(token))
    ).one()


def pair_counters(db_session) -> tuple[int, int, int]:
    db_session.expire_all()
    row = db_session.execute(
        select(func.sum(Pair.judged), func.sum(Pair.leased), func.sum(Pair.changes))
    ).one()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def only_second_opinions(db_session, client, fx: CampaignFixture, token: str) -> None:
    """Leave the assessor no other trial to be handed: no genres (no anchor), every query's
    reference handed before; a repeat needs REPEAT_GAP hand-outs, which the tests' assessors
    do not reach. Trials at every other hand-out, the next one among them (after a pool pair:
    the references count as the assessor's latest hand-out)."""
    db_session.execute(
        update(Document).where(Document.campaign_id == fx.campaign.id).values(genre=None)
    )
    for query in fx.queries:
        db_session.add(
            Lease(
                campaign_id=fx.campaign.id,
                query_id=query.id,
                document_id=query.document_id,
                assessor_id=assessor_id(db_session, token),
                kind="reference",
                state="released",
                expires_at=utcnow(),
            )
        )
    fx.campaign.quality_rate = 1.0
    db_session.flush()
    judge_pool(db_session, client, token, 1)  # never two trials in a row


def judge_pool(db_session, client, token, n: int) -> list[dict[str, Any]]:
    """Judge ``n`` hand-outs, asserting they are pool pairs; the pairs as the API gave them."""
    pairs = []
    for _ in range(n):
        body = next_body(client, token)
        pair = body["pair"]
        assert pair is not None, body
        assert lease_of(db_session, pair["lease_id"]).kind == "pool"
        submit(client, token, pair["lease_id"])
        pairs.append(pair)
    return pairs


def judged_pairs(db_session, who: int, kind: str = "pool") -> set[tuple[int, int]]:
    return set(
        db_session.execute(
            select(Judgment.query_id, Judgment.document_id).where(
                Judgment.assessor_id == who, Judgment.kind == kind
            )
        ).all()
    )


# ---------------------------------------------------------------- the kind
def test_each_kind_starts_a_fair_share_of_the_trials() -> None:
    """The kinds are tried from a drawn start, each start equally likely, second opinions
    among them (a kind that cannot be made passes its turn to the next)."""
    assert trials.KINDS == ("reference", "anchor", "repeat", "second")
    n = 20_000
    orders = [trials.kind_order(11, 5, handout) for handout in range(n)]
    for order in orders:
        assert sorted(order) == sorted(trials.KINDS)
        i = trials.KINDS.index(order[0])
        assert order == trials.KINDS[i:] + trials.KINDS[:i]  # the same cycle
    starts = Counter(order[0] for order in orders)
    assert sorted(starts) == sorted(trials.KINDS)
    share = 1 / len(trials.KINDS)
    for count in starts.values():
        # 5 standard errors of a binomial share (the draws are fixed: this never flickers)
        assert abs(count / n - share) <= 5 * math.sqrt(share * (1 - share) / n), starts


# ---------------------------------------------------------------- which pair
class Pool:
    """A campaign of four assessors whose judgments the tests write directly."""

    def __init__(self, db_session, **settings: Any) -> None:
        self.session = db_session
        self.fx = build_campaign(db_session, n_queries=3, k=3, n_assessors=4, **settings)
        self.a, self.b, self.c, self.d = (assessor_id(db_session, t) for t in self.fx.tokens)
        self.pairs = db_session.scalars(
            select(Pair).where(Pair.campaign_id == self.fx.campaign.id).order_by(Pair.id)
        ).all()

    def judge(
        self, who: int | None, pair: Pair, *, kind: str = "pool", set_aside: bool = False
    ) -> Judgment:
        judgment = Judgment(
            campaign_id=pair.campaign_id,
            query_id=pair.query_id,
            document_id=pair.document_id,
            assessor_id=who,
            broad=1,
            fine=50.0,
            kind=kind,
            set_aside=set_aside,
            source="assessor" if who is not None else "import",
        )
        self.session.add(judgment)
        if kind == "pool" and not set_aside:
            pair.judged += 1
        self.session.flush()
        return judgment

    def second(
        self, who: int, query_id: int | None = None, *, per_pair: int = 1, salt: int = 0
    ) -> tuple[int, int, int] | None:
        query = self.pairs[0].query_id if query_id is None else query_id
        return trial_queries.second_opinion(
            self.session, self.fx.campaign.id, who, query, per_pair, salt
        )


def test_a_second_opinion_is_of_another_assessors_judgment_that_counts(db_session) -> None:
    pool = Pool(db_session)
    pair = pool.pairs[0]
    assert pool.second(pool.b) is None  # nothing judged yet
    own = pool.judge(pool.b, pair)
    assert pool.second(pool.b) is None  # only their own judgment
    assert pool.second(pool.a) == (own.id, pair.query_id, pair.document_id)


@pytest.mark.parametrize(
    ("why", "for_others"),
    [
        ("imported", False),  # an imported judgment has no assessor to disagree with
        ("set_aside", False),
        ("unplayable", False),
        ("needs_more", False),  # a pair still in the pool: the assessor may judge it there
        ("handed_before", True),  # to A2 (a lease that ran out): not to A2, to A3 yes
        ("answered_as_trial", True),
    ],
)
def test_no_second_opinion_when_the_pair_does_not_qualify(db_session, why, for_others) -> None:
    per_pair = 2 if why == "needs_more" else 1
    pool = Pool(db_session, judgments_per_pair=per_pair)
    pair = pool.pairs[0]
    if why == "imported":
        pool.judge(None, pair)
    elif why == "set_aside":
        pool.judge(pool.a, pair, set_aside=True)
    else:
        pool.judge(pool.a, pair)
    if why == "unplayable":
        pair.playable = False
    elif why == "handed_before":
        db_session.add(
            Lease(
                campaign_id=pair.campaign_id,
                pair_id=pair.id,
                query_id=pair.query_id,
                document_id=pair.document_id,
                assessor_id=pool.b,
                state="expired",
                expires_at=utcnow(),
            )
        )
    elif why == "answered_as_trial":
        pool.judge(pool.b, pair, kind="reference")
    db_session.flush()
    assert pool.second(pool.b, per_pair=per_pair) is None
    found = pool.second(pool.c, per_pair=per_pair)
    assert (found is not None) == for_others
    if found is not None:
        assert found[1:] == (pair.query_id, pair.document_id)


def test_the_original_is_the_earliest_judgment_that_counts(db_session) -> None:
    pool = Pool(db_session, judgments_per_pair=2)
    pair = pool.pairs[0]
    aside = pool.judge(pool.a, pair, set_aside=True)
    first = pool.judge(pool.c, pair)
    assert pool.second(pool.b, per_pair=2) is None  # one judgment of the two asked for
    pool.judge(pool.d, pair)
    found = pool.second(pool.b, per_pair=2)
    assert found == (first.id, pair.query_id, pair.document_id)
    assert found[0] != aside.id
    # whatever the salt: each pair once, with the same original
    for salt in range(0, 2**31, 2**31 // 10):
        assert pool.second(pool.b, per_pair=2, salt=salt) == found


def test_the_current_query_first_then_any_query_and_the_salt_spreads(db_session) -> None:
    pool = Pool(db_session)
    queries = sorted({p.query_id for p in pool.pairs})
    for pair in pool.pairs:
        if pair.query_id != queries[2]:
            pool.judge(pool.a, pair)
    for query in queries[:2]:
        chosen = set()
        for salt in range(0, 2**31, 2**31 // 30):
            found = pool.second(pool.b, query, salt=salt)
            assert found is not None
            assert found[1] == query
            chosen.add(found[2])
        assert len(chosen) > 1
    # a query nobody else judged: another query's pair
    found = pool.second(pool.b, queries[2])
    assert found is not None
    assert found[1] in queries[:2]


def test_repeats_are_of_playable_pairs_only(db_session) -> None:
    pool = Pool(db_session)
    pair = pool.pairs[0]
    judgment = pool.judge(pool.a, pair)
    for _ in range(trials.REPEAT_GAP):
        db_session.add(
            Lease(
                campaign_id=pair.campaign_id,
                pair_id=pair.id,
                query_id=pair.query_id,
                document_id=pair.document_id,
                assessor_id=pool.a,
                state="done",
                expires_at=utcnow(),
            )
        )
    db_session.flush()
    judgment.lease_id = db_session.scalars(
        select(Lease.id).where(Lease.assessor_id == pool.a).order_by(Lease.id)
    ).first()
    db_session.flush()
    args = (db_session, pool.a, pair.query_id, trials.REPEAT_GAP, 0)
    assert trial_queries.repeat_judgment(*args) == (judgment.id, pair.query_id, pair.document_id)
    pair.playable = False
    db_session.flush()
    assert trial_queries.repeat_judgment(*args) is None


# ---------------------------------------------------------------- through the API
def a_second_opinion(db_session, client, fx: CampaignFixture) -> tuple[dict[str, Any], Lease]:
    """A1 judges three pool pairs; A2 judges their warm-up, then is handed a trial that can
    only be a second opinion. The trial as the API gave it, and its lease."""
    first, second = fx.tokens[:2]
    judge_pool(db_session, client, first, 3)
    judge_pool(db_session, client, second, trials.WARMUP)
    only_second_opinions(db_session, client, fx, second)
    trial = next_body(client, second)["pair"]
    lease = lease_of(db_session, trial["lease_id"])
    assert lease.kind == "second"
    return trial, lease


def test_a_second_opinion_looks_like_a_pool_pair_and_counts_nowhere(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=4, n_queries=3, k=3, target=1.0, keep_collecting=True)
    first, second = fx.tokens[:2]
    a, b = assessor_id(db_session, first), assessor_id(db_session, second)
    trial, lease = a_second_opinion(db_session, client, fx)
    # no slot taken; a pair A1 judged, B never had; the original is A1's judgment of it
    assert lease.pair_id is None
    original = db_session.get(Judgment, lease.repeat_of)
    assert (original.assessor_id, original.kind, original.set_aside) == (a, "pool", False)
    assert (original.query_id, original.document_id) == (lease.query_id, lease.document_id)
    pair = judgment_queries.pair_of(db_session, fx.campaign.id, lease.query_id, lease.document_id)
    assert pair is not None
    assert pair.playable
    assert (lease.query_id, lease.document_id) not in judged_pairs(db_session, b)
    handed = db_session.scalars(
        select(func.count()).where(
            Lease.assessor_id == b,
            Lease.query_id == lease.query_id,
            Lease.document_id == lease.document_id,
        )
    ).one()
    assert handed == 1  # this trial only
    # the assessor's current query when A1 judged a pair of it
    current = progress_queries.last_judged_query(db_session, b)
    if current in {q for q, _ in judged_pairs(db_session, a)}:
        assert lease.query_id == current
    # nothing in the JSON says what it is; a candidate number past the query's pool pairs
    pool_pairs = db_session.scalar(select(func.count()).where(Pair.query_id == lease.query_id))
    assert trial["candidate_number"] > pool_pairs
    for word in ('"second"', "opinion", "repeat", "kind", "document"):
        assert word not in json.dumps(trial)
    history = client.get(f"/api/a/{first}/history").json()
    numbers = {(h["query_number"], h["candidate_number"]) for h in history}
    assert (trial["query_number"], trial["candidate_number"]) not in numbers

    judged, leased, changes = pair_counters(db_session)
    campaign = db_session.get(Campaign, fx.campaign.id)
    qrels = list(qrels_lines(db_session, campaign, "fine", "mean"))
    counts = pool_repository.judgment_counts(db_session, fx.campaign.id)
    means = engine_repository.pair_means(db_session, fx.campaign.id, "fine")
    answer = submit(client, second, trial["lease_id"], fine=3.0, broad=0)
    stored = db_session.get(Judgment, answer["judgment"]["id"])
    assert (stored.kind, stored.repeat_of, stored.lease_id) == ("second", original.id, lease.id)
    assert stored.assessor_id == b
    assert pair_counters(db_session) == (judged, leased, changes)  # counted nowhere
    counted = db_session.scalar(select(func.count()).where(counted_judgment()))
    assert (judged, leased) == (counted, 0)
    db_session.expire_all()
    assert list(qrels_lines(db_session, campaign, "fine", "mean")) == qrels
    assert pool_repository.judgment_counts(db_session, fx.campaign.id) == counts
    assert engine_repository.pair_means(db_session, fx.campaign.id, "fine") == means
    assert answer["progress"]["campaign_judged"] == counted
    # a revision wakes nobody either
    revised = client.put(f"/api/a/{second}/judgments/{stored.id}", json={"broad": 1, "fine": 20.0})
    assert revised.status_code == 200, revised.text
    assert pair_counters(db_session) == (judged, leased, changes)
    # never two trials in a row
    following = next_body(client, second)["pair"]
    assert lease_of(db_session, following["lease_id"]).kind == "pool"


def test_a_pair_given_a_second_opinion_never_comes_back_to_them_as_a_pool_pair(
    db_session, client
) -> None:
    """A1's judgments are set aside after A2's second opinion: the pair is back in the
    pool, and A2, judging on to the end, is never handed it; A3 is."""
    fx = build_campaign(
        db_session, n_systems=3, n_queries=2, k=3, n_assessors=3, target=1.0, keep_collecting=True
    )
    first, second, third = fx.tokens
    b = assessor_id(db_session, second)
    trial, lease = a_second_opinion(db_session, client, fx)
    submit(client, second, trial["lease_id"])
    fx.campaign.quality_rate = 0.0
    db_session.flush()
    campaign = db_session.get(Campaign, fx.campaign.id)
    actions.set_aside(db_session, campaign, assessor_id(db_session, first), ACTOR)
    db_session.flush()
    pair = judgment_queries.pair_of(db_session, fx.campaign.id, lease.query_id, lease.document_id)
    assert pair is not None
    db_session.refresh(pair)
    assert pair.judged == 0  # free again
    # the claim's conditional UPDATE refuses it to A2 (and the claim then leaves out every
    # pair they answered as a trial that is back in the pool)
    assert lease_queries.trial_pairs_back(db_session, b, 1) == {pair.id}
    assert not lease_queries.take_slot(db_session, pair.id, 1, utcnow(), b)
    while True:
        body = next_body(client, second)
        if body["status"] != "pair":
            break
        got = lease_of(db_session, body["pair"]["lease_id"])
        assert (got.query_id, got.document_id) != (lease.query_id, lease.document_id)
        submit(client, second, body["pair"]["lease_id"])
    assert (lease.query_id, lease.document_id) not in judged_pairs(db_session, b)
    assert "You have judged every pair" in body["message"]
    # someone else is handed it
    body = next_body(client, third)
    got = lease_of(db_session, body["pair"]["lease_id"])
    assert (got.query_id, got.document_id) == (lease.query_id, lease.document_id)


def test_many_pairs_answered_as_trials_back_in_the_pool_do_not_stall_the_claim(
    db_session,
) -> None:
    """More pairs than a claim tries (MAX_CLAIM_ATTEMPTS) came back to the pool after A2
    gave second opinions on them, ahead of every other free pair: one ``next`` still hands A2
    another pair (after the first refusal the claim leaves them all out)."""
    from mtcjudge.judging import service

    fx = build_campaign(db_session, n_systems=4, n_queries=6, k=4, keep_collecting=True)
    second = fx.tokens[1]
    b = assessor_id(db_session, second)
    pairs = db_session.scalars(
        select(Pair).where(Pair.campaign_id == fx.campaign.id).order_by(Pair.id)
    ).all()
    back = pairs[: service.MAX_CLAIM_ATTEMPTS + 4]
    assert len(pairs) > len(back)
    db_session.add_all(
        Judgment(
            campaign_id=p.campaign_id,
            query_id=p.query_id,
            document_id=p.document_id,
            assessor_id=b,
            broad=1,
            fine=50.0,
            kind="second",
        )
        for p in back
    )
    db_session.flush()
    assert db_session.scalar(select(func.count()).select_from(PlanEntry)) == 0  # no plan yet
    result = service.next_pair(db_session, second)
    assert result.status == "pair", result.message
    assert result.lease is not None
    assert result.lease.pair_id not in {p.id for p in back}
    assert result.lease.pair_id == pairs[len(back)].id  # the first free pair by id


def test_a_pool_answer_to_a_pair_they_gave_a_second_opinion_on_is_refused(
    db_session, client
) -> None:
    """Should the pair come back to them as a pool pair after all (here: leased by hand,
    its original set aside), their pool answer is refused (409): one assessor never answers
    a pair both as a second opinion and as a pool pair."""
    fx = build_campaign(
        db_session, n_systems=3, n_queries=2, k=3, n_assessors=2, target=1.0, keep_collecting=True
    )
    second = fx.tokens[1]
    b = assessor_id(db_session, second)
    trial, lease = a_second_opinion(db_session, client, fx)
    pair = judgment_queries.pair_of(db_session, fx.campaign.id, lease.query_id, lease.document_id)
    assert pair is not None

    def pool_lease() -> Lease:
        """The pair leased to A2 as a pool pair (its original set aside: room for one)."""
        db_session.execute(
            update(Judgment)
            .where(Judgment.id == lease.repeat_of)
            .values(set_aside=True)
            .execution_options(synchronize_session=False)
        )
        return hand_as_pool(db_session, pair, b)

    submit(client, second, trial["lease_id"])
    handed = pool_lease()
    before = pair_counters(db_session)
    refused = post(client, second, handed.id)
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "conflict"
    assert pair_counters(db_session) == before
    assert judged_pairs(db_session, b, "second") == {(pair.query_id, pair.document_id)}
    assert (pair.query_id, pair.document_id) not in judged_pairs(db_session, b)


def test_a_late_second_opinion_of_a_pair_judged_since_as_pool_is_refused(
    db_session, client
) -> None:
    """The second opinion's lease lapsed, its original was set aside and A2 was handed the
    pair as a pool pair: the late answer to the second opinion is refused (409) while they
    hold it and after they judged it."""
    fx = build_campaign(
        db_session, n_systems=3, n_queries=2, k=3, n_assessors=2, target=1.0, keep_collecting=True
    )
    _first, second = fx.tokens
    b = assessor_id(db_session, second)
    trial, lease = a_second_opinion(db_session, client, fx)
    pair = judgment_queries.pair_of(db_session, fx.campaign.id, lease.query_id, lease.document_id)
    assert pair is not None
    # the trial lapses; the original is set aside and A2 judges the pair as a pool pair
    db_session.execute(
        update(Lease).where(Lease.id == lease.id).values(state="expired", expires_at=utcnow())
    )
    db_session.execute(
        update(Judgment).where(Judgment.id == lease.repeat_of).values(set_aside=True)
    )
    handed = hand_as_pool(db_session, pair, b)
    # while they hold it as a pool pair, and once they judged it so
    held = post(client, second, trial["lease_id"])
    assert held.status_code == 409, held.text
    submit(client, second, handed.id)
    late = post(client, second, trial["lease_id"])
    assert late.status_code == 409, late.text
    assert judged_pairs(db_session, b, "second") == set()
    assert (pair.query_id, pair.document_id) in judged_pairs(db_session, b)


def test_a_second_opinion_whose_pair_cannot_be_played_any_more_ends(
    db_session, client, tmp_path: Path
) -> None:
    """The candidate's clip goes missing while A2 holds a second opinion of its pair: the
    answer is refused as a pool pair's would be (409 pair_unplayable), and the next call
    ends the trial (the planner ends the leases of the pair, which a trial's lease is not)
    and hands out another pair."""
    fx = build_campaign(
        db_session,
        n_systems=3,
        n_queries=2,
        k=3,
        audio_dir=tmp_path,
        target=1.0,
        keep_collecting=True,
    )
    second = fx.tokens[1]
    client.app.state.planner.audio_check_seconds = 0.0  # the clips looked at on every tick
    trial, lease = a_second_opinion(db_session, client, fx)
    clip = db_session.get_one(Document, lease.document_id).audio_path
    assert clip is not None
    Path(clip).unlink()
    refused = post(client, second, trial["lease_id"])
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "pair_unplayable"
    pair = judgment_queries.pair_of(db_session, fx.campaign.id, lease.query_id, lease.document_id)
    assert pair is not None
    db_session.refresh(pair)
    assert pair.playable is False  # marked by the planner
    assert db_session.scalar(select(func.count()).where(Judgment.kind == "second")) == 0
    body = next_body(client, second)
    assert lease_of(db_session, lease.id).state == "released"
    assert body["status"] == "pair"
    assert body["pair"]["lease_id"] != lease.id
    following = lease_of(db_session, body["pair"]["lease_id"])
    assert following.kind == "pool"
    assert following.document_id != lease.document_id


def test_no_second_opinion_without_another_assessors_judgment(db_session, client) -> None:
    """Alone in the campaign (or with A2 not started), an assessor due a trial that can only
    be a second opinion gets a pool pair."""
    fx = build_campaign(
        db_session, n_systems=3, n_queries=2, k=3, n_assessors=2, target=1.0, keep_collecting=True
    )
    second = fx.tokens[1]
    judge_pool(db_session, client, second, trials.WARMUP)
    only_second_opinions(db_session, client, fx, second)
    for _ in range(3):
        body = next_body(client, second)
        assert body["pair"] is not None, body
        assert lease_of(db_session, body["pair"]["lease_id"]).kind == "pool"
        submit(client, second, body["pair"]["lease_id"])
    assert db_session.scalar(select(func.count()).where(Lease.kind == "second")) == 0


# ---------------------------------------------------------------- reading them
#: each second opinion of a campaign with its original (docs/web-architecture.md, "Hidden
#: quality trials"), as the SQL there
SECOND_OPINIONS_SQL = """
SELECT s.id, s.assessor_id, s.fine, s.broad,
       o.id AS original_id, o.assessor_id AS original_assessor,
       o.fine AS original_fine, o.broad AS original_broad, s.query_id, s.document_id
FROM judgment s
JOIN judgment o ON o.id = s.repeat_of
JOIN assessor a ON a.id = s.assessor_id
WHERE s.campaign_id = :campaign AND s.kind = 'second'
  AND o.kind = 'pool' AND NOT o.set_aside
  AND a.set_aside_at IS NULL
"""


def second_opinions_orm(campaign_id: int) -> Any:
    """The same as :data:`SECOND_OPINIONS_SQL` with the ORM."""
    original = aliased(Judgment)
    return (
        select(
            Judgment.id,
            Judgment.assessor_id,
            Judgment.fine,
            Judgment.broad,
            original.id,
            original.assessor_id,
            original.fine,
            original.broad,
            Judgment.query_id,
            Judgment.document_id,
        )
        .join(original, original.id == Judgment.repeat_of)
        .join(Assessor, Assessor.id == Judgment.assessor_id)
        .where(
            Judgment.campaign_id == campaign_id,
            Judgment.kind == "second",
            counted_judgment_of(original),
            Assessor.set_aside_at.is_(None),
        )
    )


def counted_judgment_of(judgment: Any) -> Any:
    return and_(judgment.kind == "pool", judgment.set_aside.is_(False))


def test_the_second_opinions_of_a_campaign_with_their_originals(db_session, client) -> None:
    fx = build_campaign(db_session, n_systems=3, n_queries=2, k=3, target=1.0, keep_collecting=True)
    first, second = fx.tokens
    trial, lease = a_second_opinion(db_session, client, fx)
    answer = submit(client, second, trial["lease_id"], fine=12.0, broad=0)
    original = db_session.get_one(Judgment, lease.repeat_of)
    expected = [
        (
            answer["judgment"]["id"],
            assessor_id(db_session, second),
            12.0,
            0,
            original.id,
            assessor_id(db_session, first),
            original.fine,
            original.broad,
            lease.query_id,
            lease.document_id,
        )
    ]

    def read() -> tuple[list[Any], list[Any]]:
        db_session.expire_all()
        by_sql = db_session.execute(text(SECOND_OPINIONS_SQL), {"campaign": fx.campaign.id})
        by_orm = db_session.execute(second_opinions_orm(fx.campaign.id))
        return [tuple(r) for r in by_sql], [tuple(r) for r in by_orm]

    assert read() == (expected, expected)
    # the original set aside: it no longer stands for the pair
    campaign = db_session.get_one(Campaign, fx.campaign.id)
    actions.set_aside(db_session, campaign, assessor_id(db_session, first), ACTOR)
    assert read() == ([], [])
    actions.bring_back(db_session, campaign, assessor_id(db_session, first), ACTOR)
    assert read() == (expected, expected)
    # the second opinion's assessor set aside (their trial answers keep set_aside false)
    actions.set_aside(db_session, campaign, assessor_id(db_session, second), ACTOR)
    assert db_session.get_one(Judgment, answer["judgment"]["id"]).set_aside is False
    assert read() == ([], [])
