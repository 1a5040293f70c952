"""Flow-sensitive abstract interpretation of device placement.

Statements run in program order over an environment of abstract values; `if` branches are
analysed separately and joined (a value moved on one branch only is "on the host when ..."),
loops run twice, calls to functions of the program are analysed with the caller's abstract
arguments. Every fact a rule needs is recorded as an event; the interpreter itself reports
nothing.
"""

from __future__ import annotations

import builtins
import re
import os
from dataclasses import fields as dataclass_fields, replace
from typing import TYPE_CHECKING, Callable, Iterable

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import Context, DeviceMeet, Event, HostUse, Made, Meet, Move
from devlint.analysis.names import ImportTable, canonical, collect_imports, dotted
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    NO_TENSORS,
    NONE_VALUE,
    ORIGIN_AFTER_MOVE,
    ORIGIN_ATTRIBUTE,
    ORIGIN_BATCH,
    ORIGIN_DATA,
    ORIGIN_FACTORY,
    ORIGIN_MODULE,
    ORIGIN_OTHER,
    ORIGIN_OUTSIDE_TREE,
    ORIGIN_TOKENIZER,
    SCALAR,
    STR,
    TENSORISH,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Placement,
    Value,
    Where,
    device_at,
    join,
    new_obj_id,
)
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches
from devlint.knowledge import torch as tk

if TYPE_CHECKING:  # pragma: no cover
    from devlint.project import ModuleUnit, ProjectIndex

MAX_CALL_DEPTH = 6
# Statements one file's analysis may interpret, calls into functions included. Past it, calls
# return unknown values (silence) and the rest of the file is still walked once.
MAX_STEPS = 40_000
_BUILTINS = frozenset(dir(builtins))
_EVAL_NAME = re.compile(r"(^|_)(eval|evaluate|evaluation|valid|validate|validation|val|test)(_|$)", re.I)

_EMPTY_MODULE = cst.Module(body=[])
# a method body that reaches its fields by name at run time
_DYNAMIC_BODY = re.compile(r"setattr\(|__dict__|\bvars\(|\bfields\(|\breplace\(|\btype\(self\)|__class__|"
                           r"\*\*|getattr\(|_asdict|\bapply_to_collection|\bmap_structure|\btree_map")
_RECORD_DECORATORS = re.compile(r"(^|\.)(dataclass|define|frozen|mutable|attrs|s)$")
# a user's switch between GPU and CPU in an `if` test: `args.cuda`, `use_gpu`, `opt.gpu_ids`
_GPU_SWITCH = re.compile(r"(?i)(cuda|gpu)")
_NON_TENSOR_ATTRS = frozenset({"shape", "ndim", "dtype", "requires_grad", "is_cuda", "is_leaf",
                               "grad_fn", "names", "layout", "is_sparse", "device"})


_OPERATORS: dict[type, str] = {
    cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.FloorDivide: "//",
    cst.Modulo: "%", cst.Power: "**", cst.MatrixMultiply: "@", cst.BitAnd: "&", cst.BitOr: "|",
    cst.BitXor: "^", cst.LeftShift: "<<", cst.RightShift: ">>", cst.Equal: "==",
    cst.NotEqual: "!=", cst.LessThan: "<", cst.LessThanEqual: "<=", cst.GreaterThan: ">",
    cst.GreaterThanEqual: ">=", cst.AddAssign: "+", cst.SubtractAssign: "-",
    cst.MultiplyAssign: "*", cst.DivideAssign: "/", cst.MatrixMultiplyAssign: "@",
    cst.FloorDivideAssign: "//", cst.ModuloAssign: "%", cst.PowerAssign: "**",
    cst.BitAndAssign: "&", cst.BitOrAssign: "|", cst.BitXorAssign: "^",
    cst.LeftShiftAssign: "<<", cst.RightShiftAssign: ">>",
}
_CODE_CACHE: dict[int, tuple[cst.CSTNode, str]] = {}
_INT_LITERALS: dict[str, Value] = {}  # "4" -> SCALAR with fact int=4 (values are immutable)
# names that hold a program's settings: `args.device` is the chosen device, `x.device` follows x
# kinds that are never a tensor (what `hasattr(x, "cpu")` or `isinstance(x, torch.Tensor)` rules out)
_NOT_TENSORS = frozenset({Kind.NDARRAY, Kind.LIST, Kind.TUPLE, Kind.DICT, Kind.SCALAR, Kind.STR, Kind.NONE})
# bases that are never an nn.Module (anything else the analysis cannot see might be one)
_PLAIN_BASE_MODULES = ("builtins.", "typing.", "abc.", "enum.", "collections.", "dataclasses.", "argparse.",
                       "typing_extensions.", "json.", "threading.", "multiprocessing.", "unittest.")
_SETTING_HOLDERS = frozenset({"self", "args", "cfg", "config", "opt", "opts", "hparams", "hp", "params",
                              "settings", "conf", "flags", "FLAGS", "CFG", "options", "training_args",
                              "accelerator", "trainer", "fabric", "Config", "CONFIG"})


def code_of(node: cst.CSTNode) -> str:
    """Source text of a node, for messages and device expressions.

    Names, dotted names and operators are read directly; anything else is generated once and
    cached, because libcst's code generation costs more than the analysis of the node."""
    if isinstance(node, cst.Name):
        return node.value
    op = _OPERATORS.get(type(node))
    if op is not None:
        return op
    if isinstance(node, cst.Attribute):
        text = dotted(node)
        if text is not None:
            return text
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return node.value
    cached = _CODE_CACHE.get(id(node))
    if cached is not None and cached[0] is node:
        return cached[1]
    try:
        text = _EMPTY_MODULE.code_for_node(node).strip()
    except Exception:  # pragma: no cover - defensive: messages must never crash the run
        text = "?"
    if len(_CODE_CACHE) > 50_000:
        _CODE_CACHE.clear()
    _CODE_CACHE[id(node)] = (node, text)
    return text


def _grown_list(empty: Value, grown: Value) -> bool:
    """`empty` is an empty list literal and `grown` the same list after appends on another path."""
    return (empty.kind is Kind.LIST and empty.has("empty") and empty.elem is None and not empty.fields
            and grown.kind is Kind.LIST and grown.elem is not None and not grown.fields)


def _terminates(body: Iterable[cst.CSTNode]) -> bool:
    """True when a block always leaves (return / raise / continue / break as last statement)."""
    stmts = list(body)
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for s in last.body)
    return False


def _block(node: cst.BaseSuite) -> list[cst.CSTNode]:
    if isinstance(node, cst.IndentedBlock):
        return list(node.body)
    if isinstance(node, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=node.body)]
    return []


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        raw = node.value
        quote = raw[-1]
        body_start = raw.index(quote)
        prefix = raw[:body_start].lower()
        if "b" in prefix:
            return None
        if "\\" not in raw and "f" not in prefix:  # no escapes: strip prefix and quotes
            width = 3 if raw[body_start:body_start + 3] in ('"""', "'''") else 1
            return raw[body_start + width:len(raw) - width]
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        left, right = _string_value(node.left), _string_value(node.right)
        if left is not None and right is not None:
            return left + right
    return None


def _fstring_prefix(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.FormattedString):
        text = "".join(p.value for p in node.parts if isinstance(p, cst.FormattedStringText))
        return text
    return None


def device_string_place(text: str, node: cst.CSTNode | None = None) -> Placement | None:
    """Placement named by a device string such as "cuda:1" or "cpu"; None for other strings."""
    t = text.strip().lower()
    if t == "cpu" or t.startswith("cpu:"):
        return HOST
    if t in ("cuda", "mps", "xpu", "npu", "hpu", "xla", "meta") or (":" in t and re.fullmatch(r"(cuda|xpu|npu|mps|hpu):\d+", t)):
        return device_at(text.strip(), node, devices.from_string(t))
    return None


class Frame:
    """The state of one function activation (or of the module body)."""

    __slots__ = ("env", "ctx", "returns", "depth", "module_level", "self_name", "fn")

    def __init__(self, env: dict[str, Value], ctx: Context, depth: int, module_level: bool,
                 fn: cst.CSTNode | None = None) -> None:
        self.env = env
        self.ctx = ctx
        self.returns: list[Value] = []
        self.depth = depth
        self.module_level = module_level
        self.self_name = ""
        self.fn = fn


class ClassInfo:
    """What the interpreter knows about a class of the analysed program."""

    def __init__(self, node: cst.ClassDef, qualname: str, bases: list[Value]) -> None:
        self.node = node
        self.name = node.name.value
        self.qualname = qualname
        self.bases = bases
        self.methods: dict[str, cst.FunctionDef] = {}
        self.class_attrs: dict[str, cst.BaseExpression] = {}
        for stmt in _block(node.body):
            if isinstance(stmt, cst.FunctionDef):
                self.methods[stmt.name.value] = stmt
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign):
                        for t in small.targets:
                            if isinstance(t.target, cst.Name):
                                self.class_attrs[t.target.value] = small.value
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        if isinstance(small.target, cst.Name):
                            self.class_attrs[small.target.value] = small.value
        self.is_module = False
        # a base this analysis cannot see (a library class, an unresolved import) may be an
        # nn.Module: then what __init__ builds is registered and lives wherever the instance does
        self.opaque_base = False
        self.is_dataset = False
        self.framework_managed = False
        self.library_base = ""


class Interpreter:
    """Runs one module's statements over abstract values and records events."""

    def __init__(self, module: cst.Module, imports: ImportTable, *, path: str = "",
                 move_helpers: frozenset[str] = frozenset(),
                 device_helpers: frozenset[str] = frozenset(),
                 project: "ProjectIndex | None" = None, source: str | None = None) -> None:
        self.module = module
        self.imports = imports
        self.path = path
        self.project = project
        self.units: dict[str, "ModuleUnit"] = {}  # project files reached from this one, by display path
        self._project_values: dict[str, Value | None] = {}
        # other project files are read only for a file that puts something on a device itself:
        # without that, no finding in it can need their code (and library internals stay cheap)
        self.places_devices = source is None or _PLACING.search(source) is not None
        self.events: list[Event] = []
        self.module_env: dict[str, Value] = {}
        self.classes: dict[int, ClassInfo] = {}  # id(ClassDef) -> info
        self.analysed: set[int] = set()  # ids of FunctionDefs analysed in some context
        self.moved_classes: set[int] = set()  # ids of ClassDefs with an instance moved to a device
        self.device_in_play = False
        self.default_device = False  # after torch.set_default_device(<a device>) in program order
        self.move_helpers = move_helpers
        self.device_helpers = device_helpers
        # normalised `if` tests computed from torch.cuda.is_available() (`use_cuda`): a device
        # chosen by one of them falls back to the CPU exactly when no GPU is there
        self.availability_conds: set[str] = set()
        self._memo: dict[tuple, tuple[Value, dict[int, Value]]] = {}
        self._active: list[int] = []
        self._stmt: cst.CSTNode | None = None
        self._seen_events: set[tuple] = set()
        # device work done while a DataLoader's collate_fn / Dataset.__getitem__ is analysed (DEV110)
        self._worker_moves: list[list[Event]] = []
        # statements this file's analysis may run, calls included: proportional to its size, so
        # that deep generic code (a library's internals) cannot cost more than a few passes
        self.steps_left = min(MAX_STEPS, 3_000 + 4 * len(module.body) + 2 * _count_lines(module))
        self._generators: dict[int, bool] = {}
        self._reach: dict[int, tuple[Value, set[int]]] = {}  # id(value) -> (value, objects in it): rebind
        # a text without "yield" has no generator: its functions need no look inside (_is_generator)
        self._yield_free_module = module if source is not None and "yield" not in source else None
        self._plain_functions: set[int] | None = None
        self._reexports: list[str] = []  # names being followed through re-exports (cycle guard)
        self._stars: dict[int, list[str]] = {}  # id(module) -> modules it imports with `*`
        # the checked file itself, when another project file imports it back (`from train import x`)
        self._own_file = os.path.realpath(path) if path and not path.startswith("<") else ""

    # ------------------------------------------------------------------ entry points
    def run(self) -> None:
        frame = Frame(self.module_env, Context(), 0, True)
        self.exec_block(self.module.body, frame)
        self.module_env = frame.env
        self._analyse_the_rest()

    def _analyse_the_rest(self) -> None:
        """Functions and methods no call reached are analysed once with unknown arguments."""
        for stmt in self.module.body:
            if isinstance(stmt, cst.FunctionDef) and id(stmt) not in self.analysed:
                # program order restarts here: this function runs at some unknown point (DEV203)
                self.emit(Made(stmt, Context(function=stmt.name.value), "entry", stmt.name.value, UNKNOWN))
                self.call_function(stmt, [], {}, stmt, Frame(self.module_env, Context(), 0, True))
        for info in list(self.classes.values()):
            if info.is_dataset:
                continue  # a dataset's methods run where a DataLoader iterates it
            instance = None
            for name, method in info.methods.items():
                if id(method) in self.analysed or name.startswith("__") and name != "__call__":
                    continue
                if instance is None:
                    self.emit(Made(info.node, Context(function=info.name), "entry", info.name, UNKNOWN))
                    instance = self._standalone_instance(info)
                self.emit(Made(method, Context(function=f"{info.name}.{name}"), "entry", name, UNKNOWN))
                self.call_function(method, [instance], {}, method,
                                   Frame(self.module_env, Context(), 0, True),
                                   class_info=info, is_method=True)

    def _standalone_instance(self, info: ClassInfo) -> Value:
        frame = Frame(self.module_env, Context(), 0, True)
        value = self.instantiate(info, [], {}, info.node, frame, run_init=True)
        if info.is_module and id(info.node) in self.moved_classes:
            value = self.move_module(value, device_at("device"))
        elif info.is_module:
            # nothing in this program decides where an instance lives (a models.py checked on its
            # own): its registered state is wherever its user puts it, not on the host
            value = self.move_module(value, UNKNOWN_PLACE)
        elif info.opaque_base:
            value = replace(value, fields=tuple((key, self._unplaced(field)) for key, field in value.fields))
        return value

    def _unplaced(self, value: Value) -> Value:
        """A module or tensor whose placement this analysis cannot know (it may have moved with
        an instance it belongs to)."""
        if value.kind is Kind.MODULE:
            return self.move_module(value, UNKNOWN_PLACE)
        if value.kind is Kind.TENSOR and value.place.known:
            return value.at(UNKNOWN_PLACE)
        return value

    # ------------------------------------------------------------------ other project files
    def project_value(self, qual: str) -> Value | None:
        """The value a project module defines under `qual` (`models.Net`), or None."""
        if self.project is None or qual.startswith(("torch.", "builtins.")) or not self.places_devices:
            return None
        if qual in self._project_values:
            return self._project_values[qual]
        value = self._project_value(qual)
        self._project_values[qual] = value
        return value

    def _project_value(self, qual: str) -> Value | None:
        if self.project.unit(qual) is not None:
            return Value(Kind.REF, NO_TENSORS, qual=qual)  # a project module: `import pkg.models as m`
        found = self.project.resolve(qual)
        if found is None:
            return None
        unit, name = found
        if unit.module is self.module or str(unit.path) == self._own_file:
            return None
        self._load_unit(unit)
        head, _, rest = name.partition(".")
        value = unit.env.get(head)
        if value is None and unit.interpreter is not None:
            # a name the module imports (a package `__init__` re-exporting `from .mlp import Net`)
            target = unit.interpreter.imports.resolve(name)
            if target is not None and target != qual and target not in self._reexports \
                    and len(self._reexports) < 8:
                self._reexports.append(target)
                try:
                    return self.project_value(target) or Value(Kind.REF, NO_TENSORS, qual=target)
                finally:
                    self._reexports.pop()
        if value is None:
            return UNKNOWN
        for attr in rest.split(".") if rest else ():
            value = self.get_attribute(value, attr, unit.module, Frame(unit.env, Context(), 0, True))
        return value

    def _load_unit(self, unit: "ModuleUnit") -> None:
        """Interpret a project file's module level once, to learn what it defines."""
        if unit.display not in self.units:
            self.units[unit.display] = unit
        if unit.interpreter is not None or unit.loading:
            if unit.interpreter is not None:
                self.classes.update(unit.interpreter.classes)
                # read by an earlier check: the files it reached in turn hold nodes findings point to
                for reached in list(unit.interpreter.units.values()):
                    self.units.setdefault(reached.display, reached)
            return
        unit.loading = True
        try:
            sub = Interpreter(unit.module, collect_imports(unit.module, unit.package), path=unit.display,
                              move_helpers=self.move_helpers, device_helpers=self.device_helpers,
                              project=self.project)
            sub.units = self.units
            frame = Frame(sub.module_env, Context(path=unit.display), 0, True)
            sub._stmt = None
            # imported, not run: its `if __name__ == "__main__":` block does not execute
            sub.exec_block([stmt for stmt in unit.module.body if not _is_main_guard(stmt)], frame)
            unit.env = frame.env
            unit.interpreter = sub
            for node in unit.module.body:
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    self.project.home[id(node)] = unit  # type: ignore[union-attr]
                    if isinstance(node, cst.ClassDef):
                        for stmt in _block(node.body):
                            if isinstance(stmt, cst.FunctionDef):
                                self.project.home[id(stmt)] = unit  # type: ignore[union-attr]
        except RecursionError:
            unit.interpreter = None
        finally:
            unit.loading = False
        if unit.interpreter is not None:
            self.classes.update(unit.interpreter.classes)

    def _enter_home(self, fn: cst.CSTNode) -> tuple | None:
        """Switch name resolution to the file that defines `fn`; returns what to restore."""
        if self.project is None:
            return None
        unit = self.project.home.get(id(fn))
        if unit is None or unit.module is self.module or unit.interpreter is None:
            return None
        saved = (self.imports, self.module_env, self.module)
        self.imports = unit.interpreter.imports
        self.module_env = unit.env
        self.module = unit.module
        return saved + (unit.display,)

    # ------------------------------------------------------------------ events
    def emit(self, event: Event) -> None:
        if self._worker_moves and (isinstance(event, Move) and event.target.on_device
                                   or isinstance(event, Made) and event.what == "factory"
                                   and event.value.place.on_device):
            self._worker_moves[-1].append(event)
        key = (type(event).__name__, id(event.node), getattr(event, "operation", ""),
               id(getattr(getattr(event, "host", None), "origin", None) or 0), getattr(event, "what", ""))
        if isinstance(event, Meet):
            key = ("Meet", id(event.node), event.host.origin.category if event.host.origin else "",
                   id(event.host.origin.node) if event.host.origin and event.host.origin.node else 0)
        if key in self._seen_events:
            return
        self._seen_events.add(key)
        self.events.append(event)

    def ctx(self, frame: Frame) -> Context:
        if self._stmt is not frame.ctx.statement:
            return replace(frame.ctx, statement=self._stmt)
        return frame.ctx

    # ------------------------------------------------------------------ statements
    def exec_block(self, stmts: Iterable[cst.CSTNode], frame: Frame) -> None:
        for stmt in stmts:
            self.exec_stmt(stmt, frame)

    def exec_stmt(self, stmt: cst.CSTNode, frame: Frame) -> None:
        self.steps_left -= 1
        handler = _STATEMENTS.get(type(stmt))
        if handler is not None:
            handler(self, stmt, frame)

    def _exec_simple_line(self, stmt: cst.SimpleStatementLine, frame: Frame) -> None:
        for small in stmt.body:
            self._stmt = stmt
            handler = _SMALL.get(type(small))
            if handler is not None:
                handler(self, small, frame)

    def _exec_expr(self, node: cst.Expr, frame: Frame) -> None:
        self.eval(node.value, frame, statement=True)

    def _exec_assign(self, node: cst.Assign, frame: Frame) -> None:
        value = self.eval(node.value, frame)
        for target in node.targets:
            self.assign(target.target, value, frame, node)

    def _exec_ann_assign(self, node: cst.AnnAssign, frame: Frame) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value, frame), frame, node)

    def _exec_aug_assign(self, node: cst.AugAssign, frame: Frame) -> None:
        left = self.eval(node.target, frame)
        right = self.eval(node.value, frame)
        result = self.binary(node, left, right, code_of(node.operator).strip("= ") or "op", frame)
        self.assign(node.target, result, frame, node)

    def _exec_assert(self, node: cst.Assert, frame: Frame) -> None:
        self.eval(node.test, frame)  # `assert torch.cuda.is_available()` is a CUDA check

    def _exec_return(self, node: cst.Return, frame: Frame) -> None:
        frame.returns.append(self.eval(node.value, frame) if node.value is not None else NONE_VALUE)

    def _exec_import(self, node: cst.Import, frame: Frame) -> None:
        self.imports.add_import(node)
        for alias in node.names:
            local = (alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                     else (dotted(alias.name) or "").split(".")[0])
            frame.env.pop(local, None)

    def _exec_import_from(self, node: cst.ImportFrom, frame: Frame) -> None:
        self.imports.add_import_from(node)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            local = (alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name)
                     else dotted(alias.name) or "")
            frame.env.pop(local, None)

    def _exec_del(self, node: cst.Del, frame: Frame) -> None:
        if isinstance(node.target, cst.Name):
            frame.env.pop(node.target.value, None)

    def _exec_function_def(self, node: cst.FunctionDef, frame: Frame) -> None:
        frame.env[node.name.value] = Value(Kind.FUNCTION, NO_TENSORS, qual=node.name.value, node=node)

    def _exec_class_def(self, node: cst.ClassDef, frame: Frame) -> None:
        bases = [self.eval(arg.value, frame) for arg in node.bases if arg.keyword is None]
        info = ClassInfo(node, node.name.value, bases)
        self._classify(info)
        self.classes[id(node)] = info
        frame.env[node.name.value] = Value(Kind.CLASS, NO_TENSORS, qual=node.name.value, node=node)

    def _classify(self, info: ClassInfo) -> None:
        for base in info.bases:
            if base.kind is Kind.CLASS and id(base.node) in self.classes:
                parent = self.classes[id(base.node)]
                info.is_module |= parent.is_module
                info.opaque_base |= parent.opaque_base
                info.is_dataset |= parent.is_dataset
                info.framework_managed |= parent.framework_managed
                info.library_base = info.library_base or parent.library_base
            elif base.kind is Kind.REF:
                if matches(base.qual, lib.MODULE_BASES) or base.qual.startswith("torch.nn.") and base.qual[9:10].isupper():
                    info.is_module = True
                    info.library_base = info.library_base or base.qual
                if matches(base.qual, lib.FRAMEWORK_MODULE_BASES):
                    info.framework_managed = True
                if matches(base.qual, tk.DATASET_BASES):
                    info.is_dataset = True
                if not info.is_module and not info.is_dataset and not base.qual.startswith(_PLAIN_BASE_MODULES):
                    info.opaque_base = True
            elif base.kind is Kind.UNKNOWN:
                info.opaque_base = True

    def _exec_if(self, node: cst.If, frame: Frame) -> None:
        test_text = code_of(node.test)
        self._stmt = node
        if self.eval(node.test, frame).has("cuda_available"):
            self.availability_conds.add(devices.norm(test_text))
        if re.fullmatch(r"__name__\s*==\s*['\"]__main__['\"]", test_text):
            self.exec_block(_block(node.body), frame)
            return
        guards = "cuda.is_available" in test_text or "device_count" in test_text
        if not guards and _GPU_SWITCH.search(test_text) and "torch." not in test_text:
            # `if args.cuda:`: the user picks the GPU, and the other path runs on the CPU
            self.emit(Made(node, self.ctx(frame), "cuda_flag", "", UNKNOWN, text=test_text))
        body_frame = self._fork(frame, guarded=guards and "not " not in test_text)
        self._narrow_to_tensors(node.test, body_frame)
        self.exec_block(_block(node.body), body_frame)
        else_frame = self._fork(frame, guarded=guards and "not " in test_text)
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            self._exec_if(orelse, else_frame)
            else_body: list = [orelse]
            else_terminates = False
        elif isinstance(orelse, cst.Else):
            else_body = _block(orelse.body)
            self.exec_block(else_body, else_frame)
            else_terminates = _terminates(else_body)
        else:
            else_terminates = False
        body_terminates = _terminates(_block(node.body))
        if body_terminates and not else_terminates:
            frame.env = else_frame.env
        elif else_terminates and not body_terminates:
            frame.env = body_frame.env
        else:
            frame.env = self._join_envs(body_frame.env, else_frame.env, test_text)
            for value in frame.env.values():  # `if avail: device = "cuda" else: device = "cpu"`
                if value.has("cpu_fallback") and value.place.where is Where.COND and test_text in value.place.cond:
                    self.emit(Made(node, self.ctx(frame), "cpu_fallback", "", value, text=test_text))
                    break
        frame.returns.extend(body_frame.returns + else_frame.returns)
        if frame.module_level:
            self.module_env = frame.env

    def _narrow_to_tensors(self, test: cst.BaseExpression, frame: Frame) -> None:
        """`if hasattr(ids, "cpu"):` / `if isinstance(ids, torch.Tensor):` is false for a NumPy
        array or a list: inside, a name the analysis believed to be one is something else."""
        while isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
            self._narrow_to_tensors(test.right, frame)
            test = test.left
        if not (isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and len(test.args) == 2
                and isinstance(test.args[0].value, cst.Name)):
            return
        name, probe = test.args[0].value.value, test.args[1].value
        value = frame.env.get(name)
        if value is None or value.kind not in _NOT_TENSORS:
            return
        if test.func.value == "hasattr":
            narrows = isinstance(probe, cst.SimpleString) and probe.evaluated_value in tk.TENSOR_ONLY_ATTRIBUTES
        elif test.func.value == "isinstance":
            kind = self.eval(probe, frame)
            narrows = kind.kind is Kind.REF and canonical(kind.qual) in tk.TENSOR_TYPES
        else:
            narrows = False
        if narrows:
            frame.env[name] = UNKNOWN

    def _fork(self, frame: Frame, **ctx_changes) -> Frame:
        changes = {k: v for k, v in ctx_changes.items() if v}
        child = Frame(dict(frame.env), replace(frame.ctx, **changes) if changes else frame.ctx,
                      frame.depth, frame.module_level, frame.fn)
        child.self_name = frame.self_name
        return child

    @staticmethod
    def _join_envs(a: dict[str, Value], b: dict[str, Value], cond: str | None) -> dict[str, Value]:
        out = {}
        for key in a.keys() | b.keys():
            va, vb = a.get(key), b.get(key)
            if va is vb:
                out[key] = va
            elif va is None or vb is None:
                out[key] = va if vb is None else vb
            elif _grown_list(va, vb):  # `preds = []` before a loop that appends to it
                out[key] = vb
            elif _grown_list(vb, va):
                out[key] = va
            else:
                out[key] = join(va, vb, cond)
        return out

    def _loop(self, frame: Frame, kind: str, run_body: Callable[[Frame], None],
              orelse: cst.Else | None) -> None:
        entry = frame.env
        loop_ctx = replace(frame.ctx, loops=frame.ctx.loops + (kind,))
        body_frame = Frame(dict(entry), loop_ctx, frame.depth, frame.module_level, frame.fn)
        body_frame.self_name = frame.self_name
        run_body(body_frame)
        second = Frame(self._join_envs(entry, body_frame.env, None), loop_ctx, frame.depth,
                       frame.module_level, frame.fn)
        second.self_name = frame.self_name
        run_body(second)
        frame.returns.extend(body_frame.returns + second.returns)
        frame.env = self._join_envs(entry, second.env, None)
        if orelse is not None:
            self.exec_block(_block(orelse.body), frame)
        if frame.module_level:
            self.module_env = frame.env

    def _exec_for(self, node: cst.For, frame: Frame) -> None:
        self._stmt = node
        iterable = self.eval(node.iter, frame)
        elem = self.element_of(iterable)
        if iterable.kind is Kind.DATASET and iterable.node is not None and iterable.elem is None:
            # `for x, y in dataset:` yields what the program's own __getitem__ returns, uncollated
            elem = self._dataset_item(iterable, node, frame,
                                      Origin(ORIGIN_BATCH, node.iter, f"an item of `{code_of(node.iter)}`"))
        kind = "data" if self._is_data_iter(iterable) else ("epoch" if "range" in code_of(node.iter)[:6] else "other")

        def body(f: Frame) -> None:
            self.assign(node.target, elem, f, node)
            self.exec_block(_block(node.body), f)

        self._loop(frame, kind, body, node.orelse)

    def _exec_while(self, node: cst.While, frame: Frame) -> None:
        self._stmt = node
        self.eval(node.test, frame)

        def body(f: Frame) -> None:
            self.exec_block(_block(node.body), f)

        self._loop(frame, "other", body, node.orelse)

    def _exec_with(self, node: cst.With, frame: Frame) -> None:
        self._stmt = node
        changes: dict[str, bool] = {}
        for item in node.items:
            value = self.eval(item.item, frame)
            qual = value.qual if value.kind is Kind.REF else ""
            if isinstance(item.item, cst.Call):
                callee = self.eval(item.item.func, frame)
                qual = callee.qual if callee.kind is Kind.REF else ""
                if matches(qual, tk.NO_GRAD_CONTEXTS):
                    changes["no_grad"] = True
                if matches(qual, tk.DEFAULT_DEVICE_CONTEXTS) and value.kind is Kind.DEVICE and value.place.on_device:
                    changes["default_device"] = True
            if item.asname is not None:
                self.assign(item.asname.name, value if value.kind is not Kind.REF else UNKNOWN, frame, node)
        inner = Frame(frame.env, replace(frame.ctx, **changes) if changes else frame.ctx,
                      frame.depth, frame.module_level, frame.fn)
        inner.self_name = frame.self_name
        self.exec_block(_block(node.body), inner)
        frame.env = inner.env
        frame.returns.extend(inner.returns)

    def _exec_try(self, node: cst.Try, frame: Frame) -> None:
        entry = dict(frame.env)
        self.exec_block(_block(node.body), frame)
        envs = [frame.env]
        for handler in node.handlers:
            hf = Frame(self._join_envs(entry, frame.env, None), frame.ctx, frame.depth,
                       frame.module_level, frame.fn)
            hf.self_name = frame.self_name
            self.exec_block(_block(handler.body), hf)
            frame.returns.extend(hf.returns)
            if not _terminates(_block(handler.body)):
                envs.append(hf.env)
        if node.orelse is not None:
            self.exec_block(_block(node.orelse.body), frame)
            envs[0] = frame.env
        env = envs[0]
        for other in envs[1:]:
            env = self._join_envs(env, other, None)
        frame.env = env
        if node.finalbody is not None:
            self.exec_block(_block(node.finalbody.body), frame)
        if frame.module_level:
            self.module_env = frame.env

    def _exec_match(self, node: cst.CSTNode, frame: Frame) -> None:
        self.eval(node.subject, frame)  # type: ignore[attr-defined]
        envs = []
        for case in node.cases:  # type: ignore[attr-defined]
            cf = self._fork(frame)
            self.exec_block(_block(case.body), cf)
            envs.append(cf.env)
        env = frame.env
        for other in envs:
            env = self._join_envs(env, other, None)
        frame.env = env

    # ------------------------------------------------------------------ assignment
    def assign(self, target: cst.BaseExpression, value: Value, frame: Frame, stmt: cst.CSTNode) -> None:
        if isinstance(target, cst.Name):
            frame.env[target.value] = value.named(target.value)
            if frame.module_level:
                self.module_env = frame.env
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [el.value for el in target.elements]
            for index, el in enumerate(target.elements):
                if isinstance(el, cst.StarredElement):
                    self.assign(el.value, Value(Kind.LIST, value.place, elem=self.element_of(value)), frame, stmt)
                    continue
                self.assign(elements[index], self.item_of(value, index, code_of(elements[index])
                                                           if isinstance(elements[index], cst.Name) else ""),
                            frame, stmt)
        elif isinstance(target, cst.Attribute):
            owner = self.eval(target.value, frame)
            if owner.obj == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
                self._deep_module_assign(target, value, frame, stmt)
            self.set_attribute(owner, target.attr.value, value, frame, stmt, target)
        elif isinstance(target, cst.Subscript):
            owner = self.eval(target.value, frame)
            key = self._constant_key(target)
            if owner.kind is Kind.REF and owner.qual == "os.environ" and len(target.slice) == 1 \
                    and isinstance(target.slice[0].slice, cst.Index):
                self._env_write(stmt, "os.environ", [], {}, frame, target.slice[0].slice.value, value)
            if key is not None and owner.kind in (Kind.DICT, Kind.BATCH, Kind.ENCODING, Kind.LIST, Kind.OBJECT) \
                    and isinstance(target.value, cst.Name):
                frame.env[target.value.value] = owner.set_field(key, value)
            elif owner.kind is Kind.MODULE and owner.obj and owner.qual in tk.REGISTERING_CONTAINERS:
                # `model.layers[2] = nn.Linear(...)`: nn.ModuleList / Sequential / ModuleDict register it
                stored = self._registered_form(owner, code_of(target), value, frame, stmt)
                self.rebind(frame, owner.obj, owner.set_field(key if key is not None else f"<{code_of(target)}>",
                                                              stored))
            elif owner.obj == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
                self._deep_module_assign(target, value, frame, stmt)
        elif isinstance(target, cst.StarredElement):
            self.assign(target.value, UNKNOWN, frame, stmt)

    def _deep_module_assign(self, target: cst.BaseExpression, value: Value, frame: Frame,
                            stmt: cst.CSTNode) -> None:
        """`model.classifier[6] = nn.Linear(...)` / `model.head.fc = ...` into parts of a library
        model the analysis does not track: the new module still becomes a registered part of the
        root model, so a host module assigned after the root was moved is remembered on it."""
        if not (value.kind is Kind.MODULE or value.has("param")) or not value.place.on_host:
            return
        root = target
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if not isinstance(root, cst.Name) or root is target:
            return
        owner = self.lookup(root.value, frame)
        if owner.kind is not Kind.MODULE or not owner.obj or not owner.place.on_device:
            return
        path = code_of(target)
        stored = self._registered_form(owner, path.split(".", 1)[-1], value, frame, stmt)
        self.rebind(frame, owner.obj, owner.set_field(f"<{path}>", stored))

    def set_attribute(self, owner: Value, attr: str, value: Value, frame: Frame, stmt: cst.CSTNode,
                      target: cst.CSTNode) -> None:
        if owner.obj == 0 or owner.kind not in (Kind.MODULE, Kind.OBJECT, Kind.DATASET):
            return
        if owner.kind is Kind.MODULE:
            value = self._registered_form(owner, attr, value, frame, stmt)
        new_owner = owner.set_field(attr, value)
        self.rebind(frame, owner.obj, new_owner)

    def _registered_form(self, owner: Value, attr: str, value: Value, frame: Frame,
                         stmt: cst.CSTNode) -> Value:
        """What `module.attr = value` stores, by nn.Module.__setattr__'s rules."""
        in_init = frame.ctx.role == "init"
        existing = owner.get_field(attr)
        if value.kind is Kind.MODULE or value.has("param"):
            value = value.with_facts("registered")
            if not in_init and owner.place.on_device and value.place.on_host:
                value = replace(value, origin=Origin(ORIGIN_AFTER_MOVE, stmt,
                                                     f"`{code_of(stmt)}` after the model was moved",
                                                     attr))
            return value
        if value.kind is Kind.TENSOR:
            if existing is not None and existing.has("buffer"):
                return value.with_facts("registered", "buffer")
            if in_init and value.place.on_host and not value.is_zero_dim:
                return replace(value, origin=Origin(ORIGIN_ATTRIBUTE, stmt,
                                                    f"`self.{attr}`, a plain tensor attribute", f"self.{attr}"))
            return value
        if value.kind in CONTAINERS:
            return self._outside_tree(value, stmt, attr)
        return value

    def _outside_tree(self, value: Value, stmt: cst.CSTNode, attr: str) -> Value:
        """Modules kept in a plain list / dict / tuple attribute are not registered."""
        def mark(v: Value) -> Value:
            if v.kind is Kind.MODULE and v.place.on_host:
                # keep the construction node: it identifies the module if it is also registered
                # elsewhere (`nn.Sequential(*self.layers)`), see move_module
                made = v.origin.node if v.origin is not None and v.origin.node is not None else stmt
                return replace(v, origin=Origin(ORIGIN_OUTSIDE_TREE, made,
                                                f"a module in the plain container `self.{attr}`", f"self.{attr}"))
            if v.kind is Kind.TENSOR and v.place.on_host and not v.is_zero_dim and v.origin is not None \
                    and v.origin.category in (ORIGIN_FACTORY, ORIGIN_DATA):
                return replace(v, origin=Origin(ORIGIN_ATTRIBUTE, stmt,
                                                f"a tensor in the plain container `self.{attr}`", f"self.{attr}"))
            return v
        return replace(value,
                       fields=tuple((k, mark(v)) for k, v in value.fields),
                       elem=mark(value.elem) if value.elem is not None else None)

    def rebind(self, frame: Frame, obj: int, new: Value) -> None:
        """Replace every alias of the mutable object `obj` (in-place change) with `new`."""
        # hot (every `self.x = ...` rebinds the instance in every visible variable): leaves that
        # are not the object are passed over without a call, and nothing is rebuilt unless a
        # part changed
        def swap(v: Value, depth: int = 0) -> Value:
            if v.obj == obj:
                return new
            if depth > 3:
                return v
            fields = v.fields
            changed: list[tuple[object, Value]] | None = None
            for index, pair in enumerate(fields):
                f = pair[1]
                if f.obj != obj and not f.fields and f.elem is None:
                    continue
                nf = swap(f, depth + 1)
                if nf is not f:
                    if changed is None:
                        changed = list(fields)
                    changed[index] = (pair[0], nf)
            elem = v.elem
            if elem is not None and (elem.obj == obj or elem.fields or elem.elem is not None):
                elem = swap(elem, depth + 1)
            if changed is None and elem is v.elem:
                return v
            return v.evolve(fields=tuple(changed) if changed is not None else fields, elem=elem)

        reach = self._reach
        for env in (frame.env, self.module_env) if not frame.module_level else (frame.env,):
            updates = []
            for key, v in env.items():
                if v.obj != obj and not v.fields and v.elem is None:
                    continue
                if env is self.module_env and v.obj != obj:
                    # module-level values (a big `default_cfgs = {...}`) outlive many rebinds:
                    # remember which objects each one holds instead of walking it every time
                    known = reach.get(id(v))
                    if known is None or known[0] is not v:
                        if len(reach) > 4096:
                            reach.clear()
                        known = reach[id(v)] = (v, _objects_within(v))
                    if obj not in known[1]:
                        continue
                nv = swap(v)
                if nv is not v:
                    updates.append((key, nv))
            for key, nv in updates:
                env[key] = nv

    # ------------------------------------------------------------------ expressions
    def eval(self, node: cst.BaseExpression | None, frame: Frame, statement: bool = False) -> Value:
        if node is None:
            return NONE_VALUE
        if type(node) is cst.Call:  # not isinstance: libcst's ABCs make that slow on this hot path
            return self.eval_call(node, frame, statement)
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            return UNKNOWN
        return handler(self, node, frame)

    def _eval_name(self, node: cst.Name, frame: Frame) -> Value:
        return self.lookup(node.value, frame)

    def lookup(self, name: str, frame: Frame) -> Value:
        value = frame.env.get(name)
        if value is not None:
            return value
        if not frame.module_level:
            value = self.module_env.get(name)
            if value is not None:
                return value
        qual = self.imports.resolve(name)
        if qual is not None:
            return self.project_value(qual) or Value(Kind.REF, NO_TENSORS, qual=qual)
        if name in ("True", "False"):
            return SCALAR.with_facts(f"bool={name}")
        if name == "None":
            return NONE_VALUE
        if name in _BUILTINS:
            return Value(Kind.REF, NO_TENSORS, qual=f"builtins.{name}")
        if self.project is not None and not name.startswith("_"):
            for star in self._star_modules():  # `from utils import *`
                unit = self.project.unit(star)
                if unit is None or str(unit.path) == self._own_file:
                    continue
                self._load_unit(unit)
                if name in unit.env or (unit.interpreter is not None and unit.interpreter.imports.resolve(name)):
                    return self.project_value(f"{star}.{name}") or UNKNOWN
        return UNKNOWN

    def _star_modules(self) -> list[str]:
        """Project modules the current file imports with `*` (dotted names, relative ones resolved)."""
        key = id(self.module)
        cached = self._stars.get(key)
        if cached is None:
            cached = []
            for stmt in self.module.body:
                for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                    if isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar):
                        module = dotted(small.module) if small.module is not None else ""
                        if small.relative:
                            base = self.imports.package.split(".") if self.imports.package else []
                            base = base[: max(len(base) - (len(small.relative) - 1), 0)]
                            module = ".".join([p for p in base if p] + ([module] if module else []))
                        if module:
                            cached.append(module)
            self._stars[key] = cached
        return cached

    def _eval_attribute(self, node: cst.Attribute, frame: Frame) -> Value:
        owner = self.eval(node.value, frame)
        value = self.get_attribute(owner, node.attr.value, node, frame)
        if value.kind is Kind.UNKNOWN and owner.obj == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
            return self._deep_field(node, frame) or value
        return value

    def _deep_field(self, node: cst.CSTNode, frame: Frame) -> Value | None:
        """What `_deep_module_assign` stored for `model.classifier[6]` on the root model."""
        root = node
        while isinstance(root, (cst.Attribute, cst.Subscript)):
            root = root.value
        if not isinstance(root, cst.Name):
            return None
        owner = self.lookup(root.value, frame)
        if owner.kind is not Kind.MODULE or not any(isinstance(k, str) and k.startswith("<") for k, _ in owner.fields):
            return None
        return owner.get_field(f"<{code_of(node)}>")

    def get_attribute(self, owner: Value, attr: str, node: cst.CSTNode, frame: Frame) -> Value:
        if owner.kind is Kind.REF:
            qual = canonical(f"{owner.qual}.{attr}")
            if qual in tk.DTYPES:
                return Value(Kind.DTYPE, NO_TENSORS, qual=qual)
            return self.project_value(qual) or Value(Kind.REF, NO_TENSORS, qual=qual)
        field = owner.get_field(attr)
        if field is not None:
            if owner.kind is Kind.MODULE and field.has("registered") and owner.place.known \
                    and field.place.where is Where.UNKNOWN:
                return field.at(owner.place)
            if owner.kind is Kind.OBJECT and field.origin is not None and field.origin.category == ORIGIN_BATCH \
                    and not code_of(node).startswith(f"{frame.self_name or 'self'}."):
                return field.named(code_of(node))  # `batch.labels`, for messages
            return field
        if attr == "device" and owner.kind in (Kind.TENSOR, Kind.MODULE, Kind.ACCELERATOR, Kind.ENCODING, Kind.BATCH):
            if owner.place.on_device or owner.place.on_host or owner.place.where is Where.COND:
                return Value(Kind.DEVICE, owner.place)  # x.device names x's own device
            return Value(Kind.DEVICE, UNKNOWN_PLACE)
        if attr == "device" and owner.kind is Kind.UNKNOWN and not _of_setting_holder(node):
            # `embeddings.device` of a value we cannot see: it follows that value, wherever it is
            return Value(Kind.DEVICE, UNKNOWN_PLACE)
        if attr == "dtype":
            return Value(Kind.DTYPE, NO_TENSORS)
        if owner.kind is Kind.TENSOR:
            if attr in ("data", "T", "mT", "H", "grad", "real", "imag"):
                return owner
            if owner.origin is not None and owner.origin.description.startswith("the output of") \
                    and attr not in _NON_TENSOR_ATTRS:
                return Value(Kind.TENSOR, owner.place, owner.origin)  # a ModelOutput field
            return UNKNOWN
        if owner.kind in (Kind.BATCH, Kind.ENCODING):
            return self.item_of(owner, attr, attr)
        if owner.kind is Kind.MODULE:
            if attr in ("weight", "bias") and owner.place.known:
                return Value(Kind.TENSOR, owner.place, owner.origin, facts=frozenset({"param", "registered"}))
            info = self.classes.get(id(owner.node)) if owner.node is not None else None
            if info is not None and attr in info.class_attrs:
                value = self._class_attribute(info, attr, frame) or UNKNOWN
                if value.kind is Kind.MODULE and value.place.on_host:
                    return replace(value, origin=Origin(ORIGIN_OUTSIDE_TREE, info.class_attrs[attr],
                                                        f"`{attr}`, a module stored on the class", attr))
                return value
            if "module" in owner.facts and attr == "module":
                return owner.get_field("module") or UNKNOWN
            return UNKNOWN
        if owner.kind in (Kind.OBJECT, Kind.CLASS) and owner.node is not None and id(owner.node) in self.classes:
            value = self._class_attribute(self.classes[id(owner.node)], attr, frame)
            if value is not None:  # `CFG.device`, `cfg.device` of a config class
                return value
        if owner.kind is Kind.LOADER and attr == "dataset":
            return owner.get_field("dataset") or Value(Kind.DATASET, HOST)
        if owner.kind in (Kind.OBJECT, Kind.DATASET, Kind.CLASS) and owner.node is not None:
            return self._method_value(owner, attr)  # `collate_fn=train_set.collate`
        return UNKNOWN

    def _method_value(self, owner: Value, attr: str) -> Value:
        """A method of a program class taken as a value: bound to the instance (a staticmethod
        is not bound); properties and classmethods stay unknown."""
        info = self.classes.get(id(owner.node))
        method = self._find_method(info, attr) if info is not None else None
        if method is None:
            return UNKNOWN
        decorators = {(dotted(d.decorator) or "").rsplit(".", 1)[-1] for d in method[1].decorators}
        if decorators - {"staticmethod"}:
            return UNKNOWN
        bound = () if "staticmethod" in decorators or owner.kind is Kind.CLASS else ((0, owner),)
        return Value(Kind.FUNCTION, NO_TENSORS, qual=f"{method[0].name}.{attr}", node=method[1], fields=bound)

    def _class_attribute(self, info: ClassInfo, attr: str, frame: Frame) -> Value | None:
        """A class-level attribute (`device = "cuda"` in a config class, a dataclass default), found
        through the program's base classes and evaluated in the file that defines the class: its
        names are that file's globals, not the caller's. None when no class of the chain sets it."""
        seen = 0
        while info is not None and seen < 20:
            expr = info.class_attrs.get(attr)
            if expr is not None:
                if isinstance(expr, cst.Call) and (dotted(expr.func) or "").rsplit(".", 1)[-1] == "field":
                    # dataclasses.field(default=...) / field(default_factory=lambda: ...)
                    given = {a.keyword.value: a.value for a in expr.args if a.keyword is not None}
                    factory = given.get("default_factory")
                    expr = given.get("default") or (factory.body if isinstance(factory, cst.Lambda) else None)
                    if expr is None:
                        return UNKNOWN
                home = self._enter_home(info.node)
                try:
                    return self.eval(expr, Frame(dict(self.module_env), frame.ctx, frame.depth, True))
                finally:
                    if home is not None:
                        self.imports, self.module_env, self.module = home[:3]
            info = next((self.classes[id(b.node)] for b in info.bases
                         if b.kind is Kind.CLASS and b.node is not None and id(b.node) in self.classes), None)
            seen += 1
        return None

    def _eval_subscript(self, node: cst.Subscript, frame: Frame) -> Value:
        owner = self.eval(node.value, frame)
        for el in node.slice:
            if isinstance(el.slice, cst.Index):
                self.eval(el.slice.value, frame)
        if owner.kind is Kind.REF:
            return UNKNOWN  # typing subscripts such as list[int]
        key = self._constant_key(node)
        if key is not None and owner.obj == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
            stored = self._deep_field(node, frame)
            if stored is not None:
                return stored
        if key is not None:
            return self.item_of(owner, key, code_of(node))
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
            if owner.kind in (Kind.TENSOR, Kind.LIST, Kind.TUPLE, Kind.NDARRAY, Kind.STR):
                return replace(owner, fields=()) if owner.kind is not Kind.TENSOR else owner
        if owner.kind is Kind.TENSOR:
            return owner.with_facts(remove=("zero_dim",))
        return self.item_of(owner, None, code_of(node))

    @staticmethod
    def _constant_key(node: cst.Subscript) -> object | None:
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return None
        value = node.slice[0].slice.value
        text = _string_value(value)
        if text is not None:
            return text
        if isinstance(value, cst.Integer):
            try:
                return int(value.value, 0)
            except ValueError:
                return None
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) \
                and isinstance(value.expression, cst.Integer):
            return -int(value.expression.value, 0)
        return None

    def item_of(self, value: Value, key: object, text: str) -> Value:
        """`value[key]` / unpacking position `key` / attribute `key` of a batch."""
        if value.has("hf_dataset") or value.has("plot_axes"):  # `dataset["train"]`, `axes[0, 1]`
            return value
        if key is not None:
            field = value.get_field(key)
            if field is not None:
                if text and value.kind in (Kind.BATCH, Kind.ENCODING, Kind.OBJECT):
                    return field.named(text)  # `labels` / `batch["labels"]`, for messages
                return field
        if value.kind in (Kind.BATCH, Kind.ENCODING):
            if value.elem is not None:
                return value.elem.named(text) if key is not None else value.elem
            origin = value.origin
            if origin is not None and text:
                origin = replace(origin, name=text if isinstance(key, str) and not text.startswith(("batch", "data")) else text)
            return Value(Kind.TENSOR, value.place, origin, facts=value.facts & {"managed"})
        if value.kind in (Kind.LIST, Kind.TUPLE, Kind.DICT) and value.elem is not None:
            return value.elem
        if value.kind in (Kind.LIST, Kind.TUPLE, Kind.DICT) and key is None and value.fields:
            joined = None  # `d.values()`, `d[name]`, `lst[i]`: one of the known items
            for _, f in value.fields:
                joined = join(joined, f)
            return joined if joined is not None else UNKNOWN
        if value.kind is Kind.NDARRAY:
            return Value(Kind.NDARRAY, HOST)
        if value.kind is Kind.MODULE and value.qual in tk.REGISTERING_CONTAINERS and value.fields:
            return self._children(value)
        if value.kind is Kind.TENSOR:
            return value.with_facts(remove=("zero_dim",))
        return UNKNOWN

    def element_of(self, value: Value) -> Value:
        """What iterating over `value` yields."""
        if value.kind in (Kind.LOADER, Kind.DATASET):
            if value.elem is not None:
                return value.elem
            if value.kind is Kind.DATASET and value.node is not None:
                return Value(Kind.BATCH, UNKNOWN_PLACE)  # the program's own __getitem__ decides
            return Value(Kind.BATCH, HOST, Origin(ORIGIN_BATCH, None, "a batch"))
        if value.kind in (Kind.LIST, Kind.TUPLE):
            if value.elem is not None:
                return value.elem
            joined = None
            for _, f in value.fields:
                joined = join(joined, f)
            return joined if joined is not None else UNKNOWN
        if value.kind is Kind.DICT:
            return STR
        if value.kind is Kind.TENSOR:
            return value.with_facts(remove=("zero_dim",))
        if value.kind is Kind.BATCH:
            return self.item_of(value, None, "")
        if value.kind is Kind.MODULE and value.qual in tk.REGISTERING_CONTAINERS and value.fields:
            late = next((c for _, c in value.fields if c.place.on_host and c.origin is not None
                         and c.origin.category == ORIGIN_AFTER_MOVE), None)
            if late is not None and value.place.on_device:
                return late  # iterating visits every child, the one put in after the move too
            return self._children(value)
        return UNKNOWN

    def _children(self, container: Value) -> Value:
        """One child of an nn.ModuleList / Sequential, placed where the container is."""
        joined = None
        for _, child in container.fields:
            joined = join(joined, child)
        if joined is None:
            return UNKNOWN
        if joined.kind is Kind.UNKNOWN and container.place.known:
            return Value(Kind.MODULE, container.place)
        return joined

    def _is_data_iter(self, value: Value) -> bool:
        return value.kind in (Kind.LOADER, Kind.DATASET) or value.has("data_iter")

    def _eval_tuple(self, node: cst.Tuple | cst.List, frame: Frame) -> Value:
        kind = Kind.TUPLE if isinstance(node, cst.Tuple) else Kind.LIST
        fields = []
        for index, el in enumerate(node.elements):
            value = self.eval(el.value, frame)
            if isinstance(el, cst.StarredElement):
                return Value(kind, NO_TENSORS)
            fields.append((index, value))
        if not fields and kind is Kind.LIST:
            return Value(kind, NO_TENSORS, facts=frozenset({"empty"}))
        return Value(kind, self._container_place(v for _, v in fields), fields=tuple(fields))

    @staticmethod
    def _container_place(values: Iterable[Value]) -> Placement:
        place = NO_TENSORS
        for v in values:
            if v.kind in (Kind.TENSOR, Kind.MODULE) or v.kind in CONTAINERS:
                place = v.place if place.where is Where.NONE else join(Value(Kind.TENSOR, place), Value(Kind.TENSOR, v.place)).place
        return place

    def _eval_dict(self, node: cst.Dict, frame: Frame) -> Value:
        fields = []
        for el in node.elements:
            if isinstance(el, cst.DictElement):
                key = _string_value(el.key)
                value = self.eval(el.value, frame)
                if key is not None:
                    fields.append((key, value))
            else:
                self.eval(el.value, frame)
        return Value(Kind.DICT, self._container_place(v for _, v in fields), fields=tuple(fields))

    def _eval_comp(self, node: cst.BaseComp, frame: Frame) -> Value:
        inner = self._fork(frame)
        inner.module_level = False
        if not frame.module_level:
            inner.env = dict(frame.env)
        else:
            inner.env = {}
        for comp in self._comp_fors(node.for_in):
            iterable = self.eval(comp.iter, inner)
            self.assign(comp.target, self.element_of(iterable), inner, node)
            for cond in comp.ifs:
                self.eval(cond.test, inner)
        if isinstance(node, cst.DictComp):
            value = self.eval(node.value, inner)
            return Value(Kind.DICT, value.place if value.kind in (Kind.TENSOR, Kind.UNKNOWN) else NO_TENSORS,
                         elem=value)
        elt = self.eval(node.elt, inner)  # type: ignore[attr-defined]
        kind = Kind.LIST if not isinstance(node, cst.SetComp) else Kind.LIST
        return Value(kind, elt.place if elt.kind in (Kind.TENSOR, Kind.MODULE) else NO_TENSORS, elem=elt)

    @staticmethod
    def _comp_fors(comp: cst.CompFor) -> list[cst.CompFor]:
        out = []
        while comp is not None:
            out.append(comp)
            comp = comp.inner_for_in
        return out

    def _eval_string(self, node: cst.BaseExpression, frame: Frame) -> Value:
        text = _string_value(node)
        if text is None:
            prefix = _fstring_prefix(node)
            if prefix is not None and prefix.lower().startswith(("cuda", "mps", "xpu")):
                return Value(Kind.STR, device_at(code_of(node), node, self._fstring_ident(node, frame)),
                             facts=frozenset({"device_str"}))
            if isinstance(node, cst.FormattedString):
                for part in node.parts:
                    if isinstance(part, cst.FormattedStringExpression):
                        self.eval(part.expression, frame)
            return STR
        place = device_string_place(text, node)
        if place is not None:
            return Value(Kind.STR, place, facts=frozenset({"device_str"}))
        return STR

    def _eval_number(self, node: cst.BaseExpression, frame: Frame) -> Value:
        if isinstance(node, cst.Integer):  # a known int (num_workers=4) for the rules that need it
            known = _INT_LITERALS.get(node.value)
            if known is None:
                try:
                    known = SCALAR.with_facts(f"int={int(node.value, 0)}")
                except ValueError:
                    known = SCALAR
                if len(_INT_LITERALS) < 10_000:
                    _INT_LITERALS[node.value] = known
            return known
        return SCALAR

    def _eval_binary(self, node: cst.BinaryOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        return self.binary(node, left, right, code_of(node.operator), frame)

    def _eval_comparison(self, node: cst.Comparison, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        result = left
        for target in node.comparisons:
            right = self.eval(target.comparator, frame)
            if isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                result = SCALAR
                continue
            result = self.binary(node, left, right, code_of(target.operator), frame)
            left = right
        return result

    def _eval_unary(self, node: cst.UnaryOperation, frame: Frame) -> Value:
        value = self.eval(node.expression, frame)
        if isinstance(node.operator, cst.Not):
            return SCALAR
        if value.kind is Kind.SCALAR and value.facts:
            return SCALAR  # -4 is not the int 4
        return value

    def _eval_boolean(self, node: cst.BooleanOperation, frame: Frame) -> Value:
        left = self.eval(node.left, frame)
        right = self.eval(node.right, frame)
        if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
            return SCALAR
        if left.kind is Kind.NONE:
            return right
        return join(left, right)

    def _eval_ifexp(self, node: cst.IfExp, frame: Frame) -> Value:
        test_value = self.eval(node.test, frame)
        if test_value.has("cuda_available"):
            self.availability_conds.add(devices.norm(code_of(node.test)))
        body = self.eval(node.body, frame)
        orelse = self.eval(node.orelse, frame)
        if self._is_deviceish(body) or self._is_deviceish(orelse):
            places = [v.place for v in (body, orelse) if self._is_deviceish(v)]
            device = next((p for p in places if p.on_device), None)
            if device is not None:
                fallback = any(p.on_host for p in places) or orelse.kind is Kind.NONE
                if fallback or body.has("cpu_fallback") or orelse.has("cpu_fallback"):
                    # "cuda" if ... else "mps" if ... else "cpu": a GPU of some kind, or the CPU
                    inner = {devices.split(p.ident)[0] for p in places if p.on_device}
                    if len(inner) > 1:
                        device = replace(device, ident="")
                    fallback = True
                if fallback:
                    test = "torch.cuda.is_available()" if test_value.has("cuda_available") else code_of(node.test)
                    if not (self._is_deviceish(body) and body.place.on_device):
                        test = f"not ({test})"
                    device = replace(device, ident=devices.with_fallback(device.ident, test))
                    self.emit(Made(node, self.ctx(frame), "cpu_fallback", "", Value(Kind.DEVICE, device),
                                   text=code_of(node)))
                elif len({p.ident for p in places}) > 1:
                    device = replace(device, ident="")  # one of two devices: which one is not known
                return Value(Kind.DEVICE, device, facts=frozenset({"cpu_fallback"} if fallback else ()))
        return join(body, orelse)

    def _fstring_ident(self, node: cst.BaseExpression, frame: Frame) -> str:
        """Identity of `f"cuda:{rank}"`: a literal index when the expression is a known int."""
        if not isinstance(node, cst.FormattedString):
            return ""
        text, exprs = "", []
        for part in node.parts:
            if isinstance(part, cst.FormattedStringText):
                text += part.value
            elif isinstance(part, cst.FormattedStringExpression):
                exprs.append((part.expression, self.eval(part.expression, frame)))
                text += "{}"
        m = re.fullmatch(r"([a-z]+):\{\}", text.lower())
        if m is None or len(exprs) != 1 or m.group(1) not in devices.GPU_TYPES:
            return devices.from_string(text) if not exprs else devices.opaque(code_of(node))
        expr, value = exprs[0]
        return devices.indexed(m.group(1), self._int_of(value), code_of(expr))

    @staticmethod
    def _int_of(value: Value | None) -> int | None:
        """The literal int a value is known to hold (`int=N` fact), if any."""
        if value is None:
            return None
        for fact in value.facts:
            if fact.startswith("int="):
                try:
                    return int(fact[4:])
                except ValueError:
                    return None
        return None

    @staticmethod
    def _is_deviceish(value: Value) -> bool:
        return value.kind is Kind.DEVICE or value.has("device_str")

    def _eval_lambda(self, node: cst.Lambda, frame: Frame) -> Value:
        return Value(Kind.FUNCTION, NO_TENSORS, qual="<lambda>", node=node)

    def _eval_await(self, node: cst.Await, frame: Frame) -> Value:
        self.eval(node.expression, frame)
        return UNKNOWN

    def _eval_walrus(self, node: cst.NamedExpr, frame: Frame) -> Value:
        value = self.eval(node.value, frame)
        self.assign(node.target, value, frame, node)
        return value

    def _eval_starred(self, node: cst.StarredElement, frame: Frame) -> Value:
        return self.eval(node.value, frame)

    # ------------------------------------------------------------------ operations
    def binary(self, node: cst.CSTNode, left: Value, right: Value, op: str, frame: Frame) -> Value:
        if left.kind is Kind.STR or right.kind is Kind.STR:
            return STR if left.kind is Kind.STR and right.kind is Kind.STR else UNKNOWN
        if left.kind is Kind.LIST and right.kind is Kind.LIST:
            return Value(Kind.LIST, NO_TENSORS, elem=join(self.element_of(left), self.element_of(right)))
        tensors = [v for v in (left, right) if self._is_tensor_operand(v)]
        if not tensors:
            if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
                return SCALAR
            if left.kind is Kind.NDARRAY or right.kind is Kind.NDARRAY:
                return self._host_consumer(node, [left, right], f"a NumPy operation `{op}`", frame,
                                           result=Value(Kind.NDARRAY, HOST))
            return UNKNOWN
        self.meet(node, tensors, f"`{op}`", frame)
        if left.kind is Kind.NDARRAY or right.kind is Kind.NDARRAY:
            self._host_consumer(node, [left, right], f"a NumPy operation `{op}`", frame)
        return self.tensor_result(tensors, zero_dim=all(t.is_zero_dim for t in tensors))

    @staticmethod
    def _is_tensor_operand(value: Value) -> bool:
        if value.kind in TENSORISH:
            return True
        return value.kind is Kind.UNKNOWN and value.place.where in (Where.DEVICE, Where.HOST, Where.COND)

    def tensor_result(self, operands: list[Value], zero_dim: bool = False) -> Value:
        """The placement of an operation's result: the device wins (the op ran there)."""
        device = next((v for v in operands if v.place.on_device), None)
        if device is not None:
            return Value(Kind.TENSOR, device.place, device.origin)
        known = [v for v in operands if v.place.known]
        if len(known) == len(operands) and operands:
            cond = next((v for v in operands if v.place.where is Where.COND), None)
            base = cond if cond is not None else next((v for v in operands if not v.is_zero_dim), operands[0])
            value = Value(Kind.TENSOR, base.place, base.origin)
            return value.with_facts("zero_dim") if zero_dim else value
        return Value(Kind.TENSOR, UNKNOWN_PLACE)

    def meet(self, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame,
             skip_host_modules: bool = False) -> bool:
        """Record host values meeting device values among `operands`; True if any did."""
        device = next((v for v in operands if v.place.on_device and not v.has("scatters")), None)
        cond_device = next((v for v in operands if v.place.where is Where.COND), None)
        found = False
        for value in operands:
            if value.is_zero_dim or value.has("managed"):
                continue
            if skip_host_modules and value.kind is Kind.MODULE:
                continue
            if value.place.on_host and device is not None:
                self.emit(Meet(node, self.ctx(frame), value, device, operation))
                found = True
            elif value.place.on_host and cond_device is not None:
                self.emit(Meet(node, self.ctx(frame), value, cond_device, operation, likely=True))
                found = True
            elif value.place.where is Where.COND and device is not None and value is not device:
                if devices.falls_back_when_no_gpu(devices.effective(value.place, self.availability_conds)) \
                        and devices.effective(value.place, self.availability_conds) \
                        == devices.effective(device.place, self.availability_conds):
                    continue  # both on the GPU when one is available, both on the CPU otherwise
                self.emit(Meet(node, self.ctx(frame), value, device, operation, likely=True))
                found = True
        self._device_meet(node, operands, operation, frame)
        return found

    def _device_meet(self, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame) -> None:
        """Two operands placed by device expressions of different identities (DEV111 judges them)."""
        # a value on a device only under a user's condition is on the host on the other path:
        # that is a host-device meet (Meet, likely), not a choice between two devices
        placed = [v for v in operands if v.place.ident and not v.is_zero_dim and not v.has("managed")
                  and not v.has("scatters") and (v.place.on_device or v.place.where is Where.COND
                                                 and devices.falls_back_when_no_gpu(
                                                     devices.effective(v.place, self.availability_conds)))]
        for index, first in enumerate(placed):
            second = next((v for v in placed[index + 1:]
                           if devices.effective(v.place, self.availability_conds)
                           != devices.effective(first.place, self.availability_conds)), None)
            if second is not None:
                self.emit(DeviceMeet(node, self.ctx(frame), first, second, operation))
                return

    # ------------------------------------------------------------------ calls
    def eval_call(self, node: cst.Call, frame: Frame, statement: bool = False) -> Value:
        args: list[Value] = []
        kwargs: dict[str, Value] = {}
        for arg in node.args:
            value = self.eval(arg.value, frame)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = value
            elif arg.star == "**":
                kwargs["**"] = value
            elif arg.star == "*":
                kwargs["*"] = value
            else:
                args.append(value)
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) \
                and isinstance(func.value.func, cst.Name) and func.value.func.value == "super":
            inherited = self._call_super(func.attr.value, node, args, kwargs, frame)
            if inherited is not None:
                return inherited
        if isinstance(func, cst.Attribute):
            receiver = self.eval(func.value, frame)
            name = func.attr.value
            if receiver.kind is Kind.REF:
                qual = canonical(f"{receiver.qual}.{name}")
                own = self.project_value(qual)  # `m.Net()` after `import pkg.models as m`
                if own is not None and own.kind is not Kind.REF:
                    return self.call_value(own, node, args, kwargs, frame)
                return self.call_ref(qual, node, args, kwargs, frame)
            if receiver.kind is Kind.CLASS and receiver.node is not None and id(receiver.node) in self.classes:
                found = self._find_method(self.classes[id(receiver.node)], name)
                if found is not None:  # `GPT.from_pretrained(...)`, `Config.load(path)`, `Base.forward(self, x)`
                    classmethod = any((dotted(d.decorator) or "") == "classmethod" for d in found[1].decorators)
                    return self.call_function(found[1], [receiver] + args if classmethod else args, kwargs, node,
                                              frame, class_info=found[0], is_method=classmethod)
            return self.call_method(receiver, name, node, args, kwargs, frame, statement)
        callee = self.eval(func, frame)
        return self.call_value(callee, node, args, kwargs, frame)

    def call_value(self, callee: Value, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                   frame: Frame) -> Value:
        if callee.kind is Kind.REF:
            return self.call_ref(callee.qual, node, args, kwargs, frame)
        if callee.kind is Kind.FUNCTION and callee.node is not None:
            bound, bound_kw = self._bound_args(callee)
            return self.call_function(callee.node, bound + args, {**bound_kw, **kwargs}, node, frame)
        if callee.kind is Kind.CLASS and callee.node is not None and id(callee.node) in self.classes:
            return self.instantiate(self.classes[id(callee.node)], args, kwargs, node, frame)
        if callee.kind is Kind.MODULE:
            return self.call_module(callee, node, args, kwargs, frame)
        if callee.kind is Kind.TOKENIZER:
            return self._tokenizer_output(node, kwargs, "__call__")
        if callee.kind is Kind.OBJECT and callee.node is not None:
            info = self.classes.get(id(callee.node))
            if info is not None and "__call__" in info.methods:
                return self.call_function(info.methods["__call__"], [callee] + args, kwargs, node, frame,
                                          class_info=info, is_method=True)
        return UNKNOWN

    # --- knowledge-driven calls --------------------------------------------------------
    def call_ref(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                 frame: Frame) -> Value:
        qual = canonical(qual)
        if qual.startswith("builtins."):
            return self._call_builtin(qual[9:], node, args, kwargs, frame)
        if matches(qual, lib.HF_DATASETS):  # its rows may be formatted onto a device anywhere: unknown
            return Value(Kind.UNKNOWN, UNKNOWN_PLACE, facts=frozenset({"hf_dataset"}))
        if qual in self.move_helpers and args:
            return self.move_value(node, args[0], device_at("device", node), "to", frame, False)
        if qual in self.device_helpers:
            return Value(Kind.DEVICE, device_at(code_of(node.func), node, devices.opaque(code_of(node))))
        if matches(qual, tk.CUDA_AVAILABLE):
            self.emit(Made(node, self.ctx(frame), "cuda_query", qual, SCALAR))
            return SCALAR.with_facts("cuda_available") if qual == "torch.cuda.is_available" else SCALAR
        if qual.endswith(".set_start_method"):  # multiprocessing start method (DEV110 reads it)
            self.emit(Made(node, self.ctx(frame), "start_method", qual, args[0] if args else UNKNOWN,
                           tuple([(None, a) for a in args] + list(kwargs.items())), text=code_of(node)))
            return NONE_VALUE
        if qual in lib.ENV_WRITERS:
            self._env_write(node, qual, args, kwargs, frame)
            return STR if qual == "os.environ.setdefault" else NONE_VALUE
        if qual in tk.PROCESS_GROUP_INIT:
            self.emit(Made(node, self.ctx(frame), "process_group", qual, UNKNOWN,
                           tuple([(None, a) for a in args] + list(kwargs.items())), text=code_of(node)))
            return NONE_VALUE
        if qual.startswith("torch.cuda."):
            self.emit(Made(node, self.ctx(frame), "cuda", qual, UNKNOWN,
                           tuple([(None, a) for a in args] + list(kwargs.items())), text=code_of(node)))
            if qual == "torch.cuda.empty_cache":
                self.emit(Made(node, self.ctx(frame), "empty_cache", qual, UNKNOWN))
            if qual == "torch.cuda.current_device":
                return Value(Kind.DEVICE, device_at("cuda", node, "cuda"))
            return UNKNOWN
        if qual in tk.DEVICE_CONSTRUCTORS:
            return self._device_value(node, args, kwargs)
        if qual in tk.SET_DEFAULT_DEVICE:
            target = self._device_arg(node, args, kwargs, positional=0)
            if target is not None and target.on_device:
                self.device_in_play = True
                self.default_device = True
                self.emit(Made(node, self.ctx(frame), "default_device", qual, UNKNOWN))
            elif target is not None and target.on_host:
                self.default_device = False
            return NONE_VALUE
        if qual in tk.LIKE_FACTORIES:
            source = args[0] if args else UNKNOWN
            place = self._device_arg(node, [], kwargs, positional=None) or source.place
            return Value(Kind.TENSOR, place, source.origin)
        if qual in tk.FACTORIES or qual in tk.HOST_ONLY_FACTORIES:
            return self._factory(qual, node, args, kwargs, frame)
        if qual in tk.PARAMETER:
            source = args[0] if args else kwargs.get("data", UNKNOWN)
            return Value(Kind.TENSOR, source.place, source.origin, facts=frozenset({"param"}))
        if qual in tk.CHECKPOINT_LOADERS:
            place = self._device_arg(node, [], {"device": kwargs["map_location"]} if "map_location" in kwargs else {},
                                     positional=None)
            self.emit(Made(node, self.ctx(frame), "load", qual, UNKNOWN,
                           tuple([(None, a) for a in args] + list(kwargs.items())), text=code_of(node)))
            return Value(Kind.UNKNOWN, place or UNKNOWN_PLACE)
        if qual in lib.ARGUMENT_PARSERS:
            return Value(Kind.OBJECT, NO_TENSORS, obj=new_obj_id(), facts=frozenset({"argparser"}))
        if matches(qual, lib.ACCELERATORS):
            return Value(Kind.ACCELERATOR, device_at("accelerator.device", node, "=accelerator.device"),
                         obj=new_obj_id())
        if matches(qual, lib.MANAGING_TRAINERS):
            self._hand_to_framework(list(args) + list(kwargs.values()), frame)
            return Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({"managed"}))
        if matches(qual, tk.LOADERS):
            return self._loader(node, args, kwargs, frame)
        if matches(qual, tk.DATASETS):
            return self._library_dataset(qual, node, args, kwargs)
        if matches(qual, lib.TOKENIZERS):
            return Value(Kind.TOKENIZER, NO_TENSORS, obj=new_obj_id())
        if matches(qual, tk.OPTIMIZERS) and not matches(qual, tk.NOT_OPTIMIZERS) and qual.rsplit(".", 1)[-1][:1].isupper():
            value = Value(Kind.OPTIMIZER, NO_TENSORS, qual=qual, obj=new_obj_id())
            self.emit(Made(node, self.ctx(frame), "optimizer", qual, value,
                           tuple([(None, a) for a in args] + list(kwargs.items()))))
            return value
        if matches(qual, lib.MODEL_CONSTRUCTORS):
            return self._model_constructor(qual, node, args, kwargs, frame)
        if qual in lib.PLACING_CONSTRUCTORS:
            place = self._device_arg(node, [], kwargs, positional=None)
            return Value(Kind.MODULE, place or UNKNOWN_PLACE, obj=new_obj_id())
        if matches(qual, tk.PASS_THROUGH_ITERABLES) or qual.endswith(".tqdm"):
            return args[0] if args else UNKNOWN
        if matches(qual, tk.SCATTERING_WRAPPERS) or (qual in tk.DDP_WRAPPERS and ("device_ids" in kwargs or len(args) > 1)):
            inner = args[0] if args else kwargs.get("module", UNKNOWN)
            value = replace(inner, facts=inner.facts | {"scatters"}, obj=new_obj_id(),
                            fields=(("module", inner),), qual=qual)
            self.emit(Made(node, self.ctx(frame), "dataparallel", qual, value,
                           tuple([(None, a) for a in args] + list(kwargs.items())), text=code_of(node)))
            return value
        if matches(qual, tk.WRAPPERS):
            inner = args[0] if args else kwargs.get("module", UNKNOWN)
            if qual.endswith("DistributedDataParallel") and inner.kind is Kind.MODULE \
                    and ("device_ids" in kwargs or len(args) > 1):
                return inner.with_facts("scatters")  # DDP moves its inputs to device_ids[0] itself
            return inner
        if qual.startswith("torch.nn.") and qual.count(".") == 2 and qual[9:10].isupper():
            return self._nn_module(qual, node, args, kwargs, frame)
        if qual == "copy.deepcopy" and args:
            return replace(args[0], obj=new_obj_id() if args[0].obj else 0)
        if qual == "functools.partial" and args:
            fn = args[0]
            if fn.kind is Kind.FUNCTION:
                bound, bound_kw = self._bound_args(fn)
                positional = tuple(enumerate(bound + list(args[1:])))
                keywords = {**bound_kw, **{k: v for k, v in kwargs.items() if not k.startswith("*")}}
                return replace(fn, fields=positional + tuple((f"kw:{k}", v) for k, v in keywords.items()))
            return UNKNOWN
        if qual in lib.NUMPY_ARRAY_MAKERS or matches(qual, lib.HOST_ONLY_CALLS):
            is_array_maker = qual in lib.NUMPY_ARRAY_MAKERS
            if not matches(qual, lib.HOST_ONLY_EXCEPTIONS):
                self._host_consumer(node, list(args) + list(kwargs.values()), f"`{qual}`", frame)
            if qual in lib.AXES_MAKERS:
                return self._axes(qual)
            return Value(Kind.NDARRAY, HOST) if is_array_maker or qual.startswith("numpy.") else UNKNOWN
        if qual.startswith("torch.") and not matches(qual, tk.NON_MIXING_FUNCTIONS):
            return self._torch_function(qual, node, args, kwargs, frame)
        return UNKNOWN

    def _env_write(self, node: cst.CSTNode, qual: str, args: list[Value], kwargs: dict[str, Value],
                   frame: Frame, key_node: cst.BaseExpression | None = None, value: Value = UNKNOWN) -> None:
        """Record an environment write (`os.environ[k] = v`, `.update`, `.setdefault`, `os.putenv`)
        as Made("env"): its args are (key, value) pairs, a key "" when it is not a literal."""
        pairs: list[tuple[str | None, Value]] = []
        if key_node is not None:
            pairs.append((_string_value(key_node) or "", value))
        elif qual == "os.environ.update":
            call_args = [a for a in node.args if a.keyword is None] if isinstance(node, cst.Call) else []
            if call_args and isinstance(call_args[0].value, cst.Dict):
                for el in call_args[0].value.elements:
                    if isinstance(el, cst.DictElement):
                        pairs.append((_string_value(el.key) or "", UNKNOWN))
            elif call_args:
                pairs.append(("", UNKNOWN))
            pairs.extend((k, v) for k, v in kwargs.items() if not k.startswith("*"))
        elif isinstance(node, cst.Call) and node.args:
            first = node.args[0].value
            pairs.append((_string_value(first) or "", args[1] if len(args) > 1 else UNKNOWN))
        if pairs:
            self.emit(Made(node, self.ctx(frame), "env", qual, value, tuple(pairs), text=code_of(node)))

    @staticmethod
    def _bound_args(fn: Value) -> tuple[list[Value], dict[str, Value]]:
        """The arguments a `functools.partial` bound: positional (int keys), keyword ("kw:" keys)."""
        positional = [v for k, v in fn.fields if isinstance(k, int)]
        keywords = {k[3:]: v for k, v in fn.fields if isinstance(k, str) and k.startswith("kw:")}
        return positional, keywords

    def _call_builtin(self, name: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                      frame: Frame) -> Value:
        if name == "enumerate" and args:
            elem = self.element_of(args[0])
            facts = frozenset({"data_iter"}) if self._is_data_iter(args[0]) else frozenset()
            return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS, fields=((0, SCALAR), (1, elem))),
                         facts=facts)
        if name == "zip" and args:
            fields = tuple((i, self.element_of(a)) for i, a in enumerate(args))
            facts = frozenset({"data_iter"}) if any(self._is_data_iter(a) for a in args) else frozenset()
            return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS, fields=fields), facts=facts)
        if name in ("iter", "reversed", "sorted") and args:
            return args[0]
        if name == "next" and args:
            if args[0].has("param_iter") and args[0].place.known:  # next(model.parameters())
                return Value(Kind.TENSOR, args[0].place, facts=frozenset({"param"}))
            return self.element_of(args[0])
        if name in ("list", "tuple") and args:
            source = args[0]
            if source.kind in (Kind.LIST, Kind.TUPLE) and source.kind.name.lower() == name:
                return source
            return Value(Kind.LIST if name == "list" else Kind.TUPLE, NO_TENSORS, elem=self.element_of(source))
        if name == "dict":
            if args and args[0].kind is Kind.DICT:
                return args[0]
            return Value(Kind.DICT, NO_TENSORS, fields=tuple((k, v) for k, v in kwargs.items() if not k.startswith("*")))
        if name in ("len", "int", "float", "bool", "abs", "round", "isinstance", "hasattr", "callable", "id", "hash"):
            return SCALAR
        if name in ("str", "repr", "format", "input"):
            return STR
        if name == "range":
            return Value(Kind.LIST, NO_TENSORS, elem=SCALAR)
        if name in ("print",):
            return NONE_VALUE
        if name == "getattr" and len(args) >= 2 and isinstance(node.args[1].value, cst.SimpleString):
            attr = _string_value(node.args[1].value)
            if attr:
                return self.get_attribute(args[0], attr, node, frame)
        if name == "setattr" and len(args) >= 3 and isinstance(node.args[1].value, (cst.SimpleString, cst.FormattedString, cst.Name)):
            attr = _string_value(node.args[1].value) or "<dynamic>"
            self.set_attribute(args[0], attr, args[2], frame, self._stmt or node, node)
            return NONE_VALUE
        if name in ("sum", "max", "min") and args:
            # max(a, b) of Python numbers is a number; of a list or tensors it is not known here
            return SCALAR if len(args) > 1 and all(a.kind is Kind.SCALAR for a in args) else UNKNOWN
        return UNKNOWN

    def _device_value(self, node: cst.Call, args: list[Value], kwargs: dict[str, Value]) -> Value:
        place = self._device_arg(node, args, kwargs, positional=0, keyword="type")
        if place is None:
            return Value(Kind.DEVICE, UNKNOWN_PLACE)
        fallback = args and args[0].has("cpu_fallback")
        index = args[1] if len(args) > 1 else kwargs.get("index")
        if index is not None and place.on_device and place.ident in devices.GPU_TYPES:
            index_node = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "index"),
                              node.args[1].value if len(node.args) > 1 else None)
            ident = devices.indexed(place.ident, self._int_of(index),
                                    code_of(index_node) if index_node is not None else "")
            place = replace(place, device=code_of(node), ident=ident)
        return Value(Kind.DEVICE, place, facts=frozenset({"cpu_fallback"} if fallback else ()))

    def _device_arg(self, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                    positional: int | None = 0, keyword: str = "device") -> Placement | None:
        """The placement a `device=` (or positional device) argument names; None if absent."""
        value = kwargs.get(keyword)
        arg_node = None
        if value is None and keyword != "device":
            value = kwargs.get("device")
        if value is None and positional is not None and len(args) > positional:
            value = args[positional]
            positional_args = [a for a in node.args if a.keyword is None]
            arg_node = positional_args[positional].value if len(positional_args) > positional else None
        else:
            arg_node = next((a.value for a in node.args if a.keyword is not None
                             and a.keyword.value in (keyword, "device")), None)
        if value is None:
            return None
        return self._place_of_device_value(value, arg_node)

    def _place_of_device_value(self, value: Value, arg_node: cst.CSTNode | None) -> Placement | None:
        text = code_of(arg_node) if arg_node is not None else "device"
        if value.kind is Kind.DEVICE or value.has("device_str"):
            if value.place.on_device:
                self.device_in_play = True
                return replace(value.place, device=value.place.device if value.kind is Kind.STR else text,
                               node=arg_node or value.place.node)
            # `x.device` of a value we know nothing about: a device, but maybe the CPU one
            return value.place if value.place.known else UNKNOWN_PLACE
        if value.kind in (Kind.TENSOR, Kind.MODULE):
            return value.place if value.place.known else None
        if value.kind is Kind.DTYPE:
            return None
        if value.kind is Kind.SCALAR:
            self.device_in_play = True
            return device_at(f"cuda:{text}", arg_node, devices.indexed("cuda", self._int_of(value), text))
        if value.kind is Kind.NONE:
            # `device=None`: mostly a parameter's default meaning "follow the input"; not evidence
            return UNKNOWN_PLACE
        if isinstance(arg_node, cst.Attribute) and arg_node.attr.value == "device" \
                and not _of_setting_holder(arg_node):
            # `t.device` of a tensor we cannot see follows that tensor, wherever it is; `args.device`
            # or `self.device` is the program's chosen device
            return UNKNOWN_PLACE
        if value.kind in (Kind.UNKNOWN, Kind.STR) and "dtype" not in text and "type" not in text.rsplit(".", 1)[-1]:
            if value.kind is Kind.STR and not value.has("device_str"):
                return None
            self.device_in_play = True
            return device_at(text, arg_node, devices.opaque(text))
        return None

    def _factory(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                 frame: Frame) -> Value:
        place = self._device_arg(node, [], kwargs, positional=None)
        name = qual.rsplit(".", 1)[-1]
        # torch.tensor(<a Python number>) is 0-dim, and PyTorch lets a 0-dim CPU tensor meet device
        # tensors; only data that is visibly a sequence (a list, a tuple, an array) has dimensions
        first = args[0] if args else None
        zero_dim = name in ("tensor", "as_tensor") and first is not None and bool(node.args) \
            and not node.args[0].star and (first.kind is Kind.SCALAR
                                           or first.kind is Kind.UNKNOWN and _is_number_expression(node.args[0].value))
        if place is not None and place.known:
            value = Value(Kind.TENSOR, place, Origin(ORIGIN_FACTORY, node, f"`{code_of(node)}`"))
        elif frame.ctx.default_device or self.default_device:
            # factories follow the default device; from_numpy & the legacy constructors: not known
            value = Value(Kind.TENSOR, device_at("the default device", node) if qual not in tk.HOST_ONLY_FACTORIES
                          else UNKNOWN_PLACE)
        elif place is None and name in ("tensor", "as_tensor") and args and args[0].kind is Kind.TENSOR:
            value = Value(Kind.TENSOR, args[0].place, args[0].origin)
        elif place is None:
            # `torch.tensor(rows)` wraps host data (DEV101 where it meets the device); made inside
            # forward it is a factory that forgot `device=` (DEV105), like torch.zeros anywhere
            category = ORIGIN_FACTORY
            if qual in tk.DATA_FACTORIES and (frame.ctx.role != "forward" or qual in tk.HOST_ONLY_FACTORIES):
                category = ORIGIN_DATA
            value = Value(Kind.TENSOR, HOST, Origin(category, node, f"`{code_of(node.func)}(...)`"))
        else:
            value = Value(Kind.TENSOR, UNKNOWN_PLACE)
        if zero_dim:
            value = value.with_facts("zero_dim")
        self.emit(Made(node, self.ctx(frame), "factory", qual, value, tuple(kwargs.items()), text=code_of(node)))
        return value

    def _module_origin(self, node: cst.CSTNode, frame: Frame, what: str) -> Origin:
        if frame.ctx.role == "forward":
            return Origin(ORIGIN_OUTSIDE_TREE, node,
                          f"{what}, built inside `forward` (fresh CPU weights on every call)")
        return Origin(ORIGIN_MODULE, node, what)

    def _nn_module(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                   frame: Frame) -> Value:
        name = qual.rsplit(".", 1)[-1]
        origin = self._module_origin(node, frame, f"`{code_of(node.func)}(...)`")
        if name in tk.STATELESS_MODULES:
            return Value(Kind.MODULE, NO_TENSORS, origin, obj=new_obj_id(), qual=qual)
        if name in tk.LOSS_WEIGHT_ARGS or name.endswith("Loss"):
            weights = []
            for keyword, position in tk.LOSS_WEIGHT_ARGS.get(name, ()):
                value = kwargs.get(keyword)
                if value is None and len(args) > position:
                    value = args[position]
                if value is not None and value.kind is not Kind.NONE:
                    weights.append(value)
            if not weights:
                return Value(Kind.MODULE, NO_TENSORS, origin, obj=new_obj_id(), qual=qual)
            place = weights[0].place if all(w.place == weights[0].place for w in weights) else UNKNOWN_PLACE
            if any(w.kind not in (Kind.TENSOR,) for w in weights):
                place = UNKNOWN_PLACE if not any(w.place.known for w in weights) else place
            origin = self._module_origin(node, frame, f"`{code_of(node.func)}` with a weight tensor")
            return Value(Kind.MODULE, place, origin, obj=new_obj_id(), qual=qual, facts=frozenset({"loss_weight"}))
        if qual in tk.REGISTERING_CONTAINERS:
            children: list[tuple[object, Value]] = []
            starred = [kwargs["*"]] if "*" in kwargs else []  # nn.Sequential(*layers)
            for value in list(args) + starred + [v for k, v in kwargs.items() if not k.startswith("*")]:
                if value.kind in CONTAINERS or value.has("registering"):
                    children.extend(value.fields)
                    if value.elem is not None:
                        children.append((len(children), value.elem))
                elif value.kind is Kind.MODULE and value.qual in tk.REGISTERING_CONTAINERS:
                    children.extend(value.fields)
                else:
                    children.append((len(children), value))
            place = NO_TENSORS
            for _, child in children:
                if child.kind is Kind.MODULE or child.has("param"):
                    if child.place.where is Where.NONE:
                        continue
                    place = child.place if place.where is Where.NONE else join(
                        Value(Kind.MODULE, place), Value(Kind.MODULE, child.place)).place
                elif child.kind is not Kind.MODULE:
                    place = UNKNOWN_PLACE if place.where is Where.NONE else place
            fields = tuple((k, c.with_facts("registered")) for k, c in children)
            return Value(Kind.MODULE, place, origin, obj=new_obj_id(), qual=qual, fields=fields)
        if "device" in kwargs or "**" in kwargs:  # `nn.LayerNorm(n, device=device)`: built in place
            place = self._device_arg(node, [], kwargs, positional=None) if "device" in kwargs else None
            return Value(Kind.MODULE, place if place is not None else UNKNOWN_PLACE, origin, obj=new_obj_id(),
                         qual=qual)
        if frame.ctx.default_device or self.default_device:  # parameters made on the default device
            return Value(Kind.MODULE, device_at("the default device", node), origin, obj=new_obj_id(), qual=qual)
        return Value(Kind.MODULE, HOST, origin, obj=new_obj_id(), qual=qual)

    def _model_constructor(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                           frame: Frame) -> Value:
        origin = self._module_origin(node, frame, f"`{code_of(node.func)}(...)`")
        if matches(qual, lib.MODEL_WRAPPERS):  # adapters are built where the base model's weights are
            if args and args[0].kind is Kind.MODULE:
                base = args[0]
                return replace(base, qual=qual, origin=replace(base.origin, name="") if base.origin else None)
            return Value(Kind.MODULE, UNKNOWN_PLACE, origin, obj=new_obj_id(), qual=qual)
        dispatched = self._dispatched_place(node, kwargs)
        if dispatched is not None:
            place, facts = dispatched
            return Value(Kind.MODULE, place, origin, obj=new_obj_id(), qual=qual, facts=facts)
        if "device" in kwargs:
            place = self._device_arg(node, [], kwargs, positional=None)
            return Value(Kind.MODULE, place or UNKNOWN_PLACE, origin, obj=new_obj_id(), qual=qual)
        if frame.ctx.default_device or self.default_device:
            return Value(Kind.MODULE, UNKNOWN_PLACE, origin, obj=new_obj_id(), qual=qual)
        return Value(Kind.MODULE, HOST, origin, obj=new_obj_id(), qual=qual)

    def _dispatched_place(self, node: cst.Call, kwargs: dict[str, Value]) -> tuple[Placement, frozenset[str]] | None:
        """Where `from_pretrained(..., device_map=..., load_in_8bit=...)` puts the model.

        accelerate attaches hooks that move each block's inputs to its device when the map spans
        several devices, and always for bitsandbytes-quantised models ("dispatched": CPU inputs are
        fine, moving the model again is not); a map naming one device is a plain `.to(device)`."""
        def given(key: str) -> bool:
            value = kwargs.get(key)
            return value is not None and value.kind is not Kind.NONE and not value.has("bool=False")
        quantized = any(given(k) for k in lib.QUANTIZE_KWARGS)
        device_map = kwargs.get("device_map")
        if device_map is None or device_map.kind is Kind.NONE:
            if not quantized:
                return None
            facts = {"dispatched", "quantized"} | ({"quantized8"} if given("load_in_8bit") else set())
            self.device_in_play = True
            return device_at("cuda", node), frozenset(facts)
        arg_node = next(a.value for a in node.args if a.keyword is not None and a.keyword.value == "device_map")
        text = _string_value(arg_node)
        single: Placement | None = None
        if text is not None and text not in lib.DEVICE_MAP_STRATEGIES:
            single = device_string_place(text, arg_node)
        elif device_map.kind is Kind.SCALAR and any(f.startswith("int=") for f in device_map.facts):
            single = device_at(f"cuda:{code_of(arg_node)}", arg_node)
        elif device_map.kind is Kind.DEVICE and device_map.place.known:
            single = replace(device_map.place, device=code_of(arg_node), node=arg_node)
        elif device_map.kind is Kind.DICT and len(device_map.fields) == 1 and device_map.fields[0][0] == "":
            only = device_map.fields[0][1]
            if only.kind is Kind.SCALAR:
                single = device_at(f"cuda:{code_of(arg_node)}", arg_node)
            elif only.has("device_str") or only.kind is Kind.DEVICE:
                single = only.place if only.place.known else None
        if single is not None and single.on_host and not quantized:
            return HOST, frozenset()
        self.device_in_play = True
        if single is not None and single.on_device and not quantized:
            return single, frozenset()  # one device: the same as `.to(device)`, no hooks
        facts = {"dispatched"} | ({"quantized"} if quantized else set()) | (
            {"quantized8"} if given("load_in_8bit") else set())
        where = f"device_map={code_of(arg_node)}" if single is None else single.device
        return device_at(where, arg_node), frozenset(facts)

    def _loader(self, node: cst.Call, args: list[Value], kwargs: dict[str, Value], frame: Frame) -> Value:
        dataset = args[0] if args else kwargs.get("dataset", UNKNOWN)
        collate = kwargs.get("collate_fn")
        name = code_of(self._stmt.body[0].targets[0].target) if isinstance(self._stmt, cst.SimpleStatementLine) \
            and self._stmt.body and isinstance(self._stmt.body[0], cst.Assign) else code_of(node.func)
        origin = Origin(ORIGIN_BATCH, node, f"a batch from `{name}`")
        worker_moves: list[Event] = []
        self._worker_moves.append(worker_moves)
        try:
            if collate is not None and collate.kind is not Kind.NONE:
                batch = self._collate_batch(collate, dataset, node, frame, origin)
            elif dataset.kind is Kind.DATASET:
                item = self._dataset_batch(dataset, node, frame, origin)
                worker_moves.extend(self._placements_of_device_state(item, worker_moves))
                batch = self._as_batch(item, origin, default_collate=True)
            elif dataset.has("placed_items") or dataset.has("hf_dataset"):  # `datasets`: may be on a device
                batch = Value(Kind.BATCH, UNKNOWN_PLACE, origin)
            else:
                batch = Value(Kind.BATCH, HOST, origin)
        finally:
            self._worker_moves.pop()
        value = Value(Kind.LOADER, HOST, origin, obj=new_obj_id(), elem=batch,
                      fields=(("dataset", dataset),))
        loader_args = tuple([(None, a) for a in args] + list(kwargs.items()))
        self.emit(Made(node, self.ctx(frame), "loader", "DataLoader", value, loader_args, text=code_of(node)))
        for event in worker_moves:
            # device work that runs where the loader runs collate_fn / __getitem__ (DEV110); not
            # deduplicated by node: the same collate_fn may serve loaders with different settings
            self.events.append(Made(event.node, event.ctx, "worker_move", "DataLoader", value, loader_args,
                                    text=code_of(event.node)))
        return value

    def _placements_of_device_state(self, item: Value, seen: list[Event]) -> list[Event]:
        """CUDA tensors a dataset's `__init__` made and its `__getitem__` hands out: every worker
        process touches them (row 29 of real-device-bugs.md), so the moves or factories that
        put them there count as device work of the loader (DEV110)."""
        wanted: set[int] = set()

        def walk(value: Value, depth: int) -> None:
            if value.kind is Kind.TENSOR and value.place.on_device and devices.is_cuda(value.place.ident):
                wanted.update(id(n) for n in (value.place.node, value.origin.node if value.origin else None) if n)
            if depth < 3:
                for _, part in value.fields:
                    walk(part, depth + 1)

        walk(item, 0)
        if not wanted:
            return []
        known = {id(e.node) for e in seen} | {id(getattr(e, "call", None)) for e in seen if getattr(e, "call", None)}
        found: list[Event] = []
        for event in self.events:
            if isinstance(event, Move):
                placed = event.target.on_device and (id(event.node) in wanted or id(event.call) in wanted)
            elif isinstance(event, Made) and event.what == "factory":
                placed = event.value.place.on_device and id(event.node) in wanted
            else:
                continue
            if placed and id(event.node) not in known and event.ctx.function.endswith(".__init__"):
                known.add(id(event.node))
                found.append(event)
        return found

    def _collate_batch(self, collate: Value, dataset: Value, node: cst.Call, frame: Frame,
                       origin: Origin) -> Value:
        if collate.kind is Kind.OBJECT and collate.node is not None:  # a collator class with __call__
            info = self.classes.get(id(collate.node))
            method = self._find_method(info, "__call__") if info is not None else None
            if method is None:
                return Value(Kind.BATCH, UNKNOWN_PLACE, origin)
            item = self._dataset_item(dataset, node, frame, origin)
            samples = Value(Kind.LIST, NO_TENSORS, elem=item)
            result = self.call_function(method[1], [collate, samples], {}, node, frame, class_info=method[0],
                                        is_method=True, role="collate")
            return self._as_batch(result, origin)
        if collate.kind is not Kind.FUNCTION or collate.node is None:
            return Value(Kind.BATCH, UNKNOWN_PLACE, origin)
        item = self._dataset_item(dataset, node, frame, origin)
        samples = Value(Kind.LIST, NO_TENSORS, elem=item)
        bound, bound_kw = self._bound_args(collate)
        result = self.call_function(collate.node, bound + [samples], bound_kw, node, frame, role="collate")
        return self._as_batch(result, origin)

    def _dataset_item(self, dataset: Value, node: cst.CSTNode, frame: Frame, origin: Origin) -> Value:
        info = self.classes.get(id(dataset.node)) if dataset.node is not None else None
        getitem = self._find_method(info, "__getitem__") if info is not None else None
        if getitem is not None:
            result = self.call_function(getitem[1], [dataset, SCALAR], {}, node, frame,
                                        class_info=getitem[0], is_method=True, role="getitem")
            return self._as_batch(result, origin)
        if info is not None and self._find_method(info, "__iter__") is not None:
            return Value(Kind.BATCH, UNKNOWN_PLACE, origin)  # an IterableDataset: its generator is not followed
        if dataset.elem is not None:
            return dataset.elem
        return Value(Kind.BATCH, HOST, origin)

    def _dataset_batch(self, dataset: Value, node: cst.CSTNode, frame: Frame, origin: Origin) -> Value:
        """Default collate: stacks what __getitem__ returns, keeping per-field placement."""
        item = self._dataset_item(dataset, node, frame, origin)
        return item

    @staticmethod
    def _as_batch(value: Value, origin: Origin, default_collate: bool = False) -> Value:
        """Re-label a returned structure as a batch whose host fields came from the loader.

        Only PyTorch's default collate turns numbers, lists and arrays into (host) tensors; what a
        `__getitem__` or a custom `collate_fn` returns keeps its Python numbers as numbers."""
        def relabel(v: Value, key: object, depth: int = 0) -> Value:
            if v.kind in (Kind.TUPLE, Kind.DICT, Kind.BATCH) and v.fields and depth < 3:  # nested structure
                return Value(Kind.BATCH, v.place if v.place.known else HOST, origin,
                             fields=tuple((k, relabel(f, k, depth + 1)) for k, f in v.fields))
            if v.kind in (Kind.SCALAR, Kind.NDARRAY, Kind.LIST) and not default_collate:
                return v
            if v.kind in (Kind.TENSOR, Kind.SCALAR, Kind.NDARRAY, Kind.LIST) and not v.place.on_device:
                if v.kind in (Kind.SCALAR, Kind.NDARRAY, Kind.LIST):
                    v = Value(Kind.TENSOR, HOST)
                if v.place.on_host or v.place.where is Where.NONE:
                    return Value(Kind.TENSOR, HOST, replace(origin, name=""))
            return v
        if value.kind is Kind.OBJECT and value.node is not None:  # a batch class (dataclass, own `to`)
            return replace(value, origin=origin, fields=tuple((k, relabel(v, k)) for k, v in value.fields))
        if value.kind in (Kind.TUPLE, Kind.LIST, Kind.DICT) and value.fields:
            return Value(Kind.BATCH, value.place if value.place.known else HOST, origin,
                         fields=tuple((k, relabel(v, k)) for k, v in value.fields))
        if value.kind in (Kind.DICT,) and value.elem is not None:
            return Value(Kind.BATCH, value.place, origin, elem=relabel(value.elem, None))
        if value.kind is Kind.TENSOR:
            return relabel(value, None) if not value.place.on_device else value
        if value.kind in (Kind.BATCH, Kind.ENCODING):
            return replace(value, kind=Kind.BATCH, origin=origin if value.place.on_host else value.origin,
                           fields=tuple((k, relabel(v, k)) for k, v in value.fields),
                           elem=relabel(value.elem, None) if value.elem is not None else None)
        return Value(Kind.BATCH, UNKNOWN_PLACE, origin)

    def _library_dataset(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value]) -> Value:
        """TensorDataset keeps each tensor's placement per position; Subset / random_split /
        ConcatDataset of a dataset yield what that dataset yields (its own `__getitem__`)."""
        name = qual.rsplit(".", 1)[-1]
        origin = Origin(ORIGIN_BATCH, node, f"an item of `{code_of(node.func)}`")
        source = args[0] if args else kwargs.get("dataset", UNKNOWN)
        if name in ("Subset", "random_split") and source.kind is Kind.DATASET:
            part = replace(source, obj=new_obj_id())
            return part if name == "Subset" else Value(Kind.LIST, NO_TENSORS, elem=part)
        if name == "ConcatDataset" and source.kind in (Kind.LIST, Kind.TUPLE):
            parts = [v for _, v in source.fields] + ([source.elem] if source.elem is not None else [])
            if parts and all(p.kind is Kind.DATASET and p.node is not None and p.node is parts[0].node
                             for p in parts):
                return replace(parts[0], obj=new_obj_id())
        elem = Value(Kind.BATCH, HOST, origin)
        if name == "TensorDataset" and args and not kwargs:
            fields = []
            for index, tensor in enumerate(args):
                if tensor.place.on_device or tensor.place.where is Where.COND:
                    fields.append((index, Value(Kind.TENSOR, tensor.place, tensor.origin)))
                else:
                    fields.append((index, Value(Kind.TENSOR, HOST, origin)))
            elem = Value(Kind.BATCH, HOST, origin, fields=tuple(fields))
        return Value(Kind.DATASET, HOST, obj=new_obj_id(), elem=elem)

    def _torch_function(self, qual: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                        frame: Frame) -> Value:
        operands: list[Value] = []
        for value in list(args) + [v for k, v in kwargs.items() if not k.startswith("*") and k != "out"]:
            if value.kind in (Kind.LIST, Kind.TUPLE):
                operands.extend(v for _, v in value.fields if self._is_tensor_operand(v))
                if value.elem is not None and self._is_tensor_operand(value.elem):
                    operands.append(value.elem)
            elif self._is_tensor_operand(value):
                operands.append(value)
        if len(operands) >= 2:
            self.meet(node, operands, f"`{qual}`", frame)
        if qual in tk.HOST_VALUE_FUNCTIONS:
            return SCALAR
        if not operands:
            return Value(Kind.TENSOR, UNKNOWN_PLACE)
        return self.tensor_result(operands, zero_dim=qual in tk.ELEMENTWISE_FUNCTIONS
                                  and all(t.is_zero_dim for t in operands))

    def _host_consumer(self, node: cst.CSTNode, values: list[Value], consumer: str, frame: Frame,
                       result: Value = UNKNOWN) -> Value:
        for value in values:
            candidates = [value]
            if value.kind in (Kind.LIST, Kind.TUPLE):
                candidates = [v for _, v in value.fields] + ([value.elem] if value.elem is not None else [])
            for v in candidates:
                if v.kind in (Kind.TENSOR, Kind.UNKNOWN) and v.place.on_device and not v.has("managed"):
                    self.emit(HostUse(node, self.ctx(frame), v, consumer))
                    return result
        return result

    # --- methods -----------------------------------------------------------------------
    def _argparser_method(self, parser: Value, name: str, node: cst.Call, kwargs: dict[str, Value],
                          frame: Frame) -> Value:
        """An `argparse` parser collects the integer defaults of its options; `parse_args()`
        gives an object holding them (other options stay unknown, as before)."""
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return parser  # options added to a group belong to the parser
        if name == "add_argument":
            dest = _option_dest(node)
            if dest is not None:
                default = kwargs.get("default")
                known = default.with_facts("option_default") if default is not None \
                    and default.kind is Kind.SCALAR and any(f.startswith("int=") for f in default.facts) else UNKNOWN
                self.rebind(frame, parser.obj, parser.set_field(dest, known))
            return UNKNOWN
        if name == "set_defaults":
            updated = parser
            for key, value in kwargs.items():
                if not key.startswith("*"):
                    updated = updated.set_field(key, value if value.kind is Kind.SCALAR else UNKNOWN)
            self.rebind(frame, parser.obj, updated)
            return UNKNOWN
        if name in ("parse_args", "parse_known_args"):
            parsed = Value(Kind.OBJECT, NO_TENSORS, obj=new_obj_id(), fields=parser.fields,
                           facts=frozenset({"parsed_args"}))
            return parsed if name == "parse_args" else Value(Kind.TUPLE, NO_TENSORS, fields=((0, parsed), (1, UNKNOWN)))
        return UNKNOWN

    @staticmethod
    def _axes(qual: str) -> Value:
        """Matplotlib axes: one (`plt.gca()`), or `(figure, axes)` from `plt.subplots()`, whose
        axes may be an array of axes (indexing it gives axes again)."""
        axes = Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({"plot_axes"}))
        axes = replace(axes, elem=axes)
        if qual.endswith(".subplots"):
            return Value(Kind.TUPLE, NO_TENSORS, fields=((0, UNKNOWN), (1, axes)))
        return axes

    def call_method(self, receiver: Value, name: str, node: cst.Call, args: list[Value],
                    kwargs: dict[str, Value], frame: Frame, statement: bool) -> Value:
        if name in ("to", "cuda", "cpu"):
            return self.move_call(receiver, name, node, args, kwargs, frame, statement)
        if receiver.has("argparser"):
            return self._argparser_method(receiver, name, node, kwargs, frame)
        if receiver.has("plot_axes") and name in lib.AXES_PLOTTING:
            return self._host_consumer(node, list(args) + [v for k, v in kwargs.items() if not k.startswith("*")],
                                       f"`{code_of(node.func)}`", frame)
        if receiver.fields and receiver.kind in (Kind.MODULE, Kind.OBJECT):
            attribute = receiver.get_field(name)
            if attribute is not None:  # `self.encoder(x)`: call what the attribute holds
                return self.call_value(self.get_attribute(receiver, name, node, frame), node, args, kwargs, frame)
        if receiver.kind is Kind.MODULE and receiver.node is not None:
            info = self.classes.get(id(receiver.node))
            if info is not None and name in info.class_attrs and name not in info.methods:
                # `self.norm(x)` with `norm = nn.LayerNorm(...)` in the class body
                held = self.get_attribute(receiver, name, node, frame)
                if held.kind is Kind.MODULE:
                    return self.call_value(held, node, args, kwargs, frame)
        kind = receiver.kind
        if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and receiver.place.known):
            return self._tensor_method(receiver, name, node, args, kwargs, frame)
        if kind is Kind.MODULE:
            return self._module_method(receiver, name, node, args, kwargs, frame)
        if kind in (Kind.DICT, Kind.BATCH, Kind.ENCODING):
            if name == "items":
                return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS,
                                                                 fields=((0, STR), (1, self.item_of(receiver, None, "")))))
            if name == "values":
                return Value(Kind.LIST, NO_TENSORS, elem=self.item_of(receiver, None, ""))
            if name == "keys":
                return Value(Kind.LIST, NO_TENSORS, elem=STR)
            if name in ("get", "pop") and node.args:
                key = _string_value(node.args[0].value)
                return self.item_of(receiver, key, key or "")
            if name in ("update", "setdefault"):
                return NONE_VALUE
            if kind is Kind.BATCH:
                return UNKNOWN
        if kind is Kind.TOKENIZER:
            if name in lib.TOKENIZER_ENCODING_METHODS:
                return self._tokenizer_output(node, kwargs, name)
            if name in lib.TOKENIZER_TENSOR_METHODS:
                if self._returns_pt(kwargs):
                    return Value(Kind.TENSOR, HOST, Origin(ORIGIN_TOKENIZER, node, f"`{code_of(node.func)}(...)`"))
                return Value(Kind.LIST, NO_TENSORS, elem=SCALAR)
            if name in ("decode", "batch_decode", "convert_ids_to_tokens", "tokenize"):
                return STR
            return UNKNOWN
        if kind is Kind.ACCELERATOR:
            if name in lib.ACCELERATOR_PREPARE:
                managed = [self._managed(a) for a in args]
                if len(managed) == 1:
                    return managed[0]
                return Value(Kind.TUPLE, NO_TENSORS, fields=tuple(enumerate(managed)))
            return UNKNOWN
        if kind is Kind.OBJECT and receiver.node is not None:
            info = self.classes.get(id(receiver.node))
            method = self._find_method(info, name) if info is not None else None
            if method is not None:
                return self.call_function(method[1], [receiver] + args, kwargs, node, frame,
                                          class_info=method[0], is_method=True)
        if kind is Kind.OBJECT and receiver.has("managed"):  # trainer.fit(model) / trainer.train()
            self._hand_to_framework(list(args) + list(kwargs.values()), frame)
            return UNKNOWN
        if kind is Kind.DATASET and receiver.node is not None:
            info = self.classes.get(id(receiver.node))
            method = self._find_method(info, name) if info is not None else None
            if method is not None:
                return self.call_function(method[1], [receiver] + args, kwargs, node, frame,
                                          class_info=method[0], is_method=True)
        if kind is Kind.NDARRAY:
            return SCALAR if name in ("item", "tolist") else Value(Kind.NDARRAY, HOST)
        if kind is Kind.OPTIMIZER and name == "load_state_dict":
            self.emit(Made(node, self.ctx(frame), "optimizer_load", receiver.qual, receiver))
        if kind is Kind.LIST and name in ("append", "extend", "insert") and args and isinstance(node.func, cst.Attribute):
            target = node.func.value
            new_elem = args[-1] if name != "extend" else self.element_of(args[-1])
            merged = replace(receiver, elem=join(receiver.elem, new_elem) if receiver.elem is not None or receiver.fields
                             else new_elem, fields=()).with_facts(remove=("empty",))
            if receiver.fields:
                merged = replace(merged, elem=join(self.element_of(receiver), new_elem))
            self.assign(target, merged, frame, node)
            return NONE_VALUE
        if kind is Kind.UNKNOWN and receiver.has("hf_dataset"):  # .map / .filter / .with_format ...
            return receiver
        if kind is Kind.UNKNOWN and name in ("with_format", "set_format") and "device" in kwargs:
            # a Hugging Face `datasets` object that yields tensors already on a device
            placed = receiver.with_facts("placed_items")
            if name == "set_format" and isinstance(node.func, cst.Attribute):
                self.assign(node.func.value, placed, frame, node)
                return NONE_VALUE
            return placed
        return UNKNOWN

    def _placed_by_framework(self, value: Value, place: Placement, depth: int = 0) -> Value:
        """A batch and every field of it, placed by a framework (accelerate, Lightning)."""
        if depth > 4:
            return value
        fields = tuple((k, self._placed_by_framework(v, place, depth + 1)) for k, v in value.fields)
        elem = self._placed_by_framework(value.elem, place, depth + 1) if value.elem is not None else None
        moved = replace(value, fields=fields, elem=elem)
        if value.kind in TENSORISH or value.kind in CONTAINERS or value.kind is Kind.OBJECT \
                or value.place.known:
            moved = moved.at(place) if value.place.where is not Where.NONE else moved
        return moved.with_facts("managed")

    def _hand_to_framework(self, values: list[Value], frame: Frame) -> None:
        """A trainer (HF `Trainer`, Lightning `Trainer.fit`) places the modules it is given, in
        place, on a device of its choosing: from then on their placement is the framework's."""
        for value in values:
            if value.kind is Kind.MODULE and value.obj:
                self.rebind(frame, value.obj, replace(value, place=UNKNOWN_PLACE).with_facts("managed"))

    def _managed(self, value: Value) -> Value:
        """What accelerate's prepare() returns: placed by the framework."""
        facts = value.facts | {"managed"}
        if value.kind is Kind.LOADER:
            elem = self._placed_by_framework(value.elem, device_at("accelerator.device")) if value.elem else None
            return replace(value, facts=facts, elem=elem, fields=())
        if value.kind is Kind.MODULE:
            return replace(self.move_module(value, device_at("accelerator.device")), facts=facts)
        return replace(value, facts=facts)

    @staticmethod
    def _returns_pt(kwargs: dict[str, Value]) -> bool:
        value = kwargs.get("return_tensors")
        return value is not None and value.kind is Kind.STR

    def _tokenizer_output(self, node: cst.Call, kwargs: dict[str, Value], method: str) -> Value:
        pt = any(a.keyword is not None and a.keyword.value == "return_tensors"
                 and _string_value(a.value) == "pt" for a in node.args)
        if not pt:
            return Value(Kind.ENCODING, NO_TENSORS)
        return Value(Kind.ENCODING, HOST, Origin(ORIGIN_TOKENIZER, node, f"`{code_of(node.func)}(...)`"),
                     obj=new_obj_id())

    def _tensor_method(self, receiver: Value, name: str, node: cst.Call, args: list[Value],
                       kwargs: dict[str, Value], frame: Frame) -> Value:
        if name in ("item", "tolist"):
            return SCALAR
        if name == "numpy":
            if not kwargs.get("force", SCALAR).has("bool=True"):  # `.numpy(force=True)` copies to the host
                self._host_consumer(node, [receiver], "`.numpy()`", frame)
            return Value(Kind.NDARRAY, HOST)
        if name in tk.HOST_VALUE_METHODS:
            return SCALAR if name not in ("backward",) else NONE_VALUE
        if name == "pin_memory":  # page-locked: a non_blocking copy is asynchronous (DEV301)
            return receiver.with_facts("pinned")
        if name in tk.NEW_METHODS:
            return Value(Kind.TENSOR, receiver.place, receiver.origin)
        if name == "type_as" and args:
            return receiver.at(args[0].place) if args[0].place.known else receiver
        if name in ("size", "shape", "dim"):
            return SCALAR
        if name in tk.MIXING_METHODS:
            operands = [receiver] + [a for a in list(args) + list(kwargs.values()) if self._is_tensor_operand(a)]
            if len(operands) >= 2:
                self.meet(node, operands, f"`.{name}()`", frame)
                return self.tensor_result(operands)
        if name in tk.REDUCTIONS and not node.args:
            return receiver.with_facts("zero_dim")
        if receiver.kind is Kind.UNKNOWN:
            return Value(Kind.UNKNOWN, receiver.place)
        return receiver.with_facts(remove=("zero_dim",)) if name in ("view", "reshape", "unsqueeze", "expand") else receiver

    def _module_method(self, receiver: Value, name: str, node: cst.Call, args: list[Value],
                       kwargs: dict[str, Value], frame: Frame) -> Value:
        info = self.classes.get(id(receiver.node)) if receiver.node is not None else None
        if name in ("register_buffer", "register_parameter") and len(args) >= 2:
            attr = _string_value(node.args[0].value) or "<dynamic>"
            value = args[1].with_facts("registered", "buffer" if name == "register_buffer" else "param")
            self.rebind(frame, receiver.obj, receiver.set_field(attr, value))
            return NONE_VALUE
        if name in ("add_module", "register_module") and len(args) >= 2:
            attr = _string_value(node.args[0].value) or f"<dynamic{id(node)}>"
            self.rebind(frame, receiver.obj, receiver.set_field(attr, args[1].with_facts("registered")))
            return NONE_VALUE
        if info is not None:
            method = self._find_method(info, name)
            if method is not None:
                if name == "forward":
                    return self.call_module(receiver, node, args, kwargs, frame)
                return self.call_function(method[1], [receiver] + args, kwargs, node, frame,
                                          class_info=method[0], is_method=True)
        if name in tk.MODULE_SELF_METHODS:
            return receiver
        if name in ("forward", "generate", "predict", "encode", "decode", "__call__"):
            return self.call_module(receiver, node, args, kwargs, frame, forward_only=name != "forward")
        if name in ("parameters", "named_parameters", "buffers", "state_dict", "children", "modules"):
            facts = {"params", "param_iter"} if name in ("parameters", "buffers") else {"params"}
            return Value(Kind.UNKNOWN, receiver.place, facts=frozenset(facts), obj=receiver.obj)
        return UNKNOWN

    def _call_super(self, name: str, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                    frame: Frame) -> Value | None:
        """`super().__init__(n)` / `super().forward(x)`: run the method of a base class of the program
        (in this file or another project file) on `self`; None when the base is not the program's."""
        fn = frame.fn
        if not frame.self_name or not isinstance(fn, cst.FunctionDef):
            return None
        owner = next((info for info in list(self.classes.values())
                      if info.methods.get(fn.name.value) is fn), None)
        if owner is None:
            return None
        for base in owner.bases:
            if base.kind is not Kind.CLASS or base.node is None or id(base.node) not in self.classes:
                continue
            found = self._find_method(self.classes[id(base.node)], name)
            if found is None:
                continue
            self_value = frame.env.get(frame.self_name, UNKNOWN)
            return self.call_function(found[1], [self_value] + args, kwargs, node, frame,
                                      class_info=found[0], is_method=True)
        return None

    def _find_method(self, info: ClassInfo | None, name: str) -> tuple[ClassInfo, cst.FunctionDef] | None:
        seen = 0
        while info is not None and seen < 20:
            if name in info.methods:
                return info, info.methods[name]
            nxt = None
            for base in info.bases:
                if base.kind is Kind.CLASS and base.node is not None:
                    nxt = self.classes.get(id(base.node))
                    if nxt is not None:
                        break
            info = nxt
            seen += 1
        return None

    # --- moves -------------------------------------------------------------------------
    def move_call(self, receiver: Value, method: str, node: cst.Call, args: list[Value],
                  kwargs: dict[str, Value], frame: Frame, statement: bool) -> Value:
        info = self.classes.get(id(receiver.node)) if receiver.node is not None else None
        own = self._find_method(info, method) if info is not None else None
        if own is not None and not info.is_module:  # a class with its own .to(): run it
            result = self.call_function(own[1], [receiver] + args, kwargs, node, frame,
                                        class_info=own[0], is_method=True)
            if _DYNAMIC_BODY.search(code_of(own[1])):
                # fields moved by name at run time (setattr, __dict__, dataclasses.fields): the
                # analysis cannot tell which, so none of them is known to stay on the host
                result = self._host_fields_unknown(result)
                if receiver.obj:
                    self.rebind(frame, receiver.obj, self._host_fields_unknown(receiver))
            return result
        if method == "cpu":
            target = HOST
        elif method == "cuda":
            index_arg = next((a.value for a in node.args if a.keyword is None
                              or a.keyword.value == "device"), None)
            index = code_of(index_arg) if index_arg is not None else ""
            index_value = (args[0] if args else kwargs.get("device")) if index_arg is not None else None
            if index_value is not None and index_value.kind is Kind.NONE:
                index = ""
            ident = devices.indexed("cuda", self._int_of(index_value), index) if index else "cuda"
            if index_value is not None and index_value.kind is Kind.DEVICE and index_value.place.on_device:
                ident = index_value.place.ident  # .cuda(torch.device("cuda:1"))
            target = device_at(f"cuda:{index}" if index else "cuda", node, ident)
            self.device_in_play = True
            self.emit(Made(node, self.ctx(frame), "cuda", "Tensor.cuda", receiver))
        else:
            target = None
            candidates: list[tuple[Value, cst.CSTNode | None]] = []
            if "device" in kwargs:
                arg_node = next(a.value for a in node.args if a.keyword is not None and a.keyword.value == "device")
                candidates.append((kwargs["device"], arg_node))
            elif args:
                positional = [a.value for a in node.args if a.keyword is None]
                candidates.append((args[0], positional[0] if positional else None))
            for value, arg_node in candidates:
                if value.kind in (Kind.TENSOR,) and value.place.known:
                    target = value.place
                else:
                    target = self._place_of_device_value(value, arg_node)
            if target is None:
                return receiver  # a dtype conversion, or a target we cannot tell
            if target.on_device and candidates and candidates[0][0].kind is Kind.STR \
                    and "cuda" in target.device:
                self.emit(Made(node, self.ctx(frame), "cuda", "Tensor.to", receiver))
        non_blocking = "non_blocking" in kwargs
        if target.on_device:
            self.device_in_play = True
        return self.move_value(node, receiver, target, method, frame, statement, non_blocking)

    @staticmethod
    def _host_fields_unknown(value: Value) -> Value:
        if value.kind not in (Kind.OBJECT, Kind.BATCH, Kind.DICT, Kind.TUPLE, Kind.LIST):
            return value
        return replace(value, fields=tuple((k, v.at(UNKNOWN_PLACE) if v.place.on_host or v.place.where is Where.COND
                                            else v) for k, v in value.fields),
                       elem=value.elem.at(UNKNOWN_PLACE) if value.elem is not None and value.elem.place.known
                       else value.elem)

    def move_value(self, node: cst.Call, receiver: Value, target: Placement, method: str, frame: Frame,
                   statement: bool, non_blocking: bool = False) -> Value:
        subject_text = code_of(node.func.value) if isinstance(node.func, cst.Attribute) else code_of(node)
        if target.node is None:
            target = replace(target, node=node)
        self.emit(Move(node, self.ctx(frame), receiver, target, method, statement, subject_text,
                       non_blocking, node))
        kind = receiver.kind
        if kind is Kind.MODULE:
            moved = self.move_module(receiver, target)
            if receiver.obj:
                self.rebind(frame, receiver.obj, moved)
                if receiver.node is not None and target.on_device:
                    self.moved_classes.add(id(receiver.node))
            elif isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name):
                # one of two modules (`model = DataParallel(model)` on one branch): Module.to is
                # in place, so the name now holds the moved module whichever it was
                self.assign(node.func.value, moved, frame, node)
            elif isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Attribute) \
                    and isinstance(node.func.value.value, cst.Name) \
                    and self.lookup(node.func.value.value.value, frame).kind is Kind.OBJECT:
                # the same for `self.model.to(device)` in a Trainer that built one of two models
                self.assign(node.func.value, moved, frame, node)
            self._rebind_submodules(frame, moved, receiver.obj)
            return moved
        if kind in (Kind.TENSOR, Kind.UNKNOWN):
            return Value(Kind.TENSOR if kind is Kind.TENSOR else Kind.UNKNOWN, target, receiver.origin,
                         facts=receiver.facts - {"zero_dim"} if not receiver.is_zero_dim else receiver.facts)
        if kind is Kind.ENCODING:  # BatchEncoding.to moves its fields in place and returns itself
            moved = replace(receiver, place=target,
                            fields=tuple((k, v.at(target) if v.kind is Kind.TENSOR else v) for k, v in receiver.fields))
            if receiver.obj:
                self.rebind(frame, receiver.obj, moved)
            return moved
        if kind is Kind.BATCH:
            return replace(receiver, place=target,
                           fields=tuple((k, v.at(target) if v.kind in (Kind.TENSOR, Kind.BATCH) else v)
                                        for k, v in receiver.fields),
                           elem=receiver.elem.at(target) if receiver.elem is not None else None)
        if kind is Kind.OBJECT and receiver.node is not None:
            return replace(receiver, place=target)
        return UNKNOWN

    def move_module(self, module: Value, target: Placement, top: bool = True) -> Value:
        """`module.to(target)`: registered state follows; the rest stays where it was."""
        if module.place.where is Where.NONE and not module.fields:
            return module
        fields = []
        custom = self._moves_itself(module, top)
        for key, value in module.fields:
            if value.has("registered"):
                if value.kind is Kind.MODULE:
                    value = self.move_module(value, target, top=False)
                elif value.place.where is not Where.NONE:
                    value = value.at(target)
            elif custom and (value.kind is Kind.TENSOR or value.kind in CONTAINERS) and value.place.known:
                value = value.at(UNKNOWN_PLACE)  # its own `to` / `_apply` may move it: not known
            fields.append((key, value))
        fields = self._move_plain_aliases(fields, target)
        place = target if module.place.where is not Where.NONE else module.place
        if module.place.where is Where.NONE and any(v.has("registered") and v.place.where is not Where.NONE
                                                     for _, v in fields):
            place = target
        if module.place.where is Where.UNKNOWN:
            place = target
        return replace(module, place=place, fields=tuple(fields))

    def _moves_itself(self, module: Value, top: bool) -> bool:
        """A class of the program that overrides `_apply` (used by every move, also of a parent)
        or, for the module moved itself, `to` / `cuda`: it may move its plain state too."""
        info = self.classes.get(id(module.node)) if module.node is not None else None
        if info is None:
            return False
        names = ("_apply", "to", "cuda") if top else ("_apply",)
        return any(self._find_method(info, name) is not None for name in names)

    def _rebind_submodules(self, frame: Frame, moved: Value, skip: int) -> None:
        """Module.to() moves registered submodules in place: other names for them (`teacher`
        after `Distiller(student, teacher).to(device)`) now hold the moved modules too."""
        found: dict[int, Value] = {}

        def collect(v: Value, depth: int) -> None:
            for _, child in v.fields:
                if child.kind is Kind.MODULE and child.has("registered") and depth < 5:
                    if child.obj and child.obj != skip and child.obj not in found:
                        found[child.obj] = child
                    collect(child, depth + 1)

        collect(moved, 0)
        for obj, child in found.items():
            self.rebind(frame, obj, child)

    def _move_plain_aliases(self, fields: list[tuple[object, Value]], target: Placement) -> list[tuple[object, Value]]:
        """Modules in a plain list / dict attribute that are the same objects as registered
        submodules (`self.levels = [...]` then `self.body = nn.Sequential(*self.levels)`: timm #820)
        are moved in place with them. Identity is the object id, or the construction site."""
        plain = [i for i, (_, v) in enumerate(fields) if not v.has("registered") and v.kind in CONTAINERS]
        if not plain:
            return fields
        objs: set[int] = set()
        sites: set[int] = set()

        def collect(v: Value, depth: int) -> None:
            if depth > 5 or v.kind is not Kind.MODULE:
                return
            if v.obj:
                objs.add(v.obj)
            if v.origin is not None and v.origin.node is not None:
                sites.add(id(v.origin.node))
            for _, child in v.fields:
                if child.has("registered"):
                    collect(child, depth + 1)

        for _, v in fields:
            if v.has("registered"):
                collect(v, 0)

        def follow(v: Value, depth: int = 0) -> Value:
            if v.kind is Kind.MODULE and v.place.on_host and (
                    v.obj in objs if v.obj else v.origin is not None and v.origin.node is not None
                    and id(v.origin.node) in sites):
                return self.move_module(v, target, top=False)
            if v.kind in CONTAINERS and depth < 2:
                return replace(v, fields=tuple((k, follow(f, depth + 1)) for k, f in v.fields),
                               elem=follow(v.elem, depth + 1) if v.elem is not None else None)
            return v

        out = list(fields)
        for i in plain:
            out[i] = (out[i][0], follow(out[i][1]))
        return out

    # --- modules -----------------------------------------------------------------------
    def effective_host_parts(self, module: Value, depth: int = 0) -> list[Value]:
        """Registered parts of a device module that are still on the host (assigned after the move)."""
        if depth > 4:
            return []
        out = []
        for _, value in module.fields:
            if not value.has("registered"):
                continue
            if value.place.on_host and value.origin is not None and value.origin.category == ORIGIN_AFTER_MOVE:
                out.append(value)
            elif value.kind is Kind.MODULE:
                out.extend(self.effective_host_parts(value, depth + 1))
        return out

    def call_module(self, module: Value, node: cst.Call, args: list[Value], kwargs: dict[str, Value],
                    frame: Frame, forward_only: bool = False) -> Value:
        inputs = [v for v in list(args) + [v for k, v in kwargs.items() if k != "*"] if self._is_tensor_operand(v)
                  or v.kind in (Kind.ENCODING, Kind.BATCH)]
        for v in list(args) + list(kwargs.values()):
            if v.kind in (Kind.LIST, Kind.TUPLE, Kind.DICT):
                inputs.extend(f for _, f in v.fields if self._is_tensor_operand(f))
        if kwargs.get("**") is not None and kwargs["**"].kind in (Kind.ENCODING, Kind.BATCH, Kind.DICT):
            spread = kwargs["**"]
            inputs.extend(f for _, f in spread.fields if self._is_tensor_operand(f))
            if not spread.fields and spread.place.known:
                inputs.append(Value(Kind.TENSOR, spread.place, spread.origin))
        name = code_of(node.func)
        operation = f"the call of `{name}`"
        reported = False
        info = self.classes.get(id(module.node)) if module.node is not None else None
        method = self._find_method(info, "forward") if info is not None else None
        if method is not None and not module.place.on_host and not module.has("managed") \
                and not module.has("scatters") and not module.has("dispatched"):
            # the program's own forward: its operations say which inputs meet what (a packed
            # sequence's `lengths` rightly stay on the CPU); input meets are reported here, at the call
            result = self._forward_reported_at_call(module, method, node, args, kwargs, inputs, frame)
            if result is not None:
                return result
        if module.place.where is Where.NONE and len(inputs) >= 2:
            reported = self.meet(node, inputs, operation, frame)  # a loss or activation: inputs meet
        elif module.place.where is not Where.NONE and not module.has("managed"):
            weights = Value(Kind.MODULE, module.place, module.origin, facts=module.facts)
            if module.has("scatters") or module.has("dispatched"):
                # DataParallel scatters host inputs itself, accelerate's hooks move them to each
                # block's device; the wrapper's own weights still must be placed
                reported = self.meet(node, [weights] + [v for v in inputs if v.place.on_device], operation, frame)
            else:
                reported = self.meet(node, [weights] + inputs, operation, frame)
        if method is None and module.place.on_device and not reported:
            # a library model: its forward runs every registered part on the inputs
            for part in self.effective_host_parts(module):
                self.emit(Meet(node, self.ctx(frame), part,
                               Value(Kind.TENSOR, module.place, Origin(ORIGIN_OTHER, node, "", name)), operation))
                reported = True
        if info is not None and not reported:
            if method is not None:
                call_args = [module] + [self._as_moved(a, module) for a in args]
                result = self.call_function(method[1], call_args, kwargs, node, frame, class_info=method[0],
                                            is_method=True, role="forward")
                if result.kind is not Kind.UNKNOWN or result.place.known:
                    return result
        if info is None and not reported and module.qual == "torch.nn.Sequential" and args \
                and any(c.node is not None and id(c.node) in self.classes for _, c in module.fields):
            # nn.Sequential runs its children in order: analyse the program's own modules' forward
            value = args[0]
            for _, child in module.fields:
                if child.kind is not Kind.MODULE:
                    value = UNKNOWN
                    break
                if child.place.where is Where.UNKNOWN and module.place.known:
                    child = child.at(module.place)
                value = self.call_module(child, node, [value], {}, frame)
            if value.kind is not Kind.UNKNOWN or value.place.known:
                return value
        if reported:  # after the crash is fixed, the call runs on the device
            device = next((v for v in [Value(Kind.MODULE, module.place)] + inputs if v.place.on_device), None)
            if device is not None:
                return Value(Kind.TENSOR, device.place, Origin(ORIGIN_OTHER, node, f"the output of `{name}`"))
        if module.place.where is Where.NONE:
            return self.tensor_result(inputs) if inputs else Value(Kind.TENSOR, UNKNOWN_PLACE)
        if module.has("managed"):
            return Value(Kind.TENSOR, module.place, facts=frozenset({"managed"}))
        if module.has("dispatched"):
            return Value(Kind.TENSOR, UNKNOWN_PLACE)  # the hooks return outputs where the inputs were
        if module.place.where is Where.UNKNOWN:
            return Value(Kind.TENSOR, UNKNOWN_PLACE)
        if module.place.on_host:
            return Value(Kind.TENSOR, module.place, module.origin)
        return Value(Kind.TENSOR, module.place, Origin(ORIGIN_OTHER, node, f"the output of `{name}`"))

    @staticmethod
    def _as_moved(value: Value, module: Value, depth: int = 0) -> Value:
        """What a wrapped model's own forward receives. DataParallel and DDP with `device_ids`
        scatter host inputs to the module's device, accelerate's hooks (`device_map`) and
        `accelerator.prepare` place them (a prepared model may be wrapped in DDP at launch):
        a host input is not evidence of a crash inside. A plain module gets them as they are."""
        if not (module.has("scatters") or module.has("dispatched") or module.has("managed")):
            return value
        if value.kind is Kind.TENSOR and value.place.on_host:
            return value.at(module.place if module.has("scatters") and module.place.on_device else UNKNOWN_PLACE)
        if value.fields and depth < 3:
            return replace(value, fields=tuple((key, Interpreter._as_moved(field, module, depth + 1))
                                               for key, field in value.fields))
        return value

    def _forward_reported_at_call(self, module: Value, method: tuple, node: cst.Call, args: list[Value],
                                  kwargs: dict[str, Value], inputs: list[Value], frame: Frame) -> Value | None:
        """Run a local module's forward; a meet inside it whose host side is one of the call's
        inputs is the caller's bug (DEV101 at `model(inputs)`), so it is re-attributed to the call."""
        start = len(self.events)
        result = self.call_function(method[1], [module] + list(args), kwargs, node, frame,
                                    class_info=method[0], is_method=True, role="forward")
        input_origins = {id(v.origin) for v in inputs if v.origin is not None and v.place.known}
        input_origins |= {id(f.origin) for v in inputs for _, f in v.fields if f.origin is not None}
        for index in range(start, len(self.events)):
            event = self.events[index]
            if isinstance(event, Meet) and event.host.origin is not None and id(event.host.origin) in input_origins:
                self.events[index] = replace(event, node=node, ctx=self.ctx(frame),
                                             operation=f"the call of `{code_of(node.func)}`")
        if result.kind is not Kind.UNKNOWN or result.place.known:
            return result
        return None

    # --- classes and functions ---------------------------------------------------------
    def instantiate(self, info: ClassInfo, args: list[Value], kwargs: dict[str, Value], node: cst.CSTNode,
                    frame: Frame, run_init: bool = True) -> Value:
        obj = new_obj_id()
        if info.is_module:
            origin = self._module_origin(node, frame, f"`{info.name}(...)`")
            value = Value(Kind.MODULE, NO_TENSORS, origin, obj=obj, qual=info.name, node=info.node,
                          facts=frozenset({"local"}))
        elif info.is_dataset:
            value = Value(Kind.DATASET, HOST, obj=obj, qual=info.name, node=info.node)
        else:
            value = Value(Kind.OBJECT, NO_TENSORS, obj=obj, qual=info.name, node=info.node)
        init = self._find_method(info, "__init__")
        if init is not None and run_init:
            result_self = self.call_function(init[1], [value] + args, kwargs, node, frame, class_info=init[0],
                                             is_method=True, role="init", want_self=True)
            if result_self.obj == obj:
                value = result_self
        elif init is None and not info.is_module:
            value = self._record_fields(info, value, args, kwargs, frame)
        if info.is_module:
            value = replace(value, place=self._module_place(value, info))
        if info.framework_managed:
            value = value.with_facts("framework")
        return value

    def _record_fields(self, info: ClassInfo, value: Value, args: list[Value], kwargs: dict[str, Value],
                       frame: Frame) -> Value:
        """A dataclass / attrs class / NamedTuple: its generated __init__ binds the annotated fields
        in order (a NamedTuple's fields are also its positions)."""
        named_tuple = any(b.kind is Kind.REF and b.qual.rsplit(".", 1)[-1] == "NamedTuple" for b in info.bases)
        decorated = any(_RECORD_DECORATORS.search(dotted(d.decorator.func if isinstance(d.decorator, cst.Call)
                                                         else d.decorator) or "")
                        for d in info.node.decorators)
        if not (named_tuple or decorated):
            return value
        names = []
        for stmt in _block(info.node.body):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
                            and "ClassVar" not in code_of(small.annotation):
                        names.append(small.target.value)
        spread = kwargs.get("**") or kwargs.get("*")
        spread_elem = self.element_of(spread) if spread is not None and spread.kind is not Kind.DICT \
            else (spread.elem if spread is not None else None)
        fields = list(value.fields)
        for index, name in enumerate(names):
            if index < len(args):
                field = args[index]
            elif name in kwargs:
                field = kwargs[name]
            elif spread is not None:
                field = (spread.get_field(name) if spread.kind is Kind.DICT else None) or spread_elem or UNKNOWN
            elif name in info.class_attrs:
                field = self._class_attribute(info, name, frame) or UNKNOWN
            else:
                field = UNKNOWN
            fields.append((name, field))
            if named_tuple:
                fields.append((index, field))
        return replace(value, fields=tuple(fields))

    @staticmethod
    def _module_place(module: Value, info: ClassInfo) -> Placement:
        registered = [v for _, v in module.fields if v.has("registered")]
        if any(v.place.on_host for v in registered):
            return HOST
        if any(v.place.on_device for v in registered):
            return registered[0].place if all(v.place == registered[0].place for v in registered) else UNKNOWN_PLACE
        if any(v.place.where is Where.UNKNOWN for v in registered) or info.library_base not in ("", "torch.nn.Module"):
            return UNKNOWN_PLACE
        return NO_TENSORS

    def call_function(self, fn: cst.CSTNode, args: list[Value], kwargs: dict[str, Value], node: cst.CSTNode,
                      frame: Frame, *, class_info: ClassInfo | None = None, is_method: bool = False,
                      role: str = "", want_self: bool = False) -> Value:
        self.analysed.add(id(fn))
        if frame.depth >= MAX_CALL_DEPTH or id(fn) in self._active or self.steps_left <= 0:
            return UNKNOWN
        params = fn.params
        if isinstance(fn, cst.FunctionDef) and any(isinstance(d.decorator, (cst.Name, cst.Attribute))
                                                   and (dotted(d.decorator) or "").endswith("property")
                                                   for d in fn.decorators):
            pass
        if isinstance(fn, cst.FunctionDef) and any((dotted(d.decorator) or "") == "staticmethod" for d in fn.decorators):
            if is_method and args:
                args = args[1:]
        if not role and is_method and frame.ctx.role == "init" and args and args[0].obj and frame.self_name \
                and frame.env.get(frame.self_name, UNKNOWN).obj == args[0].obj \
                and getattr(getattr(fn, "name", None), "value", "") != "forward":
            role = "init"  # `self._build()` called from `__init__` sets up the instance like __init__
        memo_key = (id(fn), tuple(_shape(a) for a in args),
                    tuple(sorted(((k, _shape(v)) for k, v in kwargs.items()), key=lambda kv: kv[0])),
                    role, want_self)
        try:
            cached = self._memo.get(memo_key)
        except TypeError:
            cached = None
            memo_key = None
        if cached is not None and self._worker_moves:
            cached = None  # a call made for a DataLoader: its device work must be seen for this loader
        if cached is not None:
            result, updates, arg_objs, first_new = cached
            mapping = {old: a.obj for old, a in zip(arg_objs, args) if old and a.obj}
            for obj, new in updates.items():
                self.rebind(frame, mapping.get(obj, obj), self._fresh_objects(new, mapping, first_new))
            return self._fresh_objects(result, mapping, first_new)
        first_new = new_obj_id()
        env: dict[str, Value] = {}
        positional = list(params.posonly_params) + list(params.params)
        remaining = list(args)
        for param in positional:
            pname = param.name.value
            if remaining:
                env[pname] = remaining.pop(0).named(pname) if not (is_method and not env) else remaining.pop(0)
            elif pname in kwargs:
                env[pname] = kwargs[pname].named(pname)
            elif param.default is not None:
                env[pname] = self.eval(param.default, Frame(self.module_env, Context(), frame.depth, True))
            else:
                env[pname] = UNKNOWN
        for param in params.kwonly_params:
            pname = param.name.value
            if pname in kwargs:
                env[pname] = kwargs[pname].named(pname)
            elif param.default is not None:
                env[pname] = self.eval(param.default, Frame(self.module_env, Context(), frame.depth, True))
            else:
                env[pname] = UNKNOWN
        if isinstance(params.star_arg, cst.Param):
            env[params.star_arg.name.value] = Value(Kind.TUPLE, NO_TENSORS, elem=join(remaining[0], remaining[-1])
                                                    if remaining else None)
        if params.star_kwarg is not None:
            env[params.star_kwarg.name.value] = Value(Kind.DICT, NO_TENSORS)
        name = fn.name.value if isinstance(fn, cst.FunctionDef) else "<lambda>"
        qualname = f"{class_info.name}.{name}" if class_info is not None else name
        if not role:
            role = "method" if is_method else "function"
            if class_info is not None and class_info.is_module and name == "forward":
                role = "forward"
            if class_info is not None and name == "__init__":
                role = "init"
            if class_info is not None and class_info.is_dataset and name == "__getitem__":
                role = "getitem"
        callers = frame.ctx.callers + ((frame.ctx.function,) if not frame.module_level or frame.ctx.function != "<module>" else ())
        no_grad = frame.ctx.no_grad or (class_info is None and bool(_EVAL_NAME.search(name)) and False)
        ctx = Context(function=qualname, role=role, class_name=class_info.name if class_info else "",
                      loops=frame.ctx.loops if role not in ("forward", "getitem", "collate", "init") else (),
                      no_grad=no_grad, guarded=frame.ctx.guarded, default_device=frame.ctx.default_device,
                      callers=callers[-4:])
        home = self._enter_home(fn)
        if home is not None:
            ctx = replace(ctx, path=home[3])
        elif frame.ctx.path:
            ctx = replace(ctx, path=frame.ctx.path)
        inner = Frame(env, ctx, frame.depth + 1, False, fn)
        if is_method and positional:
            inner.self_name = positional[0].name.value
        saved_stmt = self._stmt
        self._active.append(id(fn))
        try:
            if isinstance(fn, cst.Lambda):
                result = self.eval(fn.body, inner)
            else:
                if self._is_generator(fn):
                    self.exec_block(_block(fn.body), inner)
                    result = UNKNOWN
                else:
                    self.exec_block(_block(fn.body), inner)
                    result = NONE_VALUE
                    for r in inner.returns:
                        result = r if result is NONE_VALUE else self._join_returns(result, r, fn, inner)
        finally:
            self._active.pop()
            self._stmt = saved_stmt
            if home is not None:
                self.imports, self.module_env, self.module = home[:3]
        updates: dict[int, Value] = {}
        for value in args:
            if value.obj:
                for current in inner.env.values():
                    if current.obj == value.obj and current != value:
                        updates[value.obj] = current
                        break
        for obj, new in updates.items():
            self.rebind(frame, obj, new)
        if want_self:
            self_value = inner.env.get(inner.self_name) if inner.self_name else None
            result = self_value if self_value is not None else UNKNOWN
        if memo_key is not None:
            self._memo[memo_key] = (result, updates, tuple(a.obj for a in args), first_new)
        return result

    def _join_returns(self, a: Value, b: Value, fn: cst.CSTNode, frame: Frame) -> Value:
        """Join two returned values; a helper returning a GPU or the CPU (`try_gpu()`) returns a
        device with a CPU fallback, not an unknown one."""
        if self._is_deviceish(a) and self._is_deviceish(b):
            gpu = next((v.place for v in (a, b) if v.place.where in (Where.DEVICE, Where.COND)), None)
            cpu = any(v.place.on_host or v.has("cpu_fallback") for v in (a, b))
            if gpu is not None and cpu:
                checks = any(isinstance(e, Made) and e.what == "cuda_query" and e.ctx.function == frame.ctx.function
                             for e in self.events[-50:])  # `if torch.cuda.device_count() > i:` in the helper
                condition = "torch.cuda.is_available()" if checks else None
                place = Placement(Where.DEVICE, gpu.device, gpu.node, ident=devices.with_fallback(gpu.ident, condition))
                value = Value(Kind.DEVICE, place, facts=frozenset({"cpu_fallback"}))
                self.emit(Made(fn, self.ctx(frame), "cpu_fallback", "", value, text=code_of(fn)[:80]))
                return value
        return join(a, b)

    @staticmethod
    def _fresh_objects(value: Value, renamed: dict[int, int], first_new: int) -> Value:
        """A memoised call speaks of the first call's arguments and builds new objects each
        time: map its arguments to this call's, and give the objects it made new identities."""
        mapping: dict[int, int] = dict(renamed)

        def renew(v: Value, depth: int = 0) -> Value:
            obj = v.obj
            if obj in mapping:
                obj = mapping[obj]
            elif obj >= first_new:
                obj = mapping.setdefault(obj, new_obj_id())
            if depth > 3:
                return replace(v, obj=obj) if obj != v.obj else v
            fields = tuple((k, renew(f, depth + 1)) for k, f in v.fields)
            elem = renew(v.elem, depth + 1) if v.elem is not None else None
            if obj == v.obj and fields == v.fields and elem is v.elem:
                return v
            return replace(v, obj=obj, fields=fields, elem=elem)

        return renew(value)

    def _is_generator(self, fn: cst.FunctionDef) -> bool:
        cached = self._generators.get(id(fn))
        if cached is None:
            if self._plain_functions is None:
                self._plain_functions = (_function_ids(self._yield_free_module)
                                         if self._yield_free_module is not None else set())
            cached = id(fn) not in self._plain_functions and _mentions_yield(fn)
            self._generators[id(fn)] = cached
        return cached


_PLACING = re.compile(r"\.cuda\(|\.to\(|device_map|[\"']cuda|torch\.device\(|set_device|"
                      r"DataLoader|accelerator|\.numpy\(|torch\.load|map_location|CUDA_VISIBLE")


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    """`if __name__ == "__main__":` (either operand order, either quote)."""
    if not isinstance(stmt, cst.If) or not isinstance(stmt.test, cst.Comparison):
        return False
    test = stmt.test
    if len(test.comparisons) != 1 or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = {code_of(test.left).strip(), code_of(test.comparisons[0].comparator).strip()}
    return "__name__" in sides and bool(sides & {'"__main__"', "'__main__'"})


def _count_lines(module: cst.Module) -> int:
    """A cheap size measure (statements are what the budget counts; lines track them)."""
    last = module.body[-1] if module.body else None
    if last is None:
        return 0
    return sum(1 + len(getattr(getattr(stmt, "body", None), "body", ()) or ()) for stmt in module.body)


def _option_dest(call: cst.Call) -> str | None:
    """The attribute `add_argument(...)` stores into: `dest=`, else the first long option
    (`--num-workers` gives `num_workers`), else the positional name."""
    names = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dest":
            return arg.value.evaluated_value if isinstance(arg.value, cst.SimpleString) else None
        if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
            text = arg.value.evaluated_value
            if isinstance(text, str):
                names.append(text)
    if not names:
        return None
    chosen = next((n for n in names if n.startswith("--")), names[0])
    return chosen.lstrip("-").replace("-", "_") or None


_NUMBER_FUNCTIONS = frozenset({"min", "max", "abs", "int", "float", "round", "len", "sum", "pow"})
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)


def _is_number_expression(node: cst.BaseExpression) -> bool:
    """Arithmetic that visibly makes a Python number (`(max_position - 1) / mid`, `min(a, b)`,
    `math.log(n)`) even when its operands are unknown: `torch.tensor` of it is 0-dim."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, (cst.Minus, cst.Plus)) and _is_number_expression(node.expression)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _ARITHMETIC):
        sides = (node.left, node.right)
        if any(isinstance(side, (cst.List, cst.Tuple, cst.ListComp, cst.Set, cst.Dict)) for side in sides):
            return False  # `[0] * n` is a list
        return any(_is_number_expression(side) for side in sides)
    if isinstance(node, cst.Call):
        name = dotted(node.func) or ""
        return name in _NUMBER_FUNCTIONS or name.startswith("math.")
    return False


def _objects_within(value: Value, depth: int = 0, found: set[int] | None = None) -> set[int]:
    """The mutable objects `rebind` can reach in `value`: its own and its parts' down to the depth
    its walk goes (objects are compared at depths 0-4, parts entered at depths 0-3)."""
    if found is None:
        found = set()
    if value.obj:
        found.add(value.obj)
    if depth <= 3:
        for _, part in value.fields:
            _objects_within(part, depth + 1, found)
        if value.elem is not None:
            _objects_within(value.elem, depth + 1, found)
    return found


def _of_setting_holder(node: cst.CSTNode | None) -> bool:
    """`args.device`, `self.device`: an attribute of a name that holds the program's settings
    (the chosen device), not of a tensor the analysis cannot see."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) \
        and node.value.value in _SETTING_HOLDERS


def _shape(value: Value, depth: int = 0) -> Value:
    """A value without object identities, as a memo key: two instances of one class that hold
    the same abstract state behave the same in a call."""
    if depth > 2 or not (value.obj or value.fields or value.elem is not None):
        return value
    return value.evolve(obj=0, fields=tuple((k, _shape(f, depth + 1)) for k, f in value.fields),
                        elem=_shape(value.elem, depth + 1) if value.elem is not None else None)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_SUITE_HOLDERS = (cst.BaseCompoundStatement, cst.BaseSuite, cst.Else, cst.Finally, cst.ExceptHandler,
                  cst.ExceptStarHandler, cst.MatchCase, cst.If)
# per node type: (is a CSTNode, holds statement blocks); libcst's classes are ABCs, whose
# isinstance checks cost more than these walks themselves
_NODE_KINDS: dict[type, tuple[bool, bool]] = {}


def _node_kind(kind: type) -> tuple[bool, bool]:
    known = _NODE_KINDS.get(kind)
    if known is None:
        known = _NODE_KINDS[kind] = (issubclass(kind, cst.CSTNode), issubclass(kind, _SUITE_HOLDERS))
    return known


def _field_names(node: cst.CSTNode) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(type(node))
    if names is None:
        names = _FIELD_NAMES[type(node)] = tuple(f.name for f in dataclass_fields(node))  # type: ignore[arg-type]
    return names


def _function_ids(module: cst.Module) -> set[int]:
    """ids of every FunctionDef in the module, found through statement blocks only (a def can
    only stand in one), so no expression is visited."""
    ids: set[int] = set()
    stack: list[cst.CSTNode] = list(module.body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.FunctionDef:
            ids.add(id(node))
        elif kind is cst.SimpleStatementLine or not _node_kind(kind)[1]:
            continue
        for name in _field_names(node):
            value = getattr(node, name)
            if isinstance(value, (tuple, list)):
                stack.extend(item for item in value if (_NODE_KINDS.get(type(item)) or _node_kind(type(item)))[1])
            elif (_NODE_KINDS.get(type(value)) or _node_kind(type(value)))[1]:
                stack.append(value)
    return ids


def _mentions_yield(fn: cst.FunctionDef) -> bool:
    """Whether the function's own statements (nested functions and classes left out) contain the
    text "yield": a `yield`, or a name, string or comment holding it.

    The same answer as looking for "yield" in the generated code of those statements, read from
    the nodes' fields instead: generating the code cost more than the rest of the analysis."""
    stack: list[object] = [stmt for stmt in _block(fn.body)
                           if type(stmt) is not cst.FunctionDef and type(stmt) is not cst.ClassDef]
    while stack:
        node = stack.pop()
        if type(node) is cst.Yield:
            return True
        for name in _field_names(node):  # type: ignore[arg-type]
            value = getattr(node, name)
            kind = type(value)
            if kind is str:
                if "yield" in value:
                    return True
            elif kind is tuple or kind is list:
                for item in value:
                    if type(item) is str:
                        if "yield" in item:
                            return True
                    elif (_NODE_KINDS.get(type(item)) or _node_kind(type(item)))[0]:
                        stack.append(item)
            elif (_NODE_KINDS.get(kind) or _node_kind(kind))[0]:
                stack.append(value)
    return False


_STATEMENTS: dict[type, Callable] = {
    cst.SimpleStatementLine: Interpreter._exec_simple_line,
    cst.If: Interpreter._exec_if,
    cst.For: Interpreter._exec_for,
    cst.While: Interpreter._exec_while,
    cst.With: Interpreter._exec_with,
    cst.Try: Interpreter._exec_try,
    cst.FunctionDef: Interpreter._exec_function_def,
    cst.ClassDef: Interpreter._exec_class_def,
}
if hasattr(cst, "Match"):
    _STATEMENTS[cst.Match] = Interpreter._exec_match
if hasattr(cst, "TryStar"):
    _STATEMENTS[cst.TryStar] = Interpreter._exec_try

_SMALL: dict[type, Callable] = {
    cst.Expr: Interpreter._exec_expr,
    cst.Assign: Interpreter._exec_assign,
    cst.AnnAssign: Interpreter._exec_ann_assign,
    cst.AugAssign: Interpreter._exec_aug_assign,
    cst.Return: Interpreter._exec_return,
    cst.Assert: Interpreter._exec_assert,
    cst.Import: Interpreter._exec_import,
    cst.ImportFrom: Interpreter._exec_import_from,
    cst.Del: Interpreter._exec_del,
}

_EXPRESSIONS: dict[type, Callable] = {
    cst.Name: Interpreter._eval_name,
    cst.Attribute: Interpreter._eval_attribute,
    cst.Subscript: Interpreter._eval_subscript,
    cst.Tuple: Interpreter._eval_tuple,
    cst.List: Interpreter._eval_tuple,
    cst.Dict: Interpreter._eval_dict,
    cst.ListComp: Interpreter._eval_comp,
    cst.SetComp: Interpreter._eval_comp,
    cst.GeneratorExp: Interpreter._eval_comp,
    cst.DictComp: Interpreter._eval_comp,
    cst.SimpleString: Interpreter._eval_string,
    cst.ConcatenatedString: Interpreter._eval_string,
    cst.FormattedString: Interpreter._eval_string,
    cst.Integer: Interpreter._eval_number,
    cst.Float: Interpreter._eval_number,
    cst.Imaginary: Interpreter._eval_number,
    cst.BinaryOperation: Interpreter._eval_binary,
    cst.Comparison: Interpreter._eval_comparison,
    cst.UnaryOperation: Interpreter._eval_unary,
    cst.BooleanOperation: Interpreter._eval_boolean,
    cst.IfExp: Interpreter._eval_ifexp,
    cst.Lambda: Interpreter._eval_lambda,
    cst.Await: Interpreter._eval_await,
    cst.NamedExpr: Interpreter._eval_walrus,
    cst.StarredElement: Interpreter._eval_starred,
}
