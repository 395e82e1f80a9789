"""The seed's story as a walk: the forum question's kernel in four steps, each
a run with the map that shows it and the line that causes it, then the two
fixes the answer gives.  Qt-free: the app's Start here window shows it, and
tests and the benchmark run the same requests.

The shapes are small on purpose: the walk is read at the speed of a first
hour, so every step must answer at once, caches empty (well under 2 s on two
cores: each is a few thousand steps of the instant tier, which needs no
compile).  The seed's kernel does threads x M x N x K multiply-adds, 1,024x a
matmul's work at its launch, so its own shape (128 x 256 x 128) is a preset,
not a step.
"""
from __future__ import annotations

from dataclasses import dataclass

from .request import RunRequest

#: M x K x N of the walk's steps: C is 8 x 8 (64 elements, one map cell each
#: large enough to read), B has 64 rows, far fewer than the block's 1,024 threads.
TOUR_SHAPE = (8, 64, 8)


@dataclass(frozen=True)
class TourStep:
    """One step: what to run, which map shows it, and the cause at its line."""

    title: str
    #: what the map shows and why, in a few sentences
    text: str
    request: RunRequest
    #: the map to show (the app's map names: count, writer, iteration, error,
    #: oob, stores, reads_a, reads_b)
    map_name: str
    #: the kernel's line that causes what the map shows
    line: int
    #: what the verdict should be (the tests hold the walk to it)
    passes: bool


def _request(kernel: str, grid: tuple[int, ...], block: tuple[int, ...],
             shape: tuple[int, int, int] = TOUR_SHAPE) -> RunRequest:
    m, k, n = shape
    return RunRequest(kernel=kernel, m=m, k=k, n=n, grid=grid, block=block,
                      launch_source="the Start here walk")


def seed_tour() -> tuple[TourStep, ...]:
    """The walk, in order."""
    seed = _request("tid-rows", (1,), (1024,))
    return (
        TourStep(
            "1. One block of 1,024 threads",
            "The question's kernel ran as matmul[1, 1024]: one block, so one of the GPU's "
            "multiprocessors does everything while the others wait. Worse, nothing divides "
            "the work: at line 19 every thread loops over every row (and every column) of C. "
            "The map, stores per thread, shows each of the 1,024 threads storing all 64 "
            "elements of C: 1,024 times the work of one matrix product.",
            seed, "stores", 19, False),
        TourStep(
            "2. B[tid, col]",
            "Line 23 reads B[tid, col]: the row of B comes from the thread's index, which "
            "runs to 1,023, while B has K = 64 rows. Threads 64 to 1,023 read past the end "
            "of B. On a GPU those reads return whatever memory lies there (cuda-memcheck "
            "reports them); ThreadMap counts them. The map: out-of-bounds accesses per "
            "thread, none for the first 64 threads, many for every thread after.",
            seed, "oob", 23, False),
        TourStep(
            "3. Collisions",
            "Line 24 stores C[row, col] in every thread, so each element of C is written "
            "1,024 times, and its final value is whichever thread stored last: a race. The "
            "write-count map is red everywhere (a collision of many threads); a correct "
            "kernel writes each element exactly once.",
            seed, "count", 24, False),
        TourStep(
            "4. The all-ones test that hides it",
            "Now with 64 threads, so that tid stays inside B's 64 rows. On all-ones inputs "
            "each thread's sum is K = 64 whichever row of A and column of B it multiplies, "
            "so a test on all-ones matrices sees every element right. On random inputs "
            "(ThreadMap's default) the error map shows every element wrong: the sum at "
            "line 23 multiplies a row of A by the thread's own row of B. The diagnosis "
            "below the verdict names both.",
            _request("tid-rows", (1,), (64,)), "error", 23, False),
        TourStep(
            "Fix 1: the canonical kernel",
            "The answer's first advice: start from the textbook kernel. naive-2d derives "
            "its work from C: cuda.grid(2) gives each thread one (row, column) of C, a "
            "bounds check keeps threads outside C from storing (line 14), and the sum runs "
            "over B[k, col]. One 16 x 16 block covers the 8 x 8 C: every element written "
            "once, PASS against the float64 reference.",
            _request("naive-2d", (1, 1), (16, 16)), "count", 14, True),
        TourStep(
            "Fix 2: the grid-stride loop",
            "The answer's second advice: to run on any launch, even the question's one "
            "block of 1,024, loop over C in strides of the whole grid (line 17). Here C is "
            "64 x 64 (4,096 elements), so each thread takes 4 of them; the map shows which "
            "grid-stride iteration wrote each element. Every element once: PASS.",
            _request("grid-stride", (1,), (1024,), (64, 64, 64)), "iteration", 17, True),
    )
