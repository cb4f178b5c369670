"""The calibration suite's generator: ranges respected, reproducible, defaults unchanged."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from scipy.stats import kurtosis

from bench.experiments.synthetic_zoo import (
    ISSUE23_RANGES,
    RANGE_SETS,
    RANGES,
    SCALES,
    ZooSettings,
    calibration_suite,
    generate_zoo,
    suite_settings,
)
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.synthetic import SyntheticCollection, generate


def fingerprint(c: SyntheticCollection) -> str:
    blob = json.dumps(
        [
            c.systems,
            c.teams,
            c.queries,
            c.runs,
            sorted((list(k), v) for k, v in c.fine.items()),
            sorted((list(k), v) for k, v in c.broad.items()),
            sorted(c.artist.items()),
            sorted(c.genre.items()),
        ]
    )
    return hashlib.sha256(blob.encode()).hexdigest()


# Fingerprints of generate()'s output taken before the calibration options were added: the
# options must leave every existing seed's collection exactly as it was.
BEFORE_OPTIONS = [
    (
        (4, 3, 5),
        {"seed": 1},
        "7c64696a009ac1af6e1a2040ed9f85cd67d1ea935906d33805455b6c2c36a166",
    ),
    (
        (7, 20, 10),
        {"seed": 5, "n_teams": 3},
        "3ed4e0d01fd59aae1601c2d3e1d3a0299c4d503a854b02079d6a09fc8c4cab05",
    ),
    (
        (12, 40, 5),
        {"seed": 2, "n_genres": 6, "docs_per_genre": 200, "n_artists": 150},
        "cc0139a9f005b8a63405ede1d883555caa44d10dd2209097e780660d84adda59",
    ),
]


@pytest.mark.parametrize(("sizes", "options", "digest"), BEFORE_OPTIONS)
def test_defaults_generate_the_same_collections_as_before(sizes, options, digest) -> None:
    assert fingerprint(generate(*sizes, **options)) == digest


def settings_fingerprint(settings: list[ZooSettings]) -> str:
    blob = json.dumps([s.as_dict() for s in settings], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


# The first 8 settings of suites 0 and 1, taken before the third suite's ranges existed
# (their figures in docs/calibration.md must stay reproducible), and of the third suite
# (ranges "issue23", seed 0) and of the fourth (ranges "packed", seed 0), each taken when
# its ranges were fixed, before any run on it.
SUITE_FINGERPRINTS = [
    ("issue11", 0, "39aca232354d2aa21322a836b6f75cffbb92407876647b800f8e84981392a351"),
    ("issue11", 1, "af5ef4397a16992610969618f58893490105143b77a4dcd6e8d392fb9fee20e7"),
    ("issue23", 0, "4d35c3bc70b38ae67d5d98713802b634b5d2273c6ab282c9c5c08371d1ee6e12"),
    ("packed", 0, "53786161f06214a605c37a3d0253315f0c6c92c63ef44ae6b1a96a9a4c1df93f"),
]


@pytest.mark.parametrize(("ranges", "seed", "digest"), SUITE_FINGERPRINTS)
def test_suites_draw_the_settings_they_were_registered_with(ranges, seed, digest) -> None:
    assert settings_fingerprint(suite_settings(8, seed, ranges)) == digest


def test_the_first_suites_settings_carry_no_quality_interval() -> None:
    for s in suite_settings(8, seed=0):
        assert s.quality_range is None
        assert "quality_low" not in s.as_dict()
    assert suite_settings(8, seed=0) == suite_settings(8, seed=0, ranges="issue11")


def test_third_suite_settings_stay_in_their_ranges() -> None:
    settings = suite_settings(200, seed=3, ranges="issue23")
    for name in ("n_systems", "n_queries", "k", "n_genres", "docs_per_genre"):
        _, low, high = ISSUE23_RANGES[name]
        values = [getattr(s, name) for s in settings]
        assert low <= min(values)
        assert max(values) <= high
    for name in (
        "noise_sd",
        "artist_effect_sd",
        "genre_effect_sd",
        "hidden_sd",
        "skill_sd",
        "metadata_missing",
        "metadata_wrong_genre",
        "metadata_wrong_artist",
    ):
        _, low, high = ISSUE23_RANGES[name]
        assert all(low <= getattr(s, name) <= high for s in settings), name
    for s in settings:
        assert s.n_teams <= round(0.7 * s.n_systems)
        assert s.noise_df is None or 2.5 <= s.noise_df <= 6.0
        assert s.quality_range is not None
        low, high = s.quality_range
        assert 0.0 <= low < high <= 1.0
        assert 0.15 / 2 - 1e-12 <= high - low <= 0.6 + 1e-12
    heavy = sum(s.noise_df is not None for s in settings)
    assert 130 <= heavy <= 170  # three quarters of 200
    # another range set is another suite, even with the same seed
    assert suite_settings(4, seed=0, ranges="issue23") != suite_settings(4, seed=0)
    assert set(RANGE_SETS) == {"issue11", "issue23", "packed"}
    with pytest.raises(ValueError, match="ranges must be one of"):
        suite_settings(1, ranges="issue99")


def test_fourth_suite_is_mirex_sized_packed_and_shares_more_across_teams() -> None:
    settings = suite_settings(100, seed=2, ranges="packed")
    for s in settings:
        assert (s.n_systems, s.n_queries, s.k) == (18, 100, 5)
        assert 9 <= s.n_teams <= 12
        assert s.n_weak == 0
        assert s.quality_range is not None
        low, high = s.quality_range
        assert high - low <= 0.08 + 1e-12
        assert s.common_view_sd is not None
        assert 0.6 <= s.common_view_sd <= 1.2
        assert s.as_dict()["common_view_sd"] == s.common_view_sd
    # the other suites carry no common view error, as before it existed
    for ranges in ("issue11", "issue23"):
        for s in suite_settings(8, seed=0, ranges=ranges):
            assert s.common_view_sd is None
            assert "common_view_sd" not in s.as_dict()


def test_a_larger_common_view_error_shares_more_results_across_teams() -> None:
    options = {"n_genres": 5, "docs_per_genre": 150, "n_artists": 60, "seed": 4, "n_teams": 6}
    default = generate(12, 40, 5, **options)
    assert generate(12, 40, 5, common_view_sd=0.3, **options) == default
    shared = generate(12, 40, 5, common_view_sd=1.5, **options)

    def pool(c: SyntheticCollection) -> int:
        return len({(q, d) for s in c.systems for q in c.queries for d in c.runs[s][q]})

    # the same results retrieved by more systems: a smaller pool for the same lists
    assert pool(shared) < pool(default)
    assert shared.teams == default.teams
    with pytest.raises(ValueError, match="common_view_sd"):
        generate(4, 3, 5, common_view_sd=-0.1)


def test_a_narrow_quality_range_brings_systems_closer_together() -> None:
    options = {"n_genres": 5, "docs_per_genre": 150, "n_artists": 60, "seed": 4}
    wide = generate(12, 40, 5, **options)
    narrow = generate(12, 40, 5, quality_low=0.45, quality_high=0.6, **options)
    assert generate(12, 40, 5, quality_low=0.0, quality_high=1.0, **options) == wide

    def spread(c: SyntheticCollection) -> float:
        means = [
            np.mean([c.fine[q, d] for q in c.queries for d in c.runs[s][q]]) for s in c.systems
        ]
        return float(np.std(means))

    assert spread(narrow) < spread(wide)
    # the same teams and the same true scores of the pairs both pools hold
    assert narrow.teams == wide.teams
    common = set(narrow.fine) & set(wide.fine)
    assert common
    assert all(narrow.fine[p] == wide.fine[p] for p in common)


def generated_by_hand(settings: ZooSettings, **options: float) -> SyntheticCollection:
    """What :func:`generate` makes of a :func:`small` settings draw, called by hand with
    ``options`` (the quality interval, the common view error) spelled out."""
    return generate(
        8,
        20,
        6,
        n_genres=5,
        docs_per_genre=120,
        n_artists=50,
        n_teams=5,
        n_weak=2,
        seed=settings.seed,
        difficulty_sd=settings.difficulty_sd,
        noise_sd=settings.noise_sd,
        noise_df=settings.noise_df,
        artist_effect_sd=settings.artist_effect_sd,
        genre_effect_sd=settings.genre_effect_sd,
        hidden_sd=settings.hidden_sd,
        skill_sd=settings.skill_sd,
        **options,
    )


def test_generate_zoo_passes_the_quality_interval_on() -> None:
    settings = small(suite_settings(1, seed=0, ranges="issue23")[0])
    assert settings.quality_range is not None
    low, high = settings.quality_range
    c = generate_zoo(settings).collection
    truth = generated_by_hand(settings, quality_low=low, quality_high=high)
    assert c.runs == truth.runs
    assert c.fine == truth.fine


def test_suite_settings_stay_in_their_ranges() -> None:
    settings = suite_settings(200, seed=3)
    for name in ("n_systems", "n_queries", "k", "n_genres", "docs_per_genre"):
        _, low, high = RANGES[name]
        values = [getattr(s, name) for s in settings]
        assert low <= min(values)
        assert max(values) <= high
    for name in (
        "difficulty_sd",
        "noise_sd",
        "artist_effect_sd",
        "genre_effect_sd",
        "hidden_sd",
        "skill_sd",
        "metadata_missing",
        "metadata_wrong_genre",
        "metadata_wrong_artist",
    ):
        _, low, high = RANGES[name]
        assert all(low <= getattr(s, name) <= high for s in settings), name
    for s in settings:
        assert 1 <= s.n_teams <= s.n_systems
        assert 0 <= s.n_weak <= s.n_systems // 4
        assert s.noise_df is None or 3.0 <= s.noise_df <= 10.0
    # the draws do span their ranges: both ends of the sizes are represented
    sizes = [s.n_systems for s in settings]
    assert min(sizes) <= 7
    assert max(sizes) >= 35
    heavy = sum(s.noise_df is not None for s in settings)
    assert 60 <= heavy <= 140


def test_measure_and_scale_cycle_so_eight_collections_cover_every_combination() -> None:
    settings = suite_settings(16, seed=0)
    combos = [(s.measure, s.scale) for s in settings]
    assert set(combos[:8]) == {(m, sc) for m in MEASURES for sc in SCALES}
    assert combos[:8] == combos[8:]


def test_suites_are_reproducible_and_extend_by_prefix() -> None:
    assert suite_settings(5, seed=7) == suite_settings(5, seed=7)
    assert suite_settings(8, seed=7)[:5] == suite_settings(5, seed=7)
    assert suite_settings(5, seed=7) != suite_settings(5, seed=8)


def small(settings: ZooSettings, **changes: object) -> ZooSettings:
    """A settings draw shrunk so that generating it takes a fraction of a second."""
    base = {
        "n_systems": 8,
        "n_queries": 20,
        "k": 6,
        "n_teams": 5,
        "n_weak": 2,
        "n_genres": 5,
        "docs_per_genre": 120,
        "n_artists": 50,
    }
    return ZooSettings(**{**settings.as_dict(), **base, **changes})  # type: ignore[arg-type]


def test_generate_zoo_is_reproducible_and_honours_its_settings() -> None:
    settings = small(
        suite_settings(1, seed=1)[0],
        metadata_missing=0.1,
        metadata_wrong_genre=0.05,
        metadata_wrong_artist=0.05,
    )
    first, second = generate_zoo(settings), generate_zoo(settings)
    assert fingerprint(first.collection) == fingerprint(second.collection)
    c = first.collection
    assert len(c.systems) == 8
    assert len(c.queries) == 20
    assert all(len(lst) == 6 for per in c.runs.values() for lst in per.values())
    assert len(set(c.teams.values())) == 5
    assert len(c.weak_systems) == 2
    # the metadata the estimators see: 10 % of the 600 rows dropped, a few wrong
    truth = generate(
        8, 20, 6, n_genres=5, docs_per_genre=120, n_artists=50, n_teams=5, seed=settings.seed
    )
    assert len(c.genre) == len(c.artist) == 600 - 60
    wrong_genre = sum(c.genre[d] != truth.genre[d] for d in c.genre)
    wrong_artist = sum(c.artist[d] != truth.artist[d] for d in c.artist)
    assert wrong_genre == 30
    assert wrong_artist == 30


def test_weak_systems_score_below_the_others() -> None:
    c = generate(12, 40, 5, n_genres=5, docs_per_genre=150, n_artists=60, n_weak=3, seed=2)
    mean = {s: np.mean([c.fine[q, d] for q in c.queries for d in c.runs[s][q]]) for s in c.systems}
    weak = [mean[s] for s in c.weak_systems]
    strong = [mean[s] for s in c.systems if s not in c.weak_systems]
    assert max(weak) < np.median(strong)


def test_skill_makes_a_system_find_what_the_metadata_does_not_predict() -> None:
    """With a hidden score component and skilled systems, the systems' mean true scores
    spread more than without: errors of a system's results share a sign."""
    options = {"n_genres": 5, "docs_per_genre": 150, "n_artists": 60, "seed": 4}
    plain = generate(10, 40, 5, hidden_sd=10.0, **options)
    skilled = generate(10, 40, 5, hidden_sd=10.0, skill_sd=0.3, **options)

    def spread(c: SyntheticCollection) -> float:
        means = [
            np.mean([c.fine[q, d] for q in c.queries for d in c.runs[s][q]]) for s in c.systems
        ]
        return float(np.std(means))

    assert spread(skilled) > spread(plain)


def test_heavy_tailed_noise_keeps_its_scale_and_has_heavier_tails() -> None:
    options = {"n_genres": 5, "docs_per_genre": 200, "n_artists": 80, "seed": 6}
    normal_c = generate(8, 60, 8, noise_sd=6.0, **options)
    heavy_c = generate(8, 60, 8, noise_sd=6.0, noise_df=3.0, **options)
    pairs = sorted(normal_c.fine)
    assert pairs == sorted(heavy_c.fine)  # same runs: the noise is not what systems see
    normal = np.array([normal_c.fine[p] for p in pairs])
    heavy = np.array([heavy_c.fine[p] for p in pairs])
    inside = (normal > 0) & (normal < 100) & (heavy > 0) & (heavy < 100)
    # same pairs, same effects: the difference is the two noises, one of them t(3)
    difference = heavy[inside] - normal[inside]
    assert abs(difference.std() - 6.0 * np.sqrt(2)) < 1.5
    assert kurtosis(difference) > 1.0  # excess kurtosis; 0 for two normal noises


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("noise_df", 2.0, "noise_df must be above 2"),
        ("noise_sd", -1.0, "noise_sd must be a finite non-negative number"),
        ("skill_sd", math.nan, "skill_sd must be a finite non-negative number"),
        ("n_weak", 5, "n_weak must be between 0 and n_systems"),
        ("quality_low", 1.5, "quality_low and quality_high must satisfy"),
        ("quality_low", -0.1, "quality_low and quality_high must satisfy"),
        ("quality_high", math.inf, "quality_low and quality_high must satisfy"),
    ],
)
def test_invalid_options(option: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate(4, 3, 5, **{option: value})  # type: ignore[arg-type]


def test_calibration_suite_generates_its_settings_in_order() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        suite_settings(-1)
    assert list(calibration_suite(0)) == []


def test_generate_zoo_passes_the_common_view_error_on() -> None:
    settings = small(suite_settings(1, seed=0, ranges="packed")[0])
    assert settings.common_view_sd is not None
    assert settings.quality_range is not None
    low, high = settings.quality_range
    c = generate_zoo(settings).collection
    truth = generated_by_hand(
        settings, quality_low=low, quality_high=high, common_view_sd=settings.common_view_sd
    )
    assert c.runs == truth.runs
    assert c.fine == truth.fine
    assert c.runs != generate_zoo(small(settings, common_view_sd=None)).collection.runs
