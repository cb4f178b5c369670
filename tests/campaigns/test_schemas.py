"""The organizer API's bodies are built from the domain types: fields follow them, answers keep
their form."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from pydantic import TypeAdapter, ValidationError

from mtcjudge.campaigns.changes import ImportReport
from mtcjudge.campaigns.repository import CampaignCounts
from mtcjudge.campaigns.schemas import (
    CampaignCountsOut,
    CampaignCreate,
    CampaignOut,
    ImportReportOut,
)
from mtcjudge.campaigns.spec import CampaignSpec
from mtcjudge.models import Campaign

REPORT = ImportReport(
    slug="ams",
    n_systems=2,
    n_queries=1,
    n_documents=4,
    n_results=6,
    n_pool_pairs=3,
    n_judgments=1,
    audio_found=2,
    audio_missing=["d4"],
    audio_unreadable=[("d3", "d3.mp3: empty file")],
    audio_notes=["d1: using d1.wav, not d1.mp3"],
    n_judgments_ignored=5,
    n_unplayable_pairs=2,
)


def test_the_import_report_answers_counts_first_without_the_slug() -> None:
    answer = json.loads(TypeAdapter(ImportReportOut).dump_json(ImportReportOut.of(REPORT)))
    assert list(answer) == [
        "n_systems",
        "n_queries",
        "n_documents",
        "n_results",
        "n_pool_pairs",
        "n_judgments",
        "n_judgments_ignored",
        "n_unplayable_pairs",
        "audio_found",
        "audio_missing",
        "audio_unreadable",
        "audio_notes",
    ]
    assert answer["audio_unreadable"] == [{"doc": "d3", "reason": "d3.mp3: empty file"}]
    assert (answer["n_judgments_ignored"], answer["n_unplayable_pairs"]) == (5, 2)


def test_the_import_report_schema_has_every_field_but_the_slug_required() -> None:
    schema = TypeAdapter(ImportReportOut).json_schema(mode="serialization")
    expected = [f.name for f in fields(ImportReport) if f.name != "slug"]
    assert list(schema["properties"]) == expected
    assert sorted(schema["required"]) == sorted(expected)
    assert "missing or unreadable" in schema["properties"]["n_unplayable_pairs"]["description"]


def test_counts_answer_with_the_fields_of_the_domain_type() -> None:
    counts = CampaignCounts(1, 2, 3, 4, 5, 6, 7)
    answer = json.loads(TypeAdapter(CampaignCountsOut).dump_json(CampaignCountsOut(**vars(counts))))
    assert answer == {f.name: getattr(counts, f.name) for f in fields(CampaignCounts)}


def test_a_stored_campaign_answers_with_every_column() -> None:
    # CampaignOut is the API's explicit promise; this keeps it in step with the table
    assert list(CampaignOut.model_fields) == [c.key for c in Campaign.__table__.columns]


def test_create_takes_the_settings_of_the_spec_and_checks_them_in_spec() -> None:
    settings = [f.name for f in fields(CampaignSpec)]
    assert [f.name for f in fields(CampaignCreate)][: len(settings)] == settings
    body = TypeAdapter(CampaignCreate).validate_python(
        {"name": "AMS", "runs": "S1\tq1\td1\n", "scale": "broad", "k": 3}
    )
    assert body.spec() == CampaignSpec(name="AMS", scale="broad", k=3)
    # a choice out of range is the spec's 400, not a malformed body
    wrong = TypeAdapter(CampaignCreate).validate_python({"name": "x", "runs": "", "scale": "huge"})
    with pytest.raises(ValueError, match="scale must be one of broad, fine"):
        wrong.spec()
    # a range of an integer setting and an unknown field are malformed bodies (422)
    for body_with in ({"k": 0}, {"colour": "red"}):
        with pytest.raises(ValidationError):
            TypeAdapter(CampaignCreate).validate_python({"name": "x", "runs": "", **body_with})
