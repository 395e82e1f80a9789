"""Numbers in sentences: "1 block", "2 blocks", never "1 blocks"."""
from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, plural unless exactly one (thousands separated)."""
    return f"{count:,} {noun if count == 1 else (plural or noun + 's')}"


def percent(share: float) -> str:
    """A share as a whole percentage that never rounds to 0% or 100% unless it
    is exactly that: 0.996 is ">99%", not "100%"."""
    if 0 < share < 0.005:
        return "<1%"
    if 0.995 <= share < 1:
        return ">99%"
    return f"{share:.0%}"


#: Digits past which an integer is named by its length, not written out.
LONGEST_WRITTEN = 40


def whole_number(value: int) -> str:
    """``value`` with thousands separated, or, past ``LONGEST_WRITTEN``
    digits, "a 4,000-digit number": a hex literal of 4,000 digits passes
    Python's parse, then raised ValueError wherever a message wrote it in
    decimal (and writing it is quadratic in its length)."""
    bits = abs(value).bit_length()
    if bits * 0.30103 < LONGEST_WRITTEN:
        return f"{value:,}"
    digits = int(bits * 0.30103) + 1  # (within one of the true count)
    return f"a {'negative ' if value < 0 else ''}{digits:,}-digit number"


#: Characters of a user's text past which a message shortens it.
LONGEST_QUOTED = 60


def quoted(value: object) -> str:
    """``repr(value)``, or, past ``LONGEST_QUOTED`` characters, its start and
    its length: a message quotes what it refuses, and a 4,000-character
    type string quoted whole made a one-line refusal a page long.  An
    integer is written by :func:`whole_number`; a value whose repr fails (a
    tuple holding a 5,000-digit number) is named by its type."""
    if isinstance(value, int) and not isinstance(value, bool):
        return whole_number(value)
    if isinstance(value, str):
        if len(value) <= LONGEST_QUOTED:
            return repr(value)
        return f"{value[:LONGEST_QUOTED - 20]!r}... ({len(value):,} characters)"
    try:
        text = repr(value)
    except ValueError:
        return f"a {type(value).__name__}"
    return text if len(text) <= LONGEST_QUOTED else f"{text[:LONGEST_QUOTED - 20]}..."
