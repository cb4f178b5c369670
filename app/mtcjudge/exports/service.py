"""Researchers' exports of a campaign: qrels, every judgment, the estimates of the unjudged
pairs, the results document, the runs, and a self-describing bundle of all of them.

Every export is written to a binary stream as it is read: the rows come from a cursor
(:mod:`mtcjudge.exports.repository`) and leave in batches, so memory does not grow with the number
of judgments. Nothing is re-derived: the results are :mod:`mtcjudge.results.read`'s document,
the estimates the engine of :mod:`mtcjudge.planner.build`. The formats are in docs/exports.md.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any, BinaryIO

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mtcjudge.campaigns import service as campaigns
from mtcjudge.campaigns.assessors import assessor_overview
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository
from mtcjudge.exports.formats import (
    AGGREGATES,
    GRADES,
    MEASURE_DEFINITIONS,
    WHATS,
    HashingWriter,
    aggregate,
    grades_markdown,
)
from mtcjudge.exports.state import STATE_COLUMNS, state_records
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS
from mtcjudge.models import Campaign, Document, Query, as_utc, utcnow
from mtcjudge.mtc.estimators import SOURCE_M_JUD, SOURCE_M_OUT, SOURCE_PRIOR
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.scales import BROAD, FINE, SCALES
from mtcjudge.planner.build import CampaignRows, build_engine, load_rows
from mtcjudge.results import read

__all__ = [
    "ASSESSOR_COLUMNS",
    "BUNDLE_FORMAT",
    "BUNDLE_FORMAT_VERSION",
    "ESTIMATE_COLUMNS",
    "FORMATS",
    "JUDGMENT_COLUMNS",
    "SCALES",
    "WHATS",
    "ExportSpec",
    "begin_snapshot",
    "write_export",
]

#: the order of the scales' files in a bundle: FINE's first
_BUNDLE_SCALES = (FINE.name, BROAD.name)
#: the formats of each export, the first one the default
FORMATS: dict[str, tuple[str, ...]] = {
    "qrels": ("trec",),
    "judgments": ("csv", "jsonl"),
    "estimates": ("csv", "jsonl"),
    "results": ("json",),
    "runs": ("trec",),
    "assessors": ("csv", "json"),
    "bundle": ("zip",),
}
MEDIA_TYPES = {
    "trec": "text/plain; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/jsonl",
    "json": "application/json",
    "zip": "application/zip",
}
EXTENSIONS = {"trec": "txt", "csv": "csv", "jsonl": "jsonl", "json": "json", "zip": "zip"}

JUDGMENT_COLUMNS = (
    "query",
    "document",
    "broad",
    "fine",
    "assessor",
    "source",
    "created_at",
    "revised_at",
    "revision",
    "query_listen_ms",
    "candidate_listen_ms",
    "lease_id",
    "leased_at",
    "selection_rank",
    "selection_weight",
    "selection_rule",
    "kind",
    "repeat_of_lease",
    "set_aside",
    "served_query_bytes",
    "served_candidate_bytes",
)
#: the assessors export: each assessor by pseudonym, what organizers did about them and what
#: the planner concluded about their reliability
ASSESSOR_COLUMNS = (
    "assessor",
    "revoked",
    "judgments",
    "set_aside_judgments",
    "quality_trials",
    "set_aside",
    "set_aside_at",
    "paused",
    "paused_at",
    "assessed",
    "flagged",
    "reasons",
    "metrics",
    "computed_at",
    # added after the others (a reader by position keeps working): the trials by kind
    "trials_by_kind",
)
ESTIMATE_COLUMNS = (
    "query",
    "document",
    "scale",
    "expected_relevance",
    "variance",
    "estimator",
    "source",
)
#: 2: the ``state/`` members, campaign-relative lease numbers, results computed from the rows
BUNDLE_FORMAT_VERSION = 2
BUNDLE_FORMAT = "mtcjudge export bundle"
_SOURCE_NAMES = {SOURCE_PRIOR: "prior", SOURCE_M_OUT: "m_out", SOURCE_M_JUD: "m_jud"}
#: characters handed to the stream at a time
_PIECE = 1 << 16


@dataclass(frozen=True)
class ExportSpec:
    """What to export: ``what`` (:data:`WHATS`), the scale of qrels, estimates and results
    (default: the campaign's), the format (default: the first of :data:`FORMATS`) and the
    rule for several judgments of a pair in the qrels."""

    what: str
    scale: str | None = None
    format: str | None = None
    aggregate: str = "mean"

    def __post_init__(self) -> None:
        if self.what not in WHATS:
            raise InvalidInput(f"what must be one of {', '.join(WHATS)}; found {self.what!r}")
        if self.scale is not None and self.scale not in SCALES:
            raise InvalidInput(f"scale must be fine or broad; found {self.scale!r}")
        if self.format is not None and self.format not in FORMATS[self.what]:
            raise InvalidInput(
                f"{self.what} exports as {' or '.join(FORMATS[self.what])}; found {self.format!r}"
            )
        if self.aggregate not in AGGREGATES:
            raise InvalidInput(
                f"aggregate must be {' or '.join(AGGREGATES)}; found {self.aggregate!r}"
            )

    @property
    def file_format(self) -> str:
        return self.format or FORMATS[self.what][0]

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.file_format]

    def file_name(self, campaign: Campaign) -> str:
        """``SLUG-WHAT[-SCALE].EXT``: the scale is named where it matters."""
        parts = [campaign.slug, self.what]
        if self.what in ("qrels", "estimates", "results"):
            parts.append(self.scale or campaign.scale)
        return "-".join(parts) + "." + EXTENSIONS[self.file_format]


def begin_snapshot(session: Session) -> None:
    """On Postgres, read the whole export from one snapshot (REPEATABLE READ): the files of a
    bundle then agree with each other while assessors keep judging. SQLite's transaction is
    one already. Only on a session that has not started (tests hand in a bound connection)."""
    bind = session.get_bind()
    if (
        isinstance(bind, Engine)
        and bind.dialect.name == "postgresql"
        and not session.in_transaction()
    ):
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})


def write_export(
    session: Session, slug: str, spec: ExportSpec, out: BinaryIO, *, now: datetime | None = None
) -> str:
    """Write the export of campaign ``slug`` to ``out``; returns its file name.

    Raises
    ------
    CampaignNotFound
    InvalidInput
        An id with white space in a TREC file (qrels, runs), whose columns are separated by
        white space.
    """
    campaign = campaigns.get_campaign(session, slug)
    scale = spec.scale or campaign.scale
    what, fmt = spec.what, spec.file_format
    if what == "qrels":
        _write_lines(out, qrels_lines(session, campaign, scale, spec.aggregate))
    elif what == "judgments":
        _write_lines(out, judgment_lines(session, campaign, fmt))
    elif what == "estimates":
        _write_lines(out, estimate_lines(session, campaign, scale, fmt))
    elif what == "results":
        _write_lines(out, [results_json(session, campaign, scale)])
    elif what == "runs":
        _write_lines(out, run_lines(session, campaign))
    elif what == "assessors":
        _write_lines(out, assessor_lines(session, campaign, fmt))
    else:
        write_bundle(session, campaign, out, spec.aggregate, now=now or utcnow())
    return spec.file_name(campaign)


def _write_lines(out: Any, lines: Iterable[str]) -> None:
    """Hand ``lines`` to ``out`` as UTF-8, in pieces of about :data:`_PIECE` characters."""
    batch: list[str] = []
    size = 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= _PIECE:
            out.write("".join(batch).encode())
            batch.clear()
            size = 0
    if batch:
        out.write("".join(batch).encode())


# ------------------------------------------------------------------ qrels


def _trec_id(value: str, what: str) -> str:
    if not value or any(c.isspace() for c in value):
        raise InvalidInput(
            f"the {what} id {value!r} is empty or holds white space: it cannot be written in "
            "a TREC file, whose columns are separated by white space"
        )
    return value


def qrels_lines(session: Session, campaign: Campaign, scale: str, rule: str) -> Iterator[str]:
    """``qid 0 docno rel``: one line per judged pair, several judgments aggregated."""
    pair: tuple[str, str] | None = None
    values: list[float] = []
    for query, document, value in repository.pair_values(session, campaign.id, scale):
        if (query, document) != pair:
            if pair is not None:
                yield f"{pair[0]} 0 {pair[1]} {aggregate(values, rule)}\n"
            pair = (_trec_id(query, "query"), _trec_id(document, "document"))
            values = []
        values.append(float(value))
    if pair is not None:
        yield f"{pair[0]} 0 {pair[1]} {aggregate(values, rule)}\n"


# ------------------------------------------------------------------ judgments


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else as_utc(moment).isoformat()


def judgment_records(session: Session, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """Every judgment as a record of :data:`JUDGMENT_COLUMNS`: the lease it answered and
    why MTC chose the pair (its place in the planner's list, its weight, the rule)."""
    pseudonyms = repository.assessor_pseudonyms(session, campaign.id)
    repeated = repository.repeated_lease_numbers(session, campaign.id)
    for row in repository.judgment_rows(session, campaign.id):
        yield {
            "query": row.query,
            "document": row.document,
            "broad": row.broad,
            "fine": row.fine,
            "assessor": None if row.assessor_id is None else pseudonyms.get(row.assessor_id),
            "source": row.source,
            "created_at": _time(row.created_at),
            "revised_at": _time(row.updated_at) if row.revision else None,
            "revision": row.revision,
            "query_listen_ms": row.query_listen_ms,
            "candidate_listen_ms": row.candidate_listen_ms,
            "lease_id": row.lease_id,
            "leased_at": _time(row.leased_at),
            "selection_rank": row.selection_rank,
            "selection_weight": row.selection_weight,
            "selection_rule": row.selection_rule,
            "kind": row.kind,
            "repeat_of_lease": None if row.repeat_of is None else repeated.get(row.repeat_of),
            "set_aside": 1 if row.set_aside else 0,
            "served_query_bytes": row.served_query_bytes,
            "served_candidate_bytes": row.served_candidate_bytes,
        }


def assessor_records(session: Session, campaign: Campaign) -> Iterator[dict[str, Any]]:
    """Every assessor as a record of :data:`ASSESSOR_COLUMNS` (by pseudonym: no name, no
    message to them): ``reasons`` a list of sentences, ``metrics`` and ``trials_by_kind``
    objects, which the CSV writes as JSON texts."""
    for a in assessor_overview(session, campaign):
        r = a.reliability
        yield {
            "assessor": a.pseudonym,
            "revoked": a.state == "revoked",
            "judgments": a.judgments,
            "set_aside_judgments": a.set_aside_judgments,
            "quality_trials": a.quality_trials,
            "set_aside": a.set_aside,
            "set_aside_at": _time(a.set_aside_at),
            "paused": a.paused,
            "paused_at": _time(a.paused_at),
            "assessed": r.assessed,
            "flagged": r.flagged,
            "reasons": list(r.reasons),
            "metrics": dict(r.metrics),
            "computed_at": _time(r.computed_at),
            "trials_by_kind": dict(a.trials_by_kind),
        }


def assessor_lines(session: Session, campaign: Campaign, fmt: str) -> Iterator[str]:
    records = list(assessor_records(session, campaign))
    if fmt == "json":
        return iter([json.dumps({"assessors": records}, indent=1, allow_nan=False) + "\n"])

    def flat(record: dict[str, Any]) -> dict[str, Any]:
        return {
            **record,
            **{
                k: 1 if record[k] else 0
                for k in ("revoked", "set_aside", "paused", "assessed", "flagged")
            },
            "reasons": json.dumps(record["reasons"]) if record["reasons"] else None,
            "metrics": json.dumps(record["metrics"], sort_keys=True) if record["metrics"] else None,
            # every kind, in the order of models.TRIAL_KINDS
            "trials_by_kind": json.dumps(record["trials_by_kind"]),
        }

    return _csv_lines(ASSESSOR_COLUMNS, (flat(r) for r in records))


def _csv_lines(columns: tuple[str, ...], records: Iterable[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for record in records:
        writer.writerow(["" if record[c] is None else record[c] for c in columns])
        if buffer.tell() >= _PIECE:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def _jsonl_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, allow_nan=False) + "\n"


def judgment_lines(session: Session, campaign: Campaign, fmt: str) -> Iterator[str]:
    records = judgment_records(session, campaign)
    if fmt == "jsonl":
        return _jsonl_lines(records)
    return _csv_lines(JUDGMENT_COLUMNS, records)


# ------------------------------------------------------------------ estimates


def estimate_records(session: Session, campaign: Campaign, scale: str) -> Iterator[dict[str, Any]]:
    """E[R] and Var[R] (on the scale's levels) of every unjudged pool pair, as the engine
    estimates them now, with the campaign's estimator and the part of it that made the
    estimate (``prior``, ``m_out``, ``m_jud``)."""
    state = build_engine(session, campaign, scale=scale)
    engine = state.engine
    external = _external_ids(session, campaign.id)
    query_doc = dict(
        session.query(Query.id, Query.document_id).filter(Query.campaign_id == campaign.id).all()
    )
    mean, var, source, judged = (
        engine.mean.tolist(),
        engine.var.tolist(),
        engine.source.tolist(),
        engine.judged.tolist(),
    )
    for p, (query_id, document_id) in enumerate(state.pair_ids):
        if judged[p]:
            continue
        yield {
            "query": external[query_doc[query_id]],
            "document": external[document_id],
            "scale": scale,
            "expected_relevance": mean[p],
            "variance": var[p],
            "estimator": campaign.estimator,
            "source": _SOURCE_NAMES.get(source[p], str(source[p])),
        }


def _external_ids(session: Session, campaign_id: int) -> dict[int, str]:
    rows = session.query(Document.id, Document.external_id).filter(
        Document.campaign_id == campaign_id
    )
    return {int(i): str(e) for i, e in rows}


def estimate_lines(session: Session, campaign: Campaign, scale: str, fmt: str) -> Iterator[str]:
    records = estimate_records(session, campaign, scale)
    if fmt == "jsonl":
        return _jsonl_lines(records)
    return _csv_lines(ESTIMATE_COLUMNS, records)


# ------------------------------------------------------------------ results


def results_document(session: Session, campaign: Campaign, scale: str) -> dict[str, Any]:
    """The results service's document for every measure on ``scale``."""
    return {
        "campaign": campaign.slug,
        "scale": scale,
        "measure_definitions": MEASURE_DEFINITIONS,
        "results": {
            measure: read.results_for(session, campaign.slug, measure, scale).to_dict()
            for measure in MEASURES
        },
    }


def results_json(session: Session, campaign: Campaign, scale: str) -> str:
    return json.dumps(results_document(session, campaign, scale), allow_nan=False, indent=1) + "\n"


def snapshot_results_document(session: Session, campaign: Campaign, scale: str) -> dict[str, Any]:
    """The results document of a bundle: every measure computed from the rows the bundle is
    read from, never the planner's stored document, whose projection is a time-bounded
    simulation and whose version counts the planner's writes. So the results are a function
    of what the bundle holds: ``version`` and ``computed_at`` are null (the manifest's
    ``created_at`` says when), ``projections`` empty and ``projection`` null, and the
    assessors carry no database id and no message to them."""

    def load(each: Campaign, scale: str) -> CampaignRows:
        return load_rows(session, each, scale=scale)

    documents: dict[str, Any] = {}
    for measure in MEASURES:
        snapshot = read.read_snapshot(session, campaign.slug, measure, scale)
        snapshot = replace(snapshot, stored=None, computed_at=None)
        document = read.complete(snapshot, load).to_dict()
        document["version"] = None
        document["computed_at"] = None
        for assessor in document["assessors"]:
            # by pseudonym only: no database id, no organizer's message to them
            assessor.pop("id", None)
            assessor.pop("pause_reason", None)
        documents[measure] = document
    return {
        "campaign": campaign.slug,
        "scale": scale,
        "measure_definitions": MEASURE_DEFINITIONS,
        "results": documents,
    }


# ------------------------------------------------------------------ runs


def run_records(session: Session, campaign: Campaign) -> Iterator[tuple[str, str]]:
    """(system, ``qid Q0 docno rank score tag`` line): each system's lists as the measures see
    them (the query clip and clips by the query's artist removed, MIREX practice), ranked
    1..n again, with scores decreasing with rank; by system name, query and rank."""
    various = {a.lower() for a in DEFAULT_VARIOUS_ARTISTS}
    top = repository.max_rank(session, campaign.id)
    current: tuple[str, str] | None = None
    rank = 0
    for row in repository.result_rows(session, campaign.id):
        if bool(row.is_query):
            continue
        artist = row.query_artist
        if artist is not None and artist.lower() not in various and row.document_artist == artist:
            continue
        if (row.system, row.query) != current:
            current = (row.system, row.query)
            rank = 0
        rank += 1
        yield (
            row.system,
            f"{_trec_id(row.query, 'query')} Q0 {_trec_id(row.document, 'document')} {rank} "
            f"{top + 1 - rank} {_trec_id(row.system, 'system')}\n",
        )


def run_lines(session: Session, campaign: Campaign) -> Iterator[str]:
    """Every system's run in one file (the ``tag`` column names the system)."""
    for _system, line in run_records(session, campaign):
        yield line


# ------------------------------------------------------------------ bundle and manifest


def package_version() -> str:
    try:
        return version("mtcjudge")
    except PackageNotFoundError:  # a source tree that was never installed
        return "unknown (not installed)"


def completeness(counts: dict[str, int]) -> str:
    pool, judged = counts["pool_pairs"], counts["judged_pool_pairs"]
    if pool and judged == pool:
        return f"complete: every one of the {pool} pool pairs is judged"
    share = 100.0 * judged / pool if pool else 0.0
    return (
        f"partially judged: {judged} of {pool} pool pairs ({share:.1f} %) are judged. The "
        "qrels and judgments hold only the judged pairs; the estimates files hold the "
        f"engine's expected relevance of the {pool - judged} others. A measure computed from "
        "the qrels alone counts every unjudged document as 0 (not similar), so it differs from "
        "the results, which use the estimates"
    )


def campaign_summary(campaign: Campaign) -> dict[str, Any]:
    """What a campaign is and how it judges: the settings a report shows (the export's
    ``settings.json`` adds what a restore needs)."""
    return {
        "slug": campaign.slug,
        "name": campaign.name,
        "description": campaign.description,
        "status": campaign.status,
        "scale": campaign.scale,
        "k": campaign.k,
        "measure": campaign.measure,
        "estimator": campaign.estimator,
        "policy": campaign.policy,
        "target": campaign.target,
        "judgments_per_pair": campaign.judgments_per_pair,
    }


def _campaign_settings(campaign: Campaign) -> dict[str, Any]:
    return {
        **campaign_summary(campaign),
        "seed": campaign.seed,
        "keep_collecting": campaign.keep_collecting,
        "lease_minutes": campaign.lease_minutes,
        "listen_seconds": campaign.listen_seconds,
        "quality_rate": campaign.quality_rate,
        "auto_pause": campaign.auto_pause,
        "collection_version": campaign.collection_version,
        "created_at": _time(campaign.created_at),
    }


def _member(bundle: zipfile.ZipFile, name: str, stamp: tuple[int, ...]) -> IO[bytes]:
    info = zipfile.ZipInfo(name, date_time=stamp)  # type: ignore[arg-type]
    info.compress_type = zipfile.ZIP_DEFLATED
    return bundle.open(info, "w", force_zip64=True)


def _write_run_members(
    bundle: zipfile.ZipFile, session: Session, campaign: Campaign, stamp: tuple[int, ...]
) -> list[dict[str, Any]]:
    """``runs/SYSTEM.txt``: one TREC run file per system, as trec_eval takes them."""
    files: list[dict[str, Any]] = []
    member: IO[bytes] | None = None
    writer: HashingWriter | None = None
    system: str | None = None
    batch: list[str] = []

    def close() -> None:
        if member is None or writer is None:
            return
        writer.write("".join(batch).encode())
        batch.clear()
        member.close()
        name = f"runs/{system}.txt"
        files.append(
            {
                "name": name,
                "what": "runs",
                "system": system,
                "sha256": writer.sha256.hexdigest(),
                "bytes": writer.bytes,
            }
        )

    for name, line in run_records(session, campaign):
        if name != system:
            close()
            if "/" in name or name in (".", ".."):
                raise InvalidInput(f"the system name {name!r} cannot be a file name in the bundle")
            system = name
            member = _member(bundle, f"runs/{name}.txt", stamp)
            writer = HashingWriter(member)  # type: ignore[arg-type]
        batch.append(line)
        if len(batch) >= 1000 and writer is not None:
            writer.write("".join(batch).encode())
            batch.clear()
    close()
    return files


def write_bundle(
    session: Session, campaign: Campaign, out: BinaryIO, rule: str, *, now: datetime
) -> None:
    """One zip: both scales' qrels, estimates and results, the judgments, the runs, the
    grades, and last the manifest with every other file's SHA-256."""
    members: list[tuple[str, str, str | None]] = []
    for each in _BUNDLE_SCALES:
        members.append((f"qrels-{each}.txt", "qrels", each))
    members += [
        ("judgments.csv", "judgments", None),
        ("assessors.csv", "assessors", None),
    ]
    for each in _BUNDLE_SCALES:
        members.append((f"estimates-{each}.csv", "estimates", each))
    for each in _BUNDLE_SCALES:
        members.append((f"results-{each}.json", "results", each))
    members += [("grades.json", "grades", None), ("grades.md", "grades", None)]
    members += [(name, "state", None) for name in STATE_COLUMNS]

    def lines_of(name: str, what: str, scale: str | None) -> Iterable[str]:
        if what == "qrels":
            return qrels_lines(session, campaign, scale or campaign.scale, rule)
        if what == "judgments":
            return judgment_lines(session, campaign, "csv")
        if what == "assessors":
            return assessor_lines(session, campaign, "csv")
        if what == "estimates":
            return estimate_lines(session, campaign, scale or campaign.scale, "csv")
        if what == "results":
            document = snapshot_results_document(session, campaign, scale or campaign.scale)
            return [json.dumps(document, allow_nan=False, indent=1) + "\n"]
        if what == "state":
            return _csv_lines(STATE_COLUMNS[name], state_records(session, campaign, name))
        if name.endswith(".json"):
            return [json.dumps({"grades": GRADES, "measures": MEASURE_DEFINITIONS}, indent=1)]
        return [grades_markdown()]

    files: list[dict[str, Any]] = []
    stamp = as_utc(now).astimezone(UTC).timetuple()[:6]
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, what, scale in members:
            with _member(bundle, name, stamp) as member:
                writer = HashingWriter(member)  # type: ignore[arg-type]
                _write_lines(writer, lines_of(name, what, scale))
            entry: dict[str, Any] = {
                "name": name,
                "what": what,
                "sha256": writer.sha256.hexdigest(),
                "bytes": writer.bytes,
            }
            if scale is not None:
                entry["scale"] = scale
            if what == "qrels":
                entry["aggregate"] = rule
            files.append(entry)
        files += _write_run_members(bundle, session, campaign, stamp)
        counts = repository.counts(session, campaign.id)
        counts["unjudged_pool_pairs"] = counts["pool_pairs"] - counts["judged_pool_pairs"]
        manifest = {
            "format": BUNDLE_FORMAT,
            "format_version": BUNDLE_FORMAT_VERSION,
            "software": {"name": "mtcjudge", "version": package_version()},
            "created_at": now.isoformat(),
            "campaign": _campaign_settings(campaign),
            "counts": counts,
            "complete": counts["pool_pairs"] > 0 and counts["unjudged_pool_pairs"] == 0,
            "completeness": completeness(counts),
            "qrels_aggregate": {
                "rule": rule,
                "definition": (
                    "one line per judged pair: the mean (or median) of its judgments on the "
                    "scale, rounded half up to an integer"
                ),
            },
            "measure_definitions": MEASURE_DEFINITIONS,
            "files": files,
        }
        info = zipfile.ZipInfo("manifest.json", date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        bundle.writestr(info, json.dumps(manifest, indent=1, allow_nan=False) + "\n")
