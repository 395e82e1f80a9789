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
    _, back = transfer.read_result(message[1], message[2], message[3], tmp_path, child_message)
    assert not list(tmp_path.iterdir())  # the file is gone once mapped
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


@pytest.mark.parametrize("attack", ["symlink", "past the end", "bad name", "not a file"])
def test_a_result_file_that_does_not_fit_its_message_is_refused(tmp_path, attack):
    payload = np.arange(8 << 20, dtype=np.uint8)  # (8 MB: out of band)
    message = transfer.write_result(("result", payload, payload[::-1].copy()), tmp_path)
    _, data, name, spans = message
    if attack == "symlink":  # a child taken over by its kernel points it elsewhere
        secret = tmp_path.parent / "secret.bin"
        secret.write_bytes(b"\1" * (16 << 20))
        (tmp_path / name).unlink()
        (tmp_path / name).symlink_to(secret)
    elif attack == "past the end":
        spans = spans[:1] + ((spans[1][0], spans[1][1] + 1),)
    elif attack == "bad name":
        name = "../" + name
    else:
        (tmp_path / name).unlink()
        os.mkfifo(tmp_path / name)
    with pytest.raises(ValueError):
        transfer.read_result(data, name, spans, tmp_path, child_message)


def test_a_small_result_stays_in_the_pipe(tmp_path):
    assert transfer.write_result(("result", np.zeros(1000)), tmp_path) is None
    assert not list(tmp_path.iterdir())
