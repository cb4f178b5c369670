"""What organizers do about an assessor: set their judgments aside and bring them back, pause
and resume them, and give their live pair back to the pool. What the planner concluded about
each assessor is in :mod:`mtcjudge.assessors.reliability`; every assessor as the organizer
pages show them is in :mod:`mtcjudge.assessors.overview`.

Setting aside follows the judging path's locking discipline (docs/judging-at-scale.md): every
change of a pair's counters runs while the transaction holds that pair's row, pair rows are
locked in ascending id order, and the conditional UPDATEs decide, so two organizers clicking
at once, or the assessor submitting meanwhile, leave the counters equal to the rows. The
assessor's row is locked (Postgres: FOR NO KEY UPDATE) after their live pair's row and
before the pairs of their judgments, so two changes of one assessor take turns. Services only
``flush()``; the request or the command's ``session_scope`` commits.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.models import Assessor, Campaign, utcnow
from mtcjudge.pool import repository as pool_repository
from mtcjudge.validation import text_problem

__all__ = [
    "AUTO_PAUSE_ACTOR",
    "DEFAULT_PAUSE_MESSAGE",
    "PAUSE_MESSAGE_MAX",
    "BringBackReport",
    "PauseReport",
    "SetAsideReport",
    "bring_back",
    "pause",
    "release_live_lease",
    "resume",
    "set_aside",
]

#: what a paused assessor is told when the organizers wrote nothing (and after an automatic
#: pause)
DEFAULT_PAUSE_MESSAGE = (
    "Thank you for your help so far. We have paused your judging for now; the organizers "
    "will be in touch."
)
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
    assessor = assessors_repository.assessor_for_update(session, campaign.id, assessor_id)
    if assessor is None:
        raise NotFound(f"no assessor {assessor_id} in campaign {campaign.slug!r}")
    return assessor


def _check_exists(session: Session, campaign: Campaign, assessor_id: int) -> None:
    """NotFound unless the campaign has the assessor (read without a lock: the pair's row
    is locked before the assessor's)."""
    assessor = session.get(Assessor, assessor_id)
    if assessor is None or assessor.campaign_id != campaign.id:
        raise NotFound(f"no assessor {assessor_id} in campaign {campaign.slug!r}")


def release_live_lease(session: Session, assessor_id: int) -> bool:
    """Give the assessor's live pair back to the pool, under its pair's lock (which also
    waits for a submission of that pair in flight)."""
    lease = assessors_repository.live_lease_of(session, assessor_id)
    if lease is None:
        return False
    if lease.pair_id is not None:
        pool_repository.lock_pair(session, lease.pair_id)
    released = pool_repository.release_lease(session, lease, "released")
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
    live = assessors_repository.live_lease_of(session, assessor_id)
    first = {
        j.pair_id
        for j in assessors_repository.pool_judgments_of(session, assessor_id, set_aside=False)
    }
    if live is not None:
        first.add(live.pair_id)
    for pair_id in sorted(p for p in first if p is not None):
        pool_repository.lock_pair(session, pair_id)
    released = release_live_lease(session, assessor_id)
    assessor = _locked(session, campaign, assessor_id)
    newly = assessor.set_aside_at is None
    if newly:
        assessor.set_aside_at = utcnow()
    already = len(assessors_repository.pool_judgments_of(session, assessor_id, set_aside=True))
    moved = 0
    for judgment in assessors_repository.pool_judgments_of(session, assessor_id, set_aside=False):
        if judgment.pair_id is not None:
            pool_repository.lock_pair(session, judgment.pair_id)
        if assessors_repository.set_judgment_aside(session, judgment.judgment_id, True):
            moved += 1
            if judgment.pair_id is not None:
                assessors_repository.uncount_pair(session, judgment.pair_id)
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
    for judgment in assessors_repository.pool_judgments_of(session, assessor_id, set_aside=True):
        if judgment.pair_id is None:  # a pair outside the pool: nothing to count
            back += assessors_repository.set_judgment_aside(session, judgment.judgment_id, False)
            continue
        pool_repository.lock_pair(session, judgment.pair_id)
        if not assessors_repository.set_judgment_aside(session, judgment.judgment_id, False):
            continue  # brought back meanwhile by someone else
        if assessors_repository.recount_pair(session, judgment.pair_id, per_pair):
            back += 1
        else:  # the pair has all its judgments: this one stays aside
            assessors_repository.set_judgment_aside(session, judgment.judgment_id, True)
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
    released = release_live_lease(session, assessor_id)
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


# ------------------------------------------------------------------ what the pages show
