"""Wording: numbers with nouns, shares as percentages (issue 10, point 7)."""
from kernels import counted, percent


def test_one_is_singular_and_every_other_count_plural():
    assert counted(1, "block") == "1 block"
    assert counted(0, "element") == "0 elements"
    assert counted(1024, "thread") == "1,024 threads"
    assert counted(1, "written element") == "1 written element"


def test_a_share_never_rounds_to_all_or_none():
    assert percent(0.996) == ">99%" and percent(1.0) == "100%"
    assert percent(0.004) == "<1%" and percent(0.0) == "0%"
    assert percent(0.5) == "50%"


def test_a_huge_integer_is_named_by_its_length_not_written_out():
    from kernels.words import whole_number

    assert whole_number(4096) == "4,096" and whole_number(-(2 ** 63)) == \
        "-9,223,372,036,854,775,808"
    huge = int("f" * 4000, 16)  # (a hex literal Python parses, then will not print)
    assert whole_number(huge) == "a 4,817-digit number"
    assert whole_number(-(10 ** 5000)) == "a negative 5,001-digit number"


def test_threadmap_args_refuses_infinity_and_huge_integers_in_one_line(tmp_path):
    from kernels import RunRequest, ThreadMapError, describe_request

    for value, said in (("1e400", "inf is not a finite number"),
                        ("0x" + "f" * 4000, "a 4,817-digit number does not fit a 64-bit")):
        path = tmp_path / "scale.py"
        path.write_text("from numba import cuda\n\n"
                        f'THREADMAP_ARGS = {{"x": "float32[64]", "alpha": {value}}}\n\n\n'
                        "@cuda.jit\ndef scale(x, alpha):\n    i = cuda.grid(1)\n"
                        "    if i < x.size:\n        x[i] = x[i] * alpha\n")
        try:
            describe_request(RunRequest(kernel=None, kernel_file=str(path), grid=(1,),
                                        block=(64,)), as_it_is_unless_matmul=True)
        except ThreadMapError as exc:  # (at its line: scale.py:3)
            message = str(exc)
        else:
            raise AssertionError(f"alpha = {value[:10]} was taken")
        assert said in message and "scale.py:3" in message and "\n" not in message
        assert len(message) < 400


def test_a_quoted_value_is_bounded_whatever_it_holds():
    from kernels.words import quoted

    assert quoted("float32[8]") == "'float32[8]'"
    long = quoted("float32[" + "9" * 4000 + "]")
    assert long.startswith("'float32[999") and long.endswith("... (4,009 characters)")
    assert len(long) < 80
    assert quoted(True) == "True" and quoted(16) == "16"
    assert quoted(int("f" * 4000, 16)) == "a 4,817-digit number"
    assert quoted((1, int("f" * 4000, 16))) == "a tuple"  # (its repr raises ValueError)
    assert len(quoted(list(range(10_000)))) <= 60
