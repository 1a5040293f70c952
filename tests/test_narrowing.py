"""Narrowing (analysis/narrowing.py), tested directly on a frame: what an `if` test says about
the names it tests where it holds and where it fails, and the path literals it states. A wrong
narrowing is a tensor where the program has a list (a finding on code that never meets a
device) or a device where the program checked for the CPU."""

from __future__ import annotations

import libcst as cst
import pytest

from devlint.analysis import conditions, narrowing
from devlint.analysis.driver import Analysis
from devlint.analysis.events import Context
from devlint.analysis.names import collect_imports
from devlint.analysis.narrowing import body_literals, else_literals, narrow
from devlint.analysis.shared import Frame
from devlint.analysis.values import HOST, UNKNOWN, UNKNOWN_PLACE, Kind, Placement, Value, device_at
from devlint.analysis.vocabulary import Fact

CUDA = device_at("device", ident="cuda")


def _frame(env: dict[str, Value], source: str = "import torch\n") -> tuple[Analysis, Frame]:
    module = cst.parse_module(source)
    analysis = Analysis(module, collect_imports(module, ""))
    return analysis, Frame(dict(env), Context(function="f"), 1, False, analysis.main_scope)


def _narrowed(test: str, holds: bool, **env: Value) -> dict[str, Value]:
    analysis, frame = _frame(env)
    narrow(analysis, cst.parse_expression(test), frame, holds)
    return frame.env


def _literal(analysis: Analysis, frame: Frame, test: str, available: str | None = None) -> tuple[str, bool]:
    return narrowing.test_literal(analysis, cst.parse_expression(test), frame, available)


def tensor(place: Placement = CUDA) -> Value:
    return Value(Kind.TENSOR, place)


LIST = Value(Kind.LIST, HOST)
SOMETHING = Value(Kind.UNKNOWN, CUDA)  # a value of unknown kind known to be on the device


@pytest.mark.parametrize("test", ["isinstance(x, torch.Tensor)", "torch.is_tensor(x)", 'hasattr(x, "cpu")',
                                  "isinstance(x, (torch.Tensor, torch.nn.Parameter))"])
def test_a_tensor_test_makes_a_tensor_where_it_holds(test: str) -> None:
    assert _narrowed(test, True, x=SOMETHING)["x"] == Value(Kind.TENSOR, CUDA)  # its place is kept
    assert _narrowed(test, True, x=LIST)["x"] == Value(Kind.TENSOR, UNKNOWN_PLACE)  # not the list's
    assert _narrowed(test, True, x=tensor())["x"] == tensor()


@pytest.mark.parametrize("test", ["isinstance(x, torch.Tensor)", 'hasattr(x, "to")'])
def test_a_tensor_test_rules_out_a_tensor_where_it_fails(test: str) -> None:
    assert _narrowed(test, False, x=tensor())["x"] is UNKNOWN
    assert _narrowed(test, False, x=LIST)["x"] is LIST


def test_other_tests_narrow_nothing() -> None:
    for test in ('hasattr(x, "shape")', "isinstance(x, dict)", "callable(x)", "isinstance(x.y, torch.Tensor)"):
        for holds in (True, False):
            assert _narrowed(test, holds, x=LIST)["x"] is LIST, (test, holds)
            assert _narrowed(test, holds, x=tensor())["x"] == tensor(), (test, holds)


def test_a_sequence_test_rules_out_a_container_where_it_fails() -> None:
    assert _narrowed("isinstance(x, (list, tuple))", False, x=LIST)["x"] is UNKNOWN
    assert _narrowed("isinstance(x, (list, tuple))", True, x=LIST)["x"] is LIST
    assert _narrowed("isinstance(x, list)", False, x=tensor())["x"] == tensor()


def test_not_flips_the_branch() -> None:
    assert _narrowed("not isinstance(x, torch.Tensor)", False, x=LIST)["x"] == Value(Kind.TENSOR, UNKNOWN_PLACE)
    assert _narrowed("not not isinstance(x, torch.Tensor)", False, x=tensor())["x"] is UNKNOWN


def test_and_holding_and_or_failing_narrow_both_operands() -> None:
    both = _narrowed("isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)", True, x=LIST, y=LIST)
    assert both["x"].kind is Kind.TENSOR and both["y"].kind is Kind.TENSOR
    either = _narrowed("isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor)", False,
                       x=tensor(), y=tensor())
    assert either["x"] is UNKNOWN and either["y"] is UNKNOWN
    # `a and b` failing, `a or b` holding: which one? nothing is narrowed
    neither = _narrowed("isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)", False,
                        x=tensor(), y=tensor())
    assert neither["x"] == tensor() and neither["y"] == tensor()
    assert _narrowed("isinstance(x, torch.Tensor) or y", True, x=LIST)["x"] is LIST


def test_is_cuda_failing_never_proves_a_device_tensor_on_the_host() -> None:
    # a tensor known to be on the GPU, tested as not on it: that path is not one the analysis
    # can place (a guess may silence, never report), so the tensor is unplaced there, not host
    assert _narrowed("x.is_cuda", False, x=tensor())["x"] == tensor(UNKNOWN_PLACE)
    assert _narrowed("x.is_cpu", True, x=tensor())["x"] == tensor(UNKNOWN_PLACE)
    assert _narrowed("x.is_cuda", True, x=tensor(HOST))["x"] == tensor(HOST)  # no more than it says
    assert _narrowed("x.is_cuda", False, x=LIST)["x"] is LIST  # only a tensor has it


def test_equal_devices_put_the_tensor_on_the_other_side_s_device() -> None:
    device = Value(Kind.DEVICE, CUDA)
    # `if x.device != device: x = x.to(device)`: on the path where the test fails they are equal
    assert _narrowed("x.device != device", False, x=tensor(HOST), device=device)["x"].place.on_device
    assert _narrowed("x.device != device", True, x=tensor(HOST), device=device)["x"] == tensor(HOST)
    assert _narrowed("device == x.device", True, x=tensor(HOST), device=device)["x"].place.on_device


def test_a_test_states_a_literal_and_is_remembered_for_evidence() -> None:
    analysis, frame = _frame({})
    node = cst.parse_expression("args.gpu is not None")
    assert narrowing.test_literal(analysis, node, frame, None) == ("args.gpu is None", False)
    assert analysis.branches[("args.gpu is None", "f")] is node
    # the first test of a function that states a literal is the one kept
    _literal(analysis, frame, "args.gpu is None")
    assert analysis.branches[("args.gpu is None", "f")] is node


def test_an_availability_test_is_the_availability_literal() -> None:
    analysis, frame = _frame({})
    assert _literal(analysis, frame, "use_cuda", "cuda") == (conditions.AVAILABLE["cuda"], True)


def test_the_literals_of_the_two_paths_of_a_conjunction() -> None:
    analysis, frame = _frame({})
    test = cst.parse_expression("args.cuda and torch.cuda.is_available()")
    whole = ("args.cuda and torch.cuda.is_available()", True)
    assert body_literals(analysis, test, frame, None) == [whole, ("args.cuda", True),
                                                         (conditions.AVAILABLE["cuda"], True)]
    # where it fails, only "not (a and b)" is known
    assert else_literals(analysis, test, frame, None) == [conditions.negate(whole)]


def test_the_literals_of_the_two_paths_of_a_disjunction() -> None:
    analysis, frame = _frame({})
    test = cst.parse_expression("args.cuda or args.amp")
    whole = ("args.cuda or args.amp", True)
    assert body_literals(analysis, test, frame, None) == [whole]
    assert else_literals(analysis, test, frame, None) == [conditions.negate(whole), ("args.cuda", False),
                                                         ("args.amp", False)]


def test_a_parenthesised_operand_is_one_literal() -> None:
    analysis, frame = _frame({})
    test = cst.parse_expression("(a or b) and c")
    assert [lit[0] for lit in body_literals(analysis, test, frame, None)] == ["(a or b) and c", "a or b", "c"]


def test_comparing_a_fallback_device_with_the_cpu_is_the_availability_test() -> None:
    # `device = "cuda" if torch.cuda.is_available() else "cpu"`, then `if device == "cpu":`
    device = Value(Kind.DEVICE, device_at("device", ident="cuda|cpu"), facts=frozenset({Fact.CPU_FALLBACK}))
    analysis, frame = _frame({"device": device})
    available = conditions.AVAILABLE["cuda"]
    assert _literal(analysis, frame, 'device == "cpu"') == (available, False)
    assert _literal(analysis, frame, 'device.type != "cpu"') == (available, True)
    assert _literal(analysis, frame, 'str(device) == "cuda"') == (available, True)
    # chosen by the user's flag: the flag is the test
    chosen = device.at(device_at("device", ident="cuda|cpu@args.cuda"))
    analysis, frame = _frame({"device": chosen})
    assert _literal(analysis, frame, 'device == "cpu"') == ("args.cuda", False)


def test_comparing_an_opaque_device_with_the_cpu_is_about_that_device() -> None:
    device = Value(Kind.DEVICE, device_at("args.device", ident="=args.device"))
    analysis, frame = _frame({"device": device})
    assert _literal(analysis, frame, 'device == "cpu"') \
        == (conditions.is_the_cpu("=args.device"), True)
    # a device on the host is no choice: the test is its own text
    analysis, frame = _frame({"device": Value(Kind.DEVICE, HOST)})
    assert _literal(analysis, frame, 'device == "cpu"') == ('device == "cpu"', True)
