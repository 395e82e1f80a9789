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


def saxpy(a, x, y, out=None):
    return a * np.asarray(x, np.float64) + np.asarray(y, np.float64)


def scale(x, out=None):
    return 2.0 * np.asarray(x, np.float64)


def laplace(a, out=None):
    """The five-point mean inside, the edges copied."""
    a = np.asarray(a, np.float64)
    result = a.copy()
    result[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
    return result


def sum3(a, out=None):
    """a[i - 1] + a[i] + a[i + 1], zero past either end."""
    padded = np.concatenate([[0.0], np.asarray(a, np.float64), [0.0]])
    return padded[:-2] + padded[1:-1] + padded[2:]


def array_sum(x, total=None):
    return np.array([np.asarray(x, np.float64).sum()])


warp_sum = array_sum


def histogram(x, xmin, xmax, hist=None):
    """Counts of int((x - xmin) / width) over 16 bins, x - xmin in float32 as
    the kernel makes it; added to hist's starting values where the kernel
    reads them (a += in place)."""
    shifted = (np.asarray(x, np.float32) - np.float32(xmin)).astype(np.float64)
    bins = np.floor(shifted / ((xmax - xmin) / 16)).astype(np.int64)
    counts = np.bincount(bins[(bins >= 0) & (bins < 16)], minlength=16)
    return counts if hist is None else np.asarray(hist) + counts


def histogram_shared(x, hist=None):
    bins = np.minimum(np.floor((np.asarray(x, np.float64) + 1.0) * 8.0).astype(np.int64), 15)
    return np.bincount(bins, minlength=16)


def transpose(a, out=None):
    return np.asarray(a, np.float64).T.copy()


transpose_tiled = transpose


def inclusive_scan(x, out=None):
    return np.cumsum(np.asarray(x, np.float64))


def softmax(x, out=None):
    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def relu(x, out=None):
    return np.maximum(np.asarray(x, np.float64), 0.0)


def scale2d(x, out=None):
    return 2.0 * np.asarray(x, np.float64)


def add_bias(x, bias, out=None):
    return np.asarray(x, np.float64) + np.asarray(bias, np.float64)[None, :]


def matvec(A, x, y=None):
    return np.asarray(A, np.float64) @ np.asarray(x, np.float64)


def outer(x, y, out=None):
    return np.outer(np.asarray(x, np.float64), np.asarray(y, np.float64))
