"""The TREC files of a campaign: the qrels (one line per judged pair) and the systems' runs
(each system's lists as the measures see them)."""

from __future__ import annotations

import itertools
import zipfile
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any, BinaryIO

from sqlalchemy.orm import Session

from mtcjudge.exports import repository
from mtcjudge.exports.formats import (
    aggregate,
    run_file_name,
    trec_id,
    write_lines,
    zip_member,
    zip_stamp,
)
from mtcjudge.ingest.loader import DEFAULT_VARIOUS_ARTISTS
from mtcjudge.models import Campaign


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
            pair = (trec_id(query, "query"), trec_id(document, "document"))
            values = []
        values.append(float(value))
    if pair is not None:
        yield f"{pair[0]} 0 {pair[1]} {aggregate(values, rule)}\n"


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
            f"{trec_id(row.query, 'query')} Q0 {trec_id(row.document, 'document')} {rank} "
            f"{top + 1 - rank} {trec_id(row.system, 'system')}\n",
        )


def write_runs_zip(
    out: BinaryIO, records: Iterable[tuple[str, str]], *, now: datetime
) -> list[str]:
    """One zip of ``runs/NAME.txt`` members, one TREC run file per system (the names of
    :func:`~mtcjudge.exports.formats.run_file_name`); returns the member names."""
    stamp = zip_stamp(now)
    names: list[str] = []
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for system, group in itertools.groupby(records, key=lambda record: record[0]):
            name = f"runs/{run_file_name(system)}"
            with zip_member(archive, name, stamp) as member:
                write_lines(member, (line for _system, line in group))
            names.append(name)
    return names
