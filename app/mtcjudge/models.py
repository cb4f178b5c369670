"""ORM models: campaigns, their collection (systems, queries, documents, results), assessors,
leases and judgments.

Conventions: singular snake_case tables, ``_at`` timestamps in UTC, a naming convention for
constraints (so Alembic batch migrations work on SQLite), and relationships that raise on
lazy load: queries live in the repositories.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    and_,
    false,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.sql.elements import ColumnElement

__all__ = [
    "Assessor",
    "AssessorPace",
    "AssessorReliability",
    "AudioBlob",
    "AudioUpload",
    "AudioUploadFile",
    "AuditEvent",
    "Base",
    "Campaign",
    "CampaignResults",
    "ClipDelivery",
    "Document",
    "Judgment",
    "Lease",
    "Organizer",
    "OrganizerSession",
    "Pair",
    "PlanEntry",
    "PlannerState",
    "Query",
    "Result",
    "System",
    "TrajectoryPoint",
    "as_utc",
    "counted_judgment",
    "utcnow",
]

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime) -> datetime:
    """A stored time as an aware UTC datetime (SQLite hands back naive ones, stored in UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


#: a new campaign's listening rule: each clip played this many seconds (or to its end)
DEFAULT_LISTEN_SECONDS = 5.0
#: a new campaign's share of hidden quality trials among the pairs handed out
DEFAULT_QUALITY_RATE = 0.1
#: the kinds of hidden quality trial (docs/web-architecture.md, "Hidden quality trials"):
#: the query against itself, a clearly dissimilar clip, a pair the assessor judged before, and
#: a pair another assessor judged (a second opinion)
TRIAL_KINDS = ("reference", "anchor", "repeat", "second")
#: what a lease or a judgment is: a pool pair, or a hidden quality trial of one kind
JUDGMENT_KINDS = ("pool", *TRIAL_KINDS)


def _ts() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), default=utcnow, nullable=False)


class Campaign(Base):
    """An evaluation campaign and the settings of its MTC loop."""

    __tablename__ = "campaign"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    description: Mapped[str] = mapped_column(Text, default="", nullable=False)
    status: Mapped[str] = mapped_column(String(16), default="draft", nullable=False)
    # the MTC loop runs on one scale; both BROAD and FINE are always collected
    scale: Mapped[str] = mapped_column(String(8), default="fine", nullable=False)
    k: Mapped[int] = mapped_column(Integer, default=5, nullable=False)
    measure: Mapped[str] = mapped_column(String(8), default="cg", nullable=False)
    estimator: Mapped[str] = mapped_column(String(16), default="ordinal", nullable=False)
    policy: Mapped[str] = mapped_column(String(16), default="confidence", nullable=False)
    target: Mapped[float] = mapped_column(Float, default=0.95, nullable=False)
    lease_minutes: Mapped[int] = mapped_column(Integer, default=10, nullable=False)
    judgments_per_pair: Mapped[int] = mapped_column(Integer, default=1, nullable=False)
    seed: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    keep_collecting: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    # the listening rule: each clip played for at least this many seconds (or to its end
    # when shorter) before a score is taken; 0 turns the rule off. Campaigns from before the
    # rule existed keep it off (server default 0).
    listen_seconds: Mapped[float] = mapped_column(
        Float, default=DEFAULT_LISTEN_SECONDS, server_default="0", nullable=False
    )
    # the share of hand-outs that are hidden quality trials (of TRIAL_KINDS);
    # 0 turns them off. Campaigns from before them keep them off (server default 0).
    quality_rate: Mapped[float] = mapped_column(
        Float, default=DEFAULT_QUALITY_RATE, server_default="0", nullable=False
    )
    # pause an assessor automatically (with a kind message) when they fail quality trials
    auto_pause: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false(), nullable=False
    )
    # how clips are cut from the collection's files (mtcjudge.clips.cut): "whole", "excerpt"
    # (excerpt_seconds from excerpt_start_fraction of the way in) or "offsets" (a start per
    # file, kept on each document)
    clip_cut: Mapped[str] = mapped_column(
        String(16), default="whole", server_default="whole", nullable=False
    )
    excerpt_seconds: Mapped[float] = mapped_column(
        Float, default=30.0, server_default="30", nullable=False
    )
    excerpt_start_fraction: Mapped[float] = mapped_column(
        Float, default=0.3, server_default="0.3", nullable=False
    )
    # grows when systems are added to the campaign: the planners rebuild their engines
    collection_version: Mapped[int] = mapped_column(
        Integer, default=0, server_default="0", nullable=False
    )
    created_at: Mapped[datetime] = _ts()
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow, nullable=False
    )


class System(Base):
    __tablename__ = "system"
    __table_args__ = (UniqueConstraint("campaign_id", "name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    team: Mapped[str | None] = mapped_column(String(200))


class Document(Base):
    """A clip of the collection (queries are clips too)."""

    __tablename__ = "document"
    __table_args__ = (UniqueConstraint("campaign_id", "external_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    external_id: Mapped[str] = mapped_column(String(200), nullable=False)
    artist: Mapped[str | None] = mapped_column(String(200))
    genre: Mapped[str | None] = mapped_column(String(200))
    # the collection's file and its MIME type (every clip is served as MP3, whatever it is)
    audio_path: Mapped[str | None] = mapped_column(Text)
    audio_type: Mapped[str | None] = mapped_column(String(64))
    # the clip's duration: the stretch of the file the campaign cuts (mtcjudge.clips.cut)
    duration_seconds: Mapped[float | None] = mapped_column(Float)
    # the import's analysis (mtcjudge.clips.analysis); empty for clips imported before it
    # (they are served whole, named by their path, size and time)
    excerpt_start: Mapped[float | None] = mapped_column(Float)
    source_seconds: Mapped[float | None] = mapped_column(Float)
    sample_rate: Mapped[int | None] = mapped_column(Integer)
    channels: Mapped[int | None] = mapped_column(Integer)
    loudness_lufs: Mapped[float | None] = mapped_column(Float)
    peaks: Mapped[bytes | None] = mapped_column(LargeBinary)
    content_sha256: Mapped[str | None] = mapped_column(String(64))
    # a query clip's reference-trial excerpt, measured like the clip (queries only)
    other_loudness_lufs: Mapped[float | None] = mapped_column(Float)
    other_peaks: Mapped[bytes | None] = mapped_column(LargeBinary)


class Query(Base):
    __tablename__ = "query"
    __table_args__ = (UniqueConstraint("campaign_id", "document_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    document_id: Mapped[int] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), nullable=False
    )
    document: Mapped[Document] = relationship(lazy="raise")


class Result(Base):
    """One line of a run: system returned document at rank for query."""

    __tablename__ = "result"
    __table_args__ = (
        UniqueConstraint("system_id", "query_id", "rank"),
        UniqueConstraint("system_id", "query_id", "document_id"),
        # "did any system retrieve this clip for this query?" (anchor trials ask it for
        # every candidate clip)
        Index("ix_result_query_document", "query_id", "document_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    system_id: Mapped[int] = mapped_column(
        ForeignKey("system.id", ondelete="CASCADE"), nullable=False
    )
    query_id: Mapped[int] = mapped_column(
        ForeignKey("query.id", ondelete="CASCADE"), nullable=False
    )
    rank: Mapped[int] = mapped_column(Integer, nullable=False)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), nullable=False
    )


class Assessor(Base):
    __tablename__ = "assessor"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    email: Mapped[str | None] = mapped_column(String(320))
    # SHA-256 of the invitation token: the token itself is only ever in the link
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    consented_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # a revoked link opens nothing; the assessor's judgments stay
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # an organizer set the assessor's judgments aside: they count nowhere (their pairs went
    # back to the pool) until brought back; the assessor is handed no more pairs
    set_aside_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    # handed no more pairs for now (by an organizer, or automatically after failed quality
    # trials); ``pause_reason`` is what the assessor is told, kindly
    paused_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    pause_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _ts()


class Pair(Base):
    """A query-candidate pair of the campaign's pool, and who holds it.

    ``judged`` and ``leased`` are kept by the statements that write judgments and leases,
    under this row's lock: they are how "at most ``judgments_per_pair`` judgments, and no
    pair held by more assessors than that" is enforced with one conditional UPDATE.
    ``changes`` counts the judgments and revisions of the pair: the planner re-reads the
    pairs whose count moved since it last looked.
    """

    __tablename__ = "pair"
    __table_args__ = (
        UniqueConstraint("campaign_id", "query_id", "document_id"),
        Index("ix_pair_campaign_judged", "campaign_id", "judged"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    query_id: Mapped[int] = mapped_column(
        ForeignKey("query.id", ondelete="CASCADE"), nullable=False
    )
    document_id: Mapped[int] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), nullable=False
    )
    # both clips have audio that exists and can be read (never true in a campaign without
    # audio); the planner re-checks the files (mtcjudge.pool.service.refresh_playable)
    playable: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    judged: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    leased: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # the latest expiry among the live leases: when it has passed, they all have
    leased_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    changes: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # drawn into the audit sample of the ``joint`` estimator (docs/method.md §8.2): which
    # pairs were drawn depends on the order judgments came in, so the planner that drew
    # them stores them and every engine built later takes them back
    audit: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false(), nullable=False
    )


class PlanEntry(Base):
    """The planner's ranked list of the pairs to hand out next (rank 0 is the best)."""

    __tablename__ = "plan_entry"
    __table_args__ = (Index("ix_plan_entry_campaign_rank", "campaign_id", "rank"),)

    pair_id: Mapped[int] = mapped_column(
        ForeignKey("pair.id", ondelete="CASCADE"), primary_key=True
    )
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False
    )
    query_id: Mapped[int] = mapped_column(Integer, nullable=False)
    rank: Mapped[int] = mapped_column(Integer, nullable=False)
    weight: Mapped[float] = mapped_column(Float, nullable=False)
    # the pair's clips as served, in seconds (None: unknown): what it costs a volunteer
    query_seconds: Mapped[float | None] = mapped_column(Float)
    candidate_seconds: Mapped[float | None] = mapped_column(Float)


class PlannerState(Base):
    """What the campaign's planner last computed, and which process plans it.

    One process at a time plans a campaign: it holds the row until ``lease_until`` and renews
    it while it lives; when it dies, another takes over once the time has passed.
    """

    __tablename__ = "planner_state"

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), primary_key=True
    )
    owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    planned_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    judged_pairs: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    pool_pairs: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    playable_pairs: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    ranking_confidence: Mapped[float | None] = mapped_column(Float)
    stop_reason: Mapped[str | None] = mapped_column(String(16))
    system_pairs: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    system_pairs_settled: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # the campaign settings the figures were computed with (target, measure, ...)
    settings_key: Mapped[str] = mapped_column(String(200), default="", nullable=False)
    error: Mapped[str | None] = mapped_column(Text)
    # the pooled listening-time model as last fitted (None: the stated defaults)
    pace_query_new: Mapped[float | None] = mapped_column(Float)
    pace_query_same: Mapped[float | None] = mapped_column(Float)
    pace_candidate: Mapped[float | None] = mapped_column(Float)
    pace_decision: Mapped[float | None] = mapped_column(Float)
    # the judgments still needed to the target, by the last projection's high end less those
    # made since (None: no projection, or the target out of reach): the judging path keeps a
    # volunteer on their query only for a pair ranked within it (docs/method.md §12)
    horizon: Mapped[int | None] = mapped_column(Integer)


class AssessorPace(Base):
    """One assessor's listening pace as the planner last fitted it (docs/method.md §11-12):
    shares of the query heard when it changes and when it does not, of the candidate, and
    the decision's seconds, from ``judgments`` of theirs."""

    __tablename__ = "assessor_pace"

    assessor_id: Mapped[int] = mapped_column(
        ForeignKey("assessor.id", ondelete="CASCADE"), primary_key=True
    )
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    query_new: Mapped[float] = mapped_column(Float, nullable=False)
    query_same: Mapped[float] = mapped_column(Float, nullable=False)
    candidate: Mapped[float] = mapped_column(Float, nullable=False)
    decision: Mapped[float] = mapped_column(Float, nullable=False)
    judgments: Mapped[int] = mapped_column(Integer, nullable=False)


#: lease states: held now (until expires_at), answered by a judgment, given back, lapsed
LEASE_STATES = ("live", "done", "released", "expired")


class Lease(Base):
    """A pair handed to an assessor until ``expires_at`` (then it returns to the pool).

    At most one live lease per assessor: a partial unique index, so two concurrent ``next``
    calls of one assessor cannot both hold a pair.
    """

    __tablename__ = "lease"
    __table_args__ = (
        Index("ix_lease_campaign_expires", "campaign_id", "expires_at"),
        Index("ix_lease_pair_state", "pair_id", "state"),
        Index(
            "uq_lease_live_assessor",
            "assessor_id",
            unique=True,
            sqlite_where=text("state = 'live'"),
            postgresql_where=text("state = 'live'"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False
    )
    # the pool pair leased; None for a hidden quality trial, which takes no pair's slot
    pair_id: Mapped[int | None] = mapped_column(ForeignKey("pair.id", ondelete="CASCADE"))
    query_id: Mapped[int] = mapped_column(
        ForeignKey("query.id", ondelete="CASCADE"), nullable=False
    )
    # the candidate clip played against the query (for a reference trial, the query's own)
    document_id: Mapped[int] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), nullable=False
    )
    assessor_id: Mapped[int] = mapped_column(
        ForeignKey("assessor.id", ondelete="CASCADE"), nullable=False, index=True
    )
    # one of JUDGMENT_KINDS: "pool", or the kind of hidden quality trial
    kind: Mapped[str] = mapped_column(
        String(16), default="pool", server_default="pool", nullable=False
    )
    # a repeat trial: the assessor's earlier judgment it repeats; a second opinion: the other
    # assessor's counted judgment of the pair it is a second opinion on
    repeat_of: Mapped[int | None] = mapped_column(Integer)
    # the server's own evidence of listening: bytes of each clip it sent for this lease
    served_query_bytes: Mapped[int] = mapped_column(
        Integer, default=0, server_default="0", nullable=False
    )
    served_candidate_bytes: Mapped[int] = mapped_column(
        Integer, default=0, server_default="0", nullable=False
    )
    state: Mapped[str] = mapped_column(String(8), default="live", nullable=False)
    leased_at: Mapped[datetime] = _ts()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    # why MTC handed out this pair, for researchers studying selection bias: the pair's place
    # in the planner's list (0 = the best; None when it came from outside the list), its
    # selection weight, and the rule: "plan" (the best free pair of the plan), "own_query"
    # (a pair of the query the assessor was on, worth at least half the best), "any_free"
    # (the plan was used up or not made yet), "audit" (a random draw of ``joint``'s audit;
    # no weight)
    selection_rank: Mapped[int | None] = mapped_column(Integer)
    selection_weight: Mapped[float | None] = mapped_column(Float)
    selection_rule: Mapped[str | None] = mapped_column(String(16))


class ClipDelivery(Base):
    """The bytes of one clip sent to one assessor, over all their leases: a browser that keeps
    a clip it fetched once (a query heard again for the next pair) has heard it from these
    bytes (mtcjudge.judging.listening). ``clip_key`` names the rendition
    (mtcjudge.clips.rendition)."""

    __tablename__ = "clip_delivery"

    assessor_id: Mapped[int] = mapped_column(
        ForeignKey("assessor.id", ondelete="CASCADE"), primary_key=True
    )
    clip_key: Mapped[str] = mapped_column(String(64), primary_key=True)
    bytes_sent: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)


class Judgment(Base):
    """One assessor's BROAD and FINE scores of a query-candidate pair.

    Imported judgments have no assessor. ``client_id`` (generated by the browser) makes a
    submission idempotent; a revision updates the row and bumps ``revision``.

    Only the rows of :func:`counted_judgment` count (in the pool, the estimates, the qrels,
    the results): hidden quality trials (``kind`` other than "pool") and judgments an
    organizer set aside are stored, exported and reported as what they are.
    """

    __tablename__ = "judgment"
    __table_args__ = (
        UniqueConstraint("campaign_id", "query_id", "document_id", "assessor_id", "kind"),
        UniqueConstraint("assessor_id", "client_id"),
        Index("ix_judgment_campaign_pair", "campaign_id", "query_id", "document_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False
    )
    query_id: Mapped[int] = mapped_column(
        ForeignKey("query.id", ondelete="CASCADE"), nullable=False
    )
    document_id: Mapped[int] = mapped_column(
        ForeignKey("document.id", ondelete="CASCADE"), nullable=False
    )
    assessor_id: Mapped[int | None] = mapped_column(
        ForeignKey("assessor.id", ondelete="SET NULL"), index=True
    )
    broad: Mapped[int | None] = mapped_column(Integer)
    fine: Mapped[float | None] = mapped_column(Float)
    client_id: Mapped[str | None] = mapped_column(String(64))
    source: Mapped[str] = mapped_column(String(16), default="assessor", nullable=False)
    query_listen_ms: Mapped[int | None] = mapped_column(Integer)
    candidate_listen_ms: Mapped[int | None] = mapped_column(Integer)
    revision: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # the lease this judgment answered (None for imported judgments)
    lease_id: Mapped[int | None] = mapped_column(ForeignKey("lease.id", ondelete="SET NULL"))
    # one of JUDGMENT_KINDS: a pool pair's judgment, or the answer to a hidden quality trial
    kind: Mapped[str] = mapped_column(
        String(16), default="pool", server_default="pool", nullable=False
    )
    # a repeat trial: the assessor's earlier judgment it repeats; a second opinion: the other
    # assessor's counted judgment of the pair (the earliest when several) it is a second
    # opinion on
    repeat_of: Mapped[int | None] = mapped_column(Integer)
    # set aside by an organizer (with all the assessor's judgments): counted nowhere
    set_aside: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false(), nullable=False
    )
    # the server's evidence, copied from the lease at submit: bytes of each clip it sent
    served_query_bytes: Mapped[int | None] = mapped_column(Integer)
    served_candidate_bytes: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = _ts()
    updated_at: Mapped[datetime] = mapped_column(
        DateTime(timezone=True), default=utcnow, onupdate=utcnow, nullable=False
    )


def counted_judgment() -> ColumnElement[bool]:
    """The judgments that count anywhere numbers are made (pool pair counts, planner,
    results, qrels, estimates): judgments of pool pairs that are not set aside."""
    return and_(Judgment.kind == "pool", Judgment.set_aside.is_(False))


class AssessorReliability(Base):
    """What the planner last concluded about an assessor's reliability (computed off the
    request path, from their quality trials, their agreement and their listening)."""

    __tablename__ = "assessor_reliability"

    assessor_id: Mapped[int] = mapped_column(
        ForeignKey("assessor.id", ondelete="CASCADE"), primary_key=True
    )
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False, index=True
    )
    computed_at: Mapped[datetime] = _ts()
    flagged: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    # JSON: the reasons of a flag (a list of sentences) and the figures behind them
    reasons: Mapped[str] = mapped_column(Text, default="[]", nullable=False)
    metrics: Mapped[str] = mapped_column(Text, default="{}", nullable=False)


class Organizer(Base):
    """A person who runs campaigns: signs in to the organizer pages with a password."""

    __tablename__ = "organizer"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    # a hash from a maintained password-hashing library (argon2); never the password
    password_hash: Mapped[str] = mapped_column(String(255), nullable=False)
    created_at: Mapped[datetime] = _ts()
    disabled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class OrganizerSession(Base):
    """A signed-in browser: the cookie carries a random token, only its hash is stored, so
    signing out (deleting the row) ends the session on every server process."""

    __tablename__ = "organizer_session"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    organizer_id: Mapped[int] = mapped_column(
        ForeignKey("organizer.id", ondelete="CASCADE"), nullable=False, index=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    # the session's CSRF token, sent back by every form and state-changing request
    csrf_token: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = _ts()
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class AuditEvent(Base):
    """Something an organizer did to a campaign (created it, opened it, invited someone...)."""

    __tablename__ = "audit_event"
    __table_args__ = (Index("ix_audit_event_campaign_at", "campaign_id", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int | None] = mapped_column(ForeignKey("campaign.id", ondelete="CASCADE"))
    organizer_id: Mapped[int | None] = mapped_column(
        ForeignKey("organizer.id", ondelete="SET NULL")
    )
    # who did it, as shown: an organizer's name, "command line" or "API token"
    actor: Mapped[str] = mapped_column(String(200), nullable=False)
    action: Mapped[str] = mapped_column(String(64), nullable=False)
    detail: Mapped[str] = mapped_column(Text, default="", nullable=False)
    created_at: Mapped[datetime] = _ts()


class CampaignResults(Base):
    """The campaign's results as its planner last computed them (a JSON document, for the
    driving measure and scale): the dashboards and the results API read this row instead of
    running the engine. ``version`` grows with every new document."""

    __tablename__ = "campaign_results"

    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    judged_pairs: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    computed_at: Mapped[datetime] = _ts()
    document: Mapped[str] = mapped_column(Text, nullable=False)


class TrajectoryPoint(Base):
    """Ranking confidence after a number of judged pairs: the campaign's confidence curve."""

    __tablename__ = "trajectory_point"
    __table_args__ = (Index("ix_trajectory_point_campaign_judged", "campaign_id", "judged_pairs"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(
        ForeignKey("campaign.id", ondelete="CASCADE"), nullable=False
    )
    judged_pairs: Mapped[int] = mapped_column(Integer, nullable=False)
    ranking_confidence: Mapped[float] = mapped_column(Float, nullable=False)
    system_pairs_settled: Mapped[int] = mapped_column(Integer, nullable=False)
    at: Mapped[datetime] = _ts()


class AudioBlob(Base):
    """A usable audio file's bytes, named by their SHA-256: stored once, never changed. A
    document's ``audio_path`` ``blob:<sha256>.<ext>`` names one (mtcjudge.clips.sources)."""

    __tablename__ = "audio_blob"

    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    data: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)
    created_at: Mapped[datetime] = _ts()


class AudioUpload(Base):
    """An organizer's upload of audio from the browser, named by a random token: files are
    added while it is ``receiving``; a campaign is made only from a ``complete`` one."""

    __tablename__ = "audio_upload"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token: Mapped[str] = mapped_column(String(43), unique=True, nullable=False)
    organizer_id: Mapped[int | None] = mapped_column(
        ForeignKey("organizer.id", ondelete="SET NULL")
    )
    actor: Mapped[str] = mapped_column(String(200), nullable=False)
    state: Mapped[str] = mapped_column(String(16), default="receiving", nullable=False)
    total_bytes: Mapped[int] = mapped_column(BigInteger, default=0, nullable=False)
    created_at: Mapped[datetime] = _ts()


class AudioUploadFile(Base):
    """One file of an upload: its name as sent (``file_name``), the document it is for
    (``name``, the stem in NFC) and its extension, and either its blob (usable) or the
    ``problem`` that makes it unusable."""

    __tablename__ = "audio_upload_file"
    __table_args__ = (
        # one usable file of each name and extension an upload: a second is a duplicate
        Index(
            "ix_audio_upload_file_usable",
            "upload_id",
            "name",
            "extension",
            unique=True,
            sqlite_where=text("sha256 IS NOT NULL"),
            postgresql_where=text("sha256 IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    upload_id: Mapped[int] = mapped_column(
        ForeignKey("audio_upload.id", ondelete="CASCADE"), nullable=False
    )
    file_name: Mapped[str] = mapped_column(Text, nullable=False)
    name: Mapped[str] = mapped_column(Text, nullable=False)
    extension: Mapped[str] = mapped_column(String(16), nullable=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str | None] = mapped_column(ForeignKey("audio_blob.sha256"))
    problem: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = _ts()
