# hostile: rebinding an allowed name to forge a verdict: in the simulator the kernel's cuda and
# ThreadMap's recording helpers share one module, whose atomic min/max track the writers; with
# both made exch, two writers of one element looked like one, and a collision PASSed (review)
# expect: 'cuda.atomic.max' is assigned to: a kernel stores into arrays and its own names
from numba import cuda


@cuda.jit
def matmul(A, B, C):
    cuda.atomic.max = cuda.atomic.exch
    cuda.atomic.min = cuda.atomic.exch
    i = cuda.grid(1)
    for q in (0, 1):
        if i < C.size:
            C[i // C.shape[1], i % C.shape[1]] = A[0, 0] * B[0, 0]
