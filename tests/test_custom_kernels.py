"""Users' own kernel files: found without running them, mapped like built-ins.

Each file here is written in a style real people write, top-level code and all.
"""
import json
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from kernels import (
    KernelCompileError,
    KernelSourceError,
    RequestError,
    RunRequest,
    RunTimedOut,
    UnsupportedConstruct,
    run,
)
from kernels.sources.source import parse_module, read_module


def write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def file_request(path, kernel=None, shape=(16, 16, 16), grid=(1,), block=(32,), **kw):
    m, k, n = shape
    return RunRequest(kernel=kernel, kernel_file=str(path), m=m, k=k, n=n, grid=grid,
                      block=block, backend="cpu", **kw)


# The asker's style: top-level test code with a timer, prints, a host function
# with the launch, and a statement that would leave a file behind if run.
ASKER_STYLE = '''
import time
import numpy as np
from numba import cuda, jit

open(__file__ + ".ran", "w").write("top-level code ran")
print("this must never print")

@cuda.jit
def matmul(A, B, C):
    """Each thread of one block computes ceil(size / threads) elements; the
    last thread takes the remainder."""
    tid = cuda.threadIdx.x
    nthreads = cuda.blockDim.x
    size = C.shape[0] * C.shape[1]
    chunk = math.ceil(size / nthreads)
    start = tid * chunk
    stop = size if tid == nthreads - 1 else min(start + chunk, size)
    for idx in range(start, stop):
        row = idx // C.shape[1]
        col = idx % C.shape[1]
        acc = 0.0
        for k in range(A.shape[1]):
            acc += A[row, k] * B[k, col]
        C[row, col] = acc

import math

def matmul_gpu(X, Y):
    threads_per_block = 64
    blocks_per_grid = 1
    d = cuda.to_device(X)
    matmul[blocks_per_grid, threads_per_block](d, d, d)

t = time.time()
matmul_gpu(np.ones((4, 4)), np.ones((4, 4)))
print(time.time() - t)
'''


def test_top_level_code_never_runs_and_the_file_s_launch_is_the_default(tmp_path):
    path = write(tmp_path, "asker.py", ASKER_STYLE)
    module = read_module(path)
    assert [k.name for k in module.kernels] == ["matmul"]
    launch = module.kernels[0].launch
    assert (launch.grid, launch.block) == ((1,), (64,))
    proc = subprocess.run([sys.executable, "-m", "app.launcher", "run", "--kernel-file",
                           str(path), "--shape", "10x7x9", "--backend", "cpu", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "this must never print" not in proc.stdout + proc.stderr
    assert not (tmp_path / "asker.py.ran").exists()
    summary = json.loads((tmp_path / "out" / "result.json").read_text())
    assert summary["request"]["block"] == [64]  # the file's own launch
    assert summary["verdict"] == "PASS"


def test_ceil_chunks_with_the_last_thread_taking_the_rest(tmp_path):
    path = write(tmp_path, "asker.py", ASKER_STYLE)
    # 90 elements over 64 threads: chunk = 2, so threads 0..44 cover everything
    # and threads 45..62 are idle; thread 63 (the last) takes "the rest": nothing.
    result = run(file_request(path, shape=(10, 7, 9), block=(64,)))
    stores = result.maps.stores_per_thread
    assert stores[:45].tolist() == [2] * 45 and stores[45:].sum() == 0
    assert result.verdict.passed
    # 100 threads on 90 elements: chunk 1, and the last thread's "rest" is
    # empty too: the same coverage, every element once.
    result = run(file_request(path, shape=(10, 7, 9), block=(100,)))
    np.testing.assert_array_equal(result.maps.count, 1)


THREAD_INDEX_ONLY = '''
from numba import cuda

@cuda.jit
def matmul(A, B, C):
    # Uses only threadIdx: every block does the same elements.
    row = cuda.threadIdx.y
    col = cuda.threadIdx.x
    if row < C.shape[0] and col < C.shape[1]:
        tmp = 0.
        for k in range(A.shape[1]):
            tmp += A[row, k] * B[k, col]
        C[row, col] = tmp
'''


def test_thread_index_only_kernel_collides_across_blocks(tmp_path):
    path = write(tmp_path, "tidx.py", THREAD_INDEX_ONLY)
    one = run(file_request(path, shape=(8, 5, 8), grid=(1,), block=(8, 8)))
    assert one.verdict.passed
    four = run(file_request(path, shape=(8, 5, 8), grid=(2, 2), block=(8, 8)))
    np.testing.assert_array_equal(four.maps.count, 4)
    assert four.maps.collided == 64 and four.verdict.word == "FAIL"
    # Block b's thread t has id b * 64 + t: the lowest writer is block 0's.
    np.testing.assert_array_equal(four.maps.max_writer - four.maps.min_writer, 3 * 64)


TWO_KERNELS = '''
from numba import cuda, float32

TPB = 16

@cuda.jit
def add_kernel(A, B, C):
    i, j = cuda.grid(2)
    if i < C.shape[0] and j < C.shape[1]:
        C[i, j] = A[i, j] + B[i, j]

@cuda.jit("void(float32[:,:], float32[:,:], float32[:,:], int32)")
def matmul_n(A, B, C, n):
    i, j = cuda.grid(2)
    if i < n and j < n:
        s = float32(0.)
        for k in range(n):
            s += A[i, k] * B[k, j]
        C[i, j] = s

def host():
    matmul_n[(2, 2), (TPB, TPB)](None, None, None, 32)
'''


def test_a_file_with_two_kernels_needs_a_choice(tmp_path):
    path = write(tmp_path, "two.py", TWO_KERNELS)
    module = read_module(path)
    assert [k.name for k in module.kernels] == ["add_kernel", "matmul_n"]
    with pytest.raises(KernelSourceError, match="2 kernels .add_kernel, matmul_n.: choose one"):
        run(file_request(path))
    with pytest.raises(KernelSourceError, match="no kernel named 'mm'"):
        run(file_request(path, kernel="mm"))
    # Chosen by name, with the extra scalar n filled from the square shape
    # (the signature's float32/int32 is dropped: ThreadMap compiles lazily).
    result = run(file_request(path, kernel="matmul_n", shape=(20, 20, 20), grid=(2, 2),
                              block=(16, 16)))
    assert result.verdict.passed, result.verdict.reasons
    assert any("n = 20" in note for note in result.notes)
    assert module.kernels[1].launch.grid == (2, 2)


def test_scalar_that_cannot_be_derived_must_be_given(tmp_path):
    path = write(tmp_path, "scaled.py", '''
        from numba import cuda
        @cuda.jit
        def scaled(A, B, C, alpha):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                C[i, j] = alpha * s
    ''')
    with pytest.raises(RequestError, match="scalar parameter 'alpha'"):
        run(file_request(path))
    result = run(file_request(path, grid=(1, 1), block=(16, 16), scalars=(("alpha", 1.0),)))
    assert result.verdict.passed


def test_output_is_the_parameter_stored_into(tmp_path):
    path = write(tmp_path, "out_first.py", '''
        from numba import cuda
        @cuda.jit
        def mm(C, A, B):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                acc = 0.0
                for k in range(A.shape[1]):
                    acc += A[i, k] * B[k, j]
                C[i, j] = acc
    ''')
    result = run(file_request(path, shape=(12, 5, 9), grid=(1, 1), block=(16, 16)))
    assert result.verdict.passed


@pytest.mark.parametrize("source,error,message,line", [
    ("def broken(:\n", KernelSourceError, "does not parse", 1),
    ("import numpy as np\nx = 1\n", KernelSourceError, "no CUDA kernel found", None),
    ("from numba import cuda\n@cuda.jit\ndef k(A, B, C):\n    C[0:2, 0] = 1\n",
     UnsupportedConstruct, "slicing array 'C'", 4),
    ("from numba import cuda\n@cuda.jit\ndef k(A, B, C):\n    X = C\n    X[0, 0] = 1\n",
     UnsupportedConstruct, "aliased to 'X'", 4),
    ("from numba import cuda\n@cuda.jit\ndef k(A, B, C):\n    i = cuda.grid(1)\n"
     "    with open('x'):\n        C[i, 0] = 1\n", UnsupportedConstruct, "'with' blocks", 5),
    ("from numba import cuda\n@cuda.jit(device=True)\ndef f(x):\n    return x\n"
     "@cuda.jit\ndef k(A, B, C):\n    C[0, 0] = f(A[0, 0]) + B[0, 0]\n",
     UnsupportedConstruct, "device function 'f'", 7),
    ("from numba import cuda\n@cuda.jit\ndef k(A, B):\n    A[0, 0] = B[0, 0]\n",
     UnsupportedConstruct, "three array parameters", 3),
    # numba refuses arithmetic in a shape on a GPU (compile_ptx: a run-time
    # int64); the emulation and the simulator would have run it
    ("from numba import cuda, float32\nTPB = 16\n@cuda.jit\ndef k(A, B, C):\n"
     "    s = cuda.shared.array((TPB, TPB + 1), float32)\n    C[0, 0] = A[0, 0] + B[0, 0]\n",
     UnsupportedConstruct, "bind it at module level, `COLS = TPB + 1`, and write "
     "`cuda.shared.array((TPB, COLS), ...)`", 5),
    ("from numba import cuda, float32\nN = 8\n@cuda.jit\ndef k(A, B, C):\n"
     "    s = cuda.local.array(2 * N, float32)\n    C[0, 0] = A[0, 0] + B[0, 0]\n",
     UnsupportedConstruct, "`SIZE = 2 * N`", 5),
])
def test_bad_files_give_located_errors(tmp_path, source, error, message, line):
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(error) as info:
        run(file_request(path))
    assert message in str(info.value)
    assert str(path) in str(info.value)
    if line is not None:
        assert info.value.line == line and f"{path}:{line}:" in str(info.value)


def test_undefined_name_is_refused_at_its_line(tmp_path):
    path = write(tmp_path, "typo.py", '''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                C[i, j] = A[i, 0] * B[0, j] + undefined_name
    ''')
    with pytest.raises(UnsupportedConstruct) as info:
        run(file_request(path, grid=(1, 1), block=(16, 16)))
    assert f"{path}:8: kernel 'mm': name 'undefined_name' is not defined" in str(info.value)


def test_a_kernel_that_never_ends_is_stopped_by_the_time_limit(tmp_path):
    path = write(tmp_path, "forever.py", '''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i = cuda.grid(1)
            while i >= 0:
                i = i + 1 - 1
            C[0, 0] = A[0, 0] * B[0, 0]
    ''')
    started = time.monotonic()
    with pytest.raises(RunTimedOut, match="time limit of 3 s"):
        run(file_request(path), time_limit=3)
    assert time.monotonic() - started < 60


def test_kernels_are_found_through_any_import_style():
    source = textwrap.dedent('''
        import numba
        import numba.cuda as nc
        from numba.cuda import jit as cuda_jit
        from numba import cuda as gpu

        @numba.cuda.jit
        def a(A, B, C):
            C[0, 0] = A[0, 0] + B[0, 0]

        @nc.jit(fastmath=True)
        def b(A, B, C):
            C[0, 0] = A[0, 0] + B[0, 0]

        @cuda_jit
        def c(A, B, C):
            C[0, 0] = A[0, 0] + B[0, 0]

        @gpu.jit(device=True)
        def helper(x):
            return x

        @numba.jit
        def on_the_cpu(x):
            return x
    ''')
    module = parse_module(source)
    assert [k.name for k in module.kernels] == ["a", "b", "c"]
    assert module.device_functions == ("helper",)


def test_typing_error_points_at_the_user_s_line(tmp_path):
    path = write(tmp_path, "tuple_times.py", '''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                pair = (1, 2)
                C[i, j] = A[i, 0] * B[0, j] * pair
    ''')
    with pytest.raises(KernelCompileError) as info:
        run(file_request(path, grid=(1, 1), block=(16, 16)))
    text = str(info.value)
    assert f'File "{path}", line 9' in text, text
    assert "\x1b[" not in text and "_tm_run_record" not in text


@pytest.mark.sim
def test_a_kernel_that_raises_in_the_simulator_says_so(tmp_path):
    from kernels import KernelRuntimeError
    # (A division by zero no longer stops the simulator: it is counted on every
    # backend, tests/test_messages.py.)
    path = write(tmp_path, "domain.py", '''
        import math
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i = cuda.threadIdx.x
            C[0, 0] = A[0, 0] * B[0, 0] + math.sqrt(-1.0 - i)
    ''')
    with pytest.raises(KernelRuntimeError, match="ValueError: .*math domain error"):
        run(file_request(path, block=(4,)).with_(backend="sim"))


def test_only_numpy_math_numba_imports_and_safe_constants_are_kept():
    module = parse_module(textwrap.dedent('''
        import numpy as np, os, subprocess
        from numba import cuda
        from os import system
        import math
        TPB = 2 ** 4
        HUGE = 10 ** 10 ** 9
        @cuda.jit
        def k(A, B, C):
            C[0, 0] = A[0, 0] * B[0, 0] * TPB
    '''))
    assert module.imports == ("import numpy as np", "from numba import cuda", "import math")
    assert "TPB" in module.constants and "HUGE" not in module.constants


def test_a_store_evaluates_its_value_before_its_index(tmp_path):
    # Python (and numba) evaluate the right-hand side first: B's out-of-bounds
    # read happens before A's; each array's first is given with its index
    # (issue 20: an index for every first out-of-bounds access).
    path = write(tmp_path, "order.py", '''
        from numba import cuda

        @cuda.jit
        def k(A, B, C):
            C[int(A[99, 0]), 0] = B[99, 0]
    ''')
    result = run(file_request(path, shape=(4, 4, 4), block=(1,)))
    by_array = {o.array: o for o in result.maps.out_of_bounds}
    assert by_array["B"].first_index == (99, 0)
    assert by_array["A"].first_index == (99, 0) and by_array["A"].count == 1


def test_a_file_with_a_byte_order_mark_parses_as_cpython_reads_it(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbf" + textwrap.dedent('''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                C[i, j] = s
    ''').encode())
    compile(path.read_bytes(), str(path), "exec")  # CPython accepts it
    result = run(file_request(path, shape=(8, 8, 8), grid=(1, 1), block=(8, 8)))
    assert result.verdict.passed, result.verdict.reasons


def test_a_kernel_defined_twice_runs_the_last_definition_and_says_so(tmp_path):
    # As Python binds the name: the second mm (line 10) replaces the first (line 4).
    path = write(tmp_path, "twice.py", '''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                C[i, j] = 0.0

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                C[i, j] = s
    ''')
    module = read_module(path)
    assert [k.lineno for k in module.kernels] == [11] and module.redefined == {"mm": (5,)}
    result = run(file_request(path, shape=(8, 8, 8), grid=(1, 1), block=(8, 8)))
    assert result.verdict.passed, result.verdict.reasons
    assert any("defined more than once (line 5 and line 11)" in note
               and "last definition (line 11)" in note for note in result.notes)


ROW_X = '''
from numba import cuda

@cuda.jit
def naive(A, B, C):
    row, col = cuda.grid(2)
    if row < C.shape[0] and col < C.shape[1]:
        s = 0.0
        for k in range(A.shape[1]):
            s += A[row, k] * B[k, col]
        C[row, col] = s
'''
COL_X = ROW_X.replace("row, col = cuda.grid(2)", "col, row = cuda.grid(2)")


@pytest.mark.parametrize("source,grid,how", [
    # C is 100 x 40: 7 blocks of 16 rows, 3 of 16 columns.
    (ROW_X, (7, 3), "x along its rows"),
    (COL_X, (3, 7), "x along its columns"),
])
def test_a_2d_kernel_without_a_launch_gets_a_2d_one_covering_c(tmp_path, source, grid, how):
    from kernels.presets import default_launch
    path = write(tmp_path, "naive.py", source)
    chosen = default_launch(file_request(path, shape=(100, 37, 40)))
    assert (chosen.grid, chosen.block) == (grid, (16, 16))
    assert chosen.launch_source == f"guessed: 2-D kernel, 16 x 16 blocks covering C ({how})"
    result = run(chosen)
    assert result.verdict.passed, result.verdict.reasons
    assert result.summary()["request"]["launch_source"] == chosen.launch_source


def test_every_default_launch_says_where_it_came_from(tmp_path):
    from kernels.presets import default_launch
    path = write(tmp_path, "launched.py", ROW_X + '''

def host(a, b, c):
    threads = (8, 8)
    naive[(2, 3), threads](a, b, c)
''')
    chosen = default_launch(file_request(path, shape=(16, 8, 24)))
    assert (chosen.grid, chosen.block, chosen.launch_source) == (
        (2, 3), (8, 8), "from the file, line 16")
    builtin = default_launch(RunRequest(kernel="tiled", m=40, k=8, n=33))
    assert builtin.launch_source == "the built-in kernel's preset"
    flat = write(tmp_path, "flat.py", ROW_X.replace("row, col = cuda.grid(2)",
                                                     "row = cuda.grid(1) // C.shape[1]\n"
                                                     "    col = cuda.grid(1) % C.shape[1]"))
    assert default_launch(file_request(flat, shape=(10, 4, 10))).launch_source.startswith(
        "guessed: 1-D kernel")


@pytest.mark.parametrize("statement,name", [
    ("__import__('os').system('touch {marker}')", "__import__"),
    ("open('{marker}', 'w').write('x')", "open"),
    ("eval(\"open('{marker}', 'w')\")", "eval"),
    ("x = getattr(A, 'shape')", "getattr"),
    ("x = A.__class__", "A.__class__"),
])
def test_python_a_kernel_cannot_call_is_refused_at_its_line(tmp_path, statement, name):
    marker = tmp_path / "ran"
    path = write(tmp_path, "evil.py", f'''
        from numba import cuda

        @cuda.jit
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                {statement.format(marker=marker)}
                C[i, j] = A[i, 0] * B[0, j]
    ''')
    for backend in ("cpu", "sim"):
        with pytest.raises(UnsupportedConstruct) as info:
            run(file_request(path, shape=(8, 8, 8), grid=(1, 1), block=(8, 8)).with_(
                backend=backend))
        assert info.value.line == 8 and name in str(info.value)
    assert not marker.exists()


@pytest.mark.parametrize("signature", [
    "'void(float64[:,:], float64[:,:], float64[:,:])'",
    "void(float64[:, :], float64[:, :], float64[:, :])",
])
def test_an_explicit_signature_fixes_the_dtype_and_says_so(tmp_path, signature):
    path = write(tmp_path, "signed.py", f'''
        from numba import cuda, void, float64

        @cuda.jit({signature})
        def mm(A, B, C):
            i, j = cuda.grid(2)
            if i < C.shape[0] and j < C.shape[1]:
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                C[i, j] = s
    ''')
    result = run(file_request(path, shape=(16, 8, 16), grid=(1, 1), block=(16, 16),
                              dtype="float32"))
    assert result.request.dtype == "float64" and result.c.dtype == np.float64
    assert any("signature (line 4) fixes its arrays as float64" in n for n in result.notes)
    assert result.verdict.passed, result.verdict.reasons


def test_the_output_is_named_with_why_and_its_reasons_use_its_name(tmp_path):
    # The kernel stores into its first array, `out`, and skips row 0.
    path = write(tmp_path, "first_out.py", '''
        from numba import cuda

        @cuda.jit
        def mm(out, A, B):
            i, j = cuda.grid(2)
            if i < out.shape[0] and j < out.shape[1] and i > 0:
                s = 0.0
                for k in range(A.shape[1]):
                    s += A[i, k] * B[k, j]
                out[i, j] = s
    ''')
    result = run(file_request(path, shape=(16, 8, 16), grid=(1, 1), block=(16, 16)))
    summary = result.summary()
    assert summary["output"] == {"array": "out", "why": "the array the kernel stores into"}
    assert summary["reasons"] == ["16 of 256 elements of out never written"]
    assert not any(" of C " in reason for reason in result.verdict.reasons)
