"""Campaigns for the report: the exports' synthetic campaign (5 systems, 6 queries, k = 5,
imported judgments of a share of the pool), plus two assessors who judged the same pairs."""

from __future__ import annotations

import pytest

from tests.factories import Assessed, Judged, add_assessors, make_campaign


@pytest.fixture
def complete_campaign(db_session) -> Judged:
    return make_campaign(db_session)


@pytest.fixture
def assessed_campaign(db_session) -> Assessed:
    """Partly judged (imports of 40 % of the pool) with two assessors on the same pairs."""
    return add_assessors(db_session, make_campaign(db_session, share=0.4))
