"""Small files for the evaluate tests: runs, qrels and ground truths written to tmp_path."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


def write_trec_runs(path: Path, lists: Mapping[str, Mapping[str, Sequence[str]]]) -> Path:
    """``qid Q0 docno rank score tag`` lines, scores decreasing with rank (as trec_eval wants)."""
    lines = [
        f"{query} Q0 {doc} {rank} {1000 - rank} {system}"
        for system, per_query in lists.items()
        for query, docs in per_query.items()
        for rank, doc in enumerate(docs, start=1)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def write_qrels(path: Path, grades: Iterable[tuple[str, str, float]]) -> Path:
    """TREC qrels ``qid 0 docno rel``."""
    path.write_text("".join(f"{q} 0 {d} {g:g}\n" for q, d, g in grades))
    return path


def write_ground_truth(path: Path, groups: Mapping[str, Sequence[Sequence[str]]]) -> Path:
    """``query group_rank document`` lines, group 1 first."""
    lines = [
        f"{query} {rank} {doc}"
        for query, ordered in groups.items()
        for rank, group in enumerate(ordered, start=1)
        for doc in group
    ]
    path.write_text("\n".join(lines) + "\n")
    return path
