"""What a change to a campaign did, and the line it writes in the audit log.

The campaign service returns these reports (:func:`mtcjudge.campaigns.creation.create_campaign`,
:func:`~mtcjudge.campaigns.creation.add_runs`) and records the changes of
:func:`~mtcjudge.campaigns.service.update_campaign` with :func:`planned_changes`; the routes,
the command line and the demo record a new campaign with :func:`record_campaign_created`.
How a campaign's events read is decided here; :mod:`mtcjudge.audit` only stores and lists
them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.ingest.formats import Runs
from mtcjudge.models import AuditEvent, Campaign

__all__ = [
    "AddRunsReport",
    "ImportReport",
    "planned_changes",
    "record_campaign_created",
    "record_campaign_update",
    "run_order_detail",
]

_SHOWN_TEXT = 60  # a changed name is shown up to this length in the detail


@dataclass(frozen=True)
class ImportReport:
    """What :func:`mtcjudge.campaigns.creation.create_campaign` stored, and what it could not use.

    ``n_pool_pairs`` counts the distinct (query, document) pairs in the top ``k`` of the runs
    after the MIREX filtering (the query itself and same-artist clips), i.e. what the engine
    will ask assessors about. ``audio_missing`` and ``audio_unreadable`` concern the documents
    of the runs and the queries; without an audio directory nothing is scanned.
    ``n_judgments_ignored`` counts judged pairs whose query or document is not in the runs.
    ``n_unplayable_pairs`` counts pool pairs that will not be handed out because a clip has
    no readable audio.
    """

    slug: str
    n_systems: int
    n_queries: int
    n_documents: int
    n_results: int
    n_pool_pairs: int
    n_judgments: int
    audio_found: int
    audio_missing: list[str]
    audio_unreadable: list[tuple[str, str]]
    audio_notes: list[str] = field(default_factory=list)
    n_judgments_ignored: int = 0
    n_unplayable_pairs: int = 0

    def summary(self) -> str:
        """What the campaign holds, in a few words (the audit log's line after its status)."""
        detail = (
            f"{self.n_systems} systems × {self.n_queries} queries, {self.n_pool_pairs} pool pairs"
        )
        if self.n_judgments:
            detail += f", {self.n_judgments} imported judgments"
        if self.n_unplayable_pairs:
            detail += f", {self.n_unplayable_pairs} pairs without playable audio"
        return detail


def run_order_detail(order_by: str, conflicts: int) -> str:
    """How the lists of the runs were ordered, when it matters (the audit log's words, after
    a comma): by score, or by rank while some lists' scores order them otherwise."""
    if order_by == "score":
        return ", lists ordered by score as trec_eval orders them" + (
            f" ({conflicts} differ from their rank column)" if conflicts else ""
        )
    if conflicts:
        return f", lists in rank order ({conflicts} whose scores order them otherwise)"
    return ""


@dataclass(frozen=True)
class AddRunsReport:
    """What :func:`mtcjudge.campaigns.creation.add_runs` stored.

    ``pool_pairs_before`` and ``pool_pairs`` count the stored pool before and after;
    ``new_pairs_judged`` counts the new pool pairs that were judged already (imported
    judgments outside the old pool). ``judgments_kept`` is every judgment row of the
    campaign, none of which changes. ``stop_reason_before`` / ``stop_reason`` are whether
    judging could stop (``None``: it goes on) before and after, as the judging pages read it;
    ``system_pairs_settled`` of ``system_pairs`` after. ``order_by`` says how the lists of
    TREC runs were ordered (``rank``: the rank column; ``score``: as trec_eval orders them)
    and ``n_score_conflicts`` how many lists' scores order them otherwise than their ranks.
    """

    slug: str
    systems: list[str]
    n_results: int
    n_new_documents: int
    pool_pairs_before: int
    pool_pairs: int
    new_pairs_judged: int
    judgments_kept: int
    ranking_confidence: float
    system_pairs: int
    system_pairs_settled: int
    stop_reason_before: str | None
    stop_reason: str | None
    audio_found: int = 0
    audio_missing: list[str] = field(default_factory=list)
    n_unplayable_new_pairs: int = 0
    order_by: str = "rank"
    n_score_conflicts: int = 0

    @property
    def new_pairs(self) -> int:
        return self.pool_pairs - self.pool_pairs_before

    def summary(self) -> str:
        """One line for the audit log."""
        names = ", ".join(self.systems[:5]) + (", ..." if len(self.systems) > 5 else "")
        return (
            f"{len(self.systems)} system(s) added ({names}); pool {self.pool_pairs_before} → "
            f"{self.pool_pairs} pairs ({self.new_pairs_judged} of the new ones judged already); "
            f"judging {'can stop' if self.stop_reason else 'goes on'}"
            + run_order_detail(self.order_by, self.n_score_conflicts)
        )


def record_campaign_created(
    session: Session,
    campaign: Campaign,
    actor: audit.Actor,
    report: ImportReport,
    runs: Runs | None = None,
) -> AuditEvent:
    """Record a new campaign: its status and what it holds, in a few words; with ``runs``,
    how their lists were ordered when it matters."""
    detail = f"{campaign.status}; {report.summary()}"
    if runs is not None:
        detail += run_order_detail(runs.order_by, len(runs.score_conflicts))
    return audit.record(session, campaign.id, actor, audit.CAMPAIGN_CREATED, detail)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        text = value if len(value) <= _SHOWN_TEXT else value[: _SHOWN_TEXT - 1] + "…"
        return repr(text)
    return str(value)


def planned_changes(campaign: Campaign, changes: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The events an update of ``campaign`` to ``changes`` makes, as (action, detail): read
    before the update is applied, recorded once it succeeded."""
    planned: list[tuple[str, str]] = []
    settings: list[str] = []
    for name, new in changes.items():
        old = getattr(campaign, name)
        if old == new:
            continue
        if name == "status":
            planned.append((audit.STATUS_CHANGED, f"{old} → {new}"))
        elif name == "description":
            settings.append("description changed")
        else:
            settings.append(f"{name.replace('_', ' ')} {_shown(old)} → {_shown(new)}")
    if settings:
        planned.append((audit.SETTINGS_CHANGED, ", ".join(settings)))
    return planned


def record_campaign_update(
    session: Session, campaign_id: int, actor: audit.Actor, planned: list[tuple[str, str]]
) -> None:
    """Record the events of :func:`planned_changes` (nothing when nothing changed)."""
    for action, detail in planned:
        audit.record(session, campaign_id, actor, action, detail)
