"""The results of every measure as an export: the results service's document, or (in a
bundle) the document computed from the rows the bundle is read from."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from mtcjudge.campaign_engine.build import CampaignRows, load_rows
from mtcjudge.exports.formats import (
    MEASURE_DEFINITIONS,
)
from mtcjudge.models import Campaign
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.results import read


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


def snapshot_results_document(session: Session, campaign: Campaign, scale: str) -> dict[str, Any]:
    """The results document of a bundle: every measure computed from the rows the bundle is
    read from, never the planner's stored document, whose projection is a time-bounded
    simulation and whose version counts the planner's writes. So the results are a function
    of what the bundle holds: ``version`` and ``computed_at`` are null (the manifest's
    ``created_at`` says when), ``projections`` empty and ``projection`` null (and so the
    listening section's hours to each target, its figures computed from the rows), and the
    assessors carry no database id and no message to them."""

    def load(each: Campaign, scale: str) -> CampaignRows:
        return load_rows(session, each, scale=scale)

    documents: dict[str, Any] = {}
    for measure in MEASURES:
        snapshot = read.read_snapshot(session, campaign.slug, measure, scale)
        snapshot = replace(
            snapshot,
            stored=None,
            computed_at=None,
            listening=read.listening_from_rows(session, campaign),
        )
        document = read.complete(snapshot, load).to_dict()
        document["version"] = None
        document["computed_at"] = None
        for assessor in document["assessors"]:
            # by pseudonym only: no database id, no organizer's message to them
            assessor.pop("id", None)
            assessor.pop("pause_reason", None)
        for assessor in document["listening"]["assessors"]:
            assessor.pop("id", None)
        documents[measure] = document
    return {
        "campaign": campaign.slug,
        "scale": scale,
        "measure_definitions": MEASURE_DEFINITIONS,
        "results": documents,
    }
