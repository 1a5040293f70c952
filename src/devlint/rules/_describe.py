"""Shared wording for messages: name the value, where it came from, what it meets, when it
crashes, and the fix (style.md). Rules compose these; none of them decides anything."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from devlint.analysis import devices
from devlint.analysis.values import CALLER_IDENT, Value, Where
from devlint.findings import Phase

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Context, Meet
    from devlint.analysis.program import Program


def value_name(value: Value, fallback: str = "this value") -> str:
    return f"`{value.label}`" if value.label else fallback


def where_from(program: "Program", value: Value) -> str:
    origin = value.origin
    if origin is None or not origin.description:
        return ""
    if origin.node is not None:
        return f"{origin.description} at {line_of(program, origin.node)}"
    return origin.description


def line_of(program: "Program", node: object) -> str:
    """"line 7", or "line 7 of data.py" when the node is in another file than the checked one."""
    path, span = program.locate(node)  # type: ignore[arg-type]
    if path == program.path:
        return f"line {span[0]}"
    return f"line {span[0]} of {os.path.relpath(path, os.path.dirname(program.path) or '.')}"


def on_path(meet: "Meet") -> str:
    """" when `args.gpu is None`": the paths a meet happens on, when not every path."""
    return f" when {meet.condition}" if meet.condition else ""


def device_side(program: "Program", value: Value, fallback: str = "the other operand") -> str:
    """`outputs` is on `device` (moved at line 12); `fallback` names a value with no name."""
    name = value_name(value, fallback)
    place = value.place
    device = f"`{place.device}`" if place.device else "a device"
    if place.ident == CALLER_IDENT:
        return f"{value_name(value, 'an input')} is on the caller's device"
    if place.where is Where.COND:
        text = f"{name} is on {device} when `{place.cond}`"
    else:
        text = f"{name} is on {device}"
    details = []
    origin = value.origin
    if origin is not None and origin.description.startswith("the output of") and origin.name:
        details.append(origin.description)
    if place.node is not None:
        details.append(f"moved at {line_of(program, place.node)}")
    if details:
        text += f" ({', '.join(details)})"
    return text


def when_it_crashes(program: "Program", ctx: "Context | None", device: Value | None = None) -> str:
    """When the crash happens; `device` is the meet's device side (library mode: the caller's)."""
    if device is not None and device.place.ident == CALLER_IDENT:
        where = f"`{ctx.function}()`" if ctx is not None and ctx.function != "<module>" else "this code"
        return f"this crashes when {where} runs on a GPU (its inputs are on the caller's device)"
    if ctx is None:
        return "this crashes when the line runs"
    phase = program.phase(ctx)
    where = f" in `{ctx.function}()`" if ctx.function != "<module>" else ""
    return {
        Phase.TRAINING: f"this crashes at the first training step{where}",
        Phase.EVALUATION: f"this crashes after the first training epoch, in evaluation{where}"
        if not where else f"this crashes after the first training epoch,{where}",
        Phase.CHECKPOINT: f"this crashes when the checkpoint is reloaded{where}",
        Phase.INFERENCE: f"this crashes in inference{where}",
        Phase.MODULE: "this crashes as soon as the script reaches this line",
    }.get(phase, f"this crashes when the line runs{where}")


def device_expr(value: Value) -> str:
    """The device as Python code for a suggested `.to(...)`: the program's own variable, or a
    string where the placement came from `.cuda()` or a literal (`"cuda"`, `f"cuda:{gpu}"`)."""
    device = value.place.device or "device"
    kind, colon, index = device.partition(":")
    if kind not in _DEVICE_KINDS:
        return device  # the program's own variable
    if not colon and kind != "cpu" and value.place.where is Where.COND and _is_expression(value.place.cond):
        return f'"{kind}" if {value.place.cond} else "cpu"'  # `.cuda()` under `if use_cuda:`
    if not colon and kind != "cpu" and devices.split(value.place.ident)[1]:
        # a device that falls back (or a variable `cuda` that does): the same choice
        test = devices.fallback_condition(value.place.ident) or "torch.cuda.is_available()"
        return f'"{kind}" if {test} else "cpu"'
    if not colon or index.isdigit():
        return f'"{device}"'
    return f'f"{kind}:{{{index}}}"'


_DEVICE_KINDS = frozenset({"cuda", "mps", "xpu", "cpu"})


def _is_expression(text: str) -> bool:
    """A test written as a plain name or attribute chain (`use_cuda`, `args.cuda`)."""
    return bool(text) and all(part.isidentifier() for part in text.split("."))
