"""Every cuda.atomic operation, with its return value (issue 22)."""
from numba import cuda, float32, int32, uint32


@cuda.jit
def atomic_probe(A, B, C):
    # One block of 32 threads; thread t writes the old values it got into row t.
    # The emulation runs the lanes of a statement in order, lane 0 first.
    t = cuda.threadIdx.x
    tickets = cuda.shared.array(1, uint32)
    countdown = cuda.shared.array(1, uint32)
    bits = cuda.shared.array(3, int32)
    slots = cuda.shared.array(4, int32)
    gate = cuda.shared.array(1, int32)
    chain = cuda.shared.array(1, int32)
    if t < 4:
        slots[t] = 0
    if t == 1:
        gate[0] = 0
        chain[0] = 0
    if t == 0:
        tickets[0] = 0
        countdown[0] = 5
        bits[0] = 0
        bits[1] = 255
        bits[2] = 0
    cuda.syncthreads()
    zero = A[0, 0] * float32(0.0) + B[0, 0] * float32(0.0)
    ticket = cuda.atomic.inc(tickets, 0, 1000)
    down = cuda.atomic.dec(countdown, 0, 3)
    ored = cuda.atomic.or_(bits, 0, 1 << (t % 8))
    anded = cuda.atomic.and_(bits, 1, ~(1 << (t % 8)))
    xored = cuda.atomic.xor(bits, 2, 1)
    C[t, 0] = ticket + zero
    C[t, 1] = down
    C[t, 2] = ored
    C[t, 3] = anded
    C[t, 4] = xored
    before = cuda.atomic.exch(slots, t % 4, t)
    C[t, 5] = t
    C[t, 6] = cuda.atomic.nanmax(C, (t, 5), float32(20.0))
    C[t, 7] = cuda.atomic.nanmin(C, (t, 5), float32(10.0))
    C[t, 8] = before
    C[t, 9] = cuda.atomic.cas(gate, 0, 0, t + 1)
    C[t, 10] = cuda.atomic.compare_and_swap(chain, t, t + 1)
