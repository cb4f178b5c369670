"""Assessor invitation tokens: random, URL-safe, and stored only as their SHA-256; and the
signatures of what a redirect carries."""

from __future__ import annotations

import hashlib
import hmac
import re

from mtcjudge.security import hash_token, new_token, sign, signed


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


def test_a_signature_is_the_hmac_sha256_of_the_message_under_the_key() -> None:
    key, message = new_token(), "m|set-aside|7|3.0"
    signature = sign(key, message)
    assert signature == hmac.new(key.encode(), message.encode(), hashlib.sha256).hexdigest()
    assert signed(key, message, signature)
    # another message, another key, or a signature that is not one: not signed
    assert not signed(key, "m|set-aside|7|4.0", signature)
    assert not signed(new_token(), message, signature)
    for wrong in ("", "00", signature.upper(), "é" * 64, "\udcff"):
        assert not signed(key, message, wrong)
