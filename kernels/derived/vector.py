"""Derive the instant tier of the CPU emulation: the same block lockstep, in numpy.

The compiled tier (``lockstep.py``) writes a numba function that runs a block's
lanes in lockstep, statement by statement, under an active mask.  numba takes
seconds to compile it, which is what a person editing a kernel waits for.
This module is the second emitter of the same lowering
(:class:`~.lowering.LoweredKernel`: the same access sites, lane variables,
masks, loop numbers and branch and barrier sites as the compiled tier's), and
it writes a
plain Python function whose every statement runs over a *vector* of lanes
with numpy.  Nothing is compiled, so the first result comes at once; per
statement it pays numpy's call overhead, so large launches go to the compiled
tier (``backends/instant.py`` chooses by the estimated work).

Semantics, kept identical to the compiled tier's (``tests/test_tiers.py``
compares them element by element):

* An expression is evaluated for the lanes ``_tm_L`` (an index vector) that
  run it.  ``and`` / ``or`` and ``x if c else y`` evaluate their right-hand
  parts for the lanes that reach them only (``lambda _tm_L: ...``), so a load
  behind a bounds test is made only by the lanes that pass it.
* The compiled tier runs a statement lane after lane.  A vector runs each
  access for all lanes before the next access; the two agree unless one lane's
  store reaches another lane's access in the same statement.  A statement that
  stores into an array it also accesses elsewhere (``C[i, j] += v``) therefore
  runs lane by lane here too (the same vector code, one lane at a time).
* Numbers keep numba's types: literals are int64 / float64 (numpy 2 would
  otherwise let ``float32_vector * 2.0`` stay float32), and each local keeps
  the type numba gave it (``local_types.py``).

What it cannot run (a call it has no numpy form of, ``print``) raises
:class:`~kernels.errors.EmulationUnsupported` with the line, and the run goes
to the compiled tier, which says so.
"""
from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass

import numpy as np

from ..errors import EmulationUnsupported
from ..sources.source import qualified_name
from .emitter import OperationEmitter
from .intrinsics import LOWERED_NAMES
from .local_types import VALUE_BARRIERS
from .lowering import (
    Barrier,
    Exit,
    ForRange,
    Leave,
    LockstepLayout,
    LoweredKernel,
    Split,
    WhileLoop,
)
from .warp_ops import placed_operation

#: Per-lane coordinates of the unit, by the name CoordinateRewriter gives them.
_LANE_COORDINATES = {"_tm_tx": "_tm_TX", "_tm_ty": "_tm_TY", "_tm_bx": "_tm_BX",
                     "_tm_by": "_tm_BY", "_tm_gtid": "_tm_G"}
#: Launch-wide scalars, passed to the unit function as they are.
_SCALARS = ("_tm_bdx", "_tm_bdy", "_tm_gdx", "_tm_gdy")

#: Builtins with a vector form in the runtime (``_tm_r.<name>``).
_BUILTINS = {"abs": "f_abs", "min": "f_min", "max": "f_max", "int": "f_int",
             "float": "f_float", "bool": "f_bool", "round": "f_round", "pow": "f_pow"}
#: math functions: the numpy ufunc of the same values.  floor / ceil / trunc
#: give int64 in numba (Python's math returns int).
_MATH = {"sqrt": "sqrt", "exp": "exp", "expm1": "expm1", "log": "log", "log10": "log10",
         "log1p": "log1p", "log2": "log2", "sin": "sin", "cos": "cos", "tan": "tan",
         "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2",
         "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh",
         "acosh": "arccosh", "atanh": "arctanh", "fabs": "fabs", "hypot": "hypot",
         "copysign": "copysign", "fmod": "fmod", "isnan": "isnan", "isinf": "isinf",
         "isfinite": "isfinite", "degrees": "degrees", "radians": "radians"}
_MATH_TO_INT = {"floor": "floor", "ceil": "ceil", "trunc": "trunc"}
#: CUDA's scalar intrinsics, by their lowered name: ``_tm_r.intrinsic(name, ...)``.
_INTRINSICS = {lowered: name for name, lowered in LOWERED_NAMES.items()}


@dataclass(frozen=True)
class VectorCode:
    """The instant tier's unit function, as source, and what it was derived with."""

    source: str
    layout: LockstepLayout
    #: module constants the source refers to by name, with numba's types
    constants: dict[str, object]
    #: kernel lines whose statements run lane by lane (see the module docstring)
    lane_by_lane: tuple[int, ...]


def vector_code(lowered: LoweredKernel) -> VectorCode:
    """The numpy lockstep function of a lowered kernel."""
    return _VectorWriter(lowered).write()


def _name(id_: str, ctx=None) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _lambda(body: ast.expr) -> ast.Lambda:
    args = ast.arguments(posonlyargs=[], args=[ast.arg("_tm_L")], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    return ast.Lambda(args=args, body=body)


def _runtime(method: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(func=ast.Attribute(value=_name("_tm_r"), attr=method, ctx=ast.Load()),
                    args=args, keywords=[])


class _VectorExpressions(ast.NodeTransformer):
    """A statement already rewritten for one lane (accesses as helper calls,
    coordinates as ``_tm_tx``...) made into its vector form over ``_tm_L``."""

    def __init__(self, writer: _VectorWriter):
        self.writer = writer
        self.plan = writer.plan
        self.variables = writer.lowered.variables
        self.aliases = writer.plan.module.aliases
        self.local_arrays = writer.lowered.local_arrays

    def fail(self, what: str, node: ast.AST) -> EmulationUnsupported:
        return EmulationUnsupported(f"the instant tier cannot run {what}",
                                    (getattr(node, "lineno", self.plan.kernel.lineno),))

    def _entry(self, variable, offset: int, ctx) -> ast.expr:
        index = ast.Tuple(elts=[ast.Constant(variable.row + offset), _name("_tm_L")],
                          ctx=ast.Load())
        return ast.Subscript(value=_name(f"_tm_V_{variable.dtype}"), slice=index, ctx=ctx)

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in _LANE_COORDINATES:
            return ast.copy_location(ast.Subscript(
                value=_name(_LANE_COORDINATES[node.id]), slice=_name("_tm_L"),
                ctx=ast.Load()), node)
        variable = self.variables.get(node.id)
        if variable is not None:
            if variable.width:
                if not isinstance(node.ctx, ast.Load):
                    raise self.fail(f"an assignment to part of the tuple {node.id!r}", node)
                return ast.copy_location(ast.Tuple(
                    elts=[self._entry(variable, i, ast.Load()) for i in range(variable.width)],
                    ctx=ast.Load()), node)
            return ast.copy_location(self._entry(variable, 0, node.ctx), node)
        if node.id in self.local_arrays:
            return ast.copy_location(_name(f"_tm_local_{node.id}"), node)
        if node.id in self.plan.module.values and node.id not in self.writer.constants:
            self.writer.constants[node.id] = _typed_constant(self.plan.module.values[node.id])
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        """``math.pi``, ``np.nan``: the constant, as numba types it (float64)."""
        from ..sources.allow import NUMERIC_CONSTANTS

        name = qualified_name(node, self.aliases)
        if name in NUMERIC_CONSTANTS:
            return self.visit_Constant(ast.copy_location(
                ast.Constant(float(NUMERIC_CONSTANTS[name])), node))
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        value = node.value
        if isinstance(value, bool) or value is None or isinstance(value, str):
            return node
        kind = "int64" if isinstance(value, int) else (
            "float64" if isinstance(value, float) else "complex128")
        return ast.copy_location(ast.Call(
            func=ast.Attribute(value=_name("_tm_np"), attr=kind, ctx=ast.Load()),
            args=[node], keywords=[]), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.expr:
        values = [self.visit(v) for v in node.values]
        method = "and_" if isinstance(node.op, ast.And) else "or_"
        result = values[-1]
        for value in reversed(values[:-1]):
            result = _runtime(method, [value, _name("_tm_L"), _lambda(result)])
        return ast.copy_location(result, node)

    def visit_IfExp(self, node: ast.IfExp) -> ast.expr:
        return ast.copy_location(_runtime("ifexp", [
            self.visit(node.test), _name("_tm_L"), _lambda(self.visit(node.body)),
            _lambda(self.visit(node.orelse))]), node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_runtime("not_", [operand]), node)
        if isinstance(node.op, ast.Invert):
            return ast.copy_location(_runtime("invert", [operand]), node)
        node.operand = operand
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        for op in node.ops:
            if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
                raise self.fail(f"'{ast.unparse(node)}'", node)
        if len(node.ops) == 1:
            return self.generic_visit(node)
        # a < b < c: b once, as Python evaluates it; here b must be free of
        # accesses and calls, since the vector form names it twice.
        for middle in node.comparators[:-1]:
            if any(isinstance(n, (ast.Call, ast.Subscript)) for n in ast.walk(middle)):
                raise self.fail(f"a chained comparison with an access in its middle "
                                f"('{ast.unparse(node)}')", node)
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            parts.append(ast.Compare(left=copy.deepcopy(left), ops=[op],
                                     comparators=[copy.deepcopy(right)]))
            left = right
        return self.visit(ast.copy_location(ast.BoolOp(op=ast.And(), values=parts), node))

    def visit_Call(self, node: ast.Call) -> ast.expr:
        func = node.func
        if isinstance(func, ast.Name) and func.id in _INTRINSICS:
            return ast.copy_location(_runtime("intrinsic", [
                ast.Constant(_INTRINSICS[func.id])] + [self.visit(a) for a in node.args]), node)
        if isinstance(func, ast.Name) and func.id.startswith("_tm_"):
            return self._helper(node)
        if node.keywords:
            raise self.fail(f"a call with keyword arguments ('{ast.unparse(node)}')", node)
        args = [self.visit(a) for a in node.args]
        if isinstance(func, ast.Name) and func.id in _BUILTINS \
                and func.id not in self.variables:
            return ast.copy_location(_runtime(_BUILTINS[func.id], args), node)
        name = qualified_name(func, self.aliases) if isinstance(func, (ast.Attribute, ast.Name)) \
            else None
        if name:
            module, _, attr = name.rpartition(".")
            if module in ("math", "cmath") and attr in _MATH:
                return ast.copy_location(_runtime("ufunc", [ast.Constant(_MATH[attr])] + args),
                                         node)
            if module == "math" and attr in _MATH_TO_INT:
                return ast.copy_location(
                    _runtime("ufunc_int", [ast.Constant(_MATH_TO_INT[attr])] + args), node)
            if module == "math" and attr == "pow":
                return ast.copy_location(_runtime("f_pow_float", args), node)
            if module == "numpy" and attr in np.sctypeDict and isinstance(
                    np.sctypeDict[attr], type) and len(args) == 1:
                return ast.copy_location(_runtime("cast", [ast.Constant(attr)] + args), node)
            if module == "numpy" and isinstance(getattr(np, attr, None), np.ufunc):
                return ast.copy_location(_runtime("ufunc", [ast.Constant(attr)] + args), node)
            if module in ("numba", "numba.types", "numba.cuda", "numba.core.types") \
                    and len(args) == 1:
                from ..sources.allow import numba_type_name
                type_name = numba_type_name(name)
                if type_name and type_name not in ("void", "none"):
                    return ast.copy_location(_runtime("cast_numba", [ast.Constant(type_name)]
                                                      + args), node)
        raise self.fail(f"the call '{ast.unparse(node)}' (it has no numpy form here)", node)

    def _helper(self, node: ast.Call) -> ast.expr:
        """An access or division helper of the rewritten statement, as a call
        of the runtime with the lanes."""
        name = node.func.id
        args = node.args
        if name in ("_tm_truediv", "_tm_floordiv", "_tm_mod"):
            site = args[2].args[0]
            return ast.copy_location(_runtime("divide", [
                ast.Constant(name[4:]), site, self.visit(args[0]), self.visit(args[1]),
                _name("_tm_L")]), node)
        # _tm_<op><nd>_<role>, the op's own name possibly ending in "_" (atand_)
        op, nd = re.fullmatch(r"_tm_([a-z_]+?)(\d)_[a-z]+", name).groups()
        nd = int(nd)
        array = args[0]
        indices = [self.visit(a) for a in args[1:1 + nd]]
        count = 0 if op == "ld" else 2 if op == "atcas" else 1  # (cas: compared, new)
        values = [self.visit(a) for a in args[1 + nd:1 + nd + count]]
        value = ast.Constant(None) if not values else values[0] if count == 1 else \
            ast.Tuple(elts=values, ctx=ast.Load())
        at = 1 + nd + count
        slot, site = args[at].args[0], args[at + 1].args[0]
        target = array
        if isinstance(array, ast.Name) and array.id in self.local_arrays:
            target = _name(f"_tm_local_{array.id}")
        return ast.copy_location(_runtime("access", [
            ast.Constant(op), slot, site, target, _name("_tm_L"),
            ast.Tuple(elts=indices, ctx=ast.Load()), value]), node)


def _typed_constant(value):
    """A module constant as numba types it: a Python int is int64, a float float64."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, complex):
        return np.complex128(value)
    if isinstance(value, tuple):
        return tuple(_typed_constant(v) for v in value)
    return value


class _VectorWriter(OperationEmitter):
    def __init__(self, lowered: LoweredKernel):
        super().__init__()
        self.lowered = lowered
        self.plan = lowered.plan
        self.layout = lowered.layout()
        # The numbering both tiers share is the lowering's; the rewriters are
        # this emitter's own (they keep state as they go).
        self.access = lowered.access_rewriter("record")
        self.coordinates = lowered.coordinate_rewriter()
        self.constants: dict[str, object] = {}
        self.expressions = _VectorExpressions(self)
        self.lane_by_lane: list[int] = []

    def write(self) -> VectorCode:
        layout = self.layout
        params = list(self.plan.kernel.params) + [
            "_tm_r", "_tm_TX", "_tm_TY", "_tm_BX", "_tm_BY", "_tm_G", "_tm_n"] + list(_SCALARS)
        params += [a.param for a in layout.block_arrays]
        self.emit(0, f"def _tm_unit({', '.join(params)}):")
        self.emit(1, "_tm_M = [_tm_np.zeros(_tm_n, _tm_np.bool_) "
                     f"for _ in range({layout.depth})]")
        self.emit(1, "_tm_M[0][:] = True")
        self.emit(1, f"_tm_Cd = [_tm_np.zeros(_tm_n, _tm_np.bool_) for _ in range({layout.depth})]")
        self.emit(1, f"_tm_LP = [_tm_np.zeros(_tm_n, _tm_np.bool_) "
                     f"for _ in range({max(layout.loops, 1)})]")
        self.emit(1, f"_tm_I = _tm_np.zeros(({max(3 * layout.loops, 1)}, _tm_n), _tm_np.int64)")
        for dtype, rows in layout.rows:
            self.emit(1, f"_tm_V_{dtype} = _tm_np.zeros(({rows}, _tm_n), _tm_np.{dtype})")
        self._statements(self.lowered.operations, 0, [], 1)
        self.emit(1, "return")
        return VectorCode("\n".join(text for text, _ in self.lines) + "\n", layout, dict(self.constants),
                          tuple(self.lane_by_lane))

    # -- statements --------------------------------------------------------------------

    def _vector_lines(self, statements: list[ast.stmt]) -> list[str]:
        return self._unparsed(statements, self._lane_statement)

    def _lane_statement(self, stmt: ast.stmt) -> list[ast.stmt]:
        """``stmt`` over the lanes ``_tm_L``: a tuple variable assigned entry by
        entry; ``x op= v`` on a variable as ``x = x op v`` (numpy's in-place
        operators on a gathered copy would be lost)."""
        ex = self.expressions
        if isinstance(stmt, ast.AnnAssign):
            if stmt.value is None:
                return []
            stmt = ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)
        if isinstance(stmt, ast.AugAssign):
            if not isinstance(stmt.target, ast.Name):
                raise ex.fail(f"'{ast.unparse(stmt)}'", stmt)
            value = ast.BinOp(left=_name(stmt.target.id), op=stmt.op, right=stmt.value)
            stmt = ast.copy_location(ast.Assign(targets=[_name(stmt.target.id, ast.Store())],
                                                value=value), stmt)
        if isinstance(stmt, ast.Assign):
            variable = None
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                variable = self.lowered.variables.get(stmt.targets[0].id)
            if variable is not None and variable.width:
                out = [ast.Assign(targets=[_name("_tm_tuple", ast.Store())],
                                  value=ex.visit(stmt.value))]
                for i in range(variable.width):
                    out.append(ast.Assign(
                        targets=[ex._entry(variable, i, ast.Store())],
                        value=ast.Subscript(value=_name("_tm_tuple"), slice=ast.Constant(i),
                                            ctx=ast.Load())))
                return [ast.copy_location(s, stmt) for s in out]
            value = ex.visit(stmt.value)
            targets = [ex.visit(t) for t in stmt.targets]
            return [ast.copy_location(ast.Assign(targets=targets, value=value), stmt)]
        return [ex.visit(stmt)]

    def _rewritten(self, stmt: ast.stmt) -> tuple[list[str], list[int]]:
        statements = self.access.rewrite_body([copy.deepcopy(stmt)])
        sites = self.access.take_sites()
        return self._vector_lines(statements), sites

    def _expression(self, expr: ast.expr) -> tuple[str, list[int]]:
        rewritten = self.access.visit(copy.deepcopy(expr))
        rewritten = self.coordinates.visit(rewritten)
        rewritten = self.expressions.visit(rewritten)
        return ast.unparse(ast.fix_missing_locations(rewritten)), self.access.take_sites()

    def _one_lane_at_a_time(self, sites: list[int]) -> bool:
        """Whether a statement stores into an array it also accesses at another
        site (``C[i, j] += v``): then lanes must run it one after another."""
        arrays: dict[str, list[str]] = {}
        for number in sites:
            site = self.lowered.sites[number]
            arrays.setdefault(site.array, []).append(site.kind)
        return any(len(kinds) > 1 and any(k != "load" for k in kinds)
                   for kinds in arrays.values())

    def _lanes(self, indent: int, mask: str, lines: list[str], sites: list[int],
               line: int) -> None:
        """Run ``lines`` for the lanes of ``mask``, then measure their requests."""
        if self._one_lane_at_a_time(sites):
            self.lane_by_lane.append(line)
            self.emit(indent, f"for _tm_l in _tm_np.flatnonzero({mask}):")
            self.emit(indent + 1, "_tm_L = _tm_r.one_lane(_tm_l)")
            for text in lines:
                self.emit(indent + 1, text)
            self.emit(indent, "_tm_r.flush()")
            return
        self.emit(indent, f"_tm_L = _tm_np.flatnonzero({mask})")
        self.emit(indent, "if _tm_L.size:")
        for text in lines:
            self.emit(indent + 1, text)
        self.emit(indent + 1, "_tm_r.flush()")

    def _simple(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        lines, sites = self._rewritten(stmt)
        self._lanes(indent, f"_tm_M[{depth}]", lines, sites, stmt.lineno)

    def _if(self, op: Split, depth: int, loops, indent: int) -> None:
        stmt, site = op.stmt, op.site.site
        test, sites = self._expression(stmt.test)
        inner = depth + 1
        if self._one_lane_at_a_time(sites):
            raise self.expressions.fail("an 'if' whose test stores", stmt)
        self._lanes(indent, f"_tm_M[{depth}]", [f"_tm_c = _tm_r.truth({test}, _tm_L)"], sites,
                    stmt.lineno)
        self.emit(indent, f"_tm_L = _tm_np.flatnonzero(_tm_M[{depth}])")
        self.emit(indent, "if not _tm_L.size:")
        self.emit(indent + 1, "_tm_c = _tm_np.zeros(0, _tm_np.bool_)")
        self.emit(indent, f"_tm_r.branch({site}, _tm_L, _tm_c)")
        self.emit(indent, f"_tm_Cd[{depth}][:] = False")
        self.emit(indent, f"_tm_Cd[{depth}][_tm_L] = _tm_c")
        self.emit(indent, f"_tm_M[{inner}][:] = _tm_Cd[{depth}]")
        self.emit(indent, "if _tm_c.any():")
        self._statements(op.body, inner, loops, indent + 1)
        if op.orelse:
            self.emit(indent, f"if (_tm_M[{depth}] & ~_tm_Cd[{depth}]).any():")
            self.emit(indent + 1, f"_tm_M[{inner}][:] = _tm_M[{depth}] & ~_tm_Cd[{depth}]")
            self._statements(op.orelse, inner, loops, indent + 1)

    def _for(self, op: ForRange, depth: int, loops, indent: int) -> None:
        stmt, loop = op.stmt, op.loop
        k, site, variable = loop.number, loop.site, loop.variable
        start, stop, step, literal_step = loop.start, loop.stop, loop.step, loop.literal_step
        inner = depth + 1
        cur, end, inc = (f"_tm_I[{3 * k + i}]" for i in range(3))
        texts, sites = [], []
        for value in (start, stop, step):
            text, touched = self._expression(value)
            texts.append(text)
            sites += touched
        self.emit(indent, f"_tm_LP[{k}][:] = _tm_M[{depth}]")
        init = [f"{cur}[_tm_L] = {texts[0]}", f"{end}[_tm_L] = {texts[1]}"]
        if literal_step is None:
            init.append(f"{inc}[_tm_L] = {texts[2]}")
        self._lanes(indent, f"_tm_M[{depth}]", init, sites, stmt.lineno)
        # (its trip count, for the projection that hands a kernel doing far
        # more work than a matmul over to the compiled tier at once)
        parent = loops[-1][0] if loops else -1
        step_text = inc if literal_step is None else str(literal_step)
        self.emit(indent, f"_tm_r.loop_entered({k}, {parent}, {cur}, {end}, {step_text}, "
                          f"_tm_M[{depth}])")
        self.emit(indent, "while True:")
        i = indent + 1
        self.emit(i, "_tm_r.tick()")
        self.emit(i, f"_tm_L = _tm_np.flatnonzero(_tm_LP[{k}])")
        self.emit(i, f"_tm_cur = {cur}[_tm_L]")
        self.emit(i, f"_tm_end = {end}[_tm_L]")
        if literal_step is None:
            self.emit(i, f"_tm_inc = {inc}[_tm_L]")
            self.emit(i, "_tm_c = ((_tm_inc > 0) & (_tm_cur < _tm_end)) | "
                         "((_tm_inc < 0) & (_tm_cur > _tm_end))")
            advance = "_tm_cur + _tm_inc"
        else:
            self.emit(i, f"_tm_c = _tm_cur {'<' if literal_step > 0 else '>'} _tm_end")
            advance = f"_tm_cur + {literal_step}" if literal_step else "_tm_end"
        self.emit(i, f"_tm_r.branch({site}, _tm_L, _tm_c)")
        self.emit(i, "_tm_on = _tm_L[_tm_c]")
        self.emit(i, f"_tm_M[{inner}][:] = False")
        self.emit(i, f"_tm_M[{inner}][_tm_on] = True")
        self.emit(i, f"_tm_LP[{k}][_tm_L[~_tm_c]] = False")
        self.emit(i, "if not _tm_on.size:")
        self.emit(i + 1, "break")
        self.emit(i, f"_tm_V_{variable.dtype}[{variable.row}, _tm_on] = _tm_cur[_tm_c]")
        self.emit(i, f"{cur}[_tm_on] = ({advance})[_tm_c]")
        self._statements(op.body, inner, loops + [(k, inner)], i)

    def _while(self, op: WhileLoop, depth: int, loops, indent: int) -> None:
        stmt, k, site = op.stmt, op.number, op.site
        inner = depth + 1
        test, sites = self._expression(stmt.test)
        if self._one_lane_at_a_time(sites):
            raise self.expressions.fail("a 'while' whose test stores", stmt)
        self.emit(indent, f"_tm_LP[{k}][:] = _tm_M[{depth}]")
        self.emit(indent, "while True:")
        i = indent + 1
        self.emit(i, "_tm_r.tick()")
        self.emit(i, f"_tm_L = _tm_np.flatnonzero(_tm_LP[{k}])")
        self.emit(i, "_tm_c = _tm_np.zeros(0, _tm_np.bool_)")
        self.emit(i, "if _tm_L.size:")
        self.emit(i + 1, f"_tm_c = _tm_r.truth({test}, _tm_L)")
        self.emit(i + 1, "_tm_r.flush()")
        self.emit(i, f"_tm_r.branch({site}, _tm_L, _tm_c)")
        self.emit(i, f"_tm_M[{inner}][:] = False")
        self.emit(i, f"_tm_M[{inner}][_tm_L[_tm_c]] = True")
        self.emit(i, f"_tm_LP[{k}][_tm_L[~_tm_c]] = False")
        self.emit(i, "if not _tm_c.any():")
        self.emit(i + 1, "break")
        self._statements(op.body, inner, loops + [(k, inner)], i)

    def _retire(self, indent: int, depths, loop_numbers) -> None:
        for d in depths:
            self.emit(indent, f"_tm_M[{d}][_tm_sel] = False")
        for k in loop_numbers:
            self.emit(indent, f"_tm_LP[{k}][_tm_sel] = False")

    def _return(self, op: Exit, depth: int, loops, indent: int) -> None:
        self.emit(indent, f"_tm_sel = _tm_M[{depth}].copy()")
        self.emit(indent, f"_tm_r.branch_masks({op.site}, _tm_M[0], _tm_sel, returning=True)")
        self._retire(indent, range(depth + 1), [k for k, _ in loops])

    def _leave(self, op: Leave, depth: int, loops, indent: int) -> None:
        k, body_depth = loops[-1]
        self.emit(indent, f"_tm_sel = _tm_M[{depth}].copy()")
        self._retire(indent, range(body_depth, depth + 1), [k] if op.broke else [])

    _CONTROL = {Split: _if, ForRange: _for, WhileLoop: _while, Exit: _return, Leave: _leave}

    def _warp(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        """A placed warp operation: the runtime exchanges the lanes' arguments
        (lane vectors, every lane's computed before) warp by warp."""
        what = placed_operation(stmt, self.lowered.aliases)

        def row(name: str) -> str:
            variable = self.lowered.variables[name]
            return f"_tm_V_{variable.dtype}[{variable.row}]"

        args = "".join(f"{row(a.id)}, " for a in stmt.value.args)
        out = row(stmt.targets[0].id) if what != "syncwarp" else "None"
        self.emit(indent, f"_tm_r.warp_op({what!r}, {stmt.lineno}, _tm_M[{depth}], _tm_M[0], "
                          f"{out}, ({args}))")

    def _barrier(self, op: Barrier, depth: int, indent: int) -> None:
        stmt, what, site = op.stmt, op.what, op.site
        if site is None:
            return  # a fence
        if what in VALUE_BARRIERS:
            predicate, sites = self._expression(stmt.value.args[0])
            if self._one_lane_at_a_time(sites):
                raise self.expressions.fail("a barrier whose predicate stores", stmt)
            self.emit(indent, "_tm_cnt = 0")
            self._lanes(indent, f"_tm_M[{depth}]",
                        [f"_tm_cnt = int(_tm_r.truth({predicate}, _tm_L).sum())"], sites,
                        stmt.lineno)
        self.emit(indent, f"_tm_na = _tm_r.barrier({site}, _tm_M[{depth}])")
        if what in VALUE_BARRIERS:
            value = {"syncthreads_count": "_tm_cnt",
                     "syncthreads_and": "1 if _tm_cnt == _tm_na else 0",
                     "syncthreads_or": "1 if _tm_cnt > 0 else 0"}[what]
            variable = self.lowered.variables[stmt.targets[0].id]
            self.emit(indent, f"_tm_V_{variable.dtype}[{variable.row}, _tm_M[{depth}]] = "
                              f"_tm_np.int32({value})")

