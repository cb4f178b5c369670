"""What a bundle says about itself and its campaign: the format, the software, the
campaign's settings, its counts and how complete its judgments are (a report shows some of
them too)."""

from __future__ import annotations

from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from mtcjudge.exports.formats import MEASURE_DEFINITIONS, iso_time
from mtcjudge.models import Campaign

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLE_FORMAT_VERSION",
    "bundle_manifest",
    "campaign_summary",
    "completeness",
    "package_version",
]

#: 2: the ``state/`` members, campaign-relative lease numbers, results computed from the rows
BUNDLE_FORMAT_VERSION = 2
BUNDLE_FORMAT = "mtcjudge export bundle"


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


def campaign_settings(campaign: Campaign) -> dict[str, Any]:
    return {
        **campaign_summary(campaign),
        "seed": campaign.seed,
        "keep_collecting": campaign.keep_collecting,
        "lease_minutes": campaign.lease_minutes,
        "listen_seconds": campaign.listen_seconds,
        "quality_rate": campaign.quality_rate,
        "auto_pause": campaign.auto_pause,
        "collection_version": campaign.collection_version,
        "created_at": iso_time(campaign.created_at),
    }


def bundle_manifest(
    campaign: Campaign,
    counts: dict[str, int],
    rule: str,
    files: list[dict[str, Any]],
    now: datetime,
) -> dict[str, Any]:
    """The manifest of a bundle made at ``now`` of ``files``, with the campaign's settings and
    ``counts`` (:func:`mtcjudge.exports.repository.counts`, to which it adds the unjudged
    pool pairs)."""
    counts["unjudged_pool_pairs"] = counts["pool_pairs"] - counts["judged_pool_pairs"]
    return {
        "format": BUNDLE_FORMAT,
        "format_version": BUNDLE_FORMAT_VERSION,
        "software": {"name": "mtcjudge", "version": package_version()},
        "created_at": now.isoformat(),
        "campaign": campaign_settings(campaign),
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
