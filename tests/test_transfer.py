"""A child's large result comes back through a file it writes once
(backends/transfer.py), not copied through the pipe: the same result, and
nothing the parent trusts more than before."""
import os
import pickle

import numpy as np
import pytest

from kernels.backends import transfer
from kernels.backends.child import child_message
from kernels.request import RunRequest
from kernels.sources.arguments import describe_request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_large_result_through_the_file_equals_the_run_in_this_process(tmp_path):
    from kernels import engine

    request = describe_request(RunRequest(
        kernel=None, kernel_file=os.path.join(ROOT, "examples", "transpose_naive.py"),
        backend="cpu", tier="instant", grid=(32, 32), block=(32, 8), repeats=1),
        ["a=float32[1024,1024]", "out=float32[1024,1024]"])
    resolved, _, note = engine.prepare(request)
    here = engine.run_here(resolved, note)
    message = transfer.write_result(("result", here), tmp_path)
    assert message is not None and message[0] == "result_file"  # (~20 MB of maps: a file)
    assert len(message[1]) < transfer.FILE_WORTH_BYTES  # (the pickle alone is small)
    _, back = transfer.read_result(message[1], message[2], tmp_path, child_message)
    assert not list(tmp_path.iterdir())  # the files are gone once mapped
    for name, array in here.maps_arrays().items():
        np.testing.assert_array_equal(back.maps_arrays()[name], array, err_msg=name)
    back.maps.count[0, 0] = 7  # (writable: a private copy-on-write map)
    # and a run through the child process gives the same maps
    isolated = engine.run(request, isolate=True)
    for name, array in here.maps_arrays().items():
        np.testing.assert_array_equal(isolated.maps_arrays()[name], array, err_msg=name)


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


@pytest.mark.parametrize("attack", ["symlink", "too short", "too long", "bad name",
                                    "not a file", "missing"])
def test_a_result_file_that_does_not_fit_its_message_is_refused(tmp_path, attack):
    from kernels.errors import KernelRuntimeError

    payload = np.arange(8 << 20, dtype=np.uint8)  # (8 MB each: out of band)
    message = transfer.write_result(("result", payload, payload[::-1].copy()), tmp_path)
    _, data, names = message
    target = tmp_path / names[1]
    if attack == "symlink":  # a child taken over by its kernel points it elsewhere
        secret = tmp_path.parent / "secret.bin"
        secret.write_bytes(b"\1" * (8 << 20))
        target.unlink()
        target.symlink_to(secret)
    elif attack == "too short":
        target.write_bytes(target.read_bytes()[:-1])
    elif attack == "too long":
        target.write_bytes(target.read_bytes() + b"\0" * 8)
    elif attack == "bad name":
        names = (names[0], "../" + names[1])
    elif attack == "not a file":
        target.unlink()
        os.mkfifo(target)
    else:
        target.unlink()
    with pytest.raises((ValueError, KernelRuntimeError)):
        transfer.read_result(data, names, tmp_path, child_message)
    if attack != "bad name":
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("result-")]


def test_each_buffer_has_a_file_of_its_own_under_the_sandbox_s_limit(tmp_path):
    from kernels.backends.sandbox import MAX_FILE_BYTES

    arrays = [np.full(6 << 20, i, np.int64) for i in range(3)]  # 48 MB each, 144 in all
    message = transfer.write_result(("result", *arrays), tmp_path)
    assert len(message[2]) == 3
    assert all((tmp_path / name).stat().st_size == 48 << 20 < MAX_FILE_BYTES
               for name in message[2])
    back = transfer.read_result(message[1], message[2], tmp_path, child_message)
    for i, array in enumerate(back[1:]):
        np.testing.assert_array_equal(array, arrays[i])


def test_a_small_result_stays_in_the_pipe(tmp_path):
    assert transfer.write_result(("result", np.zeros(1000)), tmp_path) is None
    assert not list(tmp_path.iterdir())


def test_a_child_writing_or_shrinking_its_file_later_changes_nothing_here(tmp_path):
    payload = np.arange(4 << 20, dtype=np.float32)  # (16 MB: a file)
    message = transfer.write_result(("result", payload), tmp_path)
    kept = os.open(tmp_path / message[2][0], os.O_RDWR)  # (the child keeps it open)
    try:
        _, back = transfer.read_result(message[1], message[2], tmp_path, child_message)
        os.pwrite(kept, np.float32(1234.5).tobytes(), 0)
        os.ftruncate(kept, 0)  # (a map of it would now kill this process with SIGBUS)
    finally:
        os.close(kept)
    assert back[0] == 0.0 and float(back.sum()) == float(payload.sum(dtype=np.float64))


def test_a_folder_planted_under_a_result_name_is_an_error_not_a_hang(tmp_path):
    from kernels.backends.child import result_from_file
    from kernels.errors import KernelRuntimeError

    message = transfer.write_result(("result", np.zeros(4 << 20)), tmp_path)
    (tmp_path / message[2][0]).unlink()
    (tmp_path / message[2][0]).mkdir()
    with pytest.raises(KernelRuntimeError, match="does not accept"):
        result_from_file(message, tmp_path)


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
