"""torch.nn and torch.optim: modules and where their weights are, losses with weight tensors,
registering containers, wrappers (DataParallel, DDP, torch.compile) and optimizers."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.events import SiteKind
from devlint.analysis.library.common import NEXT, call_arguments
from devlint.analysis.placement import join
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    NO_TENSORS,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    Where,
    device_at,
    new_identity,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import matches
from devlint.knowledge import torch as tk


def optimizer(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    if matches(qualname, tk.NOT_OPTIMIZERS) or not qualname.rsplit(".", 1)[-1][:1].isupper():
        return NEXT  # a scheduler, or a function of the optimizer package
    value = Value(Kind.OPTIMIZER, NO_TENSORS, qualname=qualname, identity=new_identity())
    an.emit_site(node, frame, SiteKind.OPTIMIZER, qualname, value, call_arguments(node, args, kwargs))
    return value


def scattering_wrapper(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                       frame: Frame) -> Value:
    """nn.DataParallel (and DDP given `device_ids`) scatter their inputs to the devices."""
    if qualname in tk.DDP_WRAPPERS and not ("device_ids" in kwargs or len(args) > 1):
        return NEXT
    inner = args[0] if args else kwargs.get("module", UNKNOWN)
    # the wrapped module is registered as the submodule `module`: a move of the wrapper moves it,
    # and `wrapper.module.weight.device` reads where it went
    held = inner.with_facts(Fact.REGISTERED) if inner.kind is Kind.MODULE else inner
    value = inner.evolve(facts=inner.facts | {Fact.SCATTERS}, identity=new_identity(),
                         fields=(("module", held),), qualname=qualname)
    an.emit_site(node, frame, SiteKind.DATAPARALLEL, qualname, value, call_arguments(node, args, kwargs),
                 code_of(node))
    return value


def wrapper(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """torch.compile, torch.jit, DDP without `device_ids`: the module stays where it is."""
    inner = args[0] if args else kwargs.get("module", UNKNOWN)
    if qualname in tk.DDP_WRAPPERS and inner.kind is Kind.MODULE and ("device_ids" in kwargs or len(args) > 1):
        return inner.with_facts(Fact.SCATTERS)  # DDP moves its inputs to device_ids[0] itself
    return inner


def nn_module(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`nn.Linear(...)`, `nn.CrossEntropyLoss(weight=w)`, `nn.Sequential(...)`."""
    if qualname.count(".") != 2:
        return NEXT  # torch.nn.X only: torch.nn.X.y is not a module class
    name = qualname.rsplit(".", 1)[-1]
    origin = an.module_origin(node, frame, f"`{code_of(node.func)}(...)`")
    if name in tk.STATELESS_MODULES:
        return Value(Kind.MODULE, NO_TENSORS, origin, identity=new_identity(), qualname=qualname)
    if name in tk.LOSS_WEIGHT_ARGS or name.endswith("Loss"):
        return _loss(an, qualname, name, node, args, kwargs, frame, origin)
    if qualname in tk.REGISTERING_CONTAINERS:
        return _registering_container(qualname, args, kwargs, origin)
    if "device" in kwargs or "**" in kwargs:  # `nn.LayerNorm(n, device=device)`: built in place
        place = an.device_arg(node, [], kwargs, positional=None) if "device" in kwargs else None
        return Value(Kind.MODULE, place if place is not None else UNKNOWN_PLACE, origin, identity=new_identity(),
                     qualname=qualname)
    if frame.ctx.default_device or an.default_device:  # parameters made on the default device
        return Value(Kind.MODULE, device_at("the default device", node), origin, identity=new_identity(),
                     qualname=qualname)
    if an.default_unknown:
        return Value(Kind.MODULE, UNKNOWN_PLACE, origin, identity=new_identity(), qualname=qualname)
    return Value(Kind.MODULE, HOST, origin, identity=new_identity(), qualname=qualname)


def _loss(an: Analyzer, qualname: str, name: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame,
          origin: Origin) -> Value:
    weights = []
    for keyword, position in tk.LOSS_WEIGHT_ARGS.get(name, ()):
        value = kwargs.get(keyword)
        if value is None and len(args) > position:
            value = args[position]
        if value is not None and value.kind is not Kind.NONE and not value.is_zero_dim:
            # a 0-dim CPU `pos_weight=torch.tensor(5.0)` meets CUDA inputs as a number does
            weights.append(value)
    if not weights:
        return Value(Kind.MODULE, NO_TENSORS, origin, identity=new_identity(), qualname=qualname)
    place = weights[0].place if all(w.place == weights[0].place for w in weights) else UNKNOWN_PLACE
    if any(w.kind not in (Kind.TENSOR,) for w in weights):
        place = UNKNOWN_PLACE if not any(w.place.known for w in weights) else place
    origin = an.module_origin(node, frame, f"`{code_of(node.func)}` with a weight tensor")
    return Value(Kind.MODULE, place, origin, identity=new_identity(), qualname=qualname,
                 facts=frozenset({Fact.LOSS_WEIGHT}))


def _registering_container(qualname: str, args: Args, kwargs: Kwargs, origin: Origin) -> Value:
    children: list[tuple[object, Value]] = []
    starred = [kwargs["*"]] if "*" in kwargs else []  # nn.Sequential(*layers)
    for value in list(args) + starred + [v for k, v in kwargs.items() if not k.startswith("*")]:
        if value.kind in CONTAINERS:
            children.extend(value.fields)
            if value.elem is not None:
                children.append((len(children), value.elem))
        elif value.kind is Kind.MODULE and value.qualname in tk.REGISTERING_CONTAINERS:
            children.extend(value.fields)
        else:
            children.append((len(children), value))
    place = NO_TENSORS
    for _, child in children:
        if child.kind is Kind.MODULE or child.has(Fact.PARAM):
            if child.place.where is Where.NONE:
                continue
            place = child.place if place.where is Where.NONE else join(
                Value(Kind.MODULE, place), Value(Kind.MODULE, child.place)).place
        elif child.kind is not Kind.MODULE:
            place = UNKNOWN_PLACE if place.where is Where.NONE else place
    fields = tuple((k, c.with_facts(Fact.REGISTERED)) for k, c in children)
    return Value(Kind.MODULE, place, origin, identity=new_identity(), qualname=qualname, fields=fields)
