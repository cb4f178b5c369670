"""The exports' synthetic campaign (:func:`tests.factories.make_campaign`), fully or partly
judged."""

from __future__ import annotations

import pytest

from tests.factories import Judged, make_campaign


@pytest.fixture
def judged_campaign(db_session) -> Judged:
    return make_campaign(db_session)
