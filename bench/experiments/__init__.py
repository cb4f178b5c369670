"""Experiments the benchmarks run and the product does not: the replay variants of
docs/replay-mirex2011.md, the staleness simulation of the planner, and the calibration zoo of
synthetic collections. Importable from a source checkout (``bench.experiments.*``); not in the
wheel."""
