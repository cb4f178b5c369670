"""The URLs of a pair's clips, as the judging page fetches them (docs/audio.md, "Fetched once").

A **query** clip has one URL per assessor and query, ``/a/{token}/query/{key}``: the volunteer
keeps a query for many pairs, and their browser fetches it once (the response may be cached
for an hour and answers ``If-None-Match`` with 304). The key is a hash of the assessor's token
hash and the query clip's document: it names no document to anyone without the token, and
is the same for a pool pair and a hidden trial of the query. A **candidate** clip's URL names
the lease, ``/a/{token}/lease/{id}/candidate``: a candidate is heard once per pair, and a
repeat trial's candidate gets a new URL like any new pair's.
"""

from __future__ import annotations

import hashlib

from mtcjudge.security import hash_token

__all__ = ["candidate_clip_url", "query_clip_key", "query_clip_url"]


def query_clip_key(token_hash: str, query_document_id: int) -> str:
    """The opaque key of an assessor's query clip (32 hex digits)."""
    text = f"{token_hash}:query:{query_document_id}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def query_clip_url(token: str, query_document_id: int) -> str:
    return f"/a/{token}/query/{query_clip_key(hash_token(token), query_document_id)}"


def candidate_clip_url(token: str, lease_id: int) -> str:
    return f"/a/{token}/lease/{lease_id}/candidate"
