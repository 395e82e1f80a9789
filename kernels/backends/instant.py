"""The instant tier of the CPU emulation: block lockstep in numpy, no compile.

``derived/vector.py`` writes the unit function from the kernel; this module
runs it and is its runtime: the vector forms of the compiled tier's helpers
(``derived/helper_library.py``).  Each records what its compiled twin records,
into the same arrays (``records.py``), so that ``read_back`` and
``read_analysis`` read both tiers alike and the tests can compare them element
by element:

* every access: bounds (out-of-bounds accesses counted per array, direction
  and thread, the lowest thread's first index kept, and the output's
  out-of-bounds writes where they landed), the output's write counts, writers
  and store numbers, the inputs' read counts;
* each warp's request at each site, per statement: distinct 32-byte sectors
  against the fewest its elements could fill (global memory), passes of the
  32 banks (shared memory);
* branches per warp, barriers a block's threads do not all reach, and the
  shared-memory shadow: races within a barrier interval, reads of elements the
  block has not written.

Units run in the compiled tier's order: blocks one after another when a block
has barriers or shared memory; otherwise its warps are independent, and all
warps of a chunk of blocks run as one vector (far fewer numpy calls).  Then a
later statement of an earlier warp may run after a later warp's store; the
output keeps, per element, the write of the latest warp (``_store_keyed``), as
the compiled tier's sequential order would.  A kernel whose warps can see each
other's writes (it reads its output, stores into an input or updates
atomically) runs warp by warp instead.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..derived.intrinsics import vector_form
from ..derived.local_types import kernel_types
from ..derived.lowering import lower
from ..derived.shadow import (
    ATOMIC_EPOCH,
    ATOMIC_LANE,
    ATOMIC_SITE,
    GLOBAL_SHADOW_COLUMNS,
    READ_EPOCH,
    READER,
    READER_SITE,
    READER_SYNCWARPS,
    SECOND_ATOMIC_LANE,
    SECOND_ATOMIC_SITE,
    SECOND_READER,
    SECOND_READER_SITE,
    SECOND_READER_SYNCWARPS,
    SHADOW_COLUMNS,
    WRITE_EPOCH,
    WRITER,
    WRITER_SITE,
    WRITER_SYNCWARPS,
)
from ..derived.transform import array_slots, global_ranges_param
from ..derived.vector import VectorCode, vector_code
from ..derived.warp_ops import MATCH, SHUFFLES
from ..element_types import dtype_of
from ..errors import EmulationUnsupported, RunCancelled, ThreadMapError
from ..estimate import INSTANT_CHUNK_LANES as CHUNK_LANES
from ..records import (
    ATOMICS,
    COUNT,
    DIVZ,
    DIVZ_THREAD,
    INT32_MAX,
    ITERATION,
    MARGIN,
    MAX_WRITER,
    MIN_WRITER,
    OOB,
    OOB_INDEX,
    OOB_MIN_THREAD,
    OOB_THREAD,
    RACE_CHECK_ELEMENTS,
    READS,
    STORES,
    allocate_global_ranges,
    allocate_lockstep_records,
    decode_writers,
    margin_cells,
    raced_in_global_memory,
    written_records,
)
from ..result import Timing
from .common import BackendOutput, KernelJob, order_matters
from .cpu import RACED_NOTE

WARP = 32
#: How the instant tier's times are labelled: they are neither a GPU's nor
#: the compiled emulation's.
INSTANT_METHOD = "wall clock of the instrumented run, numpy lockstep over vectors of lanes"


def _program(plan, dtype: str, scalar_types: tuple[str, ...]) -> tuple[VectorCode, object]:
    """The unit function of ``plan`` (derived and made once per kernel text)."""
    key = (plan.module.path, plan.module.text, plan.name, dtype, scalar_types)
    found = _PROGRAMS.get(key)
    if found is None:
        types = kernel_types(plan, dtype, scalar_types)
        code = vector_code(lower(plan, types))
        # The source is ThreadMap's own, written from the kernel's allow-listed
        # tree (constants as their checked values): only numpy and the
        # runtime are in its namespace, and no builtins.
        namespace = {"_tm_np": np, "__builtins__": {"range": range, "int": int}}
        namespace.update(code.constants)
        exec(compile(code.source, f"<instant tier of {plan.name}>", "exec"), namespace)  # noqa: S102
        found = _PROGRAMS[key] = (code, namespace["_tm_unit"])
        if len(_PROGRAMS) > 64:
            _PROGRAMS.pop(next(iter(_PROGRAMS)))
    return found


_PROGRAMS: dict[tuple, tuple[VectorCode, object]] = {}


class TooSlow(Exception):
    """The instant tier ran past the time the compiled tier was estimated to
    take, compile included: the kernel does more work than a matmul's M x N x K
    (every thread computing all of C), and the compiled tier takes over, as
    an optimising compiler takes over hot code from an interpreter."""

    def __init__(self, seconds: float, projected: float | None = None):
        super().__init__(f"{seconds:.1f} s")
        self.seconds = seconds
        #: the instant tier's projected time, where its loops' trip counts
        #: gave one (then it handed over at once, not at the deadline)
        self.projected = projected


@dataclass(frozen=True)
class _Slot:
    name: str
    role: str  # "in", "out", "sh", "lc"
    ndim: int
    #: the written array whose records its writes fill (0: the output; -1: none)
    write_index: int = -1


class VectorRuntime:
    """What the unit function calls: accesses, flushes, branches, barriers."""

    def __init__(self, job: KernelJob, code: VectorCode, records: list[np.ndarray],
                 lockstep: dict[str, np.ndarray], keyed: bool, c: np.ndarray):
        self.job = job
        self.layout = code.layout
        self.records = records
        written = job.written_shapes()
        #: each written array's records (0: the output's), the maps seen flat
        self.written = [written_records(records, len(job.plan.inputs), index)
                        for index in range(len(written) + 1)]
        self.flat = [{r: own[r].reshape(-1) for r in (COUNT, ATOMICS, MIN_WRITER, MAX_WRITER,
                                                      ITERATION)} for own in self.written]
        m, _, n = job.request.shape
        #: the shape each written array's margin is counted around
        self.drawn = [(m, n)] + [w.drawn for w in written]
        self.reads = [records[READS + i].reshape(-1) for i in range(len(job.plan.inputs))]
        self.inputs = job.plan.inputs
        self.req = lockstep["_tm_req"]
        self.accw = lockstep["_tm_accw"]
        self.br = lockstep["_tm_br"]
        self.brw = lockstep["_tm_brw"]
        self.bar = lockstep["_tm_bar"]
        self.race = lockstep["_tm_race"]
        self.uninit = lockstep["_tm_uninit"]
        self.slots = [_Slot(s.name, s.role, s.ndim, s.write_index)
                      for s in array_slots(job.plan)]
        self.sites = self.layout.sites
        self.item = {a.name: np.dtype(a.dtype).itemsize for a in self.layout.block_arrays}
        self.global_item = {name: np.dtype(dtype_of(job.request.element_types, name)).itemsize
                            for name in job.plan.arrays}
        self.shadows = {a.name: np.full((int(np.prod(a.shape)), SHADOW_COLUMNS), -1, np.int64)
                        for a in self.layout.block_arrays if a.kind == "shared"}
        #: global arrays checked for races: access ranges (in the lockstep
        #: records, as the compiled tier's) and shadows
        self.granges = {name: lockstep[global_ranges_param(name)]
                        for name in self.layout.race_arrays}
        self.gshadows = {name: np.full((max(len(r), 1), GLOBAL_SHADOW_COLUMNS), -1, np.int64)
                         for name, r in self.granges.items()}
        self.grace = lockstep["_tm_grace"]
        self.keys_per_thread = max(len(self.layout.sites), 1)
        self.writer_max = np.iinfo(records[MIN_WRITER].dtype).max
        self.keyed = keyed
        self.output_flat = c.reshape(-1)
        self.output_key = np.full(c.size, -1, np.int64) if keyed else None
        self.epoch = 0
        self.epoch0 = 0
        self.block = 0
        self.notes: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        self.hits: dict[str, list[tuple[int, int, tuple]]] = {"race": [], "uninit": []}
        self.calls = 0
        self.warp_records = lockstep["_tm_warp"]
        #: per row of ``_tm_warp``, the order key of its first hit (see warp_op)
        self.warp_first: list[tuple | None] = [None, None]
        self.ticks = 0
        self.singles = np.arange(1, dtype=np.int64)
        self.last_check = time.perf_counter()
        self.started = self.last_check
        #: when the compiled tier would have finished (its compile included):
        #: past it, the instant tier hands over (see TooSlow)
        self.deadline: float | None = None
        #: per loop, the vector steps its body is projected to take in this
        #: unit: its trip count times its enclosing loop's (see loop_entered)
        self.nest: dict[int, float] = {}
        #: units of the run not yet finished, this one included
        self.units_left = 1
        #: the least a vector step costs (the estimate's own figure)
        self.step_seconds = 0.0

    # -- the unit -------------------------------------------------------------------------

    def set_unit(self, gtid: np.ndarray, warps: np.ndarray, lanes: np.ndarray,
                 block: int) -> None:
        """The lanes of the next unit: global thread ids, global warps, lanes
        within their block, and the block (units with shared memory are one
        block)."""
        self.G = gtid
        self.W = warps
        self.LANE = lanes
        self.block = block
        self.singles = np.arange(len(gtid), dtype=np.int64)
        #: the syncwarps each lane has passed (the race check's _tm_syncwarp_between)
        self.WS = np.zeros(len(gtid), np.int64)

    def one_lane(self, lane) -> np.ndarray:
        return self.singles[lane:lane + 1]

    def tick(self) -> None:
        """Once per loop test: honour cancel (and a time limit's end) within a
        long unit, every ~50 ms."""
        self.ticks += 1
        if self.ticks & 63:
            return
        now = time.perf_counter()
        if now - self.last_check > 0.05:
            self.last_check = now
            if self.job.cancel():
                raise RunCancelled("run cancelled")
            if self.deadline is not None and now > self.deadline:
                raise TooSlow(now - self.started)

    def loop_entered(self, k: int, parent: int, cur: np.ndarray, end: np.ndarray, step,
                     mask: np.ndarray) -> None:
        """A ``for`` loop starts on the lanes of ``mask``: project the run from
        its trip count (the most any lane takes) times its enclosing loop's, and
        hand over at once (TooSlow) where even that lower bound of the instant
        tier's time is past the deadline.  The estimates assume a matmul's
        M x N x K work; the seed's kernel does 1,024x that at its shape, which
        the trip counts show at the first entry of its inner loop, where the
        clock alone showed it only after the whole deadline (7 s and more)."""
        if self.deadline is None:
            return
        lanes = np.flatnonzero(mask)
        if not lanes.size:
            return
        if isinstance(step, np.ndarray):
            step = step[lanes]
        with np.errstate(all="ignore"):
            turns = np.ceil((end[lanes] - cur[lanes]) / np.where(step == 0, 1, step))
        trips = max(float(turns.max()), 0.0)
        outer = self.nest.get(parent, 1.0) if parent >= 0 else 1.0
        self.nest[k] = outer * (trips + 1)
        now = time.perf_counter()
        projected = (now - self.started) + self.nest[k] * self.units_left * self.step_seconds
        if now + self.nest[k] * self.units_left * self.step_seconds > self.deadline:
            raise TooSlow(now - self.started, projected)

    # -- values ---------------------------------------------------------------------------

    @staticmethod
    def truth(value, lanes: np.ndarray) -> np.ndarray:
        return np.broadcast_to(np.asarray(value) != 0, (len(lanes),))

    def _combine(self, first, lanes: np.ndarray, chosen: np.ndarray, then) -> np.ndarray:
        out = np.array(np.broadcast_to(np.asarray(first), (len(lanes),)))
        if chosen.any():
            part = np.asarray(then(lanes[chosen]))
            out = out.astype(np.result_type(out, part), copy=False)
            out[chosen] = part
        return out

    def and_(self, first, lanes, then):
        return self._combine(first, lanes, self.truth(first, lanes), then)

    def or_(self, first, lanes, then):
        return self._combine(first, lanes, ~self.truth(first, lanes), then)

    def ifexp(self, test, lanes, body, orelse):
        taken = self.truth(test, lanes)
        parts = []
        if taken.any():
            parts.append((taken, np.asarray(body(lanes[taken]))))
        if not taken.all():
            parts.append((~taken, np.asarray(orelse(lanes[~taken]))))
        dtype = np.result_type(*[p for _, p in parts]) if parts else np.float64
        out = np.zeros(len(lanes), dtype)
        for where, part in parts:
            out[where] = part
        return out

    @staticmethod
    def not_(value):
        return np.asarray(value) == 0

    @staticmethod
    def invert(value):
        return np.invert(value)

    @staticmethod
    def f_abs(x):
        return np.abs(x)

    @staticmethod
    def f_min(*values):
        return functools.reduce(np.minimum, values)

    @staticmethod
    def f_max(*values):
        return functools.reduce(np.maximum, values)

    @staticmethod
    def f_int(x):
        return np.asarray(x).astype(np.int64)

    @staticmethod
    def f_float(x):
        return np.asarray(x).astype(np.float64)

    @staticmethod
    def f_bool(x):
        return np.asarray(x) != 0

    @staticmethod
    def f_round(x, digits=None):
        if digits is None:
            return np.rint(x).astype(np.int64)
        return np.round(x, int(digits))

    @staticmethod
    def f_pow(a, b):
        return np.power(a, b)

    @staticmethod
    def f_pow_float(a, b):
        return np.power(np.asarray(a, np.float64), b)

    @staticmethod
    def intrinsic(name, *args):
        return vector_form(name, *args)

    @staticmethod
    def ufunc(name, *args):
        return getattr(np, name)(*args)

    @staticmethod
    def ufunc_int(name, x):
        return getattr(np, name)(x).astype(np.int64)

    @staticmethod
    def cast(name, x):
        return np.asarray(x).astype(np.dtype(name))

    _NUMBA_DTYPES: ClassVar[dict[str, str]] = {"boolean": "bool", "b1": "bool", "bool_": "bool", "byte": "uint8",
                     "double": "float64", "int_": "int64", "uint": "uint64"}

    def cast_numba(self, name, x):
        return np.asarray(x).astype(np.dtype(self._NUMBA_DTYPES.get(name, name)))

    def divide(self, op: str, site: int, a, b, lanes: np.ndarray):
        """``a op b`` for ``/``, ``//``, ``%``: numpy's values for a division
        by zero (as a GPU gives), each counted at ``site``."""
        divisor = np.broadcast_to(np.asarray(b), (len(lanes),))
        zero = divisor == 0
        if zero.any():
            site = min(site, self.records[DIVZ].shape[0] - 1)
            self.records[DIVZ][site] += int(zero.sum())
            lowest = int(self.G[lanes[zero]].min())
            self.records[DIVZ_THREAD][site] = min(self.records[DIVZ_THREAD][site], lowest)
        function = {"truediv": np.true_divide, "floordiv": np.floor_divide,
                    "mod": np.remainder}[op]
        return function(a, b)

    # -- accesses -------------------------------------------------------------------------

    def access(self, op: str, slot: int, site: int, array: np.ndarray, lanes: np.ndarray,
               indices: tuple, value):
        """One access site for ``lanes``: ``op`` "ld", "st" or "at<op>"."""
        info = self.slots[slot]
        count = len(lanes)
        self.calls += 1
        idx = [np.broadcast_to(np.asarray(i), (count,)).astype(np.int64, copy=False)
               for i in indices]
        shape = array.shape[1:] if info.role == "lc" else array.shape
        outside = (idx[0] < 0) | (idx[0] >= shape[0])
        offsets = idx[0].copy()
        for d in range(1, info.ndim):  # (row-major, as the helpers' offsets)
            outside |= (idx[d] < 0) | (idx[d] >= shape[d])
            offsets = offsets * shape[d] + idx[d]
        direction = 0 if op == "ld" else 1
        if outside.any():
            missed = [x[outside] for x in idx]
            self._oob(slot, direction, lanes[outside], missed)
            if info.write_index >= 0 and direction == 1:
                self._margin(info.write_index, missed, shape)
            inside = ~outside
            lanes_in, offsets_in = lanes[inside], offsets[inside]
        else:
            inside = None
            lanes_in, offsets_in = lanes, offsets
        flat = array.reshape(-1)
        if info.role == "lc":
            offsets_flat = lanes_in * int(np.prod(shape)) + offsets_in
        else:
            offsets_flat = offsets_in
        if info.role in ("in", "out", "sh") and len(lanes_in):
            self.notes.setdefault(site, []).append((lanes_in, offsets_in))
        if info.role == "sh" and len(lanes_in):
            j = idx[1] if info.ndim == 2 else np.zeros(count, np.int64)
            i_in = idx[0] if inside is None else idx[0][inside]
            j_in = j if inside is None else j[inside]
            shadow = self.shadows[info.name]
            if op == "ld":
                self._shared_read(shadow, offsets_in, lanes_in, site, slot, i_in, j_in)
            elif op == "st":
                self._shared_write(shadow, offsets_in, lanes_in, site, slot, i_in, j_in)
            else:
                self._shared_atomic(shadow, offsets_in, lanes_in, site, slot, i_in, j_in)
        if info.name in self.granges and len(lanes_in):
            j = idx[1] if info.ndim == 2 else np.zeros(count, np.int64)
            self._global_access(op, info.name, offsets_in, lanes_in, site, slot,
                                idx[0] if inside is None else idx[0][inside],
                                j if inside is None else j[inside])
        if op == "ld":
            out = np.zeros(count, array.dtype)
            if inside is None:
                out = flat[offsets_flat]
            else:
                out[inside] = flat[offsets_flat]
            return out
        if op == "atcas":
            return self._cas(info, flat, lanes_in, offsets_flat, offsets_in, value, count,
                             inside)
        values = np.broadcast_to(np.asarray(value), (count,))
        values_in = values if inside is None else values[inside]
        if info.write_index >= 0 and len(lanes_in):
            self._writers(info.write_index, COUNT if op == "st" else ATOMICS, lanes_in,
                          offsets_in)
        if op == "st":
            if self.keyed and info.role == "out":
                self._store_keyed(lanes_in, offsets_flat, values_in)
            else:
                flat[offsets_flat] = values_in
            return None
        return self._atomic(op[2:], flat, offsets_flat, values_in, count, inside)

    def _cas(self, info, flat, lanes, offsets, element_offsets, value, count: int, inside):
        """A compare-and-swap, lane after lane (each lane's compare sees the
        earlier lanes' swaps); the output's writers are those that swapped."""
        compared, new = (np.broadcast_to(np.asarray(v), (count,)) for v in value)
        if inside is not None:
            compared, new = compared[inside], new[inside]
        got = np.empty(len(offsets), flat.dtype)
        swapped = np.zeros(len(offsets), bool)
        for p in range(len(offsets)):
            got[p] = flat[offsets[p]]
            if got[p] == compared[p]:
                flat[offsets[p]] = new[p]
                swapped[p] = True
        if info.write_index >= 0 and swapped.any():
            self._writers(info.write_index, ATOMICS, lanes[swapped], element_offsets[swapped])
        if inside is None:
            return got
        old = np.zeros(count, flat.dtype)
        old[inside] = got
        return old

    def _atomic(self, op: str, flat, offsets, values, count: int, inside):
        """A user's atomic update: each lane's old value, lane after lane
        where lanes share an element (as the compiled tier runs them)."""
        old = np.zeros(count, flat.dtype)
        got = np.empty(len(offsets), flat.dtype)
        combine = {"add": np.add, "sub": np.subtract, "max": np.maximum,
                   "min": np.minimum, "and_": np.bitwise_and, "or_": np.bitwise_or,
                   "xor": np.bitwise_xor, "exch": lambda old, v: v,
                   "inc": lambda old, v: np.where(old >= v, 0, old + 1),
                   "dec": lambda old, v: np.where((old == 0) | (old > v), v, old - 1),
                   "nanmax": np.fmax, "nanmin": np.fmin}[op]
        if len(np.unique(offsets)) == len(offsets):
            got[:] = flat[offsets]
            flat[offsets] = combine(got, values)
        else:
            for p in range(len(offsets)):
                got[p] = flat[offsets[p]]
                flat[offsets[p]] = combine(got[p], values[p])
        if inside is None:
            return got
        old[inside] = got
        return old

    def _store_keyed(self, lanes, offsets, values) -> None:
        """Stores into the output when all warps of a chunk run as one vector:
        an element keeps the write of the latest warp (ties: the later lane),
        which the compiled tier's warp-after-warp order would leave."""
        keys = self.W[lanes]
        order = np.lexsort((np.arange(len(offsets)), keys, offsets))
        sorted_offsets = offsets[order]
        last = np.ones(len(order), bool)
        last[:-1] = sorted_offsets[1:] != sorted_offsets[:-1]
        chosen = order[last]
        offsets, keys = offsets[chosen], keys[chosen]
        later = keys >= self.output_key[offsets]
        self.output_flat[offsets[later]] = np.asarray(values)[chosen][later]
        self.output_key[offsets[later]] = keys[later]

    def _writers(self, index: int, which: int, lanes, offsets) -> None:
        """Writes by ``lanes`` to written array ``index`` (0: the output)."""
        g = self.G[lanes]
        flat = self.flat[index]
        np.add.at(flat[which], offsets, 1)
        stores = self.written[index][STORES]
        s = stores[g]
        stores[g] = s + 1
        minw = flat[MIN_WRITER]
        np.maximum.at(minw, offsets, (self.writer_max - g).astype(minw.dtype))
        np.maximum.at(flat[MAX_WRITER], offsets, (g + 1).astype(flat[MAX_WRITER].dtype))
        np.maximum.at(flat[ITERATION], offsets, (INT32_MAX - s).astype(flat[ITERATION].dtype))

    def _oob(self, slot: int, direction: int, lanes, index: list) -> None:
        g = self.G[lanes]
        oob = self.records[OOB]
        oob[slot, direction] += len(g)
        # The lowest thread, and its index when it is a new lowest: then this
        # is its first such access of this array (a thread's accesses come in
        # program order), as helper_library's _tm_oob_hit records it.
        at = int(np.argmin(g))
        lowest = int(g[at])
        if lowest < self.records[OOB_MIN_THREAD][slot, direction]:
            self.records[OOB_MIN_THREAD][slot, direction] = lowest
            found = [int(x[at]) for x in index]
            self.records[OOB_INDEX][slot, direction] = found + [0] * (3 - len(found))
        self.records[OOB_THREAD][g] += 1

    def _margin(self, index: int, indices: list, shape: tuple[int, ...]) -> None:
        """Out-of-bounds writes to written array ``index`` (0: the output) at
        ``indices`` of an array of ``shape``, counted where they landed in
        the margin around it (helper_library's _tm_margin<nd>): at (i, j), at
        flat index i (row i // N, column i % N), or at (i, j, k) (row i * d1
        + j, column k; none where j is outside d1)."""
        m, n = self.drawn[index]
        if len(indices) == 1:
            i, j = np.floor_divide(indices[0], n), np.remainder(indices[0], n)
        elif len(indices) == 3:
            i, j, k = indices
            drawn = (j >= 0) & (j < shape[1])
            i, j = i[drawn] * shape[1] + j[drawn], k[drawn]
        else:
            i, j = indices
        margin = self.written[index][MARGIN]
        np.add.at(margin, margin_cells(margin.shape, m, i, j), 1)

    # -- warp-level operations (see lockstep._Writer._warp) -------------------------------

    def warp_op(self, what: str, line: int, active, live, out, args) -> None:
        """A placed warp operation (derived/warp_ops.py) for the lanes of
        ``active``, its arguments the lane vectors ``args``, its result into
        the lane vector ``out``: the compiled tier's definitions, for every
        warp of the unit at once (a warp's lanes are consecutive, from lane 0)."""
        lanes = np.flatnonzero(active)
        if not lanes.size:
            return
        self.calls += 1
        lane_all = self.LANE % WARP
        start_all = np.arange(len(active)) - lane_all  # (each lane's warp's first lane)
        bit_all = np.left_shift(np.int64(1), lane_all)

        def warp_bits(which) -> np.ndarray:
            bits = np.zeros(len(active), np.int64)
            np.bitwise_or.at(bits, start_all[which], bit_all[which])
            return bits

        j, start = lane_all[lanes], start_all[lanes]
        act = warp_bits(active)[start]
        mask = None
        if what not in ("activemask", "lanemask_lt"):
            mask = np.asarray(args[0][lanes]).astype(np.int64) & 0xFFFFFFFF
            here = warp_bits(live)[start]
            bad = ((mask & here & ~act) != 0) | (((mask >> j) & 1) == 0)
            if bad.any():
                self._warp_hit(1, lanes[bad], line, mask[bad], act[bad], here[bad])
        if what == "syncwarp":
            self.WS[lanes] += 1
            return
        if what in SHUFFLES:
            mode = SHUFFLES[what]
            b = np.asarray(args[2][lanes]).astype(np.int64) & 31
            source = {"idx": b, "up": j - b, "down": j + b, "bfly": j ^ b}[mode]
            if mode in ("up", "down"):  # (past the warp's edge: the lane's own value)
                source = np.where((source < 0) | (source > 31), j, source)
            ok = (((act >> source) & 1) == 1) & (((mask >> source) & 1) == 1)
            if not ok.all():
                self._warp_hit(0, lanes[~ok], line, source[~ok], mask[~ok], act[~ok])
            out[lanes] = args[1][start + np.where(ok, source, j)]
        elif what == "activemask":
            out[lanes] = act
        elif what == "lanemask_lt":
            out[lanes] = (np.int64(1) << j) - 1
        elif what == MATCH:  # the lanes of each caller's mask here with its value
            inside = mask & act
            values = args[1]
            same = np.zeros(len(lanes), np.int64)
            for s in range(WARP):  # (``inside`` holds only lanes that exist)
                there = ((inside >> s) & 1) == 1
                source = np.minimum(start + s, len(active) - 1)
                equal = there & (values[source] == values[lanes])
                same |= np.where(equal, np.int64(1) << s, 0)
            out[lanes] = same
        else:  # a vote, over the lanes of each caller's mask that are here
            inside = mask & act
            yes = warp_bits(active & (np.asarray(args[1]) != 0))[start] & inside
            out[lanes] = {"ballot_sync": yes, "any_sync": yes != 0, "all_sync": yes == inside,
                          "eq_sync": (yes == 0) | (yes == inside)}[what]

    def _warp_hit(self, row: int, lanes, line: int, a, b, c) -> None:
        """Counted; the first kept in the compiled tier's order: warp after
        warp where a unit is a warp (each warp runs through the kernel on its
        own), else statement after statement, then warp and lane."""
        target = self.warp_records[row]
        target[0] += len(lanes)
        p = int(lanes[0])  # (the lowest warp and lane of this call)
        warp, lane = int(self.W[p]), int(self.LANE[p])
        key = (warp, self.calls, lane) if self.layout.warpwise else (self.calls, warp, lane)
        if self.warp_first[row] is None or key < self.warp_first[row]:
            self.warp_first[row] = key
            target[1:] = (int(self.G[p]) // self.job.request.threads_per_block, lane, line,
                          int(a[0]), int(b[0]), int(c[0]))

    # -- the shared-memory shadow (see record_runtime's _tm_shared_*) ---------------------

    def _hit(self, kind: str, lanes, payloads, count: int | None = None) -> None:
        """Hits at one access site: counted now (``count``, else one a lane);
        the first (by lane, then by the order of the statement's accesses)
        kept when the statement ends."""
        target = self.race if kind == "race" else self.uninit
        target[0] += len(lanes) if count is None else count
        if target[1] < 0:
            self.hits[kind].append((int(self.LANE[lanes[0]]), self.calls, payloads(0)))

    def _newly_raced(self, sh, raced) -> int:
        """How many of the shared elements ``raced`` (offsets, repeats allowed)
        this block had not raced on before, now marked: races are counted in
        elements, each block's own once (record_runtime's _tm_record_shared_race; the
        shadow's last column holds the block that counted the element)."""
        raced = np.unique(raced)
        new = raced[sh[raced, -1] != self.block]
        sh[new, -1] = self.block
        return len(new)

    def _shared_read(self, sh, e, lanes, site, slot, i, j, interval=None, hit=None) -> None:
        """A read of a shared array's elements (or, with ``interval`` and
        ``hit``, of a global array checked for races: its shadow's interval
        number, and what to do with a race, there being no unwritten global
        element)."""
        epoch = self.epoch if interval is None else interval
        lane_ids = self.LANE[lanes]
        written = sh[e, WRITE_EPOCH]
        unwritten = written < self.epoch0 if hit is None else np.zeros(len(e), bool)
        if unwritten.any():
            where = np.flatnonzero(unwritten)
            self._hit("uninit", lanes[where], lambda p: (
                self.block, int(lane_ids[where[p]]), slot, int(i[where[p]]), int(j[where[p]]),
                site))
        ws = self.WS[lanes]
        racing = ~unwritten & (written == epoch) & (sh[e, WRITER] != lane_ids) \
            & ~_syncwarp_between(sh[e, WRITER], sh[e, WRITER_SYNCWARPS], lane_ids, ws)
        if racing.any() and hit is not None:
            where = np.flatnonzero(racing)
            hit(where, sh[e[where], WRITER], _site_of_entry(sh[e[where], WRITER_SITE]))
        elif racing.any():
            where = np.flatnonzero(racing)
            self._hit("race", lanes[where], lambda p: (
                self.block, int(sh[e[where[p]], WRITER]),
                int(_site_of_entry(sh[e[where[p]], WRITER_SITE])),
                int(lane_ids[where[p]]), site, slot, int(i[where[p]]), int(j[where[p]])),
                self._newly_raced(sh, e[where]))
        # Readers of each element in this interval: the first, and a second,
        # different one.  Lanes come in order; group them by element.
        order = np.argsort(e, kind="stable")
        es, ls = e[order], lane_ids[order]
        start = np.ones(len(es), bool)
        start[1:] = es[1:] != es[:-1]
        starts = np.flatnonzero(start)
        sizes = np.diff(np.append(starts, len(es)))
        elements = es[starts]
        firsts = ls[starts]
        seconds = np.where(sizes > 1, ls[np.minimum(starts + 1, len(es) - 1)], -1)
        noted = sh[elements, READ_EPOCH] == epoch
        fresh = elements[~noted]
        if len(fresh):
            sh[fresh, READ_EPOCH] = epoch
            sh[fresh, READER] = firsts[~noted]
            sh[fresh, READER_SITE] = site
            second = seconds[~noted]
            sh[fresh, SECOND_READER] = second
            has = second >= 0
            sh[fresh[has], SECOND_READER_SITE] = site
        old = elements[noted]
        if len(old):
            open_ = sh[old, SECOND_READER] < 0
            old = old[open_]
            if len(old):
                reader = sh[old, READER]
                f, s = firsts[noted][open_], seconds[noted][open_]
                other = np.where(f != reader, f, s)
                has = other >= 0
                sh[old[has], SECOND_READER] = other[has]
                sh[old[has], SECOND_READER_SITE] = site
        # Each reader's syncwarps, as of its latest read (one value per lane
        # in a statement, so the order of its lanes does not matter).
        first, second = sh[e, READER] == lane_ids, sh[e, SECOND_READER] == lane_ids
        sh[e[first], READER_SYNCWARPS] = ws[first]
        sh[e[second], SECOND_READER_SYNCWARPS] = ws[second]

    def _shared_write(self, sh, e, lanes, site, slot, i, j, interval=None, hit=None) -> None:
        if len(np.unique(e)) != len(e):
            for p in range(len(e)):
                self._shared_write(sh, e[p:p + 1], lanes[p:p + 1], site, slot, i[p:p + 1],
                                   j[p:p + 1], interval,
                                   None if hit is None else _shifted(hit, p))
            return
        epoch = self.epoch if interval is None else interval
        lane_ids = self.LANE[lanes]
        ws = self.WS[lanes]
        same = sh[e, WRITE_EPOCH] == epoch
        # (record_runtime's _tm_racing_entry, over vectors: the writer, the first
        # reader, the second)
        writer, reader, second = sh[e, WRITER], sh[e, READER], sh[e, SECOND_READER]
        h1 = same & (writer != lane_ids) \
            & ~_syncwarp_between(writer, sh[e, WRITER_SYNCWARPS], lane_ids, ws)
        read = sh[e, READ_EPOCH] == epoch
        h2 = ~h1 & read & (reader != lane_ids) \
            & ~_syncwarp_between(reader, sh[e, READER_SYNCWARPS], lane_ids, ws)
        h3 = ~h1 & ~h2 & read & (second >= 0) & (second != lane_ids) \
            & ~_syncwarp_between(second, sh[e, SECOND_READER_SYNCWARPS], lane_ids, ws)
        raced = h1 | h2 | h3
        if raced.any():
            where = np.flatnonzero(raced)
            other_lane = np.where(h1, writer, np.where(h2, reader, second))
            other_site = np.where(h1, _site_of_entry(sh[e, WRITER_SITE]),
                                  np.where(h2, sh[e, READER_SITE], sh[e, SECOND_READER_SITE]))
            if hit is not None:
                hit(where, other_lane[where], other_site[where])
            else:
                self._hit("race", lanes[where], lambda p: (
                    self.block, int(other_lane[where[p]]), int(other_site[where[p]]),
                    int(lane_ids[where[p]]), site, slot, int(i[where[p]]), int(j[where[p]])),
                    self._newly_raced(sh, e[where]))
        sh[e, WRITE_EPOCH] = epoch
        sh[e, WRITER] = lane_ids
        sh[e, WRITER_SITE] = site
        sh[e, WRITER_SYNCWARPS] = ws

    # -- a global array checked for races (see record_runtime's _tm_global_*) -------------

    def _global_access(self, op: str, name: str, e, lanes, site, slot, i, j) -> None:
        ranges = self.granges[name]
        if not ranges.size:  # (too large to check)
            return
        keys = self.G[lanes] * self.keys_per_thread + site
        column = 0 if op == "ld" else 2 if op == "st" else 4
        np.minimum.at(ranges[:, column], e, keys)
        np.maximum.at(ranges[:, column + 1], e, keys)
        shadow = self.gshadows[name]
        interval = (self.block << 32) + (self.epoch - self.epoch0)

        def hit(where, other_lanes, other_sites) -> None:
            # each element raced on flagged; the lowest (slot, offset) kept
            # with its first pair (the lowest lane among this call's)
            self._hit_now.update(int(p) for p in where)
            ranges[e[where], 6] = 1
            self.grace[0] += len(where)
            low = int(e[where].min())
            p = int(where[np.flatnonzero(e[where] == low)[0]])
            q = int(np.flatnonzero(where == p)[0])
            grace = self.grace
            if grace[1] < 0 or (slot, low) < (int(grace[1]), int(grace[2])):
                grace[1:] = (slot, low, self.block, int(other_lanes[q]), int(other_sites[q]),
                             int(self.LANE[lanes[p]]), site, int(i[p]), int(j[p]))

        self._hit_now = set()
        if op == "ld":
            self._shared_read(shadow, e, lanes, site, slot, i, j, interval, hit)
        elif op == "st":
            self._shared_write(shadow, e, lanes, site, slot, i, j, interval, hit)
        else:
            # lane after lane, as the compiled tier's _tm_check_global_atomic
            lane_ids = self.LANE[lanes]
            for p in range(len(e)):
                row, lane, w = shadow[e[p]], int(lane_ids[p]), int(self.WS[lanes[p]])
                other = _racing_entry(row, lane, w, interval, True)
                if other is not None:
                    hit(np.array([p]), np.array([other[0]]), np.array([other[1]]))
                if row[ATOMIC_EPOCH] != interval:
                    row[ATOMIC_EPOCH], row[ATOMIC_LANE], row[ATOMIC_SITE], \
                        row[SECOND_ATOMIC_LANE] = interval, lane, site, -1
                elif row[ATOMIC_LANE] != lane and row[SECOND_ATOMIC_LANE] < 0:
                    row[SECOND_ATOMIC_LANE], row[SECOND_ATOMIC_SITE] = lane, site
            return
        # a plain access meeting another thread's atomic update of the interval
        # (where no plain access was met first, as the compiled tier's order)
        lane_ids = self.LANE[lanes]
        first = shadow[e, ATOMIC_LANE] != lane_ids
        other = np.where(first, shadow[e, ATOMIC_LANE], shadow[e, SECOND_ATOMIC_LANE])
        other_site = np.where(first, shadow[e, ATOMIC_SITE], shadow[e, SECOND_ATOMIC_SITE])
        met = (shadow[e, ATOMIC_EPOCH] == interval) & (other >= 0)
        met[list(self._hit_now)] = False
        if met.any():
            where = np.flatnonzero(met)
            hit(where, other[where], other_site[where])

    def _shared_atomic(self, sh, e, lanes, site, slot, i, j) -> None:
        """Lane after lane, as record_runtime's _tm_check_shared_atomic: an atomic
        races with another lane's plain store or read of the interval, never
        with an atomic (its entry's site kept as -(site + 1))."""
        epoch = self.epoch
        for p in range(len(e)):
            lane, w, row = int(self.LANE[lanes[p]]), int(self.WS[lanes[p]]), sh[e[p]]
            stored = row[WRITE_EPOCH] == epoch and row[WRITER_SITE] >= 0  # (a plain store)
            other = None
            if row[WRITE_EPOCH] < self.epoch0:
                self._hit("uninit", lanes[p:p + 1], lambda _, lane=lane, p=p: (
                    self.block, lane, slot, int(i[p]), int(j[p]), site))
            else:
                other = _racing_entry(row, lane, w, epoch, stored)
            if other is not None:
                self._hit("race", lanes[p:p + 1], lambda _, lane=lane, p=p, other=other: (
                    self.block, other[0], other[1], lane, site, slot, int(i[p]), int(j[p])),
                    self._newly_raced(sh, e[p:p + 1]))
            if not (stored and row[WRITER] == lane):  # (its own store stays the entry)
                row[WRITE_EPOCH], row[WRITER], row[WRITER_SITE], row[WRITER_SYNCWARPS] = \
                    epoch, lane, -site - 1, w

    # -- the end of a statement: warp requests --------------------------------------------

    def flush(self) -> None:
        for site, parts in self.notes.items():
            lanes = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
            offsets = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
            info = self.sites[site]
            if info.space == "shared":
                self._flush_shared(site, lanes, offsets, self.item[info.array])
            else:
                self._flush_global(site, lanes, offsets)
                if info.kind == "load" and info.array in self.inputs:
                    np.add.at(self.reads[self.inputs.index(info.array)], offsets, 1)
        self.notes.clear()
        for kind, found in self.hits.items():
            if found:
                target = self.race if kind == "race" else self.uninit
                if target[1] < 0:
                    _, _, payload = min(found, key=lambda h: (h[0], h[1]))
                    target[1:1 + len(payload)] = payload
                found.clear()

    def _warp_groups(self, lanes, offsets):
        warps = self.W[lanes]
        order = np.lexsort((offsets, warps))
        return warps[order], offsets[order]

    def _done(self, site: int, warps: np.ndarray, cost: np.ndarray, ideal: np.ndarray,
              active: np.ndarray) -> None:
        sums = self.req[site]
        sums[32] += len(warps)
        sums[33] += int(cost.sum())
        sums[34] = max(int(sums[34]), int(cost.max()))
        sums[35] += int(ideal.sum())
        sums[36] += int(active.sum())
        self.accw[site, warps, 0] += 1
        self.accw[site, warps, 1] += cost

    def _flush_global(self, site: int, lanes, offsets) -> None:
        ws, es = self._warp_groups(lanes, offsets)
        item = self.global_item[self.sites[site].array]
        new_warp = np.ones(len(ws), bool)
        new_warp[1:] = ws[1:] != ws[:-1]
        new_element = new_warp.copy()
        new_element[1:] |= es[1:] != es[:-1]
        sectors = (es * item) >> 5
        new_sector = new_warp.copy()
        new_sector[1:] |= sectors[1:] != sectors[:-1]
        group = np.cumsum(new_warp) - 1
        warps = ws[new_warp]
        active = np.bincount(group)
        elements = np.bincount(group, weights=new_element).astype(np.int64)
        cost = np.bincount(group, weights=new_sector).astype(np.int64)
        ideal = (elements * item + 31) >> 5
        self._done(site, warps, cost, ideal, active)

    def _flush_shared(self, site: int, lanes, offsets, item: int) -> None:
        """Passes of the 32 banks per warp request: lanes are served in groups
        (a half-warp for 8-byte elements); a group takes as many passes as the
        most distinct words one bank must deliver (lanes on one word share it)."""
        if len(lanes) > 1 and (np.diff(lanes) < 0).any():
            order = np.argsort(lanes, kind="stable")
            lanes, offsets = lanes[order], offsets[order]
        words = item >> 2 if item >= 4 else 1
        group_size = 32 // words
        lane_ids = self.LANE[lanes]
        # (warp, lane group) of each lane, in lane order: non-decreasing.
        segment_key = self.W[lanes] * words + (lane_ids & 31) // group_size
        if item >= 4:
            word = (offsets[:, None] * words + np.arange(words)[None, :]).reshape(-1)
            segment_key = np.repeat(segment_key, words)
        else:
            word = (offsets * item) >> 2
        starts = _starts(segment_key)
        low = np.minimum.reduceat(word, starts)
        high = np.maximum.reduceat(word, starts)
        ways = np.ones(len(starts), np.int64)
        wide = np.flatnonzero(high - low >= 32)  # words in one span of 32: distinct banks
        if len(wide):
            segment = np.repeat(np.arange(len(starts)), _lengths(starts, len(word)))
            pick = np.isin(segment, wide)
            distinct = np.unique(segment[pick] * (1 << 40) + word[pick])
            seg, bank = distinct >> 40, (distinct & ((1 << 40) - 1)) & 31
            per_bank = np.bincount(seg * 32 + bank, minlength=len(starts) * 32)
            ways[wide] = per_bank.reshape(len(starts), 32)[wide].max(axis=1)
        segment_warps = segment_key[starts] // words
        warp_starts = _starts(segment_warps)
        warps = segment_warps[warp_starts]
        passes = np.add.reduceat(ways, warp_starts)
        groups = _lengths(warp_starts, len(starts))
        active = _lengths(_starts(self.W[lanes]), len(lanes))
        self._done(site, warps, passes, groups, active)

    # -- branches and barriers ------------------------------------------------------------

    def branch(self, site: int, lanes, taken, returning: bool = False) -> None:
        """Warps at a branch: their arrived lanes, and those taking it.
        ``returning``: a return, which a warp runs only where some of its
        lanes are at it (its other lanes are the alive ones that stay)."""
        if not len(lanes):
            return
        warps = self.W[lanes]
        unique, index = np.unique(warps, return_inverse=True)
        index = index.reshape(-1)
        arrived = np.bincount(index, minlength=len(unique))
        took = np.bincount(index, weights=np.asarray(taken, np.int64),
                           minlength=len(unique)).astype(np.int64)
        br = self.br[site]
        going = took > 0
        br[0] += int(going.sum()) if returning else len(unique)
        if going.any():
            br[1] += int(going.sum())
            br[2] += int(took.sum())
            br[3] = min(int(br[3]), int(took[going].min()))
            self.brw[site, unique[going], 0] += 1
            self.brw[site, unique[going], 1] += took[going]
            br[4] += int((going & (took < arrived)).sum())

    def branch_masks(self, site: int, arrived, taken, returning: bool = False) -> None:
        lanes = np.flatnonzero(arrived)
        self.branch(site, lanes, taken[lanes], returning)

    def barrier(self, site: int, mask) -> int:
        arrived = int(mask.sum())
        threads = len(mask)
        if 0 < arrived < threads:
            bar = self.bar[site]
            bar[0] += 1
            if bar[2] != self.block:
                bar[1] += 1
                bar[2] = self.block
            if bar[3] < 0:
                bar[3] = self.block
                bar[4] = arrived
                bar[5] = threads - arrived
                bar[6] = int(np.flatnonzero(~mask)[0])
        self.epoch += 1
        return arrived


def _syncwarp_between(a, wa, b, wb) -> np.ndarray:
    """record_runtime's _tm_syncwarp_between, over vectors: the two accesses' lanes share
    a warp and a syncwarp came between them."""
    return (a // WARP == b // WARP) & (wa != wb)


def _racing_entry(row, lane: int, w: int, epoch, writer: bool) -> tuple[int, int] | None:
    """record_runtime's _tm_racing_entry for one lane's access that writes (a
    plain store, or an atomic: ``writer`` when it is to meet a plain store):
    the (lane, site) of another thread's access of this interval in the
    shadow ``row`` that it races with, or None."""
    if writer and row[WRITE_EPOCH] == epoch and row[WRITER] != lane \
            and not _syncwarp_between(row[WRITER], row[WRITER_SYNCWARPS], lane, w):
        return int(row[WRITER]), int(_site_of_entry(row[WRITER_SITE]))
    if row[READ_EPOCH] != epoch:
        return None
    if row[READER] != lane and not _syncwarp_between(row[READER], row[READER_SYNCWARPS], lane, w):
        return int(row[READER]), int(row[READER_SITE])
    second = row[SECOND_READER]
    if second >= 0 and second != lane \
            and not _syncwarp_between(second, row[SECOND_READER_SYNCWARPS], lane, w):
        return int(second), int(row[SECOND_READER_SITE])
    return None


def _shifted(hit, p: int):
    """``hit`` for a one-lane call made for lane ``p`` of a larger one."""
    return lambda where, lanes, sites: hit(where + p, lanes, sites)


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal keys begins."""
    change = np.empty(len(sorted_keys), bool)
    change[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=change[1:])
    return np.flatnonzero(change)


def _site_of_entry(kept):
    """A shadow's site column read back: an atomic's kept as -(site + 1)
    (record_runtime's _tm_site_of_entry)."""
    return np.where(np.asarray(kept) >= 0, kept, -np.asarray(kept) - 1)


def _lengths(starts: np.ndarray, total: int) -> np.ndarray:
    """Lengths of the runs beginning at ``starts``."""
    return np.diff(starts, append=total)


def run_instant(job: KernelJob, hand_over_after: float | None = None) -> BackendOutput:
    """Run the recording emulation in numpy (the instant tier); past
    ``hand_over_after`` seconds of it, raise :class:`TooSlow`."""
    request = job.request
    plan = job.plan
    began = time.perf_counter()
    code, unit = _program(plan, request.element_types, job.scalar_types)
    derive_seconds = time.perf_counter() - began
    layout = code.layout
    records = job.fresh_records(encoded=True)
    c = job.fresh_output()
    tpb = request.threads_per_block
    nw = -(-tpb // WARP)
    lockstep = allocate_lockstep_records(len(layout.sites), len(layout.branches),
                                         len(layout.barriers), request.blocks * nw)
    sizes = job.array_elements()
    for name in layout.race_arrays:
        lockstep[global_ranges_param(name)] = allocate_global_ranges(
            sizes[name] if sizes[name] <= RACE_CHECK_ELEMENTS else 0)
    grid_wide = layout.warpwise and not order_matters(plan)
    runtime = VectorRuntime(job, code, records, lockstep, keyed=grid_wide, c=c)
    if hand_over_after is not None:
        from ..estimate import INSTANT_SECONDS_PER_VECTOR_STEP, machine_factor

        runtime.deadline = runtime.started + hand_over_after
        runtime.step_seconds = INSTANT_SECONDS_PER_VECTOR_STEP * machine_factor()
    gdx, gdy = request.grid2
    bdx, bdy = request.block2
    arguments = [_scalar(a) for a in job.arguments(c)]
    blocks = request.blocks
    if grid_wide:
        per_chunk = max(1, CHUNK_LANES // tpb)
        units = [(b, min(b + per_chunk, blocks), 0, tpb) for b in range(0, blocks, per_chunk)]
    elif layout.warpwise:
        units = [(b, b + 1, w * WARP, min(w * WARP + WARP, tpb))
                 for b in range(blocks) for w in range(nw)]
    else:
        units = [(b, b + 1, 0, tpb) for b in range(blocks)]
    block_arrays = []
    for array in layout.block_arrays:
        shape = array.shape if array.kind == "shared" else (tpb,) + array.shape
        block_arrays.append((array, np.zeros(shape, array.dtype)))
    start = time.perf_counter()
    last_report = start
    with np.errstate(all="ignore"):
        for number, (b0, b1, lane0, lane1) in enumerate(units):
            lanes_in_block = np.arange(lane0, lane1, dtype=np.int64)
            block_ids = np.repeat(np.arange(b0, b1, dtype=np.int64), len(lanes_in_block))
            lane = np.tile(lanes_in_block, b1 - b0)
            gtid = block_ids * tpb + lane
            warps = block_ids * nw + lane // WARP
            runtime.set_unit(gtid, warps, lane, b0)
            runtime.units_left = len(units) - number
            runtime.epoch0 = runtime.epoch
            arrays = []
            for array, values in block_arrays:
                values.fill(np.nan if np.dtype(array.dtype).kind in "fc" else 0)
                arrays.append(values if array.kind == "shared" else values[lane0:lane1])
            try:
                unit(*arguments, runtime, lane % bdx, lane // bdx, block_ids % gdx,
                     block_ids // gdx, gtid, len(lane), bdx, bdy, gdx, gdy, *arrays)
            except (ThreadMapError, MemoryError, TooSlow):
                raise
            except Exception as exc:  # noqa: BLE001
                # numpy met something its forms do not cover: the compiled tier
                # runs the kernel instead (and reports what the kernel did).
                raise EmulationUnsupported(
                    f"the instant tier stopped on {type(exc).__name__}: {exc}") from None
            runtime.epoch += 1
            now = time.perf_counter()
            if now - last_report > 0.05:
                last_report = now
                job.check_cancel()
                job.progress(0.05 + 0.9 * (number + 1) / len(units),
                             f"instant tier: {b1:,} of {blocks:,} blocks")
    spent = time.perf_counter() - start
    decode_writers(records, len(job.plan.inputs), len(job.written_shapes()))
    timings = [
        Timing("derive", "cpu-instant", derive_seconds,
               "writing the instant tier's numpy form of the kernel (no compile)"),
        Timing("instrumented kernel", "cpu-instant", spent, INSTANT_METHOD, 1, job.flops),
    ]
    raced = lockstep["_tm_race"][0] or raced_in_global_memory(
        lockstep, layout.race_arrays, max(len(layout.sites), 1) * tpb)
    notes = [RACED_NOTE] if raced else []
    oob = int(records[OOB].sum())
    if oob:
        notes.append(f"the instrumented run found {oob:,} out-of-bounds accesses, which on a "
                     "GPU can corrupt memory or end the CUDA context (C shown is its own, with "
                     "those reads as 0 and those writes skipped)")
    return BackendOutput(c, records, None, timings, notes, lockstep=lockstep, layout=layout,
                         prints=None)


def _scalar(value):
    """A kernel argument as numba types it (a Python int is int64)."""
    if isinstance(value, (bool, np.ndarray)):
        return value
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    return value


