"""Operations where values meet: an operator, a tensor function, a call of a module.

This is where the question of the whole analysis is asked: could these operands be on
different devices? A host value meeting a device value is a `Meet`; two device values whose
device expressions may name different devices is a `DeviceMeet` (DEV111 judges it); a device
tensor handed to host-only code is a `HostUse`.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import DeviceMeet, HostUse, Meet
from devlint.analysis.placement import is_tensor_operand, join, tensor_result
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.values import HOST, NO_TENSORS, SCALAR, STR, UNKNOWN, Kind, Value, Where
from devlint.analysis.vocabulary import Fact


def binary(an: Analyzer, node: cst.CSTNode, left: Value, right: Value, op: str, frame: Frame) -> Value:
    if left.kind is Kind.STR or right.kind is Kind.STR:
        return STR if left.kind is Kind.STR and right.kind is Kind.STR else UNKNOWN
    if left.kind is Kind.LIST and right.kind is Kind.LIST:
        return Value(Kind.LIST, NO_TENSORS, elem=join(an.element_of(left), an.element_of(right)))
    tensors = [v for v in (left, right) if is_tensor_operand(v)]
    if not tensors:
        if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
            return SCALAR
        if left.kind is Kind.NDARRAY or right.kind is Kind.NDARRAY:
            return host_consumer(an, node, [left, right], f"a NumPy operation `{op}`", frame,
                                 result=Value(Kind.NDARRAY, HOST))
        return UNKNOWN
    meet(an, node, tensors, f"`{op}`", frame)
    if left.kind is Kind.NDARRAY or right.kind is Kind.NDARRAY:
        host_consumer(an, node, [left, right], f"a NumPy operation `{op}`", frame)
    return tensor_result(tensors, zero_dim=all(t.is_zero_dim for t in tensors))


def meet(an: Analyzer, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame) -> bool:
    """Record host values meeting device values among `operands`; True if any did."""
    device = next((v for v in operands if v.place.on_device and not v.has(Fact.SCATTERS)), None)
    cond_device = next((v for v in operands if v.place.where is Where.COND), None)
    found = False
    availability = an.availability_conds
    for value in operands:
        if value.is_zero_dim or value.has(Fact.MANAGED):
            continue
        if value.place.on_host and device is not None:
            an.emit(Meet(node, an.ctx(frame), value, device, operation))
            found = True
        elif value.place.on_host and cond_device is not None:
            an.emit(Meet(node, an.ctx(frame), value, cond_device, operation, likely=True))
            found = True
        elif value.place.where is Where.COND and device is not None and value is not device:
            if devices.falls_back_when_no_gpu(devices.effective(value.place, availability)) \
                    and devices.effective(value.place, availability) == devices.effective(device.place, availability):
                continue  # both on the GPU when one is available, both on the CPU otherwise
            an.emit(Meet(node, an.ctx(frame), value, device, operation, likely=True))
            found = True
    _device_meet(an, node, operands, operation, frame)
    return found


def _device_meet(an: Analyzer, node: cst.CSTNode, operands: list[Value], operation: str, frame: Frame) -> None:
    """Two operands placed by device expressions of different identities (DEV111 judges them)."""
    availability = an.availability_conds
    # a value on a device only under a user's condition is on the host on the other path:
    # that is a host-device meet (Meet, likely), not a choice between two devices
    placed = [v for v in operands if v.place.ident and not v.is_zero_dim and not v.has(Fact.MANAGED)
              and not v.has(Fact.SCATTERS) and (v.place.on_device or v.place.where is Where.COND
                                               and devices.falls_back_when_no_gpu(
                                                   devices.effective(v.place, availability)))]
    for index, first in enumerate(placed):
        second = next((v for v in placed[index + 1:]
                       if devices.effective(v.place, availability) != devices.effective(first.place, availability)),
                      None)
        if second is not None:
            an.emit(DeviceMeet(node, an.ctx(frame), first, second, operation))
            return


def host_consumer(an: Analyzer, node: cst.CSTNode, values: list[Value], consumer: str, frame: Frame,
                  result: Value = UNKNOWN) -> Value:
    """Values handed to code that reads host memory (NumPy, sklearn, matplotlib, `.numpy()`):
    a device tensor among them is a `HostUse`."""
    for value in values:
        candidates = [value]
        if value.kind in (Kind.LIST, Kind.TUPLE):
            candidates = [v for _, v in value.fields] + ([value.elem] if value.elem is not None else [])
        for v in candidates:
            if v.kind in (Kind.TENSOR, Kind.UNKNOWN) and v.place.on_device and not v.has(Fact.MANAGED):
                an.emit(HostUse(node, an.ctx(frame), v, consumer))
                return result
    return result
