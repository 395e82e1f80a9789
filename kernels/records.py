"""The arrays a recording kernel fills, and what they become after a run.

One list (``RECORD_PARAMS``) names the recording arrays in the order the
derived kernels take them; allocation and read-back follow the same list, so
the GPU, the simulator and the emulation cannot disagree on the layout.

Conventions (also in docs/maps.md):

* ``count``: plain stores to each element of the output; 0 = never written,
  1 = once, > 1 = more than once.  A collision is an element stored by more
  than one thread (``min_writer != max_writer``); one thread storing it again
  (``C[i, j] += ...`` in a loop) is not.  ``atomics`` counts atomic updates
  apart: they are writes but not races.
* ``min_writer`` / ``max_writer``: lowest / highest global thread id that
  wrote the element (-1 if none).  Both are atomic min / max, deterministic
  even when threads race.  Where they are equal everywhere (no element
  stored by two threads), ``read_back`` gives one array for both: read them,
  never write into them.
* ``iteration``: for the writing thread, how many stores to the output it had
  made before this one (its grid-stride iteration); the lowest such number
  over all writes of the element (-1 if none).
* Global thread id: ``block * threads_per_block + thread``, with
  ``block = blockIdx.y * gridDim.x + blockIdx.x`` and
  ``thread = threadIdx.y * blockDim.x + threadIdx.x``; warp = thread // 32.
* Out-of-bounds accesses (negative indices included: numba would wrap them)
  are counted per array and direction and skipped; an out-of-bounds read
  yields 0.  Per array and direction, ``oob_min_thread`` holds the lowest
  global thread id that made one and ``oob_index`` that thread's first such
  index (i, j, k; 0 where the array has fewer dimensions): per array, not per thread, so a thread
  whose first out-of-bounds access was of another array still has its index
  here.
* ``oob_margin``: where the out-of-bounds writes (stores and atomic updates)
  to C landed, counted in a band ``OOB_MARGIN`` elements wide around C: a
  write at row r, column c outside the M x N of C is counted at
  (clamp(r, -W, M + W - 1), clamp(c, -W, N + W - 1)).  A write through a
  flat index e (C indexed with one subscript) lands at row e // N, column
  e % N (floor division: a negative e is above C).  Four strips, never the
  whole frame: top (W, N + 2W), rows -W .. -1, columns -W .. N + W - 1;
  bottom (W, N + 2W), rows M .. M + W - 1; left (M, W), columns -W .. -1;
  right (M, W), columns N .. N + W - 1.  Reads, and writes to other arrays,
  stay in the summaries above only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .words import counted

INT32_MAX = np.iinfo(np.int32).max
INT64_MAX = np.iinfo(np.int64).max
READ, WRITE = 0, 1
DIRECTIONS = ("read", "write")

#: Recording arrays in the order the derived kernels take them, after the
#: kernel's own parameters; then one read-count array per input (reads_param).
RECORD_PARAMS = ("_tm_count", "_tm_atomics", "_tm_min_writer", "_tm_max_writer",
                 "_tm_iteration", "_tm_stores", "_tm_oob", "_tm_oob_min_thread",
                 "_tm_oob_thread", "_tm_oob_index", "_tm_divz", "_tm_divz_thread",
                 "_tm_oob_margin")
(COUNT, ATOMICS, MIN_WRITER, MAX_WRITER, ITERATION, STORES, OOB, OOB_MIN_THREAD, OOB_THREAD,
 OOB_INDEX, DIVZ, DIVZ_THREAD, MARGIN) = range(len(RECORD_PARAMS))
#: Division sites recorded (``_tm_divz``: divisions by zero per site;
#: ``_tm_divz_thread``: the lowest thread that made one); a kernel with more
#: shares the last one.
DIVISION_SITES = 64
#: Index of the first read-count array in a list of recording arrays.
READS = len(RECORD_PARAMS)
#: Width W of the band around C where out-of-bounds writes to C are counted
#: (``AccessMaps.oob_margin``), in elements; writes further out are counted
#: on its outer edge.
OOB_MARGIN = 4

#: The writer maps the CPU emulation keeps encoded so that zero means "not
#: written" (see ``allocate_records``), each kept by a running maximum.
ENCODED_WRITERS = (MIN_WRITER, MAX_WRITER, ITERATION)
#: Per-element and per-slot arrays that each worker of a parallel emulation
#: keeps privately, and how they are merged (the writer maps still encoded;
#: "follows": taken with the lowest thread, see ``merge_oob_index``).
PRIVATE_RECORDS = {COUNT: "sum", ATOMICS: "sum", MIN_WRITER: "max", MAX_WRITER: "max",
                   ITERATION: "max", OOB: "sum", OOB_MIN_THREAD: "min", OOB_INDEX: "follows",
                   DIVZ: "sum", DIVZ_THREAD: "min", MARGIN: "sum"}
#: Per-thread arrays: each thread belongs to one worker, so they are shared.
SHARED_RECORDS = (STORES, OOB_THREAD)

#: What the lockstep emulation also records (see helper_library.py), in the
#: order its functions take them:
#:
#: * ``_tm_req`` (sites + 3, 64): row s (an access site) holds each lane's
#:   element offset in the current warp request there (columns 0-31, -1 where
#:   none), then the site's sums (columns 32-36): warp requests, their summed
#:   cost (sectors for global memory, passes for shared), the largest cost,
#:   the summed ideal cost, the summed active lanes.  The last three rows are
#:   room to sort a request.  (One array: each array a numba function takes
#:   costs its caller ~10 arguments, and the flush runs once per request.)
#: * ``_tm_accw`` (sites, warps, 2): requests and summed cost per warp;
#: * ``_tm_br`` (branches, 5): per branch, warp evaluations, executions of its
#:   body (lanes taking it), summed and fewest such lanes, and evaluations that
#:   split the warp; ``_tm_brw`` (branches, warps, 2): per warp;
#: * ``_tm_bar`` (barriers, 7): divergent executions, blocks, last block seen,
#:   and the first: block, threads arrived, threads missing, first missing;
#: * ``_tm_race`` (9): shared elements raced on (each block's counted once:
#:   record_runtime's _tm_record_shared_race), and the first race: block, its lanes and
#:   sites, array slot and index; ``_tm_uninit`` (7): reads of shared elements
#:   the block had not written, and the first;
#: * ``_tm_warp`` (2, 7): warp operations with undefined results, and the
#:   first of each (``record_runtime._tm_record_warp_hazard``): row 0 shuffles that read
#:   a lane not taking part, row 1 masks naming a lane that is not there.
#: * ``_tm_grace`` (10): races in global memory within a block (hits), and the
#:   pair of the lowest element so met (``record_runtime._tm_record_global_race``):
#:   slot, flat offset, block, the other lane and its site, the lane and its
#:   site, the index (i, j).  Races between blocks come from the arrays'
#:   access ranges (``global_races``).
LOCKSTEP_RECORDS = ("_tm_req", "_tm_accw", "_tm_br", "_tm_brw", "_tm_bar", "_tm_race",
                    "_tm_uninit", "_tm_warp", "_tm_grace")
#: Columns of a site's sums in ``_tm_req``, and rows of room below the sites.
SITE_SUMS = slice(32, 37)
SCRATCH_ROWS = 3
#: Lockstep records each worker of a parallel emulation keeps privately, and
#: how they are merged (by column); the per-warp ones are shared (a warp is
#: one worker's).
LOCKSTEP_MERGE = {
    "sums": ("sum", "sum", "max", "sum", "sum"),
    "_tm_br": ("sum", "sum", "sum", "min", "sum"),
    "_tm_bar": ("sum", "sum", "keep", "first", "first", "first", "first"),
    "_tm_race": ("sum",) + ("first",) * 8,
    "_tm_uninit": ("sum",) + ("first",) * 6,
    "_tm_warp": ("sum",) + ("first",) * 6,
}
LOCKSTEP_SHARED = ("_tm_accw", "_tm_brw")
#: Fewest lanes of a branch before any warp took it.
NO_LANES = np.iinfo(np.int64).max


#: The records each array the kernel stores into keeps (its write maps, its
#: threads' store numbers and the margin of its out-of-bounds writes): the
#: output's are the first of ``RECORD_PARAMS``; every other written array of
#: a described kernel (``transform.written_arrays``) has its own, after the
#: read counts, named by ``written_param``.
WRITE_RECORDS = (COUNT, ATOMICS, MIN_WRITER, MAX_WRITER, ITERATION, STORES, MARGIN)


def written_param(index: int, record: int) -> str:
    """Name of record ``record`` (``COUNT``, ...) of written array ``index``
    (0: the output, whose names are ``RECORD_PARAMS``')."""
    name = RECORD_PARAMS[record]
    return name if index == 0 else f"{name}_w{index}"


def record_names(inputs: int, written: int = 0) -> list[str]:
    """The names of a run's recording arrays in the order ``allocate_records``
    lays them out: ``inputs`` read counts, then the records of ``written``
    written arrays besides the output."""
    return list(RECORD_PARAMS) + [reads_param(i) for i in range(inputs)] + [
        written_param(w, r) for w in range(1, written + 1) for r in WRITE_RECORDS]


def written_records(records: list[np.ndarray], inputs: int, index: int) -> dict[int, np.ndarray]:
    """Written array ``index``'s records (0: the output's), by ``WRITE_RECORDS``
    index, out of a run's ``records`` with ``inputs`` read counts."""
    if index == 0:
        return {r: records[r] for r in WRITE_RECORDS}
    start = READS + inputs + (index - 1) * len(WRITE_RECORDS)
    return dict(zip(WRITE_RECORDS, records[start:start + len(WRITE_RECORDS)]))


def reads_param(input_index: int) -> str:
    """Name of the read-count array of input ``input_index`` (0 = A, 1 = B)."""
    return f"_tm_reads_{input_index}"


def reads_flat_param(input_index: int) -> str:
    """The same array seen flat, as the emulation counts reads by offset."""
    return f"_tm_reads_flat_{input_index}"


def writer_dtype(n_threads: int) -> np.dtype:
    """Thread ids fit int32 up to 2**31 - 1 threads; past that, int64 (never
    truncated silently)."""
    return np.dtype(np.int32) if n_threads < INT32_MAX else np.dtype(np.int64)


def record_nbytes(output_size: int, input_sizes: tuple[int, int], n_threads: int,
                  n_sites: int = 8) -> int:
    """Bytes the recording arrays take (for the memory estimate); ``n_sites``
    counts access and branch sites, each with two int64 figures per warp."""
    per_element = 4 + 4 + 2 * writer_dtype(n_threads).itemsize + 4
    per_thread = 4 + 4 + n_sites * 16 / 32
    return int(output_size * per_element + n_threads * per_thread + 4 * sum(input_sizes))


def margin_record_shape(shape_c: tuple[int, int]) -> tuple[int, int]:
    """Shape of the out-of-bounds margin record of an M x N output
    (``_tm_oob_margin``, int32): rows of N + 2W, so that the helpers read N
    from it even where C is flat.  Rows 0 .. W - 1 are the top strip, W ..
    2W - 1 the bottom one; from row 2W on, read flat, the left strip (M x W)
    and then the right one (M x W); the rest of the last row is unused."""
    m, n = (int(x) for x in shape_c)
    width = n + 2 * OOB_MARGIN
    return 2 * OOB_MARGIN + -(-2 * m * OOB_MARGIN // width), width


def margin_cells(record_shape: tuple[int, int], m: int, rows: np.ndarray,
                 cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where, in a margin record of ``record_shape`` for an output of ``m``
    rows, the out-of-bounds writes at (``rows``, ``cols``) of C are counted
    (numpy arrays of int64; each position outside C).  The helpers'
    ``_tm_margin_hit`` does the same for one write."""
    w = OOB_MARGIN
    width = record_shape[1]
    n = width - 2 * w
    r = np.clip(rows, -w, m + w - 1)
    c = np.clip(cols, -w, n + w - 1)
    flat = np.where(r < 0, (r + w) * width + c + w,
                    np.where(r >= m, (r - m + w) * width + c + w,
                             np.where(c < 0, 2 * w * width + r * w + c + w,
                                      2 * w * width + m * w + r * w + c - n)))
    return flat // width, flat % width


def margin_strips(record: np.ndarray, shape_c: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """The four strips (top, bottom, left, right; int32) of a margin record."""
    m, n = (int(x) for x in shape_c)
    w = OOB_MARGIN
    record = np.asarray(record)
    if record.shape != margin_record_shape((m, n)):
        raise ValueError(f"a margin record of shape {record.shape} is not one of a "
                         f"{m} x {n} output")
    top = record[:w].astype(np.int32, copy=True)
    bottom = record[w:2 * w].astype(np.int32, copy=True)
    sides = record[2 * w:].reshape(-1)
    left = sides[:m * w].reshape(m, w).astype(np.int32, copy=True)
    right = sides[m * w:2 * m * w].reshape(m, w).astype(np.int32, copy=True)
    return top, bottom, left, right


def empty_margin(shape_c: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Zero strips (top, bottom, left, right) around an M x N output."""
    m, n = (int(x) for x in shape_c)
    w = OOB_MARGIN
    return (np.zeros((w, n + 2 * w), np.int32), np.zeros((w, n + 2 * w), np.int32),
            np.zeros((m, w), np.int32), np.zeros((m, w), np.int32))


@dataclass(frozen=True)
class WrittenShape:
    """An array the kernel stores into besides its output: its shape as the
    kernel sees it (1-D when flattened), the shape its maps are drawn in (a
    1-D array wrapped into rows), and whether it is updated atomically."""

    name: str
    shape: tuple[int, ...]
    drawn: tuple[int, int]
    atomics: bool


def allocate_records(output_shape: tuple[int, ...], input_shapes: tuple[tuple[int, ...], ...],
                     n_slots: int, n_threads: int, *,
                     writers: np.dtype | None = None, atomics: bool = True,
                     encoded: bool = False,
                     shape_c: tuple[int, int] | None = None,
                     written: tuple[WrittenShape, ...] = ()) -> list[np.ndarray]:
    """Fresh recording arrays, initialised, in ``RECORD_PARAMS`` order + reads
    + the records of each other ``written`` array (``record_names``).

    ``shape_c``: the output's M x N, for the out-of-bounds margin record
    (``margin_record_shape``); by default ``output_shape``, which a flat
    (1-D) output must not leave to it: its size is read as one row.

    Without ``atomics`` (the kernel makes no atomic update of its output) the
    atomics map is one element of the same rank: nothing fills or merges
    hundreds of MB that stay zero.

    ``encoded`` (the CPU emulation): the writer maps start at zero, which
    means "not written", and hold ``max - g`` for the lowest writer ``g``,
    ``g + 1`` for the highest and ``INT32_MAX - s`` for the lowest store
    number ``s``, each kept by a running maximum; ``decode_writers`` turns
    them into the maps above.  Zeroed memory is not touched until a thread
    stores there, so a worker's private maps cost only the pages its threads
    write (2 MB huge pages: all of them where two workers' elements
    interleave finely, as a grid-stride launch's do), and the workers, in
    parallel, fault them in where one thread ahead of them did: a 4096 x
    4096 run filled 0.5 GB of sentinels before starting, 1.2 s of fresh
    memory on this VM."""
    writers = writer_dtype(n_threads) if writers is None else writers
    if shape_c is None:
        shape_c = tuple(output_shape) if len(output_shape) == 2 else (1, int(output_shape[0]))
    maps = _write_maps(output_shape, shape_c, n_threads, writers, atomics, encoded)
    records = maps[:STORES + 1] + [
        np.zeros((n_slots, 2), np.int64),                # oob
        np.full((n_slots, 2), INT64_MAX, np.int64),      # oob_min_thread
        np.zeros(n_threads, np.int32),                   # oob_thread
        np.zeros((n_slots, 2, 3), np.int64),             # oob_index: (i, j, k)
        np.zeros(DIVISION_SITES, np.int64),              # divz
        np.full(DIVISION_SITES, INT64_MAX, np.int64),    # divz_thread
        maps[-1],                                        # oob_margin
    ] + [np.zeros(shape, np.int32) for shape in input_shapes]  # read counts
    for other in written:
        records += _write_maps(other.shape, other.drawn, n_threads, writers, other.atomics,
                               encoded)
    return records


def _write_maps(shape: tuple[int, ...], drawn: tuple[int, int], n_threads: int,
                writers: np.dtype, atomics: bool, encoded: bool) -> list[np.ndarray]:
    """One written array's records, in ``WRITE_RECORDS`` order."""
    if encoded:
        min_writer, max_writer = np.zeros(shape, writers), np.zeros(shape, writers)
        iteration = np.zeros(shape, np.int32)
    else:
        min_writer = np.full(shape, np.iinfo(writers).max, writers)
        max_writer = np.full(shape, -1, writers)
        iteration = np.full(shape, INT32_MAX, np.int32)
    return [
        np.zeros(shape, np.int32),                                  # count
        np.zeros(shape if atomics else (1,) * len(shape), np.int32),  # atomics
        min_writer,
        max_writer,
        iteration,
        np.zeros(n_threads, np.int32),                              # stores
        np.zeros(margin_record_shape(drawn), np.int32),             # oob_margin
    ]


def merge_oob_index(into: list[np.ndarray], other: list[np.ndarray]) -> None:
    """Take ``other``'s out-of-bounds indices where its lowest thread is lower
    than ``into``'s (workers run disjoint threads: no ties); call it before
    the lowest threads themselves are merged (``PRIVATE_RECORDS``)."""
    lower = other[OOB_MIN_THREAD] < into[OOB_MIN_THREAD]
    into[OOB_INDEX][lower] = other[OOB_INDEX][lower]


def decode_writers(records: list[np.ndarray], inputs: int = 0, written: int = 0) -> None:
    """The writer maps of ``allocate_records(..., encoded=True)`` as the
    other backends record them (unwritten: the sentinels), in place: the
    output's and those of ``written`` other written arrays (after ``inputs``
    read counts)."""
    for index in range(written + 1):
        own = written_records(records, inputs, index)
        min_writer, max_writer, iteration = (own[i] for i in ENCODED_WRITERS)
        np.subtract(np.iinfo(min_writer.dtype).max, min_writer, out=min_writer)
        max_writer -= 1
        np.subtract(INT32_MAX, iteration, out=iteration)


def allocate_lockstep_records(n_sites: int, n_branches: int, n_barriers: int,
                              n_warps: int) -> dict[str, np.ndarray]:
    """Fresh lockstep records (see LOCKSTEP_RECORDS), by name.  Arrays are never
    empty: the compiled code takes them whatever the kernel holds."""
    sites, branches, barriers = max(n_sites, 1), max(n_branches, 1), max(n_barriers, 1)
    branch = np.zeros((branches, 5), np.int64)
    branch[:, 3] = NO_LANES
    barrier = np.zeros((barriers, 7), np.int64)
    barrier[:, 2:] = -1
    race = np.zeros(9, np.int64)
    race[1:] = -1
    uninit = np.zeros(7, np.int64)
    uninit[1:] = -1
    warp = np.zeros((2, 7), np.int64)
    warp[:, 1:] = -1
    grace = np.zeros(10, np.int64)
    grace[1:] = -1
    requests = np.full((sites + SCRATCH_ROWS, 64), -1, np.int64)
    requests[:sites, SITE_SUMS] = 0
    return {
        "_tm_req": requests,
        "_tm_accw": np.zeros((sites, n_warps, 2), np.int64),
        "_tm_br": branch,
        "_tm_brw": np.zeros((branches, n_warps, 2), np.int64),
        "_tm_bar": barrier,
        "_tm_race": race,
        "_tm_uninit": uninit,
        "_tm_warp": warp,
        "_tm_grace": grace,
    }


def site_sums(records: dict[str, np.ndarray]) -> np.ndarray:
    """(sites, 5) view of each access site's sums (see ``_tm_req``)."""
    return records["_tm_req"][:-SCRATCH_ROWS, SITE_SUMS]


def merge_lockstep_records(into: dict[str, np.ndarray], others: list[dict[str, np.ndarray]]) -> None:
    """Fold the private lockstep records of later workers (later blocks) into
    ``into``, the first worker's: sums, extremes, and "first" figures taken
    from the earliest worker that has one."""
    for other in others:
        for name, hows in LOCKSTEP_MERGE.items():
            if name == "sums":
                mine, theirs = site_sums(into), site_sums(other)
            else:
                mine, theirs = into[name], other[name]
            for column, how in enumerate(hows):
                a, b = mine[..., column], theirs[..., column]
                if how == "sum":
                    a += b
                elif how == "max":
                    np.maximum(a, b, out=a)
                elif how == "min":
                    np.minimum(a, b, out=a)
            first = [c for c, how in enumerate(hows) if how == "first"]
            if first:
                # A "first" group is empty while its leading column is -1.
                lead = first[0]
                empty = mine[..., lead] < 0
                for column in first:
                    mine[..., column] = np.where(empty, theirs[..., column], mine[..., column])
        merge_global_race_records(into, other)


#: Columns of a global array's access ranges (``_tm_granges_<name>``): the
#: lowest and highest key of its plain reads, plain writes and atomic updates,
#: and the flag of a race within a block; how workers' copies are merged.
RANGE_COLUMNS = ("read_min", "read_max", "write_min", "write_max", "atomic_min", "atomic_max",
                 "raced")
RANGE_MERGE = ("min", "max", "min", "max", "min", "max", "max")
#: Past this many elements a global array is not checked for races: its
#: shadow and ranges (~190 bytes an element, the ranges once per worker)
#: would outweigh the run.  The result says so.
RACE_CHECK_ELEMENTS = 1 << 20


def allocate_global_ranges(elements: int) -> np.ndarray:
    """Fresh access ranges of an array of ``elements`` (0 rows: not checked)."""
    ranges = np.empty((elements, len(RANGE_COLUMNS)), np.int64)
    ranges[:, 0::2] = INT64_MAX
    ranges[:, 1::2] = -1
    ranges[:, 6] = 0
    return ranges


#: Pairs of access kinds that race (columns of the ranges: reads 0, writes 2,
#: atomics 4): a write with anything, a read with an atomic update.
RACING_KINDS = ((2, 2), (2, 0), (2, 4), (0, 4))


def between_blocks(ranges: np.ndarray, keys_per_block: int) -> np.ndarray:
    """Per element: some pair of racing kinds met it from two blocks."""
    blocks = np.where(ranges[:, :6] >= 0, ranges[:, :6] // keys_per_block, -1)
    present = (ranges[:, 0:6:2] <= ranges[:, 1:6:2])  # (empty: max -1 < min)
    cross = np.zeros(len(ranges), bool)
    for a, b in RACING_KINDS:
        both = present[:, a // 2] & present[:, b // 2]
        one_block = (blocks[:, a] == blocks[:, a + 1]) & (blocks[:, b] == blocks[:, b + 1]) \
            & (blocks[:, a] == blocks[:, b])
        cross |= both & ~one_block
    return cross


def raced_in_global_memory(lockstep: dict[str, np.ndarray], race_arrays: tuple[str, ...],
                           keys_per_block: int) -> bool:
    """Whether a run found a race in global memory (then its output depends
    on the order threads ran in)."""
    if lockstep["_tm_grace"][0]:
        return True
    return any(ranges.size and between_blocks(ranges, keys_per_block).any()
               for ranges in (lockstep[f"_tm_granges_{name}"] for name in race_arrays))


def merge_global_race_records(into: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> None:
    """Another worker's access ranges (min and max) and its lowest race
    within a block (by slot, then offset) into ``into``'s."""
    for name, mine in into.items():
        if not name.startswith("_tm_granges_") or not mine.size:
            continue
        theirs = other[name]
        for column, how in enumerate(RANGE_MERGE):
            combine = np.minimum if how == "min" else np.maximum
            combine(mine[:, column], theirs[:, column], out=mine[:, column])
    mine, theirs = into["_tm_grace"], other["_tm_grace"]
    mine[0] += theirs[0]
    if theirs[1] >= 0 and (mine[1] < 0 or (theirs[1], theirs[2]) < (mine[1], mine[2])):
        mine[1:] = theirs[1:]


@dataclass(frozen=True)
class OutOfBounds:
    """Out-of-bounds accesses to one array in one direction."""

    array: str
    role: str  # "A", "B", "C" or "shared"/"local"
    direction: str  # "read" or "write"
    count: int
    #: lowest global thread id that made such an access (-1 if none)
    first_thread: int
    #: that thread's first out-of-bounds index on this array in this
    #: direction (None only where no thread made one)
    first_index: tuple[int, ...] | None

    def describe(self) -> str:
        text = f"{counted(self.count, 'out-of-bounds ' + self.direction)} of {self.array}"
        if self.first_thread >= 0:
            text += f" (first: thread {self.first_thread}"
            if self.first_index is not None:
                text += f" at [{', '.join(map(str, self.first_index))}]"
            text += ")"
        return text


@dataclass(frozen=True)
class DivisionByZero:
    """Divisions (``/``, ``//``, ``%``) by zero at one place in the kernel."""

    line: int
    text: str  # the expression as written
    count: int
    first_thread: int  # lowest global thread id that made one

    def describe(self) -> str:
        return (f"{self.count:,} division{'s' if self.count != 1 else ''} by zero at line "
                f"{self.line} ({self.text}; first: thread {self.first_thread}): a GPU does not "
                "stop there: numba gives 0 for an integer // or % and inf or NaN for floats")


@dataclass(frozen=True)
class _Broadcast:
    """One value standing for an array of ``shape`` (AccessMaps' pickling)."""

    value: np.ndarray
    shape: tuple[int, ...]


class _WriteFigures:
    """What a written array's maps tell (the output's in ``AccessMaps``, any
    other's in ``WriteMaps``), and how they travel: a map that is one value
    broadcast (atomics where the kernel makes no atomic update) is pickled as
    that value, not whole (67 MB of zeros at 4096 x 4096)."""

    def __getstate__(self) -> dict:
        return {name: _Broadcast(value.flat[0:1].copy(), value.shape)
                if isinstance(value, np.ndarray) and value.size > 1 and not any(value.strides)
                else value for name, value in self.__dict__.items()}

    def __setstate__(self, state: dict) -> None:
        # (from a child process: a one-value stand-in must be one number, of
        # the shape of a map it was sent with, never an enormous array)
        count = state.get("count")
        for name, value in state.items():
            if isinstance(value, _Broadcast):
                if not (isinstance(value.value, np.ndarray) and value.value.size == 1
                        and value.value.dtype.kind in "iub" and isinstance(count, np.ndarray)
                        and tuple(value.shape) == count.shape):
                    raise ValueError(f"a one-value map {name} that does not fit the maps")
                state[name] = np.broadcast_to(value.value.reshape(()), count.shape)
        self.__dict__.update(state)

    @property
    def writes(self) -> np.ndarray:
        """Stores and atomic updates of each element.  Where no atomic update
        was recorded (a zero broadcast), ``count`` itself, not a sum: a
        67 MB temporary for a 4096 x 4096 C at every map drawn.  (Read it,
        never write into it.)"""
        if not any(self.atomics.strides) and not self.atomics.flat[0]:
            return self.count
        return self.count + self.atomics

    @property
    def unwritten(self) -> int:
        unwritten = self.count == 0  # (not ``writes == 0``: no int32 temporary of C's size)
        if any(self.atomics.strides):  # recorded, not zero broadcast
            unwritten &= self.atomics == 0
        return int(np.count_nonzero(unwritten))

    @property
    def collision_mask(self) -> np.ndarray:
        """Elements stored by more than one thread, one of them with a plain
        store: the value left there depends on which thread came last.  (One
        thread storing an element several times, as ``C[i, j] += ...`` in a
        loop does, is not a collision.)"""
        return (self.count >= 1) & (self.min_writer != self.max_writer)

    @property
    def atomic_mask(self) -> np.ndarray:
        """Elements updated by more than one thread, every update atomic (no
        plain store): not a collision, since atomics lose no update, and drawn
        apart from the collisions that the same write counts would be."""
        if self.min_writer is self.max_writer or (
                not any(self.atomics.strides) and not self.atomics.flat[0]):
            # (none: equal writers, which read_back made one, or no atomic
            # update recorded; read it, never write into it)
            return np.broadcast_to(np.False_, self.count.shape)
        return (self.count == 0) & (self.min_writer != self.max_writer)

    @property
    def collided(self) -> int:
        if self.min_writer is self.max_writer:  # (equal: read_back made them one)
            return 0
        return int(np.count_nonzero(self.collision_mask))

    @property
    def oob_margin_total(self) -> int:
        """Out-of-bounds writes to the array, all of them counted in the margin."""
        return sum(int(strip.sum()) for strip in self.oob_margin)


@dataclass(frozen=True, eq=False)
class WriteMaps(_WriteFigures):
    """The write maps of an array a described kernel stores into besides its
    output, as the output's are kept (see the module's conventions), in the
    shape the array is drawn in (a 1-D array wrapped into rows: ``drawn``)."""

    name: str
    count: np.ndarray
    atomics: np.ndarray
    min_writer: np.ndarray
    max_writer: np.ndarray
    iteration: np.ndarray
    #: the array's stores by each thread (its iteration numbers count these)
    stores_per_thread: np.ndarray
    oob_margin: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    iterations: int = -1

    def __post_init__(self) -> None:
        if self.iterations < 0:
            object.__setattr__(self, "iterations",
                               int(self.iteration.max()) + 1 if self.iteration.size else 0)


@dataclass(frozen=True, eq=False)
class AccessMaps(_WriteFigures):
    """Everything the recording kernel found, in the shape of C."""

    count: np.ndarray
    atomics: np.ndarray
    min_writer: np.ndarray
    max_writer: np.ndarray
    iteration: np.ndarray
    stores_per_thread: np.ndarray
    oob_per_thread: np.ndarray
    #: read counts of each input, in the order of the plan's inputs (A, B)
    reads: tuple[np.ndarray, ...]
    out_of_bounds: tuple[OutOfBounds, ...]
    divisions_by_zero: tuple[DivisionByZero, ...] = ()
    #: where the out-of-bounds writes to C landed, in a band ``OOB_MARGIN``
    #: wide around it: (top, bottom, left, right), int32, shaped (W, N + 2W),
    #: (W, N + 2W), (M, W), (M, W) (see the module's conventions and
    #: ``margin_frame``); zeros where not recorded
    oob_margin: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = field(default=None)
    #: grid-stride iterations recorded (the highest iteration index + 1),
    #: found where the maps are made, off the GUI thread: the replay's
    #: slider needs it each time a result is shown, and a 4096 x 4096 map
    #: takes a busy machine tens of milliseconds to scan.  (-1: count them;
    #: ``dataclasses.replace`` carries the count over, so a stowed result's
    #: placeholder maps keep it.)
    iterations: int = -1
    #: the write maps of every other array the kernel stores into (a
    #: described kernel's), in parameter order
    written: tuple[WriteMaps, ...] = ()

    def __post_init__(self) -> None:
        if self.oob_margin is None:
            shape = self.count.shape if self.count.ndim == 2 else (1, self.count.size)
            object.__setattr__(self, "oob_margin", empty_margin(shape))
        if self.iterations < 0:
            object.__setattr__(self, "iterations",
                               int(self.iteration.max()) + 1 if self.iteration.size else 0)

    @property
    def reads_a(self) -> np.ndarray:
        return self.reads[0]

    @property
    def reads_b(self) -> np.ndarray:
        return self.reads[1]

    @property
    def oob_total(self) -> int:
        return sum(o.count for o in self.out_of_bounds)

    @property
    def threads_without_output(self) -> int:
        """Threads that stored no element of the output.  Not threads that did
        nothing: a reduction's threads add into shared memory, and one of
        each block stores its sum."""
        return int(np.count_nonzero(self.stores_per_thread == 0))

    @property
    def idle_threads(self) -> int:
        """The earlier name of :attr:`threads_without_output` (kept for
        callers of it; "idle" was read as "did no work")."""
        return self.threads_without_output


def read_back(raw: list[np.ndarray], matrix_shapes: tuple[tuple[int, ...], ...],
              slots: tuple[tuple[str, str, int], ...],
              division_sites: tuple[tuple[int, str], ...] = (),
              written: tuple[WrittenShape, ...] = ()) -> AccessMaps:
    """Turn raw recording arrays into :class:`AccessMaps`.

    ``matrix_shapes`` are the shapes of the inputs (A and B), then of the
    output C (rows, cols); flattened (1-D) arrays are reshaped to them.  ``slots`` gives (name, role, ndim) per slot;
    ``division_sites`` (line, text) per division site; ``written`` the
    other arrays the kernel stores into, whose records follow the reads.
    """
    oob, oob_min, oob_thread, oob_index = raw[OOB:OOB_INDEX + 1]
    divisions = tuple(
        DivisionByZero(line, text, int(raw[DIVZ][site]), int(raw[DIVZ_THREAD][site]))
        for site, (line, text) in enumerate(division_sites[:DIVISION_SITES])
        if raw[DIVZ][site])
    *input_shapes, shape_c = matrix_shapes
    reads = tuple(raw[READS + i].reshape(shape) for i, shape in enumerate(input_shapes))
    count, atomics, min_w, max_w, iteration = _writer_maps(raw, shape_c)
    others = tuple(_read_back_written(written_records(raw, len(input_shapes), index), other)
                   for index, other in enumerate(written, start=1))
    summaries = []
    for slot, (name, role, ndim) in enumerate(slots):
        for direction in (READ, WRITE):
            n = int(oob[slot, direction])
            if n == 0:
                continue
            thread = int(oob_min[slot, direction])
            index = tuple(int(x) for x in oob_index[slot, direction][:ndim])
            summaries.append(OutOfBounds(name, role, DIRECTIONS[direction], n, thread, index))
    return AccessMaps(
        count=count, atomics=atomics, min_writer=min_w,
        max_writer=max_w, iteration=iteration, stores_per_thread=raw[STORES],
        oob_per_thread=oob_thread, reads=reads, out_of_bounds=tuple(summaries),
        divisions_by_zero=divisions, oob_margin=margin_strips(raw[MARGIN], shape_c),
        written=others)


def _writer_maps(own, drawn: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Count, atomics, lowest and highest writer and iteration of one written
    array, from its records (``own``: indexed by ``WRITE_RECORDS``' numbers),
    in its ``drawn`` shape: the sentinels of "not written" turned into -1, in
    place (these maps can be hundreds of MB, and fresh pages are slow); an
    atomics map not recorded (one element) zero everywhere, without the
    memory."""
    min_w, iteration = own[MIN_WRITER], own[ITERATION]
    min_w[min_w == np.iinfo(min_w.dtype).max] = -1
    iteration[iteration == INT32_MAX] = -1
    count, atomics = own[COUNT], own[ATOMICS]
    atomics = atomics.reshape(drawn) if atomics.size == count.size \
        else np.broadcast_to(np.zeros((), atomics.dtype), drawn)
    lowest = min_w.reshape(drawn)
    highest = lowest if same_values(min_w, own[MAX_WRITER]) else own[MAX_WRITER].reshape(drawn)
    return count.reshape(drawn), atomics, lowest, highest, iteration.reshape(drawn)


#: Elements compared at a time by :func:`same_values` (its temporaries: 1 MB).
_SAME_PIECE = 1 << 20


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether ``a`` and ``b`` hold the same values, in pieces, stopping at
    the first that differs.  Where no element was stored by two threads (the
    kernels that work), the lowest and highest writer maps are equal, and
    one array then stands for both: half the writer maps to send from the
    child (64 MB for 4096 x 4096) and to map in the parent, whose
    collision count and maps.npz writer see at once that they are equal
    (they compared 128 MB each, with a 16 MB temporary)."""
    if a is b:
        return True
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    for start in range(0, flat_a.size, _SAME_PIECE):
        if not np.array_equal(flat_a[start:start + _SAME_PIECE],
                              flat_b[start:start + _SAME_PIECE]):
            return False
    return True


def _read_back_written(own: dict[int, np.ndarray], shape: WrittenShape) -> WriteMaps:
    """A written array's records (by ``WRITE_RECORDS`` index) as its maps."""
    return WriteMaps(shape.name, *_writer_maps(own, shape.drawn), own[STORES],
                     margin_strips(own[MARGIN], shape.drawn))


def margin_frame(maps: AccessMaps, shape_c: tuple[int, int]) -> np.ndarray:
    """The (M + 2W) x (N + 2W) int32 frame of ``maps.oob_margin`` around an
    M x N output: frame[r + W, c + W] counts the out-of-bounds writes to C
    that landed at row r, column c (clamped to the band); the interior, C
    itself, is zero.  For small and medium C: it is the whole frame."""
    m, n = (int(x) for x in shape_c)
    w = OOB_MARGIN
    top, bottom, left, right = maps.oob_margin
    frame = np.zeros((m + 2 * w, n + 2 * w), np.int32)
    frame[:w] = top
    frame[m + w:] = bottom
    frame[w:m + w, :w] = left
    frame[w:m + w, n + w:] = right
    return frame


def margin_at(maps: AccessMaps, shape_c: tuple[int, int], row: int, col: int) -> int:
    """``margin_frame(maps, shape_c)[row + W, col + W]`` read from its strip,
    without building the frame (a hover over the margin of a 4096 x 4096
    map built 67 MB at every mouse move); 0 inside C."""
    m, n = (int(x) for x in shape_c)
    w = OOB_MARGIN
    top, bottom, left, right = maps.oob_margin
    if row < 0:
        return int(top[row + w, col + w])
    if row >= m:
        return int(bottom[row - m, col + w])
    if col < 0:
        return int(left[row, col + w])
    if col >= n:
        return int(right[row, col - n])
    return 0
