"""Request and response bodies of the organizer API (the engine and services never see them).

The integer settings carry their ranges (:data:`~app.campaigns.limits.INT_SETTINGS`): the
OpenAPI schema documents them, and a value outside is a 422 like any other malformed payload
(wrong types, unknown or missing fields). The other checks of
:class:`~app.campaigns.service.CampaignSpec` (choices, the slug's form, the target, texts)
and those of the files are a 400 ``invalid_input`` like any other domain error.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.campaigns.limits import INT_SETTINGS
from app.campaigns.repository import CampaignCounts
from app.campaigns.service import CampaignSpec, ImportReport
from app.models import Campaign
from app.schemas import CleanText, UtcDateTime

__all__ = [
    "AssessorCreate",
    "AssessorInvited",
    "AudioProblem",
    "CampaignCountsOut",
    "CampaignCreate",
    "CampaignCreated",
    "CampaignDetail",
    "CampaignOut",
    "CampaignUpdate",
    "ImportReportOut",
]


def _int_setting(name: str, default: int | None) -> Any:
    minimum, maximum = INT_SETTINGS[name]
    return Field(default, ge=minimum, le=maximum)


class CampaignCreate(BaseModel):
    """The settings of :class:`CampaignSpec` and the files, as texts."""

    model_config = ConfigDict(extra="forbid")

    name: str
    slug: str | None = None
    description: str = CampaignSpec.description
    scale: str = CampaignSpec.scale
    k: int = _int_setting("k", CampaignSpec.k)
    measure: str = CampaignSpec.measure
    estimator: str = CampaignSpec.estimator
    policy: str = CampaignSpec.policy
    target: float = CampaignSpec.target
    lease_minutes: int = _int_setting("lease_minutes", CampaignSpec.lease_minutes)
    judgments_per_pair: int = _int_setting("judgments_per_pair", CampaignSpec.judgments_per_pair)
    seed: int = _int_setting("seed", CampaignSpec.seed)
    keep_collecting: bool = CampaignSpec.keep_collecting
    status: str = CampaignSpec.status

    runs: str = Field(description="TREC run or TSV system<TAB>query<TAB>doc text")
    metadata: str | None = Field(None, description="TSV doc<TAB>artist<TAB>genre text")
    judgments: str | None = Field(
        None, description="judgments on the campaign's scale (qrels or TSV query<TAB>doc<TAB>score)"
    )
    judgments_fine: str | None = Field(None, description="FINE judgments (0..100)")
    judgments_broad: str | None = Field(None, description="BROAD judgments (0, 1, 2)")
    audio_dir: CleanText | None = Field(
        None, description="directory of <doc_id>.<ext> clips on the server"
    )
    teams: dict[str, str] | None = Field(None, description="system -> team")

    def spec(self) -> CampaignSpec:
        """The settings; raises ``ValueError`` when one is out of range."""
        return CampaignSpec(**self.model_dump(include=_SPEC_FIELDS))


_SPEC_FIELDS = {
    "name",
    "slug",
    "description",
    "scale",
    "k",
    "measure",
    "estimator",
    "policy",
    "target",
    "lease_minutes",
    "judgments_per_pair",
    "seed",
    "keep_collecting",
    "status",
}


class CampaignUpdate(BaseModel):
    """The settings that may change; only the fields sent are changed."""

    model_config = ConfigDict(extra="forbid")

    status: str | None = None
    keep_collecting: bool | None = None
    target: float | None = None
    lease_minutes: int | None = _int_setting("lease_minutes", None)
    judgments_per_pair: int | None = _int_setting("judgments_per_pair", None)
    name: str | None = None
    description: str | None = None


class CampaignOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    slug: str
    name: str
    description: str
    status: str
    scale: str
    k: int
    measure: str
    estimator: str
    policy: str
    target: float
    lease_minutes: int
    judgments_per_pair: int
    seed: int
    keep_collecting: bool
    created_at: UtcDateTime
    updated_at: UtcDateTime


class AudioProblem(BaseModel):
    doc: str
    reason: str


class ImportReportOut(BaseModel):
    n_systems: int
    n_queries: int
    n_documents: int
    n_results: int
    n_pool_pairs: int
    n_judgments: int
    n_judgments_ignored: int
    n_unplayable_pairs: int = Field(
        description="pool pairs never handed out: a clip's audio is missing or unreadable"
    )
    audio_found: int
    audio_missing: list[str]
    audio_unreadable: list[AudioProblem]
    audio_notes: list[str]

    @classmethod
    def of(cls, report: ImportReport) -> ImportReportOut:
        return cls(
            n_systems=report.n_systems,
            n_queries=report.n_queries,
            n_documents=report.n_documents,
            n_results=report.n_results,
            n_pool_pairs=report.n_pool_pairs,
            n_judgments=report.n_judgments,
            n_judgments_ignored=report.n_judgments_ignored,
            n_unplayable_pairs=report.n_unplayable_pairs,
            audio_found=report.audio_found,
            audio_missing=report.audio_missing,
            audio_unreadable=[
                AudioProblem(doc=doc, reason=reason) for doc, reason in report.audio_unreadable
            ],
            audio_notes=report.audio_notes,
        )


class CampaignCreated(CampaignOut):
    report: ImportReportOut

    @classmethod
    def of(cls, campaign: Campaign, report: ImportReport) -> CampaignCreated:
        base = CampaignOut.model_validate(campaign).model_dump()
        return cls(**base, report=ImportReportOut.of(report))


class CampaignCountsOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    systems: int
    queries: int
    documents: int
    results: int
    assessors: int
    judgments: int
    imported_judgments: int


class CampaignDetail(CampaignOut):
    counts: CampaignCountsOut

    @classmethod
    def of(cls, campaign: Campaign, counts: CampaignCounts) -> CampaignDetail:
        base = CampaignOut.model_validate(campaign).model_dump()
        return cls(**base, counts=CampaignCountsOut.model_validate(counts))


class AssessorCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    email: str | None = None


class AssessorInvited(BaseModel):
    id: int
    name: str
    token: str
    link: str
