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
