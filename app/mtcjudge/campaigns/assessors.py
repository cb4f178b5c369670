"""What organizers do about an assessor's reliability: set their judgments aside and bring
them back, pause and resume them; what the planner concluded about each assessor
(:func:`store_reliability`, with the automatic pause); and every assessor as the organizer
pages and ``GET /api/campaigns/{slug}/assessors`` show them (:func:`assessor_overview`).

Setting aside follows the judging path's locking discipline (docs/reliability.md): every
change of a pair's counters runs while the transaction holds that pair's row, pair rows are
locked in ascending id order, and the conditional UPDATEs decide, so two organizers clicking
at once, or the assessor submitting meanwhile, leave the counters equal to the rows. The
assessor's row is locked (Postgres: FOR NO KEY UPDATE) after their live pair's row and
before the pairs of their judgments, so two changes of one assessor take turns. Services only
``flush()``; the request or the command's ``session_scope`` commits.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.campaigns import repository
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.judging import repository as judging
from mtcjudge.judging.service import PAUSED_MESSAGE
from mtcjudge.models import Assessor, AssessorReliability, Campaign, as_utc, utcnow
from mtcjudge.validation import text_problem

__all__ = [
    "AUTO_PAUSE_ACTOR",
    "DEFAULT_PAUSE_MESSAGE",
    "PAUSE_MESSAGE_MAX",
    "AssessorOverview",
    "BringBackReport",
    "PauseReport",
    "ReliabilityView",
    "SetAsideReport",
    "assessor_overview",
    "bring_back",
    "pause",
    "reliability_view",
    "resume",
    "set_aside",
    "store_reliability",
]

#: what a paused assessor is told when the organizer gave no message (and after an
#: automatic pause): the judging service's words
DEFAULT_PAUSE_MESSAGE = PAUSED_MESSAGE
PAUSE_MESSAGE_MAX = 1000
#: who pauses an assessor automatically, as the audit log shows it
AUTO_PAUSE_ACTOR = audit.Actor("automatic pause (failed quality trials)")


# ------------------------------------------------------------------ reports


@dataclass(frozen=True)
class SetAsideReport:
    """What :func:`set_aside` did: ``set_aside`` judgments set aside now (their pairs are
    back in the pool), ``already`` set aside before, and whether the pair the assessor held
    was given back."""

    assessor_id: int
    name: str
    set_aside: int
    already: int
    lease_released: bool

    def summary(self) -> str:
        text = f"{self.name}: {_judgments(self.set_aside)} set aside, their pairs back in the pool"
        if self.already:
            text += f" ({_judgments(self.already)} set aside before)"
        return text


@dataclass(frozen=True)
class BringBackReport:
    """What :func:`bring_back` did: ``brought_back`` judgments count again; ``stayed_aside``
    stay aside because their pair was judged again meanwhile and has all the judgments the
    campaign asks for (``judgments_per_pair``): no pair is judged more often than asked."""

    assessor_id: int
    name: str
    brought_back: int
    stayed_aside: int
    judgments_per_pair: int

    @property
    def reason(self) -> str | None:
        """Why the ``stayed_aside`` judgments stay aside (None when none does)."""
        if not self.stayed_aside:
            return None
        per_pair = self.judgments_per_pair
        asked = "the judgment" if per_pair == 1 else f"the {per_pair} judgments"
        return (
            f"their pair{'s were' if self.stayed_aside > 1 else ' was'} judged again while "
            f"they were set aside and now {'have' if self.stayed_aside > 1 else 'has'} "
            f"{asked} the campaign asks for per pair"
        )

    def summary(self) -> str:
        text = f"{self.name}: {_judgments(self.brought_back)} brought back"
        if self.stayed_aside:
            text += f"; {_judgments(self.stayed_aside)} stay aside: {self.reason}"
        return text


@dataclass(frozen=True)
class PauseReport:
    """What :func:`pause` or :func:`resume` did (``changed`` False: it was so already)."""

    assessor_id: int
    name: str
    paused: bool
    changed: bool
    message: str | None
    lease_released: bool = False


def _judgments(n: int) -> str:
    return f"{n} judgment{'' if n == 1 else 's'}"


# ------------------------------------------------------------------ the actions


def _locked(session: Session, campaign: Campaign, assessor_id: int) -> Assessor:
    assessor = repository.assessor_for_update(session, campaign.id, assessor_id)
    if assessor is None:
        raise NotFound(f"no assessor {assessor_id} in campaign {campaign.slug!r}")
    return assessor


def _check_exists(session: Session, campaign: Campaign, assessor_id: int) -> None:
    """NotFound unless the campaign has the assessor (read without a lock: the pair's row
    is locked before the assessor's)."""
    assessor = session.get(Assessor, assessor_id)
    if assessor is None or assessor.campaign_id != campaign.id:
        raise NotFound(f"no assessor {assessor_id} in campaign {campaign.slug!r}")


def _release_live_lease(session: Session, assessor_id: int) -> bool:
    """Give the assessor's live pair back to the pool, under its pair's lock (which also
    waits for a submission of that pair in flight)."""
    lease = repository.live_lease_of(session, assessor_id)
    if lease is None:
        return False
    if lease.pair_id is not None:
        judging.lock_pair(session, lease.pair_id)
    released = judging.release_lease(session, lease, "released")
    session.expire(lease)
    return released


def set_aside(
    session: Session, campaign: Campaign, assessor_id: int, actor: audit.Actor
) -> SetAsideReport:
    """Set every pool judgment of the assessor aside: it counts nowhere (pool counts,
    planner, results, qrels, exports' counts) until brought back, each pair has room again
    and its ``changes`` counter moves so the planner replans; the assessor is handed no
    more pairs and the pair they hold goes back to the pool. Idempotent: a second call sets
    aside what came in meanwhile, if anything. The audit log records it.

    Raises
    ------
    NotFound
        No such assessor in the campaign.
    """
    _check_exists(session, campaign, assessor_id)
    # the rows of the pairs first (the judging path's order: pair, then assessor), all of
    # them in ascending order: the live pair's and those of the judgments, so that another
    # organizer doing the same cannot hold one of them while waiting for the assessor's row
    # (that took the live pair before the assessor and the judged pairs after: a deadlock
    # on Postgres); then the assessor's row; then the pairs of judgments stored meanwhile
    live = repository.live_lease_of(session, assessor_id)
    first = {j.pair_id for j in repository.pool_judgments_of(session, assessor_id, set_aside=False)}
    if live is not None:
        first.add(live.pair_id)
    for pair_id in sorted(p for p in first if p is not None):
        judging.lock_pair(session, pair_id)
    released = _release_live_lease(session, assessor_id)
    assessor = _locked(session, campaign, assessor_id)
    newly = assessor.set_aside_at is None
    if newly:
        assessor.set_aside_at = utcnow()
    already = len(repository.pool_judgments_of(session, assessor_id, set_aside=True))
    moved = 0
    for judgment in repository.pool_judgments_of(session, assessor_id, set_aside=False):
        if judgment.pair_id is not None:
            judging.lock_pair(session, judgment.pair_id)
        if repository.set_judgment_aside(session, judgment.judgment_id, True):
            moved += 1
            if judgment.pair_id is not None:
                repository.uncount_pair(session, judgment.pair_id)
    session.flush()
    report = SetAsideReport(assessor.id, assessor.name, moved, already, released)
    if newly or moved:
        audit.record(session, campaign.id, actor, audit.ASSESSOR_SET_ASIDE, report.summary())
    return report


def bring_back(
    session: Session, campaign: Campaign, assessor_id: int, actor: audit.Actor
) -> BringBackReport:
    """Bring the assessor's set-aside judgments back where their pair still has room
    (``judged < judgments_per_pair``, decided by the same conditional UPDATE a submission
    runs); the others stay aside. The assessor may be handed pairs again. Idempotent; the
    audit log records it.

    Raises
    ------
    NotFound
        No such assessor in the campaign.
    """
    assessor = _locked(session, campaign, assessor_id)
    was_aside = assessor.set_aside_at is not None
    assessor.set_aside_at = None
    per_pair = campaign.judgments_per_pair
    back = stayed = 0
    for judgment in repository.pool_judgments_of(session, assessor_id, set_aside=True):
        if judgment.pair_id is None:  # a pair outside the pool: nothing to count
            back += repository.set_judgment_aside(session, judgment.judgment_id, False)
            continue
        judging.lock_pair(session, judgment.pair_id)
        if not repository.set_judgment_aside(session, judgment.judgment_id, False):
            continue  # brought back meanwhile by someone else
        if repository.recount_pair(session, judgment.pair_id, per_pair):
            back += 1
        else:  # the pair has all its judgments: this one stays aside
            repository.set_judgment_aside(session, judgment.judgment_id, True)
            stayed += 1
    session.flush()
    report = BringBackReport(assessor.id, assessor.name, back, stayed, per_pair)
    if was_aside or back:
        audit.record(session, campaign.id, actor, audit.ASSESSOR_BROUGHT_BACK, report.summary())
    return report


def _checked_message(message: str | None) -> str | None:
    if message is None:
        return None
    if not isinstance(message, str):
        raise InvalidInput("message must be a text")
    if problem := text_problem(message):
        raise InvalidInput(f"message {problem}")
    message = message.strip()
    if len(message) > PAUSE_MESSAGE_MAX:
        raise InvalidInput(
            f"message must be at most {PAUSE_MESSAGE_MAX} characters, found {len(message)}"
        )
    return message or None


def pause(
    session: Session,
    campaign: Campaign,
    assessor_id: int,
    actor: audit.Actor,
    message: str | None = None,
) -> PauseReport:
    """Hand the assessor no more pairs for now; the pair they hold goes back to the pool
    and their judgments stay. ``message`` is what they are told (else
    :data:`DEFAULT_PAUSE_MESSAGE`). Pausing a paused assessor changes only the message.

    Raises
    ------
    InvalidInput
        A message that is not printable text or too long.
    NotFound
        No such assessor in the campaign.
    """
    checked = _checked_message(message)
    _check_exists(session, campaign, assessor_id)
    released = _release_live_lease(session, assessor_id)
    assessor = _locked(session, campaign, assessor_id)
    changed = assessor.paused_at is None or assessor.pause_reason != checked
    if assessor.paused_at is None:
        assessor.paused_at = utcnow()
    assessor.pause_reason = checked
    session.flush()
    if changed:
        told = checked or DEFAULT_PAUSE_MESSAGE
        audit.record(
            session, campaign.id, actor, audit.ASSESSOR_PAUSED, f"{assessor.name}: told {told!r}"
        )
    return PauseReport(assessor.id, assessor.name, True, changed, checked, released)


def resume(
    session: Session, campaign: Campaign, assessor_id: int, actor: audit.Actor
) -> PauseReport:
    """The assessor may be handed pairs again (unless their judgments are set aside)."""
    assessor = _locked(session, campaign, assessor_id)
    changed = assessor.paused_at is not None
    assessor.paused_at = None
    assessor.pause_reason = None
    session.flush()
    if changed:
        audit.record(session, campaign.id, actor, audit.ASSESSOR_RESUMED, assessor.name)
    return PauseReport(assessor.id, assessor.name, False, changed, None)


# ------------------------------------------------------------------ what the planner concluded


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
    stored = repository.reliability_rows(session, campaign.id)
    assessors = {a.id: a for a in repository.assessors_of(session, campaign.id)}
    paused: list[int] = []
    for assessor_id in sorted(results):
        if assessor_id not in assessors:
            continue
        flagged, reasons, metrics = results[assessor_id]
        clean = {str(k): _json_number(v) for k, v in metrics.items()}
        previous = stored.get(assessor_id)
        failed_before = previous is not None and _failed_trials(_parsed(previous.metrics, {}))
        repository.store_reliability_row(
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


# ------------------------------------------------------------------ what the pages show


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
    counts = repository.assessor_counts(session, campaign.id)
    rows = repository.reliability_rows(session, campaign.id)
    overview = []
    for position, assessor in enumerate(repository.assessors_of(session, campaign.id), start=1):
        n = counts.get(assessor.id, repository.AssessorCounts())
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
