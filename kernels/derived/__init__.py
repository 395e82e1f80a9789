"""What is derived from a kernel's source: the recording and plain forms for
CUDA (GPU and simulator) and the block-lockstep emulation for the CPU, as
generated modules."""
