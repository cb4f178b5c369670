"""What the API schemas of every feature share: the error envelope, storable texts, and the
configuration of response schemas built from the domain's dataclasses."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, cast

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from mtcjudge.validation import check_text

__all__ = ["CleanText", "ErrorOut", "UtcDateTime", "domain_schema", "error_responses"]


class ErrorOut(BaseModel):
    """The body of every error of the JSON API."""

    error: str = Field(description="what went wrong, as a stable code (e.g. 'lease_expired')")
    detail: str = Field(description="what went wrong, in words")


_DESCRIPTIONS = {
    400: "A value is out of range or a file is wrong (`invalid_input`)",
    401: "No organizer credentials: not signed in, or the bearer token is missing or wrong "
    "(`organizer_only`)",
    403: "Not allowed (yet): the assessor has not given consent (`consent_required`), or a "
    "signed-in organizer's change lacks the session's CSRF token (`csrf_failed`)",
    404: "No such campaign, invitation, judgment or clip",
    409: "The request conflicts with the current state (e.g. `pair_not_leased`)",
    410: "The lease expired and the pair went to someone else (`lease_expired`)",
    413: "The request body is larger than allowed (`payload_too_large`)",
    422: "The body is malformed: wrong types, missing or unknown fields (`malformed_request`)",
    503: "The database cannot be reached; try again later (`database_unavailable`)",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "seconds to wait before trying again",
        "schema": {"type": "integer"},
    }
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` documenting ``statuses`` with the error envelope."""
    responses: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        responses[status] = {"model": ErrorOut, "description": _DESCRIPTIONS[status]}
        if status == 503:
            responses[status]["headers"] = _RETRY_AFTER
    return responses


def _storable(text: str) -> str:
    check_text("text", text)
    return text


#: a text without NUL characters (Postgres refuses them); pydantic already refuses surrogates
CleanText = Annotated[str, AfterValidator(_storable)]


def _in_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


#: a timestamp with its offset, as RFC 3339 wants: SQLite hands back naive ones, stored in UTC
UtcDateTime = Annotated[datetime, AfterValidator(_in_utc)]


def domain_schema(order: Sequence[str] | None = None, /, **descriptions: str) -> ConfigDict:
    """Config of a response schema that is a pydantic dataclass over a domain dataclass.

    The domain keeps its fields (names, types, order, or the ``order`` given: that of the
    domain's JSON form when it differs); ``descriptions`` document the ones an API client
    needs told, and every property is required, as the response always has it (a domain
    default is not an optional field of the answer).

    Example: ``mtcjudge.judging.schemas.ProgressOut``, a ``pydantic.dataclasses.dataclass(
    frozen=True, config=domain_schema(assessor_judged="judgments of this assessor", ...))``
    subclass of ``mtcjudge.judging.service.Progress``.
    """

    def document(schema: JsonDict) -> None:
        properties = cast(dict[str, JsonDict], schema["properties"])
        for name, text in descriptions.items():
            properties[name]["description"] = text
        if order is not None:
            required = cast(list[str], schema.get("required", []))
            schema["properties"] = {name: properties[name] for name in order}
            schema["required"] = [name for name in order if name in required]

    return ConfigDict(json_schema_extra=document, json_schema_serialization_defaults_required=True)
