from numba import cuda, float32

TPB = 16


@cuda.jit
def early_return(A, B, C):
    sA = cuda.shared.array((TPB, TPB), float32)
    sB = cuda.shared.array((TPB, TPB), float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    if y >= C.shape[0] or x >= C.shape[1]:
        return  # threads past the edge leave before the barriers below
    tmp = 0.0
    for i in range((A.shape[1] + TPB - 1) // TPB):
        sA[ty, tx] = A[y, i * TPB + tx]
        sB[ty, tx] = B[i * TPB + ty, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    C[y, x] = tmp
