"""The invariants in the database: lease snapshots during the run, and after it what was
lost, judged twice or leased twice (see ``bench/load.py``)."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, DateTime, Engine, bindparam, inspect, text

from bench._load.assessors import Recorder, pause
from bench._load.campaign import Campaign
from bench._load.config import LoadConfig
from bench._load.database import plain_engine


def lease_columns(conn: Connection) -> set[str]:
    return {column["name"] for column in inspect(conn).get_columns("lease")}


@dataclass(frozen=True)
class LeaseSql:
    """How to read leases in this schema: with or without ``state``, by pair ids or pair_id,
    and (where leases and judgments have a ``kind``) pool pairs apart from hidden quality
    trials, which hold no pair and count nowhere."""

    live: str
    pair_key: tuple[str, str]
    pool: str = ""  # the condition on a lease or judgment of a pool pair ("" before kinds)

    @classmethod
    def detect(cls, conn: Connection) -> LeaseSql:
        columns = lease_columns(conn)
        live = "expires_at > :now" + (" AND state = 'live'" if "state" in columns else "")
        pool = " AND kind = 'pool'" if "kind" in columns else ""
        if {"query_id", "document_id"} <= columns:
            return cls(live, ("query_id", "document_id"), pool)
        return cls(live, ("pair_id", "0"), pool)

    def snapshot_sql(self) -> str:
        first, second = self.pair_key
        return (
            f"SELECT 'pair' AS kind, {first} AS a, {second} AS b, COUNT(*) AS n FROM lease "
            f"WHERE campaign_id = :campaign AND {self.live}{self.pool} "
            f"GROUP BY {first}, {second} "
            "HAVING COUNT(*) > :per_pair "
            "UNION ALL "
            "SELECT 'assessor' AS kind, assessor_id AS a, 0 AS b, COUNT(*) AS n FROM lease "
            f"WHERE campaign_id = :campaign AND {self.live} GROUP BY assessor_id "
            "HAVING COUNT(*) > 1"
        )


def now_param() -> Any:
    return bindparam("now", type_=DateTime(timezone=True))


def lease_snapshot(
    engine: Engine, lease_sql: LeaseSql, campaign_id: int, per_pair: int
) -> list[tuple[str, int, int, int]]:
    """Pairs over-leased and assessors with two live leases, in one statement (one snapshot)."""
    statement = text(lease_sql.snapshot_sql()).bindparams(now_param())
    with engine.connect() as conn:
        rows = conn.execute(
            statement, {"campaign": campaign_id, "per_pair": per_pair, "now": datetime.now(UTC)}
        ).all()
    return [(str(kind), int(a), int(b), int(n)) for kind, a, b, n in rows]


async def sample_leases(
    engine: Engine,
    lease_sql: LeaseSql,
    campaign: Campaign,
    config: LoadConfig,
    recorder: Recorder,
    stop: asyncio.Event,
) -> None:
    while not stop.is_set():
        try:
            rows = await asyncio.to_thread(
                lease_snapshot, engine, lease_sql, campaign.id, config.judgments_per_pair
            )
        except Exception:  # the database may be down on purpose
            recorder.snapshot_failures += 1
        else:
            recorder.snapshots += 1
            recorder.snapshot_violations.update((kind, a, b) for kind, a, b, _ in rows)
        await pause(stop, 0.5)


@dataclass(frozen=True)
class _Stored:
    """What the database holds of a campaign at the end of a run (:func:`_stored`)."""

    per_pair: int
    client_ids: set[str]
    n_judgments: int
    double_judged: int
    lease_pairs: dict[int, tuple[int, int]]
    kinds: dict[str, int]


def _stored(conn: Connection, campaign_id: int, lease_sql: LeaseSql) -> _Stored:
    """The campaign's judgments per pair, its stored client ids and judgments, the pool pairs
    judged more often than asked, every lease's pair and the hand-outs by kind."""
    per_pair = int(
        conn.execute(
            text("SELECT judgments_per_pair FROM campaign WHERE id = :c"),
            {"c": campaign_id},
        ).scalar_one()
    )
    stored = {
        str(row[0])
        for row in conn.execute(
            text("SELECT client_id FROM judgment WHERE campaign_id = :c AND client_id IS NOT NULL"),
            {"c": campaign_id},
        )
    }
    n_judgments = int(
        conn.execute(
            text("SELECT COUNT(*) FROM judgment WHERE campaign_id = :c"),
            {"c": campaign_id},
        ).scalar_one()
    )
    double_judged = int(
        conn.execute(
            text(
                "SELECT COUNT(*) FROM (SELECT query_id, document_id FROM judgment "
                f"WHERE campaign_id = :c{lease_sql.pool} GROUP BY query_id, document_id "
                "HAVING COUNT(*) > :per_pair) t"
            ),
            {"c": campaign_id, "per_pair": per_pair},
        ).scalar_one()
    )
    first, second = lease_sql.pair_key
    lease_pairs = {
        int(lease_id): (int(a), int(b))
        for lease_id, a, b in conn.execute(
            text(f"SELECT id, {first}, {second} FROM lease WHERE campaign_id = :c{lease_sql.pool}"),
            {"c": campaign_id},
        )
    }
    # hand-outs by kind: pool pairs and hidden quality trials
    kinds: dict[str, int] = {}
    if lease_sql.pool:
        kinds = {
            str(kind): int(n)
            for kind, n in conn.execute(
                text("SELECT kind, COUNT(*) FROM lease WHERE campaign_id = :c GROUP BY kind"),
                {"c": campaign_id},
            )
        }
    return _Stored(per_pair, stored, n_judgments, double_judged, lease_pairs, kinds)


def check_invariants(database_url: str, campaign: Campaign, recorder: Recorder) -> dict[str, Any]:
    engine = plain_engine(database_url)
    try:
        with engine.connect() as conn:
            lease_sql = LeaseSql.detect(conn)
            db = _stored(conn, campaign.id, lease_sql)
        final = lease_snapshot(engine, lease_sql, campaign.id, db.per_pair)
    finally:
        engine.dispose()
    acked = set(recorder.acked)
    lost = sorted(acked - db.client_ids)
    snapshot = set(recorder.snapshot_violations) | {(kind, a, b) for kind, a, b, _ in final}
    client_pairs = surely_concurrent(recorder, db.lease_pairs, db.per_pair)
    violations = snapshot | {("pair", a, b) for a, b in client_pairs}
    return {
        "lost": len(lost),
        "lost_client_ids": lost[:20],
        "double_judged": db.double_judged,
        "double_leased": len(violations),
        "detail": {
            "judgments_per_pair": db.per_pair,
            "judgments_stored": db.n_judgments,
            "acknowledged": len(acked),
            "stored_not_acknowledged": len(db.client_ids - acked),
            "lease_snapshots": recorder.snapshots + 1,
            "lease_snapshot_failures": recorder.snapshot_failures,
            "over_leased_pairs_in_snapshots": sum(1 for v in snapshot if v[0] == "pair"),
            "assessors_with_two_live_leases": sum(1 for v in snapshot if v[0] == "assessor"),
            "over_leased_pairs_seen_by_clients": len(client_pairs),
            "lease_state_column": " AND state" in lease_sql.live,
            "leases_by_kind": db.kinds,
        },
    }


def surely_concurrent(
    recorder: Recorder, lease_pairs: dict[int, tuple[int, int]], per_pair: int
) -> set[tuple[int, int]]:
    """Pairs held by more than ``per_pair`` leases at one moment, by the clients' clocks.

    A lease is surely held from before its ``next`` answer arrived until its submission was
    sent (or the end of the run if never submitted); leases the server refused at submission
    are left out, their end being unknown.
    """
    end = recorder.now()
    intervals: dict[tuple[int, int], list[tuple[float, int]]] = defaultdict(list)
    for lease in recorder.leases:
        pair = lease_pairs.get(lease.pair_lease_id)
        released = lease.released if lease.released is not None else end
        if pair is None or lease.refused or released <= lease.received:
            continue
        intervals[pair] += [(lease.received, 1), (released, -1)]
    over = set()
    for pair, events in intervals.items():
        held = 0
        for _moment, change in sorted(events):  # at a tie, a release (-1) comes first
            held += change
            if held > per_pair:
                over.add(pair)
                break
    return over
