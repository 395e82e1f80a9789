"""The CPU emulation's recording runtime: what the compiled tier's lockstep
code calls to measure warp requests (coalescing, bank conflicts), branches,
barriers, and the shadows of the race and uninitialised-read checks.

Real Python, which the linter and coverage see, and which runs as it is: the
compiled tier does not paste it into each kernel's module as text but
*links* it (:func:`link`): each function's code is bound to a namespace of
its own per kernel, where the kernel's constants (its number of access sites,
whether it calls syncwarp, the bytes of an element at each site) replace the
defaults below, and compiled by numba there, which folds them.  Names of
shadow columns come from ``shadow.py``, which the instant tier reads too.

Its cost is in the flush of each warp request (benchmarks/bench_engine.py):
it takes few arrays (each array argument of a numba call costs ~10 scalars),
counts a full ascending request without branches, and inlines its small
helpers.  A warp request is gathered while the lanes of one warp run one
statement (a lane reaches a site at most once per statement), then flushed
into the per-site sums.  Counters are int64 throughout; see records.py.

The functions keep the short argument names of the generated code that
calls them (the names below); what each one holds:

* ``req``: the warp requests' table (records.py ``_tm_req``): per access
  site, the offsets its lanes gave in the request being gathered, then the
  site's sums; rows from ``_TM_SCRATCH`` on are scratch room.  ``offs``,
  ``rounds``: a loop recorded lane by lane, its lanes' offsets by round.
* ``accw``: per warp, its accesses; ``warp``: the warp's number in the launch.
* ``site``: an access site (a branch or barrier site in ``_tm_record_branch`` and
  ``_tm_record_missed_barrier``); ``sl``: the checked array's slot; ``i``, ``j``: the
  access's indices, for the message.
* ``sh``, ``gsh``: the shadow of a shared array, of a global array checked
  for races (``shadow.py`` names its columns); ``grg``: a global array's
  access ranges (lowest and highest key of its reads, writes and atomics,
  and the flag of a race within a block); ``e``: the element's offset.
* ``lane``: the thread's number in its block; ``g``: in the launch;
  ``block``: the block's number.  ``ws``: the syncwarps each lane has passed,
  ``w``: the calling lane's.
* ``epoch``: the block's barrier interval, ``epoch0``: its first (a write
  before it was not this block's); for a global array, ``interval`` is
  ``(block << 32)`` + the block's interval.
* ``race``, ``uninit``, ``grace``, ``bar``, ``br``, ``brw``: the records
  (records.py) of shared races, uninitialised reads, races in global memory,
  barriers some threads missed, and branches by site and by warp.
"""
from __future__ import annotations

import hashlib
import types
from pathlib import Path
from typing import Callable

import numpy as np

from .shadow import (
    ATOMIC_EPOCH,
    ATOMIC_LANE,
    ATOMIC_SITE,
    READ_EPOCH,
    READER,
    READER_SITE,
    READER_SYNCWARPS,
    SECOND_ATOMIC_LANE,
    SECOND_ATOMIC_SITE,
    SECOND_READER,
    SECOND_READER_SITE,
    SECOND_READER_SYNCWARPS,
    WRITE_EPOCH,
    WRITER,
    WRITER_SITE,
    WRITER_SYNCWARPS,
)

# -- what each kernel's link gives (defaults: a kernel of one site, float32,
# without syncwarp) ---------------------------------------------------------------------

#: rows of the warp requests' table below the sites' rows (records.py): its
#: first row of scratch room, one per access site
_TM_SCRATCH = 1
#: the kernel calls cuda.syncwarp(): shadows keep the syncwarps each access
#: had passed (False: numba drops those figures, and a shadow keeps 9 columns)
_TM_WARP_SYNC = False
#: numba's int64 in a linked copy; numpy's here
_tm_i64 = np.int64
#: no bank word: larger than any
_TM_NO_WORD = 1 << 62


def _tm_item(site):
    """Bytes of an element of the global array an access site reaches."""
    return 4


#: the runtime's functions in order, and which are inlined where called
RUNTIME: list[tuple[str, bool]] = []


def compiled(function: Callable) -> Callable:
    """A runtime function compiled on its own (called, not inlined)."""
    RUNTIME.append((function.__name__, False))
    return function


def inlined(function: Callable) -> Callable:
    """A small runtime function inlined where it is called."""
    RUNTIME.append((function.__name__, True))
    return function


@compiled
def _tm_note_lane_offset(req, site, lane, value):
    # The lane's element offset in its warp's request at this site (-1: the
    # lane did not get there, or was out of bounds).
    req[site, lane & 31] = value


@compiled
def _tm_sort_row(a, row, n):
    # Insertion sort of a[row, :n]: linear for the usual, ordered requests.
    for p in range(1, n):
        v = a[row, p]
        q = p - 1
        while q >= 0 and a[row, q] > v:
            a[row, q + 1] = a[row, q]
            q -= 1
        a[row, q + 1] = v


@compiled
def _tm_gather_active(offs, row, req):
    # The active lanes' offsets of a request (offs[row]), into the first
    # scratch row of req.
    m = 0
    for p in range(32):
        if offs[row, p] >= 0:
            req[_TM_SCRATCH, m] = offs[row, p]
            m += 1


@compiled
def _tm_measure_sorted_request(a, row, n, counts, count, item):
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


@inlined
def _tm_measure_full_request(offs, row, item):
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


@compiled
def _tm_flush_input_request(req, site, accw, warp, counts):
    _tm_flush_input_request_of(req, site, req, site, accw, warp, counts)


@compiled
def _tm_flush_input_request_rounds(offs, rounds, req, site, accw, warp, counts):
    # The requests of rounds 0 .. rounds - 1 of a loop recorded lane by lane
    # (offs[r]: round r's), in one call: the flush is inlined here, which
    # halved its cost (32 -> 14 ns a request; most of it was the call).
    for r in range(rounds):
        _tm_flush_input_request_of(offs, r, req, site, accw, warp, counts)


@inlined
def _tm_flush_input_request_of(offs, row, req, site, accw, warp, counts):
    # A warp request that loads an input (its lanes' offsets in offs[row]):
    # as _tm_flush_global_request, and each element's reads added to counts (one add
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
            _tm_add_global_request(offs, row, req, site, accw, warp, 32, 1, 1)
            return
        if step == 0:
            for p in range(32):
                counts[first + p] += 1
            sectors = (((first + 31) * item) >> 5) - ((first * item) >> 5) + 1
            _tm_add_global_request(offs, row, req, site, accw, warp, 32, 32, sectors)
            return
    if offs[row, 0] >= 0:
        ascending, elements, sectors = _tm_measure_full_request(offs, row, item)
        if ascending:
            first = offs[row, 0]
            if elements == 1:  # a broadcast
                counts[first] += 32
            elif elements == 32:
                for p in range(32):
                    counts[offs[row, p]] += 1
            else:
                _tm_measure_sorted_request(offs, row, 32, counts, True, item)
            _tm_add_global_request(offs, row, req, site, accw, warp, 32, elements, sectors)
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
        _tm_gather_active(offs, row, req)
        for p in range(added):  # the runs already counted: the first lanes
            counts[req[_TM_SCRATCH, p]] -= 1
        _tm_sort_row(req, _TM_SCRATCH, lanes)
        elements, sectors = _tm_measure_sorted_request(req, _TM_SCRATCH, lanes, counts, True, item)
    _tm_add_global_request(offs, row, req, site, accw, warp, lanes, elements, sectors)


@compiled
def _tm_flush_global_request(req, site, accw, warp):
    _tm_flush_global_request_of(req, site, req, site, accw, warp)


@compiled
def _tm_flush_global_request_rounds(offs, rounds, req, site, accw, warp):
    # As _tm_flush_input_request_rounds, for a load that counts no reads.
    for r in range(rounds):
        _tm_flush_global_request_of(offs, r, req, site, accw, warp)


@inlined
def _tm_flush_global_request_of(offs, row, req, site, accw, warp):
    # One warp request to global memory (its lanes' offsets in offs[row],
    # its sums in req[site]): the distinct 32-byte sectors it
    # touches, against the fewest its distinct elements could fill.  A full
    # warp on ascending elements (the usual case) is counted without
    # branches; else one pass while the elements ascend, or the request is
    # copied to the scratch row, sorted and counted there.
    item = _tm_item(site)
    if offs[row, 0] >= 0:
        ascending, elements, sectors = _tm_measure_full_request(offs, row, item)
        if ascending:
            _tm_add_global_request(offs, row, req, site, accw, warp, 32, elements, sectors)
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
        _tm_gather_active(offs, row, req)
        _tm_sort_row(req, _TM_SCRATCH, lanes)
        elements, sectors = _tm_measure_sorted_request(req, _TM_SCRATCH, lanes, req[0], False, item)
    _tm_add_global_request(offs, row, req, site, accw, warp, lanes, elements, sectors)


@inlined
def _tm_add_global_request(offs, row, req, site, accw, warp, active, elements, sectors):
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


@compiled
def _tm_count_bank_ways(req, first_lane, group, item):
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
    _tm_sort_row(req, _TM_SCRATCH, m)
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


@compiled
def _tm_flush_shared_request(req, site, item, accw, warp):
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
            _tm_add_shared_request(req, site, accw, warp, 32, 1, 1)
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
            passes += _tm_count_bank_ways(req, first_lane, group, item)
    if lanes:
        _tm_add_shared_request(req, site, accw, warp, lanes, passes, groups)


@compiled
def _tm_flush_shared_request_words(req, site, accw, warp):
    # _tm_flush_shared_request for 4-byte elements (float32, int32), the usual case,
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
            _tm_add_shared_request(req, site, accw, warp, 32, 1, 1)
            return
    _tm_flush_shared_request(req, site, _tm_i64(4), accw, warp)


@inlined
def _tm_add_shared_request(req, site, accw, warp, lanes, passes, groups):
    # Add a shared-memory request to its site's sums and its warp's.
    req[site, 32] += 1
    req[site, 33] += passes
    if passes > req[site, 34]:
        req[site, 34] = passes
    req[site, 35] += groups
    req[site, 36] += lanes
    accw[site, warp, 0] += 1
    accw[site, warp, 1] += passes


@compiled
def _tm_record_branch(br, brw, site, warp, arrived, taken):
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


@compiled
def _tm_record_missed_barrier(bar, site, block, tpb, arrived, first_missing):
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


@compiled
def _tm_record_warp_hazard(warp, row, block, lane, line, a, b, c):
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


@compiled
def _tm_record_shared_race(race, sh, e, block, other, other_site, lane, site, sl, i, j):
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


@compiled
def _tm_record_uninitialised_read(uninit, block, lane, sl, site, i, j):
    uninit[0] += 1
    if uninit[1] < 0:
        uninit[1] = block
        uninit[2] = lane
        uninit[3] = sl
        uninit[4] = i
        uninit[5] = j
        uninit[6] = site


# The shadow of a shared array, per element, by its columns' names
# (shadow.py): the last write's interval (epoch), lane and site; the interval
# of the reads noted, and two readers' lanes and sites; the syncwarps the
# writer and each reader had passed; and last the block whose race on the
# element was counted (_tm_record_shared_race).  Two accesses of one interval are
# ordered when their lanes share a warp and a syncwarp came between them.

@inlined
def _tm_syncwarp_between(a, wa, b, wb):
    return _TM_WARP_SYNC and a // 32 == b // 32 and wa != wb


# (_TM_WARP_SYNC, the module's constant, is False for a kernel without a
# syncwarp: numba then drops the syncwarp figures, and the shadow keeps the
# first 8 columns and the last: 9.)

@inlined
def _tm_note_reader(sh, e, lane, epoch, site, w):
    # A read noted in a shadow (a shared array's, or a global one's): the
    # first reader of the interval, or a second, different one, each with the
    # syncwarps it had passed.
    if sh[e, READ_EPOCH] != epoch:
        sh[e, READ_EPOCH] = epoch
        sh[e, READER] = lane
        sh[e, READER_SITE] = site
        sh[e, SECOND_READER] = -1
        if _TM_WARP_SYNC:
            sh[e, READER_SYNCWARPS] = w
    elif sh[e, READER] == lane:
        if _TM_WARP_SYNC:
            sh[e, READER_SYNCWARPS] = w
    elif sh[e, SECOND_READER] < 0:
        sh[e, SECOND_READER] = lane
        sh[e, SECOND_READER_SITE] = site
        if _TM_WARP_SYNC:
            sh[e, SECOND_READER_SYNCWARPS] = w
    elif sh[e, SECOND_READER] == lane:
        if _TM_WARP_SYNC:
            sh[e, SECOND_READER_SYNCWARPS] = w


@inlined
def _tm_site_of_entry(kept):
    # A shadow's site column: a plain store's site, or an atomic's, kept as
    # -(site + 1) (_tm_check_shared_atomic).
    return kept if kept >= 0 else -kept - 1


@inlined
def _tm_racing_entry(sh, e, lane, epoch, w, writer):
    # The entry of another thread's access in this interval that an access by
    # lane races with (its lane and site, or -1, -1): the last write (when
    # writer: the access writes, or is an atomic meeting a plain store), else
    # the first reader, else the second.  One test for every kind of access
    # that writes (_tm_check_shared_write, _tm_check_shared_atomic, _tm_met_plain_access).
    if writer and sh[e, WRITE_EPOCH] == epoch and sh[e, WRITER] != lane \
            and not _tm_syncwarp_between(sh[e, WRITER], sh[e, WRITER_SYNCWARPS], lane, w):
        return sh[e, WRITER], _tm_site_of_entry(sh[e, WRITER_SITE])
    if sh[e, READ_EPOCH] != epoch:
        return _tm_i64(-1), _tm_i64(-1)
    if sh[e, READER] != lane \
            and not _tm_syncwarp_between(sh[e, READER], sh[e, READER_SYNCWARPS], lane, w):
        return sh[e, READER], sh[e, READER_SITE]
    second = sh[e, SECOND_READER]
    if second >= 0 and second != lane \
            and not _tm_syncwarp_between(second, sh[e, SECOND_READER_SYNCWARPS], lane, w):
        return second, sh[e, SECOND_READER_SITE]
    return _tm_i64(-1), _tm_i64(-1)


@inlined
def _tm_note_writer(sh, e, lane, epoch, kept_site, w):
    sh[e, WRITE_EPOCH] = epoch
    sh[e, WRITER] = lane
    sh[e, WRITER_SITE] = kept_site
    if _TM_WARP_SYNC:
        sh[e, WRITER_SYNCWARPS] = w


@compiled
def _tm_check_shared_read(sh, e, lane, epoch, epoch0, race, uninit, block, ws, sl, site, i, j):
    w = ws[lane] if _TM_WARP_SYNC else 0
    writer = sh[e, WRITER]
    if sh[e, WRITE_EPOCH] < epoch0:
        _tm_record_uninitialised_read(uninit, block, lane, sl, site, i, j)
    elif sh[e, WRITE_EPOCH] == epoch and writer != lane \
            and not _tm_syncwarp_between(writer, sh[e, WRITER_SYNCWARPS], lane, w):
        _tm_record_shared_race(race, sh, e, block, writer, _tm_site_of_entry(sh[e, WRITER_SITE]),
                               lane, site, sl, i, j)
    _tm_note_reader(sh, e, lane, epoch, site, w)


@compiled
def _tm_check_shared_write(sh, e, lane, epoch, race, block, ws, sl, site, i, j):
    w = ws[lane] if _TM_WARP_SYNC else 0
    other, other_site = _tm_racing_entry(sh, e, lane, epoch, w, True)
    if other >= 0:
        _tm_record_shared_race(race, sh, e, block, other, other_site, lane, site, sl, i, j)
    _tm_note_writer(sh, e, lane, epoch, site, w)


@compiled
def _tm_check_shared_atomic(sh, e, lane, epoch, epoch0, race, uninit, block, ws, sl, site, i, j):
    # Atomics do not race with each other; they read (so the element must have
    # been written) and write.  So an atomic races with another thread's plain
    # store or read of the element in the same interval: before it, found
    # here (a histogram's bins zeroed and then added to with no barrier
    # between); after it, by _tm_check_shared_read and _tm_check_shared_write.  Its entry
    # keeps its site as -(site + 1), so that a later atomic tells it from a
    # plain store (_tm_site_of_entry reads it back).
    w = ws[lane] if _TM_WARP_SYNC else 0
    # (a plain store of this interval)
    stored = sh[e, WRITE_EPOCH] == epoch and sh[e, WRITER_SITE] >= 0
    if sh[e, WRITE_EPOCH] < epoch0:
        _tm_record_uninitialised_read(uninit, block, lane, sl, site, i, j)
    else:
        other, other_site = _tm_racing_entry(sh, e, lane, epoch, w, stored)
        if other >= 0:
            _tm_record_shared_race(race, sh, e, block, other, other_site, lane, site, sl, i, j)
    if stored and sh[e, WRITER] == lane:
        return  # (its own store stays the entry: another thread's atomic races with it)
    _tm_note_writer(sh, e, lane, epoch, -site - 1, w)


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

@inlined
def _tm_widen_access_ranges(grg, e, column, key):
    if key < grg[e, column]:
        grg[e, column] = key
    if key > grg[e, column + 1]:
        grg[e, column + 1] = key


@compiled
def _tm_record_global_race(grace, grg, sl, e, block, other, other_site, lane, site, i, j):
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


@inlined
def _tm_racing_atomic(gsh, e, lane, interval):
    # Another thread's atomic update of the element in this interval (its
    # lane and site, or -1): the first, or a second, different one.
    if gsh[e, ATOMIC_EPOCH] != interval:
        return _tm_i64(-1), _tm_i64(-1)
    if gsh[e, ATOMIC_LANE] != lane:
        return gsh[e, ATOMIC_LANE], gsh[e, ATOMIC_SITE]
    return gsh[e, SECOND_ATOMIC_LANE], gsh[e, SECOND_ATOMIC_SITE]


@compiled
def _tm_check_global_read(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    if grg.shape[0] == 0:  # (an array too large to check: records.py)
        return
    _tm_widen_access_ranges(grg, e, 0, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    other, other_site = _tm_racing_atomic(gsh, e, lane, interval)
    writer = gsh[e, WRITER]
    if gsh[e, WRITE_EPOCH] == interval and writer != lane \
            and not _tm_syncwarp_between(writer, gsh[e, WRITER_SYNCWARPS], lane, w):
        _tm_record_global_race(grace, grg, sl, e, block, writer, gsh[e, WRITER_SITE], lane, site,
                       i, j)
    elif other >= 0:
        _tm_record_global_race(grace, grg, sl, e, block, other, other_site, lane, site, i, j)
    _tm_note_reader(gsh, e, lane, interval, site, w)


@compiled
def _tm_met_plain_access(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j):
    # A write or an atomic update meeting another thread's plain write, or a
    # plain read, of this interval: a race (True when one was met).
    other, other_site = _tm_racing_entry(gsh, e, lane, interval, w, True)
    if other < 0:
        return False
    _tm_record_global_race(grace, grg, sl, e, block, other, other_site, lane, site, i, j)
    return True


@compiled
def _tm_check_global_write(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    if grg.shape[0] == 0:
        return
    _tm_widen_access_ranges(grg, e, 2, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    if not _tm_met_plain_access(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j):
        other, other_site = _tm_racing_atomic(gsh, e, lane, interval)
        if other >= 0:
            _tm_record_global_race(grace, grg, sl, e, block, other, other_site, lane, site, i, j)
    _tm_note_writer(gsh, e, lane, interval, site, w)


@compiled
def _tm_check_global_atomic(gsh, grg, e, lane, epoch, epoch0, grace, block, ws, g, sl, site, i, j):
    # Atomics do not race with each other; with another thread's plain write
    # or read of the interval, before or after, they do.  They are noted apart
    # (the shadow's atomic columns: interval, the first atomic lane and site,
    # and a second).
    if grg.shape[0] == 0:
        return
    _tm_widen_access_ranges(grg, e, 4, g * _TM_SCRATCH + site)
    interval = (block << 32) + (epoch - epoch0)
    w = ws[lane] if _TM_WARP_SYNC else 0
    _tm_met_plain_access(gsh, grg, e, lane, interval, w, grace, block, sl, site, i, j)
    if gsh[e, ATOMIC_EPOCH] != interval:
        gsh[e, ATOMIC_EPOCH] = interval
        gsh[e, ATOMIC_LANE] = lane
        gsh[e, ATOMIC_SITE] = site
        gsh[e, SECOND_ATOMIC_LANE] = -1
    elif gsh[e, ATOMIC_LANE] != lane and gsh[e, SECOND_ATOMIC_LANE] < 0:
        gsh[e, SECOND_ATOMIC_LANE] = lane
        gsh[e, SECOND_ATOMIC_SITE] = site


#: The source of this module, by digest: a kernel's generated module names
#: it, so that a change here is a new module (and numba's cache of the old
#: one is never used for it).
DIGEST = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def link(njit: Callable, options: dict, scratch: int, warp_sync: bool, item: Callable,
         i64=np.int64) -> dict[str, Callable]:
    """The runtime's functions for one kernel: each one's code bound to a
    namespace of its own, where ``scratch``, ``warp_sync`` and ``item`` (the
    kernel's ``_TM_SCRATCH``, ``_TM_WARP_SYNC`` and ``_tm_item``) replace the
    defaults, then compiled with ``njit(**options)``.  numba's cache is left
    off for them: their code file is shared by every kernel, whose constants
    differ (the drivers that call them are cached whole, with their code)."""
    namespace = dict(globals())
    namespace.update(_TM_SCRATCH=scratch, _TM_WARP_SYNC=warp_sync, _tm_item=item, _tm_i64=i64)
    options = dict(options, cache=False)
    linked = {}
    for name, inline in RUNTIME:
        code = globals()[name]
        function = types.FunctionType(code.__code__, namespace, name, code.__defaults__,
                                      code.__closure__)
        made = njit(inline="always", **options)(function) if inline else njit(**options)(function)
        namespace[name] = linked[name] = made
    return linked
