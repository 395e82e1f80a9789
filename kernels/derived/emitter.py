"""What the two tiers' emitters share: lines of code at an indent, each with
the kernel line it came from, and the walk over the lowering's operations.

Each emitter (``lockstep._Writer``, numba; ``vector._VectorWriter``, numpy)
says in its ``_CONTROL`` table which of its methods emits each control
operation, and writes ``_simple``, ``_barrier`` and ``_warp``; the order the
operations are met in, and the first refusal raised, are this walk's, the
same for both tiers.
"""
from __future__ import annotations

import ast
import copy
from collections.abc import Callable

from .lowering import Barrier, Operation, Refused, Simple, Skip, WarpExchange


class OperationEmitter:
    #: the emitting method of each control operation's type
    _CONTROL: dict[type, Callable] = {}

    def __init__(self) -> None:
        #: (text, the kernel's line it came from, or None)
        self.lines: list[tuple[str, int | None]] = []

    def emit(self, indent: int, text: str, line: int | None = None) -> None:
        for part in text.split("\n"):
            self.lines.append(("    " * indent + part, line))

    def _statements(self, body: tuple[Operation, ...], depth: int, loops, indent: int) -> None:
        start = len(self.lines)
        for op in body:
            self._statement(op, depth, loops, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass")

    def _statement(self, op: Operation, depth: int, loops, indent: int) -> None:
        if isinstance(op, Refused):
            raise copy.copy(op.error)  # (a copy: the lowering keeps its own for the other tier)
        if isinstance(op, Barrier):
            self._barrier(op, depth, indent)
        elif isinstance(op, WarpExchange):
            self._warp(op.stmt, depth, indent)
        elif isinstance(op, Simple):
            self._simple(op.stmt, depth, indent)
        elif not isinstance(op, Skip):
            self._CONTROL[type(op)](self, op, depth, loops, indent)

    def _unparsed(self, statements: list[ast.stmt],
                  lower: Callable[[ast.stmt], list[ast.stmt]]) -> list[str]:
        """Kernel statements as this emitter's lines: their coordinates
        rewritten, then each lowered by ``lower`` and unparsed."""
        out = []
        for stmt in statements:
            stmt = self.coordinates.visit(stmt)
            for lowered in lower(stmt):
                out.extend(ast.unparse(ast.fix_missing_locations(lowered)).split("\n"))
        return out

    def _simple(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        raise NotImplementedError

    def _barrier(self, op: Barrier, depth: int, indent: int) -> None:
        raise NotImplementedError

    def _warp(self, stmt: ast.stmt, depth: int, indent: int) -> None:
        raise NotImplementedError
