"""Warp divergence: how many lanes of each warp take each branch.

A branch site is an ``if``, a loop's test (each time the warp evaluates it) or
a ``return``.  Each time a warp with active lanes reaches it is an
evaluation; the lanes that go on into the ``if``'s body, stay in the loop, or
return are the lanes that branch.  When some, but not all, of the warp's
active lanes branch, the warp has diverged: it runs both paths one after the
other with part of its lanes idle.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..derived.lowering import BranchSite
from .coalescing import per_warp_means


@dataclass(frozen=True, eq=False)
class BranchDivergence:
    """Active lanes per warp at one branch site."""

    branch: BranchSite
    #: warp evaluations (a warp with at least one active lane there)
    evaluations: int
    #: warp executions of the branch's body (at least one lane took it)
    requests: int
    mean_active_lanes: float
    min_active_lanes: int
    #: evaluations where some active lanes branched and some did not
    divergent: int
    #: (blocks, warps per block): mean lanes of each warp that took the branch;
    #: NaN where it never did
    per_warp: np.ndarray

    def summary(self) -> dict:
        return {"site": self.branch.site, "line": self.branch.line, "kind": self.branch.kind,
                "text": self.branch.text, "evaluations": self.evaluations,
                "requests": self.requests, "mean_active_lanes": self.mean_active_lanes,
                "min_active_lanes": self.min_active_lanes, "divergent": self.divergent}


def divergence(br: np.ndarray, brw: np.ndarray, branches: tuple[BranchSite, ...],
               blocks: int) -> tuple[BranchDivergence, ...]:
    """Figures of every branch site from the lockstep records (``_tm_br``,
    ``_tm_brw``, see records.py)."""
    out = []
    for branch in branches:
        evaluations, requests, lanes, fewest, divergent = (int(v) for v in br[branch.site])
        out.append(BranchDivergence(
            branch=branch, evaluations=evaluations, requests=requests,
            mean_active_lanes=lanes / requests if requests else 0.0,
            min_active_lanes=fewest if requests else 0, divergent=divergent,
            per_warp=per_warp_means(brw[branch.site, :, 0], brw[branch.site, :, 1], blocks)))
    return tuple(out)
