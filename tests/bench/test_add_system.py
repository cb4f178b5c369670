"""bench/add_system.py: the bookkeeping of the add-one-system replay, on small collections.

The benchmark's figures are only as good as its counts: which pairs adding a system brings,
which of them phase 2 judges, and that phase 2 never asks again for a pair phase 1 judged.
None of this needs the MIREX data.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from mtcjudge.cli import main
from mtcjudge.cli.bench import benchmark_module
from mtcjudge.ingest.loader import LoadedCollection, load_synthetic
from mtcjudge.mtc.collection import build_collection
from mtcjudge.mtc.scales import FINE
from mtcjudge.mtc.synthetic import generate


def _bench_module() -> ModuleType:
    module = benchmark_module("add_system")
    if module is None:
        raise RuntimeError("bench/add_system.py is missing from the checkout")
    return module


add_system = _bench_module()

# three systems, two queries, k = 2; documents 0..5
RUNS = [
    [[0, 1], [3, 4]],  # A
    [[1, 2], [4, 5]],  # B
    [[2, 0], [5, 3]],  # C
]
RUNS_WITH_NEW = [
    [[0, 1], [3, 4]],  # A
    [[1, 2], [4, 5]],  # B
    [[2, 5], [0, 3]],  # C: brings (q0, d5) and (q1, d0), shares (q0, d2) and (q1, d3)
]


@pytest.fixture(scope="module")
def small() -> LoadedCollection:
    synthetic = generate(5, 8, 3, n_genres=4, docs_per_genre=40, n_artists=30, seed=1)
    return load_synthetic(synthetic)


def test_runs_array_rebuilds_the_same_collection() -> None:
    c = build_collection([[[0, 1, -1], [3, 4, 5]], [[1, 2, 0], [5, -1, -1]]], k=3)
    again = build_collection(add_system.runs_array(c), c.k)
    for name in ("pair_query", "pair_doc", "entry_system", "entry_pair", "entry_rank"):
        np.testing.assert_array_equal(getattr(again, name), getattr(c, name))
    assert again.n_results == c.n_results == 9


def test_split_pools_counts_only_pairs_no_other_system_retrieves() -> None:
    c = build_collection(RUNS_WITH_NEW, k=2)
    pools = add_system.split_pools(c, 2)
    np.testing.assert_array_equal(pools.others, [0, 1])
    new = {(int(c.pair_query[p]), int(c.pair_doc[p])) for p in pools.new_pairs}
    shared = {(int(c.pair_query[p]), int(c.pair_doc[p])) for p in pools.shared_pairs}
    assert new == {(0, 5), (1, 0)}
    assert shared == {(0, 2), (1, 3)}
    assert pools.old.n_pairs == c.n_pairs - 2 == 6
    # every old pair maps to the full pair of the same query and document
    np.testing.assert_array_equal(c.pair_query[pools.old_to_full], pools.old.pair_query)
    np.testing.assert_array_equal(c.pair_doc[pools.old_to_full], pools.old.pair_doc)


def test_a_system_whose_pairs_others_all_retrieve_adds_nothing() -> None:
    pools = add_system.split_pools(build_collection(RUNS, k=2), 2)
    assert pools.new_pairs.size == 0
    assert pools.shared_pairs.size == 4
    assert pools.old.n_pairs == pools.full.n_pairs


def test_split_pools_rejects_a_system_out_of_range_and_too_few_others() -> None:
    with pytest.raises(ValueError, match=r"system must be in 0\.\.2"):
        add_system.split_pools(build_collection(RUNS, k=2), 3)
    with pytest.raises(ValueError, match="at least 2 others"):
        add_system.split_pools(build_collection([[[0]], [[1]]], k=1), 0)


def test_system_accuracy_counts_the_others_ordered_right() -> None:
    true = np.array([0.5, 0.4, 0.3, 0.3])
    # system 2 is above 3 in the estimate although they tie in truth: strictly, that is
    # wrong (only an estimated tie is right for a true tie)
    estimated = np.array([0.2, 0.4, 0.35, 0.1])
    assert add_system.system_accuracy(estimated, true, 2) == pytest.approx(1 / 3)
    # system 0 is wrongly below 1 and 2, rightly above 3
    assert add_system.system_accuracy(estimated, true, 0) == pytest.approx(1 / 3)
    assert add_system.rank_of(true, 1) == 2
    names = ["A", "B", "C", "D"]
    assert add_system.misordered(estimated, true, 2, names) == (
        ("A", pytest.approx(-0.2)),
        ("D", pytest.approx(0.0)),
    )
    assert [n for n, _ in add_system.misordered(estimated, true, 0, names)] == ["B", "C"]


@pytest.mark.parametrize("system", [0, 4])
def test_phase_two_never_judges_a_pair_twice_and_splits_its_judgments(
    small: LoadedCollection, system: int
) -> None:
    c = small.collection
    result = add_system.replay_add_system(small, system, FINE, add_system.Settings())
    phase1, phase2 = set(result.phase1_pairs), result.phase2_pairs
    assert len(phase1) == result.phase1_judgments > 0
    assert len(set(phase2)) == len(phase2) == result.phase2_judgments
    assert phase1.isdisjoint(phase2)

    ranks = c.rank_matrix()
    retrieved_by_system = ranks[system] > 0
    retrieved_by_others = (np.delete(ranks, system, axis=0) > 0).any(axis=0)
    new = retrieved_by_system & ~retrieved_by_others
    assert result.new_pairs == int(new.sum())
    assert result.shared_pairs == int((retrieved_by_system & retrieved_by_others).sum())
    assert result.system_pairs == int(retrieved_by_system.sum())
    assert result.phase1_pool == int(retrieved_by_others.sum())
    # phase 1 only ever saw the old pool
    assert not new[list(phase1)].any()
    shared = retrieved_by_system & retrieved_by_others
    assert result.shared_judged == int(shared[list(phase1)].sum())

    p2 = np.asarray(phase2, dtype=np.intp)
    assert result.phase2_new == int(new[p2].sum())
    assert result.phase2_shared == int(shared[p2].sum())
    assert result.phase2_old == int((~retrieved_by_system[p2]).sum())
    assert result.phase2_new + result.phase2_shared + result.phase2_old == len(phase2)
    assert result.cost_share == pytest.approx(len(phase2) / result.new_pairs)
    assert result.final_confidence >= 0.95
    assert 0.0 <= result.system_accuracy <= 1.0
    assert len(result.misordered) == round((1 - result.system_accuracy) * (c.n_systems - 1))
    assert 1 <= result.true_rank <= c.n_systems

    # the focused phase 2 starts from the same state and counts the same way
    focused = np.asarray(result.focused_pairs, dtype=np.intp)
    assert len(set(result.focused_pairs)) == focused.size == result.focused_judgments
    assert phase1.isdisjoint(result.focused_pairs)
    assert result.focused_new == int(new[focused].sum())
    assert result.focused_shared == int(shared[focused].sum())
    assert result.focused_old == int((~retrieved_by_system[focused]).sum())
    complete = len(phase1) + focused.size == c.n_pairs
    assert complete or result.focused_system_confidence >= 0.95
    assert complete or result.focused_confidence >= 0.95


def test_jittered_repeats_take_other_paths_to_the_same_bookkeeping(
    small: LoadedCollection,
) -> None:
    settings = add_system.Settings(jitter=0.05)
    exact = add_system.replay_add_system(small, 1, FINE, settings, repeat=0)
    jittered = add_system.replay_add_system(small, 1, FINE, settings, repeat=1)
    again = add_system.replay_add_system(small, 1, FINE, settings, repeat=1)
    assert jittered.phase1_pairs == again.phase1_pairs  # seeded: replayable
    assert jittered.phase2_pairs == again.phase2_pairs
    assert (exact.new_pairs, exact.shared_pairs) == (jittered.new_pairs, jittered.shared_pairs)
    assert exact.phase1_pairs != jittered.phase1_pairs


def test_command_writes_the_table_and_json(tmp_path: Path, capsys) -> None:
    # about 1 s: the synthetic collection has 7,000 clips and statsmodels loads on first use
    out = tmp_path / "add.json"
    tiny = ["--synthetic", "3", "--synthetic-systems", "4", "--synthetic-queries", "5"]
    chosen = ["--systems", "S02", "--repeats", "2", "--jobs", "1"]
    status = main(["bench", "add_system", *tiny, *chosen, "--json", str(out)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "| S | rank | new pairs | phase 1 |" in printed
    report = json.loads(out.read_text())
    assert report["repeats"] == 2
    assert [(run["system"], run["repeat"]) for run in report["runs"]] == [("S02", 0), ("S02", 1)]
    assert [row["system"] for row in report["per_system"]] == ["S02"]
    assert len(report["scratch"]) == 2
    for run in report["runs"]:
        assert run["phase2_judgments"] == (
            run["phase2_new"] + run["phase2_shared"] + run["phase2_old"]
        )
        assert run["focused_judgments"] == (
            run["focused_new"] + run["focused_shared"] + run["focused_old"]
        )
        if run["new_pairs"]:
            assert run["cost_share"] == pytest.approx(run["phase2_judgments"] / run["new_pairs"])
    summary = report["summary"]
    assert summary["runs"] == 2
    assert summary["scratch_judgments_median"] > 0


def test_unknown_system_is_a_usage_error(capsys) -> None:
    tiny = ["--synthetic", "3", "--synthetic-systems", "4", "--synthetic-queries", "5"]
    status = main(["bench", "add_system", *tiny, "--systems", "S01,nope", "--jobs", "1"])
    assert status == 2
    err = capsys.readouterr().err
    assert "mtcjudge: error:" in err
    assert "'nope'" in err


def test_a_data_source_is_required(capsys) -> None:
    assert main(["bench", "add_system", "--jobs", "1"]) == 2
    assert "--data DIR" in capsys.readouterr().err
