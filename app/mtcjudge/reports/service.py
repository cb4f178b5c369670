"""A campaign's report: one JSON-able document, and its self-contained HTML rendering.

The document gathers what other services already compute; nothing is re-derived here:

* the rankings, the system pairs and the curve are :mod:`mtcjudge.results.read`'s documents,
  one per measure (``cg``, ``dcg``, ``ndcg``, ``rbp``, named as
  :data:`mtcjudge.exports.formats.MEASURE_DEFINITIONS` names them);
* the counts against the pool and the judgments come from the exports' queries
  (:mod:`mtcjudge.exports.repository`), whose pseudonyms (A1, A2, ...) the exports use too;
* the volunteers' hours (spent, the whole pool once, to each target) are the results
  document's listening section (:mod:`mtcjudge.campaign_engine.listening`);
* agreement is Krippendorff's alpha (:mod:`mtcjudge.reports.agreement`), the MIREX analysis
  :func:`mtcjudge.mtc.mirex.friedman_tukey` on the per-query scores
  (:mod:`mtcjudge.reports.analysis`).

The HTML (templates/report.html) draws its charts as inline SVG from the document itself
(:mod:`mtcjudge.reports.charts`): it needs no network and no script. docs/reports.md lists every
field.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, BinaryIO

from sqlalchemy.orm import Session

from mtcjudge.assessors.overview import AssessorOverview, assessor_overview
from mtcjudge.campaign_engine.build import engine_from_rows, load_rows
from mtcjudge.campaign_engine.document import plain
from mtcjudge.campaigns import service as campaigns
from mtcjudge.errors import InvalidInput
from mtcjudge.exports import repository as export_repository
from mtcjudge.exports.formats import MEASURE_DEFINITIONS
from mtcjudge.exports.manifest import campaign_summary, completeness, package_version
from mtcjudge.models import Campaign, as_utc, utcnow
from mtcjudge.mtc.factory import ESTIMATOR_SUMMARIES
from mtcjudge.mtc.measures import MEASURES, per_query_scores
from mtcjudge.mtc.scales import SCALES
from mtcjudge.reports import charts
from mtcjudge.reports.agreement import agreement
from mtcjudge.reports.analysis import mirex_section
from mtcjudge.results.document import Results
from mtcjudge.results.read import results_for
from mtcjudge.web import templates

__all__ = [
    "FORMATS",
    "MEDIA_TYPES",
    "SCALES",
    "ReportSpec",
    "build_report",
    "render_html",
    "report_json",
    "write_report",
]

FORMATS = ("html", "json")
MEDIA_TYPES = {"html": "text/html; charset=utf-8", "json": "application/json"}
#: the family-wise level of the Tukey HSD, as MIREX used
MIREX_ALPHA = 0.05
#: the report's layout: a reader can tell an older document (2: ties, interval facts, the
#: estimator's description; issue 23; 3: the volunteers' hours, issue 31)
FORMAT_VERSION = 3


@dataclass(frozen=True)
class ReportSpec:
    """The report's scale (default: the campaign's) and format (``html`` or ``json``)."""

    scale: str | None = None
    format: str = "html"

    def __post_init__(self) -> None:
        if self.scale is not None and self.scale not in SCALES:
            raise InvalidInput(f"scale must be fine or broad; found {self.scale!r}")
        if self.format not in FORMATS:
            raise InvalidInput(f"format must be html or json; found {self.format!r}")

    @property
    def media_type(self) -> str:
        return MEDIA_TYPES[self.format]

    def file_name(self, document: dict[str, Any]) -> str:
        """``SLUG-report-SCALE.html`` (or ``.json``)."""
        return f"{document['campaign']['slug']}-report-{document['scale']}.{self.format}"


def write_report(
    session: Session, slug: str, spec: ReportSpec, out: BinaryIO, *, now: datetime | None = None
) -> str:
    """Write the report of campaign ``slug`` to ``out``; returns its file name.

    Raises
    ------
    CampaignNotFound
    """
    document = build_report(session, slug, spec.scale, now=now)
    text = render_html(document) if spec.format == "html" else report_json(document)
    out.write(text.encode())
    return spec.file_name(document)


def report_json(document: dict[str, Any]) -> str:
    return json.dumps(document, allow_nan=False, indent=1) + "\n"


def render_html(document: dict[str, Any]) -> str:
    """The report as one HTML file: CSS inline, charts as inline SVG, no script, no link
    out; printable."""
    template = templates.env.get_template("report.html")
    figures = {
        "rankings": {
            measure: charts.forest(section) for measure, section in document["rankings"].items()
        },
        "heatmap": charts.heatmap(document["rankings"][document["campaign"]["measure"]]),
        "curve": charts.curve(document["trajectory"], document["judgments"]["pool_pairs"]),
        "pool": charts.pool_bar(document["judgments"]),
    }
    return template.render(report=document, charts=figures)


# ------------------------------------------------------------------ the document


def build_report(
    session: Session, slug: str, scale: str | None = None, *, now: datetime | None = None
) -> dict[str, Any]:
    """The report of campaign ``slug`` on ``scale`` (default: the campaign's).

    Raises
    ------
    CampaignNotFound
    InvalidInput
        A scale that does not exist.
    """
    ReportSpec(scale)  # validates
    campaign = campaigns.get_campaign(session, slug)
    scale = scale or campaign.scale
    results = {measure: results_for(session, slug, measure, scale) for measure in MEASURES}
    driving = results[campaign.measure]
    # the driving measure's part may be the planner's stored one, a judgment behind; the
    # others are computed from the rows now: the largest count is the current one
    judged_on_scale = max(result.judgments for result in results.values())
    counts = export_repository.counts(session, campaign.id)
    counts["unjudged_pool_pairs"] = counts["pool_pairs"] - counts["judged_pool_pairs"]
    pool = driving.pool_pairs
    judgments = {
        **counts,
        "scale": scale,
        "judged_pool_pairs_on_scale": judged_on_scale,
        "playable_pairs": driving.playable_pairs,
        "complete": pool > 0 and judged_on_scale == pool,
        "completeness": completeness(counts),
        # what the confidence includes of the assessors' disagreement (docs/method.md §10)
        "assessor_disagreement": asdict(driving.assessor_disagreement),
    }
    listening = plain(driving.listening)
    assessors, values = _judgment_summaries(session, campaign, listening.pop("assessors"))
    assessors["quality_rate"] = float(campaign.quality_rate)
    return {
        "format": "mtcjudge report",
        "format_version": FORMAT_VERSION,
        "generated_at": (now or utcnow()).isoformat(),
        "software": {"name": "mtcjudge", "version": package_version()},
        "campaign": campaign_summary(campaign),
        "estimator": {
            "name": campaign.estimator,
            "summary": ESTIMATOR_SUMMARIES.get(campaign.estimator, ""),
        },
        "scale": scale,
        "measure_definitions": MEASURE_DEFINITIONS,
        "judgments": judgments,
        "listening": _listening(listening),
        "rankings": {
            measure: _ranking(result, campaign, scale) for measure, result in results.items()
        },
        "trajectory": _trajectory(driving, campaign, scale),
        "assessors": assessors,
        "agreement": {each: asdict(agreement(each, values[each])) for each in ("broad", "fine")},
        "mirex": _mirex(session, campaign, scale, judged_on_scale, pool),
    }


def _ranking(result: Results, campaign: Campaign, scale: str) -> dict[str, Any]:
    """One measure: the systems best first with their intervals, the system pairs, and the
    pairs' confidence as a symmetric matrix in ranking order (None on the diagonal), with
    the tied pairs marked in a matrix of their own."""
    document = result.to_dict()
    systems = document["systems"]
    names = [s["name"] for s in systems]
    position = {name: i for i, name in enumerate(names)}
    matrix: list[list[float | None]] = [[None] * len(names) for _ in names]
    tied: list[list[bool]] = [[False] * len(names) for _ in names]
    for pair in document["pairs"]:
        i, j = position[pair["a"]], position[pair["b"]]
        matrix[i][j] = matrix[j][i] = pair["confidence"]
        tied[i][j] = tied[j][i] = pair["tied"]
    widths = [s["ci_high"] - s["ci_low"] for s in systems]
    return {
        "measure": result.measure,
        "name": MEASURE_DEFINITIONS[result.measure]["name"],
        "k": result.k,
        "drives_campaign": result.measure == campaign.measure and scale == campaign.scale,
        "target": result.target,
        "ranking_confidence": result.ranking_confidence,
        "system_pairs": result.system_pairs,
        "system_pairs_settled": result.system_pairs_settled,
        "system_pairs_tied": result.system_pairs_tied,
        "judgments": result.judgments,
        "pool_pairs": result.pool_pairs,
        "exact": all(s["var"] == 0.0 for s in systems),
        "widest_interval": max(widths, default=0.0),
        "systems": systems,
        "confidence_matrix": {"systems": names, "confidence": matrix, "tied": tied},
        "pairs": document["pairs"],
    }


def _trajectory(driving: Results, campaign: Campaign, scale: str) -> dict[str, Any]:
    """The curve the planner records: the campaign's own measure and scale only."""
    points = [asdict(point) for point in driving.trajectory]
    reason = None
    if scale != campaign.scale:
        reason = (
            f"the curve is recorded for the campaign's own measure and scale "
            f"({campaign.measure} on {campaign.scale.upper()}); this report is on "
            f"{scale.upper()}"
        )
    elif not points:
        reason = (
            "no point yet: the campaign's planner records one each time it plans the campaign "
            "after new judgments (it plans open and draft campaigns), and it has not planned "
            "this one yet"
        )
    return {
        "measure": campaign.measure,
        "scale": campaign.scale,
        "target": float(campaign.target),
        "points": points,
        "reason": reason,
    }


def _listening(section: dict[str, Any]) -> dict[str, Any]:
    """The volunteers' hours of the results document (its assessors go to theirs), with the
    hours so far as a share of judging the whole pool once."""
    spent, pool = section["spent"], section["pool"]

    def share(so_far: float, whole: float) -> float | None:
        return so_far / whole if whole > 0 else None

    return {
        **section,
        "share_of_pool": {
            "hours": share(spent["hours"], pool["hours"]),
            "listening_hours": share(spent["listening_hours"], pool["listening_hours"]),
        },
    }


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def _judgment_summaries(
    session: Session, campaign: Campaign, hours: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, dict[tuple[str, str], list[float]]]]:
    """One pass over every judgment: each assessor's summary (pseudonyms as the exports',
    time spent from ``hours``, the listening section's assessors), and every pair's values
    on each scale for the agreement."""
    pseudonyms = export_repository.assessor_pseudonyms(session, campaign.id)
    per_assessor: dict[int, dict[str, Any]] = {
        assessor_id: {
            "judgments": 0,
            "revised": 0,
            "first": None,
            "last": None,
            "seconds": [],
            "query_ms": [],
            "candidate_ms": [],
        }
        for assessor_id in pseudonyms
    }
    values: dict[str, dict[tuple[str, str], list[float]]] = {
        "broad": defaultdict(list),
        "fine": defaultdict(list),
    }
    imported = 0
    for row in export_repository.judgment_rows(session, campaign.id):
        pair = (row.query, row.document)
        # the agreement is over the judgments that count: not quality trials, not set aside
        if row.kind == "pool" and not row.set_aside:
            if row.broad is not None:
                values["broad"][pair].append(float(row.broad))
            if row.fine is not None:
                values["fine"][pair].append(float(row.fine))
        if row.assessor_id is None or row.assessor_id not in per_assessor:
            imported += 1
            continue
        _count_judgment(per_assessor[row.assessor_id], row)
    overview = {o.id: o for o in assessor_overview(session, campaign)}
    spent = {a["id"]: a for a in hours}
    assessors = [
        _assessor_summary(
            pseudonym, per_assessor[assessor_id], overview[assessor_id], spent.get(assessor_id)
        )
        for assessor_id, pseudonym in pseudonyms.items()
    ]
    return {"assessors": assessors, "imported_judgments": imported}, values


def _count_judgment(summary: dict[str, Any], row: Any) -> None:
    """Add an assessor's judgment (a row of the judgments export) to their summary."""
    summary["judgments"] += 1
    created = as_utc(row.created_at)
    last = as_utc(row.updated_at) if row.revision else created
    summary["revised"] += 1 if row.revision else 0
    summary["first"] = created if summary["first"] is None else min(summary["first"], created)
    summary["last"] = last if summary["last"] is None else max(summary["last"], last)
    if row.leased_at is not None:
        summary["seconds"].append(max(0.0, (created - as_utc(row.leased_at)).total_seconds()))
    if row.query_listen_ms is not None:
        summary["query_ms"].append(float(row.query_listen_ms))
    if row.candidate_listen_ms is not None:
        summary["candidate_ms"].append(float(row.candidate_listen_ms))


def _assessor_summary(
    pseudonym: str, s: dict[str, Any], o: AssessorOverview, spent: dict[str, Any] | None
) -> dict[str, Any]:
    """What the report says of one assessor: their judging, from their summary ``s``, their
    time as the listening-time model counts it (``spent``; None: no judgment), and what
    organizers did and the planner concluded, from their overview ``o``."""
    r = o.reliability
    listened = math.fsum(s["query_ms"]) + math.fsum(s["candidate_ms"])
    return {
        "pseudonym": pseudonym,
        "judgments": s["judgments"],
        "revised": s["revised"],
        "first_judgment_at": None if s["first"] is None else s["first"].isoformat(),
        "last_judgment_at": None if s["last"] is None else s["last"].isoformat(),
        "median_seconds_per_judgment": _median(s["seconds"]),
        "total_judging_seconds": round(math.fsum(s["seconds"]), 3),
        "median_query_listen_ms": _median(s["query_ms"]),
        "median_candidate_listen_ms": _median(s["candidate_ms"]),
        "total_listen_seconds": round(listened / 1000.0, 3),
        "hours": 0.0 if spent is None else spent["hours"],
        "listening_hours": 0.0 if spent is None else spent["listening_hours"],
        "imputed": 0 if spent is None else spent["imputed"],
        "counted_judgments": o.judgments,
        "set_aside_judgments": o.set_aside_judgments,
        "quality_trials": o.quality_trials,
        "trials_by_kind": dict(o.trials_by_kind),
        "set_aside": o.set_aside,
        "paused": o.paused,
        "reliability": {
            "assessed": r.assessed,
            "flagged": r.flagged,
            "reasons": list(r.reasons),
            "metrics": dict(r.metrics),
            "computed_at": None if r.computed_at is None else r.computed_at.isoformat(),
        },
    }


def _mirex(
    session: Session, campaign: Campaign, scale: str, judged: int, pool: int
) -> dict[str, Any]:
    """Friedman + Tukey HSD on every measure's per-query scores, when every pool pair is
    judged on ``scale``; otherwise why not."""
    section: dict[str, Any] = {"scale": scale, "alpha": MIREX_ALPHA, "measures": None}
    if pool == 0 or judged < pool:
        share = 100.0 * judged / pool if pool else 0.0
        section["reason"] = (
            f"absent: the MIREX analysis needs every pool pair judged on {scale.upper()} (each "
            f"system's score on each query); {judged} of {pool} are ({share:.1f} %), "
            f"{pool - judged} to go. The rankings are MTC's estimates, with their intervals"
        )
        return section
    state = engine_from_rows(load_rows(session, campaign, scale=scale), campaign)
    engine = state.engine
    if not engine.judged.all():  # the count came from the results; the rows decide
        section["reason"] = "absent: not every pool pair is judged on this scale"
        return section
    if engine.collection.n_queries < 2 or engine.collection.n_systems < 2:
        section["reason"] = (
            "absent: the Friedman test needs at least two queries and two systems; this "
            f"campaign has {engine.collection.n_queries} and {engine.collection.n_systems}"
        )
        return section
    section["reason"] = None
    section["measures"] = {
        measure: mirex_section(
            per_query_scores(engine.collection, engine.values, measure, engine.scale),
            state.system_names,
            alpha=MIREX_ALPHA,
        )
        for measure in MEASURES
    }
    return section
