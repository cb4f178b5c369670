"""A campaign's collection stored: a new campaign from run, metadata and judgment files
(:func:`create_campaign`), or new systems' runs added to one (:func:`add_runs`).

Services only ``flush()``; the request (or the CLI's ``session_scope``) commits, so a failed
import leaves nothing behind.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.campaigns import repository
from mtcjudge.campaigns.audio_upload import scan_upload
from mtcjudge.campaigns.changes import AddRunsReport, ImportReport
from mtcjudge.campaigns.spec import SLUG_MAX, CampaignSpec, offsets_problem
from mtcjudge.clips.audio import AudioFile, AudioScan, scan_audio
from mtcjudge.clips.cut import Cut
from mtcjudge.errors import InvalidInput, UnplayableNotConfirmed
from mtcjudge.ingest.formats import ClipOffsets, Judgments, Metadata, Runs
from mtcjudge.ingest.loader import load_collection
from mtcjudge.models import Campaign, Document, Judgment, PlannerState, Query, Result, System
from mtcjudge.mtc.factory import CAMPAIGN_ESTIMATORS
from mtcjudge.planner import repository as planner_repository
from mtcjudge.planner.service import plan_in_session
from mtcjudge.pool.service import (
    PoolGrowth,
    ensure_pool,
    grow_pool,
    sync_playable,
    unplayable_pairs,
    unplayable_summary,
)
from mtcjudge.validation import NAME_MAX, text_problem

__all__ = [
    "add_runs",
    "audio_columns",
    "campaign_cut",
    "create_campaign",
    "open_warning",
    "refuse_unconfirmed_open",
    "scan_clips",
    "slugify",
]


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
    clip_offsets: ClipOffsets | None = None,
    audio_upload: str | None = None,
) -> tuple[Campaign, ImportReport]:
    """Store a campaign and its collection; nothing is committed (the caller's transaction).

    A campaign created open whose pool has pairs that cannot be played (a clip without
    readable audio; every pair without an audio directory) needs ``confirm_unplayable``, as
    opening one does (:func:`mtcjudge.campaigns.service.update_campaign`).

    The clips come from ``audio_dir``, a folder on the server, or ``audio_upload``, the token
    of a complete upload from the browser (:mod:`mtcjudge.campaigns.audio_upload`), whose
    documents store their clip as audio in the database. ``clip_offsets`` are where each
    document's excerpt starts, given with the cut ``offsets`` (and with no other cut).

    Documents are every document of the runs, of the metadata and every query (query ids are
    clip ids). Results keep the full lists as given, ranked 1..n: the engine applies the MIREX
    filtering and the cut-off at ``k`` when it loads. Imported judgments get one row per
    (query, document) holding the mean of each file's scores for the pair (BROAD means are
    rounded half up, the column being an integer).

    Raises
    ------
    InvalidInput
        An estimator a new campaign does not offer (:data:`CAMPAIGN_ESTIMATORS`; a stored
        campaign keeps any of :data:`~mtcjudge.mtc.factory.ESTIMATOR_CHOICES`), an explicit
        slug already taken, ``teams`` naming a system absent from the runs, an id longer than
        the database allows, an audio directory that does not exist, an upload that is not
        complete, both a directory and an upload, or the cut ``offsets`` without offsets
        (offsets with another cut).
    InputError
        An entry of ``clip_offsets`` naming a document that is not a document or query of
        the runs, or starting at or past its file's end (by its file or field and line).
    UnplayableNotConfirmed
        Created open with pairs that cannot be played, without ``confirm_unplayable``
        (the caller's transaction is then to be rolled back).
    """
    _refuse_estimator_of_replays(spec.estimator)
    run_docs = set(runs.documents)
    doc_names = sorted(run_docs | set(runs.queries) | (set(metadata.artist) if metadata else set()))
    _check_systems(runs.systems, teams)
    _check_documents(
        doc_names,
        metadata.artist.values() if metadata else (),
        metadata.genre.values() if metadata else (),
    )
    clip_docs = sorted(run_docs | set(runs.queries))
    _check_offsets(spec, clip_offsets, clip_docs)
    scan = _new_clips(session, spec, runs, clip_docs, audio_dir, audio_upload, clip_offsets)
    if clip_offsets is not None:
        clip_offsets.check_ends(
            {d: a.analysis.source_seconds for d, a in scan.found.items() if a.analysis}
        )
    n_pool_pairs = load_collection(runs, spec.k, metadata).collection.n_pairs
    campaign = _store_campaign(session, spec)
    stored = _store_collection(session, campaign.id, runs, metadata, scan, teams, doc_names)
    judgments, ignored = _judgment_rows(
        campaign.id, stored.query_id, stored.document_id, judgments_fine, judgments_broad
    )
    repository.bulk_insert(session, Judgment, judgments)
    ensure_pool(session, campaign)
    unplayable = unplayable_pairs(session, campaign.id)  # never handed out
    if campaign.status == "open" and not confirm_unplayable:
        refuse_unconfirmed_open(session, campaign)
    report = ImportReport(
        slug=campaign.slug,
        n_systems=len(runs.systems),
        n_queries=len(runs.queries),
        n_documents=len(doc_names),
        n_results=stored.n_results,
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


def _check_offsets(spec: CampaignSpec, offsets: ClipOffsets | None, documents: list[str]) -> None:
    """The offsets go with the cut, and name the documents whose clips are cut."""
    problem = offsets_problem(spec.clip_cut, None if offsets is None else len(offsets))
    if problem is not None:
        raise InvalidInput(f"clip_offsets: {problem}")
    if offsets is not None:
        offsets.check_documents(set(documents))


def _new_clips(
    session: Session,
    spec: CampaignSpec,
    runs: Runs,
    names: list[str],
    audio_dir: Path | None,
    audio_upload: str | None,
    offsets: ClipOffsets | None,
) -> AudioScan:
    """A new campaign's clips, from a folder on the server or an upload from the browser."""
    if audio_upload is None:
        return scan_clips(audio_dir, names, spec.cut, set(runs.queries), offsets)
    if audio_dir is not None:
        raise InvalidInput("give an audio folder or an audio upload, not both")
    return scan_upload(session, audio_upload, names, spec.cut, set(runs.queries), offsets)


def _refuse_estimator_of_replays(estimator: str) -> None:
    if estimator not in CAMPAIGN_ESTIMATORS:
        raise InvalidInput(
            f"estimator {estimator!r} is not offered for a new campaign: choose "
            f"{' or '.join(CAMPAIGN_ESTIMATORS)} (joint is the one whose confidence held on the "
            "calibration benchmark, uniform the papers' reference prior; mtcjudge simulate "
            "--model still replays every estimator)"
        )


def _store_campaign(session: Session, spec: CampaignSpec) -> Campaign:
    """The campaign's row, under the spec's slug or one made from its name."""
    campaign = Campaign(
        slug=_unique_slug(session, spec),
        **{f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "slug"},
    )
    try:
        with session.begin_nested():
            repository.add(session, campaign)
    except IntegrityError as exc:  # another request took the slug since we looked
        raise InvalidInput(f"slug {campaign.slug!r} is already taken") from exc
    return campaign


@dataclass(frozen=True)
class _Stored:
    """The ids of a new campaign's queries and documents by external id, and its results."""

    query_id: dict[str, int]
    document_id: dict[str, int]
    n_results: int


def _store_collection(
    session: Session,
    campaign_id: int,
    runs: Runs,
    metadata: Metadata | None,
    scan: AudioScan,
    teams: dict[str, str] | None,
    doc_names: list[str],
) -> _Stored:
    """The systems, documents, queries and results of a new campaign."""
    _store_systems(session, campaign_id, runs.systems, teams)
    repository.bulk_insert(
        session, Document, [_document_row(campaign_id, d, metadata, scan) for d in doc_names]
    )
    document_id = repository.document_ids(session, campaign_id)
    repository.bulk_insert(
        session,
        Query,
        [{"campaign_id": campaign_id, "document_id": document_id[q]} for q in runs.queries],
    )
    query_by_document = repository.query_ids(session, campaign_id)
    query_id = {q: query_by_document[document_id[q]] for q in runs.queries}
    n_results = _store_results(session, campaign_id, runs, query_id, document_id)
    return _Stored(query_id, document_id, n_results)


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
    query_id, run_docs, new_docs = _check_new_runs(session, campaign, runs, metadata, teams)
    # the documents the new runs bring, and stored ones of theirs that have no clip yet (a
    # document of the metadata only, or one whose clip was missing): both get one if found
    silent = sorted(run_docs & repository.documents_without_audio(session, campaign.id))
    scan = scan_clips(audio_dir, [*new_docs, *silent], campaign_cut(campaign), set(query_id))

    state = planner_repository.planner_state(session, campaign.id)
    stop_before = state.stop_reason if state is not None else None
    pool_before = ensure_pool(session, campaign)  # stored now if no planner ever ran
    _store_systems(session, campaign.id, runs.systems, teams)
    repository.bulk_insert(
        session, Document, [_document_row(campaign.id, d, metadata, scan) for d in new_docs]
    )
    found = _give_clips(session, campaign.id, silent, scan)
    document_id = repository.document_ids(session, campaign.id)
    n_results = _store_results(session, campaign.id, runs, query_id, document_id)
    campaign.collection_version = (campaign.collection_version or 0) + 1
    session.flush()
    growth = _grow_and_plan(session, campaign, clips_found=found)
    figures = _planner_figures(session, campaign)
    counts = repository.campaign_counts(session, campaign.id)
    report = AddRunsReport(
        slug=campaign.slug,
        systems=runs.systems,
        n_results=n_results,
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


def _check_new_runs(
    session: Session,
    campaign: Campaign,
    runs: Runs,
    metadata: Metadata | None,
    teams: dict[str, str] | None,
) -> tuple[dict[str, int], set[str], list[str]]:
    """The campaign's query ids by external id, the documents the runs retrieve and those of
    them new to the campaign, once the runs, teams and metadata are checked for it."""
    _refuse_systems_it_has(session, campaign, runs.systems)
    _check_systems(runs.systems, teams)
    stored_docs = repository.document_ids(session, campaign.id)
    query_id = _query_ids_of_runs(session, campaign, runs, stored_docs)
    run_docs = set(runs.documents)
    new_docs = sorted(run_docs - set(stored_docs))
    _check_documents(
        new_docs,
        (metadata.artist.get(d) for d in new_docs) if metadata else (),
        (metadata.genre.get(d) for d in new_docs) if metadata else (),
    )
    return query_id, run_docs, new_docs


def _refuse_systems_it_has(session: Session, campaign: Campaign, names: list[str]) -> None:
    existing = repository.system_ids(session, campaign.id)
    taken = [name for name in names if name in existing]
    if taken:
        raise InvalidInput(
            f"runs: system {', '.join(map(repr, taken[:5]))} is already in campaign "
            f"{campaign.slug!r}: new runs need names of their own"
        )


def _query_ids_of_runs(
    session: Session, campaign: Campaign, runs: Runs, document_id: dict[str, int]
) -> dict[str, int]:
    """The campaign's query ids by external id (of its documents' ``document_id``); every
    query of ``runs`` must be one."""
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
    return query_id


def _grow_and_plan(session: Session, campaign: Campaign, *, clips_found: bool) -> PoolGrowth:
    """Store the new pool pairs and plan the campaign again at once."""
    try:
        growth = grow_pool(session, campaign)
        if clips_found:  # stored pairs of these documents may be played now
            sync_playable(session, campaign.id)
        plan_in_session(session, campaign)
    except ValueError as exc:  # the collection cannot be built from these runs
        raise InvalidInput(f"runs: {exc}") from exc
    return growth


def _give_clips(session: Session, campaign_id: int, silent: list[str], scan: AudioScan) -> bool:
    """Store the clips found for stored documents that had none; whether any was found."""
    audio = {d: audio_columns(scan.found[d]) for d in silent if d in scan.found}
    repository.set_audio(session, campaign_id, audio)
    return bool(audio)


def _planner_figures(session: Session, campaign: Campaign) -> PlannerState:
    """The planner's figures just written by :func:`plan_in_session`."""
    figures = planner_repository.planner_state(session, campaign.id)
    assert figures is not None  # plan_in_session made it
    session.refresh(figures)  # written by UPDATE statements, not through this object
    return figures


def campaign_cut(campaign: Campaign) -> Cut:
    """How a stored campaign cuts its clips."""
    return Cut(campaign.clip_cut, campaign.excerpt_seconds, campaign.excerpt_start_fraction)


def scan_clips(
    audio_dir: Path | None,
    names: list[str],
    cut: Cut,
    queries: set[str],
    offsets: Mapping[str, float] | None = None,
) -> AudioScan:
    """The clips of ``names`` found in ``audio_dir`` (none without one), analysed for a
    campaign that cuts them by ``cut``.

    Raises
    ------
    InvalidInput
        The audio directory does not exist.
    """
    if audio_dir is None:
        return AudioScan({}, [], [])
    try:
        return scan_audio(audio_dir, names, cut=cut, queries=queries, offsets=offsets)
    except ValueError as exc:
        raise InvalidInput(f"audio directory: {exc}") from exc


def _check_systems(systems: list[str], teams: dict[str, str] | None) -> None:
    """The teams name systems of the runs; no system name is longer than the database stores."""
    _check_teams(teams or {}, systems)
    _check_lengths("system", systems)


def _check_documents(
    documents: list[str], artists: Iterable[str | None], genres: Iterable[str | None]
) -> None:
    """No document id, artist or genre is longer than the database stores."""
    _check_lengths("document", documents)
    _check_lengths("artist", [a for a in artists if a])
    _check_lengths("genre", [g for g in genres if g])


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


def _store_systems(
    session: Session, campaign_id: int, names: list[str], teams: dict[str, str] | None
) -> None:
    rows = [
        {"campaign_id": campaign_id, "name": name, "team": (teams or {}).get(name)}
        for name in names
    ]
    repository.bulk_insert(session, System, rows)


def _store_results(
    session: Session,
    campaign_id: int,
    runs: Runs,
    query_id: dict[str, int],
    document_id: dict[str, int],
) -> int:
    """One ``result`` row per retrieved document of every list of ``runs``, ranked from 1;
    returns how many."""
    system_id = repository.system_ids(session, campaign_id)
    rows = [
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
    repository.bulk_insert(session, Result, rows)
    return len(rows)


def _document_row(
    campaign_id: int, doc: str, metadata: Metadata | None, scan: AudioScan
) -> dict[str, Any]:
    audio = scan.found.get(doc)
    return {
        "campaign_id": campaign_id,
        "external_id": doc,
        "artist": metadata.artist.get(doc) if metadata else None,
        "genre": metadata.genre.get(doc) if metadata else None,
        **audio_columns(audio),
    }


def audio_columns(audio: AudioFile | None) -> dict[str, Any]:
    """A document's audio columns: its file and the import's analysis of it."""
    analysis = audio.analysis if audio else None
    other = analysis.other if analysis else None
    return {
        "audio_path": (audio.stored_as or str(audio.path)) if audio else None,
        "audio_type": audio.mime if audio else None,
        "duration_seconds": audio.duration_seconds if audio else None,
        "excerpt_start": analysis.window.start if analysis else None,
        "source_seconds": analysis.source_seconds if analysis else None,
        "sample_rate": analysis.sample_rate if analysis else None,
        "channels": analysis.channels if analysis else None,
        "loudness_lufs": analysis.sound.loudness_lufs if analysis else None,
        "peaks": analysis.sound.peaks if analysis else None,
        "content_sha256": analysis.sha256 if analysis else None,
        "other_loudness_lufs": other.loudness_lufs if other else None,
        "other_peaks": other.peaks if other else None,
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


def open_warning(session: Session, campaign: Campaign) -> str | None:
    """What an organizer must know before opening the campaign: its pairs that cannot be
    played (None when every pair can)."""
    return unplayable_summary(session, campaign)


def refuse_unconfirmed_open(session: Session, campaign: Campaign) -> None:
    """Refuse to open (or create open) a campaign some of whose pairs cannot be played, unless
    the organizer confirmed it (the caller checks the confirmation).

    Raises
    ------
    UnplayableNotConfirmed
    """
    warning = open_warning(session, campaign)
    if warning is not None:
        raise UnplayableNotConfirmed(
            f"campaign {campaign.slug!r}: {warning}. Open it anyway only on purpose: confirm "
            '(API: "confirm_unplayable": true; command line: --confirm-unplayable), or give '
            "the missing clips first"
        )
