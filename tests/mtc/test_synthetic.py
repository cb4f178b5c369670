from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mtcjudge.mtc.synthetic import SyntheticCollection, generate

K = 5


@pytest.fixture(scope="module")
def small() -> SyntheticCollection:
    return generate(6, 10, K, n_genres=4, docs_per_genre=60, n_artists=24, seed=7)


@pytest.fixture(scope="module")
def mirex_like() -> SyntheticCollection:
    return generate(seed=3)


def pool(collection: SyntheticCollection) -> Counter[tuple[str, str]]:
    return Counter(
        (query, doc)
        for system in collection.systems
        for query in collection.queries
        for doc in collection.runs[system][query]
    )


def mean_gain(collection: SyntheticCollection, system: str) -> float:
    """Mean CG_l@k on FINE/100 over queries."""
    runs = collection.runs[system]
    scores = [collection.fine[query, doc] for query in collection.queries for doc in runs[query]]
    return float(np.mean(scores)) / 100


def test_same_seed_same_collection() -> None:
    first = generate(4, 6, K, n_genres=3, docs_per_genre=40, n_artists=12, seed=11)
    second = generate(4, 6, K, n_genres=3, docs_per_genre=40, n_artists=12, seed=11)
    other = generate(4, 6, K, n_genres=3, docs_per_genre=40, n_artists=12, seed=12)
    assert first == second
    assert first.runs != other.runs


def test_ids_and_sizes(small: SyntheticCollection) -> None:
    assert small.systems == ["S01", "S02", "S03", "S04", "S05", "S06"]
    assert len(small.queries) == len(set(small.queries)) == 10
    assert len(small.artist) == len(small.genre) == 4 * 60
    assert set(small.teams) == set(small.systems)
    assert small.teams["S01"] == "T01"
    assert len(set(small.teams.values())) == round(0.6 * 6)
    assert Counter(small.genre.values()) == dict.fromkeys(["G01", "G02", "G03", "G04"], 60)
    assert set(small.queries) <= set(small.artist)
    # Queries are stratified by genre: 10 over 4 genres is 2 or 3 each.
    assert set(Counter(small.genre[q] for q in small.queries).values()) <= {2, 3}


def test_every_list_has_k_distinct_filtered_docs(small: SyntheticCollection) -> None:
    assert set(small.runs) == set(small.systems)
    for system in small.systems:
        assert list(small.runs[system]) == small.queries
        for query, docs in small.runs[system].items():
            assert len(docs) == len(set(docs)) == K
            assert query not in docs
            assert all(small.artist[doc] != small.artist[query] for doc in docs)
            assert set(docs) <= set(small.artist)


def test_every_pool_pair_is_judged_in_range(small: SyntheticCollection) -> None:
    pairs = set(pool(small))
    assert set(small.fine) == pairs
    assert set(small.broad) == pairs
    fine = np.array(list(small.fine.values()))
    assert np.all((fine >= 0) & (fine <= 100))
    assert np.all(fine == np.round(fine))
    assert set(small.broad.values()) <= {0, 1, 2}


def test_broad_follows_fine(mirex_like: SyntheticCollection) -> None:
    by_level: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for pair, fine in mirex_like.fine.items():
        by_level[mirex_like.broad[pair]].append(fine)
    # BROAD noise is small: a level never skips over the neighbouring cut.
    assert max(by_level[0]) < 67
    assert min(by_level[2]) >= 34
    assert np.mean(by_level[0]) < np.mean(by_level[1]) < np.mean(by_level[2])
    agree = sum(
        mirex_like.broad[pair] == int(np.digitize(fine, [34, 67]))
        for pair, fine in mirex_like.fine.items()
    )
    assert agree / len(mirex_like.fine) > 0.8


def test_same_genre_pairs_score_higher(mirex_like: SyntheticCollection) -> None:
    genre = mirex_like.genre
    same = [v for (q, d), v in mirex_like.fine.items() if genre[q] == genre[d]]
    other = [v for (q, d), v in mirex_like.fine.items() if genre[q] != genre[d]]
    assert 50 < np.mean(same) < 75
    assert np.mean(other) < np.mean(same) - 15


def test_pairs_retrieved_by_more_systems_score_higher(mirex_like: SyntheticCollection) -> None:
    counts = pool(mirex_like)
    once = [mirex_like.fine[pair] for pair, n in counts.items() if n == 1]
    often = [mirex_like.fine[pair] for pair, n in counts.items() if n >= 3]
    assert np.mean(often) > np.mean(once) + 10


def test_systems_spread_like_mirex(mirex_like: SyntheticCollection) -> None:
    gains = [mean_gain(mirex_like, system) for system in mirex_like.systems]
    assert 0.2 < min(gains) < 0.4
    assert 0.5 < max(gains) < 0.7


def test_systems_differ_on_a_small_collection(small: SyntheticCollection) -> None:
    gains = [mean_gain(small, system) for system in small.systems]
    assert max(gains) - min(gains) > 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_overlap_ratio_is_mirex_like(seed: int) -> None:
    collection = generate(seed=seed)
    results = len(collection.systems) * len(collection.queries) * K
    assert 0.6 < len(collection.fine) / results < 0.85


def test_systems_of_a_team_overlap_more(mirex_like: SyntheticCollection) -> None:
    def shared(a: str, b: str) -> float:
        runs_a, runs_b = mirex_like.runs[a], mirex_like.runs[b]
        return float(np.mean([len(set(runs_a[q]) & set(runs_b[q])) for q in mirex_like.queries]))

    systems = mirex_like.systems
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    same_team = [shared(a, b) for a, b in pairs if mirex_like.teams[a] == mirex_like.teams[b]]
    other_team = [shared(a, b) for a, b in pairs if mirex_like.teams[a] != mirex_like.teams[b]]
    assert same_team
    assert np.mean(same_team) > 5 * np.mean(other_team)


def test_judgments_and_metadata_do_not_depend_on_systems() -> None:
    sizes = {"n_genres": 3, "docs_per_genre": 50, "n_artists": 15, "seed": 5}
    few = generate(3, 8, K, **sizes)
    many = generate(9, 8, 10, n_teams=2, **sizes)
    assert few.queries == many.queries
    assert few.artist == many.artist
    assert few.genre == many.genre
    common = few.fine.keys() & many.fine.keys()
    assert common
    assert all(few.fine[pair] == many.fine[pair] for pair in common)
    assert all(few.broad[pair] == many.broad[pair] for pair in common)


def test_n_teams() -> None:
    collection = generate(5, 4, K, n_genres=2, docs_per_genre=30, n_artists=6, n_teams=5)
    assert sorted(collection.teams.values()) == ["T01", "T02", "T03", "T04", "T05"]
    single = generate(5, 4, K, n_genres=2, docs_per_genre=30, n_artists=6, n_teams=1)
    assert set(single.teams.values()) == {"T01"}


def read_rows(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def test_write(small: SyntheticCollection, tmp_path: Path) -> None:
    paths = small.write(tmp_path / "out")
    assert paths == {
        name: tmp_path / "out" / f"{name}.tsv"
        for name in ("runs", "judgments-fine", "judgments-broad", "metadata")
    }

    runs = read_rows(paths["runs"])
    assert len(runs) == 6 * 10 * K
    assert all(len(row) == 3 for row in runs)
    first_system, first_query = small.systems[0], small.queries[0]
    assert [doc for s, q, doc in runs if (s, q) == (first_system, first_query)] == small.runs[
        first_system
    ][first_query]

    fine = read_rows(paths["judgments-fine"])
    assert {(q, d): float(score) for q, d, score in fine} == small.fine
    assert all(score.isdigit() for _, _, score in fine)
    broad = read_rows(paths["judgments-broad"])
    assert {(q, d): int(score) for q, d, score in broad} == small.broad

    metadata = read_rows(paths["metadata"])
    assert {doc: artist for doc, artist, _ in metadata} == small.artist
    assert {doc: genre for doc, _, genre in metadata} == small.genre


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_systems": 0}, "n_systems must be a positive integer, got 0"),
        ({"n_queries": 0}, "n_queries must be a positive"),
        ({"k": 0}, "k must be a positive"),
        ({"n_genres": 0}, "n_genres must be a positive"),
        ({"docs_per_genre": -1}, "docs_per_genre must be a positive"),
        ({"n_artists": 0}, "n_artists must be a positive"),
        ({"n_genres": 4, "n_artists": 3}, r"n_artists must be between n_genres \(4\)"),
        ({"n_genres": 2, "docs_per_genre": 5, "n_artists": 11}, r"number of docs \(10\)"),
        ({"n_queries": 11, "n_genres": 2, "docs_per_genre": 5}, "n_queries must be at most"),
        ({"n_teams": 0}, r"n_teams must be between 1 and n_systems \(3\), got 0"),
        ({"n_teams": 4}, "n_teams must be between"),
        ({"k": 8, "n_genres": 1, "docs_per_genre": 10, "n_artists": 2}, "candidates left"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, int], message: str) -> None:
    arguments = {"n_systems": 3, "n_queries": 2, "k": 2, "n_artists": 2, "n_genres": 2}
    arguments |= {"docs_per_genre": 10} | kwargs
    with pytest.raises(ValueError, match=message):
        generate(**arguments)
