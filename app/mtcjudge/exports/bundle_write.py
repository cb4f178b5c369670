"""The export bundle: one zip of every export of both scales, the grades, the campaign's
state (for a restore) and last the manifest with every other file's SHA-256."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable
from datetime import datetime
from typing import IO, Any, BinaryIO

from sqlalchemy.orm import Session

from mtcjudge.campaign_engine.build import CampaignEngine, load_campaign_engine
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository
from mtcjudge.exports.estimate_files import (
    ENTRY_COLUMNS,
    ESTIMATE_COLUMNS,
    entry_records,
    estimate_records,
    offsets_document,
)
from mtcjudge.exports.formats import (
    GRADES,
    MEASURE_DEFINITIONS,
    HashingWriter,
    csv_lines,
    grades_markdown,
    json_text,
    write_lines,
    zip_member,
    zip_stamp,
)
from mtcjudge.exports.judgment_files import (
    JUDGMENT_COLUMNS,
    assessor_lines,
    assessor_records,
    judgment_records,
)
from mtcjudge.exports.manifest import bundle_manifest
from mtcjudge.exports.results_files import snapshot_results_document
from mtcjudge.exports.state import STATE_COLUMNS, state_records
from mtcjudge.exports.trec_files import qrels_lines, run_records
from mtcjudge.models import Campaign
from mtcjudge.mtc.scales import BROAD, FINE

__all__ = ["write_bundle"]

#: the order of the scales' files in a bundle: FINE's first
_BUNDLE_SCALES = (FINE.name, BROAD.name)
#: (name, what, scale) of every file of a bundle but the runs and the manifest, in the order
#: they are written
_MEMBERS: tuple[tuple[str, str, str | None], ...] = (
    *((f"qrels-{each}.txt", "qrels", each) for each in _BUNDLE_SCALES),
    ("judgments.csv", "judgments", None),
    ("assessors.csv", "assessors", None),
    *(
        member
        for each in _BUNDLE_SCALES
        for member in (
            (f"estimates-{each}.csv", "estimates", each),
            (f"entries-{each}.csv", "entries", each),
            (f"offsets-{each}.json", "offsets", each),
        )
    ),
    *((f"results-{each}.json", "results", each) for each in _BUNDLE_SCALES),
    ("grades.json", "grades", None),
    ("grades.md", "grades", None),
    *((name, "state", None) for name in STATE_COLUMNS),
)


class _Contents:
    """The lines of each member of one campaign's bundle. The estimates, entries and offsets
    of a scale read one engine, built once."""

    def __init__(self, session: Session, campaign: Campaign, rule: str) -> None:
        self.session, self.campaign, self.rule = session, campaign, rule
        self.engines: dict[str, CampaignEngine] = {}

    def engine_on(self, scale: str) -> CampaignEngine:
        if scale not in self.engines:
            self.engines.clear()
            self.engines[scale] = load_campaign_engine(self.session, self.campaign, scale=scale)
        return self.engines[scale]

    def lines(self, name: str, what: str, scale: str | None) -> Iterable[str]:
        session, campaign = self.session, self.campaign
        scale = scale or campaign.scale
        if what == "qrels":
            return qrels_lines(session, campaign, scale, self.rule)
        if what == "judgments":
            return csv_lines(JUDGMENT_COLUMNS, judgment_records(session, campaign))
        if what == "assessors":
            return assessor_lines("csv", assessor_records(session, campaign))
        if what == "estimates":
            records = estimate_records(session, campaign, scale, self.engine_on(scale))
            return csv_lines(ESTIMATE_COLUMNS, records)
        if what == "entries":
            records = entry_records(session, campaign, scale, self.engine_on(scale))
            return csv_lines(ENTRY_COLUMNS, records)
        if what == "offsets":
            return [json_text(offsets_document(session, campaign, scale, self.engine_on(scale)))]
        if what == "results":
            return [json_text(snapshot_results_document(session, campaign, scale))]
        if what == "state":
            return csv_lines(STATE_COLUMNS[name], state_records(session, campaign, name))
        if name.endswith(".json"):
            return [json.dumps({"grades": GRADES, "measures": MEASURE_DEFINITIONS}, indent=1)]
        return [grades_markdown()]


def write_bundle(
    session: Session, campaign: Campaign, out: BinaryIO, rule: str, *, now: datetime
) -> None:
    """One zip: both scales' qrels, estimates, entries, offsets and results, the judgments,
    the runs, the grades, and last the manifest with every other file's SHA-256."""
    contents = _Contents(session, campaign, rule)
    files: list[dict[str, Any]] = []
    stamp = zip_stamp(now)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for name, what, scale in _MEMBERS:
            with zip_member(bundle, name, stamp) as member:
                writer = HashingWriter(member)  # type: ignore[arg-type]
                write_lines(writer, contents.lines(name, what, scale))
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
        manifest = bundle_manifest(campaign, counts, rule, files, now)
        info = zipfile.ZipInfo("manifest.json", date_time=stamp)  # type: ignore[arg-type]
        info.compress_type = zipfile.ZIP_DEFLATED
        bundle.writestr(info, json.dumps(manifest, indent=1, allow_nan=False) + "\n")


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
            member = zip_member(bundle, f"runs/{name}.txt", stamp)
            writer = HashingWriter(member)  # type: ignore[arg-type]
        batch.append(line)
        if len(batch) >= 1000 and writer is not None:
            writer.write("".join(batch).encode())
            batch.clear()
    close()
    return files
