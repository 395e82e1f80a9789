# idiom: a described 1-D kernel, a chunk of elements per thread by math.ceil(n / cuda.gridsize(1)), no guard at the chunk's end
# label: bug, line 16: 192 threads x ceil(1000 / 192) = 6 elements cover 1,152, and nothing stops at out's 1,000: thread 166 writes 996..1001 and threads 167..191 write 1,002..1,151, 152 writes past out (and as many reads past x)
# diagnosis: unguarded-chunk-end 16
import math

from numba import cuda

THREADMAP_ARGS = {"x": "float32[1000]", "out": "float32[1000]"}


@cuda.jit
def scale(x, out):
    t = cuda.grid(1)
    per = math.ceil(out.shape[0] / cuda.gridsize(1))
    first = t * per
    for i in range(first, first + per):
        out[i] = 2.0 * x[i]


def host(x, out):
    scale[3, 64](x, out)
