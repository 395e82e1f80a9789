"""The words a beginner meets in ThreadMap, each said once in plain words.

The app shows an entry on hover wherever its term appears, and all of them
in Help > Glossary; the README's readers find them in docs/GLOSSARY.md, made
from the same entries (``markdown``).
"""
from __future__ import annotations

import re

#: term -> what it means, in the order a beginner meets them
GLOSSARY: dict[str, str] = {
    "thread": "One instance of the kernel. Each thread runs the whole kernel body with its own "
              "indices (threadIdx, blockIdx), and on its own data.",
    "block": "A group of up to 1,024 threads that run on one multiprocessor (SM) of the GPU "
             "and can share memory and wait for each other (cuda.syncthreads()). A launch "
             "kernel[blocks, threads] starts 'blocks' blocks of 'threads' threads each.",
    "grid": "All the blocks of one launch. Its size (gridDim times blockDim threads) is what "
            "cuda.gridsize() returns.",
    "warp": "32 threads of a block (threads 0-31, 32-63, ...) that the GPU runs together, one "
            "instruction for all of them at a time.",
    "lane": "A thread's place in its warp, 0 to 31 (cuda.laneid).",
    "collision": "An element of the output stored by more than one thread. Its final value is "
                 "whichever thread stored last, which can change from run to run: a bug, "
                 "unless the threads use atomic operations.",
    "out of bounds": "A read or write past the end of an array (or before its start). On a GPU "
                     "it reads whatever memory lies there, or corrupts it; compute-sanitizer "
                     "(formerly cuda-memcheck) reports it. ThreadMap counts it and skips it.",
    "grid-stride iteration": "In a grid-stride loop (for i in range(start, n, gridsize)), "
                             "each thread handles elements start, start + gridsize, ...: the "
                             "iteration is how many elements the thread had stored before "
                             "this one (0 for its first).",
    "lowest writer": "Of the threads that stored an element, the one with the lowest global "
                     "thread id (block x threads per block + thread). The writer map shows it; "
                     "where several threads stored an element, it is one of them, not "
                     "necessarily the last.",
    "occupancy": "How many warps an SM holds at once, as a share of the most it can hold. "
                 "It is limited by the block size, the registers each thread needs and the "
                 "shared memory each block takes. High occupancy hides memory latency; 100% "
                 "does not mean the GPU is busy: a launch of one block uses one SM of many.",
    "wave": "The blocks the GPU can run at the same time (SMs x blocks per SM). A launch with "
            "more blocks runs in several waves; a last wave only partly full leaves SMs idle.",
    "thread that stored no output": "A thread that stored no element of the output. Its work "
                                    "may have been empty (a launch larger than the data, a "
                                    "loop that gives it no element), or done elsewhere: in a "
                                    "reduction most threads only add into shared memory, and "
                                    "one thread of each block stores the block's sum. It is "
                                    "not necessarily a thread that did nothing.",
    "coalescing": "How many 32-byte memory sectors a warp's 32 accesses touch at once. "
                  "Neighbouring lanes reading neighbouring elements need the fewest (4 for "
                  "float32); scattered accesses need up to 32.",
    "bank conflict": "Shared memory is split into 32 banks; lanes of a warp that access "
                     "different addresses in the same bank wait for each other.",
    "divergence": "Lanes of one warp taking different sides of a branch: the warp runs both "
                  "sides one after the other, with part of its lanes idle.",
    "race": "Two threads accessing the same element, at least one of them writing, with "
            "nothing (a barrier, an atomic) ordering them: the result depends on timing.",
}

#: other ways the app says a term
_ALSO = {"thread that stored no output": r"threads? that stored no output|stored no output",
         "out of bounds": r"out-of-bounds",
         "grid-stride iteration": r"iterations? of the grid-stride|grid-stride loop",
         "lowest writer": r"lowest (global )?(thread )?id"}
_PATTERNS = {term: re.compile(rf"\b({re.escape(term)}s?|{_ALSO.get(term, re.escape(term))})\b",
                              re.IGNORECASE) for term in GLOSSARY}
#: terms that another term contains: "thread" is not also explained where the
#: text says "threads that stored no output" and nothing else about threads
_WITHIN = {term: [other for other in GLOSSARY if other != term and term in other]
           for term in GLOSSARY}


def terms_in(text: str) -> list[str]:
    """The glossary's terms that ``text`` uses, in the glossary's order."""
    found = []
    for term, pattern in _PATTERNS.items():
        hits = pattern.findall(text)
        if not hits:
            continue
        longer = sum(len(_PATTERNS[other].findall(text)) for other in _WITHIN[term])
        if len(hits) > longer:
            found.append(term)
    return found


def explain(text: str) -> str:
    """The entries of the terms ``text`` uses, one paragraph each ("" if none)."""
    return "\n\n".join(f"{term}: {GLOSSARY[term]}" for term in terms_in(text))


def markdown() -> str:
    """The glossary as a Markdown page (docs/GLOSSARY.md)."""
    lines = ["# Glossary", "", "The words ThreadMap uses, as the app explains them on hover "
             "and in Help > Glossary.", ""]
    for term, meaning in GLOSSARY.items():
        lines += [f"**{term}**: {meaning}", ""]
    return "\n".join(lines)
