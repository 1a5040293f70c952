"""Calls: argument evaluation, what is called, and running the program's own functions.

A call of a function of the analysed program runs its body with the caller's abstract
arguments (context-sensitive, memoised by the arguments' shape, depth-bounded); a call of an
imported name goes to the library table (analysis/library/); a method call is dispatched on
the receiver's kind.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import cast

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.conditions import Condition
from devlint.analysis.events import Context, Meet, Site, SiteKind
from devlint.analysis.identity import fresh_objects, shape
from devlint.analysis.names import canonical
from devlint.analysis.placement import MAX_ALTERNATIVES, alternatives, conditional, is_deviceish, join, specialize
from devlint.analysis.shared import Analyzer, Args, ClassInfo, Frame, Kwargs
from devlint.analysis.syntax import block, bound_names, code_of, dotted
from devlint.analysis.values import (
    CALLER,
    CONTAINERS,
    NO_TENSORS,
    NONE_VALUE,
    TENSORISH,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    Where,
    new_identity,
)
from devlint.analysis.vocabulary import Fact, default_str_fact_of, known_bool, known_int, known_str
from devlint.knowledge import conventions
from devlint.analysis.library.annotations import annotated_value
from devlint.analysis.members import proven_tensor
from devlint.analysis.library.common import bound_arguments
from devlint.analysis.library.frameworks import tokenizer_output
from devlint.analysis.library.methods import is_tensor_method, library_method, receiver_method, tensor_method
from devlint.analysis.library.tensors import tensor_type_place, typed_tensor

MAX_CALL_DEPTH = 6
_MOVES = frozenset({"to", "cuda", "cpu"})
_CONSTANT_KINDS = frozenset({Kind.SCALAR, Kind.STR, Kind.NONE})
# kinds whose returned placement is kept path by path (a device returns its own fallback identity)
_PATH_KINDS = frozenset({Kind.TENSOR, Kind.BATCH, Kind.ENCODING, Kind.UNKNOWN, Kind.MODULE})
# roles whose code runs apart from the caller's loops (a forward pass, a DataLoader's sample)
_OWN_LOOPS = frozenset({"forward", "getitem", "collate", "init"})


def eval_call(an: Analyzer, node: cst.Call, frame: Frame, statement: bool = False) -> Value:
    args: Args = []
    kwargs: Kwargs = {}
    for arg in node.args:
        value = an.eval(arg.value, frame)
        if value.kind in _CONSTANT_KINDS and _is_literal(arg.value):
            # a constant the caller writes: the callee's code must work for other values too,
            # so it does not decide the callee's branches (a default it is left with does)
            value = value.with_facts(Fact.CHOSEN)
        if arg.keyword is not None:
            kwargs[arg.keyword.value] = value
        elif arg.star == "**":
            kwargs["**"] = value
        elif arg.star == "*":
            kwargs["*"] = value
        else:
            args.append(value)
    func = node.func
    if type(func) is cst.Attribute and type(func.value) is cst.Call \
            and type(func.value.func) is cst.Name and func.value.func.value == "super":
        inherited = call_super(an, func.attr.value, node, args, kwargs, frame)
        if inherited is not None:
            return inherited
    if type(func) is cst.Attribute:
        receiver = proven_tensor(an.eval(func.value, frame), func, frame, called=True)
        name = func.attr.value
        if receiver.kind is Kind.REF:
            qualname = canonical(f"{receiver.qualname}.{name}")
            own = an.project_value(qualname, frame)  # `m.Net()` after `import pkg.models as m`
            if own is not None and own.kind is not Kind.REF:
                return call_value(an, own, node, args, kwargs, frame)
            return an.call_library(qualname, node, args, kwargs, frame)
        if receiver.kind is Kind.CLASS and receiver.node is not None and id(receiver.node) in an.classes:
            found = an.find_method(an.classes[id(receiver.node)], name)
            if found is not None:  # `GPT.from_pretrained(...)`, `Config.load(path)`, `Base.forward(self, x)`
                classmethod = any((dotted(d.decorator) or "") == "classmethod" for d in found[1].decorators)
                return an.call_function(found[1], [receiver] + args if classmethod else args, kwargs, node,
                                        frame, class_info=found[0], is_method=classmethod)
        return call_method(an, receiver, name, node, args, kwargs, frame, statement)
    callee = an.eval(func, frame)
    return call_value(an, callee, node, args, kwargs, frame)


def call_value(an: Analyzer, callee: Value, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    if callee.has(Fact.ONE_OF) and not callee.has(Fact.TENSOR_TYPE):
        return _call_one_of(an, callee, node, args, kwargs, frame)
    if callee.kind is Kind.REF and callee.has(Fact.TENSOR_TYPE):
        return typed_tensor(an, callee, node, args, kwargs, frame)  # `Tensor(n, 1)` for a chosen type
    if callee.kind is Kind.REF:
        return an.call_library(callee.qualname, node, args, kwargs, frame)
    if callee.kind is Kind.FUNCTION and callee.node is not None:
        bound, bound_kw = bound_arguments(callee)
        function = cast("cst.FunctionDef | cst.Lambda", callee.node)  # what a FUNCTION value holds
        start = an.event_count()
        result = an.call_function(function, bound + args, {**bound_kw, **kwargs}, node, frame)
        _helper_meets_at_call(an, start, node, args, kwargs, frame)
        return result
    if callee.kind is Kind.CLASS and callee.node is not None and id(callee.node) in an.classes:
        return an.instantiate(an.classes[id(callee.node)], args, kwargs, node, frame)
    if callee.kind is Kind.MODULE:
        return an.call_module(callee, node, args, kwargs, frame)
    if callee.kind is Kind.UNKNOWN and callee.place.known and not callee.fields:
        # a value moved with `.to(d)` / `.cuda()` and then called: only a module is both
        return an.call_module(callee.evolve(kind=Kind.MODULE), node, args, kwargs, frame)
    if callee.kind is Kind.TOKENIZER:
        return tokenizer_output(node)
    if callee.kind is Kind.OBJECT and callee.node is not None:
        info = an.class_of(callee)
        if info is not None and "__call__" in info.methods:
            return an.call_function(info.methods["__call__"], [callee] + args, kwargs, node, frame,
                                    class_info=info, is_method=True)
    return UNKNOWN


_HANDED = TENSORISH | {Kind.MODULE}
# a test file by its name (`test_*.py`, `*_test.py`, `conftest.py`); a `tests/` folder is not
# asked for, since a project's own root may lie under one
_TEST_CODE = re.compile(r"(^|[\\/])(test_[^\\/]*|[^\\/]*_test|conftest)\.py$")


def _helper_meets_at_call(an: Analyzer, start: int, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> None:
    """A meet inside a helper of another project file whose host side is a value the call hands
    to it (`run(model, encode(text))`) is the caller's bug: it is reported at the call, in the
    caller's file, as `rules.md` accepts. What the helper makes on the host itself stays there."""
    # the tensors, batches and modules handed over, and those inside a tuple, list or dict:
    # a batch the helper draws from a loader it is given is the helper's to move
    handed = list(args) + list(kwargs.values())
    parts = [v for v in handed if v.kind in _HANDED and v.place.known]
    parts += [f for v in handed if v.kind in CONTAINERS for _, f in v.fields if f.kind in _HANDED]
    # an origin by where and why the value was made (a parameter's name renames it); the
    # caller's own origin names the value as the caller does (no name: an expression)
    spelt = {a.value.value for a in node.args if type(a.value) is cst.Name}  # names a fix may use here
    origins = {(id(v.origin.node), v.origin.category): v.origin if v.origin.name in spelt else replace(v.origin, name="")
               for v in parts if v.origin is not None and v.origin.node is not None}
    if not origins:
        return
    here = frame.ctx.path
    if _TEST_CODE.search(an.main_scope.display or an.own_file):
        return  # code in tests lends no calling context (rules.md): a test's call is no program's bug

    def key(meet: Meet) -> tuple:
        return (id(meet.host.origin.node), meet.host.origin.category) if meet.host.origin is not None else ()

    operation = f"the call of `{code_of(node.func)}`"
    an.reattribute_meets(start, lambda meet: meet.ctx.path != here and key(meet) in origins,
                         lambda meet: replace(meet, node=node, ctx=an.ctx(frame), operation=operation,
                                              host=meet.host.evolve(origin=origins[key(meet)])))


def _call_one_of(an: Analyzer, callee: Value, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """A call of one of several callables: when they are library calls handled alike (five
    `from_pretrained` constructors), one call stands for all; otherwise each is called and
    the results are joined."""
    candidates = [f for _, f in callee.fields]
    refs = [canonical(c.qualname) for c in candidates if c.kind is Kind.REF]
    if len(refs) == len(candidates) and len({an.library.handlers(q) for q in refs}) == 1:
        return an.call_library(refs[0], node, args, kwargs, frame)
    result: Value | None = None
    for candidate in candidates:
        outcome = call_value(an, candidate, node, args, kwargs, frame)
        result = outcome if result is None else join(result, outcome)
    return result if result is not None else UNKNOWN


def call_method(an: Analyzer, receiver: Value, name: str, node: cst.Call, args: Args, kwargs: Kwargs,
                frame: Frame, statement: bool) -> Value:
    if name in _MOVES or name == "type" and args and _retypes(args[0]):
        return an.move_call(receiver, name, node, args, kwargs, frame, statement)
    special = receiver_method(an, receiver, name, node, args, kwargs, frame)  # argparse, matplotlib axes
    if special is not None:
        return special
    if receiver.fields and receiver.kind in (Kind.MODULE, Kind.OBJECT):
        attribute = receiver.get_field(name)
        if attribute is not None:  # `self.encoder(x)`: call what the attribute holds
            return call_value(an, an.get_attribute(receiver, name, node, frame), node, args, kwargs, frame)
    kind = receiver.kind
    if kind is Kind.MODULE and receiver.node is not None:
        info = an.class_of(receiver)
        if info is not None and name in info.class_attrs and name not in info.methods:
            # `self.norm(x)` with `norm = nn.LayerNorm(...)` in the class body
            held = an.get_attribute(receiver, name, node, frame)
            if held.kind is Kind.MODULE:
                return call_value(an, held, node, args, kwargs, frame)
    if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and receiver.place.known and is_tensor_method(name)):
        return tensor_method(an, receiver, name, node, args, kwargs, frame)
    if kind is Kind.MODULE:
        return an.module_method(receiver, name, node, args, kwargs, frame)
    if kind in (Kind.OBJECT, Kind.DATASET) and receiver.node is not None:
        method = an.find_method(an.class_of(receiver), name)
        if method is not None:
            return an.call_function(method[1], [receiver] + args, kwargs, node, frame,
                                    class_info=method[0], is_method=True)
    return library_method(an, receiver, name, node, args, kwargs, frame)


def _retypes(value: Value) -> bool:
    """Is `x.type(value)` the legacy cast, which may move `x` (`torch.cuda.FloatTensor`, its name,
    `y.type()` of another tensor, a type given by the caller), rather than a dtype conversion?"""
    if tensor_type_place(value) is not None:
        return True
    return value.kind not in (Kind.DTYPE, Kind.STR, Kind.SCALAR, Kind.NONE)


def call_super(an: Analyzer, name: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value | None:
    """`super().__init__(n)` / `super().forward(x)`: run the method of a base class of the program
    (in this file or another project file) on `self`; None when the base is not the program's."""
    fn = frame.fn
    if not frame.self_name or type(fn) is not cst.FunctionDef:
        return None
    owner = next((info for info in list(an.classes.values()) if info.methods.get(fn.name.value) is fn), None)
    if owner is None:
        return None
    for base in owner.bases:
        if base.kind is not Kind.CLASS or base.node is None or id(base.node) not in an.classes:
            continue
        found = an.find_method(an.classes[id(base.node)], name)
        if found is None:
            continue
        self_value = frame.env.get(frame.self_name, UNKNOWN)
        return an.call_function(found[1], [self_value] + args, kwargs, node, frame,
                                class_info=found[0], is_method=True)
    return None


def call_function(an: Analyzer, fn: cst.FunctionDef | cst.Lambda, args: Args, kwargs: Kwargs, node: cst.CSTNode,
                  frame: Frame, *,
                  class_info: ClassInfo | None = None, is_method: bool = False, role: str = "",
                  want_self: bool = False, entry: bool = False) -> Value:
    """Run a function of the program (a def or a lambda) on abstract arguments; its effects on
    the arguments' objects are rebound in the caller. An `entry` is a function no call reached:
    the parameters it is not given are unknown, not their defaults (a default says what happens
    when a caller omits the argument, not what every caller passes)."""
    an.analysed.add(id(fn))
    if frame.depth >= MAX_CALL_DEPTH or id(fn) in an.active or an.steps_left <= 0:
        return UNKNOWN
    params = fn.params
    if type(fn) is cst.FunctionDef and any((dotted(d.decorator) or "") == "staticmethod" for d in fn.decorators):
        if is_method and args:
            args = args[1:]
    if not role and is_method and frame.ctx.role == "init" and args and args[0].identity and frame.self_name \
            and frame.env.get(frame.self_name, UNKNOWN).identity == args[0].identity \
            and getattr(getattr(fn, "name", None), "value", "") != "forward":
        role = "init"  # `self._build()` called from `__init__` sets up the instance like __init__
    key = (id(fn), tuple(shape(a) for a in args),
           tuple(sorted(((k, shape(v)) for k, v in kwargs.items()), key=lambda kv: kv[0])), role, want_self, entry)
    memo_key: tuple | None = key
    try:
        cached = an.memo.get(key)
    except TypeError:
        cached = None
        memo_key = None
    if cached is not None and an.capturing_worker_work:
        cached = None  # a call made for a DataLoader: its device work must be seen for this loader
    if cached is not None:
        result, cached_updates, arg_identities, first_new = cached
        mapping = {old: a.identity for old, a in zip(arg_identities, args) if old and a.identity}
        for identity, new in cached_updates.items():
            an.rebind(frame, mapping.get(identity, identity), fresh_objects(new, mapping, first_new))
        return fresh_objects(result, mapping, first_new)
    first_new = new_identity()
    name = fn.name.value if type(fn) is cst.FunctionDef else "<lambda>"
    library = entry and an.library_mode
    forward = class_info is not None and class_info.is_module and name == "forward"
    home = an.home_scope(fn, frame)
    # defaults and annotations are evaluated where the function is defined: in another project
    # file, its names and the sites they record (a default device with a CPU fallback) are that file's
    definition = frame if home is None else Frame(home.env, Context(path=home.display), frame.depth, True, home,
                                                  stmt=frame.stmt)
    env = _bind_parameters(an, params, args, kwargs, definition, is_method, entry,
                           library="forward" if library and forward else "function" if library else "")
    qualname = f"{class_info.name}.{name}" if class_info is not None else name
    if not role:
        role = "method" if is_method else "function"
        if class_info is not None and class_info.is_module and name == "forward":
            role = "forward"
        if class_info is not None and name == "__init__":
            role = "init"
        if class_info is not None and class_info.is_dataset and name == "__getitem__":
            role = "getitem"
    callers = frame.ctx.callers + ((frame.ctx.function,) if not frame.module_level
                                   or frame.ctx.function != "<module>" else ())
    ctx = Context(function=qualname, role=role, class_name=class_info.name if class_info else "",
                  loops=frame.ctx.loops if role not in _OWN_LOOPS else (),
                  no_grad=frame.ctx.no_grad, guarded=frame.ctx.guarded, default_device=frame.ctx.default_device,
                  callers=callers[-4:], periodic=frame.ctx.periodic and role not in _OWN_LOOPS)
    if home is not None:
        ctx = replace(ctx, path=home.display)
    elif frame.ctx.path:
        ctx = replace(ctx, path=frame.ctx.path)
    inner = Frame(env, ctx, frame.depth + 1, False, home if home is not None else frame.scope, fn, frame.stmt)
    positional = list(params.posonly_params) + list(params.params)
    if is_method and positional:
        inner.self_name = positional[0].name.value
    given = _given_constants(fn, env)
    an.active.append(id(fn))
    try:
        if isinstance(fn, cst.Lambda):  # (one ABC check a call: nothing beside running the body)
            result = an.eval(fn.body, inner)
        else:
            generator = inner.scope.facts.is_generator(fn)
            an.exec_block(block(fn.body), inner)
            result = UNKNOWN if generator else join_returns(an, inner.returns, fn, inner)
    finally:
        an.active.pop()
    if given:
        result = specialize(result, given)
    updates: dict[int, Value] = {}
    for value in args:
        if value.identity:
            for current in inner.env.values():
                if current.identity == value.identity and current != value:
                    updates[value.identity] = current
                    break
    for identity, new in updates.items():
        an.rebind(frame, identity, new)
    if want_self:
        self_value = inner.env.get(inner.self_name) if inner.self_name else None
        result = self_value if self_value is not None else UNKNOWN
    if memo_key is not None:
        an.memo[memo_key] = (result, updates, tuple(a.identity for a in args), first_new)
    return result


def _given_constants(fn: cst.CSTNode, env: dict[str, Value]) -> Condition:
    """What this call's arguments state about the parameters the function never rebinds
    (`gpu_id == 0` for `load(0)`): its branches still both run (a caller's constant does not
    decide them, see Fact.CHOSEN), but a path of its result that needs `gpu_id == -1` cannot
    be this call's."""
    literals = []
    rebound: frozenset[str] | None = None
    for name, value in env.items():
        if value.kind is Kind.NONE:
            lit = (f"{name} is None", True)
        elif (flag := known_bool(value)) is not None and value.kind is Kind.SCALAR and known_int(value) is None:
            lit = (name, flag)
        elif known_int(value) is not None:
            lit = (f"{name} == {known_int(value)}", True)
        else:
            continue
        if rebound is None:
            rebound = bound_names(fn)
        if name not in rebound:
            literals.append(lit)
    return frozenset(literals)


def _bind_parameters(an: Analyzer, params: cst.Parameters, args: Args, kwargs: Kwargs, frame: Frame,
                     is_method: bool, entry: bool, library: str = "") -> dict[str, Value]:
    """The callee's parameters. In library mode (`library` is "forward" for a module's forward
    no call reached, "function" for other such code) the caller's tensors are on the caller's
    device: a forward's first input is a tensor there, another parameter becomes one at its
    first tensor-only use (members.proven_tensor), an annotated `Tensor` is one."""
    env: dict[str, Value] = {}
    positional = list(params.posonly_params) + list(params.params)
    remaining = list(args)
    first_input = positional[1 if is_method else 0].name.value if len(positional) > (1 if is_method else 0) else ""
    for param in positional:
        pname = param.name.value
        if remaining:
            value = remaining.pop(0)
            env[pname] = value.named(pname) if not (is_method and not env) else value
        elif pname in kwargs:
            env[pname] = kwargs[pname].named(pname)
        elif param.default is not None and not (library == "forward" and pname == first_input
                                                and _optional_tensor(param)):
            env[pname] = _default(an, param.default, frame, entry)
        elif param.default is not None:
            # `def forward(self, inputs=None)`: the caller's tensor when given, None otherwise
            env[pname] = _library_input(pname, True).with_facts(Fact.OPTIONAL)
        else:
            # a forward's first input is its tensor, unless annotated otherwise (`window_size: tuple`)
            env[pname] = _library_input(pname, library == "forward" and pname == first_input
                                        and param.annotation is None
                                        and not conventions.NUMBER_PARAMETER.search(pname)) if library else UNKNOWN
        if env[pname].kind is Kind.UNKNOWN and not env[pname].place.known:
            env[pname] = _on_caller(annotated_value(an, param.annotation, pname, param, frame), library) \
                or env[pname]
    for param in params.kwonly_params:
        pname = param.name.value
        if pname in kwargs:
            env[pname] = kwargs[pname].named(pname)
        elif param.default is not None:
            env[pname] = _default(an, param.default, frame, entry)
        else:
            env[pname] = _library_input(pname, False) if library else UNKNOWN
        if env[pname].kind is Kind.UNKNOWN and not env[pname].place.known:
            env[pname] = _on_caller(annotated_value(an, param.annotation, pname, param, frame), library) \
                or env[pname]
    if type(params.star_arg) is cst.Param:
        env[params.star_arg.name.value] = Value(Kind.TUPLE, NO_TENSORS, elem=join(remaining[0], remaining[-1])
                                                if remaining else None)
    if params.star_kwarg is not None:
        env[params.star_kwarg.name.value] = Value(Kind.DICT, NO_TENSORS)
    return env


def _optional_tensor(param: cst.Param) -> bool:
    """A forward input that defaults to None and says nothing else of its kind."""
    default = param.default
    return type(default) is cst.Name and default.value == "None" and param.annotation is None \
        and not conventions.NUMBER_PARAMETER.search(param.name.value)


def _library_input(name: str, tensor: bool) -> Value:
    """A parameter of library code: a tensor on the caller's device (a forward's input), or a
    value of unknown kind that its first tensor-only use makes one."""
    if tensor:
        return Value(Kind.TENSOR, CALLER, facts=frozenset({Fact.LIBRARY_INPUT})).named(name)
    return Value(Kind.UNKNOWN, UNKNOWN_PLACE, facts=frozenset({Fact.LIBRARY_INPUT})).named(name)


def _on_caller(value: Value | None, library: str) -> Value | None:
    """An annotated tensor parameter of library code is on the caller's device."""
    if value is not None and library and value.kind is Kind.TENSOR and not value.place.known:
        return value.at(CALLER).with_facts(Fact.LIBRARY_INPUT)
    return value


def _is_literal(node: cst.BaseExpression) -> bool:
    if type(node) in (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString):
        return True
    if type(node) is cst.Name:
        return node.value in ("True", "False", "None")
    return type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus \
        and type(node.expression) in (cst.Integer, cst.Float)


def _default(an: Analyzer, default: cst.BaseExpression, frame: Frame, entry: bool) -> Value:
    """A parameter's default, evaluated where the function is defined (what it records, such as a
    device chosen with a CPU fallback, still counts); unknown for an entry."""
    value = an.eval(default, Frame(frame.scope.env, Context(path=frame.ctx.path), frame.depth, True, frame.scope,
                                   stmt=frame.stmt))
    if entry:  # the caller may pass anything; a string default still says what kind of thing it names
        text = known_str(value) if type(default) is cst.SimpleString else None
        return UNKNOWN.with_facts(default_str_fact_of(text)) if text else UNKNOWN
    return value


def join_returns(an: Analyzer, returns: list[tuple[Condition | None, Value]], fn: cst.CSTNode,
                 frame: Frame) -> Value:
    """What a call returns, from the values its `return`s give on their paths: a value on the
    GPU when one is available and left where it was otherwise (`return x.cuda() if ... else x`
    written as two returns) keeps both placements, each on its path."""
    if not returns:
        return NONE_VALUE
    result = returns[0][1]
    for _, value in returns[1:]:
        result = _join_two(an, result, value, fn, frame)
    # the returns with their paths, when each path is known (not a return inside a loop)
    known = [(path, value) for path, value in returns if path is not None]
    if len(returns) > 1 and result.kind in _PATH_KINDS and len(known) == len(returns):
        paths = []
        for path, value in known:
            for condition, place in alternatives(value.place):
                joined = conditions.conjoin(path, condition)
                if joined is not None:
                    paths.append((joined, place))
        place = conditional(paths)
        if place.known:
            result = result.at(place)
    elif len(returns) > 1 and result.kind is Kind.DEVICE and result.place.ident.split(devices.FALLBACK)[0] in ("", "?") \
            and len(known) == len(returns):
        # one of several kinds of GPU (`select_device()` giving MPS, CUDA or the CPU): the
        # device stays "a GPU", and each path keeps its own, for code reached only on some
        # of them (a DataParallel under `torch.cuda.device_count() > 1`: program.reachable)
        paths = [(path, place) for path, value in known for _, place in alternatives(value.place)]
        if len(paths) <= MAX_ALTERNATIVES:
            result = result.at(replace(result.place, paths=tuple(paths)))
    return result


def _join_two(an: Analyzer, a: Value, b: Value, fn: cst.CSTNode, frame: Frame) -> Value:
    """Join two returned values; a helper returning a GPU or the CPU (`try_gpu()`) returns a
    device with a CPU fallback, not an unknown one."""
    if a is NONE_VALUE:
        return b
    if is_deviceish(a) and is_deviceish(b):
        gpu = next((v.place for v in (a, b) if v.place.where in (Where.DEVICE, Where.COND)), None)
        kinds = {devices.split(p.ident)[0] for v in (a, b) for _, p in alternatives(v.place) if p.on_device}
        if gpu is not None and len(kinds) > 1:
            # MPS on one path, CUDA on another: a GPU of some kind, which one is not known
            gpu = replace(gpu, ident="", paths=())
        cpu = any(v.place.on_host or v.has(Fact.CPU_FALLBACK) for v in (a, b))
        if gpu is not None and cpu:
            checks = any(isinstance(e, Site) and e.kind is SiteKind.CUDA_QUERY and e.ctx.function == frame.ctx.function
                         for e in an.recent_events(50))  # `if torch.cuda.device_count() > i:` in the helper
            condition = "torch.cuda.is_available()" if checks else None
            place = Placement(Where.DEVICE, gpu.device, gpu.node, ident=devices.with_fallback(gpu.ident, condition))
            value = Value(Kind.DEVICE, place, facts=frozenset({Fact.CPU_FALLBACK}))
            an.emit_site(fn, frame, SiteKind.CPU_FALLBACK, "", value, text=code_of(fn)[:80])
            return value
        if gpu is not None and len(kinds) > 1:
            return Value(Kind.DEVICE, replace(gpu, where=Where.DEVICE), facts=a.facts & b.facts)
    return join(a, b)
