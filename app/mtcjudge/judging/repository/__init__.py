"""Queries of the judging path, one module a job: :mod:`.context` (what a request starts
from, read by the invitation link), :mod:`.leases` (the pair handed out and its lease),
:mod:`.judgments` (the answer stored), :mod:`.trials` (the hidden quality trials) and
:mod:`.progress` (what the assessor is shown beside the pair).

The statements of the judging path are built once, at import: building a SELECT costs about
as much as running it on a local database, and these run on every request. They run as plain
rows (:func:`mtcjudge.db.execute_plain`), without the ORM, but for the few that load
an assessor to change it.
"""
