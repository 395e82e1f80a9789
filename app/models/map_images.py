"""What each heatmap shows, computed from a run result (numpy only, no Qt).

Every map is a 2-D image plus how to colour it and a legend.  Maps of C have
C's shape (row 0 at the top).  Maps of the grid's threads put one warp per
row and its 32 lanes across: row = block * warps_per_block + warp, so the
rows of one block are together; lanes past the end of a block are blank.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from kernels import (
    COUNT_COLOURS,
    OOB_MARGIN,
    RunResult,
    ThreadMapError,
    counted,
    diff_category_names,
    diff_runs,
    drawn_shape,
    margin_at,
    margin_frame,
)

WARP = 32
#: Categorical palette for thread / block / warp ids (20 colours, neighbours distinct).
PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2",
    "#dbdb8d", "#9edae5", "#7f7f7f", "#393b79",
)
#: Hues of the warp-lane writer colouring: one per warp of a full block, so
#: 32 warps tell apart (warp ids mod 10 made warps 0, 10, 20 and 30 alike).
#: tab10's first nine, then 23 picked one by one (from 810 HSV colours) as far
#: as possible (CIE76 in Lab) from every colour picked before, measured on
#: the lane ramps as drawn (lane 0, 16 and 31): lane 16 of no two warps
#: closer than 15 (tests/test_colours.py).
WARP_PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
    "#17becf", "#1313bf", "#e617e6", "#17e6ae", "#e6b873", "#990f50", "#7f994c", "#e617a1",
    "#0f3499", "#740f99", "#99500f", "#50e645", "#997d0f", "#0f9962", "#91e673", "#7abf13",
    "#73b8e6", "#bf6079", "#174ee6", "#4c8a99", "#bf1341", "#e67045", "#99804c", "#99220f",
)
WARP_HUES = len(WARP_PALETTE)
# The count colours: one source, shared with the engine's report thumbnails.
MISSING_COLOUR, ONCE_COLOUR, MANY_COLOURS = COUNT_COLOURS


@dataclass(frozen=True)
class Colouring:
    """How to colour a map: ``kind`` is "count", "categorical", "zero" (0 is
    special, the rest a gradient) or "sequential"; ``top`` is the largest value."""

    kind: str
    top: float
    bottom: float = 0.0


@dataclass(frozen=True, eq=False)
class MapImage:
    """One heatmap ready to draw."""

    name: str
    title: str
    data: np.ndarray
    colouring: Colouring
    legend: str
    x_label: str
    y_label: str
    #: "C", an input's name (its reads), "written" (another array the
    #: kernel stores into: ``context`` holds its maps), "threads", "warps" or
    #: "diff": what a pixel is
    domain: str
    #: what hover needs beyond the result (the site, the other run of a diff)
    context: object = None
    #: cells of an out-of-bounds margin on each side of C (data[m, m] is C[0, 0])
    margin: int = 0
    #: a 3-D array's (d0, d1): its d0 slices of d1 rows drawn stacked
    #: (``drawn_shape``), which the view shows one at a time; None otherwise
    slices: tuple[int, int] | None = None
    #: the colour bar's name of the margin's colour: the array written outside
    outside_label: str = "outside C"

    @property
    def levels(self) -> tuple[float, float]:
        c = self.colouring
        if c.kind == "count":  # see count_scale; -1 stored again by one thread, -2 outside
            return (-3.5, 3.0)  # C, -3 updated atomically by several threads
        if c.kind == "categorical":  # -1 never written, -2 outside C
            return (-2.5, len(PALETTE) - 0.5)
        if c.kind == "warp-lane":
            return (-2.5, c.top + 0.5)
        if c.kind == "zero":
            return (-0.5, max(c.top, 1) + 0.5)
        if c.kind == "diff":
            return (-0.5, 3.5)
        return (c.bottom, c.top if c.top > c.bottom else c.bottom + 1)


#: name -> (menu label, description)
MAP_CHOICES = {
    "count": ("Write count", "how many times each element of C was stored"),
    "writer": ("Writer", "which thread, block or warp stored each element (lowest id)"),
    "iteration": ("Grid-stride iteration", "the writing thread's store number"),
    "error": ("Error vs reference", "|C - reference| for each element"),
    "oob": ("Out-of-bounds per thread", "out-of-bounds accesses of each thread"),
    "stores": ("Stores per thread", "elements each thread stored (load balance)"),
    "reads_a": ("Reads of A", "how many times each element of A was read"),
    "reads_b": ("Reads of B", "how many times each element of B was read"),
}
WRITER_KINDS = ("thread", "block", "warp")
#: The maps each array a kernel stores into besides its output has too, named
#: "<map>:<array>" (``written_map_name``), with their menu labels.
WRITTEN_MAPS = {"count": "Write count of {}", "writer": "Writer of {}",
                "iteration": "Grid-stride iteration of {}"}


def written_map_name(map_name: str, array: str) -> str:
    """The name of map ``map_name`` of written array ``array``."""
    return f"{map_name}:{array}"


def written_map_names(result: RunResult) -> list[str]:
    """The maps of the arrays ``result``'s kernel stores into besides its output."""
    return [written_map_name(map_name, written.name) for written in result.maps.written
            for map_name in WRITTEN_MAPS]


def written_of(result: RunResult, array: str):
    """The write maps of array ``array`` (not the output) of ``result``."""
    for written in result.maps.written:
        if written.name == array:
            return written
    raise ThreadMapError(f"this run stores into no array {array!r} besides its output")


def map_label(map_name: str, result: RunResult | None = None) -> str:
    """The menu label of a map of the run (not of its analysis); ``result``
    tells a described kernel's arrays (its ``a``) from a matmul's A."""
    base, _, array = map_name.partition(":")
    if array:
        return WRITTEN_MAPS[base].format(array)
    if map_name.startswith("reads_"):
        return f"Reads of {read_array_name(map_name, result)}"
    return MAP_CHOICES[map_name][0]
#: Maps that need more than a run (shown from the analysis panel).
ANALYSIS_MAPS = {
    "sectors": "Sectors per warp request",
    "ways": "Bank conflicts per warp request",
    "lanes": "Active lanes per branch",
    "replay": "Replay of grid-stride iterations",
    "diff": "Difference of two runs",
}
DIFF_COLOURS = ("#e0e0e0", "#fdd835", "#fb8c00", "#c62828")


@dataclass(frozen=True)
class ThreadId:
    """A global thread id decoded into the launch's coordinates."""

    gtid: int
    block: int
    thread: int
    warp: int
    block_xy: tuple[int, int]
    thread_xy: tuple[int, int]

    def describe(self) -> str:
        bx, by = self.block_xy
        tx, ty = self.thread_xy
        return (f"thread {self.gtid} = block {self.block} ({bx},{by}), thread {self.thread} "
                f"({tx},{ty}), warp {self.warp}")


def decode_thread(result: RunResult, gtid: int) -> ThreadId:
    request = result.request
    tpb = request.threads_per_block
    gdx, _ = request.grid2
    bdx, _ = request.block2
    block, thread = divmod(int(gtid), tpb)
    return ThreadId(int(gtid), block, thread, thread // WARP, (block % gdx, block // gdx),
                    (thread % bdx, thread // bdx))


def writer_ids(result: RunResult, kind: str, writers: np.ndarray | None = None) -> np.ndarray:
    """Writer thread ids turned into thread / block / global warp ids (-1 stays)."""
    writers = result.maps.min_writer if writers is None else writers
    request = result.request
    tpb = request.threads_per_block
    if kind == "thread":
        return writers
    if kind == "warp" and tpb % WARP == 0:
        # Whole warps per block: the global warp is the thread id over 32, and
        # an arithmetic shift keeps -1 (none) as -1. (The general form below
        # takes ~0.5 s at 4096^2.)
        return np.right_shift(writers, 5)
    block = np.where(writers >= 0, writers // tpb, -1)
    if kind == "block":
        return block
    if kind == "warp":
        warps_per_block = -(-tpb // WARP)
        return np.where(writers >= 0, block * warps_per_block + (writers % tpb) // WARP, -1)
    raise ValueError(f"unknown writer kind {kind!r}")


def thread_layout(result: RunResult, per_thread: np.ndarray) -> np.ndarray:
    """Per-thread values as a (warps, 32) image, one warp per row (NaN padding)."""
    request = result.request
    tpb = request.threads_per_block
    warps_per_block = -(-tpb // WARP)
    image = np.full((request.blocks * warps_per_block, WARP), np.nan)
    values = per_thread.astype(np.float64).reshape(request.blocks, tpb)
    padded = np.full((request.blocks, warps_per_block * WARP), np.nan)
    padded[:, :tpb] = values
    image[:] = padded.reshape(request.blocks * warps_per_block, WARP)
    return image


def thread_at(result: RunResult, row: int, lane: int) -> int | None:
    """Global thread id at a pixel of a thread map (None on padding)."""
    tpb = result.request.threads_per_block
    warps_per_block = -(-tpb // WARP)
    block, warp = divmod(row, warps_per_block)
    thread = warp * WARP + lane
    if not (0 <= block < result.request.blocks and 0 <= lane < WARP and thread < tpb):
        return None
    return block * tpb + thread


def count_scale(counts: np.ndarray, top: float) -> np.ndarray:
    """Write counts as drawn: 0 and 1 as themselves, 2 to ``top`` on a log
    scale from 2 to 3.  So "never written", "once" and "more than once" keep
    bands of their own however large the maximum (1,024 writes of one element
    made the 0 and 1 bands slivers on a linear scale)."""
    shown = counts.astype(np.float64)
    many = counts >= 2
    if top > 2:
        shown[many] = 2 + np.log(counts[many] / 2) / np.log(top / 2)
    return shown


#: Where count_scale's map puts an element stored more than once, every time
#: by the same thread: a band of its own below "never written".
REPEATED = -1.0
#: Where it puts an element updated by several threads, every update atomic
#: (``AccessMaps.atomic_mask``): no collision, a band of its own, lowest.
ATOMIC = -3.0
#: The legend's words for that band, said where a run made atomic updates.
ATOMIC_LEGEND = "; lavender = updated atomically by several threads (no update is lost: no collision)"
#: Where the count and writer maps put a cell of the margin around C where
#: out-of-bounds writes landed (a band of its own, below the others).
OUTSIDE = -2.0
OUTSIDE_LEGEND = ("; magenta, around C = writes outside C landed there (the margin "
                  "holds {m} rows and columns a side; farther ones count at its edge)")


def with_margin(result: RunResult, data: np.ndarray, maps=None) -> tuple[np.ndarray, int]:
    """``data`` (a map of C, or of the written array whose ``maps`` are
    given) framed by the margin where writes outside it landed: its cells
    OUTSIDE where some did, NaN (blank) elsewhere.  The map as it is, margin
    0, when no write left it."""
    maps = result.maps if maps is None else maps
    strips = getattr(maps, "oob_margin", None)
    if strips is None or not any(np.any(strip) for strip in strips):
        return data, 0
    frame = margin_frame(maps, data.shape)
    m = OOB_MARGIN
    framed = np.where(frame > 0, OUTSIDE, np.nan).astype(data.dtype if data.dtype.kind == "f"
                                                         else np.float64)
    framed[m:m + data.shape[0], m:m + data.shape[1]] = data
    return framed, m


def _atomic_band(data: np.ndarray, maps) -> bool:
    """Put the elements of ``maps`` updated atomically by several threads in
    their band of ``data`` (a count map); whether there were any."""
    atomic = maps.atomic_mask
    if not atomic.size or (not any(atomic.strides) and not atomic.flat[0]):  # (none recorded)
        return False
    data[atomic] = ATOMIC
    return bool(atomic.any())


def repeated_by_one_thread(result: RunResult, maps=None) -> np.ndarray:
    """Elements stored more than once, all of the stores by one thread (of C,
    or of the written array whose ``maps`` are given)."""
    maps = result.maps if maps is None else maps
    return (maps.writes >= 2) & (maps.min_writer == maps.max_writer) & (maps.min_writer >= 0)


def count_of_scale(position: float, top: float) -> float:
    """The write count drawn at ``position`` of :func:`count_scale`."""
    if position <= 2 or top <= 2:
        return position
    return 2 * (top / 2) ** (position - 2)


def described_shape(result: RunResult, array: str) -> tuple[int, ...]:
    """The shape ``array`` was described with (() for a matmul's)."""
    return next((tuple(a.shape) for a in result.request.arguments
                 if getattr(a, "name", None) == array and hasattr(a, "shape")), ())


def element_text(result: RunResult, array: str, row: int, col: int, width: int) -> str:
    """The element at (row, col) of ``array``'s drawn map, in the kernel's own
    indices: a 1-D array's [row x width + col], a 3-D array's [slice, row
    within it, col] (its slices stacked: ``drawn_shape``)."""
    shape = described_shape(result, array)
    if len(shape) == 1:
        return f"{array}[{row * width + col}]"
    if len(shape) == 3:
        return f"{array}[{row // shape[1]}, {row % shape[1]}, {col}]"
    return f"{array}[{row}, {col}]"


def _sliced(result: RunResult, image: MapImage, array: str) -> MapImage:
    """``image`` of ``array``, told its slices where ``array`` is 3-D."""
    shape = described_shape(result, array)
    if len(shape) != 3:
        return image
    return dataclasses.replace(
        image, slices=(shape[0], shape[1]),
        legend=f"{image.legend}; {array} is 3-D: its {shape[0]:,} slices of {shape[1]:,} x "
               f"{shape[2]:,} stacked, row r of the map is {array}[r // {shape[1]}, "
               f"r % {shape[1]}, :] (the app's Slice shows one at a time)",
        y_label=f"slice x {shape[1]} + row of {array}")


def output_labels(result: RunResult, array: str | None = None,
                  width: int | None = None) -> tuple[str, str]:
    """The map's axes: C's columns and rows, or a described run's output (or
    its written ``array``, drawn ``width`` a row) by its name (a 1-D array
    drawn wrapped: its index is row x width + column)."""
    if not result.request.arguments:
        return ("column of C", "row of C")
    array = result.output if array is None else array
    width = result.c.shape[1] if width is None else width
    shape = next((a.shape for a in result.request.arguments
                  if getattr(a, "name", None) == array), ())
    if len(shape) == 1:
        return (f"{array}[row x {width} + column]: column",
                f"row (of {width} elements of {array})")
    return (f"column of {array}", f"row of {array}")


def make_map(result: RunResult, name: str, writer_kind: str = "thread",
             shared_top: float | None = None) -> MapImage:
    """The image for map ``name`` of ``result``.  ``shared_top`` puts several
    maps (a sweep) on one colour scale.  A 3-D array's map is told its
    slices (``MapImage.slices``)."""
    image = _make_map(result, name, writer_kind, shared_top)
    if not result.request.arguments:
        return image
    array = {"C": result.output, "written": name.partition(":")[2]}.get(image.domain,
                                                                        image.domain)
    # (the count bar names the band outside the array whatever the run: its
    # name, never C's, also where no write landed outside it)
    image = dataclasses.replace(image, outside_label=f"outside {array}")
    if image.margin:
        image = dataclasses.replace(
            image, legend=image.legend.replace("outside C", f"outside {array}")
            .replace("around C", f"around {array}"))
    return _sliced(result, image, array)


def _accumulate_example(result: RunResult) -> str:
    """``C[i, j] +=`` in the output's own name and rank (a vector add's is
    ``out[i] +=``)."""
    ndim = next((len(a.shape) for a in result.request.arguments
                 if getattr(a, "name", None) == result.output and hasattr(a, "shape")), 2)
    index = ", ".join("ijk"[:min(max(1, ndim), 3)])
    return f"{result.output}[{index}] +="


def _make_map(result: RunResult, name: str, writer_kind: str,
              shared_top: float | None) -> MapImage:
    maps = result.maps
    c_labels = output_labels(result)
    base, _, array = name.partition(":")
    if array:
        return _written_map(result, base, array, writer_kind, shared_top)
    if name == "count":
        top = float(shared_top if shared_top is not None else max(int(maps.writes.max()), 1))
        data = count_scale(maps.writes, top)
        data[repeated_by_one_thread(result)] = REPEATED
        atomic = _atomic_band(data, maps)
        data, margin = with_margin(result, data)
        return MapImage(name, "Write count", data, Colouring("count", top),
                        "black = never written, green = written once, blue = stored more than "
                        f"once by one thread ({_accumulate_example(result)} in a loop: no "
                        "collision), orange to dark "
                        "red = written more than once by several threads (a collision)"
                        + (ATOMIC_LEGEND if atomic else "")
                        + (OUTSIDE_LEGEND.format(m=margin) if margin else ""),
                        *c_labels, "C", margin=margin)
    if name == "writer" and writer_kind == "thread" and \
            result.request.total_threads > len(PALETTE):
        # Thread ids mod 20 made a moire at 1,024 threads: hue by warp, shade by
        # lane, so a warp reads as one colour and its lanes as a ramp.
        ids = result.maps.min_writer
        # In place on one int32 and one float32 array: 16M elements at 4096^2.
        shade = np.right_shift(ids, 5)  # the warp (WARP = 32)
        np.remainder(shade, WARP_HUES, out=shade)
        np.left_shift(shade, 5, out=shade)
        shade += ids & (WARP - 1)  # + the lane
        data = shade.astype(np.float32)
        data[ids < 0] = -1
        data, margin = with_margin(result, data)
        return MapImage(name, "Writer (thread, lowest writer)", data,
                        Colouring("warp-lane", WARP_HUES * WARP - 1),
                        f"hue = warp (w = global warp id mod {WARP_HUES}: the {WARP_HUES} warps "
                        "of a block apart), light to dark = lane 0 to 31 in it; black = never "
                        "written (hover for the thread)"
                        + (OUTSIDE_LEGEND.format(m=margin) if margin else ""),
                        *c_labels, "C", margin=margin)
    if name == "writer":
        ids = writer_ids(result, writer_kind)
        data = np.where(ids >= 0, ids % len(PALETTE), -1).astype(np.float64)
        data, margin = with_margin(result, data)
        return MapImage(name, f"Writer ({writer_kind} id, lowest writer)", data,
                        Colouring("categorical", len(PALETTE) - 1),
                        f"colour = {writer_kind} id mod {len(PALETTE)}; black = never written"
                        + (OUTSIDE_LEGEND.format(m=margin) if margin else ""),
                        *c_labels, "C", margin=margin)
    if name == "iteration":
        data = np.where(maps.iteration >= 0, maps.iteration, np.nan).astype(np.float64)
        top = float(shared_top if shared_top is not None else np.nanmax(data, initial=0))
        return MapImage(name, "Grid-stride iteration", data, Colouring("sequential", top),
                        "colour = how many stores the writing thread had made before; "
                        "blank = never written", *c_labels, "C")
    if name == "error":
        if result.reference.size != result.c.size:  # (a run as it is, without a reference)
            raise ThreadMapError(f"no reference to compare with: "
                                 f"{result.verdict.reference_note or 'none given'}")
        error = np.abs(result.c.astype(np.float64) - result.reference)
        if result.c.dtype.kind in "iu":
            # an integer output cannot hold NaN: its never-written elements
            # hold the poison, blank here as a float's NaN is
            written = result.maps.count.reshape(error.shape) > 0
            if result.maps.atomics.size == error.size:
                written |= result.maps.atomics.reshape(error.shape) > 0
            error[~written] = np.nan
        top = float(np.nanmax(error, initial=0)) if np.isfinite(error).any() else 1.0
        return MapImage(name, "|C - reference|", error, Colouring("sequential", top),
                        "colour = absolute error; blank = not a number (never written)",
                        *c_labels, "C")
    if name in ("oob", "stores"):
        per_thread = maps.oob_per_thread if name == "oob" else maps.stores_per_thread
        data = thread_layout(result, per_thread)
        top = float(shared_top if shared_top is not None else max(per_thread.max(initial=0), 1))
        legend = ("black = no out-of-bounds access; colour = how many" if name == "oob"
                  else "black = a thread that stored no output; colour = elements stored")
        return MapImage(name, MAP_CHOICES[name][0], data, Colouring("zero", top), legend,
                        "lane (thread within the warp)", "warp (block by block)", "threads")
    if name.startswith("reads_"):
        reads = read_counts(result, name)
        which = read_array_name(name, result)
        top = float(max(reads.max(initial=0), 1))
        own = own_shape(result, which, reads.shape)
        width = reads.shape[1]
        wrapped = f" ({reads.size:,} elements drawn {width:,} a row)" if len(own) == 1 else ""
        axes = (f"{which}[row x {width} + column]: column",
                f"row (of {width} elements of {which})") if len(own) == 1 else \
            (f"column of {which}", f"row of {which}")
        return MapImage(name, f"Reads of {which}", reads.astype(np.float64),
                        Colouring("zero", top), f"black = never read; colour = reads{wrapped}",
                        *axes, which)
    raise ValueError(f"unknown map {name!r}")


def _written_map(result: RunResult, base: str, array: str, writer_kind: str,
                 shared_top: float | None) -> MapImage:
    """Map ``base`` (count, writer or iteration) of ``array``, an array the
    kernel stores into besides its output: drawn as the output's are."""
    if base not in WRITTEN_MAPS:
        raise ValueError(f"unknown map {base}:{array}; an array's maps: "
                         f"{', '.join(WRITTEN_MAPS)}")
    maps = written_of(result, array)
    name = written_map_name(base, array)
    title = WRITTEN_MAPS[base].format(array)
    labels = output_labels(result, array, maps.count.shape[1])
    width = maps.count.shape[1]
    flat = next((len(a.shape) == 1 for a in result.request.arguments
                 if getattr(a, "name", None) == array), False)
    drawn = f" ({maps.count.size:,} elements drawn {width:,} a row)" if flat else ""
    if base == "count":
        top = float(shared_top if shared_top is not None else max(int(maps.writes.max()), 1))
        data = count_scale(maps.writes, top)
        data[repeated_by_one_thread(result, maps)] = REPEATED
        atomic = _atomic_band(data, maps)
        data, margin = with_margin(result, data, maps)
        legend = ("black = never written, green = written once, blue = stored more than once "
                  "by one thread, orange to dark red = written by several threads (a race: "
                  "the value depends on which came last)")
        return MapImage(name, title, data, Colouring("count", top),
                        legend + (ATOMIC_LEGEND if atomic else "") + drawn
                        + (OUTSIDE_LEGEND.format(m=margin) if margin else ""),
                        *labels, "written", context=maps, margin=margin)
    if base == "writer":
        ids = writer_ids(result, writer_kind, maps.min_writer)
        data = np.where(ids >= 0, ids % len(PALETTE), -1).astype(np.float64)
        data, margin = with_margin(result, data, maps)
        return MapImage(name, f"{title} ({writer_kind} id, lowest writer)", data,
                        Colouring("categorical", len(PALETTE) - 1),
                        f"colour = {writer_kind} id mod {len(PALETTE)}; black = never written"
                        + drawn, *labels, "written", context=maps, margin=margin)
    data = np.where(maps.iteration >= 0, maps.iteration, np.nan).astype(np.float64)
    top = float(shared_top if shared_top is not None else np.nanmax(data, initial=0))
    return MapImage(name, title, data, Colouring("sequential", top),
                    f"colour = how many stores to {array} the writing thread had made before; "
                    f"blank = never written" + drawn, *labels, "written", context=maps)


def _written_hover(result: RunResult, image: MapImage, row: int, col: int) -> str:
    """Hover text of a written array's map (``image.context``: its maps)."""
    maps = image.context
    rows, width = maps.count.shape
    if not (0 <= row < rows and 0 <= col < width):
        landed = margin_at(maps, maps.count.shape, row, col)
        return (f"outside {maps.name}: {counted(landed, 'out-of-bounds write')} landed here"
                if landed else f"outside {maps.name}: no write landed here")
    element = element_text(result, maps.name, row, col, width)
    count = int(maps.count[row, col])
    atomic = int(maps.atomics[row, col])
    lines = [f"{element}: stored {count} time{'s' if count != 1 else ''}"
             + (f" (+{atomic} atomic)" if atomic else "")]
    if count + atomic:
        low = decode_thread(result, int(maps.min_writer[row, col]))
        high = decode_thread(result, int(maps.max_writer[row, col]))
        if low.gtid == high.gtid:
            lines.append(f"writer: {low.describe()}")
        else:
            lines.append(f"writers: lowest {low.describe()}")
            lines.append(f"         highest {high.describe()}")
        lines.append(f"iteration: {int(maps.iteration[row, col])}")
    else:
        lines.append("never written")
    return "\n".join(lines)


@dataclass(frozen=True)
class WarpFigure:
    """What a per-warp map shows: one site's figure, warp by warp."""

    kind: str  # "sectors", "ways" or "lanes"
    label: str  # the site, as the tables name it
    unit: str  # "sectors", "passes" or "active lanes"
    ideal: float | None


def warp_map(result: RunResult, kind: str, index: int) -> MapImage:
    """One site's figure per warp, from the lockstep emulation: mean sectors
    per request ("sectors", global access site ``index`` of the coalescing
    table), mean passes ("ways", shared site of the bank-conflict table) or
    mean lanes taking a branch ("lanes").  Rows are blocks, columns the warps
    of a block."""
    analysis = result.analysis
    if kind == "sectors":
        site = analysis.coalescing[index]
        figure = WarpFigure(kind, site.site.label(), "sectors", site.ideal_sectors)
        top, bottom = max(32.0, float(np.nanmax(site.per_warp, initial=1))), 1.0
        legend = (f"colour = mean distinct 32-byte sectors of each warp's requests (ideal "
                  f"{site.ideal_sectors:.3g} for {site.element_bytes}-byte elements; 1 = all lanes "
                  "on one element)")
        data = site.per_warp
    elif kind == "ways":
        site = analysis.bank_conflicts[index]
        figure = WarpFigure(kind, site.site.label(), "passes", site.ideal_ways)
        top, bottom = max(8.0, float(np.nanmax(site.per_warp, initial=1))), 1.0
        legend = (f"colour = mean passes of each warp's shared-memory requests (1 = no bank "
                  f"conflict{'; 2 for 8-byte elements' if site.element_bytes == 8 else ''}; n = "
                  "n-way conflict)")
        data = site.per_warp
    elif kind == "lanes":
        branch = analysis.divergence[index]
        figure = WarpFigure(kind, f"line {branch.branch.line}: {branch.branch.text}",
                            "active lanes", None)
        top, bottom = 32.0, 0.0
        legend = ("colour = mean lanes of each warp that took the branch when it did "
                  "(32 = the whole warp; fewer = divergence); blank = no lane of the warp "
                  "took it")
        data = branch.per_warp
    else:
        raise ValueError(f"unknown per-warp map {kind!r}")
    return MapImage(kind, f"{ANALYSIS_MAPS[kind]}: {figure.label}", data.astype(np.float64),
                    Colouring("sequential", top, bottom),
                    legend if kind == "lanes" else legend + "; blank = the warp never got there",
                    "warp within the block", "block", "warps", context=figure)


def replay_map(result: RunResult, iteration: int) -> MapImage:
    """Which warp writes each element at one grid-stride iteration; earlier
    iterations in black, elements still to come blank."""
    maps = result.maps
    data = np.full(maps.iteration.shape, np.nan, np.float32)
    data[(maps.iteration >= 0) & (maps.iteration < iteration)] = -1
    now = maps.iteration == iteration
    # The writer map's warp hues (warp id mod 32, the middle of each lane
    # ramp): one warp, one colour on both ("mod 32" there, "mod 20" here).
    warps = writer_ids(result, "warp", maps.min_writer[now]) % WARP_HUES
    data[now] = warps * WARP + WARP // 2
    written = int(np.count_nonzero(now))
    return MapImage("replay", f"Iteration {iteration}: {counted(written, 'element')} written",
                    data, Colouring("warp-lane", WARP_HUES * WARP - 1),
                    f"hue = warp writing the element at iteration {iteration} (global warp id "
                    f"mod {WARP_HUES}, as on the Writer map); black = written at an earlier "
                    "iteration; blank = not yet", "column of C", "row of C", "C",
                    context=iteration)


def diff_map(first: RunResult, second: RunResult) -> MapImage:

    diff = diff_runs(first, second)
    return MapImage("diff", "Difference of two runs", diff.category.astype(np.float64),
                    Colouring("diff", 3),
                    "grey = same, yellow = value changed, orange = writer changed, red = write "
                    f"count changed. {diff.summary()}", "column of C", "row of C", "diff",
                    context=(second, diff))


def _writes_at(maps, row: int, col: int) -> int:
    """Stores and atomic updates of one element (``maps.writes`` adds the two
    whole maps: 67 MB at 4096 x 4096, at every mouse move)."""
    return int(maps.count[row, col]) + int(maps.atomics[row, col])


def hover_text(result: RunResult, image: MapImage, row: int, col: int) -> str | None:
    """What to say about the cell (row, col) of ``image``, in its own
    indices (C's, where the map has a margin: negative or past C there);
    None outside it."""
    m = image.margin
    if not (-m <= row < image.data.shape[0] - m and -m <= col < image.data.shape[1] - m):
        return None
    maps = result.maps
    if image.domain == "written":
        return _written_hover(result, image, row, col)
    if image.domain == "C" and m and not (0 <= row < maps.count.shape[0]
                                          and 0 <= col < maps.count.shape[1]):
        landed = margin_at(maps, maps.count.shape, row, col)
        edge = " or beyond (the margin's edge)" if row in (-m, maps.count.shape[0] + m - 1) \
            or col in (-m, maps.count.shape[1] + m - 1) else ""
        outside = f"outside {result.output if result.request.arguments else 'C'}"
        return (f"{outside}, at [{row}, {col}]{edge}: "
                f"{counted(landed, 'out-of-bounds write')} landed here" if landed
                else f"{outside}, at [{row}, {col}]: no write landed here")
    if image.domain == "C":
        count = int(maps.count[row, col])
        element = element_text(result, result.output, row, col, maps.count.shape[1]) \
            if result.request.arguments else f"C[{row}, {col}]"
        lines = [f"{element}: stored {count} time{'s' if count != 1 else ''}"
                 + (f" (+{int(maps.atomics[row, col])} atomic)" if maps.atomics[row, col] else "")]
        if _writes_at(maps, row, col):
            low = decode_thread(result, int(maps.min_writer[row, col]))
            high = decode_thread(result, int(maps.max_writer[row, col]))
            if low.gtid == high.gtid:
                lines.append(f"writer: {low.describe()}")
                lines.append(f"iteration: {int(maps.iteration[row, col])}")
            else:
                lines.append(f"writers: lowest {low.describe()}")
                lines.append(f"         highest {high.describe()}  "
                             + ("(collision)" if count else "(atomic updates: no collision)"))
                lines.append(f"iteration: {int(maps.iteration[row, col])} (the lowest over "
                             "its writers' stores)")
        else:
            lines.append("never written")
        value = f"{result.output if result.request.arguments else 'C'} = {result.c[row, col]:.7g}"
        if result.reference.shape == result.c.shape:  # (none for a run without a reference)
            value += f"   reference = {result.reference[row, col]:.7g}"
        lines.append(value)
        return "\n".join(lines)
    if image.domain == "warps":
        figure = image.context
        value = image.data[row, col]
        where = f"block {row}, warp {col}"
        if np.isnan(value):
            if figure.unit == "active lanes":  # (it may have reached the branch)
                return f"{where}: no lane of it went on into the branch"
            return f"{where}: never got there"
        ideal = f" (ideal {figure.ideal:.3g})" if figure.ideal is not None else ""
        return f"{where}: {value:.3g} {figure.unit} per request{ideal}"
    if image.domain == "diff":
        second, diff = image.context
        CATEGORY_NAMES = diff_category_names()
        a, b = result.maps, second.maps
        return (f"C[{row}, {col}]: {CATEGORY_NAMES[int(diff.category[row, col])]}\n"
                f"first:  stored {_writes_at(a, row, col)}x, writers {int(a.min_writer[row, col])}"
                f"..{int(a.max_writer[row, col])}, C = {result.c[row, col]:.7g}\n"
                f"second: stored {_writes_at(b, row, col)}x, writers {int(b.min_writer[row, col])}"
                f"..{int(b.max_writer[row, col])}, C = {second.c[row, col]:.7g}")
    if image.domain == "threads":
        gtid = thread_at(result, row, col)
        if gtid is None:
            return None
        thread = decode_thread(result, gtid)
        return (f"{thread.describe()}\nstores: {int(maps.stores_per_thread[gtid])}   "
                f"out-of-bounds accesses: {int(maps.oob_per_thread[gtid])}")
    reads = read_counts(result, image.name)
    own = own_shape(result, image.domain, reads.shape)
    if len(own) == 1:  # (a 1-D array is drawn in rows, a 3-D one by slices)
        element = f"{image.domain}[{row * reads.shape[1] + col}]"
    elif len(own) == 3:
        element = f"{image.domain}[{row // own[1]}, {row % own[1]}, {col}]"
    else:
        element = f"{image.domain}[{row}, {col}]"
    return f"{element}: read {int(reads[row, col])} times"


def read_array_name(map_name: str, result: RunResult | None = None) -> str:
    """The array a read map counts: A or B for a matmul, else its own name
    (a described kernel's array ``a`` is ``a``: told by ``result``)."""
    which = map_name[len("reads_"):]
    described = result is not None and bool(result.request.arguments)
    return which.upper() if map_name in ("reads_a", "reads_b") and not described else which


def own_shape(result: RunResult, array: str, drawn: tuple[int, ...]) -> tuple[int, ...]:
    """``array``'s own shape (a described one's), where its maps have the
    shape it is drawn in; ``drawn`` for a matmul's A and B."""
    described = result.array_shapes().get(array)
    return tuple(described["shape"]) if described else tuple(drawn)


def read_counts(result: RunResult, map_name: str) -> np.ndarray:
    """A read map as drawn: 2-D, a 1-D array wrapped into rows as its output's is."""
    reads = result.read_maps().get(map_name)
    if reads is None:
        raise ThreadMapError(f"this run reads no array {read_array_name(map_name, result)}")
    if reads.ndim != 2:
        reads = reads.reshape(drawn_shape(reads.shape))
    return reads

