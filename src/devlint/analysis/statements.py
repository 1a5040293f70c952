"""Statements: each executes over a frame, in program order, and records what it observes.

Compound statements fork and join frames (analysis/flow.py); assignments bind names, set
attributes by nn.Module's registration rules (through the analyzer) and rebind aliases.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.events import LoopKind, SiteKind
from devlint.analysis.flow import fork, join_envs, run_loop
from devlint.analysis.narrowing import body_literals, else_literals, narrow, placement_decides, test_literal, type_test_decided
from devlint.analysis.placement import alternatives, on_a_gpu
from devlint.analysis.library.environment import device_dispatch, record_cpu_test, record_env_write
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import block, code_of, constant_key, dotted, terminates
from devlint.analysis.values import (
    NO_TENSORS,
    NONE_VALUE,
    ORIGIN_BATCH,
    STR,
    TENSORISH,
    UNKNOWN,
    Kind,
    Origin,
    Placement,
    Value,
    Where,
    device_at,
)
from devlint.analysis.vocabulary import Fact, decided, known_str, str_fact_of
from devlint.knowledge import conventions, matches
from devlint.knowledge import libraries as lib
from devlint.knowledge import torch as tk

_MAIN_TEST = re.compile(r"__name__\s*==\s*['\"]__main__['\"]")
_INDEXED_OWNERS = frozenset({Kind.DICT, Kind.BATCH, Kind.ENCODING, Kind.LIST, Kind.OBJECT})
_CONSTANT_KINDS = frozenset({Kind.SCALAR, Kind.STR, Kind.NONE})


# --- simple statements -----------------------------------------------------------------------

def exec_simple_line(an: Analyzer, stmt: cst.SimpleStatementLine, frame: Frame) -> None:
    for small in stmt.body:
        frame.stmt = stmt
        handler = SMALL_STATEMENTS.get(type(small))
        if handler is not None:
            handler(an, small, frame)


def exec_expr(an: Analyzer, node: cst.Expr, frame: Frame) -> None:
    an.eval(node.value, frame, statement=True)


def exec_assign(an: Analyzer, node: cst.Assign, frame: Frame) -> None:
    value = an.eval(node.value, frame)
    for target in node.targets:
        an.assign(target.target, value, frame, node)


def exec_ann_assign(an: Analyzer, node: cst.AnnAssign, frame: Frame) -> None:
    if node.value is not None:
        an.assign(node.target, an.eval(node.value, frame), frame, node)


def exec_aug_assign(an: Analyzer, node: cst.AugAssign, frame: Frame) -> None:
    left = an.eval(node.target, frame)
    right = an.eval(node.value, frame)
    result = an.binary(node, left, right, code_of(node.operator).strip("= ") or "op", frame)
    an.assign(node.target, result, frame, node)


def exec_assert(an: Analyzer, node: cst.Assert, frame: Frame) -> None:
    an.eval(node.test, frame)  # `assert torch.cuda.is_available()` is a CUDA check
    narrow(an, node.test, frame, True)  # what the assertion states holds after it


def exec_return(an: Analyzer, node: cst.Return, frame: Frame) -> None:
    value = an.eval(node.value, frame) if node.value is not None else NONE_VALUE
    # inside a loop the path is not known: a return in one iteration ends the others
    frame.returns.append((frame.path if frame.loop is None else None, value))


def exec_continue(an: Analyzer, node: cst.Continue, frame: Frame) -> None:
    if frame.jumps is not None:  # the state goes back to the loop head (flow.run_loop)
        frame.jumps.continues.append((dict(frame.env), frame.path))


def exec_break(an: Analyzer, node: cst.Break, frame: Frame) -> None:
    if frame.jumps is not None:  # the state leaves the loop (flow.run_loop)
        frame.jumps.breaks.append((dict(frame.env), frame.path))


def exec_import(an: Analyzer, node: cst.Import, frame: Frame) -> None:
    frame.scope.imports.add_import(node)
    for alias in node.names:
        local = (alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name
                 else (dotted(alias.name) or "").split(".")[0])
        frame.env.pop(local, None)


def exec_import_from(an: Analyzer, node: cst.ImportFrom, frame: Frame) -> None:
    frame.scope.imports.add_import_from(node)
    if isinstance(node.names, cst.ImportStar):
        return
    for alias in node.names:
        local = (alias.asname.name.value if alias.asname is not None and type(alias.asname.name) is cst.Name
                 else dotted(alias.name) or "")
        frame.env.pop(local, None)


def exec_del(an: Analyzer, node: cst.Del, frame: Frame) -> None:
    if type(node.target) is cst.Name:
        frame.env.pop(node.target.value, None)


# a handler takes the node of the type it is keyed by
StatementHandler = Callable[[Analyzer, Any, Frame], None]

SMALL_STATEMENTS: dict[type[cst.CSTNode], StatementHandler] = {
    cst.Expr: exec_expr,
    cst.Assign: exec_assign,
    cst.AnnAssign: exec_ann_assign,
    cst.AugAssign: exec_aug_assign,
    cst.Return: exec_return,
    cst.Continue: exec_continue,
    cst.Break: exec_break,
    cst.Assert: exec_assert,
    cst.Import: exec_import,
    cst.ImportFrom: exec_import_from,
    cst.Del: exec_del,
}


# --- definitions -----------------------------------------------------------------------------

def exec_function_def(an: Analyzer, node: cst.FunctionDef, frame: Frame) -> None:
    frame.env[node.name.value] = Value(Kind.FUNCTION, NO_TENSORS, qualname=node.name.value, node=node)


def exec_class_def(an: Analyzer, node: cst.ClassDef, frame: Frame) -> None:
    an.define_class(node, frame)


# --- compound statements ---------------------------------------------------------------------

def exec_if(an: Analyzer, node: cst.If, frame: Frame) -> None:
    test_text = code_of(node.test)
    frame.stmt = node
    test = an.eval(node.test, frame)
    available = available_device_type(test)
    if available is not None:
        an.availability_conds.add(conditions.normalize(test_text))
    if _MAIN_TEST.fullmatch(test_text):
        an.exec_block(block(node.body), frame)
        return
    known = decided(test)
    if known is None:  # `if x.is_cuda:` for a tensor on the host here
        known = placement_decides(an, node.test, frame)
    if known is not None:  # a literal, or a comparison of known constants: the other branch is dead
        _run_branch(an, node, frame, known)
        return
    # a type test the value answers (`isinstance(x, np.ndarray)` of a tensor): the branch it
    # rules out is not run (it stays a path, empty, so what follows the `if` is as before)
    typed = type_test_decided(an, node.test, frame)
    lit = test_literal(an, node.test, frame, available)
    holds = frozenset(body_literals(an, node.test, frame, available))
    fails = frozenset(else_literals(an, node.test, frame, available))
    body_path, else_path = conditions.extend(frame.path, holds), conditions.extend(frame.path, fails)
    if body_path is None or else_path is None:  # the same test seen again on this path
        _run_branch(an, node, frame, body_path is not None)
        return
    record_cpu_test(an, node.test, frame)
    guards = any(t in test_text for t in conventions.AVAILABILITY_TESTS)
    # which side runs only with a GPU: the one whose literals say a GPU is available
    # (`if not cpu and torch.cuda.is_available():` guards its body despite the `not`)
    body_guarded = guards and (conditions.asks_available(holds) or "not " not in test_text
                               and not conditions.asks_available(fails))
    else_guarded = guards and (conditions.asks_available(fails) or "not " in test_text
                               and not conditions.asks_available(holds))
    if not guards and conventions.GPU_SWITCH.search(test_text) and "torch." not in test_text:
        # `if args.cuda:`: the user picks the GPU, and the other path runs on the CPU (unless the
        # test reads a tensor's placement or a helper's parameter: a dispatch, not a choice)
        kind = SiteKind.DEVICE_DISPATCH if device_dispatch(an, node.test, frame) else SiteKind.CUDA_FLAG
        an.emit_site(node, frame, kind, "", UNKNOWN, text=test_text)
    periodic = bool(frame.ctx.loops) and not test_text.startswith("not") \
        and bool(conventions.PERIODIC_TEST.search(test_text))
    body_frame = fork(frame, guarded=body_guarded, periodic=periodic)
    body_frame.path = body_path
    narrow(an, node.test, body_frame, True)
    if typed is not False:
        an.exec_block(block(node.body), body_frame)
    else_frame = fork(frame, guarded=else_guarded)
    else_frame.path = else_path
    narrow(an, node.test, else_frame, False)
    orelse = node.orelse if typed is not True else None
    if type(orelse) is cst.If:
        exec_if(an, orelse, else_frame)
        else_terminates = False
    elif type(orelse) is cst.Else:
        else_body = block(orelse.body)
        an.exec_block(else_body, else_frame)
        else_terminates = terminates(else_body)
    else:
        else_terminates = False
    body_terminates = terminates(block(node.body))
    # the branch ruled out leaves no path, unless the other one leaves (what follows the `if`
    # then runs for values the test rules out, as it reads: its narrowed names)
    if typed is False:
        body_terminates = not else_terminates
    elif typed is True:
        else_terminates = not body_terminates
    if body_terminates and not else_terminates:
        frame.env, frame.path = else_frame.env, else_frame.path
    elif else_terminates and not body_terminates:
        frame.env, frame.path = body_frame.env, body_frame.path
    else:
        frame.env = join_envs(body_frame.env, else_frame.env, (holds, fails))
        fallback = conditions.text(frozenset({lit}))
        for value in frame.env.values():  # `if avail: device = "cuda" else: device = "cpu"`
            if value.has(Fact.CPU_FALLBACK) and value.place.where is Where.COND and fallback in value.place.cond:
                an.emit_site(node, frame, SiteKind.CPU_FALLBACK, "", value, text=test_text)
                break
    frame.returns.extend(body_frame.returns + else_frame.returns)
    frame.sync_module_env()


def _run_branch(an: Analyzer, node: cst.If, frame: Frame, holds: bool) -> None:
    """Run the branch of an `if` whose test is known to be `holds`, in the frame itself."""
    if holds:
        an.exec_block(block(node.body), frame)
    elif type(node.orelse) is cst.If:
        exec_if(an, node.orelse, frame)
    elif type(node.orelse) is cst.Else:
        an.exec_block(block(node.orelse.body), frame)
    frame.sync_module_env()


def available_device_type(value: Value) -> str | None:
    """The device type whose availability a test's value asks about, if it does."""
    if value.has(Fact.CUDA_AVAILABLE):
        return "cuda"
    if value.has(Fact.MPS_AVAILABLE):
        return "mps"
    return None


def exec_for(an: Analyzer, node: cst.For, frame: Frame) -> None:
    frame.stmt = node
    iterable = an.eval(node.iter, frame)
    elem = an.element_of(iterable)
    if iterable.kind is Kind.DATASET and iterable.node is not None and iterable.elem is None:
        # `for x, y in dataset:` yields what the program's own __getitem__ returns, uncollated
        elem = an.dataset_item(iterable, node, frame, Origin(ORIGIN_BATCH, node.iter,
                                                             f"an item of `{code_of(node.iter)}`"))
    kind = LoopKind.DATA if an.is_data_iter(iterable) \
        else (LoopKind.EPOCH if "range" in code_of(node.iter)[:6] else LoopKind.OTHER)
    target = node.target
    keys = _mapping_keys(_keys_of(an, node.iter, iterable, frame)) if type(target) is cst.Name else ()

    def body(f: Frame) -> None:
        if keys and type(target) is cst.Name:  # `for k in batch: batch[k] = batch[k].to(device)`: once per key
            for key in keys:  # the key is the code's own constant, not a setting (assign's CHOSEN)
                f.env[target.value] = STR.with_facts(str_fact_of(key))
                f.sync_module_env()
                an.exec_block(block(node.body), f)
            return
        an.assign(node.target, elem, f, node)
        an.exec_block(block(node.body), f)

    run_loop(frame, kind, body, node, _else_block(an, node.orelse))
    if not keys:
        _every_key_moved(an, node, frame)


def _every_key_moved(an: Analyzer, node: cst.For, frame: Frame) -> None:
    """`for k in enc: enc[k] = enc[k].to(device)` (or `for k, v in enc.items(): enc[k] =
    v.to(device)`, under an `if` or not) over a mapping whose keys are not known: the loop
    moves every key, so afterwards the mapping's tensors are where the move puts them."""
    iterated, key_name, value_name = node.iter, "", ""
    if type(node.target) is cst.Name:
        key_name = node.target.value
    elif type(node.target) is cst.Tuple and len(node.target.elements) == 2 \
            and all(type(e.value) is cst.Name for e in node.target.elements):
        key_name, value_name = (e.value.value for e in node.target.elements)  # type: ignore[attr-defined]
        if not (type(iterated) is cst.Call and type(iterated.func) is cst.Attribute
                and iterated.func.attr.value == "items" and not iterated.args):
            return
        iterated = iterated.func.value
    if type(iterated) is cst.Call and type(iterated.func) is cst.Name and iterated.func.value in _KEY_VIEWS \
            and len(iterated.args) == 1:
        iterated = iterated.args[0].value
    if type(iterated) is cst.Call and type(iterated.func) is cst.Attribute and iterated.func.attr.value == "keys":
        iterated = iterated.func.value
    if type(iterated) is not cst.Name or not key_name:
        return
    mapping = iterated.value
    owner = frame.env.get(mapping)
    if owner is None or owner.kind not in (Kind.DICT, Kind.BATCH, Kind.ENCODING):
        return
    place = None
    for stmt in _key_loop_assignments(node):
        if len(stmt.targets) != 1:
            continue
        target, moved = stmt.targets[0].target, stmt.value
        if not (type(target) is cst.Subscript and type(target.value) is cst.Name and target.value.value == mapping
                and len(target.slice) == 1 and type(target.slice[0].slice) is cst.Index
                and code_of(target.slice[0].slice.value) == key_name):
            continue
        if type(moved) is not cst.Call or type(moved.func) is not cst.Attribute \
                or moved.func.attr.value not in ("to", "cuda"):
            continue
        receiver = code_of(moved.func.value)
        if receiver not in (f"{mapping}[{key_name}]", value_name):
            continue
        place = _move_target(an, moved, frame)
    if place is None or not place.known:
        return
    fields = tuple((k, v.at(place) if v.kind in TENSORISH else v) for k, v in owner.fields)
    elem = owner.elem.at(place) if owner.elem is not None and owner.elem.kind in TENSORISH else owner.elem
    new = owner.evolve(fields=fields, elem=elem)
    if owner.kind is not Kind.DICT:
        new = new.at(place)
    frame.env[mapping] = new
    frame.sync_module_env()


_TYPE_GUARD = re.compile(r"\b(is_tensor|isinstance|hasattr)\(")


def _key_loop_assignments(node: cst.For) -> list[cst.Assign]:
    """The assignments a key loop makes for every key: in its body, or under an `if` that only
    tests the value's type (`if torch.is_tensor(enc[k]):`); not under a test of the key."""
    found: list[cst.Assign] = []
    for stmt in block(node.body):
        lines = [stmt]
        if type(stmt) is cst.If and stmt.orelse is None and _TYPE_GUARD.search(code_of(stmt.test)):
            lines = list(block(stmt.body))
        for line in lines:
            if type(line) is cst.SimpleStatementLine:
                found.extend(s for s in line.body if type(s) is cst.Assign)
    return found


def _move_target(an: Analyzer, call: cst.Call, frame: Frame) -> Placement | None:
    """Where `x.to(device)` / `x.cuda()` puts a tensor, read from its arguments alone."""
    if call.func.attr.value == "cuda":  # type: ignore[attr-defined]
        return device_at("cuda", call, "cuda")
    arg = next((a.value for a in call.args if a.keyword is None and not a.star
                or a.keyword is not None and a.keyword.value == "device"), None)
    if arg is None:
        return None
    value = an.eval(arg, frame)
    if value.kind is Kind.TENSOR:
        return value.place if value.place.known else None
    return an.place_of_device_value(value, arg)


_MAX_KEY_PASSES = 12
_KEY_VIEWS = frozenset({"list", "tuple", "sorted"})


def _keys_of(an: Analyzer, iterated: cst.BaseExpression, value: Value, frame: Frame) -> Value:
    """The mapping whose keys a loop runs over: `batch`, `batch.keys()`, `list(batch.keys())`,
    `list(batch)` (only a plain name or attribute is read again: it has no side effects)."""
    node = iterated
    if type(node) is cst.Call and type(node.func) is cst.Name and node.func.value in _KEY_VIEWS \
            and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        node = node.args[0].value
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "keys" \
            and not node.args:
        node = node.func.value
    if node is iterated or type(node) not in (cst.Name, cst.Attribute):
        return value
    return an.eval(node, frame)


def _mapping_keys(value: Value) -> tuple[str, ...]:
    """The string keys iterating a dict or batch yields, when all of them are known and few."""
    if value.kind not in (Kind.DICT, Kind.BATCH, Kind.ENCODING) or value.elem is not None or not value.fields \
            or len(value.fields) > _MAX_KEY_PASSES or not all(isinstance(k, str) for k, _ in value.fields):
        return ()
    return tuple(k for k, _ in value.fields if isinstance(k, str))


def _stored(owner: Value, key: object, value: Value) -> Value:
    """`batch[key] = value`. A batch whose fields have all been moved off the host (the key loop
    of exec_for) is on their device as a whole: `model(batch)` then gets device tensors."""
    new = owner.set_field(key, value)
    if owner.kind is Kind.BATCH and owner.place.on_host and owner.elem is None \
            and any(place.on_device for _, place in alternatives(value.place)) \
            and not any(f.place.on_host and f.kind in TENSORISH for _, f in new.fields):
        new = new.at(value.place)
    return new


def exec_while(an: Analyzer, node: cst.While, frame: Frame) -> None:
    frame.stmt = node
    an.eval(node.test, frame)

    def body(f: Frame) -> None:
        an.exec_block(block(node.body), f)

    run_loop(frame, LoopKind.OTHER, body, node, _else_block(an, node.orelse))


def _else_block(an: Analyzer, orelse: cst.Else | None) -> Callable[[Frame], None] | None:
    if orelse is None:
        return None
    return lambda f: an.exec_block(block(orelse.body), f)


def exec_with(an: Analyzer, node: cst.With, frame: Frame) -> None:
    frame.stmt = node
    changes: dict[str, Any] = {}  # Context's fields to change
    for item in node.items:
        value = an.eval(item.item, frame)
        if value.kind is Kind.DEVICE and on_a_gpu(value.place):
            changes["default_device"] = True  # `with torch.device("cuda"):` or `with dev:`
        if type(item.item) is cst.Call:
            callee = an.eval(item.item.func, frame)
            qualname = callee.qualname if callee.kind is Kind.REF else ""
            if matches(qualname, tk.NO_GRAD_CONTEXTS):
                changes["no_grad"] = True
        if item.asname is not None:
            an.assign(item.asname.name, value if value.kind is not Kind.REF else UNKNOWN, frame, node)
    inner = frame.child(frame.env, replace(frame.ctx, **changes) if changes else frame.ctx)
    an.exec_block(block(node.body), inner)
    frame.env = inner.env
    frame.returns.extend(inner.returns)


def exec_try(an: Analyzer, node: cst.Try, frame: Frame) -> None:
    entry = dict(frame.env)
    an.exec_block(block(node.body), frame)
    envs = [frame.env]
    for handler in node.handlers:
        hf = frame.child(join_envs(entry, frame.env, None), replace(frame.ctx, handler=True))
        an.exec_block(block(handler.body), hf)
        frame.returns.extend(hf.returns)
        if not terminates(block(handler.body)):
            envs.append(hf.env)
    if node.orelse is not None:
        an.exec_block(block(node.orelse.body), frame)
        envs[0] = frame.env
    env = envs[0]
    for other in envs[1:]:
        env = join_envs(env, other, None)
    frame.env = env
    if node.finalbody is not None:
        an.exec_block(block(node.finalbody.body), frame)
    frame.sync_module_env()


def exec_match(an: Analyzer, node: cst.CSTNode, frame: Frame) -> None:
    an.eval(node.subject, frame)  # type: ignore[attr-defined]
    envs = []
    for case in node.cases:  # type: ignore[attr-defined]
        cf = fork(frame)
        an.exec_block(block(case.body), cf)
        envs.append(cf.env)
    env = frame.env
    for other in envs:
        env = join_envs(env, other, None)
    frame.env = env


STATEMENTS: dict[type[cst.CSTNode], StatementHandler] = {
    cst.SimpleStatementLine: exec_simple_line,
    cst.If: exec_if,
    cst.For: exec_for,
    cst.While: exec_while,
    cst.With: exec_with,
    cst.Try: exec_try,
    cst.FunctionDef: exec_function_def,
    cst.ClassDef: exec_class_def,
}
if hasattr(cst, "Match"):
    STATEMENTS[cst.Match] = exec_match
if hasattr(cst, "TryStar"):
    STATEMENTS[cst.TryStar] = exec_try


# --- assignment ------------------------------------------------------------------------------

def assign(an: Analyzer, target: cst.BaseExpression, value: Value, frame: Frame, stmt: cst.CSTNode) -> None:
    if type(target) is cst.Name:
        if frame.module_level and value.kind in _CONSTANT_KINDS:
            value = value.with_facts(Fact.CHOSEN)  # a setting the user edits (`checkpoint = None`)
        frame.env[target.value] = value.named(target.value)
        frame.sync_module_env()
    elif type(target) is cst.Tuple or type(target) is cst.List:
        count = len(target.elements)
        after_star = False
        for index, el in enumerate(target.elements):
            if type(el) is cst.StarredElement:
                assign(an, el.value, Value(Kind.LIST, value.place, elem=an.element_of(value)), frame, stmt)
                after_star = True
                continue
            # members after a starred target, and members of a value whose own starred members
            # have unknown length, count from the end
            position = index - count if after_star or value.get_field(index) is None and \
                value.get_field(index - count) is not None else index
            name = code_of(el.value) if type(el.value) is cst.Name else ""
            assign(an, el.value, an.item_of(value, position, name), frame, stmt)
    elif type(target) is cst.Attribute:
        owner = an.eval(target.value, frame)
        if owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
            an.deep_module_assign(target, value, frame, stmt)
        an.set_attribute(owner, target.attr.value, value, frame, stmt)
    elif type(target) is cst.Subscript:
        owner = an.eval(target.value, frame)
        key = constant_key(target)
        if key is None and len(target.slice) == 1 and type(target.slice[0].slice) is cst.Index:
            key = known_str(an.eval(target.slice[0].slice.value, frame))  # a loop key (exec_for)
        if owner.kind is Kind.REF and owner.qualname in lib.ENV_MAPPINGS and len(target.slice) == 1 \
                and type(target.slice[0].slice) is cst.Index:
            record_env_write(an, stmt, owner.qualname, [], {}, frame, target.slice[0].slice.value, value)
        if key is not None and owner.kind in _INDEXED_OWNERS and type(target.value) is cst.Name:
            frame.env[target.value.value] = _stored(owner, key, value)
        elif owner.kind is Kind.MODULE and owner.identity and owner.qualname in tk.REGISTERING_CONTAINERS:
            # `model.layers[2] = nn.Linear(...)`: nn.ModuleList / Sequential / ModuleDict register it
            stored = an.registered_form(owner, code_of(target), value, frame, stmt)
            an.rebind(frame, owner.identity, owner.set_field(key if key is not None else f"<{code_of(target)}>",
                                                             stored))
        elif owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
            an.deep_module_assign(target, value, frame, stmt)
    elif type(target) is cst.StarredElement:
        assign(an, target.value, UNKNOWN, frame, stmt)
