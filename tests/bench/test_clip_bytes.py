"""bench/clip_bytes.py: ``mtcjudge bench clip_bytes`` judges through a browser-like cache against
a real server of this checkout (the "after" side only, tiny tracks: seconds, not minutes)."""

from __future__ import annotations

import json
from pathlib import Path

from bench.clip_bytes import BrowserCache
from tests.cli import run


def test_the_after_side_fetches_a_query_once_and_answers_304(tmp_path: Path) -> None:
    report = tmp_path / "clip-bytes.json"
    code, out, err = run(
        "bench", "clip_bytes", "--track-seconds", "3", "--tracks", "2", "--judgments", "3",
        "--rounds", "1", "--queries", "1", "--json", report,
    )  # fmt: skip
    assert code == 0, err
    assert "clip_bytes: 3 systems x 1 queries, top 5: 9 pairs; 2 tracks of 3 s" in out
    assert "after 1 (commit " in out
    figures = json.loads(report.read_text())
    assert figures["benchmark"] == "clip_bytes"
    assert list(figures["sides"]) == ["after"]
    assert "ratio_before_to_after" not in figures
    (result,) = figures["rounds"]
    assert (result["side"], result["judgments"], result["completed"]) == ("after", 3, True)
    assert result["submissions_refused"] == 0
    # one query: its clip is fetched for the first pair only, then comes from the cache
    rows = result["per_judgment"]
    assert [row["clip_requests"] for row in rows] == [2, 1, 1]
    assert [row["clips_from_cache"] for row in rows] == [0, 1, 1]
    assert rows[0]["bytes"] > rows[1]["bytes"] > 0
    assert result["clip_statuses"] == [200]
    # the server's byte evidence is what the client received of each pair's clips
    assert result["evidence"] == {"checked": 3, "matched": 3, "mismatches": []}
    check = result["conditional_get"]
    assert check["etag"]
    assert (check["status"], check["body_bytes"]) == (304, 0)
    assert result["latency_ms"]["first_requests"] >= 1
    assert figures["sides"]["after"]["conditional_get_statuses"] == [304]


def test_the_cache_uses_fresh_responses_and_revalidates_stale_ones() -> None:
    now = [0.0]
    cache = BrowserCache(clock=lambda: now[0])
    cache.store("/a", 200, {"cache-control": "private, max-age=3600", "etag": '"x"'})
    cache.store("/b", 200, {"cache-control": "no-store", "etag": '"y"'})
    cache.store("/c", 200, {"etag": '"z"'})  # no max-age: asked for again, with its ETag
    assert (cache.fresh("/a"), cache.fresh("/b"), cache.fresh("/c")) == (True, False, False)
    assert (cache.validator("/b"), cache.validator("/c")) == (None, '"z"')
    now[0] = 3600.0
    assert not cache.fresh("/a")
    cache.store("/a", 304, {})
    assert cache.fresh("/a")
    assert cache.validator("/a") == '"x"'
