"""The columns of a shadow, named once for both tiers of the CPU emulation.

A shadow keeps, per element of a shared array (or of a global array checked
for races), who last touched it in the current barrier interval: enough to
tell a race (two threads, one interval, at least one plain write) from
ordered accesses.  Both tiers name its columns from here: the compiled tier's
runtime (``record_runtime.py``, where numba folds them into the code of bare
numbers) and the instant tier's (``backends/instant.py``).

Epochs (barrier intervals) grow through the whole run, so a write epoch
below the block's first means "not written by this block".  A global array's
intervals are numbered ``(block << 32) + the block's interval``, so that no
other block's entry matches.
"""
from __future__ import annotations

#: the interval of the last write (a plain store or an atomic update)
WRITE_EPOCH = 0
#: its lane (thread of the block) and site; an atomic's site is kept as
#: -(site + 1), so that a later atomic tells it from a plain store
WRITER = 1
WRITER_SITE = 2
#: the interval of the reads noted, the first reader's lane and site, and a
#: second, different reader's (-1: none)
READ_EPOCH = 3
READER = 4
READER_SITE = 5
SECOND_READER = 6
SECOND_READER_SITE = 7
#: the syncwarps the writer, the first and the second reader had passed:
#: two accesses of one interval are ordered when their lanes share a warp and
#: a syncwarp came between them (kept only for a kernel that calls syncwarp)
WRITER_SYNCWARPS = 8
READER_SYNCWARPS = 9
SECOND_READER_SYNCWARPS = 10
#: A shared array's shadow ends with the block whose race on the element was
#: counted (races are counted in elements, each block's once): column 11, or
#: 8 where no syncwarp is kept.  Read as the last column.
SHADOW_COLUMNS = 12
#: A global array's shadow also keeps its atomic updates apart (atomics do not
#: race with each other, but do with plain accesses): their interval, the
#: first atomic lane and site, and a second, different one.  Column 11 is unused.
ATOMIC_EPOCH = 12
ATOMIC_LANE = 13
ATOMIC_SITE = 14
SECOND_ATOMIC_LANE = 15
SECOND_ATOMIC_SITE = 16
GLOBAL_SHADOW_COLUMNS = 17


def shadow_columns(warp_sync: bool) -> int:
    """Columns of the compiled tier's shadows of shared arrays: without a
    syncwarp to keep, the first 8 and the counted race's block (its helpers
    never touch the syncwarp columns)."""
    return SHADOW_COLUMNS if warp_sync else WRITER_SYNCWARPS + 1

