"""The plain data that flows from the analysis to suppression, ranking and reporters.

Kept free of libcst and rich so that reporters, the cache and worker processes can pass
findings around cheaply (they pickle and serialise to JSON without help).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def order(self) -> int:
        """Lower is more urgent."""
        return {"error": 0, "warning": 1, "info": 2}[self.value]

    def at_least(self, threshold: "Severity") -> bool:
        return self.order <= threshold.order


class Confidence(str, enum.Enum):
    DEFINITE = "definite"
    LIKELY = "likely"


class Phase(str, enum.Enum):
    """When, in a run, the crash would happen. Later phases waste more hours."""

    MODULE = "module"  # at import / module level, before training
    TRAINING = "training"  # the first training step
    EVALUATION = "evaluation"  # after the first epoch, in validation / evaluation
    CHECKPOINT = "checkpoint"  # when a checkpoint is saved or reloaded
    INFERENCE = "inference"  # in inference / prediction code
    UNKNOWN = "unknown"

    @property
    def cost(self) -> int:
        """Higher means the crash wastes more time before it shows."""
        return {
            "evaluation": 4,
            "checkpoint": 4,
            "inference": 3,
            "training": 1,
            "module": 0,
            "unknown": 0,
        }[self.value]


@dataclass(frozen=True)
class Fix:
    """A replacement of a source span, computed by a rule, applied by the fixer."""

    description: str
    safe: bool
    # (line, col, end_line, end_col) 1-based, end exclusive column, plus replacement text
    edits: tuple[tuple[int, int, int, int, str], ...] = ()


@dataclass(frozen=True)
class Evidence:
    """One step of the story a finding tells, from the analysis itself: where the host value
    came from, which branch or call it took, where the other side was moved, where they meet.
    `line` and `column` are 1-based; `cell` is set (and `line` counted inside it) for notebooks."""

    path: str
    line: int
    column: int
    message: str
    cell: int | None = None


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    confidence: Confidence = Confidence.DEFINITE
    phase: Phase = Phase.UNKNOWN
    cell: int | None = None
    fix: Fix | None = None
    # lines of the whole statement that holds the finding, for suppression comments
    statement_lines: tuple[int, int] | None = None
    # enclosing function / class and normalised statement source, for baselines
    context: str = ""
    snippet: str = ""
    rank: int = 0
    # the steps that lead to the finding, in order (the host side, the device side, the meeting)
    evidence: tuple[Evidence, ...] = ()
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def with_(self, **changes) -> "Finding":
        return replace(self, **changes)


def make_finding(code: str, name: str, severity: Severity, path: str, span: tuple[int, int, int, int],
                 message: str, **details: object) -> Finding:
    """The one way a finding is made (by a rule's report, a parse error or a simulated crash):
    `span` is (line, column, end line, end column); `statement_lines` defaults to the span's lines."""
    line, column, end_line, end_column = span
    details.setdefault("statement_lines", (line, end_line))
    return Finding(code=code, name=name, severity=severity, path=path, line=line, column=column,
                   end_line=end_line, end_column=end_column, message=message, **details)  # type: ignore[arg-type]
