#!/bin/sh
# Container entry point: wait until the database accepts connections, bring its schema up to
# date, then run the command (by default `mtcjudge serve --host 0.0.0.0 --port 8000`).
# Without DATABASE_URL (e.g. `docker run ... mtcjudge demo`) the command manages its own
# SQLite database and nothing is done here.
set -eu

if [ -n "${DATABASE_URL:-}" ]; then
    python - <<'PY'
import os
import sys
import time

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from mtcjudge.db import make_engine, upgrade_database

url = os.environ["DATABASE_URL"]
shown = make_url(url).render_as_string(hide_password=True)
deadline = time.monotonic() + float(os.environ.get("MTCJUDGE_DB_WAIT_SECONDS", "60"))
engine = make_engine(url)
while True:
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        break
    except OperationalError as exc:
        if time.monotonic() > deadline:
            sys.exit(f"mtcjudge-entrypoint: database {shown} unreachable: {exc.orig}")
        sys.stderr.write(f"mtcjudge-entrypoint: waiting for the database {shown}\n")
        time.sleep(1)
engine.dispose()
upgrade_database(url)
sys.stderr.write("mtcjudge-entrypoint: database schema up to date\n")
PY
fi

exec "$@"
