"""What a new campaign would be, before anything is saved: the validation preview.

The organizer's upload (run files, metadata, judgments, an offsets file, the name of an audio
folder on the server) is read with the same readers as the command line and the API, then
summarised: systems, queries, pool size at ``k``, how much the systems overlap, how the clips
are cut, clips found and missing, every problem by file and line, and the judgments a campaign
would need to reach its target, from a short simulated campaign
(:func:`mtcjudge.mtc.projection.project`) on the engine the campaign would run, with the
volunteers' hours they would take by the listening-time defaults
(:mod:`mtcjudge.campaign_engine.listening`; nothing measured yet). Nothing here touches the
database.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from mtcjudge.campaign_engine.document import TargetProjection
from mtcjudge.campaign_engine.listening import (
    LEVEL,
    ListeningDefaults,
    ListeningInput,
    PoolHoursInfo,
    listening_facts,
    listening_section,
)
from mtcjudge.campaign_engine.repository import PoolClips
from mtcjudge.campaigns.spec import CampaignSpec, offsets_problem
from mtcjudge.clips.audio import scan_audio
from mtcjudge.clips.cut import Cut
from mtcjudge.ingest.formats import (
    SCORE_CONFLICTS_SHOWN,
    ClipOffsets,
    InputError,
    Judgments,
    Metadata,
    Runs,
    read_clip_offsets,
    read_judgments,
    read_metadata,
    read_runs,
    score_order_warnings,
)
from mtcjudge.ingest.loader import LoadedCollection, load_collection
from mtcjudge.mtc.factory import engine_for_settings
from mtcjudge.mtc.listening_time import Defaults
from mtcjudge.mtc.projection import default_resolution, project
from mtcjudge.mtc.scales import get_scale

__all__ = [
    "AudioSummary",
    "HoursBasis",
    "ParsedUpload",
    "Preview",
    "Problem",
    "ProjectedTarget",
    "ProjectionSummary",
    "SystemOverlap",
    "Upload",
    "UploadedFile",
    "build_preview",
    "check_audio_dir",
    "read_upload",
    "score_order_problems",
]

_Parsed = TypeVar("_Parsed")

#: targets whose cost is shown beside the campaign's own
OTHER_TARGETS = (0.90, 0.95, 0.99)
#: time given to the simulated campaign (at least two runs are always done)
PROJECTION_SECONDS = 2.0
#: simulated runs asked for
PROJECTION_RUNS = 16
#: retrieved results above which no simulation is attempted in a request: the two runs
#: project() always makes take about 3.5 s there on one core (50,000 results, calibrated)
PROJECTION_MAX_RESULTS = 50_000
#: above this many results the simulated batches grow by at least COARSE_RESOLUTION of the
#: run's judgments (fewer engine steps; the crossing is still interpolated in its batch)
COARSE_ABOVE = 10_000
COARSE_RESOLUTION = 0.2
#: system pairs shown in the overlap table (more systems: the summary only)
OVERLAP_MAX_SYSTEMS = 25
#: missing clips named in the preview (the count is always given)
MISSING_SHOWN = 20
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class UploadedFile:
    """A file as the browser sent it: its name on the organizer's machine and its text."""

    name: str
    text: str


@dataclass(frozen=True)
class Upload:
    """The files of a new campaign. ``runs`` holds one file or several (one per system, as
    TREC runs often come); all must be in the same format. ``order_by``: how the lists of
    TREC runs are ordered (``rank`` or ``score``, :func:`mtcjudge.ingest.formats.read_runs`).
    ``clip_offsets``: where each document's excerpt starts (the cut ``offsets``)."""

    runs: Sequence[UploadedFile]
    metadata: UploadedFile | None = None
    judgments_fine: UploadedFile | None = None
    judgments_broad: UploadedFile | None = None
    order_by: str = "rank"
    clip_offsets: UploadedFile | None = None


@dataclass(frozen=True)
class Problem:
    """Something that stops the campaign from being created (or, among a preview's
    ``warnings``, that changes what its numbers mean), where it is.

    ``input`` names the form field (runs, metadata, judgments_fine, judgments_broad,
    clip_offsets, audio_dir or a setting), ``file`` the uploaded file, ``line`` its 1-based line."""

    input: str
    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file or self.input
        if self.line is not None:
            where += f", line {self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ParsedUpload:
    """The upload read, or the problems found reading it (``clip_offsets`` named by the
    uploaded file's name)."""

    runs: Runs | None
    metadata: Metadata | None
    judgments_fine: Judgments | None
    judgments_broad: Judgments | None
    problems: list[Problem]
    order_by: str = "rank"
    clip_offsets: ClipOffsets | None = None


@dataclass(frozen=True)
class SystemOverlap:
    """Two systems' shared pool pairs: ``shared`` of the ``union`` both retrieve at ``k``."""

    a: str
    b: str
    shared: int
    union: int

    @property
    def jaccard(self) -> float:
        return self.shared / self.union if self.union else 0.0


@dataclass(frozen=True)
class AudioSummary:
    """The clips of the audio folder for the documents that need one."""

    directory: str
    needed: int
    found: int
    missing: int
    missing_examples: list[str]
    unreadable: list[tuple[str, str]]
    unplayable_pairs: int


@dataclass(frozen=True)
class ProjectedTarget:
    """Judged pairs needed to reach ``target`` (median and 10th-90th percentile), and the
    volunteers' hours they would take (median, and an interval at the basis' level; None
    when not reached within the pool, ``hours_high`` when the 90th percentile is not)."""

    target: float
    reached: bool
    judgments_median: int | None
    judgments_low: int | None
    judgments_high: int | None
    hours: float | None = None
    hours_low: float | None = None
    hours_high: float | None = None


@dataclass(frozen=True)
class HoursBasis:
    """What the preview's hours rest on: nothing is measured yet, so the listening-time
    defaults (docs/method.md §11) hold: the whole query when it changes (``query_change_share``
    of the judgments), the whole candidate, a decision of ``defaults.decision_seconds``;
    clips of ``pool.query_seconds`` and ``pool.candidate_seconds`` on average, from
    ``durations``: ``"audio"`` (the clips' durations, as the campaign would cut them; those
    unread count as ``defaults.clip_seconds``), ``"excerpt"`` (the excerpt the campaign
    cuts) or ``"default"`` (30 s). Each judged pair is judged ``judgments_per_pair`` times,
    and a share ``quality_rate`` of the hand-outs are hidden trials; intervals at ``level``;
    ``pool``: judging every pool pair once."""

    durations: str
    defaults: ListeningDefaults
    query_change_share: float
    judgments_per_pair: int
    quality_rate: float
    level: float
    pool: PoolHoursInfo


@dataclass(frozen=True)
class ProjectionSummary:
    """Judgments a campaign would need, from a short simulated campaign, and the hours."""

    target: ProjectedTarget
    others: list[ProjectedTarget]
    runs: int
    seconds: float
    method: str
    hours: HoursBasis | None = None


@dataclass(frozen=True)
class Preview:
    """What the campaign would hold. ``problems`` empty: it can be created as it is.
    ``warnings`` do not stop it (the run lists whose scores contradict their ranks);
    ``order_by`` is how the lists of TREC runs are ordered; ``clip_cut`` how the clips would
    be cut (whole, excerpt or offsets), ``cut`` the same in words, and ``clip_offsets`` how
    many documents have a start of their own (None: no offsets)."""

    problems: list[Problem]
    systems: list[str] = field(default_factory=list)
    n_queries: int = 0
    n_documents: int = 0
    k: int = 0
    n_results: int = 0
    pool_pairs: int = 0
    n_filtered: int = 0
    overlap_ratio: float = 1.0
    pairs_by_systems: list[int] = field(default_factory=list)
    overlap: list[SystemOverlap] = field(default_factory=list)
    judgments_given: int = 0
    judgments_in_pool: int = 0
    audio: AudioSummary | None = None
    projection: ProjectionSummary | None = None
    projection_note: str = ""
    notes: list[str] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    order_by: str = "rank"
    clip_cut: str = ""
    cut: str = ""
    clip_offsets: int | None = None


#: how the API (and the forms, which send it) ask for trec_eval's order
ORDER_BY_SCORE_HINT = (
    "Ordering each list by score (the form's \"Order of each list\", the API's order_by "
    '"score") gives those tools\' order.'
)


def score_order_problems(runs: Runs) -> list[Problem]:
    """The run lists whose scores contradict their ranks, as warnings of the ``runs`` input:
    what it means first, then the first lists by file and line, then how many more."""
    lines = score_order_warnings(
        runs.score_conflicts,
        n_lists=runs.n_lists,
        order_by=runs.order_by,
        hint=ORDER_BY_SCORE_HINT,
        shown=SCORE_CONFLICTS_SHOWN,
    )
    if not lines:
        return []
    shown = runs.score_conflicts[:SCORE_CONFLICTS_SHOWN]
    summary = lines[0][:1].upper() + lines[0][1:]  # a sentence of its own here
    warnings = [Problem("runs", summary, field="score")]
    warnings += [Problem("runs", c.message, c.path, c.line, "score") for c in shown]
    warnings += [Problem("runs", line, field="score") for line in lines[1 + len(shown) :]]
    return warnings


def read_upload(upload: Upload) -> ParsedUpload:
    """Read every file, collecting each file's first problem (file, line, field) rather
    than stopping at the first file that has one."""
    problems: list[Problem] = []
    with tempfile.TemporaryDirectory(prefix="mtcjudge-preview-") as directory:
        shown: dict[str, str] = {}  # temporary path -> the uploaded name

        def store(folder: str, index: int, uploaded: UploadedFile) -> str:
            os.makedirs(folder, exist_ok=True)
            safe = _SAFE_NAME.sub("_", os.path.basename(uploaded.name)).lstrip(".") or "file"
            # the readers go through a folder's files in name order: keep the upload's
            path = os.path.join(folder, f"{index:04d}-{safe}")
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(uploaded.text)
            shown[path] = uploaded.name or safe
            return path

        def read(kind: str, path: str, reader: Callable[[str], _Parsed]) -> _Parsed | None:
            try:
                return reader(path)
            except InputError as exc:
                message = exc.message
                for temporary, name in shown.items():
                    message = message.replace(temporary, name)
                message = message.replace(directory + os.sep, "")
                problems.append(
                    Problem(kind, message, shown.get(exc.path, kind), exc.line, exc.field)
                )
                return None

        runs = None
        if not upload.runs:
            problems.append(Problem("runs", "choose at least one run file"))
        else:
            folder = os.path.join(directory, "runs")
            for i, uploaded in enumerate(upload.runs):
                store(folder, i, uploaded)
            runs = read("runs", folder, lambda path: read_runs(path, order_by=upload.order_by))
            if runs is not None:  # the lists by the uploaded files' names
                conflicts = tuple(
                    replace(c, path=shown.get(c.path, c.path)) for c in runs.score_conflicts
                )
                runs = replace(runs, score_conflicts=conflicts)

        def one(
            kind: str, uploaded: UploadedFile | None, reader: Callable[[str], _Parsed]
        ) -> _Parsed | None:
            if uploaded is None:
                return None
            return read(kind, store(os.path.join(directory, kind), 0, uploaded), reader)

        metadata = one("metadata", upload.metadata, read_metadata)
        fine = one("judgments_fine", upload.judgments_fine, lambda p: read_judgments(p, "fine"))
        broad = one("judgments_broad", upload.judgments_broad, lambda p: read_judgments(p, "broad"))
        offsets = one("clip_offsets", upload.clip_offsets, read_clip_offsets)
        if offsets is not None and upload.clip_offsets is not None:  # named as uploaded
            offsets = replace(offsets, path=upload.clip_offsets.name or "clip_offsets")
    return ParsedUpload(runs, metadata, fine, broad, problems, upload.order_by, offsets)


def _offsets_problem(exc: InputError) -> Problem:
    """An entry of the offsets file the runs or the files contradict, by file and line."""
    return Problem("clip_offsets", exc.message, exc.path, exc.line, exc.field)


def check_audio_dir(audio_dir: str | None) -> tuple[Path | None, Problem | None]:
    """The audio folder on the server: it must exist, be a folder and be readable."""
    if audio_dir is None or not audio_dir.strip():
        return None, None
    path = Path(audio_dir.strip())
    problem: str | None = None
    if not path.is_absolute():
        problem = "give the folder's full path on the server (starting with /)"
    elif not path.exists():
        problem = f"{path}: no such folder on the server"
    elif not path.is_dir():
        problem = f"{path}: not a folder"
    elif not os.access(path, os.R_OK | os.X_OK):
        problem = f"{path}: the server may not read this folder"
    if problem is not None:
        return None, Problem("audio_dir", problem, field="audio_dir")
    return path, None


def _unplayable_note(unplayable: int, pool: int, *, folder: bool = True) -> str:
    """What pairs that cannot be played mean for the campaign."""
    why = "no audio folder is given" if not folder else "a clip is missing or unreadable"
    if unplayable >= pool:
        return (
            f"none of the {pool:,} pool pairs can be played ({why}): assessors would be given "
            "nothing to judge, and opening the campaign asks you to confirm"
        )
    return (
        f"{unplayable:,} of the {pool:,} pool pairs cannot be played ({why}): they are never "
        "handed out, the ranking is computed without their judgments, and opening the "
        "campaign asks you to confirm"
    )


def build_preview(
    spec: CampaignSpec,
    parsed: ParsedUpload,
    audio_dir: str | None,
    *,
    projection_seconds: float = PROJECTION_SECONDS,
    uploaded: Mapping[str, str | None] | None = None,
) -> Preview:
    """Summarise what the campaign of ``spec`` would hold, and project its cost (clips of
    ``audio_dir``, or ``uploaded``: an upload's names, each to its problem or None)."""
    problems = list(parsed.problems)
    offsets = parsed.clip_offsets
    # an offsets file that could not be read is a problem already: nothing more about it
    offsets_read = not any(p.input == "clip_offsets" for p in problems)
    if offsets_read and (
        mismatch := offsets_problem(spec.clip_cut, None if offsets is None else len(offsets))
    ):
        problems.append(Problem("clip_offsets", mismatch, field="clip_offsets"))
        offsets_read = False
    audio_path, audio_problem = check_audio_dir(None if uploaded is not None else audio_dir)
    if audio_problem is not None:
        problems.append(audio_problem)
    # how the clips are cut, said by every preview
    cut_fields: dict[str, Any] = {
        "clip_cut": spec.clip_cut,
        "cut": spec.cut.text(),
        "clip_offsets": None if offsets is None else len(offsets),
    }
    runs = parsed.runs
    if runs is None:
        return Preview(problems=problems, order_by=parsed.order_by, **cut_fields)
    warnings = score_order_problems(runs)
    on_scale = parsed.judgments_broad if spec.scale == "broad" else parsed.judgments_fine
    try:
        loaded = load_collection(runs, spec.k, parsed.metadata, on_scale)
    except ValueError as exc:  # e.g. a single system: nothing to rank
        problems.append(Problem("runs", str(exc)))
        return Preview(
            problems=problems,
            systems=runs.systems,
            n_queries=len(runs.queries),
            warnings=warnings,
            order_by=runs.order_by,
            **cut_fields,
        )
    collection = loaded.collection
    given = {
        pair
        for judgments in (parsed.judgments_fine, parsed.judgments_broad)
        if judgments is not None
        for pair in judgments.mean()
    }
    judged = int(np.count_nonzero(~np.isnan(loaded.judged_values)))
    notes: list[str] = []
    if given and on_scale is None:
        notes.append(
            f"no {spec.scale.upper()} judgments were given: the imported ones are stored but "
            f"the campaign runs on the {spec.scale.upper()} scale and starts from none"
        )

    with_audio = uploaded is not None or audio_path is not None
    durations: dict[str, float] = {}
    found = None
    if with_audio:
        found, durations = _audio_summary(audio_path, runs, loaded, uploaded)
    if offsets is not None and offsets_read:
        try:
            offsets.check_documents(_clip_documents(runs))
            offsets.check_ends(durations)  # the files whose headers were read
        except InputError as exc:
            problems.append(_offsets_problem(exc))
    audio = None
    if isinstance(found, Problem):
        problems.append(found)
    elif found is not None:
        audio = found
        if audio.unplayable_pairs:
            notes.append(_unplayable_note(audio.unplayable_pairs, collection.n_pairs))
    elif audio_problem is None:
        notes.append(_unplayable_note(collection.n_pairs, collection.n_pairs, folder=False))

    projection, projection_note = _projection(spec, loaded, projection_seconds)
    if projection is not None:
        projection = _with_hours(projection, spec, loaded, durations, offsets)
    by_systems = np.bincount(collection.n_retrieving, minlength=collection.n_systems + 1)
    return Preview(
        problems=problems,
        systems=loaded.systems,
        n_queries=collection.n_queries,
        n_documents=len(loaded.docs),
        k=spec.k,
        n_results=collection.n_results,
        pool_pairs=collection.n_pairs,
        n_filtered=loaded.n_filtered,
        overlap_ratio=collection.ov,
        pairs_by_systems=[int(n) for n in by_systems[1:]],
        overlap=_overlap(loaded.systems, collection.entry_system, collection.entry_pair),
        judgments_given=len(given),
        judgments_in_pool=judged,
        audio=audio,
        projection=projection,
        projection_note=projection_note,
        notes=notes,
        warnings=warnings,
        order_by=runs.order_by,
        **cut_fields,
    )


def _clip_documents(runs: Runs) -> set[str]:
    """The documents and queries whose clips a campaign of ``runs`` cuts."""
    return {*runs.documents, *runs.queries}


def _audio_summary(
    audio_path: Path | None,
    runs: Runs,
    loaded: LoadedCollection,
    uploaded: Mapping[str, str | None] | None = None,
) -> tuple[AudioSummary | Problem, dict[str, float]]:
    """The clips of the runs' documents and queries found in ``audio_path`` (or
    ``uploaded``), and the pool pairs they leave unplayable (a problem when the folder
    cannot be read); with the duration of each file whose header says it (none for an
    upload, whose files are read when the campaign is created)."""
    if uploaded is not None or audio_path is None:
        return _uploaded_summary(uploaded or {}, runs, loaded), {}
    needed = sorted(_clip_documents(runs))
    try:
        scan = scan_audio(audio_path, needed)
    except (ValueError, OSError) as exc:
        return Problem("audio_dir", str(exc), field="audio_dir"), {}
    durations = {
        doc: audio.duration_seconds
        for doc, audio in scan.found.items()
        if audio.duration_seconds is not None
    }
    summary = AudioSummary(
        directory=str(audio_path),
        needed=len(needed),
        found=len(scan.found),
        missing=len(scan.missing),
        missing_examples=scan.missing[:MISSING_SHOWN],
        unreadable=scan.unreadable[:MISSING_SHOWN],
        unplayable_pairs=_unplayable(loaded, set(scan.found)),
    )
    return summary, durations


def _unplayable(loaded: LoadedCollection, playable: set[str]) -> int:
    """Pool pairs of which a clip is not among ``playable``."""
    collection = loaded.collection
    return sum(
        1
        for p in range(collection.n_pairs)
        if loaded.queries[int(collection.pair_query[p])] not in playable
        or loaded.docs[int(collection.pair_doc[p])] not in playable
    )


def _uploaded_summary(
    uploaded: Mapping[str, str | None], runs: Runs, loaded: LoadedCollection
) -> AudioSummary:
    """The clips of the runs' documents and queries in an upload (by their names in NFC)."""
    needed = sorted(_clip_documents(runs))
    found: set[str] = set()
    missing: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for doc in needed:
        name = unicodedata.normalize("NFC", doc)
        if name not in uploaded:
            missing.append(doc)
        elif (problem := uploaded[name]) is None:
            found.add(doc)
        else:
            unreadable.append((doc, problem))
    return AudioSummary(
        directory="the uploaded audio",
        needed=len(needed),
        found=len(found),
        missing=len(missing),
        missing_examples=missing[:MISSING_SHOWN],
        unreadable=unreadable[:MISSING_SHOWN],
        unplayable_pairs=_unplayable(loaded, found),
    )


def _overlap(
    systems: list[str], entry_system: NDArray[np.intp], entry_pair: NDArray[np.intp]
) -> list[SystemOverlap]:
    """Shared pool pairs of every two systems (none past :data:`OVERLAP_MAX_SYSTEMS`)."""
    n = len(systems)
    if n < 2 or n > OVERLAP_MAX_SYSTEMS:
        return []
    n_pairs = int(entry_pair.max()) + 1 if entry_pair.size else 0
    retrieved = np.zeros((n, n_pairs), dtype=np.int64)
    retrieved[entry_system, entry_pair] = 1
    shared = retrieved @ retrieved.T
    sizes = np.diag(shared)
    return [
        SystemOverlap(
            systems[a], systems[b], int(shared[a, b]), int(sizes[a] + sizes[b] - shared[a, b])
        )
        for a in range(n)
        for b in range(a + 1, n)
    ]


def _projection(
    spec: CampaignSpec, loaded: LoadedCollection, seconds: float
) -> tuple[ProjectionSummary | None, str]:
    collection = loaded.collection
    if collection.n_systems < 2:
        return None, "a ranking needs at least two systems: nothing to project"
    if collection.n_results > PROJECTION_MAX_RESULTS:
        return None, (
            f"{collection.n_results:,} retrieved results are too many to simulate while you "
            "wait; the dashboard projects the cost once the campaign runs"
        )
    started = time.perf_counter()
    try:
        engine, _model = engine_for_settings(
            collection,
            loaded.metadata,
            get_scale(spec.scale),
            spec.estimator,
            measure=spec.measure,
            policy=spec.policy,
            target=spec.target,
            seed=spec.seed,
            judged_values=loaded.judged_values,
        )
        budget = max(1e-3, seconds - (time.perf_counter() - started))
        targets = sorted({spec.target, *OTHER_TARGETS})
        resolution = default_resolution(engine)
        if collection.n_results > COARSE_ABOVE:
            resolution = max(resolution, COARSE_RESOLUTION)
        result = project(
            engine,
            targets,
            runs=PROJECTION_RUNS,
            seed=spec.seed,
            max_seconds=budget,
            resolution=resolution,
        )
    except ValueError as exc:
        return None, f"the projection could not be made: {exc}"
    shown = {
        t.target: ProjectedTarget(
            t.target, t.reached, t.judgments_median, t.judgments_low, t.judgments_high
        )
        for t in result.targets
    }
    summary = ProjectionSummary(
        target=shown[spec.target],
        others=[shown[t] for t in targets if t != spec.target],
        runs=result.runs,
        seconds=time.perf_counter() - started,
        method=result.method,
    )
    return summary, ""


def _clip_seconds(source_seconds: float, cut: Cut, offset: float | None) -> float | None:
    """The clip the campaign would cut from a file of ``source_seconds`` (from ``offset``
    with the cut ``offsets``); None when it cannot (a whole file longer than the campaign
    allows)."""
    try:
        return cut.window(source_seconds, offset).seconds
    except ValueError:
        return None


def _pool_clips(
    loaded: LoadedCollection,
    durations: Mapping[str, float],
    cut: Cut,
    offsets: Mapping[str, float] | None = None,
) -> PoolClips:
    """Counts and durations of the pool's clips, as the campaign would cut them."""
    c = loaded.collection
    starts = offsets or {}
    clip = {
        doc: seconds
        for doc, source in durations.items()
        if source > 0 and (seconds := _clip_seconds(source, cut, starts.get(doc))) is not None
    }
    queries = [loaded.queries[q] for q in np.unique(c.pair_query).tolist()]
    candidates = [loaded.docs[d] for d in c.pair_doc.tolist()]
    timed_queries = [clip[q] for q in queries if q in clip]
    timed_candidates = [clip[d] for d in candidates if d in clip]
    return PoolClips(
        queries=len(queries),
        queries_timed=len(timed_queries),
        query_seconds=float(sum(timed_queries)),
        pairs=len(candidates),
        pairs_timed=len(timed_candidates),
        candidate_seconds=float(sum(timed_candidates)),
    )


def _with_hours(
    summary: ProjectionSummary,
    spec: CampaignSpec,
    loaded: LoadedCollection,
    durations: Mapping[str, float],
    offsets: Mapping[str, float] | None = None,
) -> ProjectionSummary:
    """The projection with the volunteers' hours of each target, by the listening-time
    defaults (nothing measured yet) and the clips' durations when the audio was read."""
    clips = _pool_clips(loaded, durations, spec.cut, offsets)
    whole = spec.clip_cut == "whole"
    clip = Defaults().clip_seconds if whole else spec.excerpt_seconds
    if clips.queries_timed or clips.pairs_timed:
        source = "audio"
    else:
        source = "default" if whole else "excerpt"
    defaults = Defaults(clip_seconds=clip, listen_rule_seconds=spec.listen_seconds)
    facts = listening_facts(
        ListeningInput([], clips, defaults, spec.judgments_per_pair, spec.quality_rate)
    )
    targets = [summary.target, *summary.others]
    section = listening_section(
        facts,
        [
            TargetProjection(
                t.target, t.reached, t.judgments_median, t.judgments_low, t.judgments_high
            )
            for t in targets
        ],
    )
    timed = [
        replace(t, hours=h.hours, hours_low=h.low, hours_high=h.high)
        for t, h in zip(targets, section.targets, strict=True)
    ]
    basis = HoursBasis(
        durations=source,
        defaults=section.defaults,
        query_change_share=section.query_changes.share,
        judgments_per_pair=section.judgments_per_pair,
        quality_rate=section.quality_rate,
        level=LEVEL,
        pool=section.pool,
    )
    return replace(summary, target=timed[0], others=timed[1:], hours=basis)
