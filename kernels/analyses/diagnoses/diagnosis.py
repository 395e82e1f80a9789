"""One diagnosis: the cause of a failure, at its line(s)."""
from __future__ import annotations

from dataclasses import dataclass


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

    @property
    def line_list(self) -> str:
        """``"14, 19"``: its lines, as every view writes them."""
        return ", ".join(map(str, self.lines))

    def as_dict(self) -> dict:
        return {"rule": self.rule, "lines": list(self.lines), "message": self.message,
                "evidence": self.evidence, "fix": self.fix}

    def describe(self) -> str:
        """The whole diagnosis in three lines (the command's summary)."""
        where = "line" if len(self.lines) == 1 else "lines"
        return (f"{where} {self.line_list}: {self.message}\n"
                f"  evidence: {self.evidence}\n  fix: {self.fix}")
