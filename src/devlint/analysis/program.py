"""An analysed program: the events of one file, and the means to turn a report into a Finding.

Positions are resolved only when a rule reports something, because libcst's position
metadata costs as much as a second parse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.analysis.events import Context, Event, HostUse, Made, Meet, Move
from devlint.findings import Finding, Phase

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.interp import Interpreter
    from devlint.rules.base import Report, Rule

E = TypeVar("E", bound=Event)



@dataclass
class Program:
    path: str
    module: cst.Module
    interpreter: "Interpreter"
    events: list[Event] = field(default_factory=list)
    _positions: object | None = None
    _phases: object | None = None

    # --- what rules read ---------------------------------------------------------------
    def of(self, kind: type[E]) -> Iterator[E]:
        for event in self.events:
            if isinstance(event, kind):
                yield event

    @property
    def meets(self) -> Iterator[Meet]:
        return self.of(Meet)

    @property
    def moves(self) -> Iterator[Move]:
        return self.of(Move)

    @property
    def host_uses(self) -> Iterator[HostUse]:
        return self.of(HostUse)

    def made(self, what: str) -> Iterator[Made]:
        return (e for e in self.of(Made) if e.what == what)

    @property
    def device_in_play(self) -> bool:
        return self.interpreter.device_in_play

    # --- positions ---------------------------------------------------------------------
    def position(self, node: cst.CSTNode) -> tuple[int, int, int, int]:
        return self.locate(node)[1]

    def locate(self, node: cst.CSTNode) -> tuple[str, tuple[int, int, int, int]]:
        """The file a node is in (this one, or a project file reached from it) and its span."""
        if self._positions is None:
            self._positions = {self.path: self._resolve(self.module)}
        for path, positions in self._positions.items():  # type: ignore[union-attr]
            rng = positions.get(node)
            if rng is not None:
                return path, (rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)
        for path, unit in self.interpreter.units.items():
            if path in self._positions:  # type: ignore[operator]
                continue
            positions = self._resolve(unit.module)
            self._positions[path] = positions  # type: ignore[index]
            rng = positions.get(node)
            if rng is not None:
                return path, (rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1)
        return self.path, (1, 1, 1, 1)

    @staticmethod
    def _resolve(module: cst.Module):
        # PositionProvider is one code generation that records spans. Through MetadataWrapper
        # it also costs a visit of the whole tree for batchable providers (there are none),
        # which doubles the time; run the provider on the module directly when it allows.
        provider = PositionProvider()
        generate = getattr(provider, "_gen_impl", None)
        computed = getattr(provider, "_computed", None)
        if generate is None or not isinstance(computed, dict):
            return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        generate(module)
        return computed

    # --- phases ------------------------------------------------------------------------
    def phase(self, ctx: Context) -> Phase:
        """When the crash would happen, from where the event sits in the program
        (analysis/phases.py); the syntax is read once, on the first call."""
        if self._phases is None:
            from devlint.analysis.phases import PhaseOracle

            modules = [self.module] + [u.module for u in self.interpreter.units.values() if u.module is not self.module]
            self._phases = PhaseOracle(modules, self.module)
        return self._phases.phase(ctx)  # type: ignore[attr-defined]

    # --- findings ----------------------------------------------------------------------
    def finding(self, rule: "Rule", report: "Report", ctx: Context | None) -> Finding:
        path, (line, col, end_line, end_col) = self.locate(report.node)
        statement_lines = None
        stmt = ctx.statement if ctx is not None else None
        if isinstance(stmt, cst.SimpleStatementLine):
            s_path, (s_line, _, s_end, _) = self.locate(stmt)
            if s_path == path and s_line <= line <= s_end:
                statement_lines = (s_line, s_end)
        if statement_lines is None:
            statement_lines = (line, end_line)
        phase = self.phase(ctx) if ctx is not None else Phase.UNKNOWN
        from devlint.findings import Confidence

        return Finding(
            code=rule.code,
            name=rule.name,
            severity=rule.severity,
            path=path,
            line=line,
            column=col,
            end_line=end_line,
            end_column=end_col,
            message=report.message,
            confidence=report.confidence if isinstance(report.confidence, Confidence) else Confidence.DEFINITE,
            phase=phase,
            statement_lines=statement_lines,
            context=ctx.function if ctx is not None else "",
            fix=report.fix if report.fix is not None else None,
        )
