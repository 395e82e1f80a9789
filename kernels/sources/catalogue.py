"""The built-in kernels: one plain numba CUDA source each, in ``builtin/``."""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable

from .source import Launch


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _seed_launch(m: int, k: int, n: int) -> Launch:
    return Launch((1,), (1024,))


def _tile_launch(m: int, k: int, n: int) -> Launch:
    # x runs along the columns of C, y along its rows.
    return Launch((_ceil_div(n, 16), _ceil_div(m, 16)), (16, 16))


@dataclass(frozen=True)
class BuiltinKernel:
    """A kernel of the catalogue and its preset launch."""

    name: str
    module: str
    title: str
    summary: str
    default_launch: Callable[[int, int, int], Launch]

    @property
    def path(self) -> Path:
        return Path(str(resources.files("kernels.sources.builtin").joinpath(f"{self.module}.py")))

    def source(self) -> str:
        return self.path.read_text(encoding="utf-8")


CATALOGUE: dict[str, BuiltinKernel] = {k.name: k for k in (
    BuiltinKernel("grid-stride", "grid_stride", "Grid-stride loop (the answer's kernel)",
                  "1-D grid-stride loop over the elements of C: any grid covers C exactly once.",
                  _seed_launch),
    BuiltinKernel("naive-2d", "naive_2d", "Naive 2-D, one thread per element",
                  "cuda.grid(2) plus a bounds check: the textbook kernel.", _tile_launch),
    BuiltinKernel("tiled", "tiled", "Shared-memory tiles (16 x 16)",
                  "Tiles of A and B staged in shared memory; needs 16 x 16 blocks.", _tile_launch),
    BuiltinKernel("one-block-chunks", "one_block_chunks", "One block, contiguous chunks (buggy)",
                  "Each thread of one block takes ceil(C.size / threads) elements, unguarded.",
                  _seed_launch),
    BuiltinKernel("tid-rows", "tid_rows", "B[tid, col] (the asker's bug)",
                  "Work derived from A, B indexed by the thread index: collisions and "
                  "out-of-bounds reads.", _seed_launch),
    BuiltinKernel("grid-stride-colmajor", "grid_stride_colmajor",
                  "Grid-stride, column-major walk",
                  "Same coverage as grid-stride, but a warp's accesses are spread over rows.",
                  _seed_launch),
)}


def builtin(name: str) -> BuiltinKernel:
    """The built-in kernel called ``name`` (raises KeyError with the known names)."""
    try:
        return CATALOGUE[name]
    except KeyError:
        raise KeyError(f"unknown kernel {name!r}; built-in kernels: "
                       f"{', '.join(CATALOGUE)}") from None
