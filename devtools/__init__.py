"""Development scaffolding shared by ``tests/`` and ``bench/``; not part of the wheel.

Neither the tests nor the benchmarks import each other for it: both import ``devtools`` from
the source checkout (the repository root is on ``sys.path`` under pytest and for
``mtcjudge bench``; ``python bench/NAME.py`` puts it there).
"""
