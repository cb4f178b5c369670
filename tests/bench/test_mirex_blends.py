"""The blended MIREX suite: collections made of a MIREX-style directory's real runs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bench.experiments.mirex_blends import (
    BLEND_RANGES,
    blend_settings,
    blended_collection,
    blended_runs,
)
from mtcjudge.ingest.formats import read_runs
from mtcjudge.mtc.measures import evaluate
from mtcjudge.mtc.scales import get_scale
from mtcjudge.mtc.synthetic import generate


@pytest.fixture(scope="module")
def mirex_like(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("mirex")
    generate(18, 30, 5, n_genres=5, docs_per_genre=120, n_artists=60, seed=3).write(directory)
    return directory


# the first 8 settings of seed 0, taken when the ranges were fixed, before any replay on them
FINGERPRINT = "121bba1a50796af37e815efbfa87768028672c8f1ae8e5a77cdcb7b9eb0bc7ec"


def test_settings_stay_in_their_ranges_and_cycle_the_measures() -> None:
    settings = blend_settings(40, seed=1)
    for name, (lo, hi) in BLEND_RANGES.items():
        assert all(lo <= getattr(s, name) <= hi for s in settings), name
    assert [s.measure for s in settings[:4]] == ["cg", "dcg", "ndcg", "rbp"]
    assert blend_settings(8, seed=1) == settings[:8]
    assert blend_settings(8, seed=0) != blend_settings(8, seed=1)
    with pytest.raises(ValueError, match="non-negative"):
        blend_settings(-1)


def test_the_registered_settings_do_not_change() -> None:
    blob = json.dumps([s.as_dict() for s in blend_settings(8, seed=0)], sort_keys=True)
    assert hashlib.sha256(blob.encode()).hexdigest().startswith(FINGERPRINT)


def test_blends_are_real_lists_and_closer_together(mirex_like: Path) -> None:
    runs = read_runs(mirex_like / "runs.tsv")
    settings = blend_settings(4, seed=0)[0]
    blends = blended_runs(runs, settings)
    assert len(blends.systems) == len(runs.systems)
    real_lists = {tuple(runs.lists[s][q]) for s in runs.systems for q in runs.queries}
    for s in blends.systems:
        for q in runs.queries:
            assert tuple(blends.lists[s][q]) in real_lists
    # every blended pool pair keeps its real judgment; the scores of the blends spread less
    loaded = blended_collection(mirex_like, settings)
    assert not np.isnan(loaded.judged_values).any()
    fine = get_scale("fine")
    blend_means = evaluate(
        loaded.collection, loaded.judged_values, np.zeros(loaded.collection.n_pairs), "cg", fine
    ).mean
    full = blended_collection(mirex_like, replace(settings, mix=0.0))
    real_means = evaluate(
        full.collection, full.judged_values, np.zeros(full.collection.n_pairs), "cg", fine
    ).mean
    assert np.std(blend_means) < np.std(real_means)


def test_the_estimators_see_corrupted_metadata(mirex_like: Path) -> None:
    settings = blend_settings(1, seed=0)[0]
    loaded = blended_collection(mirex_like, settings)
    clean = blended_collection(
        mirex_like,
        replace(
            settings, metadata_missing=0.0, metadata_wrong_genre=0.0, metadata_wrong_artist=0.0
        ),
    )
    assert loaded.metadata is not None
    assert clean.metadata is not None
    missing = np.mean(loaded.metadata.doc_artist == -1) - np.mean(clean.metadata.doc_artist == -1)
    assert missing == pytest.approx(settings.metadata_missing, abs=0.02)
    # the same pool: the filtering used the real metadata
    assert loaded.collection.n_pairs == clean.collection.n_pairs
