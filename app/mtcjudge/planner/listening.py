"""The volunteers' listening time as the campaign's planner keeps it (docs/method.md §11).

At most every :data:`LISTENING_SECONDS`, and only when the campaign's judgments (or the
settings the figures depend on) changed since, the planner reads the assessors' judgments
again in its read transaction and fits the listening-time model once the transaction is over
(:mod:`mtcjudge.campaign_engine.listening`); each document it writes then carries the section
built from those facts and the latest projection.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from mtcjudge.campaign_engine import repository as engine_repository
from mtcjudge.campaign_engine.build import settings_key
from mtcjudge.campaign_engine.listening import (
    ListeningFacts,
    ListeningInput,
    ListeningSection,
    Projected,
    listening_facts,
    listening_section,
    read_listening,
)
from mtcjudge.models import Campaign

__all__ = ["LISTENING_SECONDS", "ListeningWatch"]

#: the listening time is computed again at most this often while judgments come in
LISTENING_SECONDS = 5.0


@dataclass
class ListeningWatch:
    """The facts last computed for one campaign, what they were computed on, and when the
    planner last looked."""

    facts: ListeningFacts | None = None
    key: tuple[int, datetime | None, float, int, float, str] | None = None
    checked_at: float = -math.inf

    def read(self, session: Session, campaign: Campaign, every: float) -> ListeningInput | None:
        """The rows to compute the facts from again, when it is time to look (at once when
        there are no facts yet) and the judgments or the settings changed; None otherwise."""
        if self.facts is not None and time.monotonic() - self.checked_at < every:
            return None
        self.checked_at = time.monotonic()
        count, changed_at = engine_repository.judgment_rows(session, campaign.id)
        key = (
            count,
            changed_at,
            float(campaign.listen_seconds),
            int(campaign.judgments_per_pair),
            float(campaign.quality_rate),
            settings_key(campaign),  # the pool: systems added
        )
        if self.facts is not None and key == self.key:
            return None
        self.key = key
        return read_listening(session, campaign)

    def take(self, rows: ListeningInput) -> None:
        """Fit the model to the rows :meth:`read` returned (no database)."""
        self.facts = listening_facts(rows)

    def section(self, projections: Sequence[Projected]) -> ListeningSection | None:
        """The document's section, with the hours to each projected target."""
        return None if self.facts is None else listening_section(self.facts, projections)
