"""Moves: `.to(...)`, `.cuda()`, `.cpu()` on tensors, modules, batches and objects.

`Module.to()` moves in place, and only what is registered: submodules, parameters, buffers;
other names for the moved submodules see the move too. `Tensor.to()` returns a moved copy and
leaves the original where it was (a bare `x.to(device)` statement moves nothing: DEV107).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.events import Move, SiteKind
from devlint.analysis.library.tensors import tensor_type_place
from devlint.analysis.placement import union
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of, walk
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    Where,
    device_at,
)
from devlint.analysis.vocabulary import Fact, known_int
from devlint.knowledge import conventions

_FIELD_HOLDERS = (Kind.OBJECT, Kind.BATCH, Kind.DICT, Kind.TUPLE, Kind.LIST)
_ALIAS_HOLDERS = CONTAINERS | {Kind.OBJECT}


def move_call(an: Analyzer, receiver: Value, method: str, node: cst.Call, args: Args, kwargs: Kwargs,
              frame: Frame, statement: bool) -> Value:
    """`receiver.to(...)` / `.cuda(...)` / `.cpu()`: where it goes, then `move_value`."""
    info = an.class_of(receiver)
    own = an.find_method(info, method) if info is not None else None
    if own is not None and info is not None and not info.is_module:  # a class with its own .to(): run it
        result = an.call_function(own[1], [receiver] + args, kwargs, node, frame,
                                  class_info=own[0], is_method=True)
        if conventions.DYNAMIC_FIELD_ACCESS.search(code_of(own[1])):
            # fields moved by name at run time (setattr, __dict__, dataclasses.fields): the
            # analysis cannot tell which, so none of them is known to stay on the host
            result = _host_fields_unknown(result)
            if receiver.identity:
                an.rebind(frame, receiver.identity, _host_fields_unknown(receiver))
        return result
    target: Placement | None
    if method == "cpu":
        target = HOST
    elif method == "type":
        # `x.type(torch.cuda.FloatTensor)`: the legacy cast moves it; `x.type(y.type())` or a
        # type given by the caller moves it where that type says, which we cannot tell
        target = (tensor_type_place(args[0]) if args else None) or UNKNOWN_PLACE
    elif method == "cuda":
        target = _cuda_target(an, receiver, node, args, kwargs, frame)
    else:
        target = None
        candidates: list[tuple[Value, cst.CSTNode | None]] = []
        if "device" in kwargs:
            keyword_node = next(a.value for a in node.args if a.keyword is not None and a.keyword.value == "device")
            candidates.append((kwargs["device"], keyword_node))
        elif args:
            positional = [a.value for a in node.args if a.keyword is None]
            candidates.append((args[0], positional[0] if positional else None))
        for value, arg_node in candidates:
            if value.kind in (Kind.TENSOR,) and value.place.known:
                target = value.place
            else:
                target = an.place_of_device_value(value, arg_node)
        if target is None and not candidates:
            target = _spread_target(an, kwargs)
        if target is None:
            return receiver  # a dtype conversion, or a target we cannot tell
        if target.on_device and candidates and candidates[0][0].kind is Kind.STR and "cuda" in target.device \
                and not candidates[0][0].has(Fact.OPTION_DEFAULT):  # the command line may choose the CPU
            an.emit_site(node, frame, SiteKind.CUDA, "Tensor.to", receiver)
    non_blocking = any(a.keyword is not None and a.keyword.value == "non_blocking" and type(a.value) is cst.Name
                       and a.value.value == "True" for a in node.args)
    return move_value(an, node, receiver, target, method, frame, statement, non_blocking)


def _spread_target(an: Analyzer, kwargs: Kwargs) -> Placement | None:
    """`x.to(**tpdv)` with `tpdv = dict(dtype=..., device=device)`: the device in the dict;
    `x.to(*args)` or a dict we cannot read: a move to a device we cannot tell (never "not
    moved"); a dict read whole that names no device: a dtype conversion (None)."""
    spread = kwargs.get("**")
    if spread is not None and spread.kind is Kind.DICT and spread.fields:
        given = spread.get_field("device")
        return an.place_of_device_value(given, None) if given is not None else None
    if spread is not None or "*" in kwargs:
        return UNKNOWN_PLACE
    return None


def _cuda_target(an: Analyzer, receiver: Value, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Placement:
    index_arg = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "device"), None)
    index = code_of(index_arg) if index_arg is not None else ""
    index_value = (args[0] if args else kwargs.get("device")) if index_arg is not None else None
    if index_value is not None and index_value.kind is Kind.NONE:
        index = ""
    ident = devices.indexed("cuda", known_int(index_value), index) if index else "cuda"
    if index_value is not None and index_value.kind is Kind.DEVICE and index_value.place.on_device:
        ident = index_value.place.ident  # .cuda(torch.device("cuda:1"))
    an.emit_site(node, frame, SiteKind.CUDA, "Tensor.cuda", receiver)
    return device_at(f"cuda:{index}" if index else "cuda", node, ident)


def _host_fields_unknown(value: Value) -> Value:
    if value.kind not in _FIELD_HOLDERS:
        return value
    return value.evolve(fields=tuple((k, v.at(UNKNOWN_PLACE) if v.place.on_host or v.place.where is Where.COND
                                      else v) for k, v in value.fields),
                        elem=value.elem.at(UNKNOWN_PLACE) if value.elem is not None and value.elem.place.known
                        else value.elem)


def _device_name(node: cst.Call) -> str:
    """The device argument as written when it is a plain name or attribute (`device`)."""
    arg = next((a.value for a in node.args if a.keyword is None or a.keyword.value == "device"), None)
    return code_of(arg) if type(arg) is cst.Name or type(arg) is cst.Attribute else ""


def move_value(an: Analyzer, node: cst.Call, receiver: Value, target: Placement, method: str, frame: Frame,
               statement: bool, non_blocking: bool = False) -> Value:
    subject_text = code_of(node.func.value) if type(node.func) is cst.Attribute else code_of(node)
    if target.node is None:
        target = replace(target, node=node)
    flag = an.dispatch_flags.get(receiver.identity) if receiver.identity else None
    if flag is not None and conditions.with_literal(frame.path, flag) is None:
        # `if not load_in_8bit: model.to(device)`: on this path the model was not quantised
        receiver = receiver.with_facts(remove=_DISPATCH_FACTS)
    an.emit(Move(node, an.ctx(frame), receiver, target, method, statement, subject_text, non_blocking,
                 _device_name(node), frame.path))
    kind = receiver.kind
    if kind is Kind.MODULE:
        moved = move_module(an, receiver, target)
        if _moves_self_under_construction(node, receiver, frame) and target.on_device:
            # `self.to(cfg.device)` in `__init__` before anything is built: what the instance is
            # given afterwards is created on the CPU (modules.registered_form marks it)
            moved = moved.evolve(place=target)
        if receiver.identity:
            an.rebind(frame, receiver.identity, moved)
            if receiver.node is not None and target.on_device:
                an.moved_classes.add(id(receiver.node))
        elif type(node.func) is cst.Attribute and type(node.func.value) is cst.Name:
            # one of two modules (`model = DataParallel(model)` on one branch): Module.to is
            # in place, so the name now holds the moved module whichever it was
            an.assign(node.func.value, moved, frame, node)
        elif type(node.func) is cst.Attribute and type(node.func.value) is cst.Attribute \
                and type(node.func.value.value) is cst.Name \
                and an.lookup(node.func.value.value.value, frame).kind is Kind.OBJECT:
            # the same for `self.model.to(device)` in a Trainer that built one of two models
            an.assign(node.func.value, moved, frame, node)
        rebind_submodules(an, frame, moved, receiver.identity)
        return moved
    if statement and kind in (Kind.BATCH, Kind.UNKNOWN):
        # `batch.to(device)` on what is not proven a tensor: a BatchEncoding or a batch class moves
        # in place, a tensor returns a copy; which one is not known, so neither is where it is now
        _forget_place(an, node, receiver, frame)
    if kind in (Kind.TENSOR, Kind.UNKNOWN):
        # a new tensor: it keeps where it came from, not the name (`b = a.to(device)` is `b`)
        origin = replace(receiver.origin, name="") if receiver.origin is not None else None
        return Value(Kind.TENSOR if kind is Kind.TENSOR else Kind.UNKNOWN, target, origin,
                     facts=receiver.facts - {Fact.ZERO_DIM} if not receiver.is_zero_dim else receiver.facts)
    if kind is Kind.ENCODING:  # BatchEncoding.to moves its fields in place and returns itself
        moved = receiver.evolve(place=target, fields=tuple((k, v.at(target) if v.kind is Kind.TENSOR else v)
                                                           for k, v in receiver.fields))
        if receiver.identity:
            an.rebind(frame, receiver.identity, moved)
        return moved
    if kind is Kind.BATCH:
        return receiver.evolve(place=target,
                               fields=tuple((k, v.at(target) if v.kind in (Kind.TENSOR, Kind.BATCH) else v)
                                            for k, v in receiver.fields),
                               elem=receiver.elem.at(target) if receiver.elem is not None else None)
    if kind is Kind.OBJECT and receiver.node is not None:
        return receiver.evolve(place=target)
    return UNKNOWN


_DISPATCH_FACTS = (Fact.DISPATCHED, Fact.QUANTIZED, Fact.QUANTIZED8)


def _forget_place(an: Analyzer, node: cst.Call, receiver: Value, frame: Frame) -> None:
    """The receiver of a bare `.to()` that may have moved it in place: its placement unknown."""
    if not receiver.place.known and not receiver.fields and receiver.elem is None:
        return
    unknown = _host_fields_unknown(receiver.at(UNKNOWN_PLACE) if receiver.place.known else receiver)
    if receiver.identity:
        an.rebind(frame, receiver.identity, unknown)
    elif type(node.func) is cst.Attribute and type(node.func.value) is cst.Name:
        an.assign(node.func.value, unknown, frame, node)


def _moves_self_under_construction(node: cst.Call, receiver: Value, frame: Frame) -> bool:
    return frame.ctx.role == "init" and bool(frame.self_name) and type(node.func) is cst.Attribute \
        and type(node.func.value) is cst.Name and node.func.value.value == frame.self_name \
        and receiver.identity != 0 and frame.env.get(frame.self_name, UNKNOWN).identity == receiver.identity


def move_module(an: Analyzer, module: Value, target: Placement, top: bool = True) -> Value:
    """`module.to(target)`: registered state follows; the rest stays where it was."""
    if module.place.where is Where.NONE and not module.fields:
        return module
    fields = []
    custom = _moves_itself(an, module, top)
    by_apply = _apply_assigned_attributes(an)
    for key, value in module.fields:
        if value.has(Fact.REGISTERED):
            if value.kind is Kind.MODULE:
                value = move_module(an, value, target, top=False)
            elif value.place.where is not Where.NONE:
                value = value.at(target)
        elif custom or key in by_apply:
            # its own `to` / `_apply` may move it, or a parent's `_apply` that moves state of
            # this name (`m.grid = list(map(fn, m.grid))` in yolov5's Model): not known
            value = _not_known(value)
        fields.append((key, value))
    fields = _move_plain_aliases(an, fields, target)
    place = target if module.place.where is not Where.NONE else module.place
    if module.place.where is Where.NONE and any(v.has(Fact.REGISTERED) and v.place.where is not Where.NONE
                                                 for _, v in fields):
        place = target
    if module.place.where is Where.UNKNOWN:
        place = target
    return module.evolve(place=place, fields=tuple(fields))


def _not_known(value: Value, depth: int = 0) -> Value:
    """A tensor, or a container's tensors, that a custom move may have moved: unplaced."""
    if value.kind is Kind.TENSOR and value.place.known:
        return value.at(UNKNOWN_PLACE)
    if value.kind in CONTAINERS and depth < 2:
        return value.evolve(place=UNKNOWN_PLACE if value.place.known else value.place,
                            elem=_not_known(value.elem, depth + 1) if value.elem is not None else None,
                            fields=tuple((k, _not_known(f, depth + 1)) for k, f in value.fields))
    return value


_APPLY_NAMES: list = [None, -1, frozenset()]  # (the classes table, its size, the names): one analysis at a time


def _apply_assigned_attributes(an: Analyzer) -> frozenset[str]:
    """The attribute names assigned in the `_apply` overrides of the program's classes."""
    if _APPLY_NAMES[0] is an.classes and _APPLY_NAMES[1] == len(an.classes):
        return _APPLY_NAMES[2]
    names: set[str] = set()
    for info in list(an.classes.values()):
        method = info.methods.get("_apply")
        if method is None:
            continue
        for node in walk(method):
            if type(node) is cst.Assign:
                names.update(t.target.attr.value for t in node.targets if type(t.target) is cst.Attribute)
    _APPLY_NAMES[:] = [an.classes, len(an.classes), frozenset(names)]
    return _APPLY_NAMES[2]


def _moves_itself(an: Analyzer, module: Value, top: bool) -> bool:
    """A class of the program that overrides `_apply` (used by every move, also of a parent)
    or, for the module moved itself, `to` / `cuda`: it may move its plain state too."""
    info = an.class_of(module)
    if info is None:
        return False
    names = ("_apply", "to", "cuda") if top else ("_apply",)
    return any(an.find_method(info, name) is not None for name in names)


def rebind_submodules(an: Analyzer, frame: Frame, moved: Value, skip: int = 0) -> None:
    """Module.to() moves registered submodules in place: other names for them (`teacher`
    after `Distiller(student, teacher).to(device)`) now hold the moved modules too."""
    found: dict[int, Value] = {}

    def collect(v: Value, depth: int) -> None:
        for _, child in v.fields:
            if child.kind is Kind.MODULE and child.has(Fact.REGISTERED) and depth < 5:
                if child.identity and child.identity != skip and child.identity not in found:
                    found[child.identity] = child
                collect(child, depth + 1)

    collect(moved, 0)
    for identity, child in found.items():
        an.rebind(frame, identity, child)


def _move_plain_aliases(an: Analyzer, fields: list[tuple[object, Value]],
                        target: Placement) -> list[tuple[object, Value]]:
    """Modules in a plain list / dict attribute, or held by a plain helper object, that are the
    same objects as registered submodules (`self.levels = [...]` then `self.body =
    nn.Sequential(*self.levels)`: timm #820; `self.sampler = Sampler(self.body)`) are moved in
    place with them. Identity is the object identity, or the construction site."""
    plain = [i for i, (_, v) in enumerate(fields) if not v.has(Fact.REGISTERED) and v.kind in _ALIAS_HOLDERS]
    if not plain:
        return fields
    identities: set[int] = set()
    sites: set[int] = set()

    def collect(v: Value, depth: int) -> None:
        if depth > 5 or v.kind is not Kind.MODULE:
            return
        if v.has(Fact.MAY_HOLD):  # `nn.Sequential(*levels)` of a list grown in a loop
            for _, member in v.fields:
                collect(member, depth + 1)
            return
        if v.identity:
            identities.add(v.identity)
        if v.origin is not None and v.origin.node is not None:
            sites.add(id(v.origin.node))
        for _, child in v.fields:
            if child.has(Fact.REGISTERED):
                collect(child, depth + 1)

    for _, v in fields:
        if v.has(Fact.REGISTERED):
            collect(v, 0)

    def follow(v: Value, depth: int = 0) -> Value:
        if v.has(Fact.MAY_HOLD):  # each module a list grown in a loop may hold
            followed: Value | None = None
            for _, member in v.fields:
                followed = union(followed, follow(member, depth))
            if followed is None:
                return v
            return followed.evolve(origin=v.origin) if followed.has(Fact.MAY_HOLD) else followed
        if v.kind is Kind.MODULE and v.place.on_host and (
                v.identity in identities if v.identity else v.origin is not None and v.origin.node is not None
                and id(v.origin.node) in sites):
            return move_module(an, v, target, top=False)
        if v.kind in _ALIAS_HOLDERS and depth < 2:
            return v.evolve(fields=tuple((k, follow(f, depth + 1)) for k, f in v.fields),
                            elem=follow(v.elem, depth + 1) if v.elem is not None else None)
        return v

    out = list(fields)
    for i in plain:
        out[i] = (out[i][0], follow(out[i][1]))
    return out
