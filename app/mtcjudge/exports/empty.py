"""An export without rows, and why it has none.

A TREC qrels file with no line, or a CSV with its header alone, loads into trec_eval,
ir_measures or a spreadsheet without a word and gives zeros or nothing: so an export that
would have no rows is refused (:class:`EmptyExport`: the command line's exit status 1, the
API's 409 ``empty_export``) unless it is asked for, and says why it is empty and what to
ask for instead.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from mtcjudge.errors import Conflict
from mtcjudge.exports import repository
from mtcjudge.models import Campaign

__all__ = ["EmptyExport", "why_empty"]


class EmptyExport(Conflict):
    """The export would have no rows. ``reason`` says why in words; ``scale`` is the scale
    that has rows when the other one was asked for (None otherwise)."""

    code = "empty_export"

    def __init__(self, what: str, reason: str, scale: str | None = None) -> None:
        self.what = what
        self.reason = reason
        self.scale = scale
        hint = f"; ask for scale={scale}" if scale else ""
        super().__init__(
            f"nothing to export: {reason}{hint} (allow_empty=true exports the empty {what} file)"
        )


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def why_empty(session: Session, campaign: Campaign, what: str, scale: str) -> EmptyExport:
    """Why the ``what`` export of ``campaign`` on ``scale`` has no rows (called once it has
    none)."""
    tally = repository.judgment_tally(session, campaign.id)
    other = "broad" if scale == "fine" else "fine"
    if what == "qrels":
        if tally[other]:
            reason = (
                f"no {scale.upper()} judgments: this campaign judges on "
                f"{campaign.scale.upper()}, and its {_count(tally[other], 'judgment')} that "
                f"count are {other.upper()} only"
            )
            return EmptyExport(what, reason, other)
        return EmptyExport(what, _no_judgments(tally, pool_only=True))
    if what == "judgments":
        return EmptyExport(what, _no_judgments(tally, pool_only=False))
    if what == "estimates":
        pool = repository.counts(session, campaign.id)["pool_pairs"]
        if not pool:
            return EmptyExport(what, "the campaign has no pool pairs")
        return EmptyExport(
            what,
            f"no unjudged pool pairs on {scale.upper()}: all {_count(pool, 'pool pair')} are "
            "judged, so there is nothing to estimate (the qrels hold them all)",
        )
    if what == "assessors":
        return EmptyExport(what, "no assessors: nobody has been invited to this campaign yet")
    if what in ("runs", "entries") and tally["results"]:
        return EmptyExport(
            what,
            f"every one of the {_count(tally['results'], 'result')} is a query clip or a clip by "
            "the query's artist, which the measures leave out",
        )
    return EmptyExport(what, "the campaign has no results")


def _no_judgments(tally: dict[str, int], *, pool_only: bool) -> str:
    """Why a campaign has no judgments (that count, with ``pool_only``)."""
    if pool_only and tally["set_aside"]:
        return (
            f"no judgments count: the {_count(tally['set_aside'], 'pool judgment')} of the "
            "campaign are set aside (bring their assessors back to count them)"
        )
    if pool_only and tally["rows"]:
        return (
            f"no judgments of pool pairs: the campaign's {_count(tally['rows'], 'judgment')} "
            "are answers to quality trials, which count nowhere"
        )
    return "no judgments yet: nobody has judged a pair of this campaign and none were imported"
