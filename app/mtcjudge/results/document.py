"""A campaign's results document: what it holds, and its engine part the planner writes.

The document says where a campaign stands: judgments, the estimated ranking with each
system's interval, every system pair's difference, confidence and [U12] significance
verdict, the ranking confidence and its curve, the judgments still needed to reach the
target (and other targets), what each assessor is doing, and what the judging has cost and
will cost the volunteers in hours (``listening``). Nothing is re-derived by a
route or a command: they read it with :mod:`mtcjudge.results.read` and print or send
:func:`results_json`.

Where the numbers come from:

* the engine part (:class:`EngineResults`) of the campaign's own measure and scale is built
  by the campaign's planner from its live engine (:func:`engine_results`, called in
  :mod:`mtcjudge.planner.service`) and stored as JSON (:func:`stored_json`) in
  ``campaign_results`` with a version that grows with every new document; reading it is
  one indexed row (:func:`parse_stored`);
* another measure or scale (``?measure=dcg&scale=broad``) is computed on demand from an
  engine built from the database rows (:func:`mtcjudge.results.read.complete`);
* the curve (``trajectory_point``) and the assessors (judgment and lease rows) are read
  when the document is asked for: the assessors' leases change without new judgments;
* the listening section (:mod:`mtcjudge.campaign_engine.listening`) is stored by the planner
  beside the engine part; when the stored document has none (stored before it existed, or
  not planned yet) it is computed from the rows when the document is read, and its hours to
  each target are those of the document's projections (none for another measure or scale).

``unplayable_clips`` are the clips (external ids) whose missing or unreadable audio keeps
``pool_pairs - playable_pairs`` pairs from being judged.

Every count of judgments in the document is of judged pool pairs (a pair judged by two
assessors counts once), the unit the engine and the projection count in;
``judgment_rows`` counts the stored judgments (every assessor's and imported ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar

from mtcjudge.assessors.reliability import NOT_ASSESSED, ReliabilityView
from mtcjudge.campaign_engine.document import EngineResults, plain
from mtcjudge.campaign_engine.listening import ListeningSection

__all__ = [
    "AssessorSummary",
    "Results",
    "TrajectoryEntry",
    "results_json",
]


# ------------------------------------------------------------------ the document


@dataclass(frozen=True)
class TrajectoryEntry:
    """The ranking confidence and the system pairs settled after ``judgments`` judged pairs."""

    json_flat: ClassVar[bool] = True  # every field a plain JSON value

    judgments: int
    ranking_confidence: float
    settled: int


@dataclass(frozen=True)
class AssessorSummary:
    """One assessor, by pseudonym (A1, A2, ... in the order they were invited): judgments
    (every kind), median seconds from being handed a pair to judging it and median listening
    time (query and candidate) over their latest judgments, last activity (a pair handed
    out or a judgment, UTC), and the pair they hold now, if any."""

    pseudonym: str
    judged: int
    median_seconds_per_judgment: float | None
    median_listen_ms: float | None
    last_active: datetime | None
    live_lease: bool
    lease_expires_at: datetime | None
    revoked: bool
    # what organizers act on (:mod:`mtcjudge.assessors.actions`): the assessor's id for
    # the actions, their pool judgments counted and set aside, their hidden quality trials,
    # whether they are set aside or paused, and what the planner concluded about them
    id: int = 0
    counted_judgments: int = 0
    set_aside_judgments: int = 0
    quality_trials: int = 0
    # by kind (reference, anchor, repeat, second: every kind listed)
    trials_by_kind: dict[str, int] = field(default_factory=dict)
    set_aside: bool = False
    paused: bool = False
    pause_reason: str | None = None
    reliability: ReliabilityView = NOT_ASSESSED


@dataclass(frozen=True)
class _DocumentHead:
    """Whose document it is and when its engine part was computed: the fields the JSON
    starts with."""

    campaign: str
    status: str
    keep_collecting: bool
    version: int
    computed_at: datetime | None
    driving: bool


@dataclass(frozen=True)
class Results(EngineResults, _DocumentHead):
    """The results document (see the module docstring): the engine part with the campaign
    it is of, the stored judgments, the clips that cannot be played, the curve, the
    assessors and the volunteers' hours."""

    judgment_rows: int
    unplayable_clips: list[str]
    trajectory: list[TrajectoryEntry]
    assessors: list[AssessorSummary]
    listening: ListeningSection

    #: the document's own counts that stand beside the engine's in the JSON (the order the
    #: API has always sent): field -> the engine's field it follows
    _BESIDE: ClassVar[dict[str, str]] = {
        "judgment_rows": "judgments",
        "unplayable_clips": "playable_pairs",
    }

    @classmethod
    def json_order(cls) -> tuple[str, ...]:
        """The fields in the order of the JSON form (and of the API's schema of it): the
        dataclass's, each of :attr:`_BESIDE` moved after the field it follows."""
        order: list[str] = []
        for f in fields(cls):
            if f.name not in cls._BESIDE:
                order.append(f.name)
                order += [name for name, after in cls._BESIDE.items() if after == f.name]
        return tuple(order)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (times as ISO 8601 with their UTC offset)."""
        flat: dict[str, Any] = plain(self)
        return {name: flat[name] for name in _JSON_ORDER}


_JSON_ORDER = Results.json_order()


def results_json(results: Results) -> str:
    """The document as the API sends it and ``campaign status --json`` prints it."""
    return json.dumps(results.to_dict(), allow_nan=False)


# ------------------------------------------------------------------ from the engine
