"""Classes of the analysed program: what they are (module, dataset, plain), their instances,
their class attributes, and method lookup through the program's own bases."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.shared import Analyzer, ClassInfo, Frame, Kwargs, Args
from devlint.analysis.syntax import dotted
from devlint.analysis.values import (
    CALLER,
    HOST,
    NO_TENSORS,
    ORIGIN_AFTER_MOVE,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    Where,
    device_at,
    new_identity,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import conventions, matches
from devlint.knowledge import libraries as lib
from devlint.knowledge import torch as tk

_MAX_BASES = 20  # how far up a chain of the program's own base classes lookups go


def define_class(an: Analyzer, node: cst.ClassDef, frame: Frame) -> None:
    """`class Net(nn.Module): ...`: evaluate its bases where it is defined and classify it."""
    bases = [an.eval(arg.value, frame) for arg in node.bases if arg.keyword is None]
    info = ClassInfo(node, bases, frame.scope.facts)
    classify(an, info)
    an.classes[id(node)] = info
    frame.env[node.name.value] = Value(Kind.CLASS, NO_TENSORS, qualname=node.name.value, node=node)


def classify(an: Analyzer, info: ClassInfo) -> None:
    for base in info.bases:
        if base.kind is Kind.CLASS and id(base.node) in an.classes:
            parent = an.classes[id(base.node)]
            info.is_module |= parent.is_module
            info.opaque_base |= parent.opaque_base
            info.is_dataset |= parent.is_dataset
            info.framework_managed |= parent.framework_managed
            info.library_base = info.library_base or parent.library_base
        elif base.kind is Kind.REF:
            if matches(base.qualname, lib.MODULE_BASES) or matches(base.qualname, tk.NN_CLASSES):
                info.is_module = True
                info.library_base = info.library_base or base.qualname
            if matches(base.qualname, lib.FRAMEWORK_MODULE_BASES):
                info.framework_managed = True
            if matches(base.qualname, tk.DATASET_BASES):
                info.is_dataset = True
            if not info.is_module and not info.is_dataset and not base.qualname.startswith(
                    conventions.PLAIN_BASE_MODULES):
                info.opaque_base = True
        elif base.kind is Kind.UNKNOWN:
            info.opaque_base = True
    if not info.is_module and not info.is_dataset and info.opaque_base and "forward" in info.methods \
            and not any(b.kind is Kind.REF and matches(b.qualname, lib.NOT_MODULE_BASES) for b in info.bases):
        # a class on a base the analysis cannot see that defines `forward` is a module (a layer
        # of a library devlint has no rows for); what it registers moves with it
        info.is_module = True
        info.library_base = info.library_base or next((b.qualname for b in info.bases if b.kind is Kind.REF), "?")


def class_of(an: Analyzer, value: Value) -> ClassInfo | None:
    """The program class a value is an instance of (or is), if any."""
    return an.classes.get(id(value.node)) if value.node is not None else None


def find_method(an: Analyzer, info: ClassInfo | None, name: str) -> tuple[ClassInfo, cst.FunctionDef] | None:
    """`name` in the class or the first of the program's own bases that defines it."""
    seen = 0
    while info is not None and seen < _MAX_BASES:
        if name in info.methods:
            return info, info.methods[name]
        nxt = None
        for base in info.bases:
            if base.kind is Kind.CLASS and base.node is not None:
                nxt = an.classes.get(id(base.node))
                if nxt is not None:
                    break
        info = nxt
        seen += 1
    return None


def instantiate(an: Analyzer, info: ClassInfo, args: Args, kwargs: Kwargs, node: cst.CSTNode, frame: Frame,
                run_init: bool = True, entry: bool = False) -> Value:
    identity = new_identity()
    if info.is_module:
        origin = an.module_origin(node, frame, f"`{info.name}(...)`")
        value = Value(Kind.MODULE, NO_TENSORS, origin, identity=identity, qualname=info.name, node=info.node,
                      facts=frozenset({Fact.LOCAL}))
    elif info.is_dataset:
        value = Value(Kind.DATASET, HOST, identity=identity, qualname=info.name, node=info.node)
    else:
        value = Value(Kind.OBJECT, NO_TENSORS, identity=identity, qualname=info.name, node=info.node)
    init = find_method(an, info, "__init__")
    if init is not None and run_init:
        result_self = an.call_function(init[1], [value] + args, kwargs, node, frame, class_info=init[0],
                                       is_method=True, role="init", want_self=True, entry=entry)
        if result_self.identity == identity:
            value = result_self
    elif init is None and not info.is_module:
        value = _record_fields(an, info, value, args, kwargs, frame)
    if info.is_module and not _built_after_own_move(value):
        value = value.evolve(place=_module_place(value, info))
    if info.framework_managed:
        # a LightningModule: the Trainer places it and everything registered in it
        value = an.move_module(value, UNKNOWN_PLACE).with_facts(Fact.FRAMEWORK)
    return value


def _record_fields(an: Analyzer, info: ClassInfo, value: Value, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """A dataclass / attrs class / NamedTuple: its generated __init__ binds the annotated fields
    in order (a NamedTuple's fields are also its positions)."""
    named_tuple = any(b.kind is Kind.REF and b.qualname.rsplit(".", 1)[-1] in conventions.RECORD_BASES
                      for b in info.bases)
    decorated = any(conventions.RECORD_DECORATORS.search(
        dotted(d.decorator.func if type(d.decorator) is cst.Call else d.decorator) or "")
        for d in info.node.decorators)
    if not (named_tuple or decorated):
        return value
    spread = kwargs.get("**") or kwargs.get("*")
    spread_elem = an.element_of(spread) if spread is not None and spread.kind is not Kind.DICT \
        else (spread.elem if spread is not None else None)
    fields = list(value.fields)
    for index, name in enumerate(info.record_fields):
        if index < len(args):
            field = args[index]
        elif name in kwargs:
            field = kwargs[name]
        elif spread is not None:
            field = (spread.get_field(name) if spread.kind is Kind.DICT else None) or spread_elem or UNKNOWN
        elif name in info.class_attrs:
            field = class_attribute(an, info, name, frame) or UNKNOWN
        else:
            field = UNKNOWN
        fields.append((name, field))
        if named_tuple:
            fields.append((index, field))
    return value.evolve(fields=tuple(fields))


def _module_place(module: Value, info: ClassInfo) -> Placement:
    registered = [v for _, v in module.fields if v.has(Fact.REGISTERED)]
    if any(v.place.on_host for v in registered):
        return HOST
    if any(v.place.on_device for v in registered):
        return registered[0].place if all(v.place == registered[0].place for v in registered) else UNKNOWN_PLACE
    if any(v.place.where is Where.UNKNOWN for v in registered) or info.library_base not in ("", tk.MODULE_BASE):
        return UNKNOWN_PLACE
    return NO_TENSORS


def class_attribute(an: Analyzer, info: ClassInfo, attr: str, frame: Frame) -> Value | None:
    """A class-level attribute (`device = "cuda"` in a config class, a dataclass default), found
    through the program's base classes and evaluated in the file that defines the class: its
    names are that file's globals, not the caller's. None when no class of the chain sets it."""
    seen = 0
    current: ClassInfo | None = info
    while current is not None and seen < _MAX_BASES:
        expr = current.class_attrs.get(attr)
        if expr is not None:
            if type(expr) is cst.Call and (dotted(expr.func) or "").rsplit(".", 1)[-1] in conventions.FIELD_SPECIFIERS:
                # dataclasses.field(default=...) / field(default_factory=lambda: ...)
                given = {a.keyword.value: a.value for a in expr.args if a.keyword is not None}
                factory = given.get("default_factory")
                expr = given.get("default") or (factory.body if type(factory) is cst.Lambda else None)
                if expr is None:
                    return UNKNOWN
            scope = an.home_scope(current.node, frame) or frame.scope
            return an.eval(expr, Frame(dict(scope.env), frame.ctx, frame.depth, True, scope, stmt=frame.stmt))
        current = next((an.classes[id(b.node)] for b in current.bases
                        if b.kind is Kind.CLASS and b.node is not None and id(b.node) in an.classes), None)
        seen += 1
    return None


def standalone_instance(an: Analyzer, info: ClassInfo, frame: Frame) -> Value:
    """An instance for the methods no call reached, built the way the program builds one; its
    registered state is wherever the program moves instances of the class."""
    value = instantiate(an, info, [], {}, info.node, frame, run_init=True, entry=True)
    if info.is_module and _built_after_own_move(value):
        return value  # what it holds is where its own move in `__init__` left it
    if info.is_module and id(info.node) in an.moved_classes:
        value = an.move_module(value, device_at("device"))
    elif info.is_module:
        # nothing in this program decides where an instance lives (a models.py checked on its
        # own): its registered state is wherever its user puts it, not on the host; in library
        # mode that is the caller's device, where its inputs are
        value = an.move_module(value, CALLER if an.library_mode else UNKNOWN_PLACE)
        an.rebind_submodules(frame, value)  # its parts, however else they are referenced, moved with it
    elif info.opaque_base:
        value = value.evolve(fields=tuple((key, _unplaced(an, field)) for key, field in value.fields))
    return value


def _built_after_own_move(module: Value) -> bool:
    """An instance that moved itself in `__init__` (`self.to(cfg.device)`) and was given parts
    afterwards: it is on that device, and those parts are not."""
    return module.place.on_device and any(v.origin is not None and v.origin.category == ORIGIN_AFTER_MOVE
                                          for _, v in module.fields)


def _unplaced(an: Analyzer, value: Value) -> Value:
    """A module or tensor whose placement this analysis cannot know (it may have moved with
    an instance it belongs to)."""
    if value.kind is Kind.MODULE:
        return an.move_module(value, UNKNOWN_PLACE)
    if value.kind is Kind.TENSOR and value.place.known:
        return value.at(UNKNOWN_PLACE)
    return value

