"""Domain errors carry their HTTP status; one handler renders JSON for /api and a page for HTML."""

from __future__ import annotations

__all__ = [
    "AssessorPaused",
    "AssessorUnknown",
    "CampaignClosed",
    "CampaignNotFound",
    "Conflict",
    "ConsentRequired",
    "CsrfRejected",
    "DomainError",
    "InvalidInput",
    "LeaseExpired",
    "ListeningRequired",
    "NotFound",
    "OrganizerOnly",
    "PairNotLeased",
    "PairUnplayable",
    "UnplayableNotConfirmed",
]


class DomainError(Exception):
    """Base of the errors a user can cause; ``status`` is the HTTP status to answer with."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(DomainError):
    status = 400
    code = "invalid_input"


class NotFound(DomainError):
    status = 404
    code = "not_found"


class CampaignNotFound(NotFound):
    code = "campaign_not_found"


class AssessorUnknown(DomainError):
    status = 403
    code = "unknown_assessor"


class OrganizerOnly(DomainError):
    """No organizer credentials: no signed-in session, or a missing or wrong bearer token."""

    status = 401
    code = "organizer_only"


class CsrfRejected(DomainError):
    """A state-changing request made with the session cookie lacks the session's CSRF token."""

    status = 403
    code = "csrf_failed"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class PairNotLeased(Conflict):
    code = "pair_not_leased"


class PairUnplayable(Conflict):
    """The pair's query or candidate clip is missing or unreadable: it is never judged."""

    code = "pair_unplayable"


class UnplayableNotConfirmed(Conflict):
    """Opening a campaign some of whose pairs cannot be played, without saying so."""

    code = "unplayable_pairs"


class LeaseExpired(DomainError):
    status = 410
    code = "lease_expired"


class CampaignClosed(Conflict):
    code = "campaign_closed"


class AssessorPaused(Conflict):
    """The organizers set the assessor's judgments aside: nothing more is taken from them."""

    code = "assessor_paused"


class ListeningRequired(DomainError):
    """A judgment breaks the campaign's listening rule (a clip not played long enough)."""

    status = 422
    code = "listening_required"


class ConsentRequired(DomainError):
    status = 403
    code = "consent_required"
