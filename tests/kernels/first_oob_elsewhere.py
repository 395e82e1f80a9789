"""Threads whose first out-of-bounds access is of one array and a later one
of another: each array's summary still names its lowest offender's index.

At 16 x 4 x 16 (A 16 x 4, B 4 x 16, C 16 x 16) on 64 threads, in any grid:

* A: every thread reads row tid + 16: 64 reads, first thread 0 at [16, 0];
* B: thread t reads rows t + 2 .. t + 5 (columns 0 .. 3), past B's 4 rows from
  column 2 - t on: 2 + 3 + 62 x 4 = 253 reads, first thread 0 at [4, 2]
  (its first out-of-bounds read was of A);
* s (16 elements): threads 16 .. 63, 48 writes, first thread 16 at [16];
* C: row tid // 2, past C's 16 rows from thread 32 on: 32 writes, first
  thread 32 at [16, 0] (its first out-of-bounds write was of s).
"""
from numba import cuda, float32


@cuda.jit
def first_oob_elsewhere(A, B, C):
    s = cuda.shared.array(16, float32)
    tid = cuda.grid(1)
    a = A[tid + 16, tid % 4]
    b = 0.0
    for q in range(4):
        b += B[tid + q + 2, q]
    s[tid] = a + b
    C[tid // 2, tid % 16] = a + b
