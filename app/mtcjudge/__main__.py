"""``python -m mtcjudge``: the same as the ``mtcjudge`` command."""

from mtcjudge.cli import main

raise SystemExit(main())
