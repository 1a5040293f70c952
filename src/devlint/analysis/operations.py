"""Operations where values meet: an operator, a tensor function, a call of a module.

This is where the question of the whole analysis is asked: could these operands be on
different devices? A host value meeting a device value is a `Meet`; two device values whose
device expressions may name different devices is a `DeviceMeet` (DEV111 judges it); a device
tensor handed to host-only code is a `HostUse`.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.events import DeviceMeet, HostUse, Meet
from devlint.analysis.placement import alternatives, is_tensor_operand, join, members, tensor_result
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.values import (
    CALLER_IDENT,
    NO_TENSORS,
    ORIGIN_AFTER_MOVE,
    ORIGIN_ATTRIBUTE,
    ORIGIN_DATA,
    ORIGIN_FACTORY,
    ORIGIN_OTHER,
    ORIGIN_OUTSIDE_TREE,
    SCALAR,
    STR,
    UNKNOWN,
    Kind,
    Origin,
    Placement,
    Value,
    Where,
    array,
)
from devlint.analysis.syntax import code_of
from devlint.analysis.vocabulary import Fact


def binary(an: Analyzer, node: cst.CSTNode, left: Value, right: Value, op: str, frame: Frame) -> Value:
    if left.kind is Kind.STR or right.kind is Kind.STR:
        return STR if left.kind is Kind.STR and right.kind is Kind.STR else UNKNOWN
    if left.kind is Kind.LIST and right.kind is Kind.LIST:
        return Value(Kind.LIST, NO_TENSORS, elem=join(an.element_of(left), an.element_of(right)))
    if op == "*" and Kind.LIST in (left.kind, right.kind) and Kind.SCALAR in (left.kind, right.kind):
        listed = left if left.kind is Kind.LIST else right  # `[placeholder] * n`
        element = an.element_of(listed)
        return Value(Kind.LIST, element.place if element.kind is Kind.TENSOR else NO_TENSORS, elem=element)
    pairs = [(v, side) for v, side in ((left, "left"), (right, "right")) if is_tensor_operand(v)]
    tensors = [v for v, _ in pairs]
    if not tensors:
        if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
            return SCALAR
        if left.kind is Kind.NDARRAY or right.kind is Kind.NDARRAY:
            result = array(node, left if left.kind is Kind.NDARRAY else right)
            if all(v.is_zero_dim for v in (left, right) if v.kind is Kind.NDARRAY) \
                    and not any(v.kind in (Kind.LIST, Kind.TUPLE) for v in (left, right)):
                # NumPy scalars and numbers (or what may be one): maybe a NumPy scalar
                result = result.with_facts(Fact.ZERO_DIM)
            return host_consumer(an, node, [left, right], f"a NumPy operation `{op}`", frame, result=result)
        return UNKNOWN
    sources = [getattr(node, side, None) for _, side in pairs] if type(node) is cst.BinaryOperation else None
    meet(an, node, tensors, f"`{op}`", frame, sources)
    if any(v.kind is Kind.NDARRAY and not v.is_zero_dim for v in (left, right)):
        # (a NumPy scalar, an element or a whole-array reduction, is a number to the tensor)
        host_consumer(an, node, [left, right], f"a NumPy operation `{op}`", frame)
    return tensor_result(tensors, zero_dim=all(t.is_zero_dim for t in tensors))


def meet(an: Analyzer, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame,
         sources: list[cst.CSTNode | None] | None = None) -> bool:
    """Record host values meeting device values among `operands`, path by path; True if any did.
    `sources`, when given, are the operands' expressions: a device side with no name of its
    own is named by its expression in messages (`0.5 * x.std()`, not "the other operand").

    A meet needs a path on which one operand is on the host and another on a device: paths of
    the CPU-only machine do not count (a GPU run is the premise of every such crash), nor does a
    device expression that falls back to the CPU on the very path the host value is on."""
    sides = []  # (operand index, condition, placement, the condition under which it is not the CPU)
    for index, value in enumerate(operands):
        if value.has(Fact.SCATTERS):
            continue
        for condition, place in alternatives(value.place):
            if place.on_device and not conditions.on_cpu_machine(condition):
                sides.append((index, condition, place, _gpu_condition(place)))
    found = False
    for index, value in enumerate(operands):
        if value.is_zero_dim or value.has(Fact.MANAGED):
            continue
        event = _first_meet(an, node, operands, index, value, sides, operation, frame, sources)
        if event is not None:
            an.emit(event)
            found = True
    _device_meet(an, node, operands, operation, frame)
    return found


def _first_meet(an: Analyzer, node: cst.CSTNode, operands: list[Value], index: int, value: Value,
                sides: list, operation: str, frame: Frame, sources: list[cst.CSTNode | None] | None) -> Meet | None:
    for condition, place in alternatives(value.place):
        if not place.on_host or conditions.on_cpu_machine(condition):
            continue
        for other, device_condition, device_place, gpu_condition in sides:
            if other == index:
                continue
            if device_place.ident == CALLER_IDENT and (value.origin is None
                                                       or value.origin.category not in _MADE_ON_HOST
                                                       or conditions.says_cpu(condition)):
                # not made on the host here (a module built elsewhere: the caller may move it), or
                # on a path where the caller said it runs on the CPU (`if device != "cpu": x.cuda()`)
                continue
            both = conditions.conjoin(condition, device_condition)
            if both is None or not conditions.compatible(both, gpu_condition):
                continue  # the two cannot be where they are on one path
            # on the caller's device (library mode): it crashes when the caller is on a GPU
            likely = not conditions.is_premise(both) or device_place.ident == CALLER_IDENT
            # say when the host side is on the host (that is what the user must change); the
            # device side's own condition only when the host side has none
            shown = condition if not conditions.is_premise(condition) else both
            device = operands[other].at(device_place)
            if sources is not None and not device.label and sources[other] is not None:
                device = _named_by(device, sources[other])
            return Meet(node, an.ctx(frame), value.at(place), device, operation,
                        likely=likely, condition=conditions.describe(shown) if likely else "",
                        tests=_deciding(an, shown, frame) if likely else ())
    return None


def _deciding(an: Analyzer, condition: conditions.Condition, frame: Frame) -> tuple:
    """(literal, its test) for each literal of `condition`: the test in this function, else in the
    nearest caller that has one (the literals of a path condition are the tests on the way here)."""
    functions = (frame.ctx.function,) + tuple(reversed(frame.ctx.callers))
    found = []
    for literal in sorted(condition):
        test = next((an.branches[(literal[0], f)] for f in functions if (literal[0], f) in an.branches), None)
        if test is not None:
            found.append((literal, test))
    return tuple(found)


_MAX_NAMED_EXPRESSION = 40


def _named_by(value: Value, source: cst.CSTNode) -> Value:
    """The device side named by its expression as written, when that is short enough to read."""
    text = " ".join(code_of(source).split())
    if not text or len(text) > _MAX_NAMED_EXPRESSION:
        return value
    origin = value.origin if value.origin is not None else Origin(ORIGIN_OTHER)
    return value.evolve(origin=replace(origin, name=text))


# what library code itself puts on the host (library mode: only these meet the caller's device)
_MADE_ON_HOST = frozenset({ORIGIN_FACTORY, ORIGIN_DATA, ORIGIN_ATTRIBUTE, ORIGIN_OUTSIDE_TREE, ORIGIN_AFTER_MOVE})


def _gpu_condition(place: Placement) -> conditions.Condition:
    """The paths on which a device placement is not the CPU: its device expression's own
    fallback (`"cuda" if args.cuda else "cpu"` is the CPU when `args.cuda` is false)."""
    gpu, falls_back = devices.split(place.ident)
    if not falls_back:
        if place.ident.startswith("="):  # a device the program chose: not the CPU unless a test said so
            return frozenset({(conditions.is_the_cpu(place.ident), False)})
        return conditions.ALWAYS
    choice = devices.fallback_condition(place.ident)
    if choice is None:  # chosen by availability
        kind = devices.parse(gpu)[0]
        return frozenset({conditions.literal("", kind if kind in conditions.AVAILABLE else "cuda")})
    return frozenset({conditions.literal(choice)})


def _device_meet(an: Analyzer, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame) -> None:
    """Two operands placed by device expressions of different identities (DEV111 judges them)."""
    availability = an.availability_conds
    placed = []  # (operand, condition, placement with its effective identity)
    for value in operands:
        if not value.place.ident or value.is_zero_dim or value.has(Fact.MANAGED) or value.has(Fact.SCATTERS):
            continue
        for condition, place in _device_alternatives(value.place, availability):
            placed.append((value, condition, place))
    for index, (first, first_condition, first_place) in enumerate(placed):
        for second, second_condition, second_place in placed[index + 1:]:
            if second is first or first_place.ident == second_place.ident:
                continue
            if conditions.conjoin(first_condition, second_condition) is None:
                continue
            an.emit(DeviceMeet(node, an.ctx(frame), first.at(first_place), second.at(second_place), operation))
            return


def _device_alternatives(place: Placement, availability: set[str]) -> list[tuple[conditions.Condition, Placement]]:
    """The device placements a value may have, each with its effective identity (a value on a
    device only when a GPU is available is on "that GPU or the CPU"). A value on a device only
    under a user's condition is on the host on the other path: that is a host-device meet
    (Meet, likely), not a choice between two devices, so it has none."""
    if place.where is Where.DEVICE and not place.paths:
        return [(conditions.ALWAYS, replace(place, ident=devices.effective(place, availability)))]
    paths = alternatives(place)
    hosts = [c for c, p in paths if p.where is not Where.DEVICE]
    if any(not conditions.on_cpu_machine(c) for c in hosts):
        return []
    out = []
    for condition, alternative in paths:
        if alternative.where is not Where.DEVICE or not alternative.ident:
            continue
        ident = alternative.ident
        if hosts:
            ident = devices.with_fallback(ident, conditions.text(condition))
        out.append((condition, replace(alternative, ident=devices.effective(replace(alternative, ident=ident),
                                                                            availability))))
    return out


def host_consumer(an: Analyzer, node: cst.CSTNode, values: list[Value], consumer: str, frame: Frame,
                  result: Value = UNKNOWN) -> Value:
    """Values handed to code that reads host memory (NumPy, sklearn, matplotlib, `.numpy()`):
    a device tensor among them is a `HostUse`."""
    for value in values:
        candidates = members(value)
        if value.kind in (Kind.LIST, Kind.TUPLE):
            candidates = [v for _, v in value.fields] + (members(value.elem) if value.elem is not None else [])
        for v in candidates:
            if v.kind is not Kind.TENSOR or v.has(Fact.MANAGED):
                continue  # (a value of a kind not known, a pipeline's images, may be no tensor)
            # on a device, or on the GPU whenever one is there (moved under an availability test)
            # (the caller's device of library code is not: a host-side helper takes host tensors)
            place = next((p for c, p in alternatives(v.place) if p.on_device and conditions.is_premise(c)
                          and p.ident != CALLER_IDENT), None)
            if place is not None:
                an.emit(HostUse(node, an.ctx(frame), v.at(place), consumer))
                return result
    return result
