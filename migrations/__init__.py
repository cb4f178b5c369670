"""Alembic migrations: a package only so that wheels ship them (app/mtcjudge/_resources)."""
