# idiom: the course's histogram: scalar range arguments, the bin as int((x - xmin) / width), a grid-stride loop, cuda.atomic.add
# label: correct
# diagnosis: none
from numba import cuda

THREADMAP_ARGS = {"x": "float32[2000]", "xmin": "float32(-1.0)", "xmax": "float32(1.0)",
                  "hist": "int32[16]"}


@cuda.jit
def histogram(x, xmin, xmax, hist):
    nbins = hist.shape[0]
    bin_width = (xmax - xmin) / nbins
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.shape[0], stride):
        b = int((x[i] - xmin) / bin_width)
        if b >= 0 and b < nbins:
            cuda.atomic.add(hist, b, 1)


def host(x, xmin, xmax, hist):
    histogram[4, 128](x, xmin, xmax, hist)
