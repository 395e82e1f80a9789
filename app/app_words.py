"""The engine's messages in the app's own words: the engine speaks to the
command line and the app alike, and names command-line options ("give
--reference FILE.py:FUNCTION"); a user of the window has fields instead.
Each option the engine's messages name, and the field that does its job."""
from __future__ import annotations

import re

#: option (with what follows it in a message) -> the app's field
FIELDS = (
    (r"--reference FILE(\.py)?:FUNCTION", "the Reference field (FILE.py:FUNCTION)"),
    (r"--reference", "the Reference field"),
    (r"--arg NAME=TYPE\[SHAPE\]", "the Arguments field (NAME=TYPE[SHAPE])"),
    (r"--arg", "the Arguments field"),
    (r"--scalar NAME=VALUE", "the Scalars field (NAME=VALUE)"),
    (r"--scalar", "the Scalars field"),
    (r"--shape MxKxN", "the M, K and N fields"),
    (r"--shape", "the M, K and N fields"),
    (r"--grid and --block", "the Launch fields"),
    (r"--grid", "the Launch's blocks field"),
    (r"--block", "the Launch's threads field"),
    (r"--backend ([a-z]+)", r"the Backend box (\1)"),
    (r"--backend", "the Backend box"),
    (r"--dtype", "the dtype box"),
    (r"--pattern ([a-z-]+)", r"the Inputs box (\1)"),
    (r"--pattern", "the Inputs box"),
    (r"--seed", "the seed field"),
    (r"--tier ([a-z]+)", r"the \1 tier"),
    (r"--kernel-file", "File > Open kernel file"),
)
_COMPILED = [(re.compile(pattern), words) for pattern, words in FIELDS]


def in_app_words(message: str) -> str:
    """``message`` with each command-line option the app has a field for
    named by that field."""
    for pattern, words in _COMPILED:
        message = pattern.sub(words, message)
    return message
