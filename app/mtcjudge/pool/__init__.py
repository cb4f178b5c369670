"""The pool: the campaign's query–candidate pairs to judge, whether each one can be played,
and the row lock and lease counts every change of a pair goes through (shared by campaigns,
the planner, judging, assessors and exports)."""
