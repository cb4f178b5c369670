"""Assessor invitation tokens: made here, stored only as their hash.

A token is the only credential of the judging pages; the link holds it, the database holds
:func:`hash_token` of it (the judging queries look assessors up by that hash).
"""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["hash_token", "new_token"]


def new_token() -> str:
    """A fresh invitation token (192 random bits, URL-safe)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    """What is stored of an invitation token (the token itself is only in the link)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
