"""The settings of a campaign, checked: what a new campaign is created with, and what its
changeable settings are checked against (:class:`CampaignSpec`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mtcjudge.campaigns.limits import FLOAT_SETTINGS, INT_SETTINGS
from mtcjudge.clips.cut import CUT_MODES, Cut
from mtcjudge.models import DEFAULT_LISTEN_SECONDS, DEFAULT_QUALITY_RATE
from mtcjudge.mtc.factory import DEFAULT_ESTIMATOR, ESTIMATOR_CHOICES
from mtcjudge.mtc.measures import MEASURES
from mtcjudge.mtc.scales import SCALES
from mtcjudge.mtc.selection import POLICIES
from mtcjudge.validation import NAME_MAX, check_text

__all__ = ["SLUG_MAX", "SLUG_PATTERN", "STATUSES", "CampaignSpec", "offsets_problem"]

STATUSES = ("draft", "open", "closed")
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
SLUG_MAX = 64
_SLUG = re.compile(SLUG_PATTERN)


@dataclass(frozen=True)
class CampaignSpec:
    """The settings of a new campaign, checked on construction (``ValueError``).

    ``estimator`` is the relevance model of the MTC loop (``--model`` on the command line);
    ``scale`` is the scale the loop runs on, both BROAD and FINE being collected.
    """

    name: str
    slug: str | None = None
    description: str = ""
    scale: str = "fine"
    k: int = 5
    measure: str = "cg"
    estimator: str = DEFAULT_ESTIMATOR
    policy: str = "confidence"
    target: float = 0.95
    lease_minutes: int = 10
    judgments_per_pair: int = 1
    seed: int = 0
    keep_collecting: bool = False
    status: str = "draft"
    listen_seconds: float = DEFAULT_LISTEN_SECONDS
    quality_rate: float = DEFAULT_QUALITY_RATE
    # pause an assessor automatically when they fail the hidden quality trials
    auto_pause: bool = False
    # how clips are cut from the collection's files (mtcjudge.clips.cut): by default 30 s
    # from 30 % of the way in, as MIREX did (files no longer than that are played whole)
    clip_cut: str = "excerpt"
    excerpt_seconds: float = 30.0
    excerpt_start_fraction: float = 0.3

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("name must be a non-empty text")
        if len(self.name) > NAME_MAX:
            raise ValueError(f"name must be at most {NAME_MAX} characters, found {len(self.name)}")
        if self.slug is not None and (
            not isinstance(self.slug, str)
            or len(self.slug) > SLUG_MAX
            or not _SLUG.fullmatch(self.slug)
        ):
            raise ValueError(
                f"slug must be lowercase letters, digits and single hyphens, at most {SLUG_MAX}"
                f" characters (e.g. 'mirex-2011'), found {self.slug!r}"
            )
        if not isinstance(self.description, str):
            raise ValueError("description must be a text")
        for name in ("name", "slug", "description"):
            if isinstance(getattr(self, name), str):
                check_text(name, getattr(self, name))
        _check_choice("scale", self.scale, tuple(SCALES))
        _check_choice("measure", self.measure, MEASURES)
        _check_choice("estimator", self.estimator, ESTIMATOR_CHOICES)
        _check_choice("policy", self.policy, POLICIES)
        _check_choice("status", self.status, STATUSES)
        for name, (minimum, maximum) in INT_SETTINGS.items():
            _check_int(name, getattr(self, name), minimum=minimum, maximum=maximum)
        for name in ("keep_collecting", "auto_pause"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, found {getattr(self, name)!r}")
        for name, (low, high) in FLOAT_SETTINGS.items():
            object.__setattr__(self, name, _check_float(name, getattr(self, name), low, high))
        target = self.target
        if (
            isinstance(target, bool)
            or not isinstance(target, int | float)
            or not 0.5 <= target <= 1.0
        ):
            raise ValueError(f"target must be a confidence between 0.5 and 1, found {target!r}")
        object.__setattr__(self, "target", float(target))
        self._check_cut()

    def _check_cut(self) -> None:
        _check_choice("clip_cut", self.clip_cut, CUT_MODES)
        for name in ("excerpt_seconds", "excerpt_start_fraction"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, found {value!r}")
            object.__setattr__(self, name, float(value))
        _ = self.cut  # checks the numbers (ValueError)

    @property
    def cut(self) -> Cut:
        """How this campaign cuts its clips."""
        return Cut(self.clip_cut, self.excerpt_seconds, self.excerpt_start_fraction)


def offsets_problem(clip_cut: str, n_offsets: int | None) -> str | None:
    """What is wrong with the clip offsets given (``n_offsets`` entries, None: none given) to
    a campaign cut by ``clip_cut``: offsets go with ``offsets`` and with no other cut, so that
    neither is silently ignored (None when nothing is)."""
    if clip_cut == "offsets" and not n_offsets:
        return (
            "clip_cut is offsets, but no start was given: give each document's start (the "
            "page's offsets file, the API's clip_offsets, the command line's --clip-offsets "
            "FILE: doc<TAB>start_seconds), or cut the clips another way"
        )
    if clip_cut != "offsets" and n_offsets is not None:
        return (
            f"the starts are used only when clips are cut by offsets, not with clip_cut "
            f"{clip_cut}: choose offsets (clip_cut offsets), or leave the offsets out"
        )
    return None


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}; found {value!r}")


def _check_float(name: str, value: object, minimum: float, maximum: float) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not minimum <= value <= maximum
    ):
        raise ValueError(
            f"{name} must be a number from {minimum:g} to {maximum:g} (0 turns it off), "
            f"found {value!r}"
        )
    return float(value)


def _check_int(name: str, value: object, *, minimum: int, maximum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer from {minimum} to {maximum}, found {value!r}")
