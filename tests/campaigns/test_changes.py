"""What a change to a campaign did, and the line it writes in the audit log."""

from __future__ import annotations

from mtcjudge.campaigns.changes import AddRunsReport, ImportReport, planned_changes
from mtcjudge.models import Campaign


def test_planned_changes_describe_only_what_changes() -> None:
    campaign = Campaign(
        slug="c", name="C", status="draft", target=0.95, lease_minutes=10, description="d"
    )
    assert planned_changes(campaign, {"status": "draft", "target": 0.95}) == []
    assert planned_changes(
        campaign, {"status": "open", "lease_minutes": 20, "description": "long" * 100}
    ) == [
        ("status_changed", "draft → open"),
        ("settings_changed", "lease minutes 10 → 20, description changed"),
    ]
    long_name = planned_changes(campaign, {"name": "n" * 100})[0][1]
    assert len(long_name) < 100
    assert long_name.endswith("…'")


def test_the_reports_summarise_themselves_for_the_audit_log() -> None:
    created = ImportReport(
        slug="c", n_systems=3, n_queries=2, n_documents=9, n_results=30, n_pool_pairs=12,
        n_judgments=4, audio_found=0, audio_missing=[], audio_unreadable=[],
        n_unplayable_pairs=2,
    )  # fmt: skip
    assert created.summary() == (
        "3 systems × 2 queries, 12 pool pairs, 4 imported judgments, 2 pairs without playable audio"
    )
    bare = ImportReport(
        slug="c", n_systems=3, n_queries=2, n_documents=9, n_results=30, n_pool_pairs=12,
        n_judgments=0, audio_found=0, audio_missing=[], audio_unreadable=[],
    )  # fmt: skip
    assert bare.summary() == "3 systems × 2 queries, 12 pool pairs"
    added = AddRunsReport(
        slug="c", systems=[f"S{i}" for i in range(7)], n_results=70, n_new_documents=5,
        pool_pairs_before=12, pool_pairs=20, new_pairs_judged=1, judgments_kept=4,
        ranking_confidence=0.5, system_pairs=45, system_pairs_settled=3,
        stop_reason_before="confidence", stop_reason=None,
    )  # fmt: skip
    assert added.new_pairs == 8
    assert added.summary() == (
        "7 system(s) added (S0, S1, S2, S3, S4, ...); pool 12 → 20 pairs "
        "(1 of the new ones judged already); judging goes on"
    )
