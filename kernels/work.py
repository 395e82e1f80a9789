"""How much a kernel does, before it runs: the statements one block's threads
execute, read from the kernel's syntax tree with its loops' trip counts.

The estimates (estimate.py) first counted a matmul's work, M x N x K, for
every kernel; a reduction's, a scan's or a row sum's is nothing like it (an
axis sum was estimated at 206 us and took 2.3 s).  Here the kernel's index
arithmetic is followed for each thread of block 0, as numpy vectors over its
lanes: the launch, the arrays' sizes, the module's constants and the scalars
are known; what an array holds is not (a loop bounded by a value read from an
array runs once here, and the count says it is incomplete).  Nothing of the
kernel runs: only integer arithmetic on those known values is worked out.

What is counted is what the instant tier pays for (backends/instant.py): a
statement run over a vector of lanes, each array access in it, and, for a
statement that stores into an array it also reads (``partial[t] +=
partial[t + s]``), the same lane after lane.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass

import numpy as np

#: Iterations of one loop followed before the rest are projected from the
#: last one (a loop's iterations cost alike: the same statements, a few
#: lanes fewer at the end).
FOLLOWED_ITERATIONS = 24
#: Statements followed in all before every loop is projected from its first
#: iteration (the estimate must stay a few milliseconds).
FOLLOWED_STATEMENTS = 4000


@dataclass(frozen=True)
class BlockWork:
    """One block's work, as the instant tier runs it."""

    #: statements run over a vector of the block's lanes (a loop's test is one)
    vector_statements: float
    #: array accesses in them (one call each)
    vector_accesses: float
    #: statements run lane after lane, counted per lane
    lane_statements: float
    #: array accesses in them, counted per lane
    lane_accesses: float
    #: statements executed, summed over the block's lanes
    lane_work: float
    #: barriers the block passes (``cuda.syncthreads()`` reached by its lanes)
    barriers: float = 0.0
    #: False where a trip count could not be read (a bound read from an
    #: array, a while whose test is not arithmetic): the work is then a
    #: lower bound
    complete: bool = True


class _Unknown(Exception):
    """A value that is not index arithmetic on known values."""


class _Follower:
    def __init__(self, kernel: ast.FunctionDef, request, plan) -> None:
        self.kernel = kernel
        bdx, bdy = request.block2
        gdx, gdy = request.grid2
        self.lanes = bdx * bdy
        lane = np.arange(self.lanes, dtype=np.int64)
        self.launch = {"threadIdx": (lane % bdx, lane // bdx, 0), "blockIdx": (0, 0, 0),
                       "blockDim": (bdx, bdy, 1), "gridDim": (gdx, gdy, 1)}
        self.shapes = _array_shapes(request, plan)
        self.arrays = set(self.shapes) | {a.name for a in plan.local_arrays}
        self.constants = {name: value for name, value in plan.module.values.items()
                          if isinstance(value, (int, float)) and not isinstance(value, bool)}
        self.scalars = {name: value for name, value in request.scalars}
        self.env: dict[str, object] = {}
        self.alive = np.ones(self.lanes, bool)
        self.counts = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        self.followed = 0
        self.complete = True

    # -- values ----------------------------------------------------------------------

    def value(self, expr: ast.expr):
        """``expr`` per lane (an int64 vector, or a number alike for every
        lane); raises _Unknown where it reads anything but known values."""
        if isinstance(expr, ast.Constant) and isinstance(expr.value, (int, float)):
            return expr.value
        if isinstance(expr, ast.Name):
            for scope in (self.env, self.scalars, self.constants):
                if expr.id in scope:
                    if scope[expr.id] is None:
                        raise _Unknown
                    return scope[expr.id]
            raise _Unknown
        if isinstance(expr, ast.Attribute):
            if isinstance(expr.value, ast.Attribute) and expr.value.attr in self.launch \
                    and expr.attr in ("x", "y", "z"):
                return self.launch[expr.value.attr]["xyz".index(expr.attr)]
            if expr.attr == "size" and isinstance(expr.value, ast.Name) \
                    and expr.value.id in self.shapes:
                return math.prod(self.shapes[expr.value.id])
            raise _Unknown
        if isinstance(expr, ast.Subscript):
            if isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape" \
                    and isinstance(expr.value.value, ast.Name) \
                    and expr.value.value.id in self.shapes:
                shape = self.shapes[expr.value.value.id]
                index = self.value(expr.slice)
                if isinstance(index, int) and -len(shape) <= index < len(shape):
                    return shape[index]
            if isinstance(expr.value, ast.Call):  # (cuda.grid(2)[0])
                whole = self.value(expr.value)
                index = self.value(expr.slice)
                if isinstance(whole, tuple) and isinstance(index, int):
                    return whole[index]
            raise _Unknown
        if isinstance(expr, ast.BinOp):
            result = _binary(expr.op, self.value(expr.left), self.value(expr.right))
            if isinstance(result, int) and abs(result) > 1 << 63:
                raise _Unknown  # (no size of a run is near; a file's tower of powers is not)
            return result
        if isinstance(expr, ast.UnaryOp):
            operand = self.value(expr.operand)
            if isinstance(expr.op, ast.USub):
                return -operand
            if isinstance(expr.op, ast.Not):
                return np.logical_not(operand)
            if isinstance(expr.op, ast.UAdd):
                return operand
            raise _Unknown
        if isinstance(expr, ast.Compare):
            left, result = self.value(expr.left), True
            for op, right_expr in zip(expr.ops, expr.comparators):
                right = self.value(right_expr)
                result = np.logical_and(result, _compare(op, left, right))
                left = right
            return result
        if isinstance(expr, ast.BoolOp):
            values = [self.value(v) for v in expr.values]
            combine = np.logical_and if isinstance(expr.op, ast.And) else np.logical_or
            result = values[0]
            for v in values[1:]:
                result = combine(result, v)
            return result
        if isinstance(expr, ast.IfExp):
            return np.where(self.value(expr.test), self.value(expr.body), self.value(expr.orelse))
        if isinstance(expr, ast.Call):
            return self._call(expr)
        if isinstance(expr, ast.Tuple):
            return tuple(self.value(e) for e in expr.elts)
        raise _Unknown

    def _call(self, call: ast.Call):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else \
            call.func.id if isinstance(call.func, ast.Name) else ""
        args = call.args
        if name == "grid" or name == "gridsize":
            n = self.value(args[0]) if args else 1
            dims = [(self.launch["blockIdx"][d] * self.launch["blockDim"][d]
                     + self.launch["threadIdx"][d]) if name == "grid"
                    else self.launch["blockDim"][d] * self.launch["gridDim"][d]
                    for d in range(3)]
            if name == "gridsize" and n == 1:
                return self.launch["blockDim"][0] * self.launch["gridDim"][0] \
                    * self.launch["blockDim"][1] * self.launch["gridDim"][1]
            return dims[0] if n == 1 else tuple(dims[:n])
        if name == "len" and len(args) == 1 and isinstance(args[0], ast.Name) \
                and args[0].id in self.shapes:
            return self.shapes[args[0].id][0]
        values = [self.value(a) for a in args]
        if name in ("min", "max") and values:
            result = values[0]
            for v in values[1:]:
                result = np.minimum(result, v) if name == "min" else np.maximum(result, v)
            return result
        if name in ("int", "floor", "trunc") and len(values) == 1:
            return np.floor(values[0]).astype(np.int64) if isinstance(values[0], np.ndarray) \
                else math.floor(values[0])
        if name == "ceil" and len(values) == 1:
            return np.ceil(values[0]).astype(np.int64) if isinstance(values[0], np.ndarray) \
                else math.ceil(values[0])
        if name == "abs" and len(values) == 1:
            return abs(values[0])
        raise _Unknown

    def known(self, expr: ast.expr):
        try:
            return self.value(expr)
        except (_Unknown, ArithmeticError, TypeError, ValueError, IndexError, RecursionError):
            return None  # (sources/limits.py bounds a tree's depth; this is the last guard)

    # -- statements ------------------------------------------------------------------

    def accesses(self, node: ast.AST) -> tuple[int, bool]:
        """(array accesses in ``node``, whether it stores into an array it
        also reads there: then the instant tier runs it lane after lane)."""
        stored, read, count = set(), set(), 0
        for sub in ast.walk(node):
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) \
                    and sub.value.id in self.arrays:
                count += 1
                (stored if isinstance(sub.ctx, ast.Store) else read).add(sub.value.id)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and isinstance(sub.func.value, ast.Attribute) \
                    and sub.func.value.attr == "atomic" and sub.args:
                count += 1
                if isinstance(sub.args[0], ast.Name):
                    stored.add(sub.args[0].id)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Subscript):
            count += 1  # (x[i] += v reads x[i] too)
            return count, True
        return count, bool(stored & read)

    def charge(self, node: ast.AST, mask: np.ndarray) -> None:
        active = int(np.count_nonzero(mask))
        if not active:
            return
        self.followed += 1
        accesses, lane_by_lane = self.accesses(node)
        if lane_by_lane:
            self.counts[2] += active
            self.counts[3] += active * accesses
        else:
            self.counts[0] += 1
            self.counts[1] += accesses
        self.counts[4] += active

    def assign(self, target: ast.expr, value, mask: np.ndarray) -> None:
        if isinstance(target, ast.Name):
            if value is None:
                self.env[target.id] = None
                return
            old = self.env.get(target.id)
            if old is None or mask.all() or isinstance(value, tuple):
                self.env[target.id] = value
            else:
                self.env[target.id] = np.where(mask, value, old)
        elif isinstance(target, (ast.Tuple, ast.List)):
            parts = value if isinstance(value, tuple) and len(value) == len(target.elts) \
                else (None,) * len(target.elts)
            for element, part in zip(target.elts, parts):
                self.assign(element, part, mask)

    def body(self, statements: list[ast.stmt], mask: np.ndarray) -> None:
        for statement in statements:
            mask = mask & self.alive
            if not mask.any():
                return
            self.statement(statement, mask)

    def statement(self, node: ast.stmt, mask: np.ndarray) -> None:
        if isinstance(node, ast.Assign):
            self.charge(node, mask)
            value = self.known(node.value)
            for target in node.targets:
                self.assign(target, value, mask)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self.charge(node, mask)
            self.assign(node.target, self.known(node.value), mask)
        elif isinstance(node, ast.AugAssign):
            self.charge(node, mask)
            if isinstance(node.target, ast.Name):
                value = self.known(ast.BinOp(left=ast.Name(node.target.id, ast.Load()),
                                             op=node.op, right=node.value))
                self.assign(node.target, value, mask)
        elif isinstance(node, ast.If):
            self.charge(node.test, mask)
            test = self.known(node.test)
            if test is None:
                self.complete = self.complete and not _reads_arrays(node.test, self.arrays)
                self.body(node.body, mask)
                self.body(node.orelse, mask)
            else:
                taken = mask & np.broadcast_to(np.asarray(test, bool), mask.shape)
                self.body(node.body, taken)
                self.body(node.orelse, mask & ~taken)
        elif isinstance(node, ast.For):
            self.for_loop(node, mask)
        elif isinstance(node, ast.While):
            self.while_loop(node, mask)
        elif isinstance(node, ast.Return):
            self.alive = self.alive & ~mask
        elif isinstance(node, (ast.Break, ast.Continue, ast.Pass)):
            return
        else:  # (a call: a barrier, an atomic, a print)
            self.charge(node, mask)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                    and isinstance(node.value.func, ast.Attribute) \
                    and node.value.func.attr == "syncthreads":
                self.counts[5] += 1

    def for_loop(self, node: ast.For, mask: np.ndarray) -> None:
        args = node.iter.args if isinstance(node.iter, ast.Call) \
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "range" else None
        values = [self.known(a) for a in args] if args else [None]
        if not args or any(v is None for v in values) or not isinstance(node.target, ast.Name):
            self.complete = False
            self.body(node.body, mask)
            return
        start, stop, step = (0, values[0], 1) if len(values) == 1 else \
            (values[0], values[1], 1) if len(values) == 2 else values
        step = np.where(np.asarray(step) == 0, 1, step)
        variable = node.target.id
        current = np.broadcast_to(np.asarray(start, np.int64), mask.shape).copy()

        def going():
            return mask & self.alive & np.where(step > 0, current < stop, current > stop)

        def advance():
            nonlocal current
            current = current + step
        self._iterate(node, going, lambda live: self.assign(node.target, current, live),
                      advance, lambda: _trips_left(current, stop, step, going()),
                      variable)

    def while_loop(self, node: ast.While, mask: np.ndarray) -> None:
        def going():
            test = self.known(node.test)
            if test is None:
                return None
            return mask & self.alive & np.broadcast_to(np.asarray(test, bool), mask.shape)

        if going() is None:
            self.complete = False
            self.charge(node.test, mask)
            self.body(node.body, mask)
            return
        self._iterate(node, going, lambda live: None, lambda: None, lambda: None, None)

    def _iterate(self, node, going, enter, advance, trips_left, variable) -> None:
        """Follow ``node``'s iterations while lanes go on, the first
        FOLLOWED_ITERATIONS of them (fewer once FOLLOWED_STATEMENTS are
        spent), then project the rest from the last one."""
        iterations = 0
        while True:
            live = going()
            test = node.test if isinstance(node, ast.While) else node.iter
            if live is None or not live.any():
                return
            before = list(self.counts)
            self.charge(test, live)  # (the loop's test)
            enter(live)
            self.body(node.body, live)
            advance()
            iterations += 1
            if iterations >= FOLLOWED_ITERATIONS or self.followed > FOLLOWED_STATEMENTS:
                left = trips_left()
                if left is None:  # (a while: its counter's next values are not
                    left = 0      # worth guessing; what was followed stands)
                    self.complete = self.complete and bool(not going().any())
                one = [after - b for after, b in zip(self.counts, before)]
                self.counts = [c + left * o for c, o in zip(self.counts, one)]
                return


def _trips_left(current, stop, step, live) -> float:
    if not live.any():
        return 0.0
    with np.errstate(all="ignore"):
        turns = np.ceil((np.asarray(stop) - current) / step)
    turns = np.broadcast_to(turns, live.shape)[live]
    return float(max(turns.max(), 0.0))


def _reads_arrays(expr: ast.expr, arrays: set[str]) -> bool:
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
               and n.value.id in arrays for n in ast.walk(expr))


def _binary(op: ast.operator, a, b):
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.FloorDiv):
        return np.floor_divide(a, np.where(np.asarray(b) == 0, 1, b))
    if isinstance(op, ast.Mod):
        return np.remainder(a, np.where(np.asarray(b) == 0, 1, b))
    if isinstance(op, ast.Div):
        return np.true_divide(a, np.where(np.asarray(b) == 0, 1, b))
    if isinstance(op, ast.Pow) and np.all(np.asarray(b) >= 0) and np.all(np.asarray(b) < 64):
        return a ** b
    if isinstance(op, ast.LShift) and np.all(np.asarray(b) < 62):
        return np.left_shift(a, b)
    if isinstance(op, ast.RShift):
        return np.right_shift(a, b)
    if isinstance(op, ast.BitAnd):
        return np.bitwise_and(a, b)
    if isinstance(op, ast.BitOr):
        return np.bitwise_or(a, b)
    raise _Unknown


def _compare(op: ast.cmpop, a, b):
    table = {ast.Lt: np.less, ast.LtE: np.less_equal, ast.Gt: np.greater,
             ast.GtE: np.greater_equal, ast.Eq: np.equal, ast.NotEq: np.not_equal}
    function = table.get(type(op))
    if function is None:
        raise _Unknown
    return function(a, b)


def _array_shapes(request, plan) -> dict[str, tuple[int, ...]]:
    """Each array parameter's shape in this run: described, or a matmul's."""
    if request.arguments:
        return {a.name: tuple(int(d) for d in a.shape) for a in request.arguments
                if hasattr(a, "shape")}
    shapes = {}
    inputs = list(plan.inputs)
    if inputs:
        shapes[inputs[0]] = (request.m, request.k)
    if len(inputs) > 1:
        shapes[inputs[1]] = (request.k, request.n)
    shapes[plan.output] = (request.m, request.n)
    return shapes


def block_work(request, plan) -> BlockWork:
    """Block 0's work in ``request``: what its threads execute, as the
    instant tier runs it (see the module's docstring)."""
    follower = _Follower(plan.kernel.node, request, plan)
    with np.errstate(all="ignore"):
        follower.body(plan.kernel.node.body, np.ones(follower.lanes, bool))
    vector, accesses, lane, lane_accesses, work, barriers = follower.counts
    return BlockWork(vector, accesses, lane, lane_accesses, work, barriers, follower.complete)
