"""Bad requests are refused with a clear message before anything runs."""
import pytest

from kernels import RequestError, run
from kernels.errors import BackendUnavailable
from kernels.request import check_request, parse_dims, parse_shape
from tests.conftest import gpu_available, request


@pytest.mark.parametrize("changes,message", [
    (dict(m=0), "M must be at least 1"),
    (dict(k=-3), "K must be at least 1"),
    (dict(n=2**21), "N = 2,097,152 is too large"),
    (dict(block=(2048,)), "block x = 2,048 is past CUDA's limit of 1,024"),
    (dict(block=(64, 32)), "2,048 threads is past CUDA's limit of 1,024 threads per block"),
    (dict(block=(0,)), "block x must be at least 1"),
    (dict(grid=(2**31,)), "grid x = 2,147,483,648 is past CUDA's limit of 2,147,483,647"),
    (dict(grid=(1, 65536)), "grid y = 65,536 is past CUDA's limit of 65,535"),
    (dict(grid=(1, 2, 3)), "grid must have 1 or 2 dimensions"),
    (dict(dtype="float16"), "dtype must be one of float32, float64"),
    (dict(pattern="zeros"), "pattern must be one of"),
    (dict(backend="tpu"), "backend must be one of"),
    (dict(kernel="matmul-fast"), "unknown kernel 'matmul-fast'"),
    (dict(m=60000, n=60000, k=60000), "would need about"),
    (dict(grid=(2**31 - 1,), block=(1024,)), "more than 60% of the"),
])
def test_bad_request_is_refused_with_a_message(changes, message):
    with pytest.raises(RequestError) as info:
        run(request().with_(**changes))
    assert message in str(info.value)


def test_memory_estimate_names_threads():
    with pytest.raises(RequestError) as info:
        check_request(request(grid=(2**31 - 1,), block=(1024,)))
    assert "threads" in str(info.value)


@pytest.mark.skipif(gpu_available(), reason="checks the refusal on machines without a GPU")
def test_gpu_backend_without_a_gpu_is_refused():
    with pytest.raises(BackendUnavailable, match="no CUDA device"):
        run(request(backend="gpu"))


@pytest.mark.parametrize("text,dims", [("4", (4,)), ("4x2", (4, 2)), ("16X16", (16, 16))])
def test_parse_dims(text, dims):
    assert parse_dims(text, "grid") == dims


@pytest.mark.parametrize("text", ["", "4x", "ax2", "1x2x3"])
def test_parse_dims_refuses(text):
    with pytest.raises(RequestError):
        parse_dims(text, "grid")


def test_parse_shape():
    assert parse_shape("128x256x64") == (128, 256, 64)
    with pytest.raises(RequestError, match="three numbers"):
        parse_shape("128x256")


def test_a_variable_read_before_any_assignment_is_a_compile_error_at_its_line(tmp_path):
    """(found by CI's fuzzing pass: numba's front end raised its own error,
    which reached the user as a traceback)"""
    from kernels import KernelCompileError, RunRequest, run

    path = tmp_path / "k.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
                    "    i, j = cuda.grid(2)\n    if x > 0:\n        return\n"
                    "    x = cuda.threadIdx.x\n    C[i, j] = A[i, 0] * B[0, j]\n")
    with pytest.raises(KernelCompileError, match="Variable 'x' is not defined") as info:
        run(RunRequest(kernel=None, kernel_file=str(path), m=8, k=8, n=8, grid=(1, 1),
                       block=(8, 8), backend="cpu"))
    assert "line 7" in str(info.value)


def test_local_arrays_the_cpu_emulation_cannot_hold_are_refused_before_the_run(tmp_path,
                                                                               monkeypatch):
    """Within CUDA's 512 KiB per thread, but one copy per thread of a block on
    each core: refused with the figure, before anything is allocated."""
    import kernels.request
    from kernels import KernelSourceError, RunRequest, run

    from pathlib import Path

    path = tmp_path / "scratch.py"
    path.write_text((Path(__file__).parent / "hostile" / "local_array_bomb.py").read_text()
                    .replace("262144", "65536"))
    monkeypatch.setattr(kernels.request, "available_memory", lambda: 2**30)
    request = RunRequest(kernel=None, kernel_file=str(path), m=64, k=8, n=64, grid=(2, 2),
                         block=(32, 32), backend="cpu")
    with pytest.raises(KernelSourceError) as info:
        run(request)
    message = str(info.value)
    assert message.startswith(f"{path}:9: kernel 'matmul': local array scratch (65536 "
                              "float64) needs 512.0 KiB per thread"), message
    assert "1,024 threads of a block" in message and "of the 1.0 GiB available" in message
    monkeypatch.setattr(kernels.request, "available_memory", lambda: 2**40)
    assert run(request.with_(m=8, k=1, n=8)).verdict.passed  # (C[i, j] = A[i, 0] * B[0, j])
