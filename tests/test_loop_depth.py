"""Nested loops cost time linear in their depth (analysis/flow.py: only the outer loops of a
function run twice), and a bug deep inside them is still found; its fixed twin stays silent.

Before issue 31, each loop ran its body twice, so 19 nested loops took 2^19 passes (minutes)."""

from __future__ import annotations

import time

import pytest

from devlint.engine import check_text

HEADER = (
    "import torch\n"
    "from torch import nn\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "model = nn.Linear(3, 3).to(device)\n"
)


def _nested(depth: int, innermost: list[str], *, in_function: bool) -> tuple[str, int]:
    """Loops `depth` deep around `innermost`; the text and the line of its last statement."""
    lines = HEADER.splitlines()
    base = 0
    if in_function:
        lines.append("def run(loader):")
        base = 1
    for level in range(depth):
        lines.append("    " * (base + level) + f"for batch{level} in loader:")
        lines.append("    " * (base + level + 1) + f"total = batch{level} + 1")
    lines.extend("    " * (base + depth) + statement for statement in innermost)
    return "\n".join(lines) + "\n", len(lines)


BUG = ["x = torch.zeros(3)", "y = model(x)"]  # a host tensor into a model on the device
FIXED = ["x = torch.zeros(3, device=device)", "y = model(x)"]


@pytest.mark.parametrize("in_function", [False, True])
def test_nineteen_nested_loops_in_well_under_a_second(in_function: bool) -> None:
    text, line = _nested(19, BUG, in_function=in_function)
    compile(text, "deep.py", "exec")  # as deep as CPython allows (20 nested blocks)
    started = time.perf_counter()
    found = check_text(text, "deep.py")
    assert time.perf_counter() - started < 1.0
    # the factory call without device= (the line before the model call) is reported
    assert [(f.code, f.line) for f in found] == [("DEV105", line - 1)]
    fixed, _ = _nested(19, FIXED, in_function=in_function)
    assert check_text(fixed, "deep.py") == []


@pytest.mark.parametrize("depth", [2, 6])
def test_a_value_changed_in_a_deep_loop_is_not_trusted_after_it(depth: int) -> None:
    # `x` is moved on a later iteration only: after the loops it may be on either side, so
    # nothing is claimed about it (two passes found that; one widened pass must not claim more)
    text, _ = _nested(depth, ["x = y", "y = y.to(device)"], in_function=True)
    text = text.replace("def run(loader):\n", "def run(loader):\n    y = torch.zeros(3)\n    x = torch.zeros(3)\n")
    text += "    return model(x)\n"
    assert [f.code for f in check_text(text, "deep.py") if f.code in ("DEV101", "DEV105")] == []
    # the control: when the loops leave `x` alone, it is still the host tensor, and reported
    control = text.replace("x = y\n", "pass\n")
    assert "DEV105" in [f.code for f in check_text(control, "deep.py")]


def test_thirty_eight_loops_through_a_nested_function_in_under_a_second() -> None:
    """CPython allows 20 nested blocks per function; a function defined inside 19 loops starts
    counting again, so 38 loops nest in one valid file."""
    lines = ["import torch", "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
             "def outer(loader):", "    y = torch.zeros(3)"]
    indent = 1
    for level in range(19):
        lines += ["    " * indent + f"for a{level} in loader:", "    " * (indent + 1) + f"y = y + a{level}"]
        indent += 1
    lines += ["    " * indent + "def inner(z):", "    " * (indent + 1) + "w = torch.zeros(3)"]
    indent += 1
    for level in range(19):
        lines += ["    " * indent + f"for b{level} in loader:", "    " * (indent + 1) + f"w = w + b{level}"]
        indent += 1
    lines += ["    " * indent + "w = w.to(device)", "    " * 20 + "inner(y)", "outer([torch.zeros(3)])"]
    text = "\n".join(lines) + "\n"
    compile(text, "deep.py", "exec")
    started = time.perf_counter()
    check_text(text, "deep.py")
    assert time.perf_counter() - started < 1.0
