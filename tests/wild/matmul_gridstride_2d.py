# idiom: a 2-D grid-stride loop, cuda.grid(2) and cuda.gridsize(2) unpacked as tuples
# label: correct
# diagnosis: none
# shape: 20x9x40
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    x, y = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for i in range(x, C.shape[0], sx):
        for j in range(y, C.shape[1], sy):
            tmp = 0.0
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp


def host(A, B, C):
    matmul[(2, 3), (8, 8)](A, B, C)
