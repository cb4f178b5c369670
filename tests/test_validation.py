"""Texts that cannot be stored, and names made safe to print on a terminal."""

from __future__ import annotations

import pytest

from mtcjudge.validation import check_text, printable, text_problem


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("fine text, é, 🎵, \t and \x1b are storable", None),
        ("a\x00b", "contains a NUL character (U+0000)"),
        ("one\ntwo\nth\x00ree", "contains a NUL character (U+0000) on line 3"),
        ("x\udc80", "contains an unpaired surrogate (U+DC80), which is not text"),
    ],
)
def test_text_problem(text: str, problem: str | None) -> None:
    assert text_problem(text) == problem


def test_check_text_names_the_field() -> None:
    check_text("name", "Ada")
    with pytest.raises(ValueError, match=r"^team contains a NUL character \(U\+0000\)$"):
        check_text("team", "\x00")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Plain name", "Plain name"),
        ("Émilie 🎵 Zoë", "Émilie 🎵 Zoë"),
        ("red \x1b[31malert\x1b[0m", "red \\x1b[31malert\\x1b[0m"),
        ("bell\x07 and\nnewline\r", "bell\\x07 and\\nnewline\\r"),
        ("right\u202eto left", "right\\u202eto left"),
        ("C1 \x9b control", "C1 \\x9b control"),
        ("argv \udcff byte", "argv \\udcff byte"),
    ],
)
def test_printable_escapes_what_a_terminal_would_obey(text: str, shown: str) -> None:
    assert printable(text) == shown
