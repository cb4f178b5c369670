"""The audit log: who changed what in a campaign (or in the organizer accounts), and when.

Every organizer change goes through :func:`record`, in the transaction that makes the change,
so an event exists exactly when the change was committed. The actor is who did it, as shown to
organizers: an organizer's username, ``"API token"``, or ``"command line (user@host)"``.
"""

from __future__ import annotations

import getpass
import os
import socket
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from mtcjudge.models import AuditEvent, Campaign, as_utc

__all__ = [
    "ACTION_LABELS",
    "API_TOKEN",
    "ASSESSOR_BROUGHT_BACK",
    "ASSESSOR_INVITED",
    "ASSESSOR_PAUSED",
    "ASSESSOR_RELINKED",
    "ASSESSOR_RESUMED",
    "ASSESSOR_REVOKED",
    "ASSESSOR_SET_ASIDE",
    "CAMPAIGN_CREATED",
    "ORGANIZER_CREATED",
    "ORGANIZER_DISABLED",
    "ORGANIZER_ENABLED",
    "ORGANIZER_PASSWORD_CHANGED",
    "RUNS_ADDED",
    "SETTINGS_CHANGED",
    "STATUS_CHANGED",
    "Actor",
    "ShownEvent",
    "command_line_actor",
    "events",
    "recent_events",
    "record",
]

CAMPAIGN_CREATED = "campaign_created"
STATUS_CHANGED = "status_changed"
SETTINGS_CHANGED = "settings_changed"
ASSESSOR_INVITED = "assessor_invited"
ASSESSOR_REVOKED = "assessor_revoked"
ASSESSOR_RELINKED = "assessor_relinked"
#: an assessor's judgments set aside (counted nowhere), and brought back
ASSESSOR_SET_ASIDE = "assessor_set_aside"
ASSESSOR_BROUGHT_BACK = "assessor_brought_back"
#: an assessor handed no more pairs for now (by an organizer or automatically), and resumed
ASSESSOR_PAUSED = "assessor_paused"
ASSESSOR_RESUMED = "assessor_resumed"
#: systems added to a campaign (shown as "runs added")
RUNS_ADDED = "runs_added"
ORGANIZER_CREATED = "organizer_created"
ORGANIZER_PASSWORD_CHANGED = "organizer_password_changed"
ORGANIZER_DISABLED = "organizer_disabled"
ORGANIZER_ENABLED = "organizer_enabled"

#: what each action says on a page
ACTION_LABELS = {
    CAMPAIGN_CREATED: "created the campaign",
    STATUS_CHANGED: "changed the status",
    SETTINGS_CHANGED: "changed settings",
    ASSESSOR_INVITED: "invited an assessor",
    ASSESSOR_REVOKED: "revoked an assessor's link",
    ASSESSOR_RELINKED: "gave an assessor a new link",
    ASSESSOR_SET_ASIDE: "set an assessor's judgments aside",
    ASSESSOR_BROUGHT_BACK: "brought an assessor's judgments back",
    ASSESSOR_PAUSED: "paused an assessor",
    ASSESSOR_RESUMED: "resumed an assessor",
    ORGANIZER_CREATED: "created an organizer account",
    ORGANIZER_PASSWORD_CHANGED: "changed an organizer's password",
    ORGANIZER_DISABLED: "disabled an organizer account",
    ORGANIZER_ENABLED: "enabled an organizer account",
}

_ACTOR_MAX = 200  # AuditEvent.actor is a String(200)


@dataclass(frozen=True)
class Actor:
    """Who made a change: the name shown in the log, and the organizer account if any."""

    name: str
    organizer_id: int | None = None


#: a request authenticated with ``MTCJUDGE_ORGANIZER_TOKEN``
API_TOKEN = Actor("API token")


def command_line_actor() -> Actor:
    """``command line (user@host)``: the command line talks to the database directly, so the
    account it runs under is the best name there is."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container's uid without a passwd entry
        user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return Actor(f"command line ({user}@{socket.gethostname()})"[:_ACTOR_MAX])


def record(
    session: Session,
    campaign_id: int | None,
    actor: Actor | str,
    action: str,
    detail: str = "",
) -> AuditEvent:
    """Add an event to the log (flushed; the caller's transaction commits it).

    ``campaign_id`` is None for changes outside any campaign (organizer accounts).
    """
    who = actor if isinstance(actor, Actor) else Actor(actor)
    event = AuditEvent(
        campaign_id=campaign_id,
        organizer_id=who.organizer_id,
        actor=who.name[:_ACTOR_MAX],
        action=action,
        detail=detail,
    )
    session.add(event)
    session.flush()
    return event


def events(session: Session, campaign_id: int | None, limit: int = 50) -> list[AuditEvent]:
    """The campaign's latest events, newest first (``campaign_id`` None: the events outside
    any campaign)."""
    where = (
        AuditEvent.campaign_id.is_(None)
        if campaign_id is None
        else AuditEvent.campaign_id == campaign_id
    )
    query = (
        select(AuditEvent)
        .where(where)
        .order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
        .limit(limit)
    )
    return list(session.scalars(query))


@dataclass(frozen=True)
class ShownEvent:
    """An event as a page lists it."""

    at: datetime
    actor: str
    action: str
    detail: str
    campaign_slug: str | None
    campaign_name: str | None

    @property
    def label(self) -> str:
        return ACTION_LABELS.get(self.action, self.action.replace("_", " "))


def recent_events(session: Session, limit: int = 10) -> list[ShownEvent]:
    """The latest events of all campaigns and accounts, newest first, with their campaign."""
    rows = session.execute(
        select(AuditEvent, Campaign.slug, Campaign.name)
        .outerjoin(Campaign, Campaign.id == AuditEvent.campaign_id)
        .order_by(AuditEvent.created_at.desc(), AuditEvent.id.desc())
        .limit(limit)
    ).all()
    return [
        ShownEvent(as_utc(e.created_at), e.actor, e.action, e.detail, slug, name)
        for e, slug, name in rows
    ]
