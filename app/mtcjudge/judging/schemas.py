"""Pydantic schemas of the assessor API. Blind by construction: no ids of documents or systems."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from pydantic.dataclasses import dataclass

from mtcjudge.judging.service import Progress
from mtcjudge.schemas import CleanText, domain_schema
from mtcjudge.validation import INT32_MAX

__all__ = [
    "ClipOut",
    "JudgmentIn",
    "JudgmentOut",
    "JudgmentResponse",
    "NextOut",
    "PairOut",
    "ProgressOut",
    "RevisionIn",
]


class ClipOut(BaseModel):
    audio_url: str | None = Field(
        description=(
            "the clip: a query's URL is the same for every pair of the query (fetched once), a "
            "candidate's names the lease; neither names the clip's document"
        )
    )
    duration_seconds: float | None
    audio_type: str | None = Field(description="always audio/mpeg: every clip is served as MP3")
    loudness_lufs: float | None = Field(
        default=None,
        description="integrated loudness of the clip (ITU-R BS.1770, LUFS), measured at import",
    )
    peaks: list[int] | None = Field(
        default=None,
        description="600 waveform peaks of the clip, 0-255 each (255 = full scale)",
    )


class PairOut(BaseModel):
    query_number: int = Field(description="the query's number in the campaign, from 1")
    candidate_number: int = Field(description="the candidate's number for this query, from 1")
    lease_id: int
    expires_at: datetime
    query: ClipOut
    candidate: ClipOut
    same_query_as_previous: bool
    listen_seconds: float = Field(
        description=(
            "the listening rule: play each clip for at least this many seconds, or to its "
            "end when shorter, before scoring (0: no rule)"
        )
    )


@dataclass(
    frozen=True,
    config=domain_schema(
        assessor_judged="judgments of this assessor",
        campaign_judged="pairs of the campaign judged so far",
        campaign_pairs="pairs that can be judged (both clips playable)",
        system_pairs="pairs of systems to order",
        system_pairs_settled=(
            "system pairs whose order is known with the campaign's target confidence"
        ),
    ),
)
class ProgressOut(Progress):
    """What a volunteer is shown: counts that only grow as they judge."""


class NextOut(BaseModel):
    status: str = Field(description="'pair', 'done' (thank you) or 'wait'")
    pair: PairOut | None
    progress: ProgressOut
    message: str = ""


class JudgmentIn(BaseModel):
    lease_id: int = Field(ge=1, le=INT32_MAX)
    # the scores' ranges are the service's (400 with a clear message); 422 is for malformed
    # bodies, including values the database cannot hold
    broad: int = Field(description="0 (not similar), 1 (somewhat similar), 2 (very similar)")
    fine: float = Field(description="0 (not similar at all) to 100 (very similar)")
    client_id: CleanText = Field(min_length=1, max_length=64)
    query_listen_ms: int | None = Field(default=None, ge=0, le=INT32_MAX)
    candidate_listen_ms: int | None = Field(default=None, ge=0, le=INT32_MAX)


class RevisionIn(BaseModel):
    broad: int
    fine: float


class JudgmentOut(BaseModel):
    query_number: int = Field(description="the query's number in the campaign, from 1")
    candidate_number: int = Field(description="the candidate's number for this query, from 1")
    id: int
    broad: int | None
    fine: float | None
    created_at: datetime
    revision: int
    query: ClipOut
    candidate: ClipOut


class JudgmentResponse(BaseModel):
    judgment: JudgmentOut
    progress: ProgressOut
