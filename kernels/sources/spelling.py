"""Spellings of real kernels, read as the canonical form numba gives them.

Students write what numba-cuda compiles, not what ThreadMap's own kernels
spell (issue 43): ``len(A)`` for ``A.shape[0]``, ``A.T[k][j]`` for
``A[j, k]``, ``row = A[i]`` then ``row[k]``, a ``raise`` left at the end of
a kernel.  Refusing them turned
away kernels that run on a GPU.  Each is rewritten here, once, before the
kernel is planned, so the planner, the rules and every derived form read one
form; where the meaning is numba's rather than Python's, the plan keeps a
note that the result shows (:func:`normalise_spelling`).

Only a kernel's own array parameters are rewritten (never a name it binds
again: ``A = B`` would change what ``A`` is), and nothing is rewritten whose
meaning would change: a slice inside a chain is left as written.
"""
from __future__ import annotations

import ast
import copy


def normalise_spelling(node: ast.FunctionDef) -> tuple[ast.FunctionDef, tuple[tuple[int, str], ...]]:
    """``node`` with the spellings above in canonical form, and (line, note)
    for each rewrite whose meaning is numba's, not Python's.  ``node`` itself
    is returned, unchanged, when nothing is rewritten."""
    params = {a.arg for a in node.args.args}
    stores: dict[str, int] = {}
    for n in (n for stmt in node.body for n in ast.walk(stmt)):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, (ast.For, ast.AugAssign)) and isinstance(n.target, ast.Name):
            stores[n.target.id] = stores.get(n.target.id, 0) + 1  # (counted twice: never once)
    arrays = params - set(stores)
    copied = copy.deepcopy(node)
    views = _row_views(copied, arrays, stores)
    rewriter = _Rewriter(arrays, views)
    rewritten = rewriter.visit(copied)
    if not rewriter.changed:
        return node, ()
    ast.fix_missing_locations(rewritten)
    return rewritten, tuple(rewriter.notes)


def _row_views(node: ast.FunctionDef, arrays: set[str],
               stores: dict[str, int]) -> dict[str, ast.Subscript]:
    """``row = A[i]`` (then ``row[k]``, ``row.shape[0]``, ``len(row)``): each
    such name, bound once to a part of an array whose index names are bound
    at most once (so the part it names cannot change under it), and used only
    so; its binding is dropped from ``node`` and its uses become ``A[i, k]``,
    ``A.shape[1]`` and ``A.shape[1]``."""
    loads: dict[str, list[ast.AST]] = {}
    parents: dict[int, ast.AST] = {}
    for stmt in node.body:
        for parent in ast.walk(stmt):
            for child in ast.iter_child_nodes(parent):
                parents[id(child)] = parent
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                    loads.setdefault(child.id, []).append(child)
    views: dict[str, ast.Subscript] = {}
    bindings: list[ast.Assign] = []
    for assign in (n for stmt in node.body for n in ast.walk(stmt)):
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0], ast.Name)
                and stores.get(assign.targets[0].id) == 1
                and isinstance(assign.value, ast.Subscript)):
            continue
        array, indices = _chain(assign.value)
        if not (isinstance(array, ast.Name) and array.id in arrays and indices
                and not any(isinstance(i, ast.Slice) for i in indices)
                and all(stores.get(n.id, 0) <= 1 for i in indices for n in ast.walk(i)
                        if isinstance(n, ast.Name))):
            continue
        name = assign.targets[0].id
        if all(_view_use(use, parents) for use in loads.get(name, ())):
            views[name] = assign.value
            bindings.append(assign)
    for assign in bindings:
        parent = parents.get(id(assign), node)
        for field in ("body", "orelse"):
            statements = getattr(parent, field, None)
            if isinstance(statements, list) and assign in statements:
                index = statements.index(assign)
                statements[index] = ast.copy_location(ast.Pass(), assign)
    return views


def _view_use(use: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Whether a load of a row view is one :func:`_row_views` rewrites:
    indexed without a slice, its ``.shape[d]``, or ``len()`` of it."""
    parent = parents.get(id(use))
    if isinstance(parent, ast.Subscript) and parent.value is use:
        return not isinstance(parent.slice, ast.Slice) and not (
            isinstance(parent.slice, ast.Tuple)
            and any(isinstance(e, ast.Slice) for e in parent.slice.elts))
    if isinstance(parent, ast.Attribute) and parent.attr == "shape":
        outer = parents.get(id(parent))
        return isinstance(outer, ast.Subscript) and isinstance(outer.slice, ast.Constant) \
            and isinstance(outer.slice.value, int)
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
        and parent.func.id == "len" and parent.args == [use]


class _Rewriter(ast.NodeTransformer):
    def __init__(self, arrays: set[str], views: dict[str, ast.Subscript] | None = None):
        #: parameters never bound again in the kernel: what they name is known
        self.arrays = arrays
        #: row views (``row = A[i]``) and the part of an array each names
        self.views = views or {}
        self.changed = bool(self.views)
        self.notes: list[tuple[int, str]] = []

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        # numba-cuda compiled without debug=True: the exception is not
        # reported, and the thread ends there, as a return ends it.
        self.changed = True
        self.notes.append((node.lineno, "'raise' ends the thread, as numba-cuda compiles it "
                                        "without debug=True (no error is reported): ThreadMap "
                                        "runs it as a return"))
        return ast.copy_location(ast.Return(value=None), node)

    def _viewed(self, array: ast.expr, indices: list[ast.expr]):
        """A row view's array and its whole index (``row[k]``, ``row = A[i]``:
        ``A`` and ``[i, k]``), or the chain as it was."""
        if isinstance(array, ast.Name) and array.id in self.views:
            root, first = _chain(self.views[array.id])
            return root, [copy.deepcopy(i) for i in first] + indices
        return array, indices

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "len" \
                and len(node.args) == 1 and not node.keywords:
            array, indices = self._viewed(*_chain(node.args[0]))
            if isinstance(array, ast.Name) and array.id in self.arrays \
                    and not any(isinstance(i, ast.Slice) for i in indices):
                # len(A) is A.shape[0]; len(A[i]) is A.shape[1] (a row's length)
                self.changed = True
                shape = ast.Attribute(value=ast.Name(id=array.id, ctx=ast.Load()),
                                      attr="shape", ctx=ast.Load())
                return ast.copy_location(
                    ast.Subscript(value=shape, slice=ast.Constant(value=len(indices)),
                                  ctx=ast.Load()), node)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        shape_of = node.value
        if isinstance(shape_of, ast.Attribute) and shape_of.attr == "shape" \
                and isinstance(shape_of.value, ast.Name) and shape_of.value.id in self.views \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            # row.shape[d], row = A[i]: A.shape[d + 1]
            root, first = _chain(self.views[shape_of.value.id])
            return ast.copy_location(ast.Subscript(
                value=ast.Attribute(value=ast.Name(id=root.id, ctx=ast.Load()), attr="shape",
                                    ctx=ast.Load()),
                slice=ast.Constant(value=node.slice.value + len(first)), ctx=ast.Load()), node)
        array, indices = _chain(node)
        if any(isinstance(i, ast.Slice) for i in indices) or not indices:
            self.generic_visit(node)
            return node
        viewed = isinstance(array, ast.Name) and array.id in self.views
        array, indices = self._viewed(array, indices)
        transposed = isinstance(array, ast.Attribute) and array.attr == "T" \
            and isinstance(array.value, ast.Name) and array.value.id in self.arrays
        plain = isinstance(array, ast.Name) and array.id in self.arrays
        chained = isinstance(node.value, ast.Subscript) or viewed
        if not (transposed or (plain and chained)):
            self.generic_visit(node)
            return node
        indices = [self.visit(index) for index in indices]
        if transposed:
            if len(indices) != 2:
                self.generic_visit(node)
                return node
            indices = indices[::-1]  # (A.T[k, j] is A[j, k])
            array = array.value
        # A[i][k] is A[i, k]: one access, as numba makes it
        self.changed = True
        index = indices[0] if len(indices) == 1 else ast.Tuple(elts=indices, ctx=ast.Load())
        return ast.copy_location(
            ast.Subscript(value=ast.Name(id=array.id, ctx=ast.Load()), slice=index,
                          ctx=node.ctx), node)


def _chain(node: ast.expr) -> tuple[ast.expr, list[ast.expr]]:
    """``X[i][j]`` and ``X[i, j]`` as ``(X, [i, j])``."""
    indices: list[list[ast.expr]] = []
    while isinstance(node, ast.Subscript):
        index = node.slice
        indices.append(list(index.elts) if isinstance(index, ast.Tuple) else [index])
        node = node.value
    return node, [i for part in reversed(indices) for i in part]
