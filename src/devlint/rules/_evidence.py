"""The evidence steps of a finding, built from what the analysis recorded: where a value came
from (its `Origin`), where the other side was moved (its `Placement.node`), the sites a rule
relates (a loader, a fallback, a CUDA call), and where they meet.

Rules compose these; none of them decides anything. Each step is a node the analysis already
holds and a short sentence, so building them costs nothing until a finding is made (positions
are resolved by the engine, then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from devlint.analysis.events import SiteKind
from devlint.analysis.values import (
    CALLER_IDENT,
    ORIGIN_AFTER_MOVE,
    ORIGIN_ATTRIBUTE,
    ORIGIN_BATCH,
    ORIGIN_COMPUTED,
    ORIGIN_DATA,
    ORIGIN_FACTORY,
    ORIGIN_MADE,
    ORIGIN_MODULE,
    ORIGIN_OUTSIDE_TREE,
    ORIGIN_TOKENIZER,
    Kind,
    Origin,
    Value,
    Where,
)
from devlint.rules.base import Step

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Context, Meet, Move
    from devlint.analysis.program import Program

_BATCH_PREFIXES = ("a batch from ", "an item of ")


def _name(value: Value, fallback: str) -> str:
    return f"`{value.label}`" if value.label else fallback


def origin(value: Value, fallback: str = "the value") -> tuple[Step, ...]:
    """Where the value came from, in the words of its origin's category; a computed value also
    names the unmoved module that computed it, and a part assigned after a move names the move."""
    source = value.origin
    if source is None:
        return ()
    name = _name(value, fallback)
    category = source.category
    description = source.description
    if category == ORIGIN_BATCH and _same_name(name, _source(source)):
        text = f"{name} is a batch on the CPU here"
    elif category == ORIGIN_BATCH:
        text = f"{name} comes from {_source(source)} here, on the CPU"
    elif category in (ORIGIN_FACTORY, ORIGIN_DATA, ORIGIN_TOKENIZER):
        text = f"{name} is made on the CPU by {description} here" if description else f"{name} is made on the CPU here"
    elif category == ORIGIN_MODULE:
        text = f"{name} is built by {description} here, on the CPU" if description else f"{name} is built here, on the CPU"
    elif category == ORIGIN_ATTRIBUTE:
        what = "a plain container of tensors" if "plain container" in description else "a plain tensor"
        text = f"{name} is set to {what} here, which `.to()` does not move"
    elif category == ORIGIN_OUTSIDE_TREE:
        text = _outside_tree(name, description)
    elif category == ORIGIN_AFTER_MOVE:
        return (Step(source.cause, "the model is moved here"),
                Step(source.node, f"`{source.name}` is assigned here, after the move, on the CPU"))
    elif category == ORIGIN_COMPUTED:
        return (Step(source.cause, "this module is built here and never moved"),
                Step(source.node, f"{name if value.label else 'this tensor'} is {description} here, on the CPU"))
    elif description and not _same_name(name, description):
        text = f"{name} comes from {description} here"
    else:
        text = f"{name} is bound here"
    return (Step(source.node, text),)


def _same_name(name: str, description: str) -> bool:
    """`train_loader` "comes from" `train_loader`: a sentence that says nothing."""
    return name.strip("`") == description.strip("`")


def _outside_tree(name: str, description: str) -> str:
    """Why `model.to(device)` does not reach a module, in the words of the analysis' reason."""
    if "plain container" in description:
        return f"a module kept in the plain container {name} is built here: `.to()` does not reach it"
    if "inside `forward`" in description:
        return f"{name} is built inside `forward` here, with fresh CPU weights on every call"
    if "stored on the class" in description:
        return f"{name} is a module stored on the class here: `.to()` does not reach it"
    return f"{name} is made here ({description}), where `.to()` does not reach it"


def _source(source: "Origin") -> str:
    """What a value comes from: the loader for a batch (`val_loader`), else the description."""
    if source.category != ORIGIN_BATCH:
        return source.description
    where = source.description
    for prefix in _BATCH_PREFIXES:
        where = where.removeprefix(prefix)
    return where or "the data"


def device(value: Value, fallback: str = "the other operand") -> tuple[Step, ...]:
    """Where the device side got there: the move that put it on its device (under its condition),
    else where it came from."""
    place = value.place
    name = _name(value, fallback)
    target = f"`{place.device}`" if place.device and " " not in place.device else place.device or "a device"
    if place.node is not None:
        when = f" when `{place.cond}`" if place.where is Where.COND and place.cond else ""
        return (Step(place.node, f"{name} is on {target}, moved here{when}"),)
    source = value.origin
    if source is None or source.node is None:
        return ()
    if place.ident == CALLER_IDENT:
        return (Step(source.node, f"{name} is on the caller's device here"),)
    what = f"{source.description}, " if source.description else ""
    return (Step(source.node, f"{name} is {what}on {target} here"),)


def meeting(meet: "Meet", paths_told: bool = False) -> Step:
    """Where the host side and the device side meet, and on which paths when not all (unless
    steps before it showed the tests that decide them)."""
    when = f", when {meet.condition}" if meet.condition and not paths_told else ""
    return Step(meet.node, f"they meet here, in {meet.operation}{when}")


def meet_story(program: "Program", meet: "Meet", host: str = "the value") -> tuple[Step, ...]:
    """The whole story of a `Meet`: the host side's origin, the device side's move, the meeting.
    In code no call reaches, a device side on the caller's device is told by where that code
    starts (library mode: its inputs are the caller's)."""
    other = device(meet.device)
    if not other and meet.device.place.ident == CALLER_IDENT:
        other = entry(program, meet.ctx, "its input", "on the caller's device")
    decided = branches(program, meet)
    return origin(meet.host, host) + other + decided + (meeting(meet, paths_told=bool(decided)),)


def branches(program: "Program", meet: "Meet") -> tuple[Step, ...]:
    """The tests that decide the paths a likely meet happens on: "on this branch `args.gpu is None`"."""
    return tuple(Step(test, f"on this branch {words}") for test, words in program.deciding_tests(meet.tests))


def subject(program: "Program", move: "Move", noun: str = "") -> tuple[Step, ...]:
    """Where the subject of a move came from: its origin, the site that built it (an optimizer),
    the class it is an instance of, the tensors a container holds, or, in a function no call
    reaches, the function its caller passes it to. `noun` says what it is ("a NumPy array")."""
    value = move.subject
    text = move.subject_text
    name = _name(value, f"`{text}`" if text and "(" not in text and "\n" not in text else "the moved value")
    source = value.origin
    if source is not None and source.node is not None and source.node is not move.node:
        if source.description and source.category != ORIGIN_MADE and not _same_name(name, _source(source)):
            return (Step(source.node, f"{name} comes from {_source(source)} here"),)
        return (Step(source.node, f"{name} is {noun}, made here" if noun else f"{name} is made here"),)
    if value.kind is Kind.OPTIMIZER:
        built = next((site for site in program.sites(SiteKind.OPTIMIZER) if site.value.identity == value.identity
                      and value.identity), None)
        if built is not None:
            return (Step(built.node, f"{name} is built here"),)
    if value.kind in (Kind.DATASET, Kind.OBJECT) and value.node is not None:
        return (Step(value.node, f"{name} is an instance of `{value.qualname or 'the class'}`, defined here"),)
    held = next((part for part in _parts(value) if part.origin is not None and part.origin.node is not None), None)
    if held is not None:
        made = held.origin.description or "a tensor"  # type: ignore[union-attr]
        return (Step(held.origin.node, f"{name} holds {made}, made here"),)  # type: ignore[union-attr]
    return entry(program, move.ctx, name)


def _parts(value: Value) -> list[Value]:
    return ([value.elem] if value.elem is not None else []) + [part for _, part in value.fields]


def entry(program: "Program", ctx: "Context", name: str, where: str = "whatever its caller passes") -> tuple[Step, ...]:
    """In code no call of the file reaches (library mode): where that code starts, and that its
    values come from whoever calls it."""
    for site in program.sites(SiteKind.ENTRY):
        if site.ctx.function == ctx.function or ctx.callers and site.ctx.function == ctx.callers[0]:
            return (Step(site.node, f"no call in this file reaches `{site.ctx.function}()`: {name} is {where}"),)
    return ()


def at(node: object, message: str) -> Step:
    """A step at any node a rule holds (a site, a move)."""
    return Step(node, message)
