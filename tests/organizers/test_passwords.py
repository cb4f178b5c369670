"""Passwords: Argon2id hashes, verification, rehashing when the parameters change, and the
same cost for a username that does not exist."""

from __future__ import annotations

from typing import Literal

import pytest
from argon2 import PasswordHasher

from mtcjudge.organizers import passwords
from tests.support import CHEAP_HASHER


def test_a_hash_verifies_its_password_and_no_other() -> None:
    stored = passwords.hash_password("correct horse battery")
    assert stored.startswith("$argon2id$")
    assert "correct horse" not in stored
    assert passwords.verify_password(stored, "correct horse battery") == (True, None)
    assert passwords.verify_password(stored, "correct horse batterY") == (False, None)
    assert passwords.verify_password(stored, "") == (False, None)
    # a new salt every time
    assert passwords.hash_password("correct horse battery") != stored


def test_a_hash_with_old_parameters_is_replaced_at_the_next_sign_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old = PasswordHasher(time_cost=1, memory_cost=512, parallelism=1).hash("correct horse battery")
    matches, new_hash = passwords.verify_password(old, "correct horse battery")
    assert matches
    assert new_hash is not None
    assert new_hash != old
    assert not CHEAP_HASHER.check_needs_rehash(new_hash)
    assert passwords.verify_password(new_hash, "correct horse battery") == (True, None)
    # a wrong password never triggers a rehash
    assert passwords.verify_password(old, "wrong password!") == (False, None)


def test_the_real_hasher_uses_argon2id_with_the_library_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(passwords, "_HASHER", PasswordHasher())
    stored = passwords.hash_password("correct horse battery")
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    # the cheap hashes of these tests would be replaced by real ones
    cheap = CHEAP_HASHER.hash("correct horse battery")
    assert passwords.verify_password(cheap, "correct horse battery")[1] is not None


def test_a_damaged_hash_signs_nobody_in() -> None:
    assert passwords.verify_password("not a hash", "anything at all") == (False, None)
    assert passwords.verify_password("$argon2id$v=19$m=1024,t=1,p=1$xx$yy", "x" * 12) == (
        False,
        None,
    )


def test_an_unknown_user_costs_a_verification(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_verify = CHEAP_HASHER.verify

    class Counting(PasswordHasher):
        def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
            calls.append("verify")
            return real_verify(hash, password)

    monkeypatch.setattr(
        passwords, "_HASHER", Counting(time_cost=1, memory_cost=1024, parallelism=1)
    )
    passwords.waste_a_verification()
    assert calls == ["verify"]
    # an overlong password is refused without hashing megabytes, still at the same cost
    calls.clear()
    stored = passwords.hash_password("correct horse battery")
    assert passwords.verify_password(stored, "x" * 100_000) == (False, None)
    assert calls == ["verify"]


@pytest.mark.parametrize(
    ("password", "message"),
    [
        ("short", "at least 10 characters, found 5"),
        ("x" * 1025, "at most 1024 characters"),
        ("long enough\x00", "NUL"),
    ],
)
def test_passwords_that_may_not_be_set(password: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        passwords.check_password(password)


def test_a_ten_character_password_is_enough() -> None:
    passwords.check_password("0123456789")
