"""Request and response bodies of the organizer API (the engine and services never see them).

The integer settings carry their ranges (:data:`~mtcjudge.campaigns.limits.INT_SETTINGS`): the
OpenAPI schema documents them, and a value outside is a 422 like any other malformed payload
(wrong types, unknown or missing fields). The other checks of
:class:`~mtcjudge.campaigns.spec.CampaignSpec` (choices, the slug's form, the target, texts)
and those of the files are a 400 ``invalid_input`` like any other domain error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, fields
from typing import Annotated, Any, Literal, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)
from pydantic.dataclasses import dataclass
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from mtcjudge.assessors.actions import BringBackReport, PauseReport, SetAsideReport
from mtcjudge.assessors.overview import AssessorOverview
from mtcjudge.assessors.reliability import ReliabilityView
from mtcjudge.campaigns.changes import ImportReport
from mtcjudge.campaigns.limits import FLOAT_SETTING_HELP, FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.campaigns.preview import Problem
from mtcjudge.campaigns.repository import CampaignCounts
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.ingest.formats import Runs
from mtcjudge.models import Campaign
from mtcjudge.schemas import CleanText, UtcDateTime, domain_schema

__all__ = [
    "CLIP_OFFSETS_HELP",
    "ORDER_BY_HELP",
    "AssessorCreate",
    "AssessorInvited",
    "AssessorOverviewOut",
    "AudioProblem",
    "BringBackOut",
    "CampaignCountsOut",
    "CampaignCreate",
    "CampaignCreated",
    "CampaignDetail",
    "CampaignOut",
    "CampaignUpdate",
    "ImportReportOut",
    "InputWarningOut",
    "PauseIn",
    "PauseOut",
    "ReliabilityOut",
    "SetAsideOut",
    "warnings_field",
]


def _int_setting(name: str, default: int | None) -> Any:
    minimum, maximum = INT_SETTINGS[name]
    return Field(default, ge=minimum, le=maximum)


def _float_setting(name: str, default: float | None) -> Any:
    minimum, maximum = FLOAT_SETTINGS[name]
    return Field(
        default, ge=minimum, le=maximum, allow_inf_nan=False, description=FLOAT_SETTING_HELP[name]
    )


_AUTO_PAUSE = "pause an assessor automatically, with a kind message, when they fail quality trials"
_CONFIRM_UNPLAYABLE = (
    "open (or create open) a campaign some of whose pool pairs cannot be played (a clip is "
    "missing or unreadable): without it the request is refused with 409 unplayable_pairs"
)


#: the ``order_by`` field of the requests that import runs
ORDER_BY_HELP = (
    "how the lists of TREC runs are ordered: rank (the rank column, as written) or score "
    "(decreasing score, ties by decreasing docno: the order trec_eval, ir_measures and "
    "pytrec_eval use, ignoring the rank column). Lists whose scores contradict their ranks "
    "are in the answer's warnings either way. TSV runs have no scores"
)


#: the ``clip_offsets`` field of the requests that create a campaign
CLIP_OFFSETS_HELP = (
    "with clip_cut offsets (and no other cut): where each document's excerpt starts, in "
    'seconds from the start of its file (docs/audio.md, "Excerpts"); the documents it does '
    "not name start as excerpts do. An entry naming no document or query of the runs, a start "
    "that is not a number from 0, or one at or past the end of its file is a 400 naming it"
)
#: the starts by document: each is checked (a 400 naming the entry), not coerced
_STARTS_BY_DOCUMENT = Annotated[
    dict[str, Any],
    WithJsonSchema(
        {
            "type": "object",
            "additionalProperties": {"type": "number", "minimum": 0},
            "description": "start in seconds by document id",
        }
    ),
]


@dataclass(frozen=True, kw_only=True, config=ConfigDict(extra="forbid"))
class CampaignCreate(CampaignSpec):
    """The settings of :class:`CampaignSpec` and the files, as texts."""

    k: int = _int_setting("k", CampaignSpec.k)
    lease_minutes: int = _int_setting("lease_minutes", CampaignSpec.lease_minutes)
    judgments_per_pair: int = _int_setting("judgments_per_pair", CampaignSpec.judgments_per_pair)
    seed: int = _int_setting("seed", CampaignSpec.seed)
    listen_seconds: float = _float_setting("listen_seconds", CampaignSpec.listen_seconds)
    quality_rate: float = _float_setting("quality_rate", CampaignSpec.quality_rate)
    auto_pause: bool = Field(default=False, description=_AUTO_PAUSE)
    confirm_unplayable: bool = Field(default=False, description=_CONFIRM_UNPLAYABLE)

    runs: str = Field(description="TREC run or TSV system<TAB>query<TAB>doc text")
    metadata: str | None = Field(default=None, description="TSV doc<TAB>artist<TAB>genre text")
    judgments: str | None = Field(
        default=None,
        description="judgments on the campaign's scale (qrels or TSV query<TAB>doc<TAB>score)",
    )
    judgments_fine: str | None = Field(default=None, description="FINE judgments (0..100)")
    judgments_broad: str | None = Field(default=None, description="BROAD judgments (0, 1, 2)")
    audio_dir: CleanText | None = Field(
        default=None, description="directory of <doc_id>.<ext> clips on the server"
    )
    audio_upload: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{43}$",
        description="token of a complete audio upload (POST /api/audio-uploads), instead of "
        "audio_dir",
    )
    teams: dict[str, str] | None = Field(default=None, description="system -> team")
    order_by: Literal["rank", "score"] = Field(default="rank", description=ORDER_BY_HELP)
    clip_offsets: _STARTS_BY_DOCUMENT | str | None = Field(
        default=None,
        description=CLIP_OFFSETS_HELP + ". An object {doc: start_seconds}, or the text of an "
        "offsets file (TSV doc<TAB>start_seconds, as the command line's --clip-offsets)",
    )

    def __post_init__(self) -> None:
        """Nothing: :meth:`spec` checks the settings, a 400 rather than a malformed body's 422."""

    def spec(self) -> CampaignSpec:
        """The settings; raises ``ValueError`` when one is out of range."""
        return CampaignSpec(**{f.name: getattr(self, f.name) for f in fields(CampaignSpec)})


class CampaignUpdate(BaseModel):
    """The settings that may change; only the fields sent are changed."""

    model_config = ConfigDict(extra="forbid")

    status: str | None = None
    keep_collecting: bool | None = None
    target: float | None = None
    lease_minutes: int | None = _int_setting("lease_minutes", None)
    judgments_per_pair: int | None = _int_setting("judgments_per_pair", None)
    listen_seconds: float | None = _float_setting("listen_seconds", None)
    quality_rate: float | None = _float_setting("quality_rate", None)
    auto_pause: bool | None = Field(default=None, description=_AUTO_PAUSE)
    name: str | None = None
    description: str | None = None
    confirm_unplayable: bool = Field(default=False, description=_CONFIRM_UNPLAYABLE)


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
    listen_seconds: float = Field(description=FLOAT_SETTING_HELP["listen_seconds"])
    quality_rate: float = Field(description=FLOAT_SETTING_HELP["quality_rate"])
    auto_pause: bool = Field(description=_AUTO_PAUSE)
    clip_cut: str = Field(
        description="how clips are cut from the files: whole, excerpt or offsets (docs/audio.md)"
    )
    excerpt_seconds: float = Field(description="length of an excerpt (s)")
    excerpt_start_fraction: float = Field(
        description="where an excerpt starts, as a share of the file"
    )
    collection_version: int = Field(
        description="how many times systems were added to the campaign (0: never)"
    )
    created_at: UtcDateTime
    updated_at: UtcDateTime


class AudioProblem(BaseModel):
    doc: str
    reason: str


@dataclass(
    frozen=True,
    config=domain_schema(
        n_unplayable_pairs="pool pairs never handed out: a clip's audio is missing or unreadable"
    ),
)
class ImportReportOut(ImportReport):
    """What the import stored, and what it could not use."""

    slug: Annotated[str, Field(exclude=True)]  # the campaign's, sent beside the report
    # objects in the answer where the domain has (doc, reason) pairs
    audio_unreadable: list[AudioProblem]  # type: ignore[assignment]

    @classmethod
    def of(cls, report: ImportReport) -> ImportReportOut:
        problems = [AudioProblem(doc=doc, reason=reason) for doc, reason in report.audio_unreadable]
        return cls(**{**asdict(report), "audio_unreadable": problems})

    # The answer keeps the order the API has always had, the counts before what the audio
    # scan found (the domain's order puts two counts with defaults last), and its documented
    # schema stays the fields' own rather than the reordering function's "any object".
    @model_serializer(mode="wrap")
    def _counts_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        answer = handler(self)
        return dict(sorted(answer.items(), key=lambda item: item[0].startswith("audio_")))

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        fields_only = {k: v for k, v in core_schema.items() if k != "serialization"}
        return handler(cast(CoreSchema, fields_only))


@dataclass(
    frozen=True,
    config=domain_schema(
        input="the request's field the file came in (runs)",
        file="the file's name as sent (null: the warning is about the whole input)",
        line="its 1-based line",
    ),
)
class InputWarningOut(Problem):
    """Something in the files that does not stop the import but changes what its numbers
    mean, where it is: the run lists whose scores contradict their ranks (a summary, the
    first ten lists by file and line, and how many more)."""


def warnings_field() -> Any:
    """The ``warnings`` of an answer to an import of runs."""
    return Field(
        default_factory=list,
        description="what in the files changes what the campaign's numbers mean: the run "
        "lists whose scores order them otherwise than their ranks (trec_eval, ir_measures and "
        "pytrec_eval order by score), by file and line",
    )


class CampaignCreated(CampaignOut):
    report: ImportReportOut
    order_by: Literal["rank", "score"] = Field(
        default="rank",
        description="how the lists of TREC runs were ordered: rank (the rank column) or score "
        "(decreasing score, ties by decreasing docno, as trec_eval orders them)",
    )
    warnings: list[InputWarningOut] = warnings_field()

    @classmethod
    def of(
        cls,
        campaign: Campaign,
        report: ImportReport,
        runs: Runs | None = None,
        warnings: Sequence[Problem] = (),
    ) -> CampaignCreated:
        base = CampaignOut.model_validate(campaign).model_dump()
        return cls(
            **base,
            report=ImportReportOut.of(report),
            order_by="score" if runs is not None and runs.order_by == "score" else "rank",
            warnings=[InputWarningOut(**asdict(w)) for w in warnings],
        )


@dataclass(frozen=True, config=domain_schema())
class CampaignCountsOut(CampaignCounts):
    """How many rows of each kind the campaign has."""


class CampaignDetail(CampaignOut):
    counts: CampaignCountsOut

    @classmethod
    def of(cls, campaign: Campaign, counts: CampaignCounts) -> CampaignDetail:
        base = CampaignOut.model_validate(campaign).model_dump()
        return cls(**base, counts=CampaignCountsOut(**asdict(counts)))


class AssessorCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    email: str | None = None


class AssessorInvited(BaseModel):
    id: int
    name: str
    token: str
    link: str


@dataclass(
    frozen=True,
    config=domain_schema(
        assessed="false: the planner has not assessed this assessor yet (flagged is then "
        "false, reasons and metrics empty)",
        flagged="the evidence says this assessor is unreliable; reasons say why",
        reasons="plain sentences for organizers",
        metrics="the figures behind the conclusion (failed_trials: flagged because of the "
        "hidden quality trials)",
        computed_at="when the planner concluded it (UTC)",
    ),
)
class ReliabilityOut(ReliabilityView):
    """What the planner last concluded about an assessor's reliability."""

    computed_at: UtcDateTime | None = None


@dataclass(
    frozen=True,
    config=domain_schema(
        pseudonym="A1, A2, … in the order assessors were invited (as the results and exports)",
        state="invited, consented or revoked (the link)",
        judgments="their pool judgments that count",
        set_aside_judgments="their pool judgments set aside (counted nowhere)",
        quality_trials="their answers to hidden quality trials",
        trials_by_kind="their answers to hidden quality trials by kind: reference, anchor, "
        "repeat and second (a second opinion on another assessor's pair), every kind listed",
        set_aside="their judgments are set aside and they are handed no pairs",
        paused="they are handed no pairs for now",
        pause_reason="what they are told (null: the default message)",
    ),
)
class AssessorOverviewOut(AssessorOverview):
    """An assessor as organizers see them."""

    set_aside_at: UtcDateTime | None
    paused_at: UtcDateTime | None
    reliability: ReliabilityOut

    @classmethod
    def of(cls, overview: AssessorOverview) -> AssessorOverviewOut:
        values = {f.name: getattr(overview, f.name) for f in fields(AssessorOverview)}
        values["reliability"] = ReliabilityOut(**asdict(overview.reliability))
        return cls(**values)


@dataclass(
    frozen=True,
    config=domain_schema(
        set_aside="judgments set aside now (their pairs are back in the pool)",
        already="judgments that were set aside before",
        lease_released="the pair they held went back to the pool",
    ),
)
class SetAsideOut(SetAsideReport):
    """What setting an assessor's judgments aside did."""


@dataclass(
    frozen=True,
    config=domain_schema(
        brought_back="judgments that count again",
        stayed_aside="judgments that stay aside: their pair was judged again meanwhile",
        reason="why they stay aside (null when none does)",
    ),
)
class BringBackOut(BringBackReport):
    """What bringing an assessor's judgments back did."""

    reason: str | None = None

    @classmethod
    def of(cls, report: BringBackReport) -> BringBackOut:
        return cls(**asdict(report), reason=report.reason)


class PauseIn(BaseModel):
    """An optional message for the paused assessor (else a kind default)."""

    model_config = ConfigDict(extra="forbid")

    message: str | None = Field(default=None, max_length=4000)


@dataclass(
    frozen=True,
    config=domain_schema(
        changed="false: the assessor was so already",
        message="what they are told (null: the default message)",
    ),
)
class PauseOut(PauseReport):
    """What pausing or resuming an assessor did."""
