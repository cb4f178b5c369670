"""Hidden quality trials: which hand-outs are trials, and which trial.

At the campaign's ``quality_rate`` an assessor is handed, instead of a pool pair, a trial
that looks exactly like one (docs/web-architecture.md, "Hidden quality trials"):

- **reference**: the query clip against itself (the assessor's current query);
- **anchor**: the current query against a clip clearly unlike it by the campaign's
  metadata (another genre, another artist) that no system retrieved for it;
- **repeat**: a pool pair the assessor judged at least :data:`REPEAT_GAP` hand-outs ago
  (their current query's when it has one);
- **second** (a second opinion): a playable pool pair that needs no more judgments, judged
  by another assessor with a judgment that counts, that this assessor was never handed nor
  judged in any kind (their current query's when it has one); ``repeat_of`` is the other
  assessor's judgment (the earliest that counts). Pairs judged twice by different
  assessors measure how far assessors disagree, which repeats (one assessor twice) cannot.

A trial's lease has no pair: it takes no pool pair's slot and never moves a pair's
counters; its answer is stored as a judgment of its kind, counted nowhere.

Whether a hand-out is a trial is a draw, replayable from the campaign's seed, the
assessor and the number of the hand-out: no trial in an assessor's first
:data:`WARMUP` hand-outs, never two in a row, and otherwise a trial with the probability
that makes the share of trials the campaign's rate (``rate / (1 - rate)`` after a pool
pair gives a long-run share of ``rate``; rates from 0.5 make every other hand-out a trial).
The kinds are tried in the order of :data:`KINDS` from a drawn start, so each kind that can
be made gets an equal share. When no trial can be made (no reference or anchor left for the
query, no judgment old enough to repeat, no pair another assessor judged), the hand-out is a
pool pair: the share of trials is then lower.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from mtcjudge.judging.repository import context as context_queries
from mtcjudge.judging.repository import leases as lease_queries
from mtcjudge.judging.repository import trials as trial_queries
from mtcjudge.models import TRIAL_KINDS

__all__ = [
    "KINDS",
    "REPEAT_GAP",
    "WARMUP",
    "hand_out",
    "kind_order",
    "trial_due",
    "unit_draw",
]

#: an assessor's first hand-outs are pool pairs: they learn the task first
WARMUP = 3
#: a repeat is of a judgment made at least this many hand-outs before
REPEAT_GAP = 10
#: the kinds of trial, tried in an order drawn for each hand-out
KINDS = TRIAL_KINDS


def unit_draw(seed: int, assessor_id: int, handout: int, purpose: str) -> float:
    """A number in [0, 1) fixed by the campaign's seed, the assessor, the hand-out's number
    and what it is drawn for: the same hand-out always draws the same."""
    text = f"{seed}:{assessor_id}:{handout}:{purpose}".encode()
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def kind_order(seed: int, assessor_id: int, handout: int) -> tuple[str, ...]:
    """The kinds of trial in the order a hand-out tries them: :data:`KINDS` from a drawn
    start, each start equally likely (a kind that cannot be made passes its turn on)."""
    start = int(unit_draw(seed, assessor_id, handout, "kind") * len(KINDS))
    return KINDS[start:] + KINDS[:start]


def trial_due(rate: float, handouts: int, last_was_trial: bool, draw: float) -> bool:
    """Whether the coming hand-out (the assessor has had ``handouts``) is a quality trial."""
    if rate <= 0 or handouts < WARMUP or last_was_trial:
        return False
    if rate >= 0.5:
        return True
    return draw < rate / (1.0 - rate)


def hand_out(
    session: Session, context: context_queries.Context, now: datetime
) -> lease_queries.LeaseInfo | None:
    """Lease a quality trial to the assessor if this hand-out is one and one can be made;
    None otherwise (the caller claims a pool pair). When a concurrent request of the same
    assessor leased something first, that lease."""
    draw = unit_draw(context.seed, context.assessor_id, context.handouts, "trial")
    last_was_trial = context.last_kind is not None and context.last_kind != "pool"
    if not trial_due(context.quality_rate, context.handouts, last_was_trial, draw):
        return None
    if context.last_query is None:
        return None  # trials are made on the query the assessor is on
    query = trial_queries.trial_query(session, context.assessor_id, context.last_query)
    if query is None or not query.has_audio:
        return None
    salt = int(unit_draw(context.seed, context.assessor_id, context.handouts, "salt") * 2**31)
    expires_at = now + timedelta(minutes=context.lease_minutes)
    for kind in kind_order(context.seed, context.assessor_id, context.handouts):
        chosen = _choose(session, context, query, kind, salt)
        if chosen is None:
            continue
        document_id, query_id, repeat_of = chosen
        values = {
            "campaign_id": context.campaign_id,
            "query_id": query_id,
            "document_id": document_id,
            "assessor_id": context.assessor_id,
            "kind": kind,
            "repeat_of": repeat_of,
            "state": "live",
            "leased_at": now,
            "expires_at": expires_at,
            "selection_rule": "quality",
        }
        lease_id = trial_queries.insert_trial_lease(session, values)
        if lease_id is not None:
            return lease_queries.LeaseInfo(
                lease_id,
                None,
                context.campaign_id,
                query_id,
                document_id,
                expires_at,
                kind,
                repeat_of,
            )
        # a concurrent request of this assessor leased something, or this very trial
        live = lease_queries.live_lease_of(session, context.assessor_id)
        if live is not None:
            return live
    return None


def _choose(
    session: Session,
    context: context_queries.Context,
    query: trial_queries.TrialQuery,
    kind: str,
    salt: int,
) -> tuple[int, int, int | None] | None:
    """(candidate document, query, judgment repeated or second-guessed) of a trial of
    ``kind``, or None."""
    if kind == "reference":
        if query.has_reference:
            return None
        return query.document_id, query.query_id, None
    if kind == "anchor":
        found = trial_queries.anchor_document(
            session, context.campaign_id, context.assessor_id, query, salt
        )
        return None if found is None else (found, query.query_id, None)
    if kind == "repeat":
        found_pair = trial_queries.repeat_judgment(
            session, context.assessor_id, query.query_id, REPEAT_GAP, salt
        )
    else:
        found_pair = trial_queries.second_opinion(
            session,
            context.campaign_id,
            context.assessor_id,
            query.query_id,
            context.judgments_per_pair,
            salt,
        )
    if found_pair is None:
        return None
    judgment_id, query_id, document_id = found_pair
    return document_id, query_id, judgment_id
