"""A campaign's pool of pairs: stored once, grown when systems are added, and which of its
pairs cannot be played.

The pool is fixed by the runs and ``k`` (:func:`mtcjudge.campaign_engine.build.pool_pairs`); it is
stored as ``pair`` rows the planner (:mod:`mtcjudge.planner.service`) and the judging path
work on. Creating a campaign, adding runs and importing a bundle store it here; the
planner makes sure it exists before each plan.

A pair is playable when its query clip and its candidate clip both have audio that exists
and can be read: a document without a clip (none found at import, or a campaign without
audio at all) makes every pair it is in unplayable, and such pairs are never handed out
(``pair.playable``). Files can go (a disk unmounted, a clip deleted or damaged) and come
back: the campaign's planner looks at them again every few seconds
(:func:`refresh_playable`) and marks the pairs, in the database, so that every process
hands out and accepts judgments of the same pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.orm import Session, sessionmaker

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.campaign_engine.build import playable_mask, pool_pairs
from mtcjudge.clips.audio import ClipWatch
from mtcjudge.db import session_scope
from mtcjudge.models import Campaign
from mtcjudge.pool import repository as pool_repository

__all__ = [
    "CLIPS",
    "PlayableChange",
    "PoolGrowth",
    "ensure_pool",
    "grow_pool",
    "refresh_playable",
    "sync_playable",
    "unplayable_clips",
    "unplayable_pairs",
    "unplayable_summary",
]

#: this process's look at the stored clips (see :class:`ClipWatch`)
CLIPS = ClipWatch()


def ensure_pool(session: Session, campaign: Campaign) -> int:
    """Store the campaign's pool of pairs once (the pool is fixed by the runs and ``k``).

    Safe to run from several processes at once: the unique key keeps one copy.
    Returns the number of pairs.
    """
    existing = pool_repository.pair_count(session, campaign.id)
    if existing:
        return existing
    pairs = pool_pairs(session, campaign)
    playable = playable_mask(session, campaign.id, pairs)
    counts = pool_repository.judgment_counts(session, campaign.id)
    if pairs:
        pool_repository.insert_pairs(session, _pair_rows(campaign.id, pairs, playable, counts))
    return pool_repository.pair_count(session, campaign.id)


def _pair_rows(
    campaign_id: int,
    pairs: list[tuple[int, int]],
    playable: NDArray[np.bool_],
    counts: dict[tuple[int, int], int],
) -> list[dict[str, object]]:
    """The rows of new pool pairs (query id, document id): whether they can be played, and
    the judgments they hold already (imported ones) as their judged count and changes."""
    return [
        {
            "campaign_id": campaign_id,
            "query_id": q,
            "document_id": d,
            "playable": bool(playable[i]),
            "judged": counts.get((q, d), 0),
            "leased": 0,
            "changes": counts.get((q, d), 0),
        }
        for i, (q, d) in enumerate(pairs)
    ]


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
    stored = pool_repository.pair_ids(session, campaign.id)
    pairs = [ids for ids in pool_pairs(session, campaign) if ids not in stored]
    if not pairs:
        return PoolGrowth(0, 0, 0)
    playable = playable_mask(session, campaign.id, pairs)
    # a new pair may hold judgments already: imported ones outside the old pool
    counts = pool_repository.judgment_counts(session, campaign.id)
    pool_repository.insert_pairs(session, _pair_rows(campaign.id, pairs, playable, counts))
    return PoolGrowth(
        added=len(pairs),
        judged=sum(1 for ids in pairs if counts.get(ids)),
        unplayable=int((~playable).sum()),
    )


def unplayable_pairs(session: Session, campaign_id: int) -> int:
    """Pool pairs that are never handed out because a clip has no readable audio."""
    return pool_repository.unplayable_count(session, campaign_id)


def unplayable_clips(session: Session, campaign_id: int) -> list[str]:
    """External ids of the clips that keep pairs from being played: those without audio,
    and those whose file is missing or unreadable now."""
    clips = set(pool_repository.unplayable_clips(session, campaign_id))
    clips.update(
        external
        for external, path in pool_repository.unplayable_clip_paths(session, campaign_id)
        if CLIPS.problem(path) is not None
    )
    return sorted(clips)


def unplayable_summary(session: Session, campaign: Campaign) -> str | None:
    """One line for organizers about pairs that cannot be judged, or None when all can."""
    ensure_pool(session, campaign)
    n_pairs = pool_repository.unplayable_count(session, campaign.id)
    if not n_pairs:
        return None
    n_pool = pool_repository.pair_count(session, campaign.id)
    clips = unplayable_clips(session, campaign.id)
    shown = ", ".join(clips[:8]) + (f", ... ({len(clips)} clips)" if len(clips) > 8 else "")
    if n_pairs == n_pool:
        return (
            f"none of the {n_pool} pool pairs can be judged: no readable audio for {shown}; "
            "assessors will be given nothing to judge"
        )
    return (
        f"{n_pairs} of {n_pool} pool pairs cannot be judged: no readable audio for {shown}; "
        "assessors are not given them"
    )


@dataclass(frozen=True)
class PlayableChange:
    """What :func:`refresh_playable` found: the documents whose clip cannot be played now,
    the pairs it marked unplayable and playable again, and the live leases it ended."""

    bad_documents: frozenset[int]
    turned_off: int
    turned_on: int
    leases_ended: int

    @property
    def changed(self) -> bool:
        return bool(self.turned_off or self.turned_on)


def refresh_playable(
    session_factory: sessionmaker[Session], campaign_id: int, *, clips: ClipWatch = CLIPS
) -> PlayableChange:
    """Look at the campaign's clips again and mark its pairs: unplayable when a clip is
    missing or unreadable now (their live leases end), playable again when both clips are
    back (the planner, every few seconds). The files are looked at with no connection held;
    nothing is written when every pair is marked as the files say."""
    with session_scope(session_factory) as session:
        paths = pool_repository.audio_paths(session, campaign_id)
    bad = _bad_clips(paths, clips)
    with session_scope(session_factory) as session:
        return _apply(session, campaign_id, bad)


def sync_playable(
    session: Session, campaign_id: int, *, clips: ClipWatch = CLIPS
) -> PlayableChange:
    """:func:`refresh_playable` in the caller's transaction (after documents got clips)."""
    return _apply(
        session, campaign_id, _bad_clips(pool_repository.audio_paths(session, campaign_id), clips)
    )


def _bad_clips(paths: dict[int, str], clips: ClipWatch) -> frozenset[int]:
    return frozenset(doc for doc, path in paths.items() if clips.problem(path) is not None)


def _apply(session: Session, campaign_id: int, bad: frozenset[int]) -> PlayableChange:
    # documents given a clip since the paths were read (new runs) were scanned at their import
    good = engine_repository.documents_with_audio(session, campaign_id) - bad
    turned_off: list[int] = []
    turned_on: list[int] = []
    for pair_id, query_doc, doc, playable in pool_repository.pair_clips(session, campaign_id):
        can_play = query_doc in good and doc in good
        if playable and not can_play:
            turned_off.append(pair_id)
        elif can_play and not playable:
            turned_on.append(pair_id)
    ended = pool_repository.set_playable(session, turned_off, turned_on)
    return PlayableChange(bad, len(turned_off), len(turned_on), ended)
