"""The driver of the placement analysis: it owns the state and the dispatch tables.

Flow-sensitive abstract interpretation: statements run in program order over an environment of
abstract values (`analysis/statements.py`), `if` branches are analysed separately and joined,
loops run twice (`analysis/flow.py`), calls to functions of the program are analysed with the
caller's abstract arguments (`analysis/calls.py`). Every fact a rule needs is recorded as an
event (`analysis/recorder.py`); the analysis itself reports nothing.

Each collaborator is a module of functions that take the driver as their first argument; the
driver binds them as its methods, so a collaborator calls another through the driver (the
`Analyzer` interface of `analysis/shared.py`) and none imports another or this module.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from dataclasses import replace
from typing import Callable, Iterable

import libcst as cst

from devlint.analysis import calls, classes, conditions, expressions, identity, linkage, members, modules, moves
from devlint.analysis import operations
from devlint.analysis import statements
from devlint.analysis.events import Context, Event, Meet, Site, SiteKind
from devlint.analysis.library import cuda, data
from devlint.analysis.library.dispatch import LibraryTable, call_library
from devlint.analysis.module_facts import facts_of
from devlint.analysis.names import ImportTable, collect_imports
from devlint.analysis.recorder import Recorder
from devlint.analysis.shared import ClassInfo, Frame, ProjectFile, ProjectFiles, Scope
from devlint.analysis.syntax import count_lines
from devlint.analysis.values import NO_TENSORS, NONE_VALUE, UNKNOWN, Kind, Value
from devlint.knowledge.signals import DEFINES_LAYER, PLACES_DEVICES

# Statements one file's analysis may interpret, calls into functions included. Past it, calls
# return unknown values (silence) and the rest of the file is still walked once.
MAX_STEPS = 40_000

_STATEMENTS = statements.STATEMENTS
_EXPRESSIONS = expressions.EXPRESSIONS
_CALL = cst.Call
_eval_call = calls.eval_call


class Analysis:
    """Runs one module's statements over abstract values and records events."""

    def __init__(self, module: cst.Module, imports: ImportTable, *, path: str = "", display: str = "",
                 move_helpers: frozenset[str] = frozenset(), device_helpers: frozenset[str] = frozenset(),
                 project: "ProjectFiles | None" = None, source: str | None = None,
                 reached: "dict[str, ProjectFile] | None" = None, library_mode: bool = True) -> None:
        self.project = project
        self.main_scope = Scope(imports, {}, module, display, facts_of(module, source))
        # other project files are read only for a file that puts something on a device itself,
        # or defines a layer that library mode runs on its caller's device (the layers it is
        # built from live there): without either, no finding in it can need their code (and
        # library internals stay cheap)
        self.places_devices = source is None or PLACES_DEVICES.search(source) is not None \
            or (library_mode and DEFINES_LAYER.search(source) is not None)
        self.move_helpers = move_helpers
        self.device_helpers = device_helpers
        self.library = LibraryTable(move_helpers, device_helpers)
        self.recorder = Recorder()
        self.classes: dict[int, ClassInfo] = {}  # id(ClassDef) -> info
        self.analysed: set[int] = set()  # ids of FunctionDefs analysed in some context
        self.moved_classes: set[int] = set()  # ids of ClassDefs with an instance moved to a device
        self.default_device = False  # after torch.set_default_device(<a device>) in program order
        # after `torch.set_default_device(device)` / `set_default_tensor_type(...)` with an argument
        # that may name an accelerator: a factory without `device=` is placed we cannot say where
        self.default_unknown = False
        # normalised `if` tests computed from torch.cuda.is_available() (`use_cuda`): a device
        # chosen by one of them falls back to the CPU exactly when no GPU is there
        self.availability_conds: set[str] = set()
        self.dispatch_flags: dict[int, conditions.Literal] = {}
        # the first test of each function that states a path literal, by (literal text, function):
        # a meet on some paths keeps the tests that decide them, for the evidence of its finding
        self.branches: dict[tuple[str, str], cst.CSTNode] = {}
        # library mode: code no call reached runs on its caller's device (analysis/calls.py)
        self.library_mode = library_mode
        self.in_entry_code = False  # analysing code no call reached (after the first ENTRY site)
        self.memo: dict[tuple, tuple] = {}
        self.active: list[int] = []  # the functions being analysed (a recursion guard)
        # statements this file's analysis may run, calls included: proportional to its size, so
        # that deep generic code (a library's internals) cannot cost more than a few passes
        self.steps_left = min(MAX_STEPS, 3_000 + 4 * len(module.body) + 2 * count_lines(module))
        self.aliases = identity.AliasIndex()
        # project files reached from this one, by display path (shared with the analyses that
        # load them, so the files they reach in turn are known here too)
        self.reached: dict[str, "ProjectFile"] = reached if reached is not None else {}
        self.project_values: dict[str, Value | None] = {}
        self.reexports: list[str] = []  # names being followed through re-exports (cycle guard)
        # the checked file itself, when another project file imports it back (`from train import x`)
        self.own_file = os.path.realpath(path) if path and not path.startswith("<") else ""

    # ------------------------------------------------------------------ entry points
    def run(self) -> None:
        scope = self.main_scope
        frame = Frame(scope.env, Context(), 0, True, scope)
        self.exec_block(scope.module.body, frame)
        scope.env = frame.env
        self._analyse_the_rest()

    def _module_frame(self) -> Frame:
        return Frame(self.main_scope.env, Context(), 0, True, self.main_scope)

    def _analyse_the_rest(self) -> None:
        """Functions and methods no call reached are analysed once with unknown arguments."""
        for stmt in self.main_scope.facts.top_level_functions:
            if id(stmt) not in self.analysed:
                # program order restarts here: this function runs at some unknown point (DEV203)
                self._entry(stmt, stmt.name.value, stmt.name.value)
                self.call_function(stmt, [], {}, stmt, self._module_frame(), entry=True)
        for info in list(self.classes.values()):
            if info.is_dataset:
                continue  # a dataset's methods run where a DataLoader iterates it
            instance = None
            for name, method in info.methods.items():
                if id(method) in self.analysed or name.startswith("__") and name != "__call__":
                    continue
                if instance is None:
                    self._entry(info.node, info.name, info.name)
                    instance = classes.standalone_instance(self, info, self._module_frame())
                self._entry(method, f"{info.name}.{name}", name)
                # a classmethod's first parameter is the class: `cls(...)` builds an instance
                first = _class_value(info) if _is_classmethod(method) else instance
                self.call_function(method, [first], {}, method, self._module_frame(),
                                   class_info=info, is_method=True, entry=True)

    def _entry(self, node: cst.CSTNode, function: str, name: str) -> None:
        self.in_entry_code = True
        self.emit(Site(node, Context(function=function), SiteKind.ENTRY, name, UNKNOWN))

    def analysis_of(self, unit: "ProjectFile") -> "Analysis":
        """An analysis of another project file's module level, sharing this one's settings."""
        return Analysis(unit.module, collect_imports(unit.module, unit.package), path=unit.display,
                        display=unit.display, move_helpers=self.move_helpers, device_helpers=self.device_helpers,
                        project=self.project, reached=self.reached, library_mode=self.library_mode)

    # ------------------------------------------------------------------ statements and expressions
    def exec_block(self, stmts: Iterable[cst.CSTNode], frame: Frame) -> None:
        for stmt in stmts:
            self.steps_left -= 1
            handler = _STATEMENTS.get(type(stmt))
            if handler is not None:
                handler(self, stmt, frame)

    def eval(self, node: cst.BaseExpression | None, frame: Frame, statement: bool = False) -> Value:
        if node is None:
            return NONE_VALUE
        if type(node) is _CALL:  # not isinstance: libcst's ABCs make that slow on this hot path
            return _eval_call(self, node, frame, statement)
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            return UNKNOWN
        return handler(self, node, frame)

    assign = statements.assign
    lookup = linkage.lookup
    project_value = linkage.project_value
    home_scope = linkage.home_scope
    get_attribute = members.get_attribute
    method_value = members.method_value
    member_of = members.member_of
    deep_field = members.deep_field
    item_of = expressions.item_of
    element_of = expressions.element_of
    is_data_iter = staticmethod(expressions.is_data_iter)
    binary = operations.binary
    meet = operations.meet
    host_consumer = operations.host_consumer
    place_of_device_value = cuda.place_of_device_value
    device_arg = cuda.device_arg
    dataset_item = data.dataset_item

    # ------------------------------------------------------------------ calls, classes, modules
    call_function = calls.call_function
    call_value = calls.call_value
    call_method = calls.call_method
    call_library = call_library
    class_of = classes.class_of
    find_method = classes.find_method
    instantiate = classes.instantiate
    class_attribute = classes.class_attribute
    define_class = classes.define_class
    module_origin = modules.module_origin
    registered_form = modules.registered_form
    set_attribute = modules.set_attribute
    deep_module_assign = modules.deep_module_assign
    call_module = modules.call_module
    module_method = modules.module_method
    move_call = moves.move_call
    move_value = moves.move_value
    move_module = moves.move_module
    rebind_submodules = moves.rebind_submodules

    def rebind(self, frame: Frame, identity_: int, new: Value) -> None:
        identity.rebind(frame, identity_, new, self.aliases)

    # ------------------------------------------------------------------ events
    @property
    def events(self) -> list[Event]:
        return self.recorder.events

    def emit(self, event: Event) -> None:
        self.recorder.emit(event)

    def record_unchecked(self, event: Event) -> None:
        self.recorder.append(event)

    def capture_worker_work(self) -> AbstractContextManager[list[Event]]:
        return self.recorder.capture_worker_work()

    @property
    def capturing_worker_work(self) -> bool:
        return self.recorder.capturing

    def ctx(self, frame: Frame) -> Context:
        """The frame's context, naming the statement being executed."""
        if frame.stmt is not frame.ctx.statement:
            return replace(frame.ctx, statement=frame.stmt)
        return frame.ctx

    def emit_site(self, node: cst.CSTNode, frame: Frame, kind: SiteKind, callee: str, value: Value,
                  args: tuple = (), text: str = "", names: tuple[str, ...] = (), constant_data: bool = False) -> None:
        self.recorder.emit(Site(node, self.ctx(frame), kind, callee, value, args, text, names, constant_data,
                                frame.path))

    def event_count(self) -> int:
        return len(self.recorder.events)

    def recent_events(self, count: int) -> list[Event]:
        return self.recorder.events[-count:]

    def reattribute_meets(self, start: int, wanted: Callable[[Meet], bool], change: Callable[[Meet], Meet]) -> None:
        """Rewrite the meets recorded since `start` that `wanted` selects (a crash inside a
        module's forward caused by the caller's input is reported at the call)."""
        events = self.recorder.events
        for index in range(start, len(events)):
            event = events[index]
            if isinstance(event, Meet) and wanted(event):
                events[index] = change(event)


def _is_classmethod(method: cst.FunctionDef) -> bool:
    return any(type(d.decorator) is cst.Name and d.decorator.value == "classmethod" for d in method.decorators)


def _class_value(info: ClassInfo) -> Value:
    return Value(Kind.CLASS, NO_TENSORS, qualname=info.name, node=info.node)
