"""Devices and CUDA: `torch.device(...)`, `torch.cuda.*`, availability checks, the default
device, the program's own device and move helpers, and what a `device=` argument names."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import SiteKind
from devlint.analysis.library.common import NEXT, call_arguments
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of, is_setting_attribute
from devlint.analysis.values import (
    NONE_VALUE,
    SCALAR,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    device_at,
)
from devlint.analysis.vocabulary import Fact, known_int
from devlint.knowledge import torch as tk


def move_helper(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """A configured `move-helpers` function moves its first argument to the device."""
    if not args:
        return NEXT
    return an.move_value(node, args[0], device_at("device", node), "to", frame, False)


def device_helper(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """A configured `device-helpers` function returns the program's device."""
    return Value(Kind.DEVICE, device_at(code_of(node.func), node, devices.opaque(code_of(node))))


def any_accelerator(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.accelerator.current_accelerator()`: the accelerator of whatever type the machine
    has (`if torch.accelerator.is_available(): ... else: torch.device("cpu")` is a CPU fallback).
    Recorded, so that DEV202 says a device chosen from it needs an accelerator, not CUDA."""
    an.emit_site(node, frame, SiteKind.ACCELERATOR, qualname, UNKNOWN)
    return Value(Kind.DEVICE, device_at(code_of(node), node, devices.opaque(code_of(node))))


def availability_query(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                       frame: Frame) -> Value:
    an.emit_site(node, frame, SiteKind.CUDA_QUERY, qualname, SCALAR)
    kind = tk.AVAILABILITY_CHECKS.get(qualname)
    if kind == "cuda":
        return SCALAR.with_facts(Fact.CUDA_AVAILABLE)
    if kind == "mps":
        return SCALAR.with_facts(Fact.MPS_AVAILABLE)
    return SCALAR


def cuda_call(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    an.emit_site(node, frame, SiteKind.CUDA, qualname, UNKNOWN, call_arguments(node, args, kwargs), code_of(node))
    if qualname in tk.EMPTY_CACHE:
        an.emit_site(node, frame, SiteKind.EMPTY_CACHE, qualname, UNKNOWN)
    if qualname in tk.CURRENT_DEVICE:
        return Value(Kind.DEVICE, device_at("cuda", node, "cuda"))
    return UNKNOWN


def device_constructor(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                       frame: Frame) -> Value:
    """`torch.device("cuda", 1)`, `torch.device(args.device)`."""
    place = device_arg(an, node, args, kwargs, positional=0, keyword="type")
    if place is None:
        return Value(Kind.DEVICE, UNKNOWN_PLACE)
    fallback = args and args[0].has(Fact.CPU_FALLBACK)
    index = args[1] if len(args) > 1 else kwargs.get("index")
    if index is not None and place.on_device and place.ident in devices.GPU_TYPES:
        index_node = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "index"),
                          node.args[1].value if len(node.args) > 1 else None)
        ident = devices.indexed(place.ident, known_int(index), code_of(index_node) if index_node is not None else "")
        place = replace(place, device=code_of(node), ident=ident)
    return Value(Kind.DEVICE, place, facts=frozenset({Fact.CPU_FALLBACK} if fallback else ()))


def set_default_device(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                       frame: Frame) -> Value:
    target = device_arg(an, node, args, kwargs, positional=0)
    if target is not None and target.on_device:
        an.default_device = True
        an.emit_site(node, frame, SiteKind.DEFAULT_DEVICE, qualname, UNKNOWN)
    elif target is not None and target.on_host:
        an.default_device = an.default_unknown = False
    elif args or kwargs:
        # `torch.set_default_device(device)` with a device chosen at run time: from here on a
        # factory without `device=` may make its tensor on the accelerator
        an.default_unknown = True
    return NONE_VALUE


def device_arg(an: Analyzer, node: cst.Call, args: Args, kwargs: Kwargs, positional: int | None = 0,
               keyword: str = "device") -> Placement | None:
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
    return place_of_device_value(an, value, arg_node)


def place_of_device_value(an: Analyzer, value: Value, arg_node: cst.CSTNode | None) -> Placement | None:
    """Where a value given as a device puts things: a device, a tensor's device, an index."""
    text = code_of(arg_node) if arg_node is not None else "device"
    if value.kind is Kind.DEVICE or value.has(Fact.DEVICE_STR):
        if value.place.on_device:
            return replace(value.place, device=value.place.device if value.kind is Kind.STR else text,
                           node=arg_node or value.place.node)
        # `x.device` of a value we know nothing about: a device, but maybe the CPU one
        return value.place if value.place.known else UNKNOWN_PLACE
    if value.kind in (Kind.TENSOR, Kind.MODULE):
        return value.place if value.place.known else None
    if value.kind is Kind.DTYPE:
        return None
    if value.kind is Kind.SCALAR:
        return device_at(f"cuda:{text}", arg_node, devices.indexed("cuda", known_int(value), text))
    if value.kind is Kind.NONE:
        # `device=None`: mostly a parameter's default meaning "follow the input"; not evidence
        return UNKNOWN_PLACE
    if type(arg_node) is cst.Attribute and arg_node.attr.value == "device" \
            and not is_setting_attribute(arg_node):
        # `t.device` of a tensor we cannot see follows that tensor, wherever it is; `args.device`
        # or `self.device` is the program's chosen device
        return UNKNOWN_PLACE
    if value.kind in (Kind.UNKNOWN, Kind.STR) and "dtype" not in text and "type" not in text.rsplit(".", 1)[-1]:
        if value.kind is Kind.STR and not value.has(Fact.DEVICE_STR):
            return None
        return device_at(text, arg_node, devices.opaque(text))
    return None

