"""Settings, read from the environment once by the app factory and the CLI."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Settings"]

DEFAULT_DATABASE_URL = "sqlite:///mtcjudge.sqlite3"
#: largest request body, except the organizer's import (``max_import_bytes``)
MAX_BODY_BYTES = 64 * 1024
DEFAULT_MAX_IMPORT_BYTES = 64 * 1024 * 1024
#: one audio file from the browser (a 15-minute stereo WAV at 48 kHz is 173 MB)
DEFAULT_MAX_AUDIO_FILE_BYTES = 256 * 1024 * 1024
#: all the audio of one upload from the browser, stored in the database
DEFAULT_MAX_AUDIO_UPLOAD_BYTES = 4 * 1024 * 1024 * 1024


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
    run_planner : bool
        Run the background planner in this process (``MTCJUDGE_PLANNER=0`` turns it off, for
        a process that should only serve requests). Never with a caller's session factory.
    threads : int
        Requests of one process that run at once (``MTCJUDGE_THREADS``, 8); the others wait
        for a thread without holding a database connection.
    planner_interval : float
        Seconds between the planner's ticks.
    organizer_token : str or None
        Bearer token for the organizer API (``MTCJUDGE_ORGANIZER_TOKEN``), for scripts; people
        sign in with an organizer account instead. Without a token the API answers only
        signed-in organizers.
    session_hours : int
        How long an organizer stays signed in (``MTCJUDGE_SESSION_HOURS``, 12), counted from
        the sign-in.
    admin_username, admin_password : str or None
        The first organizer account, created when the app starts and no organizer exists yet
        (``MTCJUDGE_ADMIN_USERNAME`` and ``MTCJUDGE_ADMIN_PASSWORD``, for containers; both or
        neither).
    login_failure_delay : float
        Seconds a failed sign-in waits before it answers.
    max_import_bytes : int
        Largest request body of the organizer's import, ``POST /api/campaigns``, whose runs
        and judgments travel as texts (``MTCJUDGE_MAX_IMPORT_BYTES``; 64 MiB). Every other
        request body is limited to :data:`MAX_BODY_BYTES`.
    max_audio_file_bytes : int
        Largest audio file uploaded from the browser, alone or in a zip, unpacked
        (``MTCJUDGE_MAX_AUDIO_FILE_BYTES``; 256 MiB).
    max_audio_upload_bytes : int
        Largest upload of audio from the browser: the files stored, and a zip as sent
        (``MTCJUDGE_MAX_AUDIO_UPLOAD_BYTES``; 4 GiB). The audio is stored in the database.
    """

    database_url: str = DEFAULT_DATABASE_URL
    base_url: str = "http://127.0.0.1:8000"
    organizer_token: str | None = None
    run_planner: bool = True
    threads: int = 8
    planner_interval: float = 0.5
    max_import_bytes: int = DEFAULT_MAX_IMPORT_BYTES
    max_audio_file_bytes: int = DEFAULT_MAX_AUDIO_FILE_BYTES
    max_audio_upload_bytes: int = DEFAULT_MAX_AUDIO_UPLOAD_BYTES
    session_hours: int = 12
    admin_username: str | None = None
    admin_password: str | None = field(default=None, repr=False)
    login_failure_delay: float = 1.0

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        env = os.environ
        values: dict[str, object] = {
            "database_url": env.get("DATABASE_URL", DEFAULT_DATABASE_URL),
            "base_url": env.get("MTCJUDGE_BASE_URL", "http://127.0.0.1:8000").rstrip("/"),
            "organizer_token": env.get("MTCJUDGE_ORGANIZER_TOKEN") or None,
            "run_planner": env.get("MTCJUDGE_PLANNER", "1") not in ("0", "false", "no"),
            "threads": _positive_int(env, "MTCJUDGE_THREADS", 8),
            "max_import_bytes": _positive_int(
                env, "MTCJUDGE_MAX_IMPORT_BYTES", DEFAULT_MAX_IMPORT_BYTES
            ),
            "max_audio_file_bytes": _positive_int(
                env, "MTCJUDGE_MAX_AUDIO_FILE_BYTES", DEFAULT_MAX_AUDIO_FILE_BYTES
            ),
            "max_audio_upload_bytes": _positive_int(
                env, "MTCJUDGE_MAX_AUDIO_UPLOAD_BYTES", DEFAULT_MAX_AUDIO_UPLOAD_BYTES
            ),
            "session_hours": _positive_int(env, "MTCJUDGE_SESSION_HOURS", 12),
            "admin_username": env.get("MTCJUDGE_ADMIN_USERNAME", "").strip() or None,
            "admin_password": env.get("MTCJUDGE_ADMIN_PASSWORD") or None,
        }
        if (values["admin_username"] is None) != (values["admin_password"] is None):
            raise ValueError(
                "set both MTCJUDGE_ADMIN_USERNAME and MTCJUDGE_ADMIN_PASSWORD (the first "
                "organizer account), or neither"
            )
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def _positive_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{name} must be a positive number (a whole number), found {text!r}")
    return int(text)


REPO_ROOT = Path(__file__).resolve().parents[2]
