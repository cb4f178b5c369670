"""The exports of the judging: every judgment (with the lease it answered and why MTC chose
the pair) and every assessor (by pseudonym, with what organizers did and what the planner
concluded about them)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge.assessors.overview import assessor_overview
from mtcjudge.exports import repository
from mtcjudge.exports.formats import csv_lines, iso_time, json_text
from mtcjudge.models import Campaign

JUDGMENT_COLUMNS = (
    "query",
    "document",
    "broad",
    "fine",
    "assessor",
    "source",
    "created_at",
    "revised_at",
    "revision",
    "query_listen_ms",
    "candidate_listen_ms",
    "lease_id",
    "leased_at",
    "selection_rank",
    "selection_weight",
    "selection_rule",
    "kind",
    "repeat_of_lease",
    "set_aside",
    "served_query_bytes",
    "served_candidate_bytes",
)
#: the assessors export: each assessor by pseudonym, what organizers did about them and what
#: the planner concluded about their reliability
ASSESSOR_COLUMNS = (
    "assessor",
    "revoked",
    "judgments",
    "set_aside_judgments",
    "quality_trials",
    "set_aside",
    "set_aside_at",
    "paused",
    "paused_at",
    "assessed",
    "flagged",
    "reasons",
    "metrics",
    "computed_at",
    # added after the others (a reader by position keeps working): the trials by kind
    "trials_by_kind",
)


def judgment_records(session: Session, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """Every judgment as a record of :data:`JUDGMENT_COLUMNS`: the lease it answered and
    why MTC chose the pair (its place in the planner's list, its weight, the rule)."""
    pseudonyms = repository.assessor_pseudonyms(session, campaign.id)
    repeated = repository.repeated_lease_numbers(session, campaign.id)
    for row in repository.judgment_rows(session, campaign.id):
        yield {
            "query": row.query,
            "document": row.document,
            "broad": row.broad,
            "fine": row.fine,
            "assessor": None if row.assessor_id is None else pseudonyms.get(row.assessor_id),
            "source": row.source,
            "created_at": iso_time(row.created_at),
            "revised_at": iso_time(row.updated_at) if row.revision else None,
            "revision": row.revision,
            "query_listen_ms": row.query_listen_ms,
            "candidate_listen_ms": row.candidate_listen_ms,
            "lease_id": row.lease_id,
            "leased_at": iso_time(row.leased_at),
            "selection_rank": row.selection_rank,
            "selection_weight": row.selection_weight,
            "selection_rule": row.selection_rule,
            "kind": row.kind,
            "repeat_of_lease": None if row.repeat_of is None else repeated.get(row.repeat_of),
            "set_aside": 1 if row.set_aside else 0,
            "served_query_bytes": row.served_query_bytes,
            "served_candidate_bytes": row.served_candidate_bytes,
        }


def assessor_records(session: Session, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """Every assessor as a record of :data:`ASSESSOR_COLUMNS` (by pseudonym: no name, no
    message to them): ``reasons`` a list of sentences, ``metrics`` and ``trials_by_kind``
    objects, which the CSV writes as JSON texts."""
    for a in assessor_overview(session, campaign):
        r = a.reliability
        yield {
            "assessor": a.pseudonym,
            "revoked": a.state == "revoked",
            "judgments": a.judgments,
            "set_aside_judgments": a.set_aside_judgments,
            "quality_trials": a.quality_trials,
            "set_aside": a.set_aside,
            "set_aside_at": iso_time(a.set_aside_at),
            "paused": a.paused,
            "paused_at": iso_time(a.paused_at),
            "assessed": r.assessed,
            "flagged": r.flagged,
            "reasons": list(r.reasons),
            "metrics": dict(r.metrics),
            "computed_at": iso_time(r.computed_at),
            "trials_by_kind": dict(a.trials_by_kind),
        }


def assessor_lines(fmt: str, records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The assessors export of ``records`` (:func:`assessor_records`): one JSON document, or a
    CSV whose lists and objects are JSON texts and whose flags are 0 or 1."""
    if fmt == "json":
        return iter([json_text({"assessors": list(records)})])

    def flat(record: dict[str, Any]) -> dict[str, Any]:
        return {
            **record,
            **{
                k: 1 if record[k] else 0
                for k in ("revoked", "set_aside", "paused", "assessed", "flagged")
            },
            "reasons": json.dumps(record["reasons"]) if record["reasons"] else None,
            "metrics": json.dumps(record["metrics"], sort_keys=True) if record["metrics"] else None,
            # every kind, in the order of models.TRIAL_KINDS
            "trials_by_kind": json.dumps(record["trials_by_kind"]),
        }

    return csv_lines(ASSESSOR_COLUMNS, (flat(r) for r in records))
