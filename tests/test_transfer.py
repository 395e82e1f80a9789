"""A child's large result comes back in sealed memfds that the parent maps
(backends/transfer.py), not copied through the pipe: the same result, and
nothing the parent trusts more than before."""
import dataclasses
import os
import pickle

import numpy as np
import pytest

from kernels.backends import transfer
from kernels.backends.child import child_message
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _transpose_request() -> RunRequest:
    """A 1024 x 1024 transpose: ~20 MB of maps, sent through memory."""
    return describe_request(RunRequest(
        kernel=None, kernel_file=os.path.join(ROOT, "examples", "transpose_naive.py"),
        backend="cpu", tier="instant", grid=(32, 32), block=(32, 8), repeats=1),
        ["a=float32[1024,1024]", "out=float32[1024,1024]"])


def _run_here(request: RunRequest):
    from kernels import engine

    resolved, _, note = engine.prepare(request)
    return engine.run_here(resolved, note)


def test_a_large_result_through_memory_equals_the_run_in_this_process():
    from kernels import engine

    request = _transpose_request()
    here = _run_here(request)
    message = transfer.write_result(("result", here))
    assert message is not None and message[0] == "result_memory"  # (~20 MB of maps)
    assert len(message[1]) < transfer.MEMFD_WORTH_BYTES  # (the pickle alone is small)
    _, back = transfer.read_result(message[1], message[2], os.getpid(), child_message)
    transfer.release()
    for name, array in here.maps_arrays().items():
        np.testing.assert_array_equal(back.maps_arrays()[name], array, err_msg=name)
    back.maps.count[0, 0] = 7  # (writable: a private copy-on-write map)
    # and a run through the child process gives the same maps
    isolated = engine.run(request, isolate=True)
    for name, array in here.maps_arrays().items():
        np.testing.assert_array_equal(isolated.maps_arrays()[name], array, err_msg=name)


def test_equal_writer_maps_are_one_array_sent_once():
    """Where no element was stored by two threads, the lowest and highest
    writer maps are equal: read_back makes them one array, which travels in
    one memfd, comes back as one, and counts no collision without a pass."""
    from kernels.records import same_values

    here = _run_here(_transpose_request())
    assert here.maps.min_writer is here.maps.max_writer
    assert here.maps.collided == 0 and here.verdict.collided == 0
    apart = dataclasses.replace(here, maps=dataclasses.replace(
        here.maps, max_writer=here.maps.max_writer.copy()))
    message = transfer.write_result(("result", apart))
    sent_apart = len(message[2])
    transfer.release()
    message = transfer.write_result(("result", here))
    assert len(message[2]) == sent_apart - 1  # (one 4 MB map fewer)
    _, back = transfer.read_result(message[1], message[2], os.getpid(), child_message)
    transfer.release()
    assert back.maps.min_writer is back.maps.max_writer
    assert back.maps.min_writer.min() == 0 and back.maps.min_writer.max() == 32 * 32 * 256 - 1

    a = np.arange(3 << 20, dtype=np.int32)
    b = a.copy()
    assert same_values(a, b)
    b[-1] += 1  # (in the last piece only)
    assert not same_values(a, b)
    assert not same_values(a, a.astype(np.int64))
    assert not same_values(a, a[:-1])


def test_a_broadcast_map_is_pickled_as_its_one_value():
    from kernels.records import AccessMaps

    count = np.ones((1024, 1024), np.int32)
    maps = AccessMaps(count=count, atomics=np.broadcast_to(np.int32(0), count.shape),
                      min_writer=count, max_writer=count, iteration=count * 0,
                      stores_per_thread=np.ones(4, np.int32),
                      oob_per_thread=np.zeros(4, np.int64), reads=(), out_of_bounds=())
    data = pickle.dumps(maps, protocol=5)
    # count (min and max writers are the same array: pickled once) and iteration;
    # not a third 4 MB array of zeros
    assert len(data) < 2 * count.nbytes + 100_000
    back = child_message(data)
    assert back.atomics.shape == count.shape and not back.atomics.any()
    assert back.unwritten == 0


def _unsealed(payload: np.ndarray, seals: int = 0) -> int:
    """A memfd holding ``payload`` with only ``seals`` (a child's forgery)."""
    import fcntl

    descriptor = os.memfd_create("forged", os.MFD_ALLOW_SEALING)
    os.write(descriptor, payload.tobytes())
    if seals:
        fcntl.fcntl(descriptor, fcntl.F_ADD_SEALS, seals)
    return descriptor


@pytest.mark.parametrize("attack", ["unsealed", "shrinkable", "a plain file", "too short",
                                    "not a number", "missing"])
def test_result_memory_that_is_not_sealed_or_does_not_fit_is_refused(tmp_path, attack):
    import fcntl

    from kernels.errors import KernelRuntimeError

    payload = np.arange(8 << 20, dtype=np.uint8)  # (8 MB each: out of band)
    message = transfer.write_result(("result", payload, payload[::-1].copy()))
    _, data, descriptors = message
    opened = []
    try:
        if attack == "unsealed":  # a child that could still write it under the parent
            opened.append(_unsealed(payload[::-1]))
        elif attack == "shrinkable":  # ... or shrink it: SIGBUS in the parent
            opened.append(_unsealed(payload[::-1], fcntl.F_SEAL_WRITE))
        elif attack == "a plain file":
            path = tmp_path / "plain.bin"
            path.write_bytes(payload[::-1].tobytes())
            opened.append(os.open(path, os.O_RDONLY))
        elif attack == "too short":
            opened.append(_unsealed(payload[::-1][:-1], transfer.SEALS))
        if opened:
            descriptors = (descriptors[0], opened[0])
        elif attack == "not a number":
            descriptors = (descriptors[0], "../../etc/passwd")
        else:
            descriptors = (descriptors[0], 999_999)
        with pytest.raises((ValueError, KernelRuntimeError)):
            transfer.read_result(data, descriptors, os.getpid(), child_message)
    finally:
        for descriptor in opened:
            os.close(descriptor)
        transfer.release()


def test_each_buffer_has_a_memfd_of_its_own_under_the_sandbox_s_limit():
    from kernels.backends.sandbox import MAX_FILE_BYTES

    arrays = [np.full(6 << 20, i, np.int64) for i in range(3)]  # 48 MB each, 144 in all
    message = transfer.write_result(("result", *arrays))
    try:
        assert len(message[2]) == 3
        assert all(os.fstat(d).st_size == 48 << 20 < MAX_FILE_BYTES for d in message[2])
        back = transfer.read_result(message[1], message[2], os.getpid(), child_message)
    finally:
        transfer.release()
    for i, array in enumerate(back[1:]):
        np.testing.assert_array_equal(array, arrays[i])


def test_memory_once_mapped_cannot_change_under_the_parent():
    import fcntl

    payload = np.arange(4 << 20, dtype=np.float32)  # (16 MB)
    message = transfer.write_result(("result", payload))
    try:
        _, back = transfer.read_result(message[1], message[2], os.getpid(), child_message)
        descriptor = message[2][0]
        with pytest.raises(OSError):  # sealed: the child can neither write nor shrink it
            os.pwrite(descriptor, np.float32(1234.5).tobytes(), 0)
        with pytest.raises(OSError):
            os.ftruncate(descriptor, 0)
        assert fcntl.fcntl(descriptor, fcntl.F_GET_SEALS) & transfer.SEALS == transfer.SEALS
    finally:
        transfer.release()
    assert back[0] == 0.0 and float(back.sum()) == float(payload.sum(dtype=np.float64))


def test_the_parent_keeps_its_own_request_never_the_childs(tmp_path):
    """A child taken over by its kernel could name another reference file in
    the request it sends back; the parent would import it."""
    from kernels import engine
    from kernels.backends.child import ChildRunner

    request = describe_request(RunRequest(
        kernel=None, kernel_file=os.path.join(ROOT, "examples", "saxpy.py"), backend="cpu",
        tier="instant", repeats=1), [], as_it_is_unless_matmul=True)
    resolved, _, note = engine.prepare(request)
    result = engine.run_here(resolved, note)
    import dataclasses
    forged = dataclasses.replace(result, request=result.request.with_(
        reference=str(tmp_path / "planted.py") + ":pwn", given_inputs="/etc/passwd"))
    kept = ChildRunner(simulator=False)._as_given(forged, resolved)
    assert kept.request is resolved


def test_a_one_value_map_must_fit_the_maps_it_came_with():
    """A few bytes must never stand for an enormous array (any drawing or sum
    of it would freeze the parent)."""
    from kernels.errors import KernelRuntimeError
    from kernels.records import AccessMaps, _Broadcast

    count = np.ones((64, 64), np.int32)
    maps = AccessMaps(count=count, atomics=np.broadcast_to(np.int32(0), count.shape),
                      min_writer=count, max_writer=count, iteration=count * 0,
                      stores_per_thread=np.ones(4, np.int32),
                      oob_per_thread=np.zeros(4, np.int64), reads=(), out_of_bounds=())
    state = maps.__getstate__()
    state["atomics"] = _Broadcast(np.zeros(1, np.int32), (2**31, 2**31))
    forged = AccessMaps.__new__(AccessMaps)
    forged.__dict__.update(state)  # (pickled as a child taken over by its kernel would)
    with pytest.raises(KernelRuntimeError, match="one-value map atomics that does not fit"):
        child_message(pickle.dumps(forged, protocol=5))


def test_a_small_result_stays_in_the_pipe():
    assert transfer.write_result(("result", np.zeros(1000))) is None
    assert not transfer._held
