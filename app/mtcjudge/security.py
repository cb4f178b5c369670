"""Assessor invitation tokens: made here, stored only as their hash; and signatures of
what a redirect carries.

A token is the only credential of the judging pages; the link holds it, the database holds
:func:`hash_token` of it (the judging queries look assessors up by that hash).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["hash_token", "new_token", "sign", "signed"]


def new_token() -> str:
    """A fresh invitation token (192 random bits, URL-safe)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """What is stored of an invitation token (the token itself is only in the link)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def sign(key: str, message: str) -> str:
    """The HMAC-SHA256 of ``message`` under ``key`` (hex): what a redirect carries beside
    what it reports, so the page it leads to shows only what the server said."""
    return hmac.new(
        key.encode("utf-8", "surrogatepass"),
        message.encode("utf-8", "surrogatepass"),
        hashlib.sha256,
    ).hexdigest()


def signed(key: str, message: str, signature: str) -> bool:
    """Whether ``signature`` is :func:`sign` of ``message`` under ``key`` (in constant time)."""
    return hmac.compare_digest(sign(key, message), signature.encode("ascii", "replace").decode())
