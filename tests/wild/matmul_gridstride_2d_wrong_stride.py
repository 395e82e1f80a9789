# idiom: a 2-D grid-stride loop whose column loop steps by the other axis's grid size
# label: bug, line 13: the columns step by sx = 16 where the grid is sy = 24 wide: y = 0..7 and 16..23 both reach columns 16..23 and 32..39, so 16 columns x 20 rows = 320 elements are written twice
# diagnosis: other-axis-stride 13
# shape: 20x9x40
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    x, y = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    for i in range(x, C.shape[0], sx):
        for j in range(y, C.shape[1], sx):
            tmp = 0.0
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp


def host(A, B, C):
    matmul[(2, 3), (8, 8)](A, B, C)
