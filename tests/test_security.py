"""Assessor invitation tokens: random, URL-safe, and stored only as their SHA-256."""

from __future__ import annotations

import hashlib
import re

from mtcjudge.security import hash_token, new_token


def test_a_token_is_192_random_bits_that_fit_in_a_link() -> None:
    tokens = {new_token() for _ in range(50)}
    assert len(tokens) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{32}", t) for t in tokens)


def test_what_is_stored_is_the_tokens_sha256() -> None:
    token = new_token()
    assert hash_token(token) == hashlib.sha256(token.encode()).hexdigest()
    assert hash_token(token) != token
    # a link with an unpaired surrogate is looked up (and found wanting), not a crash
    assert len(hash_token("\udcff")) == 64
