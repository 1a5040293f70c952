"""Device identities (analysis/devices.py): which device expression a placement names, and
which pairs can disagree. These are what DEV111/DEV112 stand on, so they are pinned here."""

from __future__ import annotations

import pytest

from devlint.analysis import devices
from devlint.analysis.events import Move
from devlint.engine import analyse, parse


def _move_idents(source: str) -> dict[str, str]:
    """subject text -> identity of the device it is moved to, for every move in `source`."""
    program = analyse(parse(source, "t.py"), "t.py")
    return {move.subject_text: devices.effective(move.target, program.availability_conditions)
            for move in program.of(Move)}


PRELUDE = "import torch\nimport torch.nn as nn\n"


@pytest.mark.parametrize(
    ("line", "ident"),
    [
        ('a = a.to("cuda")', "cuda"),
        ('a = a.to("cuda:1")', "cuda:1"),
        ('a = a.to(torch.device("cuda", 2))', "cuda:2"),
        ("a = a.cuda()", "cuda"),
        ("a = a.cuda(3)", "cuda:3"),
        ("a = a.cuda(rank)", "cuda:{rank}"),
        ('a = a.to(torch.device("cuda"))', "cuda"),
        ("a = a.to(torch.cuda.current_device())", "cuda"),
        ("rank = int(r)\na = a.to(rank)", "cuda:{rank}"),
        ("a = a.to(rank)", "=rank"),  # an unknown name may hold a device string: opaque
        ('a = a.to(f"cuda:{rank}")', "cuda:{rank}"),
        ('a = a.to(f"cuda:{ rank }")', "cuda:{rank}"),
        ("a = a.to(args.device)", "=args.device"),
        ('a = a.to("cuda" if torch.cuda.is_available() else "cpu")', "cuda|cpu"),
        ('a = a.to(torch.device("cuda:0" if torch.cuda.is_available() else "cpu"))', "cuda:0|cpu"),
        ('a = a.to("cuda" if args.cuda else "cpu")', "cuda|cpu@args.cuda"),
    ],
)
def test_identity_of_a_device_expression(line: str, ident: str) -> None:
    assert _move_idents(PRELUDE + line + "\n")["a"] == ident


def test_device_variable_chosen_with_if_else_falls_back() -> None:
    source = PRELUDE + (
        "if torch.cuda.is_available():\n    device = torch.device('cuda')\n"
        "else:\n    device = torch.device('cpu')\n"
        "a = a.to(device)\n"
    )
    assert _move_idents(source)["a"] == "cuda|cpu"


def test_availability_flag_variable_counts_as_availability() -> None:
    source = PRELUDE + "use_cuda = torch.cuda.is_available()\na = a.to('cuda' if use_cuda else 'cpu')\n"
    assert _move_idents(source)["a"] == "cuda|cpu"


def test_helper_returning_gpu_or_cpu_resolves_its_index() -> None:
    source = PRELUDE + (
        "def try_gpu(i=0):\n"
        "    if torch.cuda.device_count() >= i + 1:\n        return torch.device(f'cuda:{i}')\n"
        "    return torch.device('cpu')\n"
        "a = a.to(try_gpu())\nb = b.to(try_gpu(1))\n"
    )
    idents = _move_idents(source)
    assert idents["a"] == "cuda:0|cpu"
    assert idents["b"] == "cuda:1|cpu"


def test_device_of_another_value_is_that_values_device() -> None:
    source = PRELUDE + (
        "model = nn.Linear(2, 2).to('cuda:1')\n"
        "a = a.to(next(model.parameters()).device)\n"
        "x = torch.randn(2).to('cuda:1')\nb = b.to(x.device)\n"
    )
    idents = _move_idents(source)
    assert idents["a"] == "cuda:1"
    assert idents["b"] == "cuda:1"


@pytest.mark.parametrize(
    ("a", "b", "current", "disagree"),
    [
        ("cuda", "cuda", "cuda:0", False),
        ("cuda", "cuda:0", "cuda:0", False),  # the current device is cuda:0 without set_device
        ("cuda", "cuda:1", "cuda:0", True),
        ("cuda", "cuda:1", "cuda:1", False),  # torch.cuda.set_device(1)
        ("cuda", "cuda:1", None, False),  # set_device(something unknown)
        ("cuda:0", "cuda:1", None, True),
        ("cuda", "cuda|cpu", "cuda:0", True),  # .cuda() against a device with a CPU fallback
        ("cuda|cpu", "cuda:0|cpu", "cuda:0", False),
        ("cuda:1|cpu", "cuda|cpu", "cuda:0", True),
        ("cuda:{rank}", "cuda", "cuda:0", True),  # no set_device: rank 1.. differ
        ("cuda:{rank}", "cuda", None, False),  # set_device(rank)
        ("cuda:{rank}", "cuda:{rank}", "cuda:0", False),
        ("cuda:{rank}", "cuda:1", "cuda:0", False),  # not known
        ("cuda:{rank}", "cuda:{local_rank}", "cuda:0", False),
        ("=args.device", "cuda", "cuda:0", False),  # opaque: never claimed to differ
        ("", "cuda:1", "cuda:0", False),
        ("mps|cpu", "cuda", "cuda:0", True),
        ("?|cpu", "cuda|cpu", "cuda:0", False),
        ("cuda|cpu@args.cuda", "cuda|cpu", "cuda:0", False),
    ],
)
def test_may_disagree(a: str, b: str, current: str | None, disagree: bool) -> None:
    assert devices.may_disagree(a, b, current) is disagree
    assert devices.may_disagree(b, a, current) is disagree
