"""What a diagnosis reads in the kernel's source: which launch quantities and
array sizes each name is made of, the loops around a node, and the value of
simple expressions on this run's sizes and launch.

Nothing from the file is executed: expressions are read from the syntax tree
and only integer arithmetic on known values (literals, the module's
allow-listed constants, array sizes, the launch) is worked out here.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

#: the launch quantities an index can be made of
LAUNCH = ("threadIdx", "blockIdx", "blockDim", "gridDim")


#: Calls that round a quotient to a whole number (``int``, ``math.ceil``, ...).
_ROUNDINGS = frozenset({"int", "ceil", "floor", "trunc"})


def called(node: ast.expr) -> str:
    """The name a call calls (``grid`` for ``cuda.grid(2)``); "" if not a call."""
    if not isinstance(node, ast.Call):
        return ""
    return node.func.attr if isinstance(node.func, ast.Attribute) else \
        node.func.id if isinstance(node.func, ast.Name) else ""


def sources_of(expr: ast.expr, env: dict[str, frozenset[str]]) -> frozenset[str]:
    """What ``expr`` is made of: launch quantities (``threadIdx``,
    ``threadIdx.x``, ``blockIdx``, ...) and array sizes (``A.shape[0]``,
    ``C.size``), through the names in ``env``."""
    found: set[str] = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and node.attr in LAUNCH:
            found.add(node.attr)
        elif isinstance(node, ast.Attribute) and node.attr in "xyz" and len(node.attr) == 1 \
                and isinstance(node.value, ast.Attribute) and node.value.attr in LAUNCH:
            found.add(f"axis:{node.attr}")  # (which axis of the launch it follows)
            if node.value.attr == "threadIdx":
                found.add(f"threadIdx.{node.attr}")  # (which lanes differ in it)
        elif isinstance(node, ast.Attribute) and node.attr == "size" \
                and isinstance(node.value, ast.Name):
            found.add(f"{node.value.id}.size")
        elif shape_ref(node) is not None:
            found.add("{}.shape[{}]".format(*shape_ref(node)))
        elif isinstance(node, ast.Call):
            # (cuda.grid(1), cuda.gridsize(1): along x; cuda.grid(2) unpacked
            # is read by _bind, one axis a name)
            if called(node) == "grid":  # cuda.grid(n): blockIdx * blockDim + threadIdx
                found.update(("threadIdx", "blockIdx", "blockDim", "threadIdx.x", "axis:x"))
            elif called(node) == "gridsize":
                found.update(("blockDim", "gridDim", "axis:x"))
        elif isinstance(node, ast.Name) and node.id in env:
            found.update(env[node.id])
    return frozenset(found)


def _bind(target: ast.expr, value: ast.expr, env: dict[str, frozenset[str]]) -> None:
    if isinstance(target, (ast.Tuple, ast.List)) and called(value) in ("grid", "gridsize"):
        # x, y = cuda.grid(2): x is made of threadIdx.x, y of threadIdx.y;
        # sx, sy = cuda.gridsize(2): sx is the grid's size along x
        made = (("threadIdx", "blockIdx", "blockDim") if called(value) == "grid"
                else ("blockDim", "gridDim"))
        for axis, element in zip("xyz", target.elts):
            if isinstance(element, ast.Name):
                own = (f"threadIdx.{axis}",) if called(value) == "grid" else ()
                env[element.id] = env.get(element.id, frozenset()) | frozenset(
                    made + own + (f"axis:{axis}",))
        return
    if isinstance(target, ast.Name):
        env[target.id] = env.get(target.id, frozenset()) | sources_of(value, env)
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = (zip(target.elts, value.elts)
                 if isinstance(value, (ast.Tuple, ast.List)) and
                 len(value.elts) == len(target.elts)
                 else ((element, value) for element in target.elts))
        for element, part in pairs:
            _bind(element, part, env)


def name_sources(kernel: ast.FunctionDef) -> dict[str, frozenset[str]]:
    """For each local name, what its value is made of (``sources_of``),
    through every assignment and loop in the kernel (a name assigned several
    times gets them all)."""
    env: dict[str, frozenset[str]] = {}
    for _ in range(6):  # (to a fixed point: loops use names assigned later)
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


def subscript_text(index: ast.expr) -> str:
    """``row, col`` (not ast.unparse's ``(row, col)``)."""
    if isinstance(index, ast.Tuple):
        return ", ".join(ast.unparse(e) for e in index.elts)
    return ast.unparse(index)


def names_in(expr: ast.expr) -> set[str]:
    return {node.id for node in ast.walk(expr) if isinstance(node, ast.Name)}


def statement_path(body: list[ast.stmt], line: int) -> list[tuple[list[ast.stmt], int]]:
    """The statements that hold ``line``, outermost first: (their body, index)."""
    for index, statement in enumerate(body):
        if statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            inner: list = []
            for field_name in ("body", "orelse"):
                inner = statement_path(getattr(statement, field_name, None) or [], line)
                if inner:
                    break
            return [(body, index)] + inner
    return []


def dims(values: tuple[int, ...]) -> tuple[int, int]:
    return (tuple(values) + (1, 1))[:2]


@dataclass
class Context:
    """One run's kernel, read once for every rule."""

    kernel: ast.FunctionDef
    result: object  # RunResult
    #: the module's constants' values (allow-listed by the loader)
    constants: dict = field(default_factory=dict)
    #: the line of each module constant
    constant_lines: dict = field(default_factory=dict)
    #: the same launch's error figures on all-ones inputs (None: not tried)
    ones_errors: object | None = None

    def __post_init__(self) -> None:
        #: rules that failed on this kernel (said in the result's notes)
        self.failed: list[str] = []
        self.env = name_sources(self.kernel)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.kernel):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        request = self.result.request
        self.grid, self.block = dims(request.grid), dims(request.block)
        self.roles = {role: name for name, role, _ in self.result.slots}
        m, k, n = request.shape
        self.shapes = {}
        described = {a.name: tuple(a.shape) for a in request.arguments if hasattr(a, "shape")}
        for name, role, ndim in self.result.slots:
            if name in described:
                # (a described array, input or output: as the kernel indexes
                # it, not as it is drawn: a 1-D output wrapped into rows, a
                # 3-D one's slices stacked)
                whole = described[name]
                self.shapes[name] = (int(np.prod(whole)),) if ndim == 1 else whole
            elif role == "A":
                self.shapes[name] = (m, k)
            elif role == "B":
                self.shapes[name] = (k, n)
            elif role == "C":
                self.shapes[name] = tuple(self.result.maps.count.shape)
        #: the values each local name is assigned (None: by a loop or ``+=``)
        self.assigned: dict[str, list[ast.expr | None]] = {}
        for node in ast.walk(self.kernel):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                self.assigned.setdefault(node.targets[0].id, []).append(node.value)
            elif isinstance(node, (ast.AugAssign, ast.For)):
                target = node.target
                if isinstance(target, ast.Name):
                    self.assigned.setdefault(target.id, []).append(None)
        #: names unpacked from the launch, ``x, y = cuda.grid(2)`` and
        #: ``sx, sy = cuda.gridsize(2)``: name -> (grid or gridsize, axis)
        self.unpacked: dict[str, tuple[str, int]] = {}
        for node in ast.walk(self.kernel):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], (ast.Tuple, ast.List)) \
                    and called(node.value) in ("grid", "gridsize"):
                for axis, element in enumerate(node.targets[0].elts):
                    if isinstance(element, ast.Name):
                        self.unpacked[element.id] = (called(node.value), axis)
        #: shared and local arrays: name -> (its declaration, its shape's
        #: expression), as ``sA = cuda.shared.array((TPB, TPB), float32)``
        self.declarations: dict[str, tuple[ast.Assign, ast.expr]] = {}
        for node in ast.walk(self.kernel):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name) \
                    and called(node.value) == "array":
                shape_expr = node.value.args[0] if node.value.args else next(
                    (k.value for k in node.value.keywords if k.arg == "shape"), None)
                if shape_expr is not None:
                    self.declarations.setdefault(node.targets[0].id, (node, shape_expr))
        # their shapes, where worked out here
        for name, (_, shape_expr) in self.declarations.items():
            parts = shape_expr.elts if isinstance(shape_expr, ast.Tuple) else [shape_expr]
            values = [self.value(part) for part in parts]
            if values and None not in values:
                self.shapes.setdefault(name, tuple(values))

    @property
    def matmul(self) -> bool:
        """Whether the run is C = A @ B (roles A, B, C), not a described kernel."""
        return not self.result.request.arguments

    @property
    def output(self) -> str:
        return self.result.output

    def role(self, role: str) -> str | None:
        return self.roles.get(role)

    def reads_of(self, array: str) -> np.ndarray | None:
        """How many times each element of ``array`` (an input) was read, in
        its shape as the kernel indexes it; None for an array not read back
        (the output, shared memory)."""
        maps = self.result.maps
        if not self.result.request.arguments:  # (a matmul: A's, then B's)
            index = {self.role("A"): 0, self.role("B"): 1}.get(array)
        else:
            names = self.result.input_names
            index = names.index(array) if array in names else None
        if index is None or index >= len(maps.reads):
            return None
        reads = maps.reads[index]
        shape = self.shapes.get(array)
        return reads.reshape(shape) if shape is not None and reads.size == np.prod(shape) \
            else reads

    def axes(self, expr: ast.expr) -> frozenset[str]:
        """The launch's axes (``x``, ``y``, ``z``) ``expr`` follows."""
        return frozenset(source[len("axis:"):] for source in sources_of(expr, self.env)
                         if source.startswith("axis:"))

    def grid_extent(self, axis: str) -> int:
        """The grid's threads along ``axis``: ``cuda.gridsize``'s element."""
        index = "xyz".index(axis)
        block = tuple(self.result.request.block) + (1, 1)
        grid = tuple(self.result.request.grid) + (1, 1)
        return block[index] * grid[index]

    def loops_around(self, node: ast.AST) -> list[ast.For]:
        """The ``for`` loops that hold ``node``, innermost first."""
        loops = []
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, ast.For):
                loops.append(node)
        return loops

    def value(self, expr: ast.expr, depth: int = 0) -> int | None:
        """``expr``'s integer value in this run, where it is made only of
        literals, module constants, names assigned once from such, array sizes
        and the launch; None otherwise."""
        if depth > 20:
            return None
        if isinstance(expr, ast.Constant) and isinstance(expr.value, int) \
                and not isinstance(expr.value, bool):
            return expr.value
        if isinstance(expr, ast.Name):
            assigned = self.assigned.get(expr.id)
            if assigned is not None:
                return self.value(assigned[0], depth + 1) \
                    if len(assigned) == 1 and assigned[0] is not None else None
            if expr.id in self.unpacked and self.unpacked[expr.id][0] == "gridsize":
                return self.grid_extent("xyz"[self.unpacked[expr.id][1]])
            value = self.constants.get(expr.id)
            return value if isinstance(value, int) and not isinstance(value, bool) else None
        if isinstance(expr, ast.Attribute):
            if expr.attr == "size" and isinstance(expr.value, ast.Name) \
                    and expr.value.id in self.shapes:
                size = 1
                for extent in self.shapes[expr.value.id]:
                    size *= extent
                return size
            if isinstance(expr.value, ast.Attribute) and expr.attr in "xyz" \
                    and expr.value.attr in ("blockDim", "gridDim"):
                dims3 = (tuple(self.result.request.block) if expr.value.attr == "blockDim"
                         else tuple(self.result.request.grid)) + (1, 1)
                return dims3["xyz".index(expr.attr)]
            return None
        if shape_ref(expr) is not None:
            array, dim = shape_ref(expr)
            shape = self.shapes.get(array)
            return shape[dim] if shape is not None and -len(shape) <= dim < len(shape) else None
        if isinstance(expr, ast.BinOp):
            left, right = self.value(expr.left, depth + 1), self.value(expr.right, depth + 1)
            # (no size of a run is near 2^62: past it, a hostile file's chain
            # of products would only grow numbers too long to multiply fast)
            if left is None or right is None or max(abs(left), abs(right)) > 1 << 62:
                return None
            op = type(expr.op)
            if op is ast.Add:
                return left + right
            if op is ast.Sub:
                return left - right
            if op is ast.Mult:
                return left * right
            if op in (ast.FloorDiv, ast.Mod) and right != 0:
                return left // right if op is ast.FloorDiv else left % right
            return None
        if isinstance(expr, ast.Call) and called(expr) == "gridsize" and len(expr.args) == 1 \
                and self.value(expr.args[0], depth + 1) == 1:
            total = 1
            for extent in tuple(self.result.request.grid) + tuple(self.result.request.block):
                total *= extent
            return total  # (cuda.gridsize(1): the launch's threads)
        if isinstance(expr, ast.Call) and called(expr) in ("min", "max") and expr.args \
                and isinstance(expr.func, ast.Name):
            values = [self.value(a, depth + 1) for a in expr.args]
            if None in values:
                return None
            return min(values) if expr.func.id == "min" else max(values)
        if isinstance(expr, ast.Call) and called(expr) in _ROUNDINGS and len(expr.args) == 1 \
                and not expr.keywords:
            # int(a / b), math.ceil(a / b), math.floor(a / b): real code's
            # spellings of integer division, read exactly (a Fraction, never
            # a float that 2**53 would round)
            exact = self._exact(expr.args[0], depth + 1)
            if exact is None:
                return None
            rounding = called(expr)
            return math.ceil(exact) if rounding == "ceil" else math.floor(exact) \
                if rounding == "floor" else int(exact)
        return None

    def _exact(self, expr: ast.expr, depth: int) -> Fraction | None:
        """``expr``'s exact value: :meth:`value`'s, or a quotient ``a / b`` of
        two of them (None otherwise)."""
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Div):
            left, right = self.value(expr.left, depth), self.value(expr.right, depth)
            return None if left is None or not right else Fraction(left, right)
        value = self.value(expr, depth)
        return None if value is None else Fraction(value)

    def fixed_by_module(self, expr: ast.expr) -> str | None:
        """The module constant ``expr`` names (directly, or through a local
        assigned once from it), else None."""
        seen = 0
        while isinstance(expr, ast.Name) and seen < 10:
            assigned = self.assigned.get(expr.id)
            if assigned is None:
                return expr.id if expr.id in self.constants else None
            if len(assigned) != 1 or assigned[0] is None:
                return None
            expr, seen = assigned[0], seen + 1
        return None


def extent_word(shape: tuple[int, ...], dim: int) -> str:
    """What the indices of ``dim`` of an array of ``shape`` count: elements
    of a 1-D array, rows and columns of a 2-D one, and so on."""
    if len(shape) == 1:
        return "elements"
    return "rows" if dim == 0 else "columns" if dim == len(shape) - 1 else f"indices of axis {dim}"


def shape_ref(expr: ast.AST) -> tuple[str, int] | None:
    """(array, dim) for ``array.shape[dim]``; None for anything else."""
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) \
            and expr.value.attr == "shape" and isinstance(expr.value.value, ast.Name) \
            and isinstance(expr.slice, ast.Constant) and isinstance(expr.slice.value, int) \
            and not isinstance(expr.slice.value, bool):
        return expr.value.value.id, expr.slice.value
    return None


def atomic_calls(node: ast.AST, array: str) -> list[ast.Call]:
    """The ``cuda.atomic.<op>(array, index, ...)`` calls under ``node``."""
    return [call for call in ast.walk(node) if isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Attribute) and call.func.value.attr == "atomic"
            and len(call.args) >= 2 and isinstance(call.args[0], ast.Name)
            and call.args[0].id == array]


def subscripts(node: ast.AST, array: str, store: bool) -> list[ast.Subscript]:
    """The subscripts of ``array`` under ``node`` that store (or load)."""
    kind = ast.Store if store else ast.Load
    return [s for s in ast.walk(node) if isinstance(s, ast.Subscript)
            and isinstance(s.ctx, kind) and isinstance(s.value, ast.Name)
            and s.value.id == array]


def subscript_parts(index: ast.expr) -> list[ast.expr]:
    """``[i, j]`` of ``X[i, j]``'s index; ``[i]`` of ``X[i]``'s."""
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def range_args(loop: ast.For) -> list[ast.expr] | None:
    """The arguments of ``loop``'s ``range(...)``; None if it is not one."""
    call = loop.iter
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) \
            and call.func.id == "range" and 1 <= len(call.args) <= 3 and not call.keywords:
        return list(call.args)
    return None


def range_loops(ctx: "Context") -> list[tuple[ast.For, list[ast.expr]]]:
    """Every ``for name in range(...)`` of the kernel, with range's arguments;
    ``r = range(...)`` then ``for i in r`` too (the seed's idiom)."""
    found = []
    for node in ast.walk(ctx.kernel):
        if not (isinstance(node, ast.For) and isinstance(node.target, ast.Name)):
            continue
        args = range_args(node)
        if args is None and isinstance(node.iter, ast.Name):
            assigned = ctx.assigned.get(node.iter.id) or []
            if len(assigned) == 1 and assigned[0] is not None:
                args = range_args(ast.For(target=node.target, iter=assigned[0], body=[],
                                           orelse=[]))
        if args is not None:
            found.append((node, args))
    return found
