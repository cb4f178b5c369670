"""``python -m app.cli``: the same as the ``mtcjudge`` command."""

from app.cli import main

raise SystemExit(main())
