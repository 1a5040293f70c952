"""Every rule's own examples hold: its `bad` example gets the rule's finding, its `good` one not.

The examples are what `devlint explain` and the docs show, so a rule whose `bad` example is not
reported (or whose `good` example is) teaches the wrong thing. Each example is analysed as a
whole program, as written, with only the imports it may leave out and, when it uses `device`
without defining it, the usual device line put in front. The test covers whatever is in
`all_rules()` when it runs, so a rule added later is held to the same contract.
"""

from __future__ import annotations

import re

import pytest

from devlint.engine import check_text
from devlint.rules import all_rules
from devlint.rules.base import Rule

IMPORTS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader, TensorDataset
"""
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'

_FUTURE = re.compile(r"^from __future__ import .*$", re.M)
_USES_DEVICE = re.compile(r"\bdevice\b")
_DEFINES_DEVICE = re.compile(r"^\s*(def\s+\w+\(.*\bdevice\b|device\s*[:=]|for\s+device\b)", re.M)


def as_program(example: str) -> str:
    """The example with the prelude it may rely on: imports, and `device` if it is not defined."""
    prelude = IMPORTS
    if _USES_DEVICE.search(example) and not _DEFINES_DEVICE.search(example):
        prelude += DEVICE
    futures = _FUTURE.findall(example)
    body = _FUTURE.sub("", example) if futures else example
    head = "".join(f"{line}\n" for line in futures)  # `from __future__` must come first
    return f"{head}{prelude}\n{body}\n"


def _codes(rule: Rule, text: str, which: str) -> list[str]:
    findings = check_text(text, f"<{rule.code} {which} example>", enabled=frozenset({rule.code, "DEV000"}))
    return [f.code for f in findings]


RULES = [rule for rule in all_rules() if rule.checks]


def test_every_rule_with_checks_is_covered() -> None:
    codes = {rule.code for rule in RULES}
    assert {"DEV101", "DEV103", "DEV104", "DEV105", "DEV106", "DEV114"} <= codes


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_bad_example_is_reported(rule: Rule) -> None:
    assert rule.bad.strip(), f"{rule.code} has no bad example"
    codes = _codes(rule, as_program(rule.bad), "bad")
    assert "DEV000" not in codes, f"{rule.code}'s bad example does not parse"
    assert rule.code in codes, f"{rule.code}'s bad example is not reported:\n{rule.bad}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_good_example_is_clean(rule: Rule) -> None:
    assert rule.good.strip(), f"{rule.code} has no good example"
    codes = _codes(rule, as_program(rule.good), "good")
    assert "DEV000" not in codes, f"{rule.code}'s good example does not parse"
    assert rule.code not in codes, f"{rule.code}'s good example is reported:\n{rule.good}"


def test_prelude_adds_device_only_when_missing() -> None:
    assert DEVICE in as_program("model.to(device)")
    assert DEVICE not in as_program('device = "cuda"\nmodel.to(device)')
    assert DEVICE not in as_program("model = nn.Linear(2, 2).cuda()")
    text = as_program("from __future__ import annotations\nx = 1")
    assert text.startswith("from __future__ import annotations\n")
