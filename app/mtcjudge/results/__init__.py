"""A campaign's results: the document the planner writes, its request-time read, the
organizer API and live stream, and the dashboard page.

* :mod:`mtcjudge.results.document`: the document and its engine part, written by the planner;
* :mod:`mtcjudge.results.repository`: the queries (stored document, curve, assessors);
* :mod:`mtcjudge.results.read`: the document when an organizer, a command or a report asks;
* :mod:`mtcjudge.results.events`: one poller per campaign and process for the live stream;
* :mod:`mtcjudge.results.routes`: ``GET /api/campaigns/{slug}/results`` and ``.../events``;
* :mod:`mtcjudge.results.pages`: the dashboard page ``GET /campaigns/{slug}``.

See docs/web-architecture.md, "Results".
"""
