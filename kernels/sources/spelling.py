"""Spellings of real kernels, read as the canonical form numba gives them.

Students write what numba-cuda compiles, not what ThreadMap's own kernels
spell (issue 43): ``len(A)`` for ``A.shape[0]``, ``A.T[k][j]`` for
``A[j, k]``, a ``raise`` left at the end of a kernel.  Refusing them turned
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
    bound = {n.id for stmt in node.body for n in ast.walk(stmt)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    rewriter = _Rewriter(params - bound)
    rewritten = rewriter.visit(copy.deepcopy(node))
    if not rewriter.changed:
        return node, ()
    ast.fix_missing_locations(rewritten)
    return rewritten, tuple(rewriter.notes)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, arrays: set[str]):
        #: parameters never bound again in the kernel: what they name is known
        self.arrays = arrays
        self.changed = False
        self.notes: list[tuple[int, str]] = []

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        # numba-cuda compiled without debug=True: the exception is not
        # reported, and the thread ends there, as a return ends it.
        self.changed = True
        self.notes.append((node.lineno, "'raise' ends the thread, as numba-cuda compiles it "
                                        "without debug=True (no error is reported): ThreadMap "
                                        "runs it as a return"))
        return ast.copy_location(ast.Return(value=None), node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "len" \
                and len(node.args) == 1 and not node.keywords:
            array, indices = _chain(node.args[0])
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
        array, indices = _chain(node)
        if any(isinstance(i, ast.Slice) for i in indices) or not indices:
            self.generic_visit(node)
            return node
        transposed = isinstance(array, ast.Attribute) and array.attr == "T" \
            and isinstance(array.value, ast.Name) and array.value.id in self.arrays
        plain = isinstance(array, ast.Name) and array.id in self.arrays
        chained = isinstance(node.value, ast.Subscript)
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
