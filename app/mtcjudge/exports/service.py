"""Researchers' exports of a campaign: qrels, every judgment, the estimates of the unjudged
pairs, the results document, the runs, and a self-describing bundle of all of them.

Every export is written to a binary stream as it is read: the rows come from a cursor
(:mod:`mtcjudge.exports.repository`) and leave in batches, so memory does not grow with the number
of judgments. Nothing is re-derived: the results are :mod:`mtcjudge.results.read`'s document,
the estimates the engine of :mod:`mtcjudge.campaign_engine.build`. Each kind of export is
written by its module (:data:`mtcjudge.exports.formats.KINDS` lists them); this one chooses
the kind and refuses an export without rows. The formats are in docs/exports.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import BinaryIO, TypeVar

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from mtcjudge.campaigns import service as campaigns
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository
from mtcjudge.exports.bundle_write import write_bundle
from mtcjudge.exports.empty import EmptyExport, why_empty
from mtcjudge.exports.estimate_files import (
    ENTRY_COLUMNS,
    ESTIMATE_COLUMNS,
    entry_records,
    estimate_records,
    offsets_document,
)
from mtcjudge.exports.formats import (
    AGGREGATES,
    EXTENSIONS,
    KINDS,
    MEDIA_TYPES,
    WHATS,
    json_text,
    record_lines,
    run_file_name,
    write_lines,
)
from mtcjudge.exports.judgment_files import (
    JUDGMENT_COLUMNS,
    assessor_lines,
    assessor_records,
    judgment_records,
)
from mtcjudge.exports.results_files import results_document
from mtcjudge.exports.trec_files import qrels_lines, run_records, write_runs_zip
from mtcjudge.models import Campaign, utcnow
from mtcjudge.mtc.scales import SCALES

__all__ = [
    "SCALES",
    "EmptyExport",
    "ExportSpec",
    "Written",
    "begin_snapshot",
    "run_files",
    "write_export",
]

_Row = TypeVar("_Row")


@dataclass(frozen=True)
class ExportSpec:
    """What to export: ``what`` (:data:`WHATS`), the scale of qrels, estimates and results
    (default: the campaign's), the format (default: the first of its kind's in
    :data:`~mtcjudge.exports.formats.KINDS`; the runs
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
        formats = KINDS[self.what].formats
        if self.format is not None and self.format not in formats:
            raise InvalidInput(
                f"{self.what} exports as {' or '.join(formats)}; found {self.format!r}"
            )
        if self.aggregate not in AGGREGATES:
            raise InvalidInput(
                f"aggregate must be {' or '.join(AGGREGATES)}; found {self.aggregate!r}"
            )

    @property
    def file_format(self) -> str:
        return self.format or KINDS[self.what].formats[0]

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.file_format]

    def file_name(self, campaign: Campaign) -> str:
        """``SLUG-WHAT[-SCALE].EXT``: the scale is named where it matters."""
        parts = [campaign.slug, self.what]
        if KINDS[self.what].scaled:
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
        write_lines(out, qrels_lines(session, campaign, scale, spec.aggregate, values))
    elif what == "judgments":
        judgments = rows(judgment_records(session, campaign))
        write_lines(out, record_lines(fmt, JUDGMENT_COLUMNS, judgments))
    elif what == "estimates":
        estimates = rows(estimate_records(session, campaign, scale))
        write_lines(out, record_lines(fmt, ESTIMATE_COLUMNS, estimates))
    elif what == "entries":
        entries = rows(entry_records(session, campaign, scale))
        write_lines(out, record_lines(fmt, ENTRY_COLUMNS, entries))
    elif what == "offsets":
        write_lines(out, [json_text(offsets_document(session, campaign, scale))])
    elif what == "results":
        write_lines(out, [json_text(results_document(session, campaign, scale))])
    elif what == "runs":
        records = rows(run_records(session, campaign))
        if fmt == "zip":
            write_runs_zip(out, records, now=now or utcnow())
        else:
            write_lines(out, (line for _system, line in records))
    elif what == "assessors":
        assessors = rows(assessor_records(session, campaign))
        write_lines(out, assessor_lines(fmt, assessors))
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
