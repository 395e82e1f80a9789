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
