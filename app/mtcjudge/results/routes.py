"""Organizer API of a campaign's results: the document, and its live stream (Server-Sent Events).

Both answer from :mod:`mtcjudge.results.read`; see docs/web-architecture.md, "Results".
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Annotated, Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic.dataclasses import dataclass

from mtcjudge.campaign_engine import document as engine_document
from mtcjudge.campaign_engine import listening as engine_listening
from mtcjudge.campaigns import service
from mtcjudge.campaigns.routes import CHECK_SLUG
from mtcjudge.deps import CurrentOrganizer, SettingsDep, still_signed_in, transaction
from mtcjudge.models import Campaign
from mtcjudge.results import document, read
from mtcjudge.results.events import ResultsFeeds
from mtcjudge.schemas import domain_schema, error_responses

__all__ = ["ResultsOut", "router"]


# ------------------------------------------------------------------ response schemas


@dataclass(frozen=True, config=domain_schema())
class SystemOut(engine_document.SystemResult):
    """A system's estimated score, its 95 % interval and its rank (1 = best)."""


@dataclass(frozen=True, config=domain_schema(verdict_rule="the [U12] rule (1-4) that decided"))
class PairOut(engine_document.PairResult):
    """A pair of systems (``a`` before ``b`` in name order): ``mean(a) - mean(b)``, the
    confidence in their order, and the [U12] significance verdict."""


@dataclass(frozen=True, config=domain_schema())
class TargetProjectionOut(engine_document.TargetProjection):
    """Further judged pairs needed to reach ``target``: median and 10th-90th percentile
    range over simulated continuations of the loop (null: most did not reach it)."""


@dataclass(frozen=True, config=domain_schema())
class DisagreementOut(engine_document.DisagreementInfo):
    """The assessor disagreement the confidence includes (docs/method.md §10)."""


@dataclass(frozen=True, config=domain_schema())
class ProjectionInfoOut(engine_document.ProjectionInfo):
    """When (at how many judged pairs) and how the projections were made."""


@dataclass(frozen=True, config=domain_schema())
class TrajectoryOut(document.TrajectoryEntry):
    """A point of the confidence curve."""


@dataclass(frozen=True, config=domain_schema())
class AssessorOut(document.AssessorSummary):
    """An assessor by pseudonym: progress, pace over their latest judgments, activity."""


@dataclass(frozen=True, config=domain_schema())
class AssessorHoursOut(engine_listening.AssessorHours):
    """One assessor's time so far (by id and pseudonym): judgments, hours, of which
    listening, and judgments part of whose time is the model's."""


@dataclass(frozen=True, config=domain_schema())
class TargetHoursOut(engine_listening.TargetHours):
    """Volunteers' hours still needed to reach ``target`` (median, and an interval at the
    section's level from the projection's 10th to 90th percentile and the model's error);
    null when not reached within the pool."""


@dataclass(
    frozen=True,
    config=domain_schema(
        level="the level of every interval of the section",
        defaults="what holds before anything is measured (docs/method.md §11)",
        parameters="the pooled model: shares of each clip heard, decision seconds",
        query_changes="the share of judgments that change query, measured and shrunk",
        spent="time judging took so far: every judgment assessors gave, set aside or not",
        pool="judging every pool pair once, each query heard once",
        targets="hours to each projected target (none for another measure or scale)",
    ),
)
class ListeningOut(engine_listening.ListeningSection):
    """What judging has cost the volunteers and what it will cost, in hours (docs/method.md
    §11)."""

    assessors: list[AssessorHoursOut]  # type: ignore[assignment]
    targets: list[TargetHoursOut]  # type: ignore[assignment]


@dataclass(
    frozen=True,
    config=domain_schema(
        document.Results.json_order(),
        version="grows with every document the planner stores; the events' id",
        computed_at="when the engine part was computed (UTC)",
        driving="this measure and scale are the ones the MTC loop runs on",
        judgments="judged pool pairs (a pair judged by several assessors counts once)",
        judgment_rows="stored judgments: every assessor's and the imported ones",
        playable_pairs="pool pairs whose clips can both be played",
        stop_reason="why judging can stop: confidence, absolute, complete; null: it goes on",
        system_pairs_settled="system pairs ordered with at least the target confidence",
        projected_judgments_to_target="the projection for the campaign's own target",
        trajectory="the ranking confidence as judgments came in (driving measure only)",
        listening="the volunteers' hours: spent so far, the whole pool, to each target",
    ),
)
class ResultsOut(document.Results):
    """Where a campaign stands, on one measure and scale."""

    projected_judgments_to_target: TargetProjectionOut | None
    projections: list[TargetProjectionOut]  # type: ignore[assignment]
    projection: ProjectionInfoOut | None
    systems: list[SystemOut]  # type: ignore[assignment]
    pairs: list[PairOut]  # type: ignore[assignment]
    assessor_disagreement: DisagreementOut
    trajectory: list[TrajectoryOut]  # type: ignore[assignment]
    assessors: list[AssessorOut]  # type: ignore[assignment]
    listening: ListeningOut


# ------------------------------------------------------------------ routes


@asynccontextmanager
async def _end_streams(app: FastAPI) -> AsyncIterator[None]:
    try:
        yield
    finally:
        feeds: ResultsFeeds | None = getattr(app.state, "results_feeds", None)
        if feeds is not None:
            await feeds.close()


#: seconds between checks that an event stream's organizer is still signed in
RECHECK_SECONDS = 10.0

router = APIRouter(
    prefix="/api/campaigns",
    tags=["organizer"],
    responses=error_responses(401, 404, 422, 503),
    dependencies=[CHECK_SLUG],
    lifespan=_end_streams,
)

#: engines built on demand (another measure or scale): one at a time per process, on a
#: thread that is not one of the request threads' tokens
_ENGINE_BUILDS = anyio.CapacityLimiter(1)

MeasureParam = Annotated[
    Literal["cg", "dcg", "ndcg", "rbp"] | None,
    Query(
        description="measure to rank by (default: the campaign's): cg = CG@k; dcg = MIREX "
        "nDCG@k, normalised by an all-maximum list (the 2012/2013 papers); ndcg = "
        "trec_eval/ir_measures nDCG@k, normalised by the ideal ordering of the pool; rbp = "
        "RBP (p = 0.8) normalised by the ideal ordering"
    ),
]
ScaleParam = Annotated[
    Literal["broad", "fine"] | None,
    Query(description="judgment scale (default: the campaign's)"),
]


@router.get("/{slug}/results", response_model=ResultsOut, responses=error_responses(400))
async def campaign_results(
    slug: str,
    request: Request,
    _organizer: CurrentOrganizer,
    measure: MeasureParam = None,
    scale: ScaleParam = None,
) -> Response:
    """The campaign's results: the planner's stored document on the campaign's own measure
    and scale (one row read), or one computed on demand from the database rows on another
    (cached by this process until the judgments change)."""
    snapshot = await transaction(
        request, partial(read.read_snapshot, slug=slug, measure=measure, scale=scale)
    )
    loader = read.rows_loader(request.app.state.session_factory)

    def text_of_document() -> str:
        return document.results_json(read.complete(snapshot, loader))

    if snapshot.needs_engine:
        text = await anyio.to_thread.run_sync(text_of_document, limiter=_ENGINE_BUILDS)
    else:
        text = await anyio.to_thread.run_sync(text_of_document)
    # the text is the document's JSON form already: no second validation and serialisation
    return Response(text, media_type="application/json")


async def _followed_campaign(slug: str, request: Request, _organizer: CurrentOrganizer) -> Campaign:
    """The campaign to follow, found before the stream starts (a 404 is still possible)."""
    return await transaction(request, partial(service.get_campaign, slug=slug))


def _feeds(request: Request) -> ResultsFeeds:
    state = request.app.state
    feeds: ResultsFeeds | None = getattr(state, "results_feeds", None)
    if feeds is None:
        feeds = state.results_feeds = ResultsFeeds(state.session_factory)
    return feeds


def _json_errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """:func:`error_responses` of a route whose success is not JSON: its errors still are
    (FastAPI would document them in the route's own media type)."""
    responses = error_responses(*statuses)
    for response in responses.values():
        del response["model"]
        response["content"] = {
            "application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}
        }
    return responses


@router.get(
    "/{slug}/events",
    response_class=EventSourceResponse,
    responses=_json_errors(401, 404, 422, 503),
)
async def campaign_events(
    request: Request,
    settings: SettingsDep,
    campaign: Annotated[Campaign, Depends(_followed_campaign)],
    last_event_id: Annotated[
        str | None,
        Header(description="the version the client has (sent by browsers on reconnection)"),
    ] = None,
) -> AsyncIterator[ServerSentEvent]:
    """Server-Sent Events: a ``results`` event (data: the document of ``GET .../results``,
    id: its version) at once, then after every change, and a keep-alive comment every 15 s.

    The latest document comes at once unless ``Last-Event-ID`` names its version."""
    last_version = int(last_event_id) if last_event_id and last_event_id.isdigit() else None
    checked = time.monotonic()
    async for event in _feeds(request).follow(campaign, last_version=last_version):
        # a stream outlives its request's check: after signing out (or the account being
        # disabled) it sends nothing more, within RECHECK_SECONDS
        if time.monotonic() - checked > RECHECK_SECONDS:
            if not await still_signed_in(request, settings):
                return
            checked = time.monotonic()
        yield ServerSentEvent(
            raw_data=event.document, event="results", id=str(event.version), retry=2000
        )
