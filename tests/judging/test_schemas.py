"""The assessor API's progress is the domain's Progress, documented for API clients."""

from __future__ import annotations

import json
from dataclasses import asdict, fields

from pydantic import TypeAdapter

from mtcjudge.judging.schemas import ProgressOut
from mtcjudge.judging.service import Progress


def test_progress_answers_with_the_fields_of_the_domain_type() -> None:
    progress = Progress(3, 10, 40, 15, 6, can_stop=False)
    answer = TypeAdapter(ProgressOut).dump_json(ProgressOut(**asdict(progress)))
    assert json.loads(answer) == asdict(progress)
    assert list(json.loads(answer)) == [f.name for f in fields(Progress)]


def test_progress_schema_documents_the_counts_and_requires_every_field() -> None:
    schema = TypeAdapter(ProgressOut).json_schema(mode="serialization")
    assert schema["required"] == [f.name for f in fields(Progress)]
    described = {name for name, prop in schema["properties"].items() if "description" in prop}
    assert described == {f.name for f in fields(Progress)} - {"can_stop"}
    assert schema["properties"]["campaign_pairs"]["description"] == (
        "pairs that can be judged (both clips playable)"
    )
