"""The toy query of docs/method.md §2.6(d), for the bench's estimator variants
(tests/bench/test_variants.py): the engine tests' own fixtures."""

from tests.mtc.conftest import (  # noqa: F401
    make_toy_model,
    toy_collection,
    toy_judgments,
    toy_metadata,
)
