"""Campaigns: create one from run, metadata and judgment files, change its settings, invite.

Services only ``flush()``; the request (or the CLI's ``session_scope``) commits, so a failed
import leaves nothing behind.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors import repository as assessors_repository
from mtcjudge.assessors.actions import release_live_lease
from mtcjudge.campaigns import repository
from mtcjudge.campaigns.changes import (
    AddRunsReport,
    ImportReport,
    planned_changes,
    record_campaign_update,
)
from mtcjudge.campaigns.limits import FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.clips.audio import AudioScan, scan_audio
from mtcjudge.config import Settings
from mtcjudge.errors import CampaignNotFound, InvalidInput, NotFound, UnplayableNotConfirmed
from mtcjudge.ingest.formats import Judgments, Metadata, Runs
from mtcjudge.ingest.loader import load_collection
from mtcjudge.models import (
    DEFAULT_LISTEN_SECONDS,
    DEFAULT_QUALITY_RATE,
    Assessor,
    Campaign,
    Document,
    Judgment,
    Query,
    Result,
    System,
    utcnow,
)
from mtcjudge.mtc.factory import CAMPAIGN_ESTIMATORS, DEFAULT_ESTIMATOR, ESTIMATOR_CHOICES
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.scales import SCALES
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.planner import repository as planner_repository
from mtcjudge.planner.service import plan_in_session
from mtcjudge.pool.service import (
    ensure_pool,
    grow_pool,
    sync_playable,
    unplayable_pairs,
    unplayable_summary,
)
from mtcjudge.security import hash_token, new_token
from mtcjudge.validation import NAME_MAX, check_text, text_problem

__all__ = [
    "SLUG_MAX",
    "SLUG_PATTERN",
    "STATUSES",
    "UPDATABLE_FIELDS",
    "CampaignSpec",
    "add_runs",
    "assessor_link",
    "create_campaign",
    "find_assessor",
    "get_campaign",
    "invite_assessor",
    "list_assessors",
    "list_campaigns",
    "open_warning",
    "reissue_link",
    "revoke_link",
    "slugify",
    "update_campaign",
]

STATUSES = ("draft", "open", "closed")
#: settings that may change once a campaign exists; the others define what its judgments mean
UPDATABLE_FIELDS = (
    "status",
    "keep_collecting",
    "auto_pause",
    "target",
    "lease_minutes",
    "judgments_per_pair",
    "listen_seconds",
    "quality_rate",
    "name",
    "description",
)
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
SLUG_MAX = 64
_SLUG = re.compile(SLUG_PATTERN)
_EMAIL_MAX = 320


@dataclass(frozen=True)
class CampaignSpec:
    """The settings of a new campaign, checked on construction (``ValueError``).

    ``estimator`` is the relevance model of the MTC loop (``--model`` on the command line);
    ``scale`` is the scale the loop runs on, both BROAD and FINE being collected.
    """

    name: str
    slug: str | None = None
    description: str = ""
    scale: str = "fine"
    k: int = 5
    measure: str = "cg"
    estimator: str = DEFAULT_ESTIMATOR
    policy: str = "confidence"
    target: float = 0.95
    lease_minutes: int = 10
    judgments_per_pair: int = 1
    seed: int = 0
    keep_collecting: bool = False
    status: str = "draft"
    listen_seconds: float = DEFAULT_LISTEN_SECONDS
    quality_rate: float = DEFAULT_QUALITY_RATE
    # pause an assessor automatically when they fail the hidden quality trials
    auto_pause: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("name must be a non-empty text")
        if len(self.name) > NAME_MAX:
            raise ValueError(f"name must be at most {NAME_MAX} characters, found {len(self.name)}")
        if self.slug is not None and (
            not isinstance(self.slug, str)
            or len(self.slug) > SLUG_MAX
            or not _SLUG.fullmatch(self.slug)
        ):
            raise ValueError(
                f"slug must be lowercase letters, digits and single hyphens, at most {SLUG_MAX}"
                f" characters (e.g. 'mirex-2011'), found {self.slug!r}"
            )
        if not isinstance(self.description, str):
            raise ValueError("description must be a text")
        for name in ("name", "slug", "description"):
            if isinstance(getattr(self, name), str):
                check_text(name, getattr(self, name))
        _check_choice("scale", self.scale, tuple(SCALES))
        _check_choice("measure", self.measure, MEASURES)
        _check_choice("estimator", self.estimator, ESTIMATOR_CHOICES)
        _check_choice("policy", self.policy, POLICIES)
        _check_choice("status", self.status, STATUSES)
        for name, (minimum, maximum) in INT_SETTINGS.items():
            _check_int(name, getattr(self, name), minimum=minimum, maximum=maximum)
        for name in ("keep_collecting", "auto_pause"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, found {getattr(self, name)!r}")
        for name, (low, high) in FLOAT_SETTINGS.items():
            object.__setattr__(self, name, _check_float(name, getattr(self, name), low, high))
        target = self.target
        if (
            isinstance(target, bool)
            or not isinstance(target, int | float)
            or not 0.5 <= target <= 1.0
        ):
            raise ValueError(f"target must be a confidence between 0.5 and 1, found {target!r}")
        object.__setattr__(self, "target", float(target))


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; found {value!r}")


def _check_float(name: str, value: object, minimum: float, maximum: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not minimum <= value <= maximum
    ):
        raise ValueError(
            f"{name} must be a number from {minimum:g} to {maximum:g} (0 turns it off), "
            f"found {value!r}"
        )
    return float(value)


def _check_int(name: str, value: object, *, minimum: int, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum}, found {value!r}")


def create_campaign(
    session: Session,
    spec: CampaignSpec,
    runs: Runs,
    metadata: Metadata | None = None,
    judgments_fine: Judgments | None = None,
    judgments_broad: Judgments | None = None,
    audio_dir: Path | None = None,
    teams: dict[str, str] | None = None,
    *,
    confirm_unplayable: bool = False,
) -> tuple[Campaign, ImportReport]:
    """Store a campaign and its collection; nothing is committed (the caller's transaction).

    A campaign created open whose pool has pairs that cannot be played (a clip without
    readable audio; every pair without an audio directory) needs ``confirm_unplayable``, as
    opening one does (:func:`update_campaign`).

    Documents are every document of the runs, of the metadata and every query (query ids are
    clip ids). Results keep the full lists as given, ranked 1..n: the engine applies the MIREX
    filtering and the cut-off at ``k`` when it loads. Imported judgments get one row per
    (query, document) holding the mean of each file's scores for the pair (BROAD means are
    rounded half up, the column being an integer).

    Raises
    ------
    InvalidInput
        An estimator a new campaign does not offer (:data:`CAMPAIGN_ESTIMATORS`; a stored
        campaign keeps any of :data:`ESTIMATOR_CHOICES`), an explicit slug already taken,
        ``teams`` naming a system absent from the runs, an id longer than the database
        allows, or an audio directory that does not exist.
    UnplayableNotConfirmed
        Created open with pairs that cannot be played, without ``confirm_unplayable``
        (the caller's transaction is then to be rolled back).
    """
    if spec.estimator not in CAMPAIGN_ESTIMATORS:
        raise InvalidInput(
            f"estimator {spec.estimator!r} is not offered for a new campaign: choose "
            f"{' or '.join(CAMPAIGN_ESTIMATORS)} (joint is the one whose confidence held on the "
            "calibration benchmark, uniform the papers' reference prior; mtcjudge simulate "
            "--model still replays every estimator)"
        )
    system_names = runs.systems
    queries = runs.queries
    _check_teams(teams or {}, system_names)
    run_docs = {
        doc for per_query in runs.lists.values() for lst in per_query.values() for doc in lst
    }
    scanned = sorted(run_docs | set(queries))
    doc_names = sorted(run_docs | set(queries) | (set(metadata.artist) if metadata else set()))
    _check_lengths("system", system_names)
    _check_lengths("document", doc_names)
    if metadata is not None:
        _check_lengths("artist", [a for a in metadata.artist.values() if a])
        _check_lengths("genre", [g for g in metadata.genre.values() if g])
    scan = AudioScan({}, [], [])
    if audio_dir is not None:
        try:
            scan = scan_audio(audio_dir, scanned)
        except ValueError as exc:
            raise InvalidInput(f"audio directory: {exc}") from exc
    n_pool_pairs = load_collection(runs, spec.k, metadata).collection.n_pairs

    campaign = Campaign(
        slug=_unique_slug(session, spec),
        **{f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "slug"},
    )
    try:
        with session.begin_nested():
            repository.add(session, campaign)
    except IntegrityError as exc:  # another request took the slug since we looked
        raise InvalidInput(f"slug {campaign.slug!r} is already taken") from exc

    repository.bulk_insert(
        session,
        System,
        [
            {"campaign_id": campaign.id, "name": name, "team": (teams or {}).get(name)}
            for name in system_names
        ],
    )
    repository.bulk_insert(
        session,
        Document,
        [_document_row(campaign.id, doc, metadata, scan) for doc in doc_names],
    )
    system_id = repository.system_ids(session, campaign.id)
    document_id = repository.document_ids(session, campaign.id)
    repository.bulk_insert(
        session,
        Query,
        [{"campaign_id": campaign.id, "document_id": document_id[q]} for q in queries],
    )
    query_by_document = repository.query_ids(session, campaign.id)
    query_id = {q: query_by_document[document_id[q]] for q in queries}
    results = _result_rows(campaign.id, runs, system_id, query_id, document_id)
    repository.bulk_insert(session, Result, results)
    judgments, ignored = _judgment_rows(
        campaign.id, query_id, document_id, judgments_fine, judgments_broad
    )
    repository.bulk_insert(session, Judgment, judgments)
    unplayable = _store_pool(session, campaign)
    if campaign.status == "open" and not confirm_unplayable:
        _refuse_unconfirmed_open(session, campaign)

    report = ImportReport(
        slug=campaign.slug,
        n_systems=len(system_names),
        n_queries=len(queries),
        n_documents=len(doc_names),
        n_results=len(results),
        n_pool_pairs=n_pool_pairs,
        n_judgments=len(judgments),
        audio_found=len(scan.found),
        audio_missing=scan.missing,
        audio_unreadable=scan.unreadable,
        audio_notes=scan.notes,
        n_judgments_ignored=ignored,
        n_unplayable_pairs=unplayable,
    )
    return campaign, report


def add_runs(
    session: Session,
    campaign: Campaign,
    runs: Runs,
    metadata: Metadata | None = None,
    audio_dir: Path | None = None,
    teams: dict[str, str] | None = None,
    actor: audit.Actor | None = None,
) -> AddRunsReport:
    """Add the systems of ``runs`` to an existing campaign; nothing is committed.

    Every judgment, lease and pool pair stays as it is; the pool grows by the pairs of the
    new systems' top ``k`` that it does not hold yet, and the campaign is planned again at
    once (:func:`mtcjudge.planner.service.plan_in_session`), so assessors are asked for the pairs
    that tell the new systems apart, and a campaign that could stop goes on when they are
    uncertain. ``metadata`` and ``audio_dir`` concern the documents new to the campaign
    (the stored documents keep theirs). With ``actor``, the audit log records it.

    Raises
    ------
    InvalidInput
        A system name the campaign has already, a query it does not have (a new query
        would change every system's score), a team of a system not in the runs, an id too
        long to store, or an audio directory that does not exist.
    """
    names = runs.systems
    existing = repository.system_ids(session, campaign.id)
    taken = [name for name in names if name in existing]
    if taken:
        raise InvalidInput(
            f"runs: system {', '.join(map(repr, taken[:5]))} is already in campaign "
            f"{campaign.slug!r}: new runs need names of their own"
        )
    _check_teams(teams or {}, names)
    _check_lengths("system", names)
    document_id = repository.document_ids(session, campaign.id)
    query_by_document = repository.query_ids(session, campaign.id)
    query_id = {
        external: query_by_document[doc]
        for external, doc in document_id.items()
        if doc in query_by_document
    }
    unknown = [q for q in runs.queries if q not in query_id]
    if unknown:
        raise InvalidInput(
            f"runs: query {', '.join(map(repr, unknown[:5]))}"
            f"{' and more' if len(unknown) > 5 else ''} is not a query of campaign "
            f"{campaign.slug!r} (a new query would change every system's score); the new "
            f"runs may answer its {len(query_id)} queries only"
        )
    run_docs = {d for per_query in runs.lists.values() for lst in per_query.values() for d in lst}
    new_docs = sorted(run_docs - set(document_id))
    _check_lengths("document", new_docs)
    if metadata is not None:
        _check_lengths("artist", [a for d in new_docs if (a := metadata.artist.get(d))])
        _check_lengths("genre", [g for d in new_docs if (g := metadata.genre.get(d))])
    # the documents the new runs bring, and stored ones of theirs that have no clip yet (a
    # document of the metadata only, or one whose clip was missing): both get one if found
    silent = sorted(run_docs & repository.documents_without_audio(session, campaign.id))
    scan = AudioScan({}, [], [])
    if audio_dir is not None:
        try:
            scan = scan_audio(audio_dir, [*new_docs, *silent])
        except ValueError as exc:
            raise InvalidInput(f"audio directory: {exc}") from exc

    state = planner_repository.planner_state(session, campaign.id)
    stop_before = state.stop_reason if state is not None else None
    pool_before = ensure_pool(session, campaign)  # stored now if no planner ever ran
    repository.bulk_insert(
        session,
        System,
        [
            {"campaign_id": campaign.id, "name": name, "team": (teams or {}).get(name)}
            for name in names
        ],
    )
    repository.bulk_insert(
        session, Document, [_document_row(campaign.id, d, metadata, scan) for d in new_docs]
    )
    found = {d: _document_row(campaign.id, d, None, scan) for d in silent if d in scan.found}
    repository.set_audio(
        session,
        campaign.id,
        {
            d: {k: row[k] for k in ("audio_path", "audio_type", "duration_seconds")}
            for d, row in found.items()
        },
    )
    system_id = repository.system_ids(session, campaign.id)
    document_id = repository.document_ids(session, campaign.id)
    results = _result_rows(campaign.id, runs, system_id, query_id, document_id)
    repository.bulk_insert(session, Result, results)
    campaign.collection_version = (campaign.collection_version or 0) + 1
    session.flush()
    try:
        growth = grow_pool(session, campaign)
        if found:  # stored pairs of these documents may be played now
            sync_playable(session, campaign.id)
        plan_in_session(session, campaign)
    except ValueError as exc:  # the collection cannot be built from these runs
        raise InvalidInput(f"runs: {exc}") from exc
    figures = planner_repository.planner_state(session, campaign.id)
    assert figures is not None  # plan_in_session made it
    session.refresh(figures)  # written by UPDATE statements, not through this object
    counts = repository.campaign_counts(session, campaign.id)
    report = AddRunsReport(
        slug=campaign.slug,
        systems=names,
        n_results=len(results),
        n_new_documents=len(new_docs),
        pool_pairs_before=pool_before,
        pool_pairs=pool_before + growth.added,
        new_pairs_judged=growth.judged,
        judgments_kept=counts.judgments + counts.imported_judgments,
        ranking_confidence=float(figures.ranking_confidence or 0.0),
        system_pairs=figures.system_pairs,
        system_pairs_settled=figures.system_pairs_settled,
        stop_reason_before=stop_before,
        stop_reason=figures.stop_reason,
        audio_found=len(scan.found),
        audio_missing=scan.missing,
        n_unplayable_new_pairs=growth.unplayable,
        order_by=runs.order_by,
        n_score_conflicts=len(runs.score_conflicts),
    )
    if actor is not None:
        audit.record(session, campaign.id, actor, audit.RUNS_ADDED, report.summary())
    return report


def _store_pool(session: Session, campaign: Campaign) -> int:
    """Store the pool of pairs to judge; returns how many cannot be played (a clip's audio
    is missing or unreadable), which are never handed out."""
    ensure_pool(session, campaign)
    return unplayable_pairs(session, campaign.id)


def _check_teams(teams: dict[str, str], systems: list[str]) -> None:
    unknown = sorted(set(teams) - set(systems))
    if unknown:
        raise InvalidInput(
            f"teams: system {', '.join(map(repr, unknown[:5]))} is not in the runs"
            f" (systems: {', '.join(systems[:10])}{', ...' if len(systems) > 10 else ''})"
        )
    for system, team in teams.items():
        if isinstance(team, str) and (problem := text_problem(team)):
            raise InvalidInput(f"teams: the team of system {system!r} {problem}")
        if not isinstance(team, str) or not team.strip() or len(team) > NAME_MAX:
            raise InvalidInput(
                f"teams: the team of system {system!r} must be a non-empty text of at most"
                f" {NAME_MAX} characters"
            )


def _check_lengths(kind: str, values: list[str]) -> None:
    for value in values:
        if len(value) > NAME_MAX:
            raise InvalidInput(
                f"{kind} id {value[:40]!r}... is {len(value)} characters long;"
                f" at most {NAME_MAX} are stored"
            )


def _result_rows(
    campaign_id: int,
    runs: Runs,
    system_id: dict[str, int],
    query_id: dict[str, int],
    document_id: dict[str, int],
) -> list[dict[str, Any]]:
    """One ``result`` row per retrieved document of every list of ``runs``, ranked from 1."""
    return [
        {
            "campaign_id": campaign_id,
            "system_id": system_id[system],
            "query_id": query_id[query],
            "rank": rank,
            "document_id": document_id[doc],
        }
        for system, per_query in runs.lists.items()
        for query, docs in per_query.items()
        for rank, doc in enumerate(docs, start=1)
    ]


def _document_row(
    campaign_id: int, doc: str, metadata: Metadata | None, scan: AudioScan
) -> dict[str, Any]:
    audio = scan.found.get(doc)
    return {
        "campaign_id": campaign_id,
        "external_id": doc,
        "artist": metadata.artist.get(doc) if metadata else None,
        "genre": metadata.genre.get(doc) if metadata else None,
        "audio_path": str(audio.path) if audio else None,
        "audio_type": audio.mime if audio else None,
        "duration_seconds": audio.duration_seconds if audio else None,
    }


def _judgment_rows(
    campaign_id: int,
    query_id: dict[str, int],
    document_id: dict[str, int],
    fine: Judgments | None,
    broad: Judgments | None,
) -> tuple[list[dict[str, Any]], int]:
    fine_means = fine.mean() if fine else {}
    broad_means = broad.mean() if broad else {}
    rows: list[dict[str, Any]] = []
    ignored = 0
    for query, doc in sorted(set(fine_means) | set(broad_means)):
        if query not in query_id or doc not in document_id:
            ignored += 1
            continue
        broad_mean = broad_means.get((query, doc))
        rows.append(
            {
                "campaign_id": campaign_id,
                "query_id": query_id[query],
                "document_id": document_id[doc],
                "assessor_id": None,
                "broad": None if broad_mean is None else math.floor(broad_mean + 0.5),
                "fine": fine_means.get((query, doc)),
                "source": "import",
            }
        )
    return rows, ignored


def slugify(name: str) -> str:
    """A URL-safe slug for ``name`` ("MIREX 2011 — AMS" -> "mirex-2011-ams")."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")
    return slug[: SLUG_MAX - 4].rstrip("-") or "campaign"  # room for a "-NNN" suffix


def _unique_slug(session: Session, spec: CampaignSpec) -> str:
    if spec.slug is not None:
        if repository.campaign_by_slug(session, spec.slug) is not None:
            raise InvalidInput(f"slug {spec.slug!r} is already taken by another campaign")
        return spec.slug
    base = slugify(spec.name)
    taken = repository.slugs_starting_with(session, base)
    if base not in taken:
        return base
    suffix = 2
    while f"{base}-{suffix}" in taken:
        suffix += 1
    return f"{base}-{suffix}"


def get_campaign(session: Session, slug: str) -> Campaign:
    campaign = repository.campaign_by_slug(session, slug)
    if campaign is None:
        raise CampaignNotFound(f"no campaign {slug!r}")
    return campaign


def list_campaigns(session: Session) -> list[Campaign]:
    return repository.all_campaigns(session)


def open_warning(session: Session, campaign: Campaign) -> str | None:
    """What an organizer must know before opening the campaign: its pairs that cannot be
    played (None when every pair can)."""
    return unplayable_summary(session, campaign)


def _refuse_unconfirmed_open(session: Session, campaign: Campaign) -> None:
    warning = open_warning(session, campaign)
    if warning is not None:
        raise UnplayableNotConfirmed(
            f"campaign {campaign.slug!r}: {warning}. Open it anyway only on purpose: confirm "
            '(API: "confirm_unplayable": true; command line: --confirm-unplayable), or give '
            "the missing clips first"
        )


def update_campaign(
    session: Session,
    campaign: Campaign,
    actor: audit.Actor | None = None,
    /,
    *,
    confirm_unplayable: bool = False,
    **changes: Any,
) -> Campaign:
    """Change the settings in :data:`UPDATABLE_FIELDS`, checked as :class:`CampaignSpec` does;
    with ``actor``, what changed goes into the audit log (nothing when nothing changed).

    Opening a campaign (draft or closed to open) some of whose pairs cannot be played needs
    ``confirm_unplayable``: the organizer says they know those pairs will not be judged.

    Raises
    ------
    InvalidInput
        For a setting that cannot change (scale, k, measure... define what the judgments
        mean) or a value out of range.
    UnplayableNotConfirmed
        Opening with pairs that cannot be played, without ``confirm_unplayable`` (409).
    """
    fixed = sorted(set(changes) - set(UPDATABLE_FIELDS))
    if fixed:
        raise InvalidInput(
            f"cannot change {', '.join(fixed)} of a campaign; changeable: "
            f"{', '.join(UPDATABLE_FIELDS)}"
        )
    current = CampaignSpec(
        **{f.name: getattr(campaign, f.name) for f in fields(CampaignSpec) if f.name != "slug"}
    )
    try:
        checked = replace(current, **changes)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from exc
    opening = changes.get("status") == "open" and campaign.status != "open"
    if opening and not confirm_unplayable:
        _refuse_unconfirmed_open(session, campaign)
    planned = planned_changes(campaign, changes)
    if opening and (warning := open_warning(session, campaign)):
        # the audit log keeps what the organizer confirmed
        planned = [
            (
                action,
                f"{detail} (confirmed: {warning})" if action == audit.STATUS_CHANGED else detail,
            )
            for action, detail in planned
        ]
    for name in changes:
        setattr(campaign, name, getattr(checked, name))
    session.flush()
    if actor is not None:
        record_campaign_update(session, campaign.id, actor, planned)
    return campaign


def invite_assessor(
    session: Session, campaign: Campaign, name: str, email: str | None = None
) -> tuple[Assessor, str]:
    """Add an assessor with a personal token (the only credential of the judging pages).

    Returns the assessor and the token: only its hash is stored, so this is the one time
    the link can be shown (:func:`reissue_link` makes a new one)."""
    for field_name, text in (("assessor name", name), ("email", email)):
        if isinstance(text, str) and (problem := text_problem(text)):
            raise InvalidInput(f"{field_name} {problem}")
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX:
        raise InvalidInput(
            f"assessor name must be a non-empty text of at most {NAME_MAX} characters"
        )
    if email is not None:
        email = email.strip() or None
    if email is not None and (
        len(email) > _EMAIL_MAX or not re.fullmatch(r"[^@\s]+@[^@\s]+", email)
    ):
        raise InvalidInput(f"email {email!r} is not an e-mail address")
    token = new_token()
    assessor = Assessor(
        campaign_id=campaign.id, name=name, email=email, token_hash=hash_token(token)
    )
    repository.add(session, assessor)
    return assessor, token


def reissue_link(session: Session, assessor: Assessor) -> str:
    """A new token for the assessor (the old link stops working); returns it."""
    token = new_token()
    assessor.token_hash = hash_token(token)
    assessor.revoked_at = None
    session.flush()
    return token


def revoke_link(session: Session, assessor: Assessor) -> None:
    """The assessor's link stops working, and their pair goes back to the pool; their
    judgments stay."""
    assessor.revoked_at = utcnow()
    release_live_lease(session, assessor.id)
    session.flush()


def find_assessor(session: Session, campaign: Campaign, name: str) -> Assessor:
    matches = [a for a in assessors_repository.assessors_of(session, campaign.id) if a.name == name]
    if not matches:
        raise NotFound(f"no assessor named {name!r} in campaign {campaign.slug!r}")
    if len(matches) > 1:
        raise InvalidInput(f"several assessors are named {name!r}; rename one first")
    return matches[0]


def assessor_link(settings: Settings, token: str) -> str:
    return f"{settings.base_url}/a/{token}"


def list_assessors(session: Session, campaign: Campaign) -> list[Assessor]:
    """The campaign's assessors, in the order they were invited."""
    return assessors_repository.assessors_of(session, campaign.id)
