"""Collections built from MIREX 2011's real runs and judgments, with systems closer together and
metadata that predicts less (the *blended MIREX suite* of docs/calibration.md).

Every collection keeps MIREX 2011's 100 queries, its top-5 cut-off, its FINE judgments and its
MIREX filtering. Its 18 systems are *blends* of the real ones: blended system ``j`` has a base
system (a random permutation of the real ones) and a mixing share ``m``; for each query it
returns its base system's list with probability ``1 - m`` and otherwise the list of a real
system drawn uniformly. The larger ``m``, the closer the blended systems' scores (at ``m = 1``
every blended system has the same expected score, and they differ only by which real lists they
drew); two blends that drew the same real list for a query share all its results, so results
are shared across "teams" too. Every pool pair is a MIREX 2011 pool pair, so every pair has its
real judgment. The metadata the estimators see is corrupted as the synthetic suites' is: a share
of the clips lose their row, a share get another genre, a share another artist (the filtering
uses the real metadata, as MIREX did).

The ranges (:data:`BLEND_RANGES`) were fixed before any replay on them. Nothing here looks at an
estimator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from mtcjudge.ingest.formats import Runs, read_judgments, read_metadata, read_runs
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.collection import Metadata
from mtcjudge.mtc.measures import MEASURES

__all__ = ["BLEND_RANGES", "BlendSettings", "blend_settings", "blended_collection"]

#: the blended suite's ranges, fixed before any replay on them (docs/calibration.md, "The
#: blended MIREX suite"); every entry is drawn uniformly
BLEND_RANGES: dict[str, tuple[float, float]] = {
    "mix": (0.5, 1.0),  # share of queries on which a blend takes a random real system's list
    "metadata_missing": (0.2, 0.5),
    "metadata_wrong_genre": (0.05, 0.15),
    "metadata_wrong_artist": (0.05, 0.15),
}
_SUITE_KEY = 0x225


@dataclass(frozen=True)
class BlendSettings:
    """One blended collection: its seed, mixing share, metadata corruption and measure."""

    index: int
    seed: int
    mix: float
    metadata_missing: float
    metadata_wrong_genre: float
    metadata_wrong_artist: float
    measure: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def name(self) -> str:
        return f"blend-{self.index:02d} (18x100x5, fine, {self.measure}, mix {self.mix:.2f})"


def blend_settings(n: int, seed: int = 0) -> list[BlendSettings]:
    """The settings of ``n`` blended collections, reproducible from ``seed``; the measure cycles
    over CG, DCG, nDCG and RBP (FINE only: MIREX 2011's BROAD judgments are not in the data)."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rng = np.random.default_rng(np.random.SeedSequence([seed, _SUITE_KEY]))
    out = []
    for i in range(n):
        drawn = {name: float(rng.uniform(lo, hi)) for name, (lo, hi) in BLEND_RANGES.items()}
        out.append(
            BlendSettings(
                index=i,
                seed=int(rng.integers(0, 2**31 - 1)),
                measure=MEASURES[i % len(MEASURES)],
                **drawn,  # type: ignore[arg-type]
            )
        )
    return out


def blended_runs(runs: Runs, settings: BlendSettings) -> Runs:
    """The blended systems' runs (``B01``...), drawn from the real ``runs``."""
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 1]))
    real = list(runs.systems)
    base = rng.permutation(len(real))
    lists: dict[str, dict[str, list[str]]] = {}
    for j, b in enumerate(base.tolist()):
        name = f"B{j + 1:02d}"
        lists[name] = {}
        for q in runs.queries:
            mixed = rng.uniform() < settings.mix
            source = real[int(rng.integers(len(real)))] if mixed else real[b]
            lists[name][q] = list(runs.lists[source].get(q, []))
    return Runs(lists=lists, format=runs.format)


def _corrupted(metadata: Metadata, settings: BlendSettings) -> Metadata:
    """The metadata the estimators see: some clips without a row, some with another genre or
    another artist (the queries' genres follow their clips')."""
    rng = np.random.default_rng(np.random.SeedSequence([settings.seed, 2]))
    artist = metadata.doc_artist.copy()
    genre = metadata.doc_genre.copy()
    n = artist.shape[0]
    order = rng.permutation(n)
    n_missing = round(settings.metadata_missing * n)
    artist[order[:n_missing]] = -1
    genre[order[:n_missing]] = -1
    kept = order[n_missing:]
    n_genres = int(genre.max(initial=-1)) + 1
    n_artists = int(artist.max(initial=-1)) + 1
    wrong_genre = rng.choice(kept, size=min(round(settings.metadata_wrong_genre * n), kept.size))
    if n_genres > 1:
        genre[wrong_genre] = (genre[wrong_genre] + rng.integers(1, n_genres, wrong_genre.size)) % (
            n_genres
        )
    wrong_artist = rng.choice(kept, size=min(round(settings.metadata_wrong_artist * n), kept.size))
    if n_artists > 1:
        artist[wrong_artist] = rng.integers(0, n_artists, wrong_artist.size)
    query_genre = metadata.query_genre.copy()
    return Metadata.from_arrays(artist, genre, query_genre)


def blended_collection(directory: Path, settings: BlendSettings) -> LoadedCollection:
    """The blended collection of ``settings`` from the MIREX 2011 directory ``directory``."""
    runs = read_runs(directory / "runs.tsv")
    judgments = read_judgments(directory / "judgments-fine.tsv", "fine")
    metadata = read_metadata(directory / "metadata.tsv")
    loaded = load_collection(blended_runs(runs, settings), 5, metadata, judgments)
    if np.isnan(loaded.judged_values).any():
        raise ValueError("a blended pool pair has no MIREX 2011 judgment")
    assert loaded.metadata is not None
    return LoadedCollection(
        loaded.collection,
        _corrupted(loaded.metadata, settings),
        loaded.systems,
        loaded.queries,
        loaded.docs,
        loaded.judged_values,
        loaded.n_filtered,
    )
