"""The expected output of each example, in numpy: the references that
`threadmap run --reference examples/references.py:NAME` runs (your own host
code; ThreadMap never runs a kernel file's).  Each gets float64 copies of the
inputs and the scalars, in the kernel's parameter order without its output."""
import numpy as np


def vector_add(x, y):
    return x + y


def saxpy(x, y, n, alpha):
    return alpha * x + y


def transpose(a):
    return a.T


transpose_naive = transpose_tiled = transpose_padded = transpose


def block_sums(x):
    return x.reshape(-1, 128).sum(axis=1)


reduce_interleaved = reduce_sequential = block_sums


def stencil_1d(x):
    padded = np.concatenate([[0.0], x, [0.0]])
    return padded[:-2] + padded[1:-1] + padded[2:]


def histogram(x):
    bins = np.minimum(((x.astype(np.float32) + np.float32(1.0)) * np.float32(8.0))
                      .astype(np.int64), 15)
    return np.bincount(bins, minlength=16)


def count_warp_aggregated(x):
    return np.array([np.count_nonzero(x > 0)])


def softmax_rows(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def pair_block_sums(x):
    """Reductions 4 to 6: a block of 128 threads sums 256 elements."""
    return x.reshape(-1, 256).sum(axis=1)


reduce_strided = block_sums
reduce_first_add = reduce_last_warp = reduce_unrolled = pair_block_sums


def reduce_shuffle(x):
    """2 blocks of 128 threads stride over the whole array: block b sums the
    elements whose index i has (i mod 256) // 128 == b."""
    return x.reshape(-1, 2, 128).sum(axis=(0, 2))


def scan_hillis_steele(x):
    return np.cumsum(x)


def scan_blelloch(x):
    return np.concatenate([[0.0], np.cumsum(x)[:-1]])
