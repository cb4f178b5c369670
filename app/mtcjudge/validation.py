"""Hostile input: the database's integer range, texts that cannot be stored, safe printing.

Postgres refuses NUL characters in text columns and no driver can encode an unpaired
surrogate as UTF-8: both would surface as a server error at the first write, so every text
the API or the command line takes is checked first. Names are printed on terminals by the
command line; control characters in them are shown escaped, never interpreted.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["DECIMAL", "INT32_MAX", "INTEGER", "NAME_MAX", "check_text", "printable", "text_problem"]

#: the largest value of an INTEGER column (32-bit signed on Postgres; ids, counts, settings)
INT32_MAX = 2_147_483_647
#: the length of the String(200) columns: names, ids, artists, genres, teams
NAME_MAX = 200
#: a whole number as files write it (with ``fullmatch``)
INTEGER = re.compile(r"[+-]?[0-9]+")
#: a decimal number as files write it (with ``fullmatch``); stricter than float(): no "nan",
#: "inf" or digit separators such as "1_0"
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

# bidirectional embeddings, overrides and isolates can make a terminal show text reordered
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def text_problem(text: str) -> str | None:
    """What makes ``text`` unstorable (a NUL or an unpaired surrogate, and where), or None."""
    for index, char in enumerate(text):
        if char == "\x00":
            problem = "contains a NUL character (U+0000)"
        elif "\ud800" <= char <= "\udfff":
            problem = f"contains an unpaired surrogate (U+{ord(char):04X}), which is not text"
        else:
            continue
        if "\n" in text:
            problem += f" on line {text.count(chr(10), 0, index) + 1}"
        return problem
    return None


def check_text(field: str, text: str) -> None:
    """Raise ``ValueError`` naming ``field`` if ``text`` cannot be stored."""
    problem = text_problem(text)
    if problem is not None:
        raise ValueError(f"{field} {problem}")


def printable(text: str) -> str:
    """``text`` with control characters escaped (``"\\x1b[31m"`` is shown, not obeyed).

    Examples
    --------
    >>> printable("Team \\x1b[31mRed")
    'Team \\\\x1b[31mRed'
    """
    if text.isprintable():
        return text
    return "".join(
        char.encode("unicode_escape").decode("ascii")
        if char in _BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")
        else char
        for char in text
    )
