"""The bundle's ``state/`` members: what a campaign is made of beyond the researchers' files,
so that ``mtcjudge campaign import-bundle`` rebuilds the same campaign (docs/exports.md,
"Importing a bundle").

The researchers' files show the runs as the measures see them and the judgments by pair; an
identical campaign also needs the lists as they were imported (with the query clip and the
same-artist clips the measures drop), the documents' artists and genres (the filter and the
estimators use them), the teams, the assessors (by pseudonym), every lease and the order in
which judgments and leases were stored, the confidence curve, and the pairs drawn into the
``joint`` estimator's audit sample. Each is a CSV member
whose columns are in :data:`STATE_COLUMNS`; an empty cell is a missing value. Assessors are
named by their pseudonyms (A1, A2, ... in the order they were invited) and leases by their
number in the campaign (1 = the first pair handed out), never by database ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge.exports import repository
from mtcjudge.exports.formats import iso_time
from mtcjudge.models import Campaign

__all__ = ["ADDED_COLUMNS", "OPTIONAL_STATE", "STATE_COLUMNS", "state_records"]

#: member -> its columns, in the order they are written (and restored)
STATE_COLUMNS: dict[str, tuple[str, ...]] = {
    "state/systems.csv": ("system", "team"),
    "state/documents.csv": ("document", "artist", "genre", "query"),
    "state/lists.csv": ("system", "query", "rank", "document"),
    "state/assessors.csv": (
        "assessor",
        "created_at",
        "revoked_at",
        "set_aside_at",
        "paused_at",
        "pause_reason",
    ),
    "state/leases.csv": (
        "lease",
        "query",
        "document",
        "assessor",
        "state",
        "leased_at",
        "expires_at",
        "selection_rank",
        "selection_weight",
        "selection_rule",
        "kind",
        "repeat_of",
        "served_query_bytes",
        "served_candidate_bytes",
    ),
    "state/judgments.csv": (
        "query",
        "document",
        "assessor",
        "source",
        "broad",
        "fine",
        "created_at",
        "updated_at",
        "revision",
        "query_listen_ms",
        "candidate_listen_ms",
        "lease",
        "kind",
        "repeat_of",
        "set_aside",
        "served_query_bytes",
        "served_candidate_bytes",
    ),
    "state/trajectory.csv": (
        "judged_pairs",
        "ranking_confidence",
        "system_pairs_settled",
        "at",
    ),
    "state/audit.csv": ("query", "document"),
    "state/reliability.csv": ("assessor", "computed_at", "flagged", "reasons", "metrics"),
}
#: members a bundle made by an earlier version may lack (restored as empty)
OPTIONAL_STATE = frozenset({"state/audit.csv", "state/reliability.csv"})
#: columns a member written by an earlier version lacks (the last ones; restored as empty:
#: pool leases and judgments, nothing set aside or paused, no served bytes counted)
ADDED_COLUMNS: dict[str, tuple[str, ...]] = {
    "state/assessors.csv": ("set_aside_at", "paused_at", "pause_reason"),
    "state/leases.csv": ("kind", "repeat_of", "served_query_bytes", "served_candidate_bytes"),
    "state/judgments.csv": (
        "kind",
        "repeat_of",
        "set_aside",
        "served_query_bytes",
        "served_candidate_bytes",
    ),
}


def _judgment_numbers(session: Session, campaign_id: int) -> dict[int, int]:
    """Judgment id -> its number in ``state/judgments.csv`` (1 = the first stored): how a
    repeat trial names the judgment it repeats."""
    ids = repository.judgment_ids(session, campaign_id)
    return {judgment_id: n for n, judgment_id in enumerate(ids, start=1)}


def state_records(session: Session, campaign: Campaign, member: str) -> Iterator[dict[str, Any]]:
    """The records of one ``state/`` member, in their order."""
    yield from _RECORDS[member](session, campaign.id)


def _systems(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    for row in repository.state_systems(session, cid):
        yield {"system": row.system, "team": row.team}


def _documents(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    for row in repository.state_documents(session, cid):
        yield {
            "document": row.document,
            "artist": row.artist,
            "genre": row.genre,
            "query": 1 if row.query else 0,
        }


def _lists(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    """Every result as imported, the query clip and same-artist clips included."""
    for row in repository.result_rows(session, cid):
        yield {
            "system": row.system,
            "query": row.query,
            "rank": row.rank,
            "document": row.document,
        }


def _assessors(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    for n, row in enumerate(repository.state_assessors(session, cid), start=1):
        yield {
            "assessor": f"A{n}",
            "created_at": iso_time(row.created_at),
            "revoked_at": iso_time(row.revoked_at),
            "set_aside_at": iso_time(row.set_aside_at),
            "paused_at": iso_time(row.paused_at),
            "pause_reason": row.pause_reason,
        }


def _leases(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    pseudonyms = repository.assessor_pseudonyms(session, cid)
    judgments = _judgment_numbers(session, cid)
    for n, row in enumerate(repository.state_leases(session, cid), start=1):
        yield {
            "lease": n,
            "query": row.query,
            "document": row.document,
            "assessor": pseudonyms[row.assessor_id],
            "state": row.state,
            "leased_at": iso_time(row.leased_at),
            "expires_at": iso_time(row.expires_at),
            "selection_rank": row.selection_rank,
            "selection_weight": row.selection_weight,
            "selection_rule": row.selection_rule,
            "kind": row.kind,
            "repeat_of": None if row.repeat_of is None else judgments.get(row.repeat_of),
            "served_query_bytes": row.served_query_bytes,
            "served_candidate_bytes": row.served_candidate_bytes,
        }


def _judgments(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    pseudonyms = repository.assessor_pseudonyms(session, cid)
    judgments = _judgment_numbers(session, cid)
    for row in repository.state_judgments(session, cid):
        yield {
            "query": row.query,
            "document": row.document,
            "assessor": None if row.assessor_id is None else pseudonyms[row.assessor_id],
            "source": row.source,
            "broad": row.broad,
            "fine": row.fine,
            "created_at": iso_time(row.created_at),
            "updated_at": iso_time(row.updated_at),
            "revision": row.revision,
            "query_listen_ms": row.query_listen_ms,
            "candidate_listen_ms": row.candidate_listen_ms,
            "lease": row.lease,
            "kind": row.kind,
            "repeat_of": None if row.repeat_of is None else judgments.get(row.repeat_of),
            "set_aside": 1 if row.set_aside else 0,
            "served_query_bytes": row.served_query_bytes,
            "served_candidate_bytes": row.served_candidate_bytes,
        }


def _trajectory(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    for row in repository.state_trajectory(session, cid):
        yield {
            "judged_pairs": row.judged_pairs,
            "ranking_confidence": row.ranking_confidence,
            "system_pairs_settled": row.system_pairs_settled,
            "at": iso_time(row.at),
        }


def _reliability(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    pseudonyms = repository.assessor_pseudonyms(session, cid)
    for row in repository.state_reliability(session, cid):
        yield {
            "assessor": pseudonyms[row.assessor_id],
            "computed_at": iso_time(row.computed_at),
            "flagged": 1 if row.flagged else 0,
            "reasons": row.reasons,
            "metrics": row.metrics,
        }


def _audit(session: Session, cid: int) -> Iterator[dict[str, Any]]:
    for row in repository.state_audit(session, cid):
        yield {"query": row.query, "document": row.document}


#: the records of each member of :data:`STATE_COLUMNS`
_RECORDS: dict[str, Callable[[Session, int], Iterator[dict[str, Any]]]] = {
    "state/systems.csv": _systems,
    "state/documents.csv": _documents,
    "state/lists.csv": _lists,
    "state/assessors.csv": _assessors,
    "state/leases.csv": _leases,
    "state/judgments.csv": _judgments,
    "state/trajectory.csv": _trajectory,
    "state/reliability.csv": _reliability,
    "state/audit.csv": _audit,
}
