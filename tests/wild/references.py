"""The teacher's references for tests/wild's kernels (numpy, float64)."""
import numpy as np


def xxt(A, out=None):
    A = np.asarray(A, np.float64)
    return A @ A.T


def block_sums(x, partial=None, block=128):
    """Each block's sum of its 128 elements of x (the last block's short)."""
    x = np.asarray(x, np.float64)
    blocks = -(-len(x) // block)
    return np.array([x[b * block:(b + 1) * block].sum() for b in range(blocks)])


def stencil(a, out=None):
    a = np.asarray(a, np.float64)
    result = a.copy()
    result[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    return result


def forward_difference(a, out=None):
    a = np.asarray(a, np.float64)
    result = np.empty_like(a)
    result[:-1] = a[1:] - a[:-1]
    result[-1] = -a[-1]  # (a[n] read out of bounds reads 0 in the emulation)
    return result


def vector_add(x, y, out=None):
    return np.asarray(x, np.float64) + np.asarray(y, np.float64)


def row_sums(A, out=None):
    return np.asarray(A, np.float64).sum(axis=1)
