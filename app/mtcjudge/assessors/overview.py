"""The assessors as organizers see them: counts, state and reliability, one row each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.assessors.reliability import ReliabilityView, reliability_view
from mtcjudge.models import Assessor, Campaign, as_utc


@dataclass(frozen=True)
class AssessorOverview:
    """An assessor as organizers see them: who, where they are, their judgments (pool ones
    counted, pool ones set aside, hidden quality trials in all and by kind), and their
    reliability."""

    id: int
    pseudonym: str
    name: str
    state: str  # "invited" | "consented" | "revoked"
    judgments: int
    set_aside_judgments: int
    quality_trials: int
    # every kind of models.TRIAL_KINDS, in its order
    trials_by_kind: dict[str, int]
    set_aside: bool
    set_aside_at: datetime | None
    paused: bool
    paused_at: datetime | None
    pause_reason: str | None
    reliability: ReliabilityView


def _state(assessor: Assessor) -> str:
    if assessor.revoked_at is not None:
        return "revoked"
    return "consented" if assessor.consented_at is not None else "invited"


def assessor_overview(session: Session, campaign: Campaign) -> list[AssessorOverview]:
    """Every assessor of the campaign in the order they were invited (pseudonyms A1, A2, …
    as in the results and the exports); three reads whatever their number."""
    counts = assessors_repository.assessor_counts(session, campaign.id)
    rows = assessors_repository.reliability_rows(session, campaign.id)
    overview = []
    for position, assessor in enumerate(
        assessors_repository.assessors_of(session, campaign.id), start=1
    ):
        n = counts.get(assessor.id, assessors_repository.AssessorCounts())
        overview.append(
            AssessorOverview(
                id=assessor.id,
                pseudonym=f"A{position}",
                name=assessor.name,
                state=_state(assessor),
                judgments=n.counted,
                set_aside_judgments=n.set_aside,
                quality_trials=n.trials,
                trials_by_kind=dict(n.trials_by_kind),
                set_aside=assessor.set_aside_at is not None,
                set_aside_at=None
                if assessor.set_aside_at is None
                else as_utc(assessor.set_aside_at),
                paused=assessor.paused_at is not None,
                paused_at=None if assessor.paused_at is None else as_utc(assessor.paused_at),
                pause_reason=assessor.pause_reason,
                reliability=reliability_view(rows.get(assessor.id)),
            )
        )
    return overview
