"""Diagnoses: the cause of a failure, named at its line.

A rule has two halves, and a diagnosis is made only when both hold, never
on a guess (a wrong diagnosis is worse than none):

* a pattern in the kernel's source, read from its syntax tree (nothing in
  the file is evaluated here: module constants come as the loader's
  allow-listed values);
* evidence in the run's records (out-of-bounds accesses with their first
  index, the writers of each element).

Each diagnosis says the cause in one sentence in the kernel's own names and
the run's numbers, gives the evidence (which threads and elements, how
many), and a fix, as the edited line where one is clear (as rustc's
``help:`` lines do).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from ..words import counted
from .hazards import thread_name

#: the launch quantities an index can be made of
_LAUNCH = ("threadIdx", "blockIdx", "blockDim", "gridDim")


@dataclass(frozen=True)
class Diagnosis:
    """One cause of a failure, at its line(s)."""

    rule: str
    lines: tuple[int, ...]
    #: one sentence of cause, in the kernel's names and the run's numbers
    message: str
    #: which threads and elements, and how many
    evidence: str
    #: the suggested edit ("line 31: ..."), or what to change
    fix: str

    def as_dict(self) -> dict:
        return {"rule": self.rule, "lines": list(self.lines), "message": self.message,
                "evidence": self.evidence, "fix": self.fix}

    def describe(self) -> str:
        """The whole diagnosis in three lines (the command's summary)."""
        where = "line" if len(self.lines) == 1 else "lines"
        return (f"{where} {', '.join(map(str, self.lines))}: {self.message}\n"
                f"  evidence: {self.evidence}\n  fix: {self.fix}")


def diagnose(kernel: ast.FunctionDef, result) -> tuple[Diagnosis, ...]:
    """Every rule's diagnosis of ``result`` (a RunResult) whose kernel
    function is ``kernel``; none where the run passed."""
    if result.verdict.passed:
        return ()
    found: list[Diagnosis] = []
    for rule in RULES:
        diagnosis = rule(kernel, result)
        if diagnosis is not None:
            found.append(diagnosis)
    return tuple(sorted(found, key=lambda d: d.lines))


# -- what an expression is made of ---------------------------------------------------------

def _launch_sources(kernel: ast.FunctionDef) -> dict[str, frozenset[str]]:
    """For each local name, the launch quantities (``threadIdx``, ...) its
    value is made of, through every assignment and loop in the kernel (a
    name assigned several times gets them all)."""
    env: dict[str, frozenset[str]] = {}
    for _ in range(4):  # (to a fixed point: loops use names assigned later)
        before = dict(env)
        for node in ast.walk(kernel):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    _bind(target, node.value, env)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                _bind(node.target, node.value, env)
            elif isinstance(node, ast.For):
                _bind(node.target, node.iter, env)
        if env == before:
            break
    return env


def _bind(target: ast.expr, value: ast.expr, env: dict[str, frozenset[str]]) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = env.get(target.id, frozenset()) | sources_of(value, env)
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = (zip(target.elts, value.elts)
                 if isinstance(value, (ast.Tuple, ast.List)) and
                 len(value.elts) == len(target.elts)
                 else ((element, value) for element in target.elts))
        for element, part in pairs:
            _bind(element, part, env)


def sources_of(expr: ast.expr, env: dict[str, frozenset[str]]) -> frozenset[str]:
    """The launch quantities ``expr`` is made of."""
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in _LAUNCH:
            found.add(node.attr)
        elif isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else \
                node.func.id if isinstance(node.func, ast.Name) else ""
            if called == "grid":  # cuda.grid(n): blockIdx * blockDim + threadIdx
                found.update(("threadIdx", "blockIdx", "blockDim"))
            elif called == "gridsize":
                found.update(("blockDim", "gridDim"))
        elif isinstance(node, ast.Name) and node.id in env:
            found.update(env[node.id])
    return frozenset(found)


def _output_stores(kernel: ast.FunctionDef, output: str) -> list[ast.Subscript]:
    """The subscripts that store into ``output`` (``C[i, j] = ...``, ``+=``)."""
    return [node for node in ast.walk(kernel)
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name) and node.value.id == output]


def _subscript_text(index: ast.expr) -> str:
    """``row, col`` (not ast.unparse's ``(row, col)``)."""
    if isinstance(index, ast.Tuple):
        return ", ".join(ast.unparse(e) for e in index.elts)
    return ast.unparse(index)


def _dims(values: tuple[int, ...]) -> tuple[int, int]:
    return (values + (1, 1))[:2]


# -- the rules ----------------------------------------------------------------------------

def _and_guard(kernel: ast.FunctionDef, result) -> Diagnosis | None:
    """``if x >= M and y >= N: return``: a thread with one coordinate in range
    goes on (needs ``or``).  Evidence: writes outside the output, the first
    with one coordinate inside its range and the other outside."""
    shape = result.maps.count.shape
    oob = next((o for o in result.maps.out_of_bounds
                if o.array == result.output and o.direction == "write" and o.count), None)
    if oob is None or oob.first_index is None or len(shape) != 2:
        return None
    inside = [0 <= i < n for i, n in zip(oob.first_index, shape)]
    if all(inside) or not any(inside):
        return None  # (not a thread that only one of the tests would stop)
    env = _launch_sources(kernel)
    for node in ast.walk(kernel):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp)
                and isinstance(node.test.op, ast.And) and len(node.test.values) >= 2
                and len(node.body) == 1 and isinstance(node.body[0], ast.Return)):
            continue
        tests = node.test.values
        if not all(isinstance(t, ast.Compare) and len(t.ops) == 1
                   and isinstance(t.ops[0], (ast.GtE, ast.Gt)) and sources_of(t.left, env)
                   for t in tests):
            continue
        fixed = ast.If(test=ast.BoolOp(op=ast.Or(), values=tests), body=node.body, orelse=[])
        written = f"if {ast.unparse(fixed.test)}:"
        names = " and ".join(f"`{ast.unparse(t)}`" for t in tests)
        every = "both" if len(tests) == 2 else "all"
        grid, block = _dims(result.request.grid), _dims(result.request.block)
        index = ", ".join(map(str, oob.first_index))
        return Diagnosis(
            "and-guard", (node.lineno,),
            f"the guard at line {node.lineno} returns only when {names} {every} hold, so a "
            f"thread with one coordinate inside {result.output} and the other outside goes "
            f"on and stores outside {result.output} "
            f"({' x '.join(map(str, shape))})",
            f"{counted(oob.count, 'out-of-bounds write')} of {result.output}; the first by "
            f"{thread_name(oob.first_thread, grid, block)} at [{index}]",
            f"line {node.lineno}: `{written}` (return when any coordinate is out of range)")
    return None


def _thread_index_only(kernel: ast.FunctionDef, result) -> Diagnosis | None:
    """The output indexed from ``threadIdx`` without ``blockIdx``: every block
    repeats block 0's elements.  Evidence: elements written by threads of
    more than one block."""
    grid, block = _dims(result.request.grid), _dims(result.request.block)
    blocks = grid[0] * grid[1]
    if blocks < 2:
        return None
    env = _launch_sources(kernel)
    stores = [s for s in _output_stores(kernel, result.output)
              if "threadIdx" in sources_of(s.slice, env)
              and "blockIdx" not in sources_of(s.slice, env)]
    if not stores or any("blockIdx" in sources_of(s.slice, env)
                         for s in _output_stores(kernel, result.output)):
        return None
    maps = result.maps
    per_block = block[0] * block[1]
    written = maps.count >= 1
    crossed = written & (maps.min_writer // per_block != maps.max_writer // per_block)
    shared = int(np.count_nonzero(crossed))
    if not shared:
        return None
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(crossed)), crossed.shape))
    low, high = (int(maps.min_writer[first]) // per_block,
                 int(maps.max_writer[first]) // per_block)
    lines = tuple(sorted({s.lineno for s in stores}))
    index = _subscript_text(stores[0].slice)
    one_d = (result.kernel.launch_dims if result.kernel is not None
             else len(result.request.block)) == 1
    grid_call = "cuda.grid(1)" if one_d else "cuda.grid(2)"
    where = ", ".join(map(str, first))
    return Diagnosis(
        "thread-index-only", lines,
        f"{result.output}[{index}] at line {lines[0]} is indexed from cuda.threadIdx but "
        f"never cuda.blockIdx, so each of the {blocks:,} blocks computes the same elements "
        f"as block 0",
        f"{counted(shared, 'element')} of {result.output} written by threads of more than "
        f"one block; the first, [{where}], by blocks "
        f"({low % grid[0]}, {low // grid[0]}) and ({high % grid[0]}, {high // grid[0]})",
        f"index with the global thread id, `{grid_call}` (blockIdx * blockDim + threadIdx), "
        f"and share the work among the whole grid's threads, `cuda.gridsize("
        f"{1 if one_d else 2})`, not the block's")


RULES = (_and_guard, _thread_index_only)
