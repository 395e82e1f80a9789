"""The arrays' element types of a run, as one string the derived forms are
keyed and typed by.

A matmul run and most described runs hold one dtype in every array: the key
is that dtype ("float32"), as it always was.  A kernel whose arrays differ (a
histogram's float32 data and int32 bins, CSR's int32 indices beside float64
values) is keyed by its arrays' names and dtypes in parameter order:
"x:float32,bins:int32".  Kept a string so that every cache key, file name
hash and ``repr`` that held the dtype holds it unchanged.
"""
from __future__ import annotations


def mixed_element_types(arrays: list[tuple[str, str]], run_dtype: str) -> str:
    """The key of arrays ``(name, dtype)``: ``run_dtype`` when they all hold it."""
    if all(dtype == run_dtype for _, dtype in arrays):
        return run_dtype
    return ",".join(f"{name}:{dtype}" for name, dtype in arrays)


def dtype_of(element_types: str, name: str) -> str:
    """The dtype of array ``name`` under ``element_types``."""
    if ":" not in element_types:
        return element_types
    for pair in element_types.split(","):
        array, dtype = pair.split(":")
        if array == name:
            return dtype
    raise KeyError(f"no element type for array {name!r} in {element_types!r}")


def is_uniform(element_types: str) -> bool:
    return ":" not in element_types
