"""Organizer JSON API: create campaigns from run files (or preview them first), list them,
change them, invite, revoke and relink assessors."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, status
from fastapi import Path as PathParameter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass as pydantic_dataclass

from mtcjudge import audit
from mtcjudge.assessors import actions as assessor_actions
from mtcjudge.assessors import overview as overview
from mtcjudge.campaigns import audio_upload, creation, repository, service
from mtcjudge.campaigns import preview as previews
from mtcjudge.campaigns.changes import record_campaign_created
from mtcjudge.campaigns.limits import FLOAT_SETTING_HELP, FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.campaigns.schemas import (
    CLIP_OFFSETS_HELP,
    ORDER_BY_HELP,
    AssessorCreate,
    AssessorInvited,
    AssessorOverviewOut,
    BringBackOut,
    CampaignCreate,
    CampaignCreated,
    CampaignDetail,
    CampaignOut,
    CampaignUpdate,
    PauseIn,
    PauseOut,
    SetAsideOut,
)
from mtcjudge.campaigns.spec import SLUG_MAX, SLUG_PATTERN, CampaignSpec
from mtcjudge.clips.cut import MAX_EXCERPT_SECONDS, MIN_EXCERPT_SECONDS
from mtcjudge.deps import CurrentOrganizer, SessionDep, SettingsDep
from mtcjudge.errors import InvalidInput, NotFound
from mtcjudge.ingest.formats import (
    ClipOffsets,
    InputError,
    Judgments,
    Metadata,
    Runs,
    read_clip_offsets,
    read_judgments,
    read_metadata,
    read_runs,
)
from mtcjudge.models import Assessor, Campaign
from mtcjudge.schemas import CleanText, ErrorOut, UtcDateTime, error_responses
from mtcjudge.validation import INT32_MAX

__all__ = ["CampaignUpload", "PreviewOut", "router"]

_Parsed = TypeVar("_Parsed")

# every route is the organizer's (CurrentOrganizer: the bearer token, or a signed-in session
# and its CSRF token on changes); every change is recorded in the audit log
router = APIRouter(
    prefix="/api/campaigns", tags=["organizer"], responses=error_responses(401, 403, 422, 503)
)


def _slug(
    slug: Annotated[str, PathParameter(pattern=SLUG_PATTERN, max_length=SLUG_MAX)],
) -> None:
    """A slug no campaign can have is a 404 (see ``mtcjudge.main``), without a query."""


CHECK_SLUG = Depends(_slug)
_CHANGE_ERRORS = error_responses(400, 404, 413)


@router.post("", status_code=status.HTTP_201_CREATED, responses=error_responses(400, 409, 413))
def create_campaign(
    body: CampaignCreate, session: SessionDep, organizer: CurrentOrganizer
) -> CampaignCreated:
    """Create a campaign from run (and metadata, judgments) texts and an audio folder on the
    server. ``report.n_unplayable_pairs`` counts the pool pairs that cannot be played (a clip
    without readable audio; every pair without audio): they are never handed out. Created
    open with such pairs needs ``confirm_unplayable`` (else 409 ``unplayable_pairs``).
    ``warnings`` name the run lists whose scores contradict their ranks (``order_by``
    decides which order counts). With ``clip_cut`` ``offsets``, ``clip_offsets`` gives each
    document's start (an object of seconds by document, or the text of an offsets file); an
    entry naming no document or query of the runs, or starting at or past its file's end,
    is a 400 naming it."""
    try:
        spec = body.spec()
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    runs, metadata, fine, broad = _read_texts(body)
    offsets = _offsets(body.clip_offsets)
    warnings = previews.score_order_problems(runs)
    audio_dir = Path(body.audio_dir) if body.audio_dir else None
    try:
        campaign, report = creation.create_campaign(
            session,
            spec,
            runs,
            metadata,
            fine,
            broad,
            audio_dir,
            body.teams,
            confirm_unplayable=body.confirm_unplayable,
            clip_offsets=offsets,
            audio_upload=body.audio_upload,
        )
    except InputError as exc:  # an offsets entry the runs or the files contradict
        raise _named(exc, _OFFSETS) from exc
    except ValueError as exc:  # the collection cannot be built (one system); nothing is kept
        raise InvalidInput(f"runs: {exc}") from exc
    record_campaign_created(session, campaign, organizer.actor, report, runs)
    return CampaignCreated.of(campaign, report, runs, warnings)


@router.get("")
def list_campaigns(session: SessionDep, _organizer: CurrentOrganizer) -> list[CampaignOut]:
    return [CampaignOut.model_validate(c) for c in service.list_campaigns(session)]


@router.get("/{slug}", dependencies=[CHECK_SLUG], responses=error_responses(404))
def get_campaign(slug: str, session: SessionDep, _organizer: CurrentOrganizer) -> CampaignDetail:
    campaign = service.get_campaign(session, slug)
    return CampaignDetail.of(campaign, repository.campaign_counts(session, campaign.id))


@router.patch("/{slug}", dependencies=[CHECK_SLUG], responses=error_responses(400, 404, 409, 413))
def update_campaign(
    slug: str, body: CampaignUpdate, session: SessionDep, organizer: CurrentOrganizer
) -> CampaignDetail:
    """Change the settings sent. Opening a campaign (``"status": "open"``) some of whose pool
    pairs cannot be played (a clip is missing or unreadable) is refused with 409
    ``unplayable_pairs``, which says which, unless ``confirm_unplayable`` is true."""
    campaign = service.get_campaign(session, slug)
    changes = body.model_dump(exclude_unset=True)
    confirm = bool(changes.pop("confirm_unplayable", False))
    service.update_campaign(
        session, campaign, organizer.actor, confirm_unplayable=confirm, **changes
    )
    return CampaignDetail.of(campaign, repository.campaign_counts(session, campaign.id))


@router.post(
    "/{slug}/assessors",
    status_code=status.HTTP_201_CREATED,
    dependencies=[CHECK_SLUG],
    responses=_CHANGE_ERRORS,
)
def invite_assessor(
    slug: str,
    body: AssessorCreate,
    session: SessionDep,
    settings: SettingsDep,
    organizer: CurrentOrganizer,
) -> AssessorInvited:
    campaign = service.get_campaign(session, slug)
    assessor, token = service.invite_assessor(session, campaign, body.name, body.email)
    audit.record(session, campaign.id, organizer.actor, audit.ASSESSOR_INVITED, assessor.name)
    return AssessorInvited(
        id=assessor.id,
        name=assessor.name,
        token=token,
        link=service.assessor_link(settings, token),
    )


_OFFSETS = "clip_offsets"


def _named(exc: InputError, field: str, path: str | None = None) -> InvalidInput:
    """A problem of the request's ``field`` (the temporary file ``path`` it was read from
    means nothing to the client: the field is named instead), with its line."""
    message = exc.message if path is None else exc.message.replace(path, field)
    where = field if exc.line is None else f"{field}: line {exc.line}"
    return InvalidInput(f"{where}: {message}")


def _offsets(sent: dict[str, Any] | str | None) -> ClipOffsets | None:
    """The clip offsets of ``POST /api/campaigns``: an object of starts by document, or the
    text of an offsets file (read as the command line reads the file)."""
    if sent is None:
        return None
    if not isinstance(sent, str):
        try:
            return ClipOffsets.of_object(sent, _OFFSETS)
        except InputError as exc:
            raise _named(exc, _OFFSETS) from exc
    return replace(_read_text(_OFFSETS, sent, read_clip_offsets), path=_OFFSETS)


def _read_text(field: str, text: str, reader: Callable[[str], _Parsed]) -> _Parsed:
    """The request's ``field`` read with the file reader ``reader`` (from a temporary file),
    naming the field in every error."""
    with tempfile.TemporaryDirectory(prefix="mtcjudge-import-") as directory:
        path = os.path.join(directory, field)
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        try:
            return reader(path)
        except InputError as exc:
            raise _named(exc, field, path) from exc


def _read_texts(
    body: CampaignCreate,
) -> tuple[Runs, Metadata | None, Judgments | None, Judgments | None]:
    """Parse the uploaded texts with the file readers, naming the field in every error."""
    fine_field, fine_text = "judgments_fine", body.judgments_fine
    broad_field, broad_text = "judgments_broad", body.judgments_broad
    if body.judgments is not None:
        # docs/web-architecture.md's single "judgments" field: on the campaign's scale
        if body.scale == "broad":
            if broad_text is not None:
                raise InvalidInput("send the BROAD judgments as judgments or judgments_broad")
            broad_field, broad_text = "judgments", body.judgments
        else:
            if fine_text is not None:
                raise InvalidInput("send the FINE judgments as judgments or judgments_fine")
            fine_field, fine_text = "judgments", body.judgments
    read = _read_text
    runs = read("runs", body.runs, lambda path: read_runs(path, order_by=body.order_by))
    # the lists' file is the field, as in every other message about it
    conflicts = tuple(replace(c, path="runs") for c in runs.score_conflicts)
    runs = replace(runs, score_conflicts=conflicts)
    metadata = None if body.metadata is None else read("metadata", body.metadata, read_metadata)
    fine = None
    if fine_text is not None:
        fine = read(fine_field, fine_text, lambda path: read_judgments(path, "fine"))
    broad = None
    if broad_text is not None:
        broad = read(broad_field, broad_text, lambda path: read_judgments(path, "broad"))
    return runs, metadata, fine, broad


# --------------------------------------------------------------------------- from the browser


class UploadedFileIn(BaseModel):
    """A file as the browser read it: its name (shown in problems) and its text."""

    model_config = ConfigDict(extra="forbid")

    name: CleanText = Field(max_length=255)
    text: str


def _setting(name: str, default: int) -> Any:
    minimum, maximum = INT_SETTINGS[name]
    return Field(default, ge=minimum, le=maximum)


def _decimal(name: str, default: float) -> Any:
    minimum, maximum = FLOAT_SETTINGS[name]
    return Field(
        default, ge=minimum, le=maximum, allow_inf_nan=False, description=FLOAT_SETTING_HELP[name]
    )


CLIP_CUT_HELP = (
    "how clips are cut from the files: whole, excerpt (excerpt_seconds from "
    "excerpt_start_fraction of the way in; files no longer than that are played whole), or "
    "offsets (excerpt_seconds from each document's start in clip_offsets)"
)


class CampaignUpload(BaseModel):
    """A new campaign as the browser's form sends it: the settings of
    :class:`~mtcjudge.campaigns.spec.CampaignSpec` and the files by name (several run files,
    one per system, as TREC runs often come)."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    slug: str | None = None
    description: str = ""
    scale: str = CampaignSpec.scale
    k: int = _setting("k", CampaignSpec.k)
    measure: str = CampaignSpec.measure
    estimator: str = CampaignSpec.estimator
    policy: str = CampaignSpec.policy
    target: float = CampaignSpec.target
    lease_minutes: int = _setting("lease_minutes", CampaignSpec.lease_minutes)
    judgments_per_pair: int = _setting("judgments_per_pair", CampaignSpec.judgments_per_pair)
    seed: int = _setting("seed", CampaignSpec.seed)
    keep_collecting: bool = False
    status: str = "draft"
    listen_seconds: float = _decimal("listen_seconds", CampaignSpec.listen_seconds)
    quality_rate: float = _decimal("quality_rate", CampaignSpec.quality_rate)
    auto_pause: bool = False
    clip_cut: Literal["whole", "excerpt", "offsets"] = Field(
        default="excerpt", description=CLIP_CUT_HELP
    )
    excerpt_seconds: float = Field(
        default=CampaignSpec.excerpt_seconds,
        ge=MIN_EXCERPT_SECONDS,
        le=MAX_EXCERPT_SECONDS,
        allow_inf_nan=False,
        description="length of an excerpt (s)",
    )
    excerpt_start_fraction: float = Field(
        default=CampaignSpec.excerpt_start_fraction,
        ge=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="where an excerpt starts, as a share of the file",
    )
    confirm_unplayable: bool = Field(
        default=False,
        description="created open although pool pairs cannot be played (else 409)",
    )
    runs: list[UploadedFileIn] = Field(default_factory=list, max_length=1000)
    metadata: UploadedFileIn | None = None
    judgments_fine: UploadedFileIn | None = None
    judgments_broad: UploadedFileIn | None = None
    clip_offsets: UploadedFileIn | None = Field(
        default=None,
        description=CLIP_OFFSETS_HELP + ". The offsets file: TSV doc<TAB>start_seconds",
    )
    audio_dir: CleanText | None = Field(
        default=None, max_length=4096, description="folder of <doc_id>.<ext> clips on the server"
    )
    audio_upload: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9_-]{43}$",
        description="token of a complete audio upload (POST /api/audio-uploads)",
    )
    order_by: Literal["rank", "score"] = Field(default="rank", description=ORDER_BY_HELP)

    def values(self) -> dict[str, Any]:
        """The settings by name (an empty slug: none)."""
        values = {f.name: getattr(self, f.name) for f in fields(CampaignSpec)}
        values["slug"] = self.slug or None
        return values

    def spec(self) -> CampaignSpec:
        """The settings; ``ValueError`` when one is out of range."""
        return CampaignSpec(**self.values())

    def upload(self) -> previews.Upload:
        def file(uploaded: UploadedFileIn | None) -> previews.UploadedFile | None:
            return None if uploaded is None else previews.UploadedFile(uploaded.name, uploaded.text)

        return previews.Upload(
            runs=[previews.UploadedFile(f.name, f.text) for f in self.runs],
            metadata=file(self.metadata),
            judgments_fine=file(self.judgments_fine),
            judgments_broad=file(self.judgments_broad),
            order_by=self.order_by,
            clip_offsets=file(self.clip_offsets),
        )


@pydantic_dataclass(frozen=True)
class PreviewOut(previews.Preview):
    """The validation preview; ``ok``: the campaign can be created as it is."""

    ok: bool = False

    @classmethod
    def of(cls, preview: previews.Preview) -> PreviewOut:
        values = {f.name: getattr(preview, f.name) for f in fields(previews.Preview)}
        return cls(**values, ok=not preview.problems)


_PREVIEW_JSON = TypeAdapter(PreviewOut)


def _preview_spec(body: CampaignUpload) -> tuple[list[previews.Problem], CampaignSpec]:
    """The settings to preview with: each wrong one is a problem and its default stands in,
    so the preview still shows the collection at the chosen cut-off."""
    defaults = {f.name: f.default for f in fields(CampaignSpec)}
    defaults["name"] = "preview"  # a preview needs no name yet
    values = body.values()
    if not body.name.strip():
        values["name"] = "preview"
    problems: list[previews.Problem] = []
    for _ in range(len(values)):
        try:
            return problems, CampaignSpec(**values)
        except ValueError as exc:
            problem = _setting_problem(exc)
            problems.append(problem)
            if problem.input not in values or values[problem.input] == defaults[problem.input]:
                break
            values[problem.input] = defaults[problem.input]
    return problems, CampaignSpec(name="preview")


def _setting_problem(exc: ValueError) -> previews.Problem:
    """A setting out of range, named by the field the message starts with."""
    message = str(exc)
    first = message.split(" ", 1)[0]
    known = {f.name for f in fields(CampaignSpec)}
    return previews.Problem(first if first in known else "settings", message, field=first)


@router.post(
    "/preview",
    responses=error_responses(400, 413),
)
def preview_campaign(
    body: CampaignUpload, session: SessionDep, _organizer: CurrentOrganizer
) -> Any:
    """What the campaign would hold, and the judgments it would need to reach its target
    (a short simulated campaign); nothing is saved. Problems (by file and line, the audio
    folder, the settings) make a 400 ``invalid_input`` whose body also holds the preview
    (``preview``, with its ``problems``). ``warnings`` do not stop the campaign: the run
    lists whose scores contradict their ranks, by file and line."""
    problems, spec = _preview_spec(body)
    parsed = previews.read_upload(body.upload())
    uploaded = None
    if body.audio_upload is not None:
        try:
            uploaded = audio_upload.uploaded_names(session, body.audio_upload)
        except InvalidInput as exc:
            problems.append(previews.Problem("audio_upload", exc.message, field="audio_upload"))
            uploaded = {}
    result = previews.build_preview(spec, parsed, body.audio_dir, uploaded=uploaded)
    result = previews.Preview(
        **{
            **{f.name: getattr(result, f.name) for f in fields(result)},
            "problems": problems + result.problems,
        }
    )
    out = PreviewOut.of(result)
    if out.ok:
        return out
    # the error envelope, and the preview beside it for the page to show
    rejected = {
        **ErrorOut(error="invalid_input", detail="; ".join(map(str, result.problems))).model_dump(),
        "preview": _PREVIEW_JSON.dump_python(out, mode="json"),
    }
    return JSONResponse(rejected, status_code=400)


@router.post(
    "/import", status_code=status.HTTP_201_CREATED, responses=error_responses(400, 409, 413)
)
def import_campaign(
    body: CampaignUpload, session: SessionDep, organizer: CurrentOrganizer
) -> CampaignCreated:
    """Create a campaign from files by name (the browser's form): as ``POST /api/campaigns``."""
    try:
        spec = body.spec()
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    parsed = previews.read_upload(body.upload())
    audio_dir, audio_problem = None, None
    if body.audio_upload is None:
        audio_dir, audio_problem = previews.check_audio_dir(body.audio_dir)
    problems = parsed.problems + ([audio_problem] if audio_problem else [])
    if problems or parsed.runs is None:
        raise InvalidInput("; ".join(str(p) for p in problems))
    try:
        campaign, report = creation.create_campaign(
            session,
            spec,
            parsed.runs,
            parsed.metadata,
            parsed.judgments_fine,
            parsed.judgments_broad,
            audio_dir,
            confirm_unplayable=body.confirm_unplayable,
            clip_offsets=parsed.clip_offsets,
            audio_upload=body.audio_upload,
        )
    except InputError as exc:  # an offsets entry the runs or the files contradict
        problem = previews.Problem(_OFFSETS, exc.message, exc.path, exc.line, exc.field)
        raise InvalidInput(f"{_OFFSETS}: {problem}") from exc
    except ValueError as exc:  # the collection cannot be built (one system); nothing is kept
        raise InvalidInput(f"runs: {exc}") from exc
    record_campaign_created(session, campaign, organizer.actor, report, parsed.runs)
    warnings = previews.score_order_problems(parsed.runs)
    return CampaignCreated.of(campaign, report, parsed.runs, warnings)


AssessorId = Annotated[int, PathParameter(ge=1, le=INT32_MAX)]


class AssessorOut(BaseModel):
    id: int
    name: str
    revoked_at: UtcDateTime | None


def _assessor(session: SessionDep, campaign: Campaign, assessor_id: int) -> Assessor:
    for assessor in service.list_assessors(session, campaign):
        if assessor.id == assessor_id:
            return assessor
    raise NotFound(f"no assessor {assessor_id} in campaign {campaign.slug!r}")


@router.post(
    "/{slug}/assessors/{assessor_id}/revoke", dependencies=[CHECK_SLUG], responses=_CHANGE_ERRORS
)
def revoke_assessor(
    slug: str, assessor_id: AssessorId, session: SessionDep, organizer: CurrentOrganizer
) -> AssessorOut:
    """The assessor's link stops working and their pair returns to the pool; their
    judgments stay."""
    campaign = service.get_campaign(session, slug)
    assessor = _assessor(session, campaign, assessor_id)
    if assessor.revoked_at is None:
        service.revoke_link(session, assessor)
        audit.record(session, campaign.id, organizer.actor, audit.ASSESSOR_REVOKED, assessor.name)
    return AssessorOut(id=assessor.id, name=assessor.name, revoked_at=assessor.revoked_at)


@router.post(
    "/{slug}/assessors/{assessor_id}/relink", dependencies=[CHECK_SLUG], responses=_CHANGE_ERRORS
)
def relink_assessor(
    slug: str,
    assessor_id: AssessorId,
    session: SessionDep,
    settings: SettingsDep,
    organizer: CurrentOrganizer,
) -> AssessorInvited:
    """A new link for the assessor (the old one stops working; a revoked link works again
    as the new one). The link is shown this once."""
    campaign = service.get_campaign(session, slug)
    assessor = _assessor(session, campaign, assessor_id)
    token = service.reissue_link(session, assessor)
    audit.record(session, campaign.id, organizer.actor, audit.ASSESSOR_RELINKED, assessor.name)
    return AssessorInvited(
        id=assessor.id, name=assessor.name, token=token, link=service.assessor_link(settings, token)
    )


@router.get("/{slug}/assessors", dependencies=[CHECK_SLUG], responses=error_responses(404))
def list_assessors(
    slug: str, session: SessionDep, _organizer: CurrentOrganizer
) -> list[AssessorOverviewOut]:
    """Every assessor in the order they were invited: their judgments (counted, set aside,
    quality trials), whether they are set aside or paused, and their ``reliability`` as the
    planner last concluded it (``assessed: false`` until it has)."""
    campaign = service.get_campaign(session, slug)
    return [AssessorOverviewOut.of(a) for a in overview.assessor_overview(session, campaign)]


@router.post(
    "/{slug}/assessors/{assessor_id}/set-aside",
    dependencies=[CHECK_SLUG],
    responses=_CHANGE_ERRORS,
)
def set_assessor_aside(
    slug: str, assessor_id: AssessorId, session: SessionDep, organizer: CurrentOrganizer
) -> SetAsideOut:
    """Set every pool judgment of the assessor aside: their pairs return to the pool, the
    planner replans, and the results, the report and the exports no longer count them; the
    assessor is handed no more pairs. Idempotent."""
    campaign = service.get_campaign(session, slug)
    report = assessor_actions.set_aside(session, campaign, assessor_id, organizer.actor)
    return SetAsideOut(**asdict(report))


@router.post(
    "/{slug}/assessors/{assessor_id}/bring-back",
    dependencies=[CHECK_SLUG],
    responses=_CHANGE_ERRORS,
)
def bring_assessor_back(
    slug: str, assessor_id: AssessorId, session: SessionDep, organizer: CurrentOrganizer
) -> BringBackOut:
    """Bring the assessor's set-aside judgments back where their pair still has room; the
    others stay aside (``stayed_aside``, with the ``reason``). Idempotent."""
    campaign = service.get_campaign(session, slug)
    return BringBackOut.of(
        assessor_actions.bring_back(session, campaign, assessor_id, organizer.actor)
    )


@router.post(
    "/{slug}/assessors/{assessor_id}/pause", dependencies=[CHECK_SLUG], responses=_CHANGE_ERRORS
)
def pause_assessor(
    slug: str,
    assessor_id: AssessorId,
    session: SessionDep,
    organizer: CurrentOrganizer,
    body: PauseIn | None = None,
) -> PauseOut:
    """Hand the assessor no more pairs for now, telling them ``message`` (else a kind
    default); their pair returns to the pool, their judgments stay."""
    campaign = service.get_campaign(session, slug)
    message = body.message if body is not None else None
    report = assessor_actions.pause(session, campaign, assessor_id, organizer.actor, message)
    return PauseOut(**asdict(report))


@router.post(
    "/{slug}/assessors/{assessor_id}/resume", dependencies=[CHECK_SLUG], responses=_CHANGE_ERRORS
)
def resume_assessor(
    slug: str, assessor_id: AssessorId, session: SessionDep, organizer: CurrentOrganizer
) -> PauseOut:
    """The assessor may be handed pairs again (unless their judgments are set aside)."""
    campaign = service.get_campaign(session, slug)
    return PauseOut(
        **asdict(assessor_actions.resume(session, campaign, assessor_id, organizer.actor))
    )
