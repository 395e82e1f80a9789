# hostile, accepted: the file's own top-level code (and strings that look like code) never runs
# expect: runs
import os

from numba import cuda

os.system("touch MARKER")
open("MARKER", "w").write("top-level code ran")


@cuda.jit
def matmul(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        if i == 1000000:
            print("\nimport os\nos.system('touch MARKER')\n")
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[i, k] * B[k, j]
        C[i, j] = acc


if __name__ == "__main__":
    open("MARKER", "w").write("main block ran")
