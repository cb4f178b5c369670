"""An assessor's reliability from the hidden trials and agreement, as the planner stores it and
organizers read it (with the automatic pause of an assessor who failed the trials)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.assessors.actions import AUTO_PAUSE_ACTOR, pause
from mtcjudge.models import AssessorReliability, Campaign, as_utc, utcnow


def _json_number(value: Any) -> Any:
    """A metric as JSON holds it: numbers, booleans, texts and None (NaN and infinities
    become None: "not known")."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    try:  # numpy scalars
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None


def _failed_trials(metrics: Mapping[str, Any]) -> bool:
    return metrics.get("failed_trials") is True


def store_reliability(
    session: Session,
    campaign: Campaign,
    results: Mapping[int, tuple[bool, Sequence[str], Mapping[str, Any]]],
    *,
    now: datetime | None = None,
) -> list[int]:
    """Store what the planner concluded about each assessor (assessor id -> (flagged,
    reasons, metrics)) in ``assessor_reliability``, one row per assessor, replaced each
    time; ids of other campaigns are ignored. Returns the assessors paused automatically.

    With the campaign's ``auto_pause`` on, an assessor whose metrics say
    ``"failed_trials": true`` while their previous conclusion did not (or there was none)
    is paused with :data:`DEFAULT_PAUSE_MESSAGE`, recorded in the audit log as
    :data:`AUTO_PAUSE_ACTOR`. Only that change pauses: an organizer who resumes the
    assessor is not overruled by the next tick, only by a new failure after a pass.
    """
    moment = now or utcnow()
    stored = assessors_repository.reliability_rows(session, campaign.id)
    assessors = {a.id: a for a in assessors_repository.assessors_of(session, campaign.id)}
    paused: list[int] = []
    for assessor_id in sorted(results):
        if assessor_id not in assessors:
            continue
        flagged, reasons, metrics = results[assessor_id]
        clean = {str(k): _json_number(v) for k, v in metrics.items()}
        previous = stored.get(assessor_id)
        failed_before = previous is not None and _failed_trials(_parsed(previous.metrics, {}))
        assessors_repository.store_reliability_row(
            session,
            previous,
            {
                "assessor_id": assessor_id,
                "campaign_id": campaign.id,
                "computed_at": moment,
                "flagged": bool(flagged),
                "reasons": json.dumps([str(r) for r in reasons]),
                "metrics": json.dumps(clean, allow_nan=False, sort_keys=True),
            },
        )
        assessor = assessors[assessor_id]
        if (
            campaign.auto_pause
            and _failed_trials(clean)
            and not failed_before
            and assessor.paused_at is None
        ):
            pause(session, campaign, assessor_id, AUTO_PAUSE_ACTOR)
            paused.append(assessor_id)
    return paused


@dataclass(frozen=True)
class ReliabilityView:
    """What the planner last concluded about an assessor. ``assessed`` False: nothing yet
    (then ``flagged`` is False, ``reasons`` and ``metrics`` empty, ``computed_at`` None)."""

    assessed: bool
    flagged: bool
    reasons: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    computed_at: datetime | None = None


NOT_ASSESSED = ReliabilityView(assessed=False, flagged=False)


def _parsed(text: str, default: Any) -> Any:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def reliability_view(row: AssessorReliability | None) -> ReliabilityView:
    if row is None:
        return NOT_ASSESSED
    return ReliabilityView(
        assessed=True,
        flagged=bool(row.flagged),
        reasons=[str(r) for r in _parsed(row.reasons, [])],
        metrics=dict(_parsed(row.metrics, {})),
        computed_at=as_utc(row.computed_at),
    )
