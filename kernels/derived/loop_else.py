"""``for ... else`` and ``while ... else``, written with what the emulation has.

A loop's ``else`` runs when the loop ends by its own test, not by a
``break``.  Per lane that is one flag, so the lowering rewrites::

    for k in range(n):          _tm_broke0 = False
        if A[k] < 0:            for k in range(n):
            break        ->         if A[k] < 0:
    else:                               _tm_broke0 = True
        C[i] = 1.0                      break
                                if not _tm_broke0:      # "else of the loop at line 1"
                                    C[i] = 1.0

Every new statement keeps the line of the statement it comes from, so an
access or a branch in the ``else`` is filed under its own line; the ``if`` is
a branch site of its own, named for the loop (:func:`else_of`).  A lane that
leaves the kernel by ``return`` inside the loop runs neither, as in Python.
Inner loops are rewritten first, so a ``break`` in an inner loop's ``else``
is the outer loop's, as it is in Python.  The compiled and the instant tier
then run the rewritten body: the construct costs neither emitter a line.
"""
from __future__ import annotations

import ast
import itertools

#: The attribute the rewritten ``if`` carries: the loop's line.
_ELSE_OF = "_tm_else_of"


def without_loop_else(body: list[ast.stmt]) -> list[ast.stmt]:
    """``body`` (already a copy: it is rewritten in place) with every loop's
    ``else`` made into a flag and an ``if``."""
    return _rewritten(body, itertools.count())


def has_loop_else(body: list[ast.stmt]) -> bool:
    return any(isinstance(n, (ast.For, ast.While)) and n.orelse
               for stmt in body for n in ast.walk(stmt))


def else_of(stmt: ast.stmt) -> int | None:
    """The line of the loop whose ``else`` ``stmt`` runs, or None."""
    return getattr(stmt, _ELSE_OF, None)


def _rewritten(body: list[ast.stmt], flags) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, (ast.If, ast.For, ast.While)):  # (the statements with bodies)
            stmt.body = _rewritten(stmt.body, flags)  # inner loops first
            stmt.orelse = _rewritten(stmt.orelse, flags)
        if not isinstance(stmt, (ast.For, ast.While)) or not stmt.orelse:
            out.append(stmt)
            continue
        flag = f"_tm_broke{next(flags)}"
        orelse, stmt.orelse = stmt.orelse, []
        stmt.body = _flag_breaks(stmt.body, flag)
        start = ast.copy_location(ast.Assign(targets=[ast.Name(flag, ast.Store())],
                                             value=ast.Constant(False)), stmt)
        test = ast.UnaryOp(op=ast.Not(), operand=ast.Name(flag, ast.Load()))
        after = ast.copy_location(ast.If(test=test, body=orelse, orelse=[]), orelse[0])
        setattr(after, _ELSE_OF, stmt.lineno)
        out += [ast.fix_missing_locations(start), stmt, ast.fix_missing_locations(after)]
    return out


def _flag_breaks(body: list[ast.stmt], flag: str) -> list[ast.stmt]:
    """``body`` with each ``break`` of its loop (not of a loop inside it, which
    has its own) setting ``flag`` first."""
    out: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.Break):
            out.append(ast.fix_missing_locations(ast.copy_location(
                ast.Assign(targets=[ast.Name(flag, ast.Store())], value=ast.Constant(True)),
                stmt)))
        elif isinstance(stmt, ast.If):
            stmt.body = _flag_breaks(stmt.body, flag)
            stmt.orelse = _flag_breaks(stmt.orelse, flag)
        out.append(stmt)
    return out
