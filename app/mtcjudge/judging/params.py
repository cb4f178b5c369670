"""Path parameters of the assessor's routes and pages, checked against what can exist.

(The checks are ``async``: they do no I/O, and a sync dependency would take a worker thread.)

A token with a character no token has, or an id past the database's range, names nothing:
the app answers 404 as for an unknown one (see ``mtcjudge.main``), before any query, and the
OpenAPI schema documents the form. Routes declare them as decorator dependencies.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path

from mtcjudge.validation import INT32_MAX

__all__ = [
    "CHECK_CLIP_KEY",
    "CHECK_JUDGMENT_ID",
    "CHECK_LEASE_ID",
    "CHECK_TOKEN",
    "CLIP_KEY_PATTERN",
    "TOKEN_PATTERN",
]

#: invitation tokens are ``secrets.token_urlsafe`` texts, stored in a String(64) column
TOKEN_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"


async def _token(
    token: Annotated[
        str,
        Path(pattern=TOKEN_PATTERN, description="the personal token of the invitation link"),
    ],
) -> None:
    """Only checks the form; the service looks the token up."""


async def _judgment_id(judgment_id: Annotated[int, Path(ge=1, le=INT32_MAX)]) -> None:
    """Only checks the range."""


async def _lease_id(lease_id: Annotated[int, Path(ge=1, le=INT32_MAX)]) -> None:
    """Only checks the range."""


#: a query clip's key (mtcjudge.judging.clip_urls): 32 hex digits
CLIP_KEY_PATTERN = r"^[0-9a-f]{32}$"


async def _clip_key(
    key: Annotated[str, Path(pattern=CLIP_KEY_PATTERN, description="a query clip's key")],
) -> None:
    """Only checks the form."""


CHECK_TOKEN = Depends(_token)
CHECK_CLIP_KEY = Depends(_clip_key)
CHECK_JUDGMENT_ID = Depends(_judgment_id)
CHECK_LEASE_ID = Depends(_lease_id)
