"""Organizer passwords, hashed with Argon2id (argon2-cffi); never stored or logged in clear.

The hasher's parameters are argon2-cffi's defaults (RFC 9106's low-memory profile: 64 MiB,
3 passes). A stored hash made with other parameters still verifies, and is replaced by a hash
with the current ones at the next successful sign-in (:func:`verify_password` says when).
"""

from __future__ import annotations

import secrets
from functools import cache

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

__all__ = [
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "check_password",
    "hash_password",
    "hasher",
    "verify_password",
    "waste_a_verification",
]

MIN_PASSWORD_LENGTH = 10
#: a longer "password" is a way to make the server hash megabytes, not a password
MAX_PASSWORD_LENGTH = 1024

_HASHER = PasswordHasher()


def hasher() -> PasswordHasher:
    """The hasher in use (tests swap in a cheaper one by patching ``_HASHER``)."""
    return _HASHER


def check_password(password: str) -> None:
    """Raise ValueError, saying why, for a password that may not be set."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(
            f"the password must have at least {MIN_PASSWORD_LENGTH} characters, "
            f"found {len(password)}"
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise ValueError(f"the password must have at most {MAX_PASSWORD_LENGTH} characters")
    if "\x00" in password:
        raise ValueError("the password may not contain a NUL character")


def hash_password(password: str) -> str:
    """The Argon2id hash to store (``check_password`` first: this hashes anything)."""
    return hasher().hash(password)


def verify_password(stored_hash: str, password: str) -> tuple[bool, str | None]:
    """Whether ``password`` matches ``stored_hash``, and the hash to store instead when the
    hasher's parameters changed since it was made (None when it is current)."""
    current = hasher()
    if len(password) > MAX_PASSWORD_LENGTH:
        waste_a_verification()
        return False, None
    try:
        current.verify(stored_hash, password)
    except VerifyMismatchError:
        return False, None
    except (VerificationError, InvalidHashError):
        # a damaged hash signs nobody in; the time spent matches a real verification
        waste_a_verification()
        return False, None
    if current.check_needs_rehash(stored_hash):
        return True, current.hash(password)
    return True, None


@cache
def _dummy_hash(time_cost: int, memory_cost: int, parallelism: int) -> str:
    return PasswordHasher(
        time_cost=time_cost, memory_cost=memory_cost, parallelism=parallelism
    ).hash(secrets.token_urlsafe(16))


def waste_a_verification() -> None:
    """Verify a password against a hash no password matches, with the current parameters:
    an unknown username costs what a known one does, so timing does not tell them apart."""
    current = hasher()
    dummy = _dummy_hash(current.time_cost, current.memory_cost, current.parallelism)
    try:
        current.verify(dummy, "not the password")
    except VerificationError:
        pass
