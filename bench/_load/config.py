"""The settings of one load benchmark run and the constants its parts share."""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass
from pathlib import Path

#: the checkout this benchmark is part of (whose servers run unless ``--app-root`` says)
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_ASSESSORS = {"stress": 50, "realistic": 500}
FAULTS = ("kill", "db-down")
#: requests started this long into the load count as "settled" (after the opening burst)
SETTLE_S = 10.0
#: the organizer API's bearer token of the servers under load (new each run)
ORGANIZER_TOKEN = secrets.token_urlsafe(24)


@dataclass
class LoadConfig:
    """One benchmark run; ``ValueError`` on settings that do not go together."""

    mode: str = "stress"
    assessors: int | None = None  # default by mode: 50 (stress) or 500 (realistic)
    duration: float = 60.0
    db: str = "sqlite"
    workers: int = 2
    ports_per_process: bool = False
    data: Path | None = None
    systems: int = 18
    queries: int = 100
    k: int = 5
    genres: int = 10
    docs_per_genre: int = 700
    artists: int = 600
    judgments_per_pair: int = 3
    think_min: float = 20.0
    think_max: float = 60.0
    # realistic mode: clips this long, heard in full (the query when it changes), the think
    # time being the decision after them; the assessors arrive over one pair's time
    clip_seconds: float | None = None
    fault: str | None = None
    fault_at: float | None = None  # seconds into the load; default: half the duration
    db_down_seconds: float = 5.0
    postgres_url: str = DEFAULT_POSTGRES_URL
    app_root: Path = REPO_ROOT
    python: str = sys.executable
    timeout: float = 10.0
    seed: int = 0
    dashboards: int = 0  # open organizer dashboards (event streams) during the load
    server_log_dir: Path | None = None
    quiet: bool = False

    def __post_init__(self) -> None:
        if self.mode not in DEFAULT_ASSESSORS:
            raise ValueError(f"mode must be stress or realistic, found {self.mode!r}")
        if self.db not in ("sqlite", "postgres"):
            raise ValueError(f"db must be sqlite or postgres, found {self.db!r}")
        if self.assessors is None:
            self.assessors = DEFAULT_ASSESSORS[self.mode]
        if self.assessors < 1 or self.workers < 1:
            raise ValueError("assessors and workers must be at least 1")
        if self.duration <= 0:
            raise ValueError(f"duration must be positive, found {self.duration}")
        if not 0 <= self.think_min <= self.think_max:
            raise ValueError("think times must satisfy 0 <= min <= max")
        if self.clip_seconds is not None:
            if self.mode != "realistic":
                raise ValueError("--clip-seconds needs --mode realistic (stress does not listen)")
            if not 1.0 <= self.clip_seconds <= 600.0:
                raise ValueError(
                    f"--clip-seconds must be 1 to 600 seconds, found {self.clip_seconds:g}"
                )
            if self.duration <= self.settle_after:
                raise ValueError(
                    f"--duration must last beyond the arrivals: with {self.clip_seconds:g} s "
                    f"clips and decisions of up to {self.think_max:g} s the assessors arrive "
                    f"over {self.settle_after:g} s, found {self.duration:g} (a few minutes "
                    "more give settled figures)"
                )
        if self.fault is not None and self.fault not in FAULTS:
            raise ValueError(f"fault must be one of {', '.join(FAULTS)}, found {self.fault!r}")
        if self.fault == "kill" and (self.ports_per_process or self.workers < 2):
            raise ValueError(
                "--fault kill needs one server with --workers 2 or more (a worker is killed "
                "and the others, then its replacement, carry on)"
            )
        if self.fault == "db-down" and self.db != "postgres":
            raise ValueError("--fault db-down needs --db postgres")
        if self.fault_at is None:
            self.fault_at = self.duration / 2
        if self.data is not None and not (Path(self.data) / "runs.tsv").is_file():
            raise ValueError(f"--data: no runs.tsv in {self.data}")

    @property
    def settle_after(self) -> float:
        """Seconds into the load after which requests count as settled: the opening burst
        (every assessor arrives at once) is over, or, with ``clip_seconds``, every assessor
        has arrived (they arrive over one pair of new clips' time)."""
        if self.clip_seconds is None:
            return SETTLE_S
        return 2 * self.clip_seconds + self.think_max

    @property
    def processes(self) -> int:
        return self.workers if self.ports_per_process else 1
