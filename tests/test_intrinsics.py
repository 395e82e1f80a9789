"""CUDA's scalar intrinsics in the emulation (issue 44, point 3): cuda.popc,
clz, ffs, brev, fma, cbrt and selp give CUDA's values in both tiers, with the
types numba-cuda gives them, and the two tiers agree element by element.

The references here are written from CUDA's definitions, on Python's
integers and exact fractions, not from the code under test."""
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from kernels import RunRequest, ThreadMapError, run
from kernels.derived.intrinsics import INTRINSICS, lane_functions, vector_form
from kernels.inputs import make_inputs
from kernels.sources.plan import INTRINSIC_CALLS
from tests.conftest import assert_same_results

FILE = str(Path(__file__).parent / "kernels" / "intrinsics.py")
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
LANE = lane_functions()


def _run(kernel: str, shape, grid, block, tier: str, file: str = FILE):
    m, k, n = shape
    return run(RunRequest(kernel=kernel, kernel_file=file, m=m, k=k, n=n, grid=grid,
                          block=block, backend="cpu", tier=tier))


# -- CUDA's definitions, on Python's integers ------------------------------------------

def _unsigned(value: int, width: int) -> int:
    return value & ((1 << width) - 1)


def popc(value: int, width: int) -> int:
    return bin(_unsigned(value, width)).count("1")


def clz(value: int, width: int) -> int:
    return width - _unsigned(value, width).bit_length()


def ffs(value: int, width: int) -> int:
    bits = _unsigned(value, width)
    return (bits & -bits).bit_length()


def brev(value: int, width: int) -> int:
    return int(format(_unsigned(value, width), f"0{width}b")[::-1], 2)


REFERENCES = {"popc": popc, "clz": clz, "ffs": ffs, "brev": brev}


def _samples(dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    edges = [0, 1, 2, 3, info.max, info.min, info.max - 1, info.min + 1]
    edges += [v for v in (-1, -2, -20, 1 << 7, 1 << 15, 1 << 31, 1 << 62) if
              info.min <= v <= info.max]
    rng = np.random.default_rng(44)
    drawn = rng.integers(info.min, info.max, size=300, dtype=dtype, endpoint=True)
    return np.concatenate([np.array(edges, dtype), drawn])


def _lane_values(name: str, values: np.ndarray) -> np.ndarray:
    """The compiled tier's form, lane by lane, in a numba loop."""
    function = LANE[f"_tm_{name}"]

    @njit
    def each(xs):
        out = [function(xs[0])]
        for x in xs[1:]:
            out.append(function(x))
        return out

    values = each(values)
    (typed,) = each.nopython_signatures  # List(<the type numba gave the result>)
    return np.array(values, dtype=str(typed.return_type.dtype))


@pytest.mark.parametrize("name", ["popc", "clz", "ffs"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint32", "uint64"])
def test_the_bit_counts_are_cuda_s_on_every_width(name, dtype):
    values = _samples(dtype)
    width = 8 * np.dtype(dtype).itemsize
    expected = [REFERENCES[name](int(v), width) for v in values]
    vector = vector_form(name, values)
    lane = _lane_values(name, values)
    assert vector.tolist() == expected
    assert lane.tolist() == expected
    # numba-cuda's types: popc and clz keep the argument's, ffs is uint32
    result_type = "uint32" if name == "ffs" else dtype
    assert vector.dtype == lane.dtype == np.dtype(result_type)


@pytest.mark.parametrize("name", ["popc", "clz"])
@pytest.mark.parametrize("dtype", ["int8", "int16", "uint8", "uint16"])
def test_the_narrow_integers_count_their_own_bits(name, dtype):
    values = _samples(dtype)
    width = 8 * np.dtype(dtype).itemsize
    expected = [REFERENCES[name](int(v), width) for v in values]
    assert vector_form(name, values).tolist() == expected
    assert _lane_values(name, values).tolist() == expected


@pytest.mark.parametrize("dtype", ["uint32", "uint64"])
def test_brev_reverses_the_bits(dtype):
    values = _samples(dtype)
    width = 8 * np.dtype(dtype).itemsize
    expected = [brev(int(v), width) for v in values]
    assert vector_form("brev", values).tolist() == expected
    assert _lane_values("brev", values).tolist() == expected
    assert brev(1, 32) == 1 << 31 and brev(0b1011, 32) == 0b1101 << 28  # (the reference)


# -- fma: rounded once -----------------------------------------------------------------

def _exact_fma(a, b, c, dtype) -> float:
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    return float(np.array(float(exact)).astype(dtype)) if dtype == "float64" else \
        _nearest_float32(exact)


def _nearest_float32(exact: Fraction) -> float:
    """The float32 nearest ``exact`` (ties to even), from the two float32
    neighbours of the float64 nearest it, decided exactly."""
    near = np.float32(float(exact))
    low, high = sorted({near, np.nextafter(near, np.float32(-np.inf)),
                        np.nextafter(near, np.float32(np.inf))},
                       key=lambda f: abs(Fraction(float(f)) - exact))[:2]
    d_low, d_high = abs(Fraction(float(low)) - exact), abs(Fraction(float(high)) - exact)
    if d_low != d_high:
        return float(low if d_low < d_high else high)
    return float(low if int(np.array(low).view(np.int32)) % 2 == 0 else high)


def _hard_triples(dtype: str, count: int = 4000) -> tuple[np.ndarray, ...]:
    """Random factors, and addends that cancel most of the product: there a
    product rounded before the sum loses the answer's low bits."""
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(count) * 2.0 ** rng.integers(-30, 30, count)).astype(dtype)
    b = (rng.standard_normal(count) * 2.0 ** rng.integers(-30, 30, count)).astype(dtype)
    product = a.astype(np.float64) * b.astype(np.float64)
    c = np.where(rng.random(count) < 0.5, -product,
                 rng.standard_normal(count) * np.abs(product)).astype(dtype)
    return a, b, c


_FMA = LANE["_tm_fma"]


@njit
def _fma_lanes(a, b, c):
    """The compiled tier's fma, lane after lane."""
    out = np.empty_like(a)
    for i in range(a.size):
        out[i] = _FMA(a[i], b[i], c[i])
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_is_rounded_once_in_both_tiers(dtype):
    a, b, c = _hard_triples(dtype)
    expected = np.array([_exact_fma(x, y, z, dtype) for x, y, z in zip(a, b, c)], dtype)
    vector = vector_form("fma", a, b, c)
    np.testing.assert_array_equal(vector, expected)
    np.testing.assert_array_equal(_fma_lanes(a, b, c), expected)
    assert vector.dtype == np.dtype(dtype)
    # and the test can tell: the product rounded first gives other values
    assert (((a * b) + c) != expected).sum() > 100


def test_fma_at_the_edges_of_the_range():
    # Where Dekker's product is not exact, the lane is worked out exactly.
    big, tiny = 2.0 ** 1000, 2.0 ** -1000
    e = 2.0 ** -52
    a = np.array([big, tiny, big, np.inf, np.nan, 0.0, -0.0, 1.0 + e, 2.0 ** -540, 3.0])
    b = np.array([big, tiny, 2.0 ** 24, 0.0, 1.0, 5.0, 5.0, 1.0 - e, 2.0 ** -540,
                  2.0 ** 1022])
    c = np.array([-np.inf, 2.0 ** -1074, -(2.0 ** 1023), 1.0, 1.0, -0.0, 0.0, -1.0,
                  2.0 ** -1074, -(2.0 ** 1023)])
    out = vector_form("fma", a, b, c)
    assert out[0] == -np.inf                      # big * big is finite in no format
    assert out[1] == 2.0 ** -1074                 # the product is far below the subnormals
    assert out[2] == 2.0 ** 1023                  # 2**1024 - 2**1023: no overflow inside
    assert np.isnan(out[3]) and np.isnan(out[4])  # inf * 0, nan
    assert out[5] == 0.0 and not np.signbit(out[5])  # 0 * 5 + -0 is +0
    assert out[6] == 0.0 and not np.signbit(out[6])
    assert out[7] == -(2.0 ** -104)               # (1 + e)(1 - e) - 1 = -e**2, exactly
    assert out[8] == 2.0 ** -1074                 # 2**-1074 + 2**-1080 rounds down
    assert out[9] == 2.0 ** 1022                  # 3 * 2**1022 - 2**1023, inside the range
    for i in (1, 2, 7, 8, 9):
        assert out[i] == _exact_fma(a[i], b[i], c[i], "float64")
    np.testing.assert_array_equal(_fma_lanes(a, b, c), out)


# -- types, as numba-cuda gives them ---------------------------------------------------

def test_the_cases_are_numba_cuda_s():
    from numba.cuda import cudadecl

    templates = {"popc": cudadecl.Cuda_popc, "clz": cudadecl.Cuda_clz,
                 "ffs": cudadecl.Cuda_ffs, "brev": cudadecl.Cuda_brev,
                 "fma": cudadecl.Cuda_fma, "cbrt": cudadecl.Cuda_cbrt}
    for name, template in templates.items():
        theirs = {(str(case.return_type), *map(str, case.args)) for case in template.cases}
        assert set(INTRINSICS[name].cases) == theirs, name
    assert set(INTRINSICS) == INTRINSIC_CALLS  # (the plan's list of emulated calls)


def test_selp_takes_what_numba_cuda_s_rule_takes():
    from numba.core import types
    from numba.core.registry import cpu_target
    from numba.cuda import cudadecl

    from kernels.derived.intrinsics import IntrinsicTypeError, signature

    context = cpu_target.typing_context
    names = ["float64", "float32", "int8", "int16", "int32", "int64", "uint32", "boolean"]
    for first in names:
        for second in names:
            args = (types.boolean, getattr(types, first), getattr(types, second))
            theirs = cudadecl.Cuda_selp(context).generic(args, {})
            try:
                ours = signature(context, "selp", args)
            except IntrinsicTypeError:
                ours = None
            assert ours == theirs, args


def test_a_literal_is_typed_as_a_variable_of_its_type_is():
    popc, fma = LANE["_tm_popc"], LANE["_tm_fma"]

    @njit
    def literals():
        return popc(5), fma(2, 3.0, 1)

    count, fused = literals()
    assert count == 2 and fused == 7.0
    assert isinstance(count, int)  # int64, as vector_form gives np.int64(5)
    assert vector_form("popc", np.int64(5)).dtype == np.int64
    assert vector_form("fma", np.int64(2), np.float64(3), np.int64(1)) == 7.0


# -- in kernels, on both tiers ---------------------------------------------------------

@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_each_intrinsic_gives_cuda_s_value_in_a_kernel(tier):
    result = _run("bits", (40, 2, 8), (2,), (32,), tier)
    c = result.c
    t = np.arange(40)
    x = [int(v) * 7 - 20 for v in t]  # (Python's integers: the reference's own)
    expected = np.stack([
        [popc(v, 32) for v in x],
        [clz(v, 32) for v in x],
        [ffs(v, 32) for v in x],
        [brev(int(v), 32) >> 24 for v in t],
        [popc(int(v), 64) for v in t],
        [clz(int(v), 64) for v in t],
        np.where(t % 2 == 0, t, -t),
        t,                                       # cbrt(t ** 3), exact for these
    ], axis=1)
    np.testing.assert_array_equal(c, expected.astype(np.float32))
    # spot checks by hand: -20 is 0xffffffec (29 bits set, lowest at 3);
    # brev(1) >> 24 is 128; the int64 0 has 64 leading zeros
    assert c[0, 0] == 29 and c[0, 2] == 3 and c[1, 3] == 128 and c[0, 5] == 64


@pytest.mark.parametrize("tier", ["instant", "compiled"])
def test_a_ballot_counted_with_popc_and_led_by_ffs(tier):
    result = _run("warp_votes", (70, 1, 3), (3,), (32,), tier)
    a, _ = make_inputs("random", 70, 1, 3, "float32", seed=0)  # (the run's inputs)
    votes = a[:, 0] > 0
    c = result.c
    for warp in range(3):
        rows = range(32 * warp, min(32 * warp + 32, 70))
        ballot = sum(1 << (r % 32) for r in rows if votes[r])
        assert 0 < ballot < (1 << len(rows)) - 1  # some lanes voted, not all
        for r in rows:
            lane = r % 32
            assert c[r, 0] == bin(ballot).count("1")
            assert c[r, 1] == (ballot & -ballot).bit_length() - 1
            assert c[r, 2] == bin(ballot & ((1 << lane) - 1)).count("1")


@pytest.mark.parametrize("kernel,shape,grid,block", [
    ("matmul_fma", (37, 70, 29), (2, 2), (32, 16)),
    ("matmul_fma32", (37, 70, 29), (2, 2), (32, 16)),
    ("bits", (40, 2, 8), (2,), (32,)),
    ("warp_votes", (70, 1, 3), (3,), (32,)),
])
def test_the_tiers_agree_element_by_element(kernel, shape, grid, block):
    compiled = _run(kernel, shape, grid, block, "compiled")
    instant = _run(kernel, shape, grid, block, "instant")
    assert "numpy lockstep" in instant.timings[1].method
    assert_same_results(compiled, instant)


@pytest.mark.parametrize("kernel", ["matmul_fma", "matmul_fma32"])
def test_an_fma_matmul_passes_on_random_inputs(kernel):
    result = _run(kernel, (37, 70, 29), (2, 2), (32, 16), "instant")
    assert result.verdict.passed, result.verdict.reasons
    assert result.verdict.errors.rel_error < 1e-5   # float32 output, a 70-term sum
    assert result.maps.count.min() == result.maps.count.max() == 1


def test_the_kernels_compile_for_a_gpu():
    import importlib.util

    from numba import cuda, float32

    spec = importlib.util.spec_from_file_location("tm_intrinsics_kernels", FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # (our own test file, not a user's)
    array = float32[:, :]
    for name in ("matmul_fma", "matmul_fma32", "warp_votes"):
        ptx, _ = cuda.compile_ptx(getattr(module, name).py_func, (array, array, array),
                                  cc=(9, 0))
        assert ".entry" in ptx
    ptx, _ = cuda.compile_ptx(module.bits.py_func, (array, array, array), cc=(9, 0))
    assert "popc.b32" in ptx and "popc.b64" in ptx and "clz.b32" in ptx


def test_an_intrinsic_numba_cuda_cannot_compile_is_refused_with_its_line(tmp_path):
    path = tmp_path / "narrow_ffs.py"
    path.write_text(
        "import numpy as np\nfrom numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
        "    i, j = cuda.grid(2)\n    if i < C.shape[0] and j < C.shape[1]:\n"
        "        C[i, j] = A[i, 0] * B[0, j] + cuda.ffs(np.int8(i))\n")
    for tier in ("instant", "compiled"):
        with pytest.raises(ThreadMapError) as caught:
            _run("matmul", (8, 4, 8), (1, 1), (8, 8), tier, file=str(path))
        text = str(caught.value)
        assert "cuda.ffs of int8: numba-cuda has code for 32- and 64-bit integers only" \
            in text, text
        assert "line 9" in text or ":9" in text, text


def test_a_call_with_the_wrong_arguments_is_refused_with_its_line(tmp_path):
    path = tmp_path / "two_args.py"
    path.write_text(
        "from numba import cuda\n\n\n@cuda.jit\ndef matmul(A, B, C):\n"
        "    i, j = cuda.grid(2)\n    if i < C.shape[0] and j < C.shape[1]:\n"
        "        C[i, j] = A[i, 0] * B[0, j] + cuda.popc(i, j)\n")
    with pytest.raises(ThreadMapError) as caught:
        _run("matmul", (8, 4, 8), (1, 1), (8, 8), "instant", file=str(path))
    assert "cuda.popc() takes 1 argument, by position" in str(caught.value)
    assert "line 8" in str(caught.value) or ":8" in str(caught.value), str(caught.value)
