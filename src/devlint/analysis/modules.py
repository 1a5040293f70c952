"""nn.Module semantics: what assignment registers, and what calling a module does.

`module.attr = value` follows nn.Module.__setattr__: a module or parameter is registered (it
moves with the module), a plain tensor or a plain container of modules is not (DEV103/DEV104's
evidence), and a registered part assigned after the module moved stays on the host (DEV106).
Calling a module meets its weights with its inputs, or runs the program's own `forward`.
How modules move is `analysis/moves.py`.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis.events import Meet
from devlint.analysis.placement import alternatives, is_tensor_operand, tensor_result, union
from devlint.analysis.shared import Analyzer, Args, ClassInfo, Frame, Kwargs
from devlint.analysis.syntax import code_of, string_value, walk
from devlint.analysis.values import (
    CONTAINERS,
    NONE_VALUE,
    ORIGIN_AFTER_MOVE,
    ORIGIN_ATTRIBUTE,
    ORIGIN_COMPUTED,
    ORIGIN_DATA,
    ORIGIN_FACTORY,
    ORIGIN_MODULE,
    ORIGIN_OTHER,
    ORIGIN_OUTSIDE_TREE,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    Where,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import torch as tk

_SPREAD_INPUTS = (Kind.ENCODING, Kind.BATCH, Kind.DICT)


def module_origin(an: Analyzer, node: cst.CSTNode, frame: Frame, what: str) -> Origin:
    """Where a module built here comes from: inside `forward` it is a fresh module on every call."""
    if frame.ctx.role == "forward":
        return Origin(ORIGIN_OUTSIDE_TREE, node,
                      f"{what}, built inside `forward` (fresh CPU weights on every call)")
    return Origin(ORIGIN_MODULE, node, what)


# --- registration ----------------------------------------------------------------------------

def set_attribute(an: Analyzer, owner: Value, attr: str, value: Value, frame: Frame, stmt: cst.CSTNode) -> None:
    if owner.identity == 0 or owner.kind not in (Kind.MODULE, Kind.OBJECT, Kind.DATASET):
        return
    if owner.kind is Kind.MODULE:
        value = registered_form(an, owner, attr, value, frame, stmt)
    an.rebind(frame, owner.identity, owner.set_field(attr, value))


def registered_form(an: Analyzer, owner: Value, attr: str, value: Value, frame: Frame, stmt: cst.CSTNode) -> Value:
    """What `module.attr = value` stores, by nn.Module.__setattr__'s rules."""
    in_init = frame.ctx.role == "init"
    existing = owner.get_field(attr)
    if value.kind is Kind.MODULE or value.has(Fact.PARAM):
        value = value.with_facts(Fact.REGISTERED)
        if (owner.place.on_device or owner.place.where is Where.COND and owner.place.node is not None) \
                and value.place.on_host:
            # in `__init__` only after the instance moved itself (`self.to(cfg.device)`); an
            # owner moved on some paths only (to "cpu" in a test mode) names the paths where
            # the new part is left behind: a meet must still prove them (rules/changed_after_move)
            value = value.evolve(origin=Origin(ORIGIN_AFTER_MOVE, stmt,
                                               f"`{code_of(stmt)}` after the model was moved", attr,
                                               cause=owner.place.node))
        return value
    if value.kind is Kind.TENSOR:
        if existing is not None and existing.has(Fact.BUFFER):
            return value.with_facts(Fact.REGISTERED, Fact.BUFFER)
        if in_init and value.place.on_host and not value.is_zero_dim:
            return value.evolve(origin=Origin(ORIGIN_ATTRIBUTE, stmt,
                                              f"`self.{attr}`, a plain tensor attribute", f"self.{attr}"))
        return value
    if value.kind in CONTAINERS:
        return _outside_tree(value, stmt, attr)
    return value


def _outside_tree(value: Value, stmt: cst.CSTNode, attr: str) -> Value:
    """Modules kept in a plain list / dict / tuple attribute are not registered."""
    def mark(v: Value) -> Value:
        if v.has(Fact.MAY_HOLD):  # a list grown in a loop: each module it may hold
            marked = tuple((k, mark(m)) for k, m in v.fields)
            origin = next((m.origin for _, m in marked if m.origin is not None
                           and m.origin.category == ORIGIN_OUTSIDE_TREE), v.origin)
            return v.evolve(fields=marked, origin=origin)
        if v.kind is Kind.MODULE and v.place.on_host:
            # keep the construction node: it identifies the module if it is also registered
            # elsewhere (`nn.Sequential(*self.layers)`), see moves.move_module
            made = v.origin.node if v.origin is not None and v.origin.node is not None else stmt
            return v.evolve(origin=Origin(ORIGIN_OUTSIDE_TREE, made,
                                          f"a module in the plain container `self.{attr}`", f"self.{attr}"))
        if v.kind is Kind.TENSOR and v.place.on_host and not v.is_zero_dim and v.origin is not None \
                and v.origin.category in (ORIGIN_FACTORY, ORIGIN_DATA):
            return v.evolve(origin=Origin(ORIGIN_ATTRIBUTE, stmt,
                                          f"a tensor in the plain container `self.{attr}`", f"self.{attr}"))
        return v
    return value.evolve(fields=tuple((k, mark(v)) for k, v in value.fields),
                        elem=mark(value.elem) if value.elem is not None else None)


def deep_module_assign(an: Analyzer, target: cst.BaseExpression, value: Value, frame: Frame,
                       stmt: cst.CSTNode) -> None:
    """`model.classifier[6] = nn.Linear(...)` / `model.head.fc = ...` into parts of a library
    model the analysis does not track: the new module still becomes a registered part of the
    root model, so a host module assigned after the root was moved is remembered on it."""
    if not (value.kind is Kind.MODULE or value.has(Fact.PARAM)) or not value.place.on_host:
        return
    root = target
    while type(root) is cst.Attribute or type(root) is cst.Subscript:
        root = root.value
    if type(root) is not cst.Name or root is target:
        return
    owner = an.lookup(root.value, frame)
    if owner.kind is not Kind.MODULE or not owner.identity or not owner.place.on_device:
        return
    path = code_of(target)
    stored = registered_form(an, owner, path.split(".", 1)[-1], value, frame, stmt)
    an.rebind(frame, owner.identity, owner.set_field(f"<{path}>", stored))


def effective_host_parts(module: Value, depth: int = 0) -> list[Value]:
    """Registered parts of a device module that are still on the host (assigned after the move)."""
    if depth > 4:
        return []
    out = []
    for _, value in module.fields:
        if not value.has(Fact.REGISTERED):
            continue
        if value.place.on_host and value.origin is not None and value.origin.category == ORIGIN_AFTER_MOVE:
            out.append(value)
        elif value.kind is Kind.MODULE:
            out.extend(effective_host_parts(value, depth + 1))
    return out


# --- calling a module ------------------------------------------------------------------------

def _inputs(args: Args, kwargs: Kwargs) -> list[Value]:
    inputs = [v for v in list(args) + [v for k, v in kwargs.items() if k != "*"] if is_tensor_operand(v)
              or v.kind in (Kind.ENCODING, Kind.BATCH)]
    for v in list(args) + list(kwargs.values()):
        if v.kind in CONTAINERS:
            inputs.extend(f for _, f in v.fields if is_tensor_operand(f))
    spread = kwargs.get("**")
    if spread is not None and spread.kind in _SPREAD_INPUTS:
        inputs.extend(f for _, f in spread.fields if is_tensor_operand(f))
        if not spread.fields and spread.place.known:
            inputs.append(Value(Kind.TENSOR, spread.place, spread.origin))
    return inputs


def _input_sources(node: cst.Call, args: Args, kwargs: Kwargs, inputs: list[Value]) -> list | None:
    """The expressions of a module call's inputs, when each positional argument is one input
    (messages name an unnamed input by them: `net(x)` in `smoother(net(x))`)."""
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    if kwargs or len(positional) != len(args) or len(inputs) != len(args) \
            or not all(is_tensor_operand(a) and a.kind not in CONTAINERS for a in args):
        return None
    return [None] + positional


def call_module(an: Analyzer, module: Value, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    inputs = _inputs(args, kwargs)
    name = code_of(node.func)
    operation = f"the call of `{name}`"
    reported = False
    info = an.class_of(module)
    method = an.find_method(info, "forward") if info is not None else None
    if method is not None and not module.place.on_host and not module.has(Fact.MANAGED) \
            and not module.has(Fact.SCATTERS) and not module.has(Fact.DISPATCHED):
        # the program's own forward: its operations say which inputs meet what (a packed
        # sequence's `lengths` rightly stay on the CPU); input meets are reported here, at the call
        result = _forward_reported_at_call(an, module, method, node, args, kwargs, inputs, frame)
        if result is not None:
            return result
    if module.place.where is Where.NONE and len(inputs) >= 2:
        reported = an.meet(node, inputs, operation, frame)  # a loss or activation: inputs meet
    elif module.place.where is not Where.NONE and not module.has(Fact.MANAGED):
        weights = Value(Kind.MODULE, module.place, module.origin, facts=module.facts)
        if module.has(Fact.SCATTERS) or module.has(Fact.DISPATCHED):
            # DataParallel scatters host inputs itself, accelerate's hooks move them to each
            # block's device; the wrapper's own weights still must be placed
            reported = an.meet(node, [weights] + [v for v in inputs if v.place.on_device], operation, frame)
        elif method is None or not _moves_its_inputs_first(method[1]):
            reported = an.meet(node, [weights] + inputs, operation, frame, _input_sources(node, args, kwargs, inputs))
    if method is None and module.place.on_device and not reported:
        # a library model: its forward runs every registered part on the inputs
        for part in effective_host_parts(module):
            an.emit(Meet(node, an.ctx(frame), part,
                         Value(Kind.TENSOR, module.place, Origin(ORIGIN_OTHER, node, "", name)), operation))
            reported = True
    if info is not None and not reported and method is not None:
        call_args = [module] + [_as_moved(a, module) for a in args]
        result = an.call_function(method[1], call_args, kwargs, node, frame, class_info=method[0],
                                  is_method=True, role="forward")
        if module.place.on_host and result.place.on_host and result.origin is not None \
                and result.origin.category == ORIGIN_COMPUTED:
            result = result.evolve(origin=_computed(node, name, module))  # named by the outer call
        if result.kind is not Kind.UNKNOWN or result.place.known:
            return result
    if info is None and not reported and module.qualname == tk.SEQUENTIAL and args \
            and any(c.node is not None and id(c.node) in an.classes for _, c in module.fields):
        # nn.Sequential runs its children in order: analyse the program's own modules' forward
        value = args[0]
        for _, child in module.fields:
            if child.kind is not Kind.MODULE:
                value = UNKNOWN
                break
            if child.place.where is Where.UNKNOWN and module.place.known:
                child = child.at(module.place)
            value = call_module(an, child, node, [value], {}, frame)
        if value.kind is not Kind.UNKNOWN or value.place.known:
            return value
    if reported:  # after the crash is fixed, the call runs on the device
        device = next((v for v in [Value(Kind.MODULE, module.place)] + inputs
                       if any(place.on_device for _, place in alternatives(v.place))), None)
        if device is not None:
            return Value(Kind.TENSOR, device.place, Origin(ORIGIN_OTHER, node, f"the output of `{name}`"))
    if module.place.where is Where.NONE:
        return tensor_result(inputs) if inputs else Value(Kind.TENSOR, UNKNOWN_PLACE)
    if module.has(Fact.MANAGED):
        return Value(Kind.TENSOR, module.place, facts=frozenset({Fact.MANAGED}))
    if module.has(Fact.DISPATCHED):
        return Value(Kind.TENSOR, UNKNOWN_PLACE)  # the hooks return outputs where the inputs were
    if module.place.where is Where.UNKNOWN:
        # wherever the module is, a call that does not crash runs where its inputs are
        device = next((v for v in inputs if v.place.on_device and not v.has(Fact.MANAGED)), None)
        if device is not None:
            return Value(Kind.TENSOR, device.place, Origin(ORIGIN_OTHER, node, f"the output of `{name}`"))
        return Value(Kind.TENSOR, UNKNOWN_PLACE)
    if module.place.on_host:  # computed on the CPU, where the module's weights are
        return Value(Kind.TENSOR, module.place, _computed(node, name, module))
    return Value(Kind.TENSOR, module.place, Origin(ORIGIN_OTHER, node, f"the output of `{name}`"))


def _computed(node: cst.Call, name: str, module: Value) -> Origin:
    return Origin(ORIGIN_COMPUTED, node, f"the output of `{name}`", "",
                  module.origin.node if module.origin is not None else None)


def _as_moved(value: Value, module: Value, depth: int = 0) -> Value:
    """What a wrapped model's own forward receives. DataParallel and DDP with `device_ids`
    scatter host inputs to the module's device, accelerate's hooks (`device_map`) and
    `accelerator.prepare` place them (a prepared model may be wrapped in DDP at launch):
    a host input is not evidence of a crash inside. A plain module gets them as they are."""
    if not (module.has(Fact.SCATTERS) or module.has(Fact.DISPATCHED) or module.has(Fact.MANAGED)):
        return value
    if value.kind is Kind.TENSOR and value.place.on_host:
        return value.at(module.place if module.has(Fact.SCATTERS) and module.place.on_device else UNKNOWN_PLACE)
    if value.fields and depth < 3:
        return value.evolve(fields=tuple((key, _as_moved(field, module, depth + 1)) for key, field in value.fields))
    return value


def _forward_reported_at_call(an: Analyzer, module: Value, method: tuple, node: cst.Call, args: Args,
                              kwargs: Kwargs, inputs: list[Value], frame: Frame) -> Value | None:
    """Run a local module's forward; a meet inside it whose host side is one of the call's
    inputs is the caller's bug (DEV101 at `model(inputs)`), so it is re-attributed to the call."""
    start = an.event_count()
    result = an.call_function(method[1], [module] + list(args), kwargs, node, frame,
                              class_info=method[0], is_method=True, role="forward")
    input_origins = {id(v.origin) for v in inputs if v.origin is not None and v.place.known}
    input_origins |= {id(f.origin) for v in inputs for _, f in v.fields if f.origin is not None}
    operation = f"the call of `{code_of(node.func)}`"
    an.reattribute_meets(start, lambda meet: meet.host.origin is not None and id(meet.host.origin) in input_origins,
                         lambda meet: replace(meet, node=node, ctx=an.ctx(frame), operation=operation))
    if result.kind is not Kind.UNKNOWN or result.place.known:
        return result
    return None


def module_method(an: Analyzer, receiver: Value, name: str, node: cst.Call, args: Args, kwargs: Kwargs,
                  frame: Frame) -> Value:
    """`model.register_buffer(...)`, `model.eval()`, `model.parameters()`, `model.generate(...)`."""
    info = an.class_of(receiver)
    if name in tk.BUFFER_REGISTRATIONS and len(args) >= 2:
        attr = string_value(node.args[0].value) or "<dynamic>"
        value = args[1].with_facts(Fact.REGISTERED, Fact.BUFFER if name == "register_buffer" else Fact.PARAM)
        an.rebind(frame, receiver.identity, receiver.set_field(attr, value))
        return NONE_VALUE
    if name in tk.SUBMODULE_REGISTRATIONS and len(args) >= 2:
        literal = string_value(node.args[0].value)
        attr = literal or f"<dynamic{id(node)}>"
        registered = args[1].with_facts(Fact.REGISTERED)
        earlier = receiver.get_field(attr) if literal is None else None
        if earlier is not None and earlier != registered:
            # `self.add_module(str(i), layer)` in a loop: each pass registers another module
            registered = union(earlier, registered).with_facts(Fact.REGISTERED)
        an.rebind(frame, receiver.identity, receiver.set_field(attr, registered))
        return NONE_VALUE
    if info is not None:
        method = an.find_method(info, name)
        if method is not None:
            if name == "forward":
                return call_module(an, receiver, node, args, kwargs, frame)
            return _program_method(an, receiver, method, node, args, kwargs, frame)
    if name in tk.MODULE_SELF_METHODS:
        return receiver
    if name in tk.MODULE_CALL_METHODS:
        return call_module(an, receiver, node, args, kwargs, frame)
    if name in tk.MODULE_STATE_METHODS:
        facts = {Fact.PARAMS, Fact.PARAM_ITER} if name in tk.PARAMETER_ITERATORS else {Fact.PARAMS}
        return Value(Kind.UNKNOWN, receiver.place, facts=frozenset(facts), identity=receiver.identity)
    return UNKNOWN


# the moves a forward may start with, putting an input where the module wants it
_INPUT_MOVES = frozenset({"to", "cuda", "cpu", "type", "type_as"})


def _moves_its_inputs_first(forward: cst.FunctionDef) -> bool:
    """The program's forward starts by moving each of its inputs (`x = x.to(**self.tpdv)`,
    `x = x.to(self.device)`): the caller's tensors never meet the module's state as they are, so
    an unmoved module called with device tensors is no crash at the call (its forward, analysed
    on its own, says where the moved input then meets what)."""
    params = [p.name.value for p in forward.params.params[1:]]
    if not params:
        return False
    moved: set[str] = set()
    for statement in forward.body.body:
        if type(statement) is not cst.SimpleStatementLine:
            break
        for small in statement.body:
            if type(small) is cst.Expr and type(small.value) is cst.SimpleString:
                continue  # the docstring
            if type(small) is not cst.Assign or len(small.targets) != 1 \
                    or type(small.targets[0].target) is not cst.Name:
                return moved >= set(params[:1]) and bool(moved)
            target, value = small.targets[0].target.value, small.value
            if target in params and type(value) is cst.Call and type(value.func) is cst.Attribute \
                    and value.func.attr.value in _INPUT_MOVES and type(value.func.value) is cst.Name \
                    and value.func.value.value == target:
                moved.add(target)
            else:
                return moved >= set(params[:1]) and bool(moved)
    return moved >= set(params[:1]) and bool(moved)


def _program_method(an: Analyzer, receiver: Value, method: tuple[ClassInfo, cst.FunctionDef], node: cst.Call,
                    args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`pqmf.synthesis(x)`: a method of the program's own module runs on its registered state.
    When that state meets the method's device inputs and the module was never moved, the fault
    is the module's (DEV102 at this call), not its buffers' factories in `__init__`: those meets
    become one meet of the module with the device input here."""
    events = an.events
    start = len(events)
    result = an.call_function(method[1], [receiver] + args, kwargs, node, frame,
                              class_info=method[0], is_method=True)
    if not receiver.place.on_host or receiver.origin is None or receiver.has(Fact.MANAGED) \
            or receiver.has(Fact.SCATTERS) or receiver.has(Fact.DISPATCHED):
        return result
    built = _built_in_init(an, an.class_of(receiver))
    own_state = [e for e in events[start:] if isinstance(e, Meet) and e.ctx.role != "forward"
                 and (e.host.has(Fact.REGISTERED) or e.host.origin is not None and id(e.host.origin.node) in built)]
    if not own_state:
        return result
    events[start:] = [e for e in events[start:] if e not in own_state]
    first = own_state[0]
    an.emit(Meet(node, an.ctx(frame), Value(Kind.MODULE, receiver.place, receiver.origin, facts=receiver.facts),
                 first.device, f"the call of `{code_of(node.func)}`", first.likely, first.condition))
    return result


def _built_in_init(an: Analyzer, info: ClassInfo | None) -> frozenset[int]:
    """The ids of the nodes of the class's `__init__`: a tensor made there is the module's state
    (`self.register_buffer("f", torch.zeros(...))`, read back as `self.f * k`)."""
    init = an.find_method(info, "__init__") if info is not None else None
    if init is None:
        return frozenset()
    owner = init[0]
    if owner.init_nodes is None:
        owner.init_nodes = frozenset(id(n) for n in walk(init[1]))
    return owner.init_nodes
