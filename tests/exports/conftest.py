"""A small synthetic campaign (5 systems, 6 queries, k = 5), fully or partly judged."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mtcjudge.campaigns.service import CampaignSpec, create_campaign
from mtcjudge.ingest.formats import Judgments, Metadata, Runs
from mtcjudge.models import Campaign
from mtcjudge.mtc.synthetic import SyntheticCollection, generate


@dataclass
class Judged:
    campaign: Campaign
    synthetic: SyntheticCollection
    judged: set[tuple[str, str]]


def make_campaign(
    session, *, share: float = 1.0, seed: int = 5, estimator: str = "uniform", **settings
) -> Judged:
    """The campaign, with imported FINE and BROAD judgments of the first ``share`` of the
    pool pairs (in sorted order)."""
    synthetic = generate(5, 6, 5, n_genres=3, docs_per_genre=30, n_artists=15, seed=seed)
    pairs = sorted(synthetic.fine)
    judged = set(pairs[: round(share * len(pairs))])
    fine = Judgments({p: [float(synthetic.fine[p])] for p in judged}, "tsv") if judged else None
    broad = Judgments({p: [float(synthetic.broad[p])] for p in judged}, "tsv") if judged else None
    campaign, _ = create_campaign(
        session,
        CampaignSpec(name="Exported", status="open", estimator=estimator, **settings),
        Runs(synthetic.runs, "tsv"),
        Metadata(dict(synthetic.artist), dict(synthetic.genre)),
        judgments_fine=fine,
        judgments_broad=broad,
    )
    session.flush()
    return Judged(campaign, synthetic, judged)


@pytest.fixture
def judged_campaign(db_session) -> Judged:
    return make_campaign(db_session)


@pytest.fixture
def partial_campaign(db_session) -> Judged:
    return make_campaign(db_session, share=0.4)
