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
