"""A campaign's pool of pairs: stored once, grown when systems are added, and which of its
pairs cannot be played.

The pool is fixed by the runs and ``k`` (:func:`mtcjudge.planner.build.pool_pairs`); it is
stored as ``pair`` rows the planner (:mod:`mtcjudge.planner.service`) and the judging path
work on. Creating a campaign, adding runs and importing a bundle store it here; the
planner makes sure it exists before each plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtcjudge.models import Campaign
from mtcjudge.planner import repository
from mtcjudge.planner.build import playable_mask, pool_pairs

__all__ = ["PoolGrowth", "ensure_pool", "grow_pool", "unplayable_pairs", "unplayable_summary"]


def ensure_pool(session: Session, campaign: Campaign) -> int:
    """Store the campaign's pool of pairs once (the pool is fixed by the runs and ``k``).

    Safe to run from several processes at once: the unique key keeps one copy.
    Returns the number of pairs.
    """
    existing = repository.pair_count(session, campaign.id)
    if existing:
        return existing
    pairs = pool_pairs(session, campaign)
    playable = playable_mask(session, campaign.id, pairs)
    counts = repository.judgment_counts(session, campaign.id)
    rows = [
        {
            "campaign_id": campaign.id,
            "query_id": q,
            "document_id": d,
            "playable": bool(playable[i]),
            "judged": counts.get((q, d), 0),
            "leased": 0,
            "changes": counts.get((q, d), 0),
        }
        for i, (q, d) in enumerate(pairs)
    ]
    if rows:
        repository.insert_pairs(session, rows)
    return repository.pair_count(session, campaign.id)


@dataclass(frozen=True)
class PoolGrowth:
    """Pairs :func:`grow_pool` added, those of them judged already (imported judgments
    outside the old pool) and those that cannot be played (a clip without audio)."""

    added: int
    judged: int
    unplayable: int


def grow_pool(session: Session, campaign: Campaign) -> PoolGrowth:
    """Store the pool pairs the campaign's collection has and its stored pool has not (after
    systems were added); pairs already stored are kept as they are, with their judgments and
    leases."""
    stored = repository.pair_ids(session, campaign.id)
    pairs = [ids for ids in pool_pairs(session, campaign) if ids not in stored]
    if not pairs:
        return PoolGrowth(0, 0, 0)
    playable = playable_mask(session, campaign.id, pairs)
    # a new pair may hold judgments already: imported ones outside the old pool
    counts = repository.judgment_counts(session, campaign.id)
    repository.insert_pairs(
        session,
        [
            {
                "campaign_id": campaign.id,
                "query_id": q,
                "document_id": d,
                "playable": bool(playable[i]),
                "judged": counts.get((q, d), 0),
                "leased": 0,
                "changes": counts.get((q, d), 0),
            }
            for i, (q, d) in enumerate(pairs)
        ],
    )
    return PoolGrowth(
        added=len(pairs),
        judged=sum(1 for ids in pairs if counts.get(ids)),
        unplayable=int((~playable).sum()),
    )


def unplayable_pairs(session: Session, campaign_id: int) -> int:
    """Pool pairs that are never handed out because a clip has no readable audio."""
    return repository.unplayable_count(session, campaign_id)


def unplayable_summary(session: Session, campaign: Campaign) -> str | None:
    """One line for organizers about pairs that cannot be judged, or None when all can."""
    ensure_pool(session, campaign)
    n_pairs = repository.unplayable_count(session, campaign.id)
    if not n_pairs:
        return None
    clips = repository.unplayable_clips(session, campaign.id)
    shown = ", ".join(clips[:8]) + (f", ... ({len(clips)} clips)" if len(clips) > 8 else "")
    return (
        f"{n_pairs} pair(s) cannot be judged: no readable audio for {shown}; "
        "assessors are not given them"
    )
