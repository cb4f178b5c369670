"""A campaign from an export bundle: ``mtcjudge campaign import-bundle`` and
``POST /api/campaigns/import-bundle`` (docs/exports.md, "Importing a bundle").

The bundle is checked whole before anything is stored (:mod:`mtcjudge.exports.bundle_read`).
The campaign is then rebuilt from the manifest's settings and the ``state/`` members
(:mod:`mtcjudge.exports.state`) in the caller's transaction, so a problem found halfway (a row
naming a system the bundle does not hold) leaves nothing behind. Exporting the restored
campaign gives the same bytes, the manifest's ``created_at`` aside.

Assessors come back as their pseudonyms (A1, A2, ...) with new, unknown tokens: the links of
the exported campaign do not open the restored one (``mtcjudge assessor relink`` gives a
pseudonym a working link). Audio is not in a bundle: give the clips' directory again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from mtcjudge import audit
from mtcjudge.assessors.actions import PAUSE_MESSAGE_MAX
from mtcjudge.campaigns import repository as campaigns_repository
from mtcjudge.campaigns.creation import audio_columns, campaign_cut, scan_clips
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.clips.audio import AudioScan
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository
from mtcjudge.exports.bundle_read import Bundle, Fields
from mtcjudge.ingest.formats import InputError
from mtcjudge.models import (
    JUDGMENT_KINDS,
    LEASE_STATES,
    Assessor,
    AssessorReliability,
    Campaign,
    Document,
    Judgment,
    Lease,
    Query,
    Result,
    System,
    TrajectoryPoint,
)
from mtcjudge.planner import repository as planner_repository
from mtcjudge.pool import repository as pool_repository
from mtcjudge.pool.service import ensure_pool
from mtcjudge.security import hash_token, new_token

__all__ = ["RestoreReport", "restore_campaign"]

_SOURCES = ("assessor", "import")
#: settings of a bundle made before they existed: the values a migrated campaign has
_EARLIER_SETTINGS: dict[str, Any] = {
    "listen_seconds": 0.0,
    "quality_rate": 0.0,
    "auto_pause": False,
    # clips were served whole before campaigns chose how to cut them
    "clip_cut": "whole",
    "excerpt_seconds": 30.0,
    "excerpt_start_fraction": 0.3,
}
_SELECTION_RULES = ("plan", "own_query", "any_free", "audit")


@dataclass(frozen=True)
class RestoreReport:
    """What :func:`restore_campaign` stored."""

    slug: str
    source_slug: str
    exported_at: str | None
    software: str | None
    n_systems: int
    n_queries: int
    n_documents: int
    n_results: int
    n_pool_pairs: int
    n_assessors: int
    n_leases: int
    n_judgments: int
    n_trajectory_points: int
    audio_found: int = 0
    audio_missing: int = 0

    def summary(self) -> str:
        """One line for the audit log."""
        return (
            f"from the bundle of {self.source_slug!r} ({self.software or 'unknown version'}, "
            f"exported {self.exported_at or '?'}): {self.n_systems} systems × "
            f"{self.n_queries} queries, {self.n_pool_pairs} pool pairs, {self.n_judgments} "
            f"judgments, {self.n_assessors} assessors (new links needed)"
        )


def _spec(bundle: Bundle, slug: str | None) -> tuple[CampaignSpec, dict[str, Any]]:
    settings = bundle.settings
    where = f"{bundle.name}/manifest.json"
    # settings a bundle made by an earlier version lacks: off, as migrated campaigns have them
    settings = {**_EARLIER_SETTINGS, **settings}
    values: dict[str, Any] = {f.name: settings.get(f.name) for f in fields(CampaignSpec)}
    values["slug"] = slug if slug is not None else settings.get("slug")
    missing = [n for n, v in values.items() if v is None and n != "slug"]
    if missing:
        raise InputError(where, None, f"campaign: {missing[0]} is missing")
    try:
        spec = CampaignSpec(**values)
    except ValueError as exc:
        raise InputError(where, None, f"campaign: {exc}") from exc
    extra: dict[str, Any] = {}
    version = settings.get("collection_version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise InputError(where, None, f"campaign: collection_version {version!r} is not a count")
    extra["collection_version"] = version
    for name in ("listen_seconds", "quality_rate"):
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value:
            raise InputError(where, None, f"campaign: {name} {value!r} is not a number >= 0")
        extra[name] = float(value)
    if extra["quality_rate"] > 1:
        raise InputError(where, None, "campaign: quality_rate must be at most 1")
    created = settings.get("created_at")
    try:
        extra["created_at"] = datetime.fromisoformat(created) if created else None
    except (TypeError, ValueError) as exc:
        raise InputError(where, None, f"campaign: created_at {created!r} is not a time") from exc
    return spec, extra


def restore_campaign(
    session: Session,
    bundle: Bundle,
    *,
    slug: str | None = None,
    audio_dir: Path | None = None,
    actor: audit.Actor | None = None,
) -> tuple[Campaign, RestoreReport]:
    """Create the campaign a verified bundle describes; nothing is committed (the caller's
    transaction), so an error leaves nothing behind.

    ``slug`` replaces the bundle's (which another campaign may hold); ``audio_dir`` is
    scanned for the clips as ``campaign create --audio`` does. With ``actor``, the audit log
    records the creation.

    Raises
    ------
    InputError
        A row of a ``state/`` member that cannot be restored (by member, line and field).
    InvalidInput
        The slug is taken, or the audio directory does not exist.
    """
    campaign = _store_campaign(session, bundle, slug)
    cid = campaign.id
    system_ids = _restore_systems(session, bundle, cid)
    document_ids, query_ids, scan = _restore_documents(session, bundle, cid, audio_dir)
    n_results = _restore_lists(session, bundle, cid, system_ids, query_ids, document_ids)
    n_pool = ensure_pool(session, campaign)
    assessor_ids = _restore_assessors(session, bundle, cid)
    lease_repeats: dict[int, int] = {}
    lease_ids = _restore_leases(
        session, bundle, campaign, query_ids, document_ids, assessor_ids, lease_repeats
    )
    judgment_repeats: dict[int, int] = {}
    n_judgments = _restore_judgments(
        session, bundle, cid, query_ids, document_ids, assessor_ids, lease_ids, judgment_repeats
    )
    _restore_repeats(session, bundle, cid, lease_ids, lease_repeats, judgment_repeats)
    _restore_reliability(session, bundle, cid, assessor_ids)
    repository.recount_pairs(session, cid)
    _restore_audit(session, bundle, cid, query_ids, document_ids)
    n_points = _restore_trajectory(session, bundle, cid)
    session.flush()
    report = RestoreReport(
        slug=campaign.slug,
        source_slug=str(bundle.settings.get("slug")),
        exported_at=bundle.manifest.get("created_at"),
        software=_software(bundle),
        n_systems=len(system_ids),
        n_queries=len(query_ids),
        n_documents=len(document_ids),
        n_results=n_results,
        n_pool_pairs=n_pool,
        n_assessors=len(assessor_ids),
        n_leases=len(lease_ids),
        n_judgments=n_judgments,
        n_trajectory_points=n_points,
        audio_found=len(scan.found),
        audio_missing=len(scan.missing),
    )
    if actor is not None:
        audit.record(session, cid, actor, audit.CAMPAIGN_CREATED, report.summary())
    return campaign, report


def _store_campaign(session: Session, bundle: Bundle, slug: str | None) -> Campaign:
    """The campaign row of the bundle's settings (``slug`` replacing its slug), stored."""
    spec, extra = _spec(bundle, slug)
    if campaigns_repository.campaign_by_slug(session, spec.slug or "") is not None:
        raise InvalidInput(
            f"slug {spec.slug!r} is already taken by another campaign: give the restored "
            "campaign another one (--slug)"
        )
    campaign = Campaign(
        slug=spec.slug,
        **{f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "slug"},
        collection_version=extra["collection_version"],
    )
    # the quality settings (kept when the spec does not carry them)
    campaign.listen_seconds = extra["listen_seconds"]
    campaign.quality_rate = extra["quality_rate"]
    if extra["created_at"] is not None:
        campaign.created_at = extra["created_at"]
    try:
        with session.begin_nested():
            campaigns_repository.add(session, campaign)
    except IntegrityError as exc:
        raise InvalidInput(f"slug {campaign.slug!r} is already taken") from exc
    return campaign


def _software(bundle: Bundle) -> str | None:
    """The software that made the bundle, as its manifest names it."""
    software = bundle.manifest.get("software")
    if not isinstance(software, dict):
        return None
    return f"{software.get('name')} {software.get('version')}"


def _insert(session: Session, model: Any, rows: list[dict[str, Any]]) -> None:
    campaigns_repository.bulk_insert(session, model, rows)


def _restore_systems(session: Session, bundle: Bundle, cid: int) -> dict[str, int]:
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for f in bundle.records("state/systems.csv"):
        name = f.name("system")
        if name in seen:
            raise f.error("system", f"{name!r} is listed twice")
        seen.add(name)
        rows.append({"campaign_id": cid, "name": name, "team": f.text("team", optional=True)})
    _insert(session, System, rows)
    return campaigns_repository.system_ids(session, cid)


def _restore_documents(
    session: Session, bundle: Bundle, cid: int, audio_dir: Path | None
) -> tuple[dict[str, int], dict[str, int], AudioScan]:
    documents: list[tuple[str, str | None, str | None]] = []
    queries: list[str] = []
    seen: set[str] = set()
    for f in bundle.records("state/documents.csv"):
        doc = f.name("document")
        if doc in seen:
            raise f.error("document", f"{doc!r} is listed twice")
        seen.add(doc)
        documents.append((doc, f.text("artist", optional=True), f.text("genre", optional=True)))
        if f.choice("query", ("0", "1")) == "1":
            queries.append(doc)
    campaign = session.get(Campaign, cid)
    assert campaign is not None  # stored by the caller
    scan = scan_clips(audio_dir, sorted(seen), campaign_cut(campaign), set(queries))
    rows = []
    for doc, artist, genre in documents:
        audio = scan.found.get(doc)
        rows.append(
            {
                "campaign_id": cid,
                "external_id": doc,
                "artist": artist,
                "genre": genre,
                **audio_columns(audio),
            }
        )
    _insert(session, Document, rows)
    document_ids = campaigns_repository.document_ids(session, cid)
    _insert(session, Query, [{"campaign_id": cid, "document_id": document_ids[q]} for q in queries])
    by_document = campaigns_repository.query_ids(session, cid)
    return document_ids, {q: by_document[document_ids[q]] for q in queries}, scan


def _batched(session: Session, model: Any, rows: Iterator[dict[str, Any]], size: int = 5000) -> int:
    batch: list[dict[str, Any]] = []
    n = 0
    for row in rows:
        batch.append(row)
        if len(batch) >= size:
            _insert(session, model, batch)
            n += len(batch)
            batch = []
    _insert(session, model, batch)
    return n + len(batch)


def _restore_lists(
    session: Session,
    bundle: Bundle,
    cid: int,
    system_ids: dict[str, int],
    query_ids: dict[str, int],
    document_ids: dict[str, int],
) -> int:
    seen: set[tuple[str, str, int]] = set()
    listed: set[tuple[str, str, str]] = set()

    def rows() -> Iterator[dict[str, Any]]:
        for f in bundle.records("state/lists.csv"):
            system, query, document = f.name("system"), f.name("query"), f.name("document")
            f.known("system", system, system_ids, "a system")
            f.known("query", query, query_ids, "a query")
            f.known("document", document, document_ids, "a document")
            rank = f.integer("rank", minimum=1)
            assert rank is not None
            if (system, query, rank) in seen or (system, query, document) in listed:
                raise f.error("rank", f"{system} lists {query} twice at a rank or a document")
            seen.add((system, query, rank))
            listed.add((system, query, document))
            yield {
                "campaign_id": cid,
                "system_id": system_ids[system],
                "query_id": query_ids[query],
                "rank": rank,
                "document_id": document_ids[document],
            }

    return _batched(session, Result, rows())


def _restore_assessors(session: Session, bundle: Bundle, cid: int) -> dict[str, int]:
    rows = []
    for n, f in enumerate(bundle.records("state/assessors.csv"), start=1):
        pseudonym = f.name("assessor")
        if pseudonym != f"A{n}":
            raise f.error("assessor", f"expected A{n} (in the order invited), found {pseudonym!r}")
        rows.append(
            {
                "campaign_id": cid,
                "name": pseudonym,
                # a token nobody knows: the exported campaign's links open nothing here
                "token_hash": hash_token(new_token()),
                "created_at": f.time("created_at"),
                "revoked_at": f.time("revoked_at", optional=True),
                "set_aside_at": f.time("set_aside_at", optional=True),
                "paused_at": f.time("paused_at", optional=True),
                "pause_reason": _message(f, "pause_reason"),
            }
        )
    for row in rows:  # one at a time: the ids follow the pseudonyms' order
        _insert(session, Assessor, [row])
    ids = session.scalars(
        select(Assessor.id).where(Assessor.campaign_id == cid).order_by(Assessor.id)
    ).all()
    return {f"A{n}": int(i) for n, i in enumerate(ids, start=1)}


def _pool_pair(
    f: Fields,
    pairs: dict[tuple[int, int], int],
    query_ids: dict[str, int],
    document_ids: dict[str, int],
) -> tuple[int, int, int]:
    """(pair id, query id, document id) of the record's query and document, which must be a
    pair of the restored pool."""
    query, document = f.name("query"), f.name("document")
    f.known("query", query, query_ids, "a query")
    f.known("document", document, document_ids, "a document")
    query_id, document_id = query_ids[query], document_ids[document]
    pair = pairs.get((query_id, document_id))
    if pair is None:
        raise f.error("document", f"({query}, {document}) is not a pair of the pool")
    return pair, query_id, document_id


def _restore_leases(
    session: Session,
    bundle: Bundle,
    campaign: Campaign,
    query_ids: dict[str, int],
    document_ids: dict[str, int],
    assessor_ids: dict[str, int],
    repeats: dict[int, int],
) -> list[int]:
    """The leases, in order; ``repeats`` gets lease number -> the number of the judgment a
    repeat trial repeats (restored once the judgments are)."""
    pairs = pool_repository.pair_ids(session, campaign.id)
    n = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal n
        for f in bundle.records("state/leases.csv"):
            n += 1
            number = f.integer("lease", minimum=1)
            if number != n:
                raise f.error("lease", f"expected {n} (leases in the order handed out)")
            kind = f.choice("kind", JUDGMENT_KINDS, optional=True) or "pool"
            pair: int | None
            if kind == "pool":
                pair, query_id, document_id = _pool_pair(f, pairs, query_ids, document_ids)
            else:  # a quality trial holds no pool pair
                pair, query_id, document_id = None, *_clips(f, query_ids, document_ids)
            repeat = f.integer("repeat_of", optional=True, minimum=1)
            if repeat is not None:
                repeats[n] = repeat
            assessor = f.name("assessor")
            f.known("assessor", assessor, assessor_ids, "an assessor")
            leased_at = f.time("leased_at")
            assert leased_at is not None
            yield {
                "campaign_id": campaign.id,
                "pair_id": pair,
                "kind": kind,
                "served_query_bytes": f.integer("served_query_bytes", optional=True) or 0,
                "served_candidate_bytes": f.integer("served_candidate_bytes", optional=True) or 0,
                "query_id": query_id,
                "document_id": document_id,
                "assessor_id": assessor_ids[assessor],
                "state": f.choice("state", LEASE_STATES),
                "leased_at": leased_at,
                "expires_at": f.time("expires_at"),
                "selection_rank": f.integer("selection_rank", optional=True),
                "selection_weight": f.number("selection_weight", optional=True),
                "selection_rule": f.choice("selection_rule", _SELECTION_RULES, optional=True),
            }

    try:
        with session.begin_nested():
            _batched(session, Lease, rows())
    except IntegrityError as exc:
        raise InputError(
            f"{bundle.name}/state/leases.csv", None, "an assessor holds two live leases"
        ) from exc
    return list(
        session.scalars(select(Lease.id).where(Lease.campaign_id == campaign.id).order_by(Lease.id))
    )


def _restore_judgments(
    session: Session,
    bundle: Bundle,
    cid: int,
    query_ids: dict[str, int],
    document_ids: dict[str, int],
    assessor_ids: dict[str, int],
    lease_ids: list[int],
    repeats: dict[int, int],
) -> int:
    """The judgments, in order; ``repeats`` gets judgment number -> the number of the
    judgment a repeat trial repeats (an earlier one)."""
    judged: set[tuple[str, str, str, str]] = set()
    n = 0

    def rows() -> Iterator[dict[str, Any]]:
        nonlocal n
        for f in bundle.records("state/judgments.csv"):
            n += 1
            kind = f.choice("kind", JUDGMENT_KINDS, optional=True) or "pool"
            repeat = f.integer("repeat_of", optional=True, minimum=1)
            if repeat is not None:
                if repeat >= n:
                    raise f.error("repeat_of", f"must name an earlier judgment, found {repeat}")
                repeats[n] = repeat
            set_aside = f.integer("set_aside", optional=True)
            if set_aside is not None and set_aside > 1:
                raise f.error("set_aside", f"must be 0 or 1, found {set_aside}")
            query, document = f.name("query"), f.name("document")
            f.known("query", query, query_ids, "a query")
            f.known("document", document, document_ids, "a document")
            assessor = f.text("assessor", optional=True)
            if assessor is not None:
                f.known("assessor", assessor, assessor_ids, "an assessor")
                if (query, document, assessor, kind) in judged:
                    raise f.error("assessor", f"{assessor} judged ({query}, {document}) twice")
                judged.add((query, document, assessor, kind))
            lease = f.integer("lease", optional=True, minimum=1)
            if lease is not None and lease > len(lease_ids):
                raise f.error("lease", f"lease {lease} is not in state/leases.csv")
            broad = f.integer("broad", optional=True)
            if broad is not None and broad > 2:
                raise f.error("broad", f"must be 0, 1 or 2, found {broad}")
            yield {
                "campaign_id": cid,
                "query_id": query_ids[query],
                "document_id": document_ids[document],
                "assessor_id": None if assessor is None else assessor_ids[assessor],
                "broad": broad,
                "fine": f.number("fine", optional=True, low=0.0, high=100.0),
                "source": f.choice("source", _SOURCES),
                "created_at": f.time("created_at"),
                "updated_at": f.time("updated_at"),
                "revision": f.integer("revision"),
                "query_listen_ms": f.integer("query_listen_ms", optional=True),
                "candidate_listen_ms": f.integer("candidate_listen_ms", optional=True),
                "lease_id": None if lease is None else lease_ids[lease - 1],
                "kind": kind,
                "set_aside": bool(set_aside),
                "served_query_bytes": f.integer("served_query_bytes", optional=True),
                "served_candidate_bytes": f.integer("served_candidate_bytes", optional=True),
            }

    return _batched(session, Judgment, rows())


def _clips(f: Fields, query_ids: dict[str, int], document_ids: dict[str, int]) -> tuple[int, int]:
    """(query id, document id) of a quality trial's clips (not necessarily a pool pair)."""
    query, document = f.name("query"), f.name("document")
    f.known("query", query, query_ids, "a query")
    f.known("document", document, document_ids, "a document")
    return query_ids[query], document_ids[document]


def _message(f: Fields, field: str) -> str | None:
    value = f.record[field]
    if value == "":
        return None
    if len(value) > PAUSE_MESSAGE_MAX:
        raise f.error(field, f"is longer than {PAUSE_MESSAGE_MAX} characters")
    return value


def _restore_repeats(
    session: Session,
    bundle: Bundle,
    cid: int,
    lease_ids: list[int],
    lease_repeats: dict[int, int],
    judgment_repeats: dict[int, int],
) -> None:
    """Point repeat trials at the judgments they repeat (numbers in the bundle, ids here)."""
    if not lease_repeats and not judgment_repeats:
        return
    judgment_ids = repository.judgment_ids(session, cid)
    for member, repeats in (("leases", lease_repeats), ("judgments", judgment_repeats)):
        for repeated in repeats.values():
            if repeated > len(judgment_ids):
                raise InputError(
                    f"{bundle.name}/state/{member}.csv",
                    None,
                    f"repeat_of: judgment {repeated} is not in state/judgments.csv",
                )
    if lease_repeats:
        session.execute(
            update(Lease),
            [
                {"id": lease_ids[n - 1], "repeat_of": judgment_ids[r - 1]}
                for n, r in lease_repeats.items()
            ],
        )
    if judgment_repeats:
        # updated_at as restored (the column would otherwise take the time of this update)
        table = cast(Table, Judgment.__table__)
        session.connection().execute(
            update(table)
            .where(table.c.id == bindparam("judgment"))
            .values(repeat_of=bindparam("repeated"), updated_at=table.c.updated_at),
            [
                {"judgment": judgment_ids[n - 1], "repeated": judgment_ids[r - 1]}
                for n, r in judgment_repeats.items()
            ],
        )


def _restore_reliability(
    session: Session, bundle: Bundle, cid: int, assessor_ids: dict[str, int]
) -> None:
    """What the planner concluded about each assessor (none in a bundle made before)."""
    if "state/reliability.csv" not in bundle.archive.namelist():
        return
    rows = []
    seen: set[str] = set()
    for f in bundle.records("state/reliability.csv"):
        assessor = f.name("assessor")
        f.known("assessor", assessor, assessor_ids, "an assessor")
        if assessor in seen:
            raise f.error("assessor", f"{assessor} is listed twice")
        seen.add(assessor)
        flagged = f.integer("flagged")
        if flagged is not None and flagged > 1:
            raise f.error("flagged", f"must be 0 or 1, found {flagged}")
        reasons = _json_field(f, "reasons", list)
        if not all(isinstance(r, str) for r in reasons):
            raise f.error("reasons", "must be a JSON list of texts")
        rows.append(
            {
                "assessor_id": assessor_ids[assessor],
                "campaign_id": cid,
                "computed_at": f.time("computed_at"),
                "flagged": bool(flagged),
                "reasons": json.dumps(reasons),
                "metrics": json.dumps(_json_field(f, "metrics", dict), sort_keys=True),
            }
        )
    _insert(session, AssessorReliability, rows)


def _json_field(f: Fields, field: str, kind: type) -> Any:
    try:
        value = json.loads(f.record[field])
    except ValueError:
        value = None
    if not isinstance(value, kind):
        raise f.error(field, f"must be a JSON {'list' if kind is list else 'object'}")
    return value


def _restore_audit(
    session: Session,
    bundle: Bundle,
    cid: int,
    query_ids: dict[str, int],
    document_ids: dict[str, int],
) -> None:
    """Mark the pairs the audit drew (none in a bundle made before audits were stored)."""
    if "state/audit.csv" not in bundle.archive.namelist():
        return
    pairs = pool_repository.pair_ids(session, cid)
    drawn = [
        _pool_pair(f, pairs, query_ids, document_ids)[0] for f in bundle.records("state/audit.csv")
    ]
    planner_repository.mark_audit(session, drawn)


def _restore_trajectory(session: Session, bundle: Bundle, cid: int) -> int:
    def rows() -> Iterator[dict[str, Any]]:
        for f in bundle.records("state/trajectory.csv"):
            yield {
                "campaign_id": cid,
                "judged_pairs": f.integer("judged_pairs"),
                "ranking_confidence": f.number("ranking_confidence", low=0.0, high=1.0),
                "system_pairs_settled": f.integer("system_pairs_settled"),
                "at": f.time("at"),
            }

    return _batched(session, TrajectoryPoint, rows())
