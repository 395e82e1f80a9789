"""Source text of the helpers the derived kernels call for every array access.

Plain helpers (``_tm_ld2``, ``_tm_st2``, ``_tm_atadd2``) only check bounds:
an out-of-bounds access is skipped (a read gives 0).  Recording helpers are
named ``_tm_<op><ndim>_<role>`` (see ``transform.AccessRewriter``):

* ``in``: an input (A, B): reads are counted per element;
* ``out``: the output (C): stores and atomic updates are recorded (count,
  lowest and highest writer, the writer's store number); an out-of-bounds
  one is also counted where it landed, in the margin around C
  (``_tm_margin<ndim>``);
* ``sh`` / ``lc``: a shared / local array: checked.

Every recording helper tallies out-of-bounds accesses per array, direction and
thread.  On the CPU (the lockstep emulation) each access to global or shared
memory also notes its lane's offset for the warp request it belongs to, and
each shared access updates the array's shadow for the race and
uninitialised-read checks.  ``records.py`` lists the arrays these fill.
"""
from __future__ import annotations

from ..records import OOB_MARGIN
from ..sources.plan import RECORDED_ATOMICS

#: Roles of a recording helper and what the CPU ones note for the warp request.
ROLES = ("in", "out", "sh", "lc")


def helper_library(target: str, mode: str,
                   atomics: tuple[str, ...] = RECORDED_ATOMICS, races: bool = False,
                   ranks: tuple[int, ...] = (1, 2)) -> str:
    """Source of the helpers for ``target`` ("cuda" or "cpu") and ``mode``
    ("record" or "plain"), with those of the atomic updates ``atomics`` only
    (each is a numba function to create when the module loads: 12 updates x
    2 ranks x 5 roles cost a warm run ~20 ms); ``races``: also the CPU
    helpers of global arrays checked for races (``_tm_<op><ndim>_<role>r``,
    transform.race_checked_arrays); ``ranks``: the numbers of indices they
    take (3 only for a kernel with a 3-D array, rare: each rank's helpers
    are ~80 functions to create)."""
    if target == "cuda":
        decorator = '@_tm_cuda.jit(device=True, inline="always")'
    else:
        decorator = "@_tm_njit(**_TM_OPTS)"
    out: list[str] = []

    def emit(text: str) -> None:
        out.append(decorator + "\n" + text.strip("\n") + "\n")

    if mode == "plain":
        for nd in ranks:
            _plain_helpers(emit, target, nd, atomics)
        return "\n\n".join(out)
    out.append(_oob_hit(target, decorator))
    out.append(_margin_hit(target, decorator))
    if target == "cpu":
        out.append(CPU_RECORD_LIBRARY)
    for nd in ranks:
        for role in ROLES:
            _record_helpers(emit, target, nd, role, atomics)
            if races and target == "cpu" and role in ("in", "out"):
                _record_helpers(emit, target, nd, role, atomics, races=True)
    out.append(_division_helpers(target, decorator))
    return "\n\n".join(out)


def _oob_hit(target: str, decorator: str) -> str:
    """``_tm_oob_hit``: an out-of-bounds access of array ``sl`` in direction
    ``d`` by thread ``g`` at ``(i, j, k)`` (0 for indices a lower rank has
    not): counted, and per array and direction
    the lowest thread that made one (``oobmin``) and that thread's first such
    index (``oobi``; see records.py); ``oobt``: per thread.

    The index is written when this thread becomes the lowest: a thread's
    accesses come in program order, so that is its first such access, and
    it is never written again for this thread.  On the CPU one worker makes
    its threads' accesses one at a time (workers' records are merged after,
    records.merge_oob_index); the simulator runs threads as Python threads,
    so there the update holds a lock.

    On a GPU threads race.  The lowest thread is an atomic min, always right.
    A thread writes the index only when the min it displaced was higher (its
    first such access) and the min still holds it when read back (of the
    lanes of a warp that get there together, only the lowest writes).  The
    read back is a second atomic min by the same thread id, which changes
    nothing (the min is at most g by then) but reads L2, never a stale L1
    line.  What the race can still cost: a lower thread that takes the min
    between that read and this thread's two stores can have its index
    overwritten by this one's (or i from one thread and j from the other):
    the index shown is then that of a higher thread's out-of-bounds access
    of the same array, with the right (lowest) thread and count.
    """
    plain = f"""{decorator}
def _tm_oob_hit(oob, oobmin, oobt, oobi, sl, d, g, i, j, k):
    oob[sl, d] += 1
    if g < oobmin[sl, d]:
        oobmin[sl, d] = g
        oobi[sl, d, 0] = i
        oobi[sl, d, 1] = j
        oobi[sl, d, 2] = k
    oobt[g] += 1
"""
    if target != "cuda":
        return plain
    simulated = f"""_TM_OOB_LOCK = _tm_threading.Lock()


{decorator}
def _tm_oob_hit(oob, oobmin, oobt, oobi, sl, d, g, i, j, k):
    with _TM_OOB_LOCK:
        oob[sl, d] += 1
        if g < oobmin[sl, d]:
            oobmin[sl, d] = g
            oobi[sl, d, 0] = i
            oobi[sl, d, 1] = j
            oobi[sl, d, 2] = k
        oobt[g] += 1
"""
    compiled = f"""{decorator}
def _tm_oob_hit(oob, oobmin, oobt, oobi, sl, d, g, i, j, k):
    _tm_cuda.atomic.add(oob, (sl, d), 1)
    old = _tm_cuda.atomic.min(oobmin, (sl, d), g)
    if g < old and _tm_cuda.atomic.min(oobmin, (sl, d), g) == g:
        oobi[sl, d, 0] = i
        oobi[sl, d, 1] = j
        oobi[sl, d, 2] = k
    oobt[g] += 1
"""
    indent = lambda text: "\n".join("    " + line if line else line for line in text.splitlines())
    return ("from numba import config as _tm_numba_config\n"
            "if _tm_numba_config.ENABLE_CUDASIM:\n"
            "    import threading as _tm_threading\n\n" + indent(simulated)
            + "\nelse:\n" + indent(compiled) + "\n")


def _margin_hit(target: str, decorator: str) -> str:
    """``_tm_margin2(mg, x, i, j)`` / ``_tm_margin1(mg, x, e)``: an
    out-of-bounds write to the output ``x`` at (i, j), or at flat index e
    (row e // N, column e % N, floor division as Python's), or of a 3-D
    ``x`` at (i, j, k) (``_tm_margin3``: row i * d1 + j of its stacked
    slices, column k; one whose j is outside d1 is counted in the summaries,
    not drawn: no row of the drawing is its), counted in the
    margin record ``mg`` (records.margin_record_shape: rows of N + 2W, so N
    is read from it where C is flat) at the position clamped to the band
    (records.margin_cells does the same in numpy).  An atomic add on the
    GPU and in the simulator (whose atomics hold a lock)."""
    w = OOB_MARGIN
    add = _atomic_line(target, "add", "mg", "(a, b)", "1")
    return f"""{decorator}
def _tm_margin_hit(mg, m, n, r, c):
    r = _tm_i64(r)
    c = _tm_i64(c)
    if r < -{w}:
        r = _tm_i64(-{w})
    elif r > m + {w - 1}:
        r = m + {w - 1}
    if c < -{w}:
        c = _tm_i64(-{w})
    elif c > n + {w - 1}:
        c = n + {w - 1}
    width = n + {2 * w}
    if r < 0:
        a = r + {w}
        b = c + {w}
    elif r >= m:
        a = r - m + {w}
        b = c + {w}
    else:
        if c < 0:
            p = {2 * w} * width + r * {w} + c + {w}
        else:
            p = {2 * w} * width + m * {w} + r * {w} + c - n
        a = p // width
        b = p % width
    {add}


{decorator}
def _tm_margin2(mg, x, i, j):
    _tm_margin_hit(mg, _tm_i64(x.shape[0]), _tm_i64(x.shape[1]), i, j)


{decorator}
def _tm_margin3(mg, x, i, j, k):
    if j >= 0 and j < x.shape[1]:
        d1 = _tm_i64(x.shape[1])
        _tm_margin_hit(mg, _tm_i64(x.shape[0]) * d1, _tm_i64(x.shape[2]), i * d1 + j, k)


{decorator}
def _tm_margin1(mg, x, e):
    n = _tm_i64(mg.shape[1] - {2 * w})
    e = _tm_i64(e)
    _tm_margin_hit(mg, _tm_i64(x.shape[0]) // n, n, e // n, e % n)
"""


#: Python's operator of each division helper, and numpy's function for it.
DIVISIONS = {"truediv": ("/", "true_divide"), "floordiv": ("//", "floor_divide"),
             "mod": ("%", "remainder")}


def _division_helpers(target: str, decorator: str) -> str:
    """``_tm_<op>(a, b, site, divz, divzt, g)``: ``a op b``, with a division
    by zero counted at ``site`` (and the lowest thread that made one).

    Compiled (a GPU, the CPU emulation), numba's numpy error model already
    gives what a GPU gives: 0 for an integer // or %, inf or NaN for floats.
    The simulator runs Python, which would raise ZeroDivisionError: there
    numpy's functions give the same values without stopping the run.
    """
    record = (f"{_atomic_line(target, 'add', 'divz', 'site', '1')}\n"
              f"        {_atomic_line(target, 'min', 'divzt', 'site', 'g')}")
    compiled, simulated = [], []
    for name, (op, numpy_function) in DIVISIONS.items():
        compiled.append(f"""{decorator}
def _tm_{name}(a, b, site, divz, divzt, g):
    if b == 0:
        {record}
    return a {op} b
""")
        simulated.append(f"""{decorator}
def _tm_{name}(a, b, site, divz, divzt, g):
    if b == 0:
        {record}
        with _tm_np.errstate(all="ignore"):
            return _tm_np.{numpy_function}(a, b)
    return a {op} b
""")
    if target == "cpu":
        return "\n\n".join(compiled)
    indent = lambda texts: "\n".join("    " + line if line else line
                                      for line in "\n\n".join(texts).splitlines())
    return ("from numba import config as _tm_numba_config\n"
            "if _tm_numba_config.ENABLE_CUDASIM:\n" + indent(simulated)
            + "\nelse:\n" + indent(compiled) + "\n")


def _index_forms(nd: int) -> tuple[str, str, str, str, str]:
    """Parameter list, index tuple, out-of-bounds test, and second and third
    index (0 where the rank has none) for ``nd`` indices."""
    if nd == 3:
        return ("i, j, k", "(i, j, k)", "i < 0 or i >= x.shape[0] or j < 0 or j >= x.shape[1] "
                "or k < 0 or k >= x.shape[2]", "j", "k")
    if nd == 2:
        return ("i, j", "(i, j)", "i < 0 or i >= x.shape[0] or j < 0 or j >= x.shape[1]", "j",
                "0")
    return "i", "i", "i < 0 or i >= x.shape[0]", "0", "0"


def _atomic_line(target: str, op: str, array: str, index: str, value: str) -> str:
    """One line updating ``array[index]`` so that no other thread interleaves."""
    if target == "cuda":
        return f"_tm_cuda.atomic.{op}({array}, {index}, {value})"
    if op == "add":
        return f"{array}[{index}] += {value}"
    compare = "<" if op == "min" else ">"
    return f"if {value} {compare} {array}[{index}]: {array}[{index}] = {value}"


def _atomic_update(target: str, op: str, index: str) -> str:
    """Body lines of a user's atomic update that returns the old value."""
    if target == "cuda":
        return f"    return _tm_cuda.atomic.{op}(x, {index}, v)"
    # numba-cuda's definitions (its cuda.atomic docstrings): inc and dec wrap
    # at v; nanmax and nanmin take a NaN as a missing value.
    new = {"add": "old + v", "sub": "old - v", "max": "max(old, v)", "min": "min(old, v)",
           "and_": "old & v", "or_": "old | v", "xor": "old ^ v", "exch": "v",
           "inc": "0 if old >= v else old + 1",
           "dec": "v if old == 0 or old > v else old - 1",
           "nanmax": "v if old != old else (old if v != v else max(old, v))",
           "nanmin": "v if old != old else (old if v != v else min(old, v))"}[op]
    return f"    old = x[{index}]\n    x[{index}] = {new}\n    return old"


def _cas_update(target: str, index: str) -> str:
    """Body lines of a compare-and-swap that leave the old value in ``old``
    and whether it stored in ``swapped``."""
    if target == "cuda":
        return f"    old = _tm_cuda.atomic.cas(x, {index}, c, v)\n    swapped = old == c\n"
    return (f"    old = x[{index}]\n    swapped = old == c\n    if swapped:\n"
            f"        x[{index}] = v\n")


def _plain_helpers(emit, target: str, nd: int, atomics: tuple[str, ...]) -> None:
    idx, tup, outside, _, _ = _index_forms(nd)
    emit(f"""
def _tm_ld{nd}(x, {idx}):
    if {outside}:
        return x.dtype.type(0)
    return x[{idx}]
""")
    emit(f"""
def _tm_st{nd}(x, {idx}, v):
    if {outside}:
        return
    x[{idx}] = v
""")
    if "cas" in atomics:
        emit(f"""
def _tm_atcas{nd}(x, {idx}, c, v):
    if {outside}:
        return x.dtype.type(0)
{_cas_update(target, tup)}    return old
""")
    for op in atomics:
        if op == "cas":
            continue
        emit(f"""
def _tm_at{op}{nd}(x, {idx}, v):
    if {outside}:
        return x.dtype.type(0)
{_atomic_update(target, op, tup)}
""")


def _record_helpers(emit, target: str, nd: int, role: str, atomics: tuple[str, ...],
                    races: bool = False) -> None:
    """Load, store and atomic helpers of one role and rank (``races``: of a
    global array checked for races, named with an ``r``)."""
    idx, tup, outside, j, k = _index_forms(nd)
    cpu = target == "cpu"
    offset = {1: "i", 2: "i * x.shape[1] + j", 3: "(i * x.shape[1] + j) * x.shape[2] + k"}[nd]
    oob = "oob, oobmin, oobt, oobi" + (", req, lane" if cpu else "") + ", g"
    shared = ", shadow, epoch, epoch0, race, uninit, block, ws" if cpu and role == "sh" else ""
    if races:
        shared = ", gsh, grg, epoch, epoch0, grace, block, ws"
    # What is noted for the warp request: the element offset (global memory),
    # or offset and lane (shared memory: banks are served per lane group).
    note = ""
    if cpu and role in ("in", "out"):
        note = f"    _tm_note(req, site, lane, {offset})\n"
    elif cpu and role == "sh":
        note = f"    e = {offset}\n    _tm_note(req, site, lane, e)\n"
    hazard = {"ld": "", "st": "", "at": ""}
    if cpu and role == "sh":
        hazard = {
            "ld": "    _tm_shared_read(shadow, e, lane, epoch, epoch0, race, uninit, block, ws, "
                  f"sl, site, i, {j})\n",
            "st": f"    _tm_shared_write(shadow, e, lane, epoch, race, block, ws, sl, site, i, "
                  f"{j})\n",
            "at": "    _tm_shared_atomic(shadow, e, lane, epoch, epoch0, race, uninit, block, ws, "
                  f"sl, site, i, {j})\n",
        }
    if races:
        call = ("(gsh, grg, {offset}, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, "
                f"{j})\n").replace("{offset}", offset)
        hazard = {"ld": "    _tm_global_read" + call, "st": "    _tm_global_write" + call,
                  "at": "    _tm_global_atomic" + call}

    def miss(direction: int, returned: str) -> str:
        # An out-of-bounds write to the output is also counted where it landed.
        margin = (f"        _tm_margin{nd}(mg, x, {idx})\n"
                  if role == "out" and direction == 1 else "")
        return (f"    if {outside}:\n"
                f"        _tm_oob_hit(oob, oobmin, oobt, oobi, sl, _tm_i64({direction}), g, i, {j}, "
                f"{k})\n"
                f"{margin}"
                f"        return{returned}\n")

    def writer(count: str) -> str:
        head = (f"    s = stores[g]\n    stores[g] = s + 1\n"
                f"    {_atomic_line(target, 'add', count, tup, '1')}\n")
        if cpu:  # encoded: zero is "not written" (records.allocate_records)
            return head + (
                f"    w = _tm_np.iinfo(minw.dtype).max - g\n"
                f"    {_atomic_line(target, 'max', 'minw', tup, 'w')}\n"
                f"    w = g + 1\n"
                f"    {_atomic_line(target, 'max', 'maxw', tup, 'w')}\n"
                f"    w = _TM_I32MAX - s\n"
                f"    {_atomic_line(target, 'max', 'itr', tup, 'w')}\n")
        return head + (
            f"    {_atomic_line(target, 'min', 'minw', tup, 'g')}\n"
            f"    {_atomic_line(target, 'max', 'maxw', tup, 'g')}\n"
            f"    {_atomic_line(target, 'min', 'itr', tup, 's')}\n")

    suffix = "r" if races else ""
    # On the CPU an input's reads are counted per warp request, when it is
    # flushed (one add per element instead of one per lane).
    reads = "reads, " if role == "in" and not cpu else ""
    bump = f"    {_atomic_line(target, 'add', 'reads', tup, '1')}\n" if reads else ""
    emit(f"""
def _tm_ld{nd}_{role}{suffix}(x, {idx}, sl, site, {reads}{oob}{shared}):
{miss(0, " x.dtype.type(0)")}{note}{hazard["ld"]}{bump}    return x[{idx}]
""")
    written = "cnt, minw, maxw, itr, stores, mg, " if role == "out" else ""
    emit(f"""
def _tm_st{nd}_{role}{suffix}(x, {idx}, v, sl, site, {written}{oob}{shared}):
{miss(1, "")}{note}{hazard["st"]}    x[{idx}] = v
{writer("cnt") if role == "out" else ""}
""")
    written = "atm, minw, maxw, itr, stores, mg, " if role == "out" else ""
    if "cas" in atomics:  # (a failed compare stores nothing: no writer recorded)
        emit(f"""
def _tm_atcas{nd}_{role}{suffix}(x, {idx}, c, v, sl, site, {written}{oob}{shared}):
{miss(1, " x.dtype.type(0)")}{note}{hazard["at"]}{_cas_update(target, tup)}    if not swapped:
        return old
{writer("atm") if role == "out" else ""}    return old
""")
    for op in atomics:
        if op == "cas":
            continue
        emit(f"""
def _tm_at{op}{nd}_{role}{suffix}(x, {idx}, v, sl, site, {written}{oob}{shared}):
{miss(1, " x.dtype.type(0)")}{note}{hazard["at"]}{writer("atm") if role == "out" else ""}{_atomic_update(target, op, tup)}
""")


#: The CPU emulation's recording library: warp requests (coalescing, bank
#: conflicts), branches, barriers and the shared-memory shadow.  Its cost is
#: in the flush of each warp request (benchmarks/bench_engine.py): it takes few
#: arrays (each array argument of a numba call costs ~10 scalars), counts a
#: full ascending request without branches, and inlines its small helpers.  A warp
#: request is gathered while the lanes of one warp run one statement (a lane
#: reaches a site at most once per statement), then flushed into the
#: per-site sums.  Counters are int64 throughout; see records.py.
CPU_RECORD_LIBRARY = '''
@_tm_njit(**_TM_OPTS)
def _tm_note(req, site, lane, value):
    # The lane's element offset in its warp's request at this site (-1: the
    # lane did not get there, or was out of bounds).
    req[site, lane & 31] = value


@_tm_njit(**_TM_OPTS)
def _tm_sort(a, row, n):
    # Insertion sort of a[row, :n]: linear for the usual, ordered requests.
    for p in range(1, n):
        v = a[row, p]
        q = p - 1
        while q >= 0 and a[row, q] > v:
            a[row, q + 1] = a[row, q]
            q -= 1
        a[row, q + 1] = v


@_tm_njit(**_TM_OPTS)
def _tm_gather(offs, row, req):
    # The active lanes' offsets of a request (offs[row]), into the first
    # scratch row of req.
    m = 0
    for p in range(32):
        if offs[row, p] >= 0:
            req[_TM_SCRATCH, m] = offs[row, p]
            m += 1


@_tm_njit(**_TM_OPTS)
def _tm_sorted_request(a, row, n, counts, count, item):
    # a[row, :n], ascending, of elements ``item`` bytes wide: (distinct
    # elements, distinct 32-byte sectors), adding each element's lanes to
    # counts[element] when ``count``.
    elements = 0
    sectors = 0
    last_element = -1
    last_sector = -1
    for p in range(n):
        e = a[row, p]
        if count:
            counts[e] += 1
        if e != last_element:
            elements += 1
            last_element = e
            sector = (e * item) >> 5
            if sector != last_sector:
                sectors += 1
                last_sector = sector
    return elements, sectors


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_full_request(offs, row, item):
    # All 32 lanes of offs[row] at once, without branches (the loop
    # vectorises): whether the elements ascend (then, lane 0 being active,
    # every lane is), the distinct elements and the distinct sectors.
    descents = 0
    elements = 1
    sectors = 1
    for p in range(1, 32):
        e = offs[row, p]
        d = offs[row, p - 1]
        descents += e < d
        elements += e != d
        sectors += ((e * item) >> 5) != ((d * item) >> 5)
    return descents == 0, elements, sectors


@_tm_njit(**_TM_OPTS)
def _tm_flush_reads(req, site, accw, warp, counts):
    _tm_flush_reads_of(req, site, req, site, accw, warp, counts)


@_tm_njit(**_TM_OPTS)
def _tm_flush_reads_rounds(offs, rounds, req, site, accw, warp, counts):
    # The requests of rounds 0 .. rounds - 1 of a loop recorded lane by lane
    # (offs[r]: round r's), in one call: the flush is inlined here, which
    # halved its cost (32 -> 14 ns a request; most of it was the call).
    for r in range(rounds):
        _tm_flush_reads_of(offs, r, req, site, accw, warp, counts)


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_flush_reads_of(offs, row, req, site, accw, warp, counts):
    # A warp request that loads an input (its lanes' offsets in offs[row]):
    # as _tm_flush_global, and each element's reads added to counts (one add
    # per element, not per lane).  A broadcast and 32 consecutive elements
    # (the usual requests of a matmul) are told apart in one pass without
    # branches.  Else counts are added as runs of lanes end; out of order,
    # those are taken back and the sorted request counted again.
    item = _tm_item(site)
    first = offs[row, 0]
    if first >= 0:
        spread = _tm_i64(0)
        step = _tm_i64(0)
        for p in range(32):
            e = offs[row, p]
            spread |= e ^ first
            step |= e ^ (first + p)
        if spread == 0:
            counts[first] += 32
            _tm_request_done(offs, row, req, site, accw, warp, 32, 1, 1)
            return
        if step == 0:
            for p in range(32):
                counts[first + p] += 1
            sectors = (((first + 31) * item) >> 5) - ((first * item) >> 5) + 1
            _tm_request_done(offs, row, req, site, accw, warp, 32, 32, sectors)
            return
    if offs[row, 0] >= 0:
        ascending, elements, sectors = _tm_full_request(offs, row, item)
        if ascending:
            first = offs[row, 0]
            if elements == 1:  # a broadcast
                counts[first] += 32
            elif elements == 32:
                for p in range(32):
                    counts[offs[row, p]] += 1
            else:
                _tm_sorted_request(offs, row, 32, counts, True, item)
            _tm_request_done(offs, row, req, site, accw, warp, 32, elements, sectors)
            return
    lanes = 0
    elements = 0
    sectors = 0
    last_element = -1
    last_sector = -1
    run = 0
    added = 0
    ordered = True
    for p in range(32):
        e = offs[row, p]
        if e < 0:
            continue
        lanes += 1
        if not ordered:
            continue
        if e == last_element:
            run += 1
            continue
        if e < last_element:
            ordered = False
            continue
        if run:
            counts[last_element] += run
            added += run
        run = 1
        elements += 1
        last_element = e
        sector = (e * item) >> 5
        if sector != last_sector:
            sectors += 1
            last_sector = sector
    if lanes == 0:
        return
    if ordered:
        counts[last_element] += run
    else:
        _tm_gather(offs, row, req)
        for p in range(added):  # the runs already counted: the first lanes
            counts[req[_TM_SCRATCH, p]] -= 1
        _tm_sort(req, _TM_SCRATCH, lanes)
        elements, sectors = _tm_sorted_request(req, _TM_SCRATCH, lanes, counts, True, item)
    _tm_request_done(offs, row, req, site, accw, warp, lanes, elements, sectors)


@_tm_njit(**_TM_OPTS)
def _tm_flush_global(req, site, accw, warp):
    _tm_flush_global_of(req, site, req, site, accw, warp)


@_tm_njit(**_TM_OPTS)
def _tm_flush_global_rounds(offs, rounds, req, site, accw, warp):
    # As _tm_flush_reads_rounds, for a load that counts no reads.
    for r in range(rounds):
        _tm_flush_global_of(offs, r, req, site, accw, warp)


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_flush_global_of(offs, row, req, site, accw, warp):
    # One warp request to global memory (its lanes' offsets in offs[row],
    # its sums in req[site]): the distinct 32-byte sectors it
    # touches, against the fewest its distinct elements could fill.  A full
    # warp on ascending elements (the usual case) is counted without
    # branches; else one pass while the elements ascend, or the request is
    # copied to the scratch row, sorted and counted there.
    item = _tm_item(site)
    if offs[row, 0] >= 0:
        ascending, elements, sectors = _tm_full_request(offs, row, item)
        if ascending:
            _tm_request_done(offs, row, req, site, accw, warp, 32, elements, sectors)
            return
    lanes = 0
    elements = 0
    sectors = 0
    last_element = -1
    last_sector = -1
    ordered = True
    for p in range(32):
        e = offs[row, p]
        if e < 0:
            continue
        lanes += 1
        if not ordered or e == last_element:
            continue
        if e < last_element:
            ordered = False
            continue
        elements += 1
        last_element = e
        sector = (e * item) >> 5
        if sector != last_sector:
            sectors += 1
            last_sector = sector
    if lanes == 0:
        return
    if not ordered:
        _tm_gather(offs, row, req)
        _tm_sort(req, _TM_SCRATCH, lanes)
        elements, sectors = _tm_sorted_request(req, _TM_SCRATCH, lanes, req[0], False, item)
    _tm_request_done(offs, row, req, site, accw, warp, lanes, elements, sectors)


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_request_done(offs, row, req, site, accw, warp, active, elements, sectors):
    # Empty the request's lanes and add it to its site's sums and its warp's.
    for p in range(32):
        offs[row, p] = -1
    req[site, 32] += 1
    req[site, 33] += sectors
    if sectors > req[site, 34]:
        req[site, 34] = sectors
    req[site, 35] += (elements * _tm_item(site) + 31) >> 5
    req[site, 36] += active
    accw[site, warp, 0] += 1
    accw[site, warp, 1] += sectors


@_tm_njit(**_TM_OPTS)
def _tm_bank_ways(req, first_lane, group, item):
    # Passes for lanes first_lane .. first_lane + group - 1 (their element
    # offsets in scratch row 2, -1 where none): the most distinct words any
    # one bank must deliver.
    words = item >> 2 if item >= 4 else 1
    m = 0
    for p in range(first_lane, first_lane + group):
        e = req[_TM_SCRATCH + 2, p]
        if e < 0:
            continue
        if item >= 4:
            for t in range(words):
                req[_TM_SCRATCH, m] = e * words + t
                m += 1
        else:
            req[_TM_SCRATCH, m] = (e * item) >> 2
            m += 1
    _tm_sort(req, _TM_SCRATCH, m)
    for b in range(32):
        req[_TM_SCRATCH + 1, b] = 0
    ways = 0
    last = -1
    for p in range(m):
        w = req[_TM_SCRATCH, p]
        if w != last:
            last = w
            c = req[_TM_SCRATCH + 1, w & 31] + 1
            req[_TM_SCRATCH + 1, w & 31] = c
            if c > ways:
                ways = c
    return ways


@_tm_njit(**_TM_OPTS)
def _tm_flush_shared(req, site, item, accw, warp):
    # One warp request to shared memory: 32 banks of 4-byte words; lanes on one
    # word share it (a broadcast).  An access wider than 4 bytes is served in
    # passes of 32 // (item // 4) lanes (half-warps for 8 bytes); each pass
    # takes as many cycles as the most distinct words one bank must deliver.
    # Fast path: the words of a pass within a span of 32 sit in distinct banks.
    if item <= 4 and req[site, 0] >= 0:
        # A full warp (every lane active) whose words span fewer than 32: one
        # pass, found without branches (the loop vectorises).
        inactive = 0
        low = req[site, 0]
        high = low
        for p in range(1, 32):
            e = req[site, p]
            inactive += e < 0
            low = min(low, e)
            high = max(high, e)
        if inactive == 0 and ((high * item) >> 2) - ((low * item) >> 2) < 32:
            for p in range(32):
                req[site, p] = -1
            _tm_shared_done(req, site, accw, warp, 32, 1, 1)
            return
    words = item >> 2 if item >= 4 else 1
    group = 32 // words
    passes = 0
    groups = 0
    lanes = 0
    for first_lane in range(0, 32, group):
        low = _TM_NO_WORD
        high = -1
        for p in range(first_lane, first_lane + group):
            e = req[site, p]
            req[_TM_SCRATCH + 2, p] = e
            if e < 0:
                continue
            req[site, p] = -1
            lanes += 1
            if item >= 4:
                w0 = e * words
                w1 = w0 + words - 1
            else:
                w0 = (e * item) >> 2
                w1 = w0
            if w0 < low:
                low = w0
            if w1 > high:
                high = w1
        if high < 0:
            continue
        groups += 1
        if high - low < 32:
            passes += 1
        else:
            passes += _tm_bank_ways(req, first_lane, group, item)
    if lanes:
        _tm_shared_done(req, site, accw, warp, lanes, passes, groups)


@_tm_njit(**_TM_OPTS)
def _tm_flush_shared4(req, site, accw, warp):
    # _tm_flush_shared for 4-byte elements (float32, int32), the usual case,
    # its fast path without the element size to test: a full warp whose
    # words span fewer than 32 takes one pass.
    if req[site, 0] >= 0:
        inactive = 0
        low = req[site, 0]
        high = low
        for p in range(1, 32):
            e = req[site, p]
            inactive += e < 0
            low = min(low, e)
            high = max(high, e)
        if inactive == 0 and high - low < 32:
            for p in range(32):
                req[site, p] = -1
            _tm_shared_done(req, site, accw, warp, 32, 1, 1)
            return
    _tm_flush_shared(req, site, _tm_i64(4), accw, warp)


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_shared_done(req, site, accw, warp, lanes, passes, groups):
    # Add a shared-memory request to its site's sums and its warp's.
    req[site, 32] += 1
    req[site, 33] += passes
    if passes > req[site, 34]:
        req[site, 34] = passes
    req[site, 35] += groups
    req[site, 36] += lanes
    accw[site, warp, 0] += 1
    accw[site, warp, 1] += passes


@_tm_njit(**_TM_OPTS)
def _tm_branch(br, brw, site, warp, arrived, taken):
    # One warp at a branch: ``arrived`` active lanes, ``taken`` of them go on
    # into its body (or stay in the loop, or return).
    if arrived == 0:
        return
    br[site, 0] += 1
    if taken > 0:
        br[site, 1] += 1
        br[site, 2] += taken
        if taken < br[site, 3]:
            br[site, 3] = taken
        brw[site, warp, 0] += 1
        brw[site, warp, 1] += taken
        if taken < arrived:
            br[site, 4] += 1


@_tm_njit(**_TM_OPTS)
def _tm_barrier(bar, site, block, tpb, arrived, first_missing):
    # A barrier that some threads of the block did not reach.
    bar[site, 0] += 1
    if bar[site, 2] != block:
        bar[site, 1] += 1
        bar[site, 2] = block
    if bar[site, 3] < 0:
        bar[site, 3] = block
        bar[site, 4] = arrived
        bar[site, 5] = tpb - arrived
        bar[site, 6] = first_missing


@_tm_njit(**_TM_OPTS)
def _tm_warp_hit(warp, row, block, lane, line, a, b, c):
    # Row 0: a shuffle read a lane not taking part (a = source lane, b = mask,
    # c = active lanes); row 1: a call's mask named a lane that is not there,
    # or not the caller (a = mask, b = active lanes, c = lanes not exited).
    warp[row, 0] += 1
    if warp[row, 1] < 0:
        warp[row, 1] = block
        warp[row, 2] = lane
        warp[row, 3] = line
        warp[row, 4] = a
        warp[row, 5] = b
        warp[row, 6] = c


@_tm_njit(**_TM_OPTS)
def _tm_race_hit(race, sh, e, block, other, other_site, lane, site, sl, i, j):
    # Counted in elements, as races in global memory are: each element of a
    # block's shared array once, at its first race (the shadow's last column
    # holds the block that counted it), however many accesses race on it.
    counted = sh.shape[1] - 1
    if sh[e, counted] != block:
        sh[e, counted] = block
        race[0] += 1
    if race[1] < 0:
        race[1] = block
        race[2] = other
        race[3] = other_site
        race[4] = lane
        race[5] = site
        race[6] = sl
        race[7] = i
        race[8] = j


@_tm_njit(**_TM_OPTS)
def _tm_uninit_hit(uninit, block, lane, sl, site, i, j):
    uninit[0] += 1
    if uninit[1] < 0:
        uninit[1] = block
        uninit[2] = lane
        uninit[3] = sl
        uninit[4] = i
        uninit[5] = j
        uninit[6] = site


# The shadow of a shared array, per element: [0] barrier interval (epoch) of
# the last write, [1] its lane, [2] its site; [3] epoch of the reads noted,
# [4] first reader's lane, [5] its site, [6] a second, different reader's lane
# (-1: none), [7] its site; [8], [9], [10] the syncwarps the writer, the first
# and the second reader had passed (``ws``: per lane, in the block); the last
# column ([11], or [8] without syncwarps) the block whose race on the element
# was counted (_tm_race_hit).  Epochs grow through the whole run, so a write
# epoch below the block's first means "not written by this block".  Two
# accesses of one interval are ordered when their lanes share a warp and a
# syncwarp came between them (no word of the CUDA module here: naming it
# makes the module import it, codegen.py).

@_tm_njit(inline="always", **_TM_OPTS)
def _tm_synced(a, wa, b, wb):
    return _TM_WARP_SYNC and a // 32 == b // 32 and wa != wb


# (_TM_WARP_SYNC, the module's constant, is False for a kernel without a
# syncwarp: numba then drops the syncwarp figures, and the shadow keeps the
# first 8 columns and the last: 9.)

@_tm_njit(inline="always", **_TM_OPTS)
def _tm_note_reader(sh, e, lane, epoch, site, w):
    # A read noted in a shadow (a shared array's, or a global one's): the
    # first reader of the interval, or a second, different one, each with the
    # syncwarps it had passed.
    if sh[e, 3] != epoch:
        sh[e, 3] = epoch
        sh[e, 4] = lane
        sh[e, 5] = site
        sh[e, 6] = -1
        if _TM_WARP_SYNC:
            sh[e, 9] = w
    elif sh[e, 4] == lane:
        if _TM_WARP_SYNC:
            sh[e, 9] = w
    elif sh[e, 6] < 0:
        sh[e, 6] = lane
        sh[e, 7] = site
        if _TM_WARP_SYNC:
            sh[e, 10] = w
    elif sh[e, 6] == lane:
        if _TM_WARP_SYNC:
            sh[e, 10] = w


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_site(kept):
    # A shadow's site column: a plain store's site, or an atomic's, kept as
    # -(site + 1) (_tm_shared_atomic).
    return kept if kept >= 0 else -kept - 1


@_tm_njit(**_TM_OPTS)
def _tm_shared_read(sh, e, lane, epoch, epoch0, race, uninit, block, ws, sl, site, i, j):
    w = ws[lane] if _TM_WARP_SYNC else 0
    if sh[e, 0] < epoch0:
        _tm_uninit_hit(uninit, block, lane, sl, site, i, j)
    elif sh[e, 0] == epoch and sh[e, 1] != lane and not _tm_synced(sh[e, 1], sh[e, 8], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 1], _tm_site(sh[e, 2]), lane, site, sl, i, j)
    _tm_note_reader(sh, e, lane, epoch, site, w)


@_tm_njit(**_TM_OPTS)
def _tm_shared_write(sh, e, lane, epoch, race, block, ws, sl, site, i, j):
    w = ws[lane] if _TM_WARP_SYNC else 0
    if sh[e, 0] == epoch and sh[e, 1] != lane and not _tm_synced(sh[e, 1], sh[e, 8], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 1], _tm_site(sh[e, 2]), lane, site, sl, i, j)
    elif sh[e, 3] == epoch and sh[e, 4] != lane \
            and not _tm_synced(sh[e, 4], sh[e, 9], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 4], sh[e, 5], lane, site, sl, i, j)
    elif sh[e, 3] == epoch and sh[e, 6] >= 0 and sh[e, 6] != lane \
            and not _tm_synced(sh[e, 6], sh[e, 10], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 6], sh[e, 7], lane, site, sl, i, j)
    sh[e, 0] = epoch
    sh[e, 1] = lane
    sh[e, 2] = site
    if _TM_WARP_SYNC:
        sh[e, 8] = w


@_tm_njit(**_TM_OPTS)
def _tm_shared_atomic(sh, e, lane, epoch, epoch0, race, uninit, block, ws, sl, site, i, j):
    # Atomics do not race with each other; they read (so the element must have
    # been written) and write.  So an atomic races with another thread's plain
    # store or read of the element in the same interval: before it, found
    # here (a histogram's bins zeroed and then added to with no barrier
    # between); after it, by _tm_shared_read and _tm_shared_write.  Its entry
    # keeps its site as -(site + 1), so that a later atomic tells it from a
    # plain store (_tm_site reads it back).
    w = ws[lane] if _TM_WARP_SYNC else 0
    stored = sh[e, 0] == epoch and sh[e, 2] >= 0  # (a plain store of this interval)
    if sh[e, 0] < epoch0:
        _tm_uninit_hit(uninit, block, lane, sl, site, i, j)
    elif stored and sh[e, 1] != lane and not _tm_synced(sh[e, 1], sh[e, 8], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 1], sh[e, 2], lane, site, sl, i, j)
    elif sh[e, 3] == epoch and sh[e, 4] != lane \
            and not _tm_synced(sh[e, 4], sh[e, 9], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 4], sh[e, 5], lane, site, sl, i, j)
    elif sh[e, 3] == epoch and sh[e, 6] >= 0 and sh[e, 6] != lane \
            and not _tm_synced(sh[e, 6], sh[e, 10], lane, w):
        _tm_race_hit(race, sh, e, block, sh[e, 6], sh[e, 7], lane, site, sl, i, j)
    if stored and sh[e, 1] == lane:
        return  # (its own store stays the entry: another thread's atomic races with it)
    sh[e, 0] = epoch
    sh[e, 1] = lane
    sh[e, 2] = -site - 1
    if _TM_WARP_SYNC:
        sh[e, 8] = w


# A global array checked for races (transform.race_checked_arrays).  Between
# blocks, nothing orders two accesses: per element, the lowest and highest
# access key (thread * _TM_SCRATCH + site, _TM_SCRATCH being the number of
# sites) of its plain reads (grg columns 0, 1), plain writes (2, 3) and
# atomic updates (4, 5) decide it after the run, whatever order the workers
# met the element in (records.global_races).  Within a block, the shadow
# (columns as a shared array's) tells accesses of one barrier interval
# apart; its intervals are numbered (block << 32) + the block's interval, so
# that no other block's entry (another worker's) ever matches.  A race within
# a block flags the element (column 6); _tm_grace keeps the pair of the
# lowest such element (slot, then offset), its first in program order.

@_tm_njit(inline="always", **_TM_OPTS)
def _tm_global_keys(grg, e, column, key):
    if key < grg[e, column]:
        grg[e, column] = key
    if key > grg[e, column + 1]:
        grg[e, column + 1] = key


@_tm_njit(**_TM_OPTS)
def _tm_global_hit(grace, grg, sl, e, block, other, other_site, lane, site, i, j):
    grg[e, 6] = 1
    grace[0] += 1
    if grace[1] < 0 or sl < grace[1] or (sl == grace[1] and e < grace[2]):
        grace[1] = sl
        grace[2] = e
        grace[3] = block
        grace[4] = other
        grace[5] = other_site
        grace[6] = lane
        grace[7] = site
        grace[8] = i
        grace[9] = j


@_tm_njit(inline="always", **_TM_OPTS)
def _tm_global_atomics_met(gsh, e, lane, interval):
    # Another thread's atomic update of the element in this interval (its
    # lane and site, or -1): the first, or a second, different one.
    if gsh[e, 12] != interval:
        return _tm_i64(-1), _tm_i64(-1)
    if gsh[e, 13] != lane:
        return gsh[e, 13], gsh[e, 14]
    return gsh[e, 15], gsh[e, 16]


@_tm_njit(**_TM_OPTS)
def _tm_global_read(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    if grg.shape[0] == 0:  # (an array too large to check: records.py)
        return
    _tm_global_keys(grg, e, 0, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    other, other_site = _tm_global_atomics_met(gsh, e, lane, interval)
    if gsh[e, 0] == interval and gsh[e, 1] != lane \
            and not _tm_synced(gsh[e, 1], gsh[e, 8], lane, w):
        _tm_global_hit(grace, grg, sl, e, block, gsh[e, 1], gsh[e, 2], lane, site, i, j)
    elif other >= 0:
        _tm_global_hit(grace, grg, sl, e, block, other, other_site, lane, site, i, j)
    _tm_note_reader(gsh, e, lane, interval, site, w)


@_tm_njit(**_TM_OPTS)
def _tm_global_plain_met(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j):
    # A write or an atomic update meeting another thread's plain write, or a
    # plain read, of this interval: a race (True when one was met).
    if gsh[e, 0] == interval and gsh[e, 1] != lane \
            and not _tm_synced(gsh[e, 1], gsh[e, 8], lane, w):
        _tm_global_hit(grace, grg, sl, e, block, gsh[e, 1], gsh[e, 2], lane, site, i, j)
    elif gsh[e, 3] == interval and gsh[e, 4] != lane \
            and not _tm_synced(gsh[e, 4], gsh[e, 9], lane, w):
        _tm_global_hit(grace, grg, sl, e, block, gsh[e, 4], gsh[e, 5], lane, site, i, j)
    elif gsh[e, 3] == interval and gsh[e, 6] >= 0 and gsh[e, 6] != lane \
            and not _tm_synced(gsh[e, 6], gsh[e, 10], lane, w):
        _tm_global_hit(grace, grg, sl, e, block, gsh[e, 6], gsh[e, 7], lane, site, i, j)
    else:
        return False
    return True


@_tm_njit(**_TM_OPTS)
def _tm_global_write(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    if grg.shape[0] == 0:
        return
    _tm_global_keys(grg, e, 2, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    if not _tm_global_plain_met(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j):
        other, other_site = _tm_global_atomics_met(gsh, e, lane, interval)
        if other >= 0:
            _tm_global_hit(grace, grg, sl, e, block, other, other_site, lane, site, i, j)
    gsh[e, 0] = interval
    gsh[e, 1] = lane
    gsh[e, 2] = site
    if _TM_WARP_SYNC:
        gsh[e, 8] = w


@_tm_njit(**_TM_OPTS)
def _tm_global_atomic(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    # Atomics do not race with each other; with another thread's plain write
    # or read of the interval, before or after, they do.  They are noted apart
    # (columns 12-16: interval, the first atomic lane and site, a second).
    if grg.shape[0] == 0:
        return
    _tm_global_keys(grg, e, 4, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    _tm_global_plain_met(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j)
    if gsh[e, 12] != interval:
        gsh[e, 12] = interval
        gsh[e, 13] = lane
        gsh[e, 14] = site
        gsh[e, 15] = -1
    elif gsh[e, 13] != lane and gsh[e, 15] < 0:
        gsh[e, 15] = lane
        gsh[e, 16] = site
'''
