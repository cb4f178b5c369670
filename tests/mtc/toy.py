"""The toy query of docs/method.md §2.6(d): one query, eight documents d1..d8 (indices 0..7),
three systems, BROAD, k = 5. The engine tests' fixtures (tests/mtc/conftest.py) and the
bench's estimator variants (tests/bench/test_variants.py) build it from here."""

from __future__ import annotations

import dataclasses

import numpy as np

from mtcjudge.mtc.collection import Collection, Metadata, build_collection
from mtcjudge.mtc.estimators import RelevanceModel
from mtcjudge.mtc.scales import BROAD

TOY_RUNS = [
    [[0, 1, 2, 3, 4]],  # A: d1 d2 d3 d4 d5
    [[1, 0, 5, 6, 2]],  # B: d2 d1 d6 d7 d3
    [[7, 1, 5, 0, 3]],  # C: d8 d2 d6 d1 d4
]
# artists P=0, Q=1, R=2, S=3, T=4; genres rock=0, jazz=1, blues=2; the query is rock
TOY_ARTIST = [0, 0, 1, 2, 3, 1, 4, 0]
TOY_GENRE = [0, 0, 0, 1, 2, 0, 1, 0]
TOY_QUERY_GENRE = [0]
TOY_OV = 0.8053  # the MIREX 2007 collection value the spec uses instead of 8/15


def toy_collection() -> Collection:
    return build_collection(TOY_RUNS, k=5)


def toy_metadata() -> Metadata:
    return Metadata.from_arrays(TOY_ARTIST, TOY_GENRE, TOY_QUERY_GENRE)


def toy_judgments() -> tuple[np.ndarray, np.ndarray]:
    """(judged, values) with d1 = 2, d2 = 1, d6 = 0."""
    judged = np.zeros(8, dtype=bool)
    judged[[0, 1, 5]] = True
    values = np.zeros(8)
    values[[0, 1]] = [2.0, 1.0]
    return judged, values


def toy_model(collection: Collection, metadata: Metadata, use_m_jud: bool = True) -> RelevanceModel:
    """Ordinal Broad model of the toy with OV forced to 0.8053."""
    model = RelevanceModel(collection, BROAD, "ordinal", metadata, use_m_jud=use_m_jud)
    assert model.features is not None
    model.features = dataclasses.replace(model.features, ov=TOY_OV)
    model._apply_m_out()
    return model
