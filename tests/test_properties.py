"""Property tests: no program makes devlint raise.

Two sources of programs: syntactically valid programs generated from Python's grammar by
hypothesmith (odd but legal shapes nobody writes by hand), and the fixture programs mutated
(lines deleted or duplicated, statements swapped, names renamed, indentation broken, device
calls exchanged), which keep most of the real structure the analysis cares about while
breaking its assumptions. `check_text` must return findings (a DEV000 for what does not parse)
and never raise; the fixer must never turn a parsing program into one that does not parse.

The example counts are small so the suite stays fast; `python bench/properties.py --examples N`
runs the same properties longer (it sets DEVLINT_PROPERTY_EXAMPLES).
"""

from __future__ import annotations

import ast
import keyword
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Callable

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devlint.engine import check_text
from devlint.fix.run import fix_unit
from devlint.rules import all_rules
from devlint.runner import CheckSettings, check_unit
from devlint.source import SourceUnit

# generated programs are full of `1()` and `"\d"`: CPython's compile warnings about them are noise here
pytestmark = [pytest.mark.filterwarnings("ignore::SyntaxWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning")]

EXAMPLES = int(os.environ.get("DEVLINT_PROPERTY_EXAMPLES", "0") or 0)
ALL = frozenset(rule.code for rule in all_rules())
FIXTURES = sorted((Path(__file__).parent / "fixtures").rglob("*.py"))
GOLDEN = sorted((Path(__file__).parent / "fix_golden").glob("*.before.py"))
# put a device in play, so that generated programs reach the analysis instead of the prefilter
HEADER = "import torch\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"


def _settings(examples: int) -> settings:
    return settings(
        max_examples=EXAMPLES or examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


# --- mutations ----------------------------------------------------------------------------------

Draw = Callable[[st.SearchStrategy], object]
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_SWAPS = [(".to(", ".cuda("), (".cuda(", ".cpu("), ("cuda", "cpu"), ("device", "None"), (".to(device)", ""),
          ("model", "model.module"), ("self.", ""), ("for ", "async for "), ("def ", "async def "),
          ("return ", "yield "), ("torch.no_grad()", "torch.enable_grad()"), ("(", "(*"), ("=", "+="),
          (".eval()", ".train()"), ("import torch", "import numpy as torch"), (":", ":\n    pass\n")]
_EXTRA_NAMES = ["device", "torch", "model", "self", "batch", "x", "cuda", "optimizer", "loader", "__init__"]


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def delete_lines(text: str, draw: Draw) -> str:
    lines = _lines(text)
    start = draw(st.integers(0, len(lines) - 1))
    count = draw(st.integers(1, 4))
    return "".join(lines[:start] + lines[start + count:])


def duplicate_line(text: str, draw: Draw) -> str:
    lines = _lines(text)
    index = draw(st.integers(0, len(lines) - 1))
    return "".join(lines[:index + 1] + lines[index:])


def swap_lines(text: str, draw: Draw) -> str:
    lines = _lines(text)
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines)


def swap_statements(text: str, draw: Draw) -> str:
    """Exchange two statements of one block, keeping the program valid (when it was)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return swap_lines(text, draw)
    blocks = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list) and len(body) >= 2 and all(isinstance(s, ast.stmt) for s in body):
                blocks.append(body)
    if not blocks:
        return swap_lines(text, draw)
    body = draw(st.sampled_from(blocks))
    i = draw(st.integers(0, len(body) - 2))
    j = draw(st.integers(i + 1, len(body) - 1))
    first, second = body[i], body[j]
    lines = _lines(text)
    # whole lines of each statement (decorators included), as long as they do not share a line
    a = (min([first.lineno] + [d.lineno for d in getattr(first, "decorator_list", [])]) - 1, first.end_lineno)
    b = (min([second.lineno] + [d.lineno for d in getattr(second, "decorator_list", [])]) - 1, second.end_lineno)
    if a[1] is None or b[1] is None or a[1] > b[0]:
        return swap_lines(text, draw)
    return "".join(lines[:a[0]] + lines[b[0]:b[1]] + lines[a[1]:b[0]] + lines[a[0]:a[1]] + lines[b[1]:])


def rename(text: str, draw: Draw) -> str:
    names = sorted({n for n in _IDENTIFIER.findall(text) if not keyword.iskeyword(n)})
    if not names:
        return text
    old = draw(st.sampled_from(names))
    new = draw(st.sampled_from(names + _EXTRA_NAMES))
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def reindent(text: str, draw: Draw) -> str:
    lines = _lines(text)
    index = draw(st.integers(0, len(lines) - 1))
    line = lines[index]
    lines[index] = line[4:] if line.startswith("    ") and draw(st.booleans()) else "    " + line
    return "".join(lines)


def exchange(text: str, draw: Draw) -> str:
    present = [pair for pair in _SWAPS if pair[0] in text]
    if not present:
        return text
    old, new = draw(st.sampled_from(present))
    occurrences = [m.start() for m in re.finditer(re.escape(old), text)]
    at = draw(st.sampled_from(occurrences))
    return text[:at] + new + text[at + len(old):]


def truncate(text: str, draw: Draw) -> str:
    return text[:draw(st.integers(0, len(text)))]


MUTATIONS = [delete_lines, duplicate_line, swap_lines, swap_statements, swap_statements, rename, rename,
             reindent, exchange, exchange, truncate]


@st.composite
def mutated_fixture(draw, sources: list[Path] = FIXTURES) -> tuple[Path, str]:
    path = draw(st.sampled_from(sources))
    text = path.read_text(encoding="utf-8")
    for _ in range(draw(st.integers(1, 3))):
        mutation = draw(st.sampled_from(MUTATIONS))
        text = mutation(text, draw)
    return path, text


# --- properties ---------------------------------------------------------------------------------


def _never_raises(text: str, path: str) -> None:
    findings = check_text(text, path, enabled=ALL)
    for finding in findings:
        assert finding.code in ALL and finding.line >= 1 and finding.message


def test_there_are_fixtures_to_mutate() -> None:
    assert len(FIXTURES) > 50 and GOLDEN


@_settings(40)
@given(hypothesmith.from_grammar())
def test_generated_programs_never_raise(source: str) -> None:
    _never_raises(source, "<generated>")
    _never_raises(HEADER + source, "<generated>")


@_settings(3)
@given(hypothesmith.from_node())
def test_generated_syntax_trees_never_raise(source: str) -> None:
    _never_raises(HEADER + source, "<generated>")


@_settings(60)
@given(mutated_fixture(), st.booleans())
def test_mutated_fixtures_never_raise(mutant: tuple[Path, str], in_place: bool) -> None:
    path, text = mutant
    # in place: the fixture's own path, so the project index reads its unmutated neighbours
    _never_raises(text, str(path) if in_place else "<mutant>")


@_settings(15)
@given(mutated_fixture(GOLDEN + FIXTURES))
def test_fixing_a_mutant_never_raises_or_breaks_it(mutant: tuple[Path, str]) -> None:
    path, text = mutant
    unit = SourceUnit(display="<mutant>", path="<mutant>", text=text)
    settings_ = CheckSettings(enabled=ALL)
    findings = check_unit(unit, settings_)
    fixed = fix_unit(replace(unit), findings, settings_, unsafe=True)
    if fixed.changed:
        cst.parse_module(fixed.fixed)  # a fix never leaves a file that does not parse


# programs that once made the analysis raise (found by the robustness and property runs)
REGRESSIONS = {
    "cuda with starred arguments": (
        "import torch\n\nclass Net(torch.nn.Module):\n    def cuda(self, *args, **kwargs):\n"
        "        return super().cuda(*args, **kwargs)\n\ntarget = torch.randint(0, 5, (4,)).cuda(*args)\n"),
    "tensor from starred arguments": (
        "import torch\n\ndevice = torch.device('cuda')\nt = torch.tensor(*a)\nu = t.cuda()\n"
        "print(torch.tensor(*args, **kwargs).device, u + torch.ones(2))\n"),
}


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_programs_that_once_crashed_the_analysis(name: str) -> None:
    findings = check_text(REGRESSIONS[name], "regression.py")
    assert all(f.code != "DEV000" for f in findings)


def test_value_evolve_is_dataclasses_replace() -> None:
    """Value.evolve skips dataclasses.replace's introspection; it must build the same value."""
    import dataclasses

    from devlint.analysis.values import HOST, Kind, Value

    value = Value(Kind.TENSOR, facts=frozenset({"zero_dim"}), qualname="t")
    hash(value)
    for changes in ({"place": HOST}, {"facts": frozenset()}, {"fields": (("a", value),), "identity": 3}):
        evolved = value.evolve(**changes)
        assert evolved == dataclasses.replace(value, **changes)
        assert hash(evolved) == hash(dataclasses.replace(value, **changes))
        assert value.evolve(**changes) != value
    assert [f.name for f in dataclasses.fields(Value)] == ["kind", "place", "origin", "fields", "elem",
                                                           "identity", "qualname", "facts", "node"]  # evolve/__hash__ know these
