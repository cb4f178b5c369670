"""Researchers' exports of a campaign: qrels, every judgment, the estimates of the unjudged
pairs, the results document, the runs, and a self-describing bundle of all of them.

Every export is written to a binary stream as it is read: the rows come from a cursor
(:mod:`mtcjudge.exports.repository`) and leave in batches, so memory does not grow with the number
of judgments. Nothing is re-derived: the results are :mod:`mtcjudge.results.read`'s document,
the estimates the engine of :mod:`mtcjudge.campaign_engine.build`. The formats are in
docs/exports.md.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any, BinaryIO, TypeVar

import numpy as np
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mtcjudge.assessors.overview import assessor_overview
from mtcjudge.campaign_engine.build import CampaignEngine, CampaignRows, build_engine, load_rows
from mtcjudge.campaigns import service as campaigns
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository
from mtcjudge.exports.empty import EmptyExport, why_empty
from mtcjudge.exports.formats import (
    AGGREGATES,
    GRADES,
    MEASURE_DEFINITIONS,
    WHATS,
    HashingWriter,
    aggregate,
    grades_markdown,
    run_file_name,
)
from mtcjudge.exports.state import STATE_COLUMNS, state_records
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS
from mtcjudge.models import Campaign, as_utc, utcnow
from mtcjudge.mtc.engine import MTCEngine
from mtcjudge.mtc.estimators import SOURCE_JUDGED, SOURCE_M_JUD, SOURCE_M_OUT, SOURCE_PRIOR
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.scales import BROAD, FINE, SCALES, get_scale
from mtcjudge.results import read

__all__ = [
    "ASSESSOR_COLUMNS",
    "BUNDLE_FORMAT",
    "BUNDLE_FORMAT_VERSION",
    "ENTRY_COLUMNS",
    "ESTIMATE_COLUMNS",
    "FORMATS",
    "JUDGMENT_COLUMNS",
    "SCALES",
    "WHATS",
    "EmptyExport",
    "ExportSpec",
    "Written",
    "begin_snapshot",
    "run_files",
    "write_export",
]

_Row = TypeVar("_Row")

#: the order of the scales' files in a bundle: FINE's first
_BUNDLE_SCALES = (FINE.name, BROAD.name)
#: the formats of each export, the first one the default
FORMATS: dict[str, tuple[str, ...]] = {
    "qrels": ("trec",),
    "judgments": ("csv", "jsonl"),
    "estimates": ("csv", "jsonl"),
    "entries": ("csv", "jsonl"),
    "offsets": ("json",),
    "results": ("json",),
    "runs": ("trec", "zip"),
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
#: every entry the engine scores (a result of one system): what the engine expects of it
ENTRY_COLUMNS = (
    "system",
    "query",
    "document",
    "rank",
    "scale",
    "judged",
    "expected_relevance",
    "pair_expected_relevance",
    "offset",
    "variance",
    "group",
    "artist",
    "query_genre",
    "genre",
    "stratum",
    "estimator",
    "source",
)
#: the columns of the entries export that name the level of each factor of offsets
_FACTOR_COLUMNS: dict[str, tuple[str, ...]] = {
    "system": ("system",),
    "result group": ("system", "group"),
    "query": ("query",),
    "artist": ("artist",),
    "genre pair": ("query_genre", "genre"),
    "estimate stratum": ("stratum",),
}
#: 2: the ``state/`` members, campaign-relative lease numbers, results computed from the rows
BUNDLE_FORMAT_VERSION = 2
BUNDLE_FORMAT = "mtcjudge export bundle"
_SOURCE_NAMES = {SOURCE_PRIOR: "prior", SOURCE_M_OUT: "m_out", SOURCE_M_JUD: "m_jud"}
_ENTRY_SOURCES = {**_SOURCE_NAMES, SOURCE_JUDGED: "judged"}
#: characters handed to the stream at a time
_PIECE = 1 << 16


@dataclass(frozen=True)
class ExportSpec:
    """What to export: ``what`` (:data:`WHATS`), the scale of qrels, estimates and results
    (default: the campaign's), the format (default: the first of :data:`FORMATS`; the runs
    as ``zip``: one TREC file per system), the rule for several judgments of a pair in the
    qrels, and whether an export without rows is written (``allow_empty``) or refused
    (:class:`EmptyExport`)."""

    what: str
    scale: str | None = None
    format: str | None = None
    aggregate: str = "mean"
    allow_empty: bool = False

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
        if self.what in ("qrels", "estimates", "entries", "offsets", "results"):
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


@dataclass(frozen=True)
class Written:
    """An export written: its file name, and why it has no rows when it has none (it was
    written because :attr:`ExportSpec.allow_empty` said so)."""

    name: str
    empty: str | None = None


_END = object()


def _rows(
    rows: Iterator[_Row], spec: ExportSpec, why: Callable[[], EmptyExport], empty: list[str]
) -> Iterator[_Row]:
    """``rows`` as they come, once the first one is read: none is an :class:`EmptyExport`
    (``why()``), or with ``allow_empty`` its reason appended to ``empty``. Nothing has been
    written when it is raised."""
    first = next(rows, _END)
    if first is _END:
        refusal = why()
        if not spec.allow_empty:
            raise refusal
        empty.append(refusal.reason)
        return iter(())
    return itertools.chain([first], rows)  # type: ignore[list-item]


def write_export(
    session: Session, slug: str, spec: ExportSpec, out: BinaryIO, *, now: datetime | None = None
) -> Written:
    """Write the export of campaign ``slug`` to ``out``; returns its file name (and why it
    has no rows, when ``spec.allow_empty`` let an export without rows be written).

    Raises
    ------
    CampaignNotFound
    EmptyExport
        The export would have no rows (a header at most) and ``spec.allow_empty`` is false;
        nothing was written to ``out``. The results and the bundle always have content.
    InvalidInput
        An id with white space in a TREC file (qrels, runs), whose columns are separated by
        white space.
    """
    campaign = campaigns.get_campaign(session, slug)
    scale = spec.scale or campaign.scale
    what, fmt = spec.what, spec.file_format
    empty: list[str] = []

    def rows(found: Iterator[_Row]) -> Iterator[_Row]:
        return _rows(found, spec, lambda: why_empty(session, campaign, what, scale), empty)

    if what == "qrels":
        values = rows(repository.pair_values(session, campaign.id, scale))
        _write_lines(out, qrels_lines(session, campaign, scale, spec.aggregate, values))
    elif what == "judgments":
        judgments = rows(judgment_records(session, campaign))
        _write_lines(out, judgment_lines(session, campaign, fmt, judgments))
    elif what == "estimates":
        estimates = rows(estimate_records(session, campaign, scale))
        _write_lines(out, estimate_lines(session, campaign, scale, fmt, records=estimates))
    elif what == "entries":
        entries = rows(entry_records(session, campaign, scale))
        _write_lines(out, entry_lines(session, campaign, scale, fmt, records=entries))
    elif what == "offsets":
        _write_lines(out, [offsets_json(session, campaign, scale)])
    elif what == "results":
        _write_lines(out, [results_json(session, campaign, scale)])
    elif what == "runs":
        records = rows(run_records(session, campaign))
        if fmt == "zip":
            write_runs_zip(out, records, now=now or utcnow())
        else:
            _write_lines(out, (line for _system, line in records))
    elif what == "assessors":
        assessors = rows(assessor_records(session, campaign))
        _write_lines(out, assessor_lines(session, campaign, fmt, assessors))
    else:
        write_bundle(session, campaign, out, spec.aggregate, now=now or utcnow())
    return Written(spec.file_name(campaign), empty[0] if empty else None)


def run_files(
    session: Session, slug: str, *, allow_empty: bool = False
) -> tuple[Iterator[tuple[str, str, Iterator[str]]], str | None]:
    """Every system's run, one TREC file each: (system, file name, lines), by system name,
    as they are read (:func:`~mtcjudge.exports.formats.run_file_name` names the files); and
    why there are none when there are none and ``allow_empty`` let it be.

    Raises
    ------
    CampaignNotFound
    EmptyExport
        The campaign has no results to write and ``allow_empty`` is false.
    """
    campaign = campaigns.get_campaign(session, slug)
    empty: list[str] = []
    spec = ExportSpec("runs", allow_empty=allow_empty)
    records = _rows(
        run_records(session, campaign),
        spec,
        lambda: why_empty(session, campaign, "runs", campaign.scale),
        empty,
    )

    def files() -> Iterator[tuple[str, str, Iterator[str]]]:
        for system, group in itertools.groupby(records, key=lambda record: record[0]):
            yield system, run_file_name(system), (line for _system, line in group)

    return files(), empty[0] if empty else None


def write_runs_zip(
    out: BinaryIO, records: Iterable[tuple[str, str]], *, now: datetime
) -> list[str]:
    """One zip of ``runs/NAME.txt`` members, one TREC run file per system (the names of
    :func:`~mtcjudge.exports.formats.run_file_name`); returns the member names."""
    stamp = as_utc(now).astimezone(UTC).timetuple()[:6]
    names: list[str] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for system, group in itertools.groupby(records, key=lambda record: record[0]):
            name = f"runs/{run_file_name(system)}"
            with _member(archive, name, stamp) as member:
                _write_lines(member, (line for _system, line in group))
            names.append(name)
    return names


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


def qrels_lines(
    session: Session,
    campaign: Campaign,
    scale: str,
    rule: str,
    rows: Iterable[Any] | None = None,
) -> Iterator[str]:
    """``qid 0 docno rel``: one line per judged pair, several judgments aggregated (of
    ``rows`` of :func:`~mtcjudge.exports.repository.pair_values` when they are read
    already)."""
    pair: tuple[str, str] | None = None
    values: list[float] = []
    if rows is None:
        rows = repository.pair_values(session, campaign.id, scale)
    for query, document, value in rows:
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


def assessor_lines(
    session: Session,
    campaign: Campaign,
    fmt: str,
    records: Iterable[dict[str, Any]] | None = None,
) -> Iterator[str]:
    records = list(assessor_records(session, campaign) if records is None else records)
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


def judgment_lines(
    session: Session,
    campaign: Campaign,
    fmt: str,
    records: Iterable[dict[str, Any]] | None = None,
) -> Iterator[str]:
    if records is None:
        records = judgment_records(session, campaign)
    if fmt == "jsonl":
        return _jsonl_lines(records)
    return _csv_lines(JUDGMENT_COLUMNS, records)


# ------------------------------------------------------------------ estimates


def estimate_records(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> Iterator[dict[str, Any]]:
    """E[R] and Var[R] (on the scale's levels) of every unjudged pool pair, as the engine
    estimates them now, with the campaign's estimator and the part of it that made the
    estimate (``prior``, ``m_out``, ``m_jud``). ``state``: the campaign's engine on ``scale``
    if already built."""
    state = state or build_engine(session, campaign, scale=scale)
    engine = state.engine
    labels = _pair_labels(session, campaign, state)
    mean, var, source, judged = (
        engine.mean.tolist(),
        engine.var.tolist(),
        engine.source.tolist(),
        engine.judged.tolist(),
    )
    for p, label in enumerate(labels):
        if judged[p]:
            continue
        yield {
            "query": label.query,
            "document": label.document,
            "scale": scale,
            "expected_relevance": mean[p],
            "variance": var[p],
            "estimator": campaign.estimator,
            "source": _SOURCE_NAMES.get(source[p], str(source[p])),
        }


@dataclass(frozen=True)
class _PairLabel:
    """A pool pair's external ids and the metadata its offsets are grouped by, as the engine
    sees them (an artist of "various artists" is none)."""

    query: str
    document: str
    artist: str | None
    query_genre: str | None
    genre: str | None


def _pair_labels(session: Session, campaign: Campaign, state: CampaignEngine) -> list[_PairLabel]:
    """Every pool pair's :class:`_PairLabel`, in engine order."""
    docs = repository.documents(session, campaign.id)
    query_doc = repository.query_documents(session, campaign.id)
    various = {a.lower() for a in DEFAULT_VARIOUS_ARTISTS}
    labels = []
    for query_id, document_id in state.pair_ids:
        query_external, _, query_genre = docs[query_doc[query_id]]
        external, artist, genre = docs[document_id]
        if artist is not None and artist.lower() in various:
            artist = None
        labels.append(_PairLabel(query_external, external, artist, query_genre, genre))
    return labels


def estimate_lines(
    session: Session,
    campaign: Campaign,
    scale: str,
    fmt: str,
    state: CampaignEngine | None = None,
    *,
    records: Iterable[dict[str, Any]] | None = None,
) -> Iterator[str]:
    """The estimates' lines (of ``records`` when they are read already)."""
    if records is None:
        records = estimate_records(session, campaign, scale, state)
    if fmt == "jsonl":
        return _jsonl_lines(records)
    return _csv_lines(ESTIMATE_COLUMNS, records)


# ------------------------------------------------------------------ entries and offsets


def entry_records(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> Iterator[dict[str, Any]]:
    """Every entry the engine scores (a result of one system in its top k after the MIREX
    filtering) as a record of :data:`ENTRY_COLUMNS`: what the engine expects of it
    (``expected_relevance``: the pair's estimate or judged value plus the offsets the
    estimator learnt for the entry), by query, document and system."""
    state = state or build_engine(session, campaign, scale=scale)
    engine = state.engine
    c = engine.collection
    labels = _pair_labels(session, campaign, state)
    offsets = engine.entry_offsets()
    mean, var, source, judged = (
        engine.mean.tolist(),
        engine.var.tolist(),
        engine.source.tolist(),
        engine.judged.tolist(),
    )
    offset = offsets.offset.tolist()
    pair, system, rank = c.entry_pair.tolist(), c.entry_system.tolist(), c.entry_rank.tolist()
    shared = (c.n_retrieving > 1).tolist()
    strata = _strata(engine)
    names = state.system_names
    for e in np.lexsort((c.entry_system, c.entry_pair)).tolist():
        p = pair[e]
        label = labels[p]
        yield {
            "system": names[system[e]],
            "query": label.query,
            "document": label.document,
            "rank": rank[e],
            "scale": scale,
            "judged": 1 if judged[p] else 0,
            "expected_relevance": mean[p] + offset[e],
            "pair_expected_relevance": mean[p],
            "offset": offset[e],
            "variance": var[p],
            "group": "shared" if shared[p] else "unshared",
            "artist": label.artist,
            "query_genre": label.query_genre,
            "genre": label.genre,
            "stratum": strata[p],
            "estimator": campaign.estimator,
            "source": _ENTRY_SOURCES.get(source[p], str(source[p])),
        }


def _strata(engine: MTCEngine) -> list[str | None]:
    """Every pool pair's variance stratum (``joint``, docs/method.md §8.2) as a label, "1" for
    the estimates the model is surest of; None for an engine without strata."""
    stratum = engine.variance_stratum
    if stratum is None:
        return [None] * engine.collection.n_pairs
    return [str(int(s) + 1) for s in stratum.tolist()]


def entry_lines(
    session: Session,
    campaign: Campaign,
    scale: str,
    fmt: str,
    state: CampaignEngine | None = None,
    *,
    records: Iterable[dict[str, Any]] | None = None,
) -> Iterator[str]:
    """The entries' lines (of ``records`` when they are read already)."""
    if records is None:
        records = entry_records(session, campaign, scale, state)
    if fmt == "jsonl":
        return _jsonl_lines(records)
    return _csv_lines(ENTRY_COLUMNS, records)


def offsets_document(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> dict[str, Any]:
    """What the score variances need beyond the entries: the engine's variance factor and
    the posterior of every offset level an entry is at, each level named by the values of
    the entries file's columns that say which entries share it (docs/exports.md)."""
    state = state or build_engine(session, campaign, scale=scale)
    engine = state.engine
    c = engine.collection
    labels = _pair_labels(session, campaign, state)
    offsets = engine.entry_offsets()
    names = state.system_names
    shared = c.n_retrieving > 1
    strata = _strata(engine)
    factors = []
    for factor in offsets.factors:
        columns = _FACTOR_COLUMNS.get(factor.name)
        if columns is None:  # an engine with a factor the exports cannot name yet
            raise RuntimeError(f"the offsets of {factor.name!r} have no columns to name them")
        at = np.flatnonzero(factor.level >= 0)
        levels, first = np.unique(factor.level[at], return_index=True)
        rows = []
        for level, e in zip(levels.tolist(), at[first].tolist(), strict=True):
            p = int(c.entry_pair[e])
            label = labels[p]
            values = {
                "system": names[int(c.entry_system[e])],
                "group": "shared" if shared[p] else "unshared",
                "query": label.query,
                "artist": label.artist,
                "query_genre": label.query_genre,
                "genre": label.genre,
                "stratum": strata[p],
            }
            rows.append(
                {
                    **{column: values[column] for column in columns},
                    "mean": float(factor.mean[level]),
                    "variance": float(factor.variance[level]),
                }
            )
        factors.append({"name": factor.name, "columns": list(columns), "levels": rows})
    return {
        "campaign": campaign.slug,
        "scale": scale,
        "estimator": campaign.estimator,
        "k": c.k,
        "queries": c.n_queries,
        "max": round(get_scale(scale).lmax),
        "rbp_p": engine.config.rbp_p,
        "variance_scale": offsets.variance_scale,
        "variance_factors": _stratum_factors(engine),
        "factors": factors,
    }


def _stratum_factors(engine: MTCEngine) -> list[dict[str, Any]]:
    """``joint``'s variance factor of every stratum (docs/method.md §8.2), already in the
    entries' ``variance``; empty for an engine without strata."""
    stratum = engine.variance_stratum
    if stratum is None:
        return []
    factor = engine.var_factor if engine.var_factor is not None else np.ones(stratum.shape[0])
    levels, first = np.unique(stratum, return_index=True)
    return [
        {"stratum": str(int(s) + 1), "factor": float(factor[p])}
        for s, p in zip(levels.tolist(), first.tolist(), strict=True)
    ]


def offsets_json(
    session: Session, campaign: Campaign, scale: str, state: CampaignEngine | None = None
) -> str:
    document = offsets_document(session, campaign, scale, state)
    return json.dumps(document, allow_nan=False, indent=1) + "\n"


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
        f"estimator's expected relevance of the {pool - judged} others, and the entries files "
        "what the engine expects of every system's result, judged or not, from which (with "
        "the offsets files) the results are rebuilt. A measure computed from the qrels alone "
        "counts every unjudged document as 0 (not similar), so it differs from the results"
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
    """One zip: both scales' qrels, estimates, entries, offsets and results, the judgments,
    the runs, the grades, and last the manifest with every other file's SHA-256."""
    members: list[tuple[str, str, str | None]] = []
    for each in _BUNDLE_SCALES:
        members.append((f"qrels-{each}.txt", "qrels", each))
    members += [
        ("judgments.csv", "judgments", None),
        ("assessors.csv", "assessors", None),
    ]
    for each in _BUNDLE_SCALES:
        members.append((f"estimates-{each}.csv", "estimates", each))
        members.append((f"entries-{each}.csv", "entries", each))
        members.append((f"offsets-{each}.json", "offsets", each))
    for each in _BUNDLE_SCALES:
        members.append((f"results-{each}.json", "results", each))
    # the estimates, entries and offsets of a scale read one engine, built once
    engines: dict[str, CampaignEngine] = {}

    def engine_on(scale: str) -> CampaignEngine:
        if scale not in engines:
            engines.clear()
            engines[scale] = build_engine(session, campaign, scale=scale)
        return engines[scale]

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
            scale = scale or campaign.scale
            return estimate_lines(session, campaign, scale, "csv", engine_on(scale))
        if what == "entries":
            scale = scale or campaign.scale
            return entry_lines(session, campaign, scale, "csv", engine_on(scale))
        if what == "offsets":
            scale = scale or campaign.scale
            return [offsets_json(session, campaign, scale, engine_on(scale))]
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
