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
from . import record_runtime

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
        out.append(_LINK_RUNTIME)
    for nd in ranks:
        for role in ROLES:
            _record_helpers(emit, target, nd, role, atomics)
            if races and target == "cpu" and role in ("in", "out"):
                _record_helpers(emit, target, nd, role, atomics, races=True)
    out.append(_division_helpers(target, decorator))
    return "\n\n".join(out)


#: The CPU emulation's recording runtime (record_runtime.py), linked into the
#: kernel's module: each of its functions compiled there for the kernel's
#: constants, under its own name.
_LINK_RUNTIME = f"""
# The recording runtime {record_runtime.DIGEST} (kernels/derived/record_runtime.py)
from kernels.derived.record_runtime import link as _tm_link_runtime
globals().update(_tm_link_runtime(_tm_njit, _TM_OPTS, _TM_SCRATCH, _TM_WARP_SYNC, _tm_item,
                                  _tm_i64))
"""


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
        note = f"    _tm_note_lane_offset(req, site, lane, {offset})\n"
    elif cpu and role == "sh":
        note = f"    e = {offset}\n    _tm_note_lane_offset(req, site, lane, e)\n"
    hazard = {"ld": "", "st": "", "at": ""}
    if cpu and role == "sh":
        hazard = {
            "ld": "    _tm_check_shared_read(shadow, e, lane, epoch, epoch0, race, uninit, "
                  f"block, ws, sl, site, i, {j})\n",
            "st": "    _tm_check_shared_write(shadow, e, lane, epoch, race, block, ws, sl, "
                  f"site, i, {j})\n",
            "at": "    _tm_check_shared_atomic(shadow, e, lane, epoch, epoch0, race, uninit, "
                  f"block, ws, sl, site, i, {j})\n",
        }
    if races:
        call = ("(gsh, grg, {offset}, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, "
                f"{j})\n").replace("{offset}", offset)
        hazard = {"ld": "    _tm_check_global_read" + call,
                  "st": "    _tm_check_global_write" + call,
                  "at": "    _tm_check_global_atomic" + call}

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


