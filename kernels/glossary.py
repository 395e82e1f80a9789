"""The words a beginner meets in ThreadMap, each said once in plain words,
and the words of its code, for the people who maintain it.

The app shows an entry of :data:`GLOSSARY` on hover wherever its term
appears, and all of them in Help > Glossary; the README's readers find them
in docs/GLOSSARY.md, made from the same entries (``markdown``), with the
code's own words (:data:`PROJECT_WORDS`) after them.
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

#: The code's own words, for a maintainer (docs/GLOSSARY.md; docs/ARCHITECTURE.md
#: puts them in their place in the pipeline).  The app does not show them.
PROJECT_WORDS: dict[str, str] = {
    "described": "A kernel run with its arguments described (--arg, THREADMAP_ARGS), not by "
                 "the matmul convention (A, B in, C out). Its output is whatever array it "
                 "writes, and its reference the user's own function.",
    "face": "The engine's one public face, kernels/api.py (re-exported by kernels/__init__): "
            "the app and the command line import nothing else of kernels/, and "
            "tests/test_seam.py checks it.",
    "lowering": "A kernel's plan made ready for the CPU emulation, once "
                "(derived/lowering.py, LoweredKernel): its operations, and every number the "
                "emulation files its figures under. Both tiers are emitted from it.",
    "operation": "One statement of the lowered kernel, typed by what it is to the emulation "
                 "(Simple, Split, ForRange, WhileLoop, Exit, Leave, Barrier, WarpExchange, "
                 "Skip, Refused) and carrying its numbers; lowering.outline prints the tree.",
    "intrinsic": "One of CUDA's functions of one thread's values (cuda.popc, clz, ffs, brev, "
                 "fma, cbrt, selp): written once in derived/intrinsics.py, with numba-cuda's "
                 "types, as a numba form for the compiled tier and a numpy one for the instant.",
    "record client": "One analysis of the lockstep records (analyses/record_clients.py): "
                     "the records it reads, how it reads them, and what its figure adds to a "
                     "result (result.json's keys, a FAIL's reasons, the verdict, findings).",
    "tier": "One of the CPU emulation's two ways to run a kernel: the instant tier "
            "(derived/vector.py, numpy over vectors of lanes, nothing to compile) and the "
            "compiled tier (derived/lockstep.py, numba). They record the same figures; "
            "backends/tiers.py chooses.",
    "unit": "A unit of the emulation's work: a whole block, or one warp where the warps of a "
            "block cannot see each other (no barrier, no shared array, no global array "
            "checked for races; LockstepLayout.warpwise). Workers take units in order.",
    "site": "A numbered place in the kernel: an access site (one array access in the source, "
            "transform.access_sites), a branch site (an if, a loop test, a return) or a "
            "barrier site (a syncthreads). Figures are filed by site, the same on both tiers.",
    "epoch": "The count of barriers a block has passed: one barrier interval. Two accesses "
             "of one element race when they fall in the same epoch, from different threads, "
             "with at least one write, unless both are atomic updates.",
    "round": "One iteration of a loop the compiled tier records lane by lane (its body only "
             "loads and computes): each lane notes its loads' offsets by round, and the "
             "warp's requests are then measured round by round, as lockstep would meet them.",
    "stow": "To keep a result's maps on disk instead of in memory (kernels/stow.py), leaving "
            "a light copy of the same shapes; unstowing reads them back, element for element.",
    "lifeline": "What ties a child process to its parent (backends/lifeline.py): the kernel "
                "kills the child when the parent dies, and the child watches its pipe, so no "
                "process outlives the command that started it.",
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
    lines += ["## Words of ThreadMap's code", "",
              "For the people who maintain it; see also [the architecture](ARCHITECTURE.md).", ""]
    for term, meaning in PROJECT_WORDS.items():
        lines += [f"**{term}**: {meaning}", ""]
    return "\n".join(lines)
