"""The assessor's loop: claim the most useful free pair (or, at the campaign's rate, a hidden
quality trial), store the judgment once the listening rule is met, report progress.

No engine work and no process lock on this path: the planner (app/mtcjudge/planner) keeps the ranked
pairs to hand out in the database, and the invariants are enforced by the database — a
conditional UPDATE of the pair row counts leases and judgments, a partial unique index keeps
one live lease per assessor (quality trials included), unique keys keep one judgment per pair,
assessor and kind and per client_id. A quality trial's lease holds no pair, so it never moves
a pair's counters. Services only flush; the request's transaction commits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge.assessors.actions import DEFAULT_PAUSE_MESSAGE
from mtcjudge.errors import (
    AssessorPaused,
    CampaignClosed,
    Conflict,
    ConsentRequired,
    InvalidInput,
    LeaseExpired,
    NotFound,
    PairNotLeased,
    PairUnplayable,
)
from mtcjudge.judging import trials
from mtcjudge.judging.clip_urls import query_clip_key
from mtcjudge.judging.listening import ClipEvidence, check_listening
from mtcjudge.judging.repository import context as context_queries
from mtcjudge.judging.repository import deliveries as delivery_queries
from mtcjudge.judging.repository import judgments as judgment_queries
from mtcjudge.judging.repository import leases as lease_queries
from mtcjudge.judging.repository import progress as progress_queries
from mtcjudge.models import Assessor, Campaign, Judgment, utcnow
from mtcjudge.mtc.cost_aware import Pace, stays
from mtcjudge.pool import repository as pool_repository
from mtcjudge.security import hash_token
from mtcjudge.validation import INT32_MAX

__all__ = [
    "HISTORY_SIZE",
    "SET_ASIDE_MESSAGE",
    "NextPair",
    "Progress",
    "assessor_for_token",
    "next_pair",
    "pause",
    "progress",
    "progress_of",
    "recent",
    "revise_judgment",
    "submit_judgment",
]

HISTORY_SIZE = 10
#: candidates tried before giving up on a claim (each lost race skips one pair)
MAX_CLAIM_ATTEMPTS = 16
#: what an assessor whose judgments were set aside is told when the organizers wrote nothing
SET_ASIDE_MESSAGE = (
    "Thank you for your help! The organizers do not need more judgments from you for now."
)


@dataclass(frozen=True)
class Progress:
    """What a volunteer is shown: counts that only grow as they judge.

    The settled system pairs are the planner's figures, at most a tick old; the raw ranking
    confidence is for organizers.
    """

    assessor_judged: int
    campaign_judged: int
    campaign_pairs: int
    system_pairs: int
    system_pairs_settled: int
    can_stop: bool


@dataclass(frozen=True)
class NextPair:
    """What the assessor should do next: judge ``lease``, or stop ("done"), or wait."""

    status: str  # "pair" | "done" | "wait"
    lease: lease_queries.LeaseInfo | None
    same_query_as_previous: bool
    progress: Progress
    message: str = ""
    listen_seconds: float = 0.0  # the campaign's listening rule (0: none)
    assessor_id: int = 0  # whose lease it is


def assessor_for_token(
    session: Session, token: str, *, consent: bool = True
) -> tuple[Assessor, Campaign]:
    """The assessor of an invitation token and their campaign; with ``consent``, refuses
    assessors who have not given their consent (the API enforces it, not only the page)."""
    found = context_queries.assessor_and_campaign(session, token)
    if found is None:
        raise NotFound("this invitation link is not valid (unknown token)")
    assessor, campaign = found
    if consent and assessor.consented_at is None:
        raise ConsentRequired(
            "please read the instructions and give your consent first (open your link)"
        )
    return assessor, campaign


def _progress(counts: progress_queries.ProgressCounts) -> Progress:
    return Progress(
        assessor_judged=counts.assessor_judged,
        campaign_judged=counts.campaign_judged,
        campaign_pairs=counts.playable_pairs,
        system_pairs=counts.system_pairs,
        system_pairs_settled=counts.system_pairs_settled,
        can_stop=counts.stop_reason is not None,
    )


def progress_of(session: Session, campaign_id: int, assessor_id: int) -> Progress:
    """The progress shown to an assessor (who is already known: after a judgment)."""
    return _progress(progress_queries.progress_counts(session, campaign_id, assessor_id))


def progress(session: Session, token: str) -> Progress:
    assessor, campaign = assessor_for_token(session, token)
    return progress_of(session, campaign.id, assessor.id)


def _closed_message(status: str) -> str | None:
    if status == "closed":
        return "This campaign is closed. Thank you for your help!"
    if status != "open":
        # a draft: not opened yet, or paused by the organizers (both are "draft")
        return "This campaign is not open for judging right now. Please come back later."
    return None


def _checked(context: context_queries.Context | None) -> context_queries.Context:
    """The request's context, refused as :func:`assessor_for_token` refuses it."""
    if context is None:
        raise NotFound("this invitation link is not valid (unknown token)")
    if not context.consented:
        raise ConsentRequired(
            "please read the instructions and give your consent first (open your link)"
        )
    return context


def _paused_message(context: context_queries.Context) -> str | None:
    """What a set-aside or paused assessor is told (None: they may judge)."""
    if not (context.set_aside or context.paused):
        return None
    if context.pause_reason and context.pause_reason.strip():
        return context.pause_reason.strip()
    return SET_ASIDE_MESSAGE if context.set_aside else DEFAULT_PAUSE_MESSAGE


def next_pair(session: Session, token: str) -> NextPair:
    """The assessor's current lease, or a new lease: a hidden quality trial when this
    hand-out draws one, else the most useful free pair."""
    context = _checked(context_queries.next_context(session, token))
    assert context.progress is not None  # read with the context of a ``next``
    prog = _progress(context.progress)
    now = utcnow()
    closed = _closed_message(context.status)
    if closed is not None:
        return NextPair("done", None, False, prog, closed)
    previous_query = context.last_query
    current = context.lease
    paused = _paused_message(context)
    if paused is not None:
        # handed nothing more; the pair they held goes back to the pool
        if current is not None:
            pool_repository.lock_pair(session, current.pair_id)
            pool_repository.release_lease(session, current, "released")
        return NextPair("done", None, False, prog, paused)
    rule = context.listen_seconds
    if current is not None and context.trial_unplayable:
        # a trial on a pool pair that cannot be played any more (the planner ends the
        # leases of such a pair, which a trial's lease is not): it just ends
        pool_repository.release_lease(session, current, "released")
        current = None
    if current is not None and current.expires_at > now:
        same = current.query_id == previous_query
        return NextPair("pair", current, same, prog, "", rule, context.assessor_id)
    if current is not None:  # lapsed: give it back before taking another
        pool_repository.lock_pair(session, current.pair_id)
        pool_repository.release_lease(session, current, "expired")
    if prog.can_stop and not context.keep_collecting:
        return NextPair(
            "done",
            None,
            False,
            prog,
            "The organizers have enough judgments to rank the systems. Thank you!",
        )
    lease = trials.hand_out(session, context, now)
    if lease is None:
        lease = _claim(session, context, now, previous_query)
    if lease is not None:
        same = lease.query_id == previous_query
        return NextPair("pair", lease, same, prog, "", rule, context.assessor_id)
    return _nothing_to_hand_out(session, context, prog)


def _claim(
    session: Session,
    context: context_queries.Context,
    now: datetime,
    previous_query: int | None,
) -> lease_queries.LeaseInfo | None:
    """Lease the best free pair: the planner's next one, or the best one of the assessor's
    query when it gains at least as much per second of theirs and ranks within the judgments
    the campaign still needs (docs/method.md §12). A pair
    another request took meanwhile fails the conditional UPDATE and the next candidate is
    tried."""
    per_pair = context.judgments_per_pair
    pace = _pace(context)
    expires_at = now + timedelta(minutes=context.lease_minutes)
    skip: set[int] = set()
    looked_back = False
    for _ in range(MAX_CLAIM_ATTEMPTS):
        args = (session, context.campaign_id, context.assessor_id, per_pair, now)
        best = lease_queries.candidate(*args, planned=True, skip=frozenset(skip))
        planned = best is not None
        if best is None:  # the plan is used up or not made yet: any free pair will do
            best = lease_queries.candidate(*args, planned=False, skip=frozenset(skip))
        if best is None:
            return None
        chosen, rule = best, "plan" if planned else "any_free"
        if previous_query is not None and best.query_id != previous_query:
            own = lease_queries.candidate(
                *args, planned=planned, query_id=previous_query, skip=frozenset(skip)
            )
            if own is not None and stays(
                own.weight,
                (own.query_seconds, own.candidate_seconds),
                best.weight,
                (best.query_seconds, best.candidate_seconds),
                pace,
                own_rank=own.rank if planned else None,
                within=context.horizon,
            ):
                chosen, rule = own, "own_query" if planned else "any_free"
        if planned and chosen.audit:
            # a random draw of the audit, not chosen for a weight (docs/method.md §8.2)
            rule = "audit"
        if chosen.lapsed_leases:
            lease_queries.release_expired(session, chosen.pair_id, now)
        if not lease_queries.take_slot(
            session, chosen.pair_id, per_pair, expires_at, context.assessor_id
        ):
            skip.add(chosen.pair_id)
            if not looked_back:
                # taken meanwhile, or a pair the assessor answered as a hidden trial that
                # came back to the pool (its original set aside): leave all of those out
                skip |= lease_queries.trial_pairs_back(session, context.assessor_id, per_pair)
                looked_back = True
            continue
        values = {
            "campaign_id": context.campaign_id,
            "pair_id": chosen.pair_id,
            "query_id": chosen.query_id,
            "document_id": chosen.document_id,
            "assessor_id": context.assessor_id,
            "state": "live",
            "leased_at": now,
            "expires_at": expires_at,
            # why this pair: for researchers studying the order MTC asked in
            "selection_rank": chosen.rank,
            "selection_weight": chosen.weight if planned and rule != "audit" else None,
            "selection_rule": rule,
        }
        lease_id = lease_queries.insert_lease(session, values)
        if lease_id is None:
            # a concurrent request of the same assessor leased a pair first: keep that one
            lease_queries.give_back_slot(session, chosen.pair_id)
            return lease_queries.live_lease_of(session, context.assessor_id)
        return lease_queries.LeaseInfo(
            lease_id,
            chosen.pair_id,
            context.campaign_id,
            chosen.query_id,
            chosen.document_id,
            expires_at,
        )
    return None


def _pace(context: context_queries.Context) -> Pace:
    """The assessor's pace as the planner last fitted it (the campaign's pooled one for an
    assessor it has not fitted yet, the stated defaults before anything is measured), with
    the campaign's listening rule."""
    rule = max(0.0, context.listen_seconds)
    if context.pace is None:
        return replace(Pace.default(), rule=rule)
    query_new, query_same, candidate, decision = context.pace
    return Pace(query_new, query_same, candidate, decision, rule)


def _nothing_to_hand_out(
    session: Session, context: context_queries.Context, prog: Progress
) -> NextPair:
    """Say honestly why there is no pair: all judged, none playable, or all with others."""
    open_pairs, open_to_me, playable_to_me, pool = progress_queries.pairs_left(
        session, context.campaign_id, context.assessor_id, context.judgments_per_pair
    )
    if pool == 0:
        return NextPair(
            "wait", None, False, prog, "The campaign is being prepared: your first pair is coming."
        )
    if open_pairs == 0:
        return NextPair("done", None, False, prog, "Every pair has been judged. Thank you!")
    if open_to_me == 0:
        return NextPair(
            "done",
            None,
            False,
            prog,
            "You have judged every pair that still needs a judgment. Thank you!",
        )
    if playable_to_me == 0:
        return NextPair(
            "done",
            None,
            False,
            prog,
            f"Thank you! The {open_to_me} pair(s) still to judge cannot be played (their audio "
            "is missing or unreadable on the server); the organizers can see which.",
        )
    return NextPair(
        "wait", None, False, prog, "The remaining pairs are with other assessors right now."
    )


def _check_scores(broad: int, fine: float) -> None:
    if broad not in (0, 1, 2):
        raise InvalidInput(
            f"broad must be 0 (not similar), 1 (somewhat) or 2 (very), found {broad}"
        )
    if not 0.0 <= fine <= 100.0:
        raise InvalidInput(f"fine must be between 0 and 100, found {fine}")


def submit_judgment(
    session: Session,
    token: str,
    *,
    lease_id: int,
    broad: int,
    fine: float,
    client_id: str,
    query_listen_ms: int | None = None,
    candidate_listen_ms: int | None = None,
) -> tuple[Any, bool]:
    """Store a judgment of a leased pair. Returns (judgment, created): the judgment as a
    row of :data:`judgment_queries.JUDGMENT_COLUMNS`.

    The same ``client_id`` again returns the stored judgment (created = False). A lease
    that ran out is still honoured when nobody else holds the pair and it needs judgments.
    """
    context = _checked(context_queries.submit_context(session, token, lease_id, client_id))
    if context.stored_judgment is not None:
        return _stored(session, context, client_id), False
    closed = _closed_message(context.status)
    if closed is not None:
        raise CampaignClosed(closed)
    if context.set_aside:
        # whatever they sent would be set aside with the rest: they are thanked instead
        raise AssessorPaused(_paused_message(context) or SET_ASIDE_MESSAGE)
    _check_scores(broad, fine)
    lease = context.lease
    if lease is None:
        raise PairNotLeased("this pair is not leased to you: load the next pair")
    query_bytes = _query_bytes(session, token, context, lease)
    _check_listened(context, lease, query_bytes, query_listen_ms, candidate_listen_ms)
    now = utcnow()
    values = {
        "campaign_id": context.campaign_id,
        "query_id": lease.query_id,
        "document_id": lease.document_id,
        "assessor_id": context.assessor_id,
        "broad": broad,
        "fine": float(fine),
        "client_id": client_id,
        "source": "assessor",
        "query_listen_ms": query_listen_ms,
        "candidate_listen_ms": candidate_listen_ms,
        "lease_id": lease.id,
        "kind": lease.kind,
        "repeat_of": lease.repeat_of,
        "served_query_bytes": query_bytes,
        "served_candidate_bytes": lease.served_candidate_bytes,
        "revision": 0,
        "created_at": now,
        "updated_at": now,
    }
    if lease.pair_id is None:
        return _submit_trial(session, context, lease, values, client_id)
    return _submit_pool_pair(session, context, lease, values, client_id, now)


def _query_bytes(
    session: Session, token: str, context: context_queries.Context, lease: lease_queries.LeaseInfo
) -> int:
    """The bytes of the lease's query clip the assessor was sent: for this pair, or for any
    pair of the query before (their browser keeps it: :mod:`mtcjudge.judging.clip_urls`)."""
    assert context.query_clip is not None  # read with the lease
    document_id = context.query_clip.document_id
    if document_id is None:
        return lease.served_query_bytes
    key = query_clip_key(hash_token(token), document_id)
    sent = delivery_queries.delivered(session, context.assessor_id, key)
    return min(max(lease.served_query_bytes, sent), INT32_MAX)


def _check_listened(
    context: context_queries.Context,
    lease: lease_queries.LeaseInfo,
    query_bytes: int,
    query_listen_ms: int | None,
    candidate_listen_ms: int | None,
) -> None:
    """The campaign's listening rule, on what the client says it played and what the server
    sent of each clip: the candidate for this lease, the query for any pair of the query."""
    assert context.query_clip is not None  # read with the lease
    assert context.candidate_clip is not None
    check_listening(
        context.listen_seconds,
        (
            ClipEvidence(
                "query",
                context.query_clip.audio_path,
                context.query_clip.duration_seconds,
                query_listen_ms,
                query_bytes,
            ),
            ClipEvidence(
                "candidate",
                context.candidate_clip.audio_path,
                context.candidate_clip.duration_seconds,
                candidate_listen_ms,
                lease.served_candidate_bytes,
            ),
        ),
    )


def _submit_pool_pair(
    session: Session,
    context: context_queries.Context,
    lease: lease_queries.LeaseInfo,
    values: dict[str, Any],
    client_id: str,
    now: datetime,
) -> tuple[Any, bool]:
    """Store the judgment of a pool pair under its row's lock, counted on the pair: refused
    when the pair cannot be played, the assessor was set aside, another assessor holds the
    pair since the lease ran out, or the assessor answered it as a hidden trial."""
    assert lease.pair_id is not None
    pair = pool_repository.lock_pair(session, lease.pair_id)
    assert pair is not None  # a pool pair's lease
    _refuse_unplayable(pair)
    # after the pair's row, as an organizer setting the assessor aside locks them: either
    # the set-aside sees this judgment, or this submission sees the set-aside
    if context_queries.assessor_hold(session, context.assessor_id, shared_lock=True).set_aside:
        raise AssessorPaused(SET_ASIDE_MESSAGE)
    # under the pair's lock the lease's state cannot change any more
    lease_now = lease_queries.lease_state(session, lease.id)
    per_pair = context.judgments_per_pair
    live = lease_now.state == "live"
    held = live and lease_now.expires_at > now
    if (
        lease_now.state != "done"
        and not held
        and pair.judged + lease_queries.live_leases_of_others(session, lease, now) >= per_pair
    ):
        raise LeaseExpired(
            "your time on this pair ran out and it was given to someone else: here is a new one"
        )
    if lease_now.judged_otherwise:
        # they answered it as a hidden trial (a second opinion whose lease had lapsed,
        # answered late): one assessor never gives a pair both a trial's and a pool answer
        raise Conflict("you have already judged this pair: revise it from your recent judgments")
    judgment = judgment_queries.insert_judgment(session, values)
    if judgment is None:  # a unique key said no: this client_id, or this pair, is stored
        existing = judgment_queries.judgment_by_client_id(session, context.assessor_id, client_id)
        if existing is not None:
            return existing, False
        raise Conflict("you have already judged this pair: revise it from your recent judgments")
    if not judgment_queries.record_judgment(session, pair.id, per_pair, ends_lease=live):
        # the pair has all its judgments: the error rolls the insert back with the request
        raise LeaseExpired("this pair has all the judgments it needs: here is a new one")
    lease_queries.mark_lease(session, lease.id, "done")
    return judgment, True


def _refuse_unplayable(pair: pool_repository.LockedPair) -> None:
    """A pair whose query or candidate clip is missing or unreadable is never judged, even
    on a lease handed out before the planner found the file gone (it then ends the pair's
    leases too: the assessor's next call gets another pair). The caller holds the pair's
    row, so the answer cannot change before the judgment would commit."""
    if not pair.playable:
        raise PairUnplayable(
            "this pair can no longer be judged: one of its clips is missing or unreadable on "
            "the server (the organizers can see which); here is another pair"
        )


def _submit_trial(
    session: Session,
    context: context_queries.Context,
    lease: lease_queries.LeaseInfo,
    values: dict[str, Any],
    client_id: str,
) -> tuple[Any, bool]:
    """Store the answer to a quality trial: no pair to count. Its lease is answered once (the
    unique key on the assessor's judgments of a kind), late or not, unless it was answered
    already; the volunteer is told what they would be told of a pool pair.

    A trial whose clips are a pool pair (a repeat, a second opinion) takes the pair's row
    first, as a pool judgment of it does: a pair that cannot be played is not judged, and a
    second opinion is refused when the assessor judged the pair otherwise meanwhile or holds
    it as a pool pair (its lease lapsed and the pair came back to them from the pool, its
    original set aside): one assessor never answers a pair both ways."""
    pair = pool_repository.lock_pair_of(
        session, lease.campaign_id, lease.query_id, lease.document_id
    )
    if pair is not None:
        _refuse_unplayable(pair)
        if lease.kind == "second" and lease_queries.answered_otherwise(
            session, pair.id, lease, context.assessor_id
        ):
            raise Conflict(
                "you have already judged this pair: revise it from your recent judgments"
            )
    judgment = judgment_queries.insert_judgment(session, values)
    if judgment is None:
        existing = judgment_queries.judgment_by_client_id(session, context.assessor_id, client_id)
        if existing is not None:
            return existing, False
        raise Conflict("you have already judged this pair: revise it from your recent judgments")
    lease_queries.mark_lease(session, lease.id, "done")
    return judgment, True


def _stored(session: Session, context: context_queries.Context, client_id: str) -> Any:
    existing = judgment_queries.judgment_by_client_id(session, context.assessor_id, client_id)
    assert existing is not None  # seen by the context's read in this transaction
    return existing


def revise_judgment(
    session: Session, token: str, judgment_id: int, *, broad: int, fine: float
) -> Judgment:
    """Change one of the assessor's last ``HISTORY_SIZE`` judgments."""
    assessor, campaign = assessor_for_token(session, token)
    closed = _closed_message(campaign.status)
    if closed is not None:
        raise CampaignClosed(closed)
    _check_scores(broad, fine)
    recent_ids = {
        j.id for j in judgment_queries.recent_judgments(session, assessor.id, HISTORY_SIZE)
    }
    judgment = session.get(Judgment, judgment_id)
    if judgment is None or judgment.assessor_id != assessor.id:
        raise NotFound("no such judgment of yours")
    if judgment.id not in recent_ids:
        raise Conflict(f"only your last {HISTORY_SIZE} judgments can be revised")
    # a quality trial's answer touches no pair: the planner never reads it
    pool = judgment.kind == "pool"
    if pool:
        pair = judgment_queries.pair_of(
            session, campaign.id, judgment.query_id, judgment.document_id
        )
        if pair is not None:
            pool_repository.lock_pair(session, pair.id)
    judgment.broad = broad
    judgment.fine = float(fine)
    judgment.revision += 1
    judgment.updated_at = utcnow()
    session.flush()
    if pool:
        judgment_queries.record_revision(
            session, campaign.id, judgment.query_id, judgment.document_id
        )
    return judgment


def recent(session: Session, token: str) -> list[Judgment]:
    assessor, _ = assessor_for_token(session, token)
    return judgment_queries.recent_judgments(session, assessor.id, HISTORY_SIZE)


def pause(session: Session, token: str) -> None:
    """Give the assessor's current pair back to the pool."""
    assessor, _ = assessor_for_token(session, token)
    lease = lease_queries.live_lease_of(session, assessor.id)
    if lease is not None:
        pool_repository.lock_pair(session, lease.pair_id)
        pool_repository.release_lease(session, lease, "released")
