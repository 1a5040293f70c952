"""An analysed program: plain data that rules read (the events of one file, what the analysis
concluded about the program as a whole) and the means to place a report in the source.

Positions are resolved only when a rule reports something, because libcst's position
metadata costs as much as a second parse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, TypeVar

from devlint.analysis.events import Context, DeviceMeet, Event, HostUse, Meet, Move, Site, SiteKind
from devlint.findings import Phase

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from devlint.analysis.positions import Span
    from devlint.analysis.values import Placement

E = TypeVar("E", bound=Event)


@dataclass
class Program:
    path: str
    module: "cst.Module"
    events: list[Event] = field(default_factory=list)
    # the other project files the analysis read, by the path findings name them with
    reached: dict[str, "cst.Module"] = field(default_factory=dict)
    # normalised `if` tests computed from torch.cuda.is_available() (devices.effective reads them)
    availability_conditions: frozenset[str] = frozenset()
    # the checked file's text (what `module` was parsed from): repairs read its names
    source: str | None = field(default=None, repr=False)
    _positions: dict | None = field(default=None, repr=False)
    _phases: object | None = field(default=None, repr=False)

    # --- what rules read ---------------------------------------------------------------
    def of(self, kind: type[E]) -> Iterator[E]:
        for event in self.events:
            if isinstance(event, kind):
                yield event

    @property
    def meets(self) -> Iterator[Meet]:
        return self.of(Meet)

    @property
    def device_meets(self) -> Iterator[DeviceMeet]:
        return self.of(DeviceMeet)

    @property
    def moves(self) -> Iterator[Move]:
        return self.of(Move)

    @property
    def host_uses(self) -> Iterator[HostUse]:
        return self.of(HostUse)

    def sites(self, kind: SiteKind) -> Iterator[Site]:
        return (e for e in self.of(Site) if e.kind is kind)

    def has_site(self, kind: SiteKind) -> bool:
        return any(True for _ in self.sites(kind))

    @staticmethod
    def reachable(place: "Placement", where: frozenset) -> "Placement":
        """`place` on the paths that can reach code under the path condition `where` (a model
        on MPS or CUDA, wrapped only under `torch.cuda.device_count() > 1`, is on CUDA there)."""
        from devlint.analysis import conditions
        from devlint.analysis.placement import conditional

        if not place.paths or not where:
            return place
        kept = [(c, p) for c, p in place.paths if conditions.compatible(c, where)]
        return conditional(kept) if kept and len(kept) < len(place.paths) else place

    @staticmethod
    def chosen_host_path(place: "Placement", where: frozenset = frozenset()) -> str | None:
        """When `place` is the CPU on a machine that has a GPU (the user chose it: `--force_cpu`)
        on a path that can reach code under the path condition `where`: that path's condition in
        words ("" when it always is); None when there is no such path."""
        from devlint.analysis import conditions

        for condition, alternative in (place.paths or ((conditions.ALWAYS, place),)):
            if alternative.on_host and not conditions.may_be_cpu_machine(condition) \
                    and conditions.compatible(condition, where):
                return conditions.describe(condition)
        return None

    @staticmethod
    def deciding_tests(tests: tuple) -> list[tuple["cst.CSTNode", str]]:
        """The tests a meet keeps (`Meet.tests`), each with its literal in words ("`args.gpu is
        None`", "not `args.fp16`"); availability tests are left out."""
        from devlint.analysis import conditions

        found = []
        for literal, test in tests:
            words = conditions.describe(frozenset({literal}))
            if words:
                found.append((test, words))
        return found

    @staticmethod
    def compatible(a: frozenset, b: frozenset) -> bool:
        """Two path conditions (`Site.when`) can hold together (analysis/conditions.py)."""
        from devlint.analysis import conditions

        return conditions.compatible(a, b)

    @staticmethod
    def method_name(call: "cst.CSTNode") -> "cst.CSTNode":
        """The method's name in a call `value.cuda()` (else the call itself): in a chain over
        several lines, the line that asks for the method is the one to change."""
        attribute = getattr(call, "func", None)
        return getattr(attribute, "attr", None) or call

    # --- positions ---------------------------------------------------------------------
    def line(self, node: "cst.CSTNode") -> int:
        return self.locate(node)[1][0]

    def position(self, node: "cst.CSTNode") -> "Span":
        return self.locate(node)[1]

    def locate(self, node: "cst.CSTNode") -> tuple[str, "Span"]:
        """The file a node is in (this one, or a project file reached from it) and its span."""
        return self.find(node) or (self.path, (1, 1, 1, 1))

    def find(self, node: "cst.CSTNode") -> tuple[str, "Span"] | None:
        """As `locate`, or None when the node is in none of the files the analysis read."""
        from devlint.analysis.positions import resolve, span_of

        if self._positions is None:
            self._positions = {self.path: resolve(self.module)}
        for path, positions in self._positions.items():
            span = span_of(positions, node)
            if span is not None:
                return path, span
        for path, module in list(self.reached.items()):
            if path in self._positions:
                continue
            positions = self._positions[path] = resolve(module)
            span = span_of(positions, node)
            if span is not None:
                return path, span
        return None

    # --- phases ------------------------------------------------------------------------
    def phase(self, ctx: Context) -> Phase:
        """When the crash would happen, from where the event sits in the program
        (analysis/phases.py); the syntax is read once, on the first call."""
        if self._phases is None:
            from devlint.analysis.phases import PhaseOracle

            modules = [self.module] + [m for m in self.reached.values() if m is not self.module]
            self._phases = PhaseOracle(modules, self.module)
        return self._phases.phase(ctx)  # type: ignore[attr-defined]
