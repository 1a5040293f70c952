"""When in a run a statement executes: the phase that ranks a finding.

A crash at the first training step shows up in seconds; one in the evaluation loop, at
checkpoint reload or in inference code costs the hours of training before it. The phase of a
finding comes from the shape of the program around the event, read from the syntax once per
analysed file and only when a rule reports something:

- a loop whose body (directly or through a function of the program) calls `backward()` or
  `optimizer.step()` is a *training loop*; what runs inside it is the training step, even under
  `torch.no_grad()` (a frozen teacher);
- a statement that follows a training loop, or a call of a function that contains one
  (`train_one_epoch(...)`, `trainer.fit(...)`), in the same block or an enclosing one runs only
  after training: evaluation (`evaluate(model, val_loader)` in the epoch loop);
- a statement after `model.eval()` (until `model.train()`) runs in evaluation, unless a training
  loop follows in the same function (`teacher.eval()` before distillation);
- a function that does neither is judged at its call site, found by name in its caller (the
  analysis records the call chain), so a helper called from the training loop trains;
- `torch.load` / `load_state_dict` sites reload a checkpoint; a program without any training is
  inference code.

Ranking depends on it, nothing else: a wrong phase orders findings differently, it never adds or
removes one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from devlint.analysis.syntax import code_children
from devlint.findings import Phase
from devlint.knowledge import conventions

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Context

__all__ = ["PhaseOracle"]

TRAIN = "train"
AFTER = "after"
BEFORE = "before"  # ahead of the training loop in a function that trains: it runs at start-up
NONE = ""

_EVAL = conventions.EVALUATION_NAMES
_INFER = conventions.INFERENCE_NAMES
_CKPT_FN = conventions.CHECKPOINT_NAMES
_OPTIMIZER = conventions.OPTIMIZER_NAMES
_TRAINER = conventions.TRAINER_NAMES
_STEP_HOOKS = conventions.STEP_HOOKS
_LOADS = conventions.RELOAD_METHODS
_LOOPS = (cst.For, cst.While)
_LOOP_TYPES = frozenset(_LOOPS)
_STATEMENT: dict[type, bool] = {}


def _is_statement(kind: type) -> bool:
    value = _STATEMENT.get(kind)
    if value is None:
        value = _STATEMENT[kind] = issubclass(kind, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return value


def _dotted(node: cst.CSTNode) -> str:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        inner = _dotted(node.value)
        return f"{inner}.{node.attr.value}" if inner else ""
    if type(node) is cst.Call:
        return _dotted(node.func)
    return ""


def _is_step(call: cst.Call) -> bool:
    """`loss.backward()`, `optimizer.step()`, `scaler.step(optimizer)`, `accelerator.backward(loss)`."""
    func = call.func
    if type(func) is not cst.Attribute:
        return False
    attr = func.attr.value
    if attr in ("backward", "manual_backward"):
        return True
    if attr == "step":
        receiver = _dotted(func.value).rsplit(".", 1)[-1]
        if _OPTIMIZER.search(receiver):
            return True
        first = call.args[0].value if call.args else None
        return first is not None and bool(_OPTIMIZER.search(_dotted(first).rsplit(".", 1)[-1]))
    return False


def _is_trainer_run(call: cst.Call) -> bool:
    """`trainer.fit(model)` (Lightning), `trainer.train()` (transformers): a whole training run."""
    func = call.func
    return (
        type(func) is cst.Attribute
        and func.attr.value in ("fit", "train")
        and bool(_TRAINER.search(_dotted(func.value)))
    )


def _mode_switch(call: cst.Call) -> str:
    """"eval" for `m.eval()` / `m.train(False)`, "train" for `m.train()`, else ""."""
    func = call.func
    if type(func) is not cst.Attribute or _TRAINER.search(_dotted(func.value)):
        return ""
    if func.attr.value == "eval" and not call.args:
        return "eval"
    if func.attr.value == "train" and len(call.args) <= 1:
        arg = call.args[0].value if call.args else None
        if type(arg) is cst.Name and arg.value == "False":
            return "eval"
        return "train"
    return ""


def _call_key(call: cst.Call) -> tuple[str, str] | None:
    """How a call names a program function: ("name", f) for `f(...)`, ("attr", m) for `x.m(...)`."""
    if type(call.func) is cst.Name:
        return ("name", call.func.value)
    if type(call.func) is cst.Attribute:
        if _mode_switch(call):
            return None  # `model.train()` switches a mode; it never calls the program's `train()`
        return ("attr", call.func.attr.value)
    return None


def _blocks(stmt: cst.CSTNode) -> list[tuple[Iterable[cst.CSTNode], bool]]:
    """The statement lists nested in a compound statement; True marks a loop's own body."""
    out: list[tuple[Iterable[cst.CSTNode], bool]] = []

    def body(suite: cst.CSTNode | None) -> Iterable[cst.CSTNode]:
        if suite is None:
            return ()
        inner = getattr(suite, "body", ())
        return inner if isinstance(inner, (list, tuple)) else ()

    if isinstance(stmt, _LOOPS):
        out.append((body(stmt.body), True))
        if stmt.orelse is not None:
            out.append((body(stmt.orelse.body), False))
    elif type(stmt) is cst.If:
        out.append((body(stmt.body), False))
        if stmt.orelse is not None:
            other = stmt.orelse
            out.append(([other], False) if type(other) is cst.If else (body(other.body), False))
    elif type(stmt) is cst.With:
        out.append((body(stmt.body), False))
    elif isinstance(stmt, (cst.Try, cst.TryStar)):
        out.append((body(stmt.body), False))
        for handler in stmt.handlers:
            out.append((body(handler.body), False))
        if stmt.orelse is not None:
            out.append((body(stmt.orelse.body), False))
        if stmt.finalbody is not None:
            out.append((body(stmt.finalbody.body), False))
    elif isinstance(stmt, cst.Match):
        for case in stmt.cases:
            out.append((body(case.body), False))
    return out


def _header(stmt: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions a compound statement evaluates itself (not its blocks)."""
    if type(stmt) is cst.For:
        return [stmt.iter]
    if type(stmt) is cst.While or type(stmt) is cst.If:
        return [stmt.test]
    if type(stmt) is cst.With:
        return [item.item for item in stmt.items]
    return []


@dataclass(frozen=True)
class _Facts:
    owner: cst.FunctionDef | None  # the function the statement is in; None at module level
    verdict: str  # TRAIN, AFTER, BEFORE or NONE, from the owner's own body
    region: int  # index of the `.eval()` region it is in, -1 for none


class PhaseOracle:
    """Answers `phase(ctx)` for the events of one analysed program (the checked file and the
    project files the analysis reached)."""

    def __init__(self, modules: Iterable[cst.Module], main: cst.Module) -> None:
        self._modules = list(modules)
        self._main = main
        self._calls: dict[int, tuple[cst.Call, ...]] = {}
        self._loops: dict[int, tuple[cst.CSTNode, ...]] = {}
        self._facts: dict[int, _Facts] = {}
        self._sites: dict[int | None, list[tuple[cst.CSTNode, frozenset[tuple[str, str]]]]] = {}
        self._functions: dict[str, list[cst.FunctionDef]] = {}  # simple name -> defs
        self._methods: dict[str, list[cst.FunctionDef]] = {}  # method name -> defs
        self._qualnames: dict[str, list[cst.FunctionDef]] = {}
        self._is_method: set[int] = set()
        self._fn_trains: dict[int, bool] = {}
        self._fn_epoch: dict[int, bool] = {}
        self._void: list[bool] = []
        self._state = ""  # "" not read yet, "ready", or "too deep" (a RecursionError reading it)
        self.trains = False
        self.driver = False

    def _build(self) -> None:
        for module in self._modules:
            self._collect_defs(module.body, "")
        for module in self._modules:
            self._walk_owner(None, module.body)
        # every function's body and every module's top level: all the calls of the program
        # (the walk above has read them already)
        scopes = [m for m in self._modules] + [fn.body for defs in self._qualnames.values() for fn in defs]
        self.trains = any(
            _is_step(call) or _is_trainer_run(call) for scope in scopes for call in self._calls_in(scope)
        ) or any(name in self._methods for name in _STEP_HOOKS)
        self.driver = self._is_driver(self._main)

    # --- the answer ------------------------------------------------------------------------
    def phase(self, ctx: "Context") -> Phase:
        """When the statement of `ctx` runs, as a Phase (UNKNOWN when the program is too
        deeply nested to read)."""
        if self._state == "too deep":
            return Phase.UNKNOWN
        try:
            if not self._state:
                self._build()
                self._state = "ready"
            return self._phase(ctx)
        except RecursionError:
            self._state = "too deep"
            return Phase.UNKNOWN

    def _phase(self, ctx: "Context") -> Phase:
        names = (ctx.function, *ctx.callers)
        stmt = ctx.statement
        if stmt is not None and self._loads_checkpoint(stmt):
            return Phase.CHECKPOINT
        if _CKPT_FN.search(ctx.function):
            return Phase.CHECKPOINT
        if any(_INFER.search(name) for name in names):
            return Phase.INFERENCE
        if ctx.role in ("forward", "getitem", "collate"):
            # the first batch runs it: in training when the program trains
            return Phase.TRAINING if self.trains else (Phase.INFERENCE if self.driver else Phase.UNKNOWN)
        verdict, eval_mode = self._verdict(stmt, ctx.callers) if stmt is not None else (NONE, False)
        if verdict == TRAIN:
            return Phase.TRAINING
        if verdict == AFTER:
            return Phase.EVALUATION
        if verdict == BEFORE:
            return Phase.MODULE
        if eval_mode or ctx.no_grad or any(_EVAL.search(name) for name in names):
            return Phase.EVALUATION if self.trains else Phase.INFERENCE
        if not self.trains:
            return Phase.INFERENCE if self.driver else Phase.UNKNOWN
        if ctx.function == "<module>" and not ctx.callers and not ctx.loops:
            return Phase.MODULE
        return Phase.TRAINING

    def _verdict(self, stmt: cst.CSTNode, callers: tuple[str, ...], depth: int = 0) -> tuple[str, bool]:
        facts = self._facts.get(id(stmt))
        if facts is None:
            return NONE, False
        eval_mode = facts.region >= 0 and not self._void[facts.region]
        if facts.verdict:
            return facts.verdict, eval_mode
        owner = facts.owner
        if owner is None:
            return NONE, eval_mode
        if self._trains(owner):
            return TRAIN, eval_mode
        if depth >= 8:
            return NONE, eval_mode
        site = self._call_site(owner, callers)
        if site is None:
            return NONE, eval_mode
        verdict, outer_eval = self._verdict(site, callers[:-1], depth + 1)
        return verdict, eval_mode or outer_eval

    def _call_site(self, fn: cst.FunctionDef, callers: tuple[str, ...]) -> cst.CSTNode | None:
        """The first statement (in source order) of the caller that calls `fn` by name."""
        key = ("attr" if id(fn) in self._is_method else "name", fn.name.value)
        owners: list[int | None]
        if callers:
            owners = [id(d) for d in self._qualnames.get(callers[-1], [])]
        else:
            owners = [None]  # reached from module level (or an entry no call reached)
        for owner in owners:
            for stmt, keys in self._sites.get(owner, []):
                if key in keys:
                    return stmt
        return None

    # --- what trains ------------------------------------------------------------------------
    def _resolve(self, call: cst.Call) -> list[cst.FunctionDef]:
        key = _call_key(call)
        if key is None:
            return []
        kind, name = key
        return self._functions.get(name, []) if kind == "name" else self._methods.get(name, [])

    def _trains(self, fn: cst.FunctionDef) -> bool:
        """Does a call of `fn` take a training step (or several)?"""
        if id(fn) in self._fn_trains:
            return self._fn_trains[id(fn)]
        self._fn_trains[id(fn)] = False  # recursion guard
        # Lightning calls `training_step` once per batch: it is the training step
        result = fn.name.value in _STEP_HOOKS or self._node_trains(fn.body)
        self._fn_trains[id(fn)] = result
        return result

    def _epoch_level(self, fn: cst.FunctionDef) -> bool:
        """Does a call of `fn` run a whole training loop (`train_one_epoch`, `fit`)?"""
        if id(fn) in self._fn_epoch:
            return self._fn_epoch[id(fn)]
        self._fn_epoch[id(fn)] = False
        result = self._is_unit(fn.body)
        self._fn_epoch[id(fn)] = result
        return result

    def _node_trains(self, node: cst.CSTNode) -> bool:
        for call in self._calls_in(node):
            if _is_step(call) or _is_trainer_run(call):
                return True
            if any(self._trains(fn) for fn in self._resolve(call)):
                return True
        return False

    def _is_unit(self, node: cst.CSTNode) -> bool:
        """Does running `node` complete at least one training loop, so what follows it runs
        after training?"""
        if any(self._node_trains(loop) for loop in self._loops_in(node)):
            return True
        for call in self._calls_in(node):
            if _is_trainer_run(call):
                return True
            if any(self._epoch_level(fn) for fn in self._resolve(call)):
                return True
        return False

    # --- the syntax, once -------------------------------------------------------------------
    def _gather(self, root: cst.CSTNode) -> None:
        """Calls and loops under `root`, not inside nested functions, classes or lambdas.
        Statements are remembered (each is read once, however often it is asked about);
        expressions are walked with an explicit stack, so deep nesting cannot exhaust it."""
        calls: list[cst.Call] = []
        loops: list[cst.CSTNode] = []
        stack = [root]
        while stack:
            node = stack.pop()
            if node is not root:
                cached = self._calls.get(id(node))
                if cached is None and _is_statement(type(node)):
                    self._gather(node)
                    cached = self._calls[id(node)]
                if cached is not None:
                    calls.extend(cached)
                    loops.extend(self._loops[id(node)])
                    continue
            kind = type(node)
            if kind is cst.Call:
                calls.append(node)  # type: ignore[arg-type]
            elif kind in _LOOP_TYPES:
                loops.append(node)
            stack.extend(code_children(node, scopes=False))
        self._calls[id(root)] = tuple(calls)
        self._loops[id(root)] = tuple(loops)

    def _calls_in(self, node: cst.CSTNode) -> tuple[cst.Call, ...]:
        if id(node) not in self._calls:
            self._gather(node)
        return self._calls[id(node)]

    def _loops_in(self, node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
        if id(node) not in self._loops:
            self._gather(node)
        return self._loops[id(node)]

    def _loads_checkpoint(self, stmt: cst.CSTNode) -> bool:
        nodes = _header(stmt) if type(stmt) is not cst.SimpleStatementLine else [stmt]
        for node in nodes:
            for call in self._calls_in(node):
                func = call.func
                if type(func) is cst.Attribute and func.attr.value in _LOADS:
                    return True
                if _dotted(func) == "torch.load":
                    return True
        return False

    def _collect_defs(self, stmts: Iterable[cst.CSTNode], klass: str) -> None:
        for stmt in stmts:
            if type(stmt) is cst.FunctionDef:
                name = stmt.name.value
                qual = f"{klass}.{name}" if klass else name
                self._qualnames.setdefault(qual, []).append(stmt)
                if klass:
                    self._methods.setdefault(name, []).append(stmt)
                    self._is_method.add(id(stmt))
                else:
                    self._functions.setdefault(name, []).append(stmt)
                self._collect_defs(self._suite(stmt.body), "")
            elif type(stmt) is cst.ClassDef:
                self._collect_defs(self._suite(stmt.body), stmt.name.value)
            else:
                for block, _ in _blocks(stmt):
                    self._collect_defs(block, klass)

    @staticmethod
    def _suite(suite: cst.CSTNode) -> Iterable[cst.CSTNode]:
        inner = getattr(suite, "body", ())
        return inner if isinstance(inner, (list, tuple)) else ()

    def _walk_owner(self, owner: cst.FunctionDef | None, stmts: Iterable[cst.CSTNode]) -> None:
        region = [-1]  # the open `.eval()` region of this owner, in source order
        self._walk_block(owner, stmts, NONE, region)

    def _walk_block(self, owner: cst.FunctionDef | None, stmts: Iterable[cst.CSTNode], inherited: str,
                    region: list[int]) -> None:
        after = False
        sites = self._sites.setdefault(id(owner) if owner is not None else None, [])
        ahead: list[int] = []  # statements of this block before its first training loop
        for stmt in stmts:
            if type(stmt) is cst.FunctionDef:
                self._walk_owner(stmt, self._suite(stmt.body))
                continue
            if type(stmt) is cst.ClassDef:
                self._walk_block(owner, self._suite(stmt.body), inherited, region)
                continue
            verdict = AFTER if after else inherited
            loop_trains = isinstance(stmt, _LOOPS) and self._node_trains(stmt)
            if loop_trains and region[0] >= 0:
                # `teacher.eval()` before a training loop put a frozen model in eval mode
                self._void[region[0]] = True
                region[0] = -1
            self._facts[id(stmt)] = _Facts(owner, verdict, region[0])
            if type(stmt) is cst.SimpleStatementLine:
                keys = set()
                for call in self._calls_in(stmt):
                    switch = _mode_switch(call)
                    if switch == "eval":
                        self._void.append(False)
                        region[0] = len(self._void) - 1
                    elif switch == "train":
                        region[0] = -1
                    key = _call_key(call)
                    if key is not None:
                        keys.add(key)
                sites.append((stmt, frozenset(keys)))
            else:
                keys = {k for node in _header(stmt) for c in self._calls_in(node) if (k := _call_key(c))}
                if keys:
                    sites.append((stmt, frozenset(keys)))
                for block, loop_body in _blocks(stmt):
                    child = verdict if verdict == AFTER else (TRAIN if loop_body and loop_trains else verdict)
                    self._walk_block(owner, block, child, region)
            if self._is_unit(stmt):
                if not after and inherited == NONE:
                    for earlier in ahead:  # `loader = loader.to(device)` in main() before training
                        self._facts[earlier] = _Facts(owner, BEFORE, self._facts[earlier].region)
                after = True
            elif not after and not loop_trains:
                ahead.append(id(stmt))

    @staticmethod
    def _is_driver(module: cst.Module) -> bool:
        """Does the file run something (a script), rather than only define things (a library)?"""
        for stmt in module.body:
            if type(stmt) in (cst.For, cst.While, cst.With):
                return True
            if type(stmt) is cst.If and "__name__" in cst.Module([]).code_for_node(stmt.test):
                return True
            if type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Expr and type(small.value) is cst.Call:
                        return True
        return False
