"""The parts of the load benchmark, one job a module; ``bench/load.py`` runs them.

- :mod:`.config`: the run's settings (:class:`~.config.LoadConfig`) and shared constants;
- :mod:`.database`: a fresh scratch database (SQLite file or Postgres database) and engines
  without the app's hooks;
- :mod:`.servers`: the ``mtcjudge serve`` processes under load (started with
  :mod:`bench._serve`);
- :mod:`.campaign`: the campaign set up through the organizer API, its assessors invited;
- :mod:`.assessors`: the simulated assessors (HTTP clients) and what they record;
- :mod:`.dashboards`: organizer dashboards left open (results, then the event stream);
- :mod:`.faults`: a worker killed or the database refused mid-load;
- :mod:`.invariants`: lease snapshots during the run and the checks in the database after it;
- :mod:`.drive`: the load itself, every task above run together for the duration;
- :mod:`.report`: the figures (JSON) and their printed summary.
"""
