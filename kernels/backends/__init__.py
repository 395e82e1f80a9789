"""Where a kernel runs: a real GPU, numba's CUDA simulator, or the CPU emulation."""
