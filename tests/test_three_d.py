"""3-D arrays (issue 22, point 2): a described kernel may index arrays with three
indices.  Its maps are drawn as the array's d0 slices of d1 x d2 stacked, (d0 * d1, d2),
which the app shows one slice at a time.  Each figure is worked out by hand; both CPU
tiers and the simulator agree element by element, and the recording form compiles for a
GPU."""
import numpy as np
import pytest

from kernels import run
from kernels.errors import RequestError
from kernels.request import RunRequest
from kernels.result import WRITTEN_MAP_FIELDS
from kernels.sources.arguments import describe_request, drawn_shape, slice_rows

# Thread e owns element (i, j, k) of a 3 x 5 x 7 array but stores one column to the
# right: k + 1 == 7 is past the end (15 threads), and threads 105..127 are past the
# last slice (i == 3) in their read of a and their store.
SHIFTED = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[3, 5, 7]", "out": "float32[3, 5, 7]"}


@cuda.jit
def shifted(a, out):
    e = cuda.grid(1)
    d1 = out.shape[1]
    d2 = out.shape[2]
    i = e // (d1 * d2)
    j = (e // d2) % d1
    k = e % d2
    out[i, j, k + 1] = 2.0 * a[i, j, k]
'''

# The grid-stride form, which covers every element once.
SCALED = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[3, 5, 7]", "out": "float32[3, 5, 7]"}


@cuda.jit
def scaled(a, out):
    d1 = out.shape[1]
    d2 = out.shape[2]
    for e in range(cuda.grid(1), out.shape[0] * d1 * d2, cuda.gridsize(1)):
        out[e // (d1 * d2), (e // d2) % d1, e % d2] = 2.0 * a[e // (d1 * d2), (e // d2) % d1,
                                                              e % d2]
'''

REFERENCES = '''def scaled(a):
    return 2.0 * a


def tripled(a):
    return 3.0 * a
'''

# Three 3-D arrays: a copy into out, and atomic tallies into a 2 x 2 x 2 tally (the
# output: the last array stored into), of which j % 2 == 0 is met twice as often.
TALLY = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[2, 3, 4]", "out": "float32[2, 3, 4]",
                  "tally": "int32[2, 2, 2]"}


@cuda.jit
def tally3(a, out, tally):
    e = cuda.grid(1)
    if e < 24:
        i = e // 12
        j = (e // 4) % 3
        k = e % 4
        out[i, j, k] = a[i, j, k] + 1.0
        cuda.atomic.add(tally, (i, j % 2, k % 2), 1)
'''

# Thread 0 of each block adds into out[1, 0, 1], not atomically: nothing orders blocks,
# a race (an output only stored into would be a collision, shown by its writer maps).
RACE = '''from numba import cuda

THREADMAP_ARGS = {"a": "float32[2, 2, 2]", "out": "float32[2, 2, 2]"}


@cuda.jit
def race3(a, out):
    if cuda.threadIdx.x == 0:
        out[1, 0, 1] += a[0, 0, cuda.blockIdx.x % 2]
'''

BACKENDS = [("compiled", "cpu"), ("instant", "cpu"), ("compiled", "sim")]


@pytest.fixture
def files(tmp_path):
    for name, text in (("shifted.py", SHIFTED), ("scaled.py", SCALED),
                       ("references.py", REFERENCES), ("tally3.py", TALLY),
                       ("race3.py", RACE)):
        (tmp_path / name).write_text(text)
    return tmp_path


def run_file(path, tier="compiled", backend="cpu", grid=(2,), block=(64,), **fields):
    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), grid=grid,
                                          block=block, backend=backend, tier=tier, repeats=1,
                                          **fields), as_it_is_unless_matmul=True)
    return run(request)


def test_a_3d_array_is_drawn_as_its_slices_stacked():
    assert drawn_shape((3, 5, 7)) == (15, 7)
    assert drawn_shape((4, 6)) == (4, 6)
    assert drawn_shape((12,)) == (3, 4)
    rows = np.arange(15 * 7).reshape(15, 7)[slice_rows((3, 5, 7), 2)]
    assert np.array_equal(rows, np.arange(105).reshape(3, 5, 7)[2])


@pytest.mark.parametrize("tier,backend", BACKENDS)
def test_a_shifted_3d_store_is_mapped_by_slice(files, tier, backend):
    result = run_file(files / "shifted.py", tier, backend)
    assert result.output == "out"
    count = result.maps.count
    assert count.shape == (15, 7)
    by_index = count.reshape(3, 5, 7)
    # column k = 0 of every slice is never written; every other element once
    assert (by_index[:, :, 0] == 0).all() and (by_index[:, :, 1:] == 1).all()
    assert result.maps.unwritten == 15
    # element (i, j, k) is written by thread i * 35 + j * 7 + k - 1
    e = np.arange(105).reshape(3, 5, 7)
    assert np.array_equal(result.maps.min_writer.reshape(3, 5, 7)[:, :, 1:],
                          e[:, :, 1:] - 1)
    by_direction = {o.direction: o for o in result.maps.out_of_bounds}
    assert (by_direction["read"].count, by_direction["read"].first_thread,
            by_direction["read"].first_index) == (23, 105, (3, 0, 0))
    assert (by_direction["write"].count, by_direction["write"].first_thread,
            by_direction["write"].first_index) == (38, 6, (0, 0, 7))
    # where the writes landed: column 7 of each of the 15 rows (right, first column of
    # the band); below the last slice, rows 15..18 for slice 3's j = 0..3
    top, bottom, left, right = result.maps.oob_margin
    assert right[:, 0].tolist() == [1] * 15 and int(right.sum()) == 15
    assert int(top.sum()) == int(left.sum()) == 0
    assert bottom.sum(axis=1).tolist() == [7, 7, 7, 2]
    # the notes name the output by its name: no C here
    assert any("out shown is" in note for note in result.notes)
    assert not any("C shown" in note for note in result.notes)
    # the reads of a are counted as the kernel indexes a: 3-D
    assert result.maps.reads[0].shape == (3, 5, 7)
    assert int(result.maps.reads[0].sum()) == 105
    assert (result.maps.reads[0] == 1).all()


def test_the_backends_agree_element_by_element(files):
    for name, grid, block in (("shifted.py", (2,), (64,)), ("tally3.py", (1,), (32,))):
        runs = [run_file(files / name, tier, backend, grid, block)
                for tier, backend in BACKENDS]
        for other in runs[1:]:
            for field in ("count", "atomics", "min_writer", "max_writer", "iteration",
                          "stores_per_thread", "oob_per_thread"):
                assert np.array_equal(getattr(runs[0].maps, field),
                                      getattr(other.maps, field)), (name, field)
            for a, b in zip(runs[0].maps.oob_margin, other.maps.oob_margin):
                assert np.array_equal(a, b), name
            for a, b in zip(runs[0].maps.reads, other.maps.reads):
                assert np.array_equal(a, b), name
            assert runs[0].maps.out_of_bounds == other.maps.out_of_bounds
            for mine, theirs in zip(runs[0].maps.written, other.maps.written):
                for field in WRITTEN_MAP_FIELDS:
                    assert np.array_equal(getattr(mine, field), getattr(theirs, field)), \
                        (name, field)
            assert np.array_equal(runs[0].c, other.c, equal_nan=True), name


@pytest.mark.parametrize("tier,backend", BACKENDS)
def test_3d_atomics_and_a_second_3d_array(files, tier, backend):
    result = run_file(files / "tally3.py", tier, backend, grid=(1,), block=(32,))
    assert result.output == "tally"
    # the 2 x 2 x 2 tally drawn 4 x 2: j % 2 == 0 met by j = 0 and 2, k % 2 twice each
    assert result.maps.atomics.tolist() == [[4, 4], [2, 2], [4, 4], [2, 2]]
    assert np.array_equal(result.c, result.maps.atomics)
    (out,) = result.maps.written
    assert out.name == "out" and out.count.shape == (6, 4)
    assert (out.count == 1).all()
    assert np.array_equal(out.min_writer, np.arange(24).reshape(6, 4))


@pytest.mark.parametrize("tier,backend", [("compiled", "cpu"), ("instant", "cpu")])
def test_a_race_on_a_3d_array_names_its_element(files, tier, backend):
    result = run_file(files / "race3.py", tier, backend, grid=(2,), block=(32,))
    races = result.analysis.global_races
    assert (races.count, races.between_blocks) == (1, 1)
    assert races.array == "out" and races.index == (1, 0, 1)


def test_a_3d_output_is_checked_against_its_reference(files):
    good = run_file(files / "scaled.py", reference=f"{files / 'references.py'}:scaled")
    assert good.verdict.passed
    assert good.maps.unwritten == 0 and good.maps.collided == 0
    bad = run_file(files / "scaled.py", reference=f"{files / 'references.py'}:tripled")
    assert not bad.verdict.passed
    assert bad.verdict.errors.wrong == 105


def test_the_recording_form_of_a_3d_kernel_compiles_for_a_gpu(files):
    from kernels.analyses.ptx import compile_ptx_for
    from kernels.derived.codegen import load_module
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    for name in ("shifted", "tally3"):
        module = read_module(files / f"{name}.py")
        plan = make_plan(module, module.kernel(None), matmul=False)
        gen = load_module(plan, "cuda", "float32")
        for function, recording in ((name, False), (f"{name}__tm_record", True)):
            ptx = compile_ptx_for(plan, gen.function(function), "float32", recording,
                                  cc=(9, 0))
            assert ".target sm_90" in ptx and ".entry" in ptx


def test_more_than_three_dimensions_are_refused_by_name(files):
    with pytest.raises(RequestError, match="--arg a: 4 dimensions; ThreadMap draws arrays "
                                           "of 1 to 3"):
        describe_request(RunRequest(kernel=None, kernel_file=str(files / "shifted.py")),
                         ["a=float32[2, 2, 2, 2]"], as_it_is_unless_matmul=True)


def test_a_matmul_kernel_still_takes_matrices_only(tmp_path):
    from kernels.errors import KernelSourceError
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    path = tmp_path / "cube.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef cube(A, B, C):\n"
                    "    i = cuda.grid(1)\n    C[i, 0, 0] = A[i, 0] * B[0, i]\n")
    module = read_module(path)
    with pytest.raises(KernelSourceError, match="matrices take 2"):
        make_plan(module, module.kernel(None))


def described_job(path):
    """The KernelJob a run of ``path``'s file makes (its described inputs)."""
    from kernels.backends.common import KernelJob
    from kernels.inputs import described_arrays
    from kernels.sources.loader import load_plan

    request = describe_request(RunRequest(kernel=None, kernel_file=str(path), grid=(2,),
                                          block=(64,), backend="cpu", repeats=1),
                               as_it_is_unless_matmul=True)
    plan = load_plan(request)
    inputs, initial = described_arrays(request, plan)
    return KernelJob(request, plan, inputs, (), False, initial_output=initial)


def test_a_gpu_run_hands_the_kernel_its_3d_output(files):
    # (no GPU needed: the device arrays' shapes, with host arrays in their place)
    from kernels.backends.cuda_target import _device_arguments

    job = described_job(files / "shifted.py")
    c = job.fresh_output()
    assert c.shape == (15, 7)
    a, out = _device_arguments(job, job.inputs, c)
    assert a.shape == out.shape == (3, 5, 7)
    assert np.shares_memory(out, c)


def test_the_compiled_tier_of_a_3d_output_compiles_ahead(files):
    # the one-element job compile_emulation makes must still take a 3-D output,
    # and leave the kernel's compiled tier ready for the run itself (before:
    # an assertion that the seconds it took were not negative)
    from kernels.backends.cpu import compile_emulation, compiled_ready

    job = described_job(files / "shifted.py")
    assert not compiled_ready(job.plan, job.request)
    compile_emulation(job)
    assert compiled_ready(job.plan, job.request)


def test_a_loop_short_of_a_3d_outputs_slices_is_diagnosed_by_its_slices(tmp_path):
    path = tmp_path / "planes.py"
    path.write_text('''from numba import cuda

THREADMAP_ARGS = {"out": "float32[4, 8, 8]"}


@cuda.jit
def planes(out):
    j, k = cuda.grid(2)
    if j < 8 and k < 8:
        for i in range(3):
            out[i, j, k] = 1.0
''')
    # (the engine does not diagnose a described run yet: the rules are asked here)
    from kernels.analyses.diagnoses import diagnose
    from kernels.sources.plan import make_plan
    from kernels.sources.source import read_module

    def diagnoses():
        module = read_module(path)
        plan = make_plan(module, module.kernel(None), matmul=False)
        result = run_file(path, grid=(1, 1), block=(8, 8))
        return result, [d for d in diagnose(plan.kernel.node, result) if d.rule == "fixed-size"]

    result, found = diagnoses()
    assert result.maps.unwritten == 64  # the last slice
    (diagnosis,) = found
    assert "this run's out has 4 rows: the loop stops short" in diagnosis.message
    assert "64 elements of out past index 3 never written" in diagnosis.evidence
    # all four slices: no such diagnosis (out's first dimension, not the 32 rows drawn)
    path.write_text(path.read_text().replace("range(3)", "range(4)"))
    result, found = diagnoses()
    assert result.maps.unwritten == 0 and not found


def test_runs_of_3d_outputs_drawn_alike_are_not_diffed(files, tmp_path):
    from kernels.analyses.diff import diff_runs
    from kernels.errors import ThreadMapError

    first = run_file(files / "scaled.py", grid=(1,), block=(32,))
    other = describe_request(RunRequest(kernel=None, kernel_file=str(files / "scaled.py"),
                                        grid=(1,), block=(32,), backend="cpu", tier="compiled",
                                        repeats=1),
                             ["a=float32[5, 3, 7]", "out=float32[5, 3, 7]"],
                             as_it_is_unless_matmul=True)
    second = run(other)
    assert first.c.shape == second.c.shape == (15, 7)
    with pytest.raises(ThreadMapError, match=r"different shapes \(3 x 5 x 7 and 5 x 3 x 7\)"):
        diff_runs(first, second)
    assert diff_runs(first, first).elements == 105
