"""The declarative shape of a rule: its contract text, its examples and one small check.

A rule never walks the syntax tree for what the analysis already knows: its `check` reads the
events of an analysed `Program` and says which of them is a bug, and how to say so.
"""

from __future__ import annotations

import enum
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from devlint.findings import Confidence, Fix, Severity

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Context, Node
    from devlint.analysis.program import Program


class FixSafety(str, enum.Enum):
    NONE = "none"
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True)
class Step:
    """One step of a finding's story, as a rule tells it: a node the analysis recorded (an
    origin, a move, a site, the meeting) and a short sentence about it. The engine turns it into
    an `Evidence` (path, line, column) only when the finding is made; a step without a node is
    left out."""

    node: object
    message: str


@dataclass
class Report:
    """What a check yields: the node to point at and what to say."""

    node: "Node"  # the syntax node the analysis recorded (rules never look inside it)
    message: str
    confidence: Confidence = Confidence.DEFINITE
    fix: "Fix | None" = None  # attached by rules that can fix
    ctx: "Context | None" = None  # the analysis Context of the event (phase, statement)
    evidence: tuple[Step, ...] = ()  # the steps that lead to the finding, in order (rules/_evidence.py)


CheckFn = Callable[["Program"], Iterable[Report]]


@dataclass
class Rule:
    code: str
    name: str
    severity: Severity
    summary: str
    why: str
    bad: str
    good: str
    fix: FixSafety = FixSafety.NONE
    default_enabled: bool = True
    limits: str = ""
    # one finding per line, however often the analysis meets it (loops, several operands);
    # False where each report is a statement of its own (`x.to(d); y.to(d)` is two bugs)
    one_per_line: bool = True
    checks: list[CheckFn] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.why = textwrap.dedent(self.why).strip()
        self.bad = textwrap.dedent(self.bad).strip("\n")
        self.good = textwrap.dedent(self.good).strip("\n")
        self.limits = textwrap.dedent(self.limits).strip()

    def check(self, fn: CheckFn) -> CheckFn:
        """Decorator: register `fn` as (one of) this rule's checks."""
        self.checks.append(fn)
        return fn

    def run(self, program: "Program") -> Iterator[Report]:
        for check in self.checks:
            yield from check(program)
