"""Campaigns: find them, change their settings, invite their assessors (their collection is
stored by :mod:`mtcjudge.campaigns.creation`, their settings checked by
:class:`~mtcjudge.campaigns.spec.CampaignSpec`).

Services only ``flush()``; the request (or the CLI's ``session_scope``) commits.
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.assessors.actions import release_live_lease
from mtcjudge.campaigns import repository
from mtcjudge.campaigns.changes import planned_changes, record_campaign_update
from mtcjudge.campaigns.creation import open_warning, refuse_unconfirmed_open
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.config import Settings
from mtcjudge.errors import CampaignNotFound, InvalidInput, NotFound
from mtcjudge.models import Assessor, Campaign, utcnow
from mtcjudge.security import hash_token, new_token
from mtcjudge.validation import NAME_MAX, text_problem

__all__ = [
    "UPDATABLE_FIELDS",
    "assessor_link",
    "find_assessor",
    "get_campaign",
    "invite_assessor",
    "list_assessors",
    "list_campaigns",
    "reissue_link",
    "revoke_link",
    "update_campaign",
]

#: settings that may change once a campaign exists; the others define what its judgments mean
UPDATABLE_FIELDS = (
    "status",
    "keep_collecting",
    "auto_pause",
    "target",
    "lease_minutes",
    "judgments_per_pair",
    "listen_seconds",
    "quality_rate",
    "name",
    "description",
)
_EMAIL_MAX = 320


def get_campaign(session: Session, slug: str) -> Campaign:
    campaign = repository.campaign_by_slug(session, slug)
    if campaign is None:
        raise CampaignNotFound(f"no campaign {slug!r}")
    return campaign


def list_campaigns(session: Session) -> list[Campaign]:
    return repository.all_campaigns(session)


def update_campaign(
    session: Session,
    campaign: Campaign,
    actor: audit.Actor | None = None,
    /,
    *,
    confirm_unplayable: bool = False,
    **changes: Any,
) -> Campaign:
    """Change the settings in :data:`UPDATABLE_FIELDS`, checked as :class:`CampaignSpec` does;
    with ``actor``, what changed goes into the audit log (nothing when nothing changed).

    Opening a campaign (draft or closed to open) some of whose pairs cannot be played needs
    ``confirm_unplayable``: the organizer says they know those pairs will not be judged.

    Raises
    ------
    InvalidInput
        For a setting that cannot change (scale, k, measure... define what the judgments
        mean) or a value out of range.
    UnplayableNotConfirmed
        Opening with pairs that cannot be played, without ``confirm_unplayable`` (409).
    """
    fixed = sorted(set(changes) - set(UPDATABLE_FIELDS))
    if fixed:
        raise InvalidInput(
            f"cannot change {', '.join(fixed)} of a campaign; changeable: "
            f"{', '.join(UPDATABLE_FIELDS)}"
        )
    current = CampaignSpec(
        **{f.name: getattr(campaign, f.name) for f in fields(CampaignSpec) if f.name != "slug"}
    )
    try:
        checked = replace(current, **changes)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    opening = changes.get("status") == "open" and campaign.status != "open"
    if opening and not confirm_unplayable:
        refuse_unconfirmed_open(session, campaign)
    planned = planned_changes(campaign, changes)
    if opening and (warning := open_warning(session, campaign)):
        # the audit log keeps what the organizer confirmed
        planned = [
            (
                action,
                f"{detail} (confirmed: {warning})" if action == audit.STATUS_CHANGED else detail,
            )
            for action, detail in planned
        ]
    for name in changes:
        setattr(campaign, name, getattr(checked, name))
    session.flush()
    if actor is not None:
        record_campaign_update(session, campaign.id, actor, planned)
    return campaign


def invite_assessor(
    session: Session, campaign: Campaign, name: str, email: str | None = None
) -> tuple[Assessor, str]:
    """Add an assessor with a personal token (the only credential of the judging pages).

    Returns the assessor and the token: only its hash is stored, so this is the one time
    the link can be shown (:func:`reissue_link` makes a new one)."""
    for field_name, text in (("assessor name", name), ("email", email)):
        if isinstance(text, str) and (problem := text_problem(text)):
            raise InvalidInput(f"{field_name} {problem}")
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX:
        raise InvalidInput(
            f"assessor name must be a non-empty text of at most {NAME_MAX} characters"
        )
    if email is not None:
        email = email.strip() or None
    if email is not None and (
        len(email) > _EMAIL_MAX or not re.fullmatch(r"[^@\s]+@[^@\s]+", email)
    ):
        raise InvalidInput(f"email {email!r} is not an e-mail address")
    token = new_token()
    assessor = Assessor(
        campaign_id=campaign.id, name=name, email=email, token_hash=hash_token(token)
    )
    repository.add(session, assessor)
    return assessor, token


def reissue_link(session: Session, assessor: Assessor) -> str:
    """A new token for the assessor (the old link stops working); returns it."""
    token = new_token()
    assessor.token_hash = hash_token(token)
    assessor.revoked_at = None
    session.flush()
    return token


def revoke_link(session: Session, assessor: Assessor) -> None:
    """The assessor's link stops working, and their pair goes back to the pool; their
    judgments stay."""
    assessor.revoked_at = utcnow()
    release_live_lease(session, assessor.id)
    session.flush()


def find_assessor(session: Session, campaign: Campaign, name: str) -> Assessor:
    matches = [a for a in assessors_repository.assessors_of(session, campaign.id) if a.name == name]
    if not matches:
        raise NotFound(f"no assessor named {name!r} in campaign {campaign.slug!r}")
    if len(matches) > 1:
        raise InvalidInput(f"several assessors are named {name!r}; rename one first")
    return matches[0]


def assessor_link(settings: Settings, token: str) -> str:
    return f"{settings.base_url}/a/{token}"


def list_assessors(session: Session, campaign: Campaign) -> list[Assessor]:
    """The campaign's assessors, in the order they were invited."""
    return assessors_repository.assessors_of(session, campaign.id)
