"""Narrowing: what an `if` test (or the test of a conditional expression) says about the names
it tests, in the branch where it holds and in the one where it does not.

- `isinstance(x, torch.Tensor)`, `torch.is_tensor(x)`, `hasattr(x, "cpu")`: `x` is a tensor
  where the test holds, and not one where it fails (a list default of a parameter is ruled
  out in the tensor branch, a tensor in the list branch).
- `isinstance(x, (list, tuple))`: where it fails, `x` is none of those.
- `x.device != d` / `x.device == d`: where the devices are equal, `x` is on `d`'s device
  (`if t.device != d: t = t.to(d)` leaves `t` on `d` on both paths).
- `d.type == "cpu"`: the path literal is about the device `d` itself (test_literal).
- `x.is_cuda` failing (`assert not x.is_cuda`): `x` is on the host; holding, `x` is on its
  device (a value on the host on some paths only keeps its device paths). The same for
  `x.is_cpu` and `x.device.type == "cuda"` / `!= "cpu"`.
- A test of where a tensor is, when the analysis knows it is on the host on this path, is
  decided (`placement_decides`): the branch for a GPU tensor is dead there (a class that
  dispatches on `if x.is_cuda:` never runs its CUDA code for a CPU input).
"""

from __future__ import annotations

import re

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.conditions import Literal
from devlint.analysis.names import canonical
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import code_of, dotted, string_value
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    NONE_VALUE,
    NOT_TENSORS,
    TENSORISH,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    Where,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import torch as tk

_SEQUENCE_TYPES = frozenset({"builtins.list", "builtins.tuple"})


def test_literal(an: Analyzer, test: cst.BaseExpression, frame: Frame, available: str | None) -> Literal:
    """The path literal an `if` test states (the first test of each function that states it is
    kept, for the evidence of findings on its paths: operations.meet)."""
    lit = _test_literal(an, test, frame, available)
    an.branches.setdefault((lit[0], frame.ctx.function), test)
    return lit


def _test_literal(an: Analyzer, test: cst.BaseExpression, frame: Frame, available: str | None) -> Literal:
    """The path literal of `test` (test_literal). A comparison of a device the program chose with
    "cpu" or with its GPU type (`device.type == "cpu"`, `args.device != "cpu"`) states it about
    that device, so a host value on the CPU side does not clash with values on that device
    (operations.meet): for a device that falls back to the CPU it is the fallback's own test."""
    compared = _device_comparison(test)
    if compared is not None:
        lit = _device_literal(an, frame, *compared)
        if lit is not None:
            return lit
    if type(test) is cst.Attribute and test.attr.value in ("is_cuda", "is_cpu") and type(test.value) is cst.Name:
        # `x.is_cuda` of a tensor on a device the program chose (or the caller's): says that
        # device is not the CPU
        tested = frame.env.get(test.value.value)
        if tested is not None and tested.kind in TENSORISH and tested.place.on_device \
                and tested.place.ident.startswith("="):
            return conditions.is_the_cpu(tested.place.ident), test.attr.value == "is_cpu"
    return conditions.literal(code_of(test), available or _availability_of(test, frame))


def _device_literal(an: Analyzer, frame: Frame, subject: cst.BaseExpression, named: str,
                    equal: bool) -> Literal | None:
    value = an.eval(subject, frame)
    place: Placement | None
    if value.kind is Kind.DEVICE or value.has(Fact.DEVICE_STR):
        place = value.place
    elif value.kind is Kind.UNKNOWN and "device" in code_of(subject):
        place = an.place_of_device_value(value, subject)  # `args.device`: the chosen device
    else:
        return None
    if place is None or not place.on_device:
        return None
    gpu, falls_back = devices.split(place.ident)
    if named == "cpu":
        says_cpu = equal
    elif devices.parse(gpu)[0] == named and falls_back:
        says_cpu = not equal  # "cuda" or the CPU: not CUDA is the CPU
    else:
        return None
    if falls_back:
        choice = devices.fallback_condition(place.ident)
        kind = devices.parse(gpu)[0]
        gpu_lit = conditions.literal(choice) if choice is not None \
            else conditions.literal("", kind if kind in conditions.AVAILABLE else "cuda")
        return conditions.negate(gpu_lit) if says_cpu else gpu_lit
    if place.ident.startswith("="):
        return conditions.is_the_cpu(place.ident), says_cpu
    return None


def _device_comparison(test: cst.BaseExpression) -> tuple[cst.BaseExpression, str, bool] | None:
    """`d.type == "cpu"` / `d == "cuda"` / `str(d) != "cpu"`: (d, the device type named,
    whether the test says they are equal)."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    operator = test.comparisons[0].operator
    if type(operator) not in (cst.Equal, cst.NotEqual):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if string_value(left) is not None:
        left, right = right, left
    named = string_value(right)
    if named not in _DEVICE_TYPES:
        return None
    if type(left) is cst.Attribute and left.attr.value == "type":
        left = left.value
    elif type(left) is cst.Call and dotted(left.func) == "str" and len(left.args) == 1:
        left = left.args[0].value
    return left, named, type(operator) is cst.Equal


_DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "xpu"})


def body_literals(an: Analyzer, test: cst.BaseExpression, frame: Frame, available: str | None) -> list[Literal]:
    """The literals that hold where `test` holds: one per operand of `a and b and ...`, so that
    a later test of `a` alone is known on that path (`if args.gpu and n > 1:` then `if args.gpu:`);
    the path where the test fails is only "not (a and b)"."""
    whole = test_literal(an, test, frame, available)
    parts = _conjuncts(test)
    if len(parts) == 1:
        return [whole]
    # the whole test too: the path where it fails says "not (a and b)", which only it contradicts
    return [whole] + [test_literal(an, part, frame, _availability_of(part, frame)) for part in parts]


def else_literals(an: Analyzer, test: cst.BaseExpression, frame: Frame, available: str | None) -> list[Literal]:
    """The literals that hold where `test` fails: `a or b` failing says that each operand
    failed (after `if args.cuda or args.amp: model.cuda()`, the path without the move is one
    where `args.cuda` is false)."""
    whole = conditions.negate(test_literal(an, test, frame, available))
    parts = _conjuncts(test, cst.Or)
    if len(parts) == 1:
        return [whole]
    return [whole] + [conditions.negate(test_literal(an, part, frame, _availability_of(part, frame)))
                      for part in parts]


def _conjuncts(test: cst.BaseExpression, operator: type = cst.And) -> list[cst.BaseExpression]:
    """The operands of `a and b and c` (of `a or b or c` with `operator=cst.Or`)."""
    if type(test) is cst.BooleanOperation and isinstance(test.operator, operator) and not test.lpar:
        return _conjuncts(test.left, operator) + _conjuncts(test.right, operator)
    return [test]


_GPU_COUNT = re.compile(r"torch\.cuda\.device_count\(\)\s*(>\s*[0-9]|>=\s*[1-9])")


def _availability_of(part: cst.BaseExpression, frame: Frame) -> str | None:
    """The device type whose availability one operand of an `and` asks about (without
    evaluating it again): the availability calls as written, or a name bound to one."""
    text = code_of(part)
    if text in (conditions.AVAILABLE["cuda"],) or _GPU_COUNT.fullmatch(text):
        return "cuda"
    if text == conditions.AVAILABLE["mps"]:
        return "mps"
    if type(part) is cst.Name:
        value = frame.env.get(part.value)
        if value is not None:
            return "cuda" if value.has(Fact.CUDA_AVAILABLE) else "mps" if value.has(Fact.MPS_AVAILABLE) else None
    return None


def _tensor_device_test(test: cst.BaseExpression) -> tuple[str, bool, str | bool] | None:
    """(x, whether the test says x is on a GPU, what the test failing says: True for "x is on
    the host", or the device type x is not on) for `x.is_cuda`, `x.is_cpu`,
    `x.device.type == "cuda"` (failing: not CUDA, maybe MPS), `x.device.type != "cpu"` and the
    like (x a plain name)."""
    if type(test) is cst.Attribute and test.attr.value in ("is_cuda", "is_cpu") and type(test.value) is cst.Name:
        return test.value.value, test.attr.value == "is_cuda", True
    compared = _device_comparison(test)
    if compared is None:
        return None
    subject, named, equal = compared
    if type(subject) is not cst.Attribute or subject.attr.value != "device" or type(subject.value) is not cst.Name:
        return None
    if not any(type(side) is cst.Attribute and side.attr.value == "type"
               for side in (test.left, test.comparisons[0].comparator)):  # type: ignore[attr-defined]
        return None  # `str(x.device) == "cuda"` is false for "cuda:0": only `.type` names the type
    if named != "cpu":  # `x.device.type == "cuda"`: a GPU where it holds; failing, maybe MPS
        return (subject.value.value, True, named) if equal else None
    return subject.value.value, not equal, True


def placement_decides(an: Analyzer, test: cst.BaseExpression, frame: Frame) -> bool | None:
    """The outcome of a test of where a tensor is, when the tensor is known to be on the host
    on this path (None when it is not decided)."""
    holds = True
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, holds = test.expression, not holds
    found = _tensor_device_test(test)
    if found is None:
        return None
    name, says_gpu, _ = found
    value = frame.env.get(name)
    if value is None or value.kind not in TENSORISH or not value.place.on_host:
        return None
    return holds != says_gpu


def _device_part(value: Value) -> Value:
    """A value that is on the host on some paths only, where a test says it is on a GPU: its
    device alternative."""
    if value.place.where is not Where.COND:
        return value
    for _, place in value.place.paths:
        if place.on_device:
            return value.at(place)
    return value


def _host_side(value: Value) -> Value:
    """Where a test says a tensor is on the CPU: on the host, unless the analysis had it on a
    device (the caller's, in library code): then the values it meets there are on the CPU too
    (a layer's CPU path: `if input.device.type == "cpu": return input + bias`), and the
    analysis cannot tell where they are, so the tensor is not placed."""
    if value.place.on_device:
        return value.at(UNKNOWN_PLACE)
    if value.place.where is Where.COND:
        return value.at(HOST) if any(place.on_host for _, place in value.place.paths) else value.at(UNKNOWN_PLACE)
    return value.at(HOST)


def _host_part(value: Value, not_type: str) -> Value:
    """A value on the host on some paths and on devices of type `not_type` on the others, where
    a test says it is not on that type of device: on the host."""
    if value.place.where is not Where.COND:
        return value
    alternatives = [place for _, place in value.place.paths]
    if alternatives and all(p.on_host or p.on_device and devices.parse(devices.split(p.ident)[0])[0] == not_type
                            for p in alternatives):
        return value.at(HOST)
    return value


def narrow(an: Analyzer, test: cst.BaseExpression, frame: Frame, holds: bool) -> None:
    """Refine the names `test` tests, in `frame`, for the branch where it evaluates to `holds`."""
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, holds = test.expression, not holds
    if type(test) is cst.BooleanOperation:
        # `a and b` holding says both hold; `a or b` failing says both fail
        if (type(test.operator) is cst.And) == holds:
            narrow(an, test.left, frame, holds)
            narrow(an, test.right, frame, holds)
        return
    found = _tensor_device_test(test)
    if found is not None and found[0] in frame.env and frame.env[found[0]].kind in TENSORISH:
        # `assert not x.is_cuda`: where `x.is_cuda` fails (or `x.is_cpu` holds), x is on the host;
        # where it holds, x is on its device
        name, says_gpu, failing = found
        current = frame.env[name]
        if says_gpu == holds:
            frame.env[name] = _device_part(current)
        elif failing is True:
            frame.env[name] = _host_side(current)
        elif failing:
            frame.env[name] = _host_part(current, failing)
        return
    if type(test) is cst.Comparison:
        _narrow_optional(test, frame, holds)
        _narrow_device_comparison(an, test, frame, holds)
        return
    if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name:
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


def _narrow_optional(test: cst.Comparison, frame: Frame, holds: bool) -> None:
    """`inputs is None` for a library input that defaults to None: None where the caller gave
    none, the caller's tensor where it did."""
    if len(test.comparisons) != 1 or type(test.left) is not cst.Name:
        return
    target = test.comparisons[0]
    if type(target.comparator) is not cst.Name or target.comparator.value != "None" \
            or type(target.operator) not in (cst.Is, cst.IsNot):
        return
    name = test.left.value
    value = frame.env.get(name)
    if value is None or not value.has(Fact.OPTIONAL):
        return
    if (type(target.operator) is cst.Is) == holds:
        frame.env[name] = NONE_VALUE
    else:
        frame.env[name] = value.evolve(facts=value.facts - {Fact.OPTIONAL})


_ARRAY_TYPES = frozenset({"numpy.ndarray"})


def type_test_decided(an: Analyzer, test: cst.BaseExpression, frame: Frame) -> bool | None:
    """The answer of a type test (`isinstance(x, np.ndarray)`, `type(x) == torch.Tensor`,
    `torch.is_tensor(x)`, negated or not) on a name whose value is known to be a tensor or an
    array: the other branch cannot run with this value (`to_torch(x)` given a device tensor
    never takes its `from_numpy` branch). None when the test is no such test or the kind is
    not known."""
    negated = False
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test, negated = test.expression, not negated
    subject, tested, equal = _type_test(an, test, frame)
    if subject is None:
        return None
    value = frame.env.get(subject)
    if value is None:
        return None
    kind = value.kind
    if kind is Kind.UNKNOWN and value.place.on_device:
        # moved to a device (`.to(self.device)` of a helper's result): an array never is, and
        # code that converts "what is not a tensor" with `torch.from_numpy` takes it for one
        kind = Kind.TENSOR
    if kind not in (Kind.TENSOR, Kind.NDARRAY):
        return None
    answer = (kind is Kind.TENSOR) == (tested == "tensor")
    return answer != negated if equal else answer == negated


def _type_test(an: Analyzer, test: cst.BaseExpression, frame: Frame) -> tuple[str | None, str, bool]:
    """(the name tested, "tensor" or "array", whether the test holds when it is one)."""
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Call \
            and type(test.left.func) is cst.Name and test.left.func.value == "type" and len(test.left.args) == 1 \
            and type(test.left.args[0].value) is cst.Name:
        operator = type(test.comparisons[0].operator)
        if operator not in (cst.Equal, cst.NotEqual, cst.Is, cst.IsNot):
            return None, "", True
        probe = an.eval(test.comparisons[0].comparator, frame)
        qualname = canonical(probe.qualname) if probe.kind is Kind.REF else ""
        tested = "tensor" if qualname in tk.TENSOR_TYPES else "array" if qualname in _ARRAY_TYPES else ""
        if not tested:
            return None, "", True
        return test.left.args[0].value.value, tested, operator in (cst.Equal, cst.Is)
    if type(test) is not cst.Call or not test.args or type(test.args[0].value) is not cst.Name:
        return None, "", True
    tested = _tested_types(an, test, frame)
    if tested not in ("tensor", "array"):
        return None, "", True
    return test.args[0].value.value, tested, True


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
    types = [el.value for el in probe.elements] if type(probe) is cst.Tuple else [probe]
    names = set()
    for node in types:
        value = an.eval(node, frame)
        names.add(canonical(value.qualname) if value.kind is Kind.REF else "")
    if names and names <= tk.TENSOR_TYPES:
        return "tensor"
    if names and names <= _SEQUENCE_TYPES:
        return "sequence"
    if names and names <= _ARRAY_TYPES:
        return "array"
    return ""


def _narrow_device_comparison(an: Analyzer, test: cst.Comparison, frame: Frame, holds: bool) -> None:
    if len(test.comparisons) != 1:
        return
    operator = test.comparisons[0].operator
    if type(operator) not in (cst.Equal, cst.NotEqual):
        return
    equal = (type(operator) is cst.Equal) == holds
    if not equal:
        return
    left, right = test.left, test.comparisons[0].comparator
    for subject, other in ((left, right), (right, left)):
        if type(subject) is cst.Attribute and subject.attr.value == "device" \
                and type(subject.value) is cst.Name and subject.value.value in frame.env:
            place = an.place_of_device_value(an.eval(other, frame), other)
            if place is not None and place.known:
                name = subject.value.value
                current = frame.env[name]
                if current.kind in TENSORISH or current.kind is Kind.UNKNOWN and current.kind not in NOT_TENSORS:
                    frame.env[name] = current.at(place)
            return
