"""ASGI middleware and logging filters that every response and every access-log line go through.

Pure ASGI (no ``BaseHTTPMiddleware``): the body limit must see the request before anything
reads it, and neither may buffer a response.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "BodySizeLimit",
    "RedactAssessorTokens",
    "SecurityHeaders",
    "install_access_log_redaction",
    "redact_tokens",
]

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
# assessor pages carry the personal token and the JSON API private data: never in a cache
_NO_STORE_PREFIXES = ("/a/", "/api/")


def _size(n_bytes: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n_bytes >= size and n_bytes % size == 0:
            return f"{n_bytes // size} {unit}"
    return f"{n_bytes} bytes"


class _BodyTooLarge(Exception):
    """Raised from ``receive`` once a streamed body passes the limit."""


def _segment(part: str) -> str:
    return "[^/]+" if part.startswith("{") and part.endswith("}") else re.escape(part)


class BodySizeLimit:
    """Answer 413 to a request body over its limit, before the app parses or does anything.

    A ``Content-Length`` over the limit is refused before the app is called; a body sent
    without one (chunked) is counted as the app reads it, and reading stops at the limit:
    whatever the app then answers is replaced by the 413.

    Parameters
    ----------
    app : ASGIApp
    default_limit : int
        Bytes allowed in any request body.
    limits : mapping of (method, path) to int
        Other limits for some endpoints (the organizer's import). A ``{name}`` segment of a
        path stands for any one segment (``/api/campaigns/{slug}/runs``).
    """

    def __init__(
        self, app: ASGIApp, *, default_limit: int, limits: Mapping[tuple[str, str], int]
    ) -> None:
        self.app = app
        self.default_limit = default_limit
        self.limits = {key: n for key, n in limits.items() if "{" not in key[1]}
        self.patterns = [
            (method, re.compile("/".join(_segment(part) for part in path.split("/")) + "$"), n)
            for (method, path), n in limits.items()
            if "{" in path
        ]

    def _limit(self, method: str, path: str) -> int:
        limit = self.limits.get((method, path))
        if limit is not None:
            return limit
        for each, pattern, n in self.patterns:
            if each == method and pattern.match(path):
                return n
        return self.default_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope["method"], scope["path"])
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await self._refuse(limit, scope, receive, send)
            return

        received = 0
        exceeded = False
        response_started = False

        async def counting_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise _BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if exceeded and not response_started:
                return  # the app's answer to the interrupted body: the 413 replaces it
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except Exception:
            if not exceeded or response_started:
                raise
        if exceeded and not response_started:
            await self._refuse(limit, scope, receive, send)

    @staticmethod
    async def _refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            {
                "error": "payload_too_large",
                "detail": f"the request body is larger than the {_size(limit)} allowed here",
            },
            status_code=413,
            # the rest of the body is not read: the connection cannot carry another request
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


class SecurityHeaders:
    """Add the security headers to every response (a route may set its own CSP first).

    ``Cache-Control: no-store`` goes on assessor pages and the JSON API unless the response
    chose its caching itself (the audio clips are privately cacheable).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        no_store = scope["path"].startswith(_NO_STORE_PREFIXES)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                headers = MutableHeaders(scope=message)
                for name, value in _SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
                if no_store:
                    headers.setdefault("Cache-Control", "no-store")
            await send(message)

        await self.app(scope, receive, send_with_headers)


# an assessor path segment after /a/ or /api/a/, at the start of a path or of a logged word
_TOKEN_IN_PATH = re.compile(r"""(^|[\s"'])(/(?:api/)?a/)[^/?#\s"']+""")


def redact_tokens(text: str) -> str:
    """``text`` with assessor tokens in paths replaced ("/a/<redacted>/judge")."""
    return _TOKEN_IN_PATH.sub(r"\1\2<redacted>", text)


class RedactAssessorTokens(logging.Filter):
    """Keep assessor tokens (their only credential) out of the access log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact_tokens(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_tokens(arg) if isinstance(arg, str) else arg for arg in record.args
            )
        return True


def install_access_log_redaction(logger_name: str = "uvicorn.access") -> None:
    """Add :class:`RedactAssessorTokens` to the access logger, once."""
    logger = logging.getLogger(logger_name)
    if not any(isinstance(existing, RedactAssessorTokens) for existing in logger.filters):
        logger.addFilter(RedactAssessorTokens())
