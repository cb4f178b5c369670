# mtcjudge web application: `mtcjudge serve` behind uvicorn, as a non-root user.
# See docker-compose.yml (Postgres + app) and the README section "Production (docker compose)".
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /srv/mtcjudge

# Dependencies in a layer of their own, rebuilt only when pyproject.toml changes: install the
# project with an empty package, then drop the project and keep its dependencies (PostgreSQL's
# driver included: it is the `postgres` extra).
COPY pyproject.toml README.md ./
RUN mkdir -p app/mtcjudge && touch app/mtcjudge/__init__.py \
    && pip install '.[postgres]' \
    && pip uninstall -y mtcjudge \
    && rm -rf app build

COPY setup.py alembic.ini ./
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
COPY docs ./docs
COPY app ./app
COPY docker/entrypoint.sh /usr/local/bin/mtcjudge-entrypoint

# Installed in place (-e), as in a checkout: setup.py maps migrations/, templates/, static/ and docs/
# into the package (mtcjudge._resources), where the app looks for them.
RUN pip install --no-deps -e . \
    && chmod 0755 /usr/local/bin/mtcjudge-entrypoint \
    && useradd --system --uid 10001 --user-group --home-dir /data --create-home mtcjudge

# Relative paths (a default SQLite file, `mtcjudge demo`'s data directory) land in /data.
USER mtcjudge
WORKDIR /data
EXPOSE 8000
ENTRYPOINT ["mtcjudge-entrypoint"]
CMD ["mtcjudge", "serve", "--host", "0.0.0.0", "--port", "8000"]
