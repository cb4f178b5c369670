"""Settings, read from the environment once by the app factory and the CLI."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Settings"]

DEFAULT_DATABASE_URL = "sqlite:///mtcjudge.sqlite3"


@dataclass(frozen=True)
class Settings:
    """Runtime settings.

    Attributes
    ----------
    database_url : str
        SQLAlchemy URL: an SQLite file by default, ``postgresql+psycopg://...`` in production
        (``DATABASE_URL``).
    base_url : str
        Public address used in printed links (``MTCJUDGE_BASE_URL``).
    organizer_token : str or None
        Bearer token for the organizer API (``MTCJUDGE_ORGANIZER_TOKEN``); without one the
        organizer API accepts only requests from the local machine.
    secure_cookies : bool
        Mark cookies Secure (behind HTTPS; ``MTCJUDGE_SECURE_COOKIES=1``).
    """

    database_url: str = DEFAULT_DATABASE_URL
    base_url: str = "http://127.0.0.1:8000"
    organizer_token: str | None = None
    secure_cookies: bool = False

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        values: dict[str, object] = {
            "database_url": env.get("DATABASE_URL", DEFAULT_DATABASE_URL),
            "base_url": env.get("MTCJUDGE_BASE_URL", "http://127.0.0.1:8000").rstrip("/"),
            "organizer_token": env.get("MTCJUDGE_ORGANIZER_TOKEN") or None,
            "secure_cookies": env.get("MTCJUDGE_SECURE_COOKIES", "") in ("1", "true", "yes"),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


REPO_ROOT = Path(__file__).resolve().parent.parent
