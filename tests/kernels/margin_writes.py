"""Kernels whose writes to C stray past its edges, for the out-of-bounds
margin (issue 20, point 5; tests/test_oob_margin.py works out their figures).

* ``or_guard``: the bounds check joins its two tests with ``or`` instead of
  ``and``, so a thread with one coordinate inside C writes whatever the
  other one is: below C and right of it, never in a corner;
* ``shifted``: no guard, and the store one row up and one column left of the
  thread's element: every side of C and every corner;
* ``flat_both_ends``: C raveled (one subscript), an unguarded atomic add 40
  elements before the thread's own: before C's first element and past its
  last.
"""
from numba import cuda


@cuda.jit
def or_guard(A, B, C):
    x, y = cuda.grid(2)
    if x < C.shape[0] or y < C.shape[1]:  # should be "and"
        s = 0.0
        for k in range(A.shape[1]):
            s += A[x, k] * B[k, y]
        C[x, y] = s


@cuda.jit
def shifted(A, B, C):
    x, y = cuda.grid(2)
    s = 0.0
    for k in range(A.shape[1]):
        s += A[0, k] * B[k, 0]
    C[x - 1, y - 1] = s


@cuda.jit
def flat_both_ends(A, B, C):
    e = cuda.grid(1) - 40
    cuda.atomic.add(C, e, A[0, 0] * B[0, 0])
