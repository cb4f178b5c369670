"""Benchmark of one MTC loop iteration; same as ``mtcjudge bench engine``.

Usage: python bench/engine.py [--json FILE] [--iterations N] [--runs R --judgments J --metadata M]
"""

from app.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", "engine", *__import__("sys").argv[1:]]))
