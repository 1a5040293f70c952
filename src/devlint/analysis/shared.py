"""What the collaborators of the analysis share: frames, module scopes, class summaries, and
the one interface they call each other through.

The analysis is split like mypy's checker (`checker_shared.py`): a small driver
(`analysis/driver.py`) owns the state and the dispatch tables, and each collaborator
(statements, expressions, calls, classes, nn.Module semantics, library semantics, cross-file
linkage) is a module of functions that take the driver as their first argument, typed against
`Analyzer` below. No collaborator imports another, nor the driver: the import graph has no cycle.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Callable, Iterable, Protocol

from devlint.analysis.conditions import ALWAYS, Condition, Literal
from devlint.analysis.events import Context, Event
from devlint.analysis.values import Placement, Value

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from pathlib import Path

    from devlint.analysis.events import Meet, SiteKind
    from devlint.analysis.module_facts import ModuleFacts
    from devlint.analysis.names import ImportTable
    from devlint.analysis.values import Origin

Args = list[Value]
Kwargs = dict[str, Value]


class Scope:
    """The module a piece of code belongs to: its imports, its globals and its syntax.

    A function of another project file runs in that file's scope, so its names are that file's
    globals and imports, not the caller's."""

    __slots__ = ("imports", "env", "module", "display", "facts")

    def __init__(self, imports: "ImportTable", env: dict[str, Value], module: "cst.Module", display: str,
                 facts: "ModuleFacts") -> None:
        self.imports = imports
        self.env = env
        self.module = module
        self.display = display  # the file as findings name it ("" for the checked file itself)
        self.facts = facts


class LoopJumps:
    """The environments (with their path conditions) at a loop pass's `continue`s and `break`s."""

    __slots__ = ("continues", "breaks")

    def __init__(self) -> None:
        self.continues: list[tuple[dict[str, Value], Condition]] = []
        self.breaks: list[tuple[dict[str, Value], Condition]] = []


class Frame:
    """The state of one function activation (or of the module body) on one path."""

    __slots__ = ("env", "ctx", "returns", "depth", "module_level", "self_name", "fn", "scope", "stmt", "loop",
                 "path", "jumps")

    def __init__(self, env: dict[str, Value], ctx: Context, depth: int, module_level: bool, scope: Scope,
                 fn: "cst.CSTNode | None" = None, stmt: "cst.CSTNode | None" = None) -> None:
        self.env = env
        self.ctx = ctx
        # what the activation returns, each with the path it returns on (None: not known, a
        # return inside a loop)
        self.returns: list[tuple[Condition | None, Value]] = []
        self.depth = depth
        self.module_level = module_level
        self.self_name = ""
        self.fn = fn
        self.scope = scope
        self.stmt = stmt  # the statement being executed (events remember it, fixes edit it)
        self.loop: "cst.CSTNode | None" = None  # the innermost loop of this function around `stmt`
        self.path: Condition = ALWAYS  # the branch conditions that hold here since the function began
        # the states at the `continue`s and `break`s of the innermost loop (flow.run_loop joins
        # them into the loop head and exit); shared by the frames of one loop pass
        self.jumps: LoopJumps | None = None

    def child(self, env: dict[str, Value], ctx: Context | None = None) -> "Frame":
        """A frame for a block of the same activation (a branch, a loop pass, a `with` body)."""
        child = Frame(env, ctx if ctx is not None else self.ctx, self.depth, self.module_level, self.scope,
                      self.fn, self.stmt)
        child.self_name = self.self_name
        child.loop = self.loop
        child.path = self.path
        child.jumps = self.jumps
        return child

    def sync_module_env(self) -> None:
        """At module level the frame's variables are the module's globals."""
        if self.module_level:
            self.scope.env = self.env


class ClassInfo:
    """What the analysis knows about a class of the analysed program (its syntax comes from the
    module's facts, its bases from evaluating them where the class is defined)."""

    def __init__(self, node: "cst.ClassDef", bases: list[Value], facts: "ModuleFacts") -> None:
        members = facts.members(node)
        self.node = node
        self.name = node.name.value
        self.bases = bases
        self.methods: dict[str, "cst.FunctionDef"] = members.methods
        self.class_attrs: dict[str, "cst.BaseExpression"] = members.class_attrs
        self.record_fields: list[str] = members.record_fields
        self.is_module = False
        self.init_nodes: frozenset[int] | None = None  # ids of __init__'s nodes (analysis/modules.py)
        # a base this analysis cannot see (a library class, an unresolved import) may be an
        # nn.Module: then what __init__ builds is registered and lives wherever the instance does
        self.opaque_base = False
        self.is_dataset = False
        self.framework_managed = False
        self.library_base = ""


class ProjectFile(Protocol):
    """One file of the project around the checked one (devlint.project.ModuleUnit)."""

    module: "cst.Module"
    path: "Path"
    display: str
    package: str
    scope: Scope | None  # once its module level was interpreted
    classes: dict[int, ClassInfo]
    reached: "dict[str, ProjectFile] | None"
    loading: bool
    digest: str | None  # of the bytes the analysis read (devlint.cache keys on it)


class ProjectFiles(Protocol):
    """The project's files by module name (devlint.project.ProjectIndex)."""

    definitions: dict[int, ProjectFile]  # id(FunctionDef / ClassDef) -> the file defining it

    def unit(self, dotted: str) -> ProjectFile | None: ...
    def resolve(self, qualname: str) -> tuple[ProjectFile, str] | None: ...


class CallTable(Protocol):
    """Which library handlers a call of an imported name goes to (analysis/library/dispatch.py)."""

    def handlers(self, qualname: str) -> tuple[Callable[..., Value], ...]: ...


class Analyzer(Protocol):
    """What collaborators may ask of the analysis (the driver binds each to its collaborator)."""

    # state (what collaborators only read is a property: the driver may hold a narrower type)
    @property
    def project(self) -> ProjectFiles | None: ...
    main_scope: Scope
    classes: dict[int, ClassInfo]
    analysed: set[int]  # ids of functions analysed in some context
    moved_classes: set[int]  # ids of classes with an instance moved to a device
    default_device: bool  # after torch.set_default_device(<a device>), in program order
    default_unknown: bool  # after a default device (or tensor type) the analysis cannot tell
    availability_conds: set[str]
    # identity of a model quantised only when a flag holds (`load_in_8bit=load_in_8bit`) -> that flag
    dispatch_flags: dict[int, Literal]
    branches: dict[tuple[str, str], "cst.CSTNode"]  # (literal text, function) -> its first test there
    library_mode: bool
    in_entry_code: bool
    memo: dict[tuple, tuple]
    active: list[int]
    steps_left: int
    @property
    def library(self) -> CallTable: ...
    places_devices: bool
    project_values: dict[str, Value | None]
    reexports: list[str]
    reached: dict[str, ProjectFile]
    own_file: str

    # events
    @property
    def events(self) -> list[Event]: ...
    @property
    def capturing_worker_work(self) -> bool: ...
    def emit(self, event: Event) -> None: ...
    def emit_site(self, node: "cst.CSTNode", frame: Frame, kind: "SiteKind", callee: str, value: Value,
                  args: tuple = (), text: str = "", names: tuple[str, ...] = (),
                  constant_data: bool = False) -> None: ...
    def record_unchecked(self, event: Event) -> None: ...
    def capture_worker_work(self) -> "AbstractContextManager[list[Event]]": ...
    def ctx(self, frame: Frame) -> Context: ...
    def event_count(self) -> int: ...
    def recent_events(self, count: int) -> list[Event]: ...
    def reattribute_meets(self, start: int, wanted: Callable[["Meet"], bool],
                          change: Callable[["Meet"], "Meet"]) -> None: ...

    # statements and flow
    def exec_block(self, stmts: Iterable["cst.CSTNode"], frame: Frame) -> None: ...
    def assign(self, target: "cst.BaseExpression", value: Value, frame: Frame, stmt: "cst.CSTNode") -> None: ...
    def rebind(self, frame: Frame, identity: int, new: Value) -> None: ...

    # expressions, names, attributes, operations
    def eval(self, node: "cst.BaseExpression | None", frame: Frame, statement: bool = False) -> Value: ...
    def lookup(self, name: str, frame: Frame) -> Value: ...
    def get_attribute(self, owner: Value, attr: str, node: "cst.CSTNode", frame: Frame) -> Value: ...
    def deep_field(self, node: "cst.CSTNode", frame: Frame) -> Value | None: ...
    def item_of(self, value: Value, key: object, text: "str | cst.Subscript") -> Value: ...
    def element_of(self, value: Value) -> Value: ...
    def is_data_iter(self, value: Value) -> bool: ...
    def binary(self, node: "cst.CSTNode", left: Value, right: Value, op: str, frame: Frame) -> Value: ...
    def meet(self, node: "cst.CSTNode", operands: list[Value], operation: str, frame: Frame,
             sources: "list | None" = None) -> bool: ...
    def host_consumer(self, node: "cst.CSTNode", values: list[Value], consumer: str, frame: Frame,
                      result: Value = ...) -> Value: ...
    def place_of_device_value(self, value: Value, arg_node: "cst.CSTNode | None") -> Placement | None: ...
    def device_arg(self, node: "cst.Call", args: Args, kwargs: Kwargs, positional: int | None = 0,
                   keyword: str = "device") -> Placement | None: ...

    # calls
    def call_function(self, fn: "cst.FunctionDef | cst.Lambda", args: Args, kwargs: Kwargs, node: "cst.CSTNode",
                      frame: Frame, *,
                      class_info: ClassInfo | None = None, is_method: bool = False, role: str = "",
                      want_self: bool = False, entry: bool = False) -> Value: ...
    def call_value(self, callee: Value, node: "cst.Call", args: Args, kwargs: Kwargs, frame: Frame) -> Value: ...
    def call_library(self, qualname: str, node: "cst.Call", args: Args, kwargs: Kwargs, frame: Frame) -> Value: ...
    def call_method(self, receiver: Value, name: str, node: "cst.Call", args: Args, kwargs: Kwargs,
                    frame: Frame, statement: bool) -> Value: ...
    def dataset_item(self, dataset: Value, node: "cst.CSTNode", frame: Frame, origin: "Origin") -> Value: ...

    # classes
    def class_of(self, value: Value) -> ClassInfo | None: ...
    def find_method(self, info: ClassInfo | None, name: str) -> "tuple[ClassInfo, cst.FunctionDef] | None": ...
    def instantiate(self, info: ClassInfo, args: Args, kwargs: Kwargs, node: "cst.CSTNode", frame: Frame,
                    run_init: bool = True, entry: bool = False) -> Value: ...
    def class_attribute(self, info: ClassInfo, attr: str, frame: Frame) -> Value | None: ...
    def method_value(self, owner: Value, attr: str) -> Value: ...
    def member_of(self, namespace: str, name: str | None, node: "cst.CSTNode", frame: Frame) -> Value: ...
    def define_class(self, node: "cst.ClassDef", frame: Frame) -> None: ...

    # nn.Module semantics and moves
    def module_origin(self, node: "cst.CSTNode", frame: Frame, what: str) -> "Origin": ...
    def registered_form(self, owner: Value, attr: str, value: Value, frame: Frame, stmt: "cst.CSTNode") -> Value: ...
    def set_attribute(self, owner: Value, attr: str, value: Value, frame: Frame, stmt: "cst.CSTNode") -> None: ...
    def deep_module_assign(self, target: "cst.BaseExpression", value: Value, frame: Frame,
                           stmt: "cst.CSTNode") -> None: ...
    def call_module(self, module: Value, node: "cst.Call", args: Args, kwargs: Kwargs, frame: Frame) -> Value: ...
    def module_method(self, receiver: Value, name: str, node: "cst.Call", args: Args, kwargs: Kwargs,
                      frame: Frame) -> Value: ...
    def move_call(self, receiver: Value, method: str, node: "cst.Call", args: Args, kwargs: Kwargs,
                  frame: Frame, statement: bool) -> Value: ...
    def move_value(self, node: "cst.Call", receiver: Value, target: Placement, method: str, frame: Frame,
                   statement: bool, non_blocking: bool = False) -> Value: ...
    def move_module(self, module: Value, target: Placement, top: bool = True) -> Value: ...
    def rebind_submodules(self, frame: Frame, moved: Value, skip: int = 0) -> None: ...

    # other project files
    def project_value(self, qualname: str, frame: Frame) -> Value | None: ...
    def home_scope(self, fn: "cst.CSTNode", frame: Frame) -> Scope | None: ...
    def analysis_of(self, unit: ProjectFile) -> "Analyzer": ...
