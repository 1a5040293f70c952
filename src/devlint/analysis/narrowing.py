"""Narrowing: what an `if` test (or the test of a conditional expression) says about the names
it tests, in the branch where it holds and in the one where it does not.

- `isinstance(x, torch.Tensor)`, `torch.is_tensor(x)`, `hasattr(x, "cpu")`: `x` is a tensor
  where the test holds, and not one where it fails (a list default of a parameter is ruled
  out in the tensor branch, a tensor in the list branch).
- `isinstance(x, (list, tuple))`: where it fails, `x` is none of those.
- `x.device != d` / `x.device == d`: where the devices are equal, `x` is on `d`'s device
  (`if t.device != d: t = t.to(d)` leaves `t` on `d` on both paths).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.names import canonical
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import string_value
from devlint.analysis.values import CONTAINERS, NOT_TENSORS, TENSORISH, UNKNOWN, UNKNOWN_PLACE, Kind, Value
from devlint.knowledge import torch as tk

_SEQUENCE_TYPES = frozenset({"builtins.list", "builtins.tuple"})


def narrow(an: Analyzer, test: cst.BaseExpression, frame: Frame, holds: bool) -> None:
    """Refine the names `test` tests, in `frame`, for the branch where it evaluates to `holds`."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, holds = test.expression, not holds
    if isinstance(test, cst.BooleanOperation):
        # `a and b` holding says both hold; `a or b` failing says both fail
        if isinstance(test.operator, cst.And) == holds:
            narrow(an, test.left, frame, holds)
            narrow(an, test.right, frame, holds)
        return
    if isinstance(test, cst.Comparison):
        _narrow_device_comparison(an, test, frame, holds)
        return
    if not isinstance(test, cst.Call) or not test.args or not isinstance(test.args[0].value, cst.Name):
        return
    name = test.args[0].value.value
    value = frame.env.get(name)
    if value is None:
        return
    tested = _tested_types(an, test, frame)
    if tested == "tensor":
        if holds and value.kind not in TENSORISH:
            frame.env[name] = Value(Kind.TENSOR, value.place if value.kind is Kind.UNKNOWN else UNKNOWN_PLACE,
                                    value.origin)
        elif not holds and value.kind is Kind.TENSOR:
            frame.env[name] = UNKNOWN
    elif tested == "sequence" and not holds and value.kind in CONTAINERS:
        frame.env[name] = UNKNOWN


def _tested_types(an: Analyzer, test: cst.Call, frame: Frame) -> str:
    """"tensor" when the call tests for a tensor, "sequence" for a list or tuple, else ""."""
    callee = an.eval(test.func, frame)
    qualname = canonical(callee.qualname) if callee.kind is Kind.REF else ""
    if qualname in tk.TENSOR_TESTS and len(test.args) == 1:
        return "tensor"
    if len(test.args) != 2:
        return ""
    probe = test.args[1].value
    if qualname == "builtins.hasattr":
        return "tensor" if string_value(probe) in tk.TENSOR_ONLY_ATTRIBUTES else ""
    if qualname != "builtins.isinstance":
        return ""
    types = [el.value for el in probe.elements] if isinstance(probe, cst.Tuple) else [probe]
    names = set()
    for node in types:
        value = an.eval(node, frame)
        names.add(canonical(value.qualname) if value.kind is Kind.REF else "")
    if names and names <= tk.TENSOR_TYPES:
        return "tensor"
    if names and names <= _SEQUENCE_TYPES:
        return "sequence"
    return ""


def _narrow_device_comparison(an: Analyzer, test: cst.Comparison, frame: Frame, holds: bool) -> None:
    if len(test.comparisons) != 1:
        return
    operator = test.comparisons[0].operator
    if not isinstance(operator, (cst.Equal, cst.NotEqual)):
        return
    equal = isinstance(operator, cst.Equal) == holds
    if not equal:
        return
    left, right = test.left, test.comparisons[0].comparator
    for subject, other in ((left, right), (right, left)):
        if isinstance(subject, cst.Attribute) and subject.attr.value == "device" \
                and isinstance(subject.value, cst.Name) and subject.value.value in frame.env:
            place = an.place_of_device_value(an.eval(other, frame), other)
            if place is not None and place.known:
                name = subject.value.value
                current = frame.env[name]
                if current.kind in TENSORISH or current.kind is Kind.UNKNOWN and current.kind not in NOT_TENSORS:
                    frame.env[name] = current.at(place)
            return
