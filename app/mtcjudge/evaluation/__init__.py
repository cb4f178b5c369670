"""Offline evaluation of runs against qrels and partially ordered ground truths
(``mtcjudge evaluate``, docs/evaluate.md)."""
