"""devlint.parsing: libcst's parse without node validation must give the very tree libcst's own
parse gives, reject what libcst rejects, and leave validation on for everything else."""

import gc
from pathlib import Path

import libcst as cst
import pytest

from devlint.parsing import parse_module

ROOT = Path(__file__).parent.parent
CORPUS = sorted((ROOT / "tests" / "fixtures").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py")) \
    + [ROOT / "bench" / "large_train.py", ROOT / "bench" / "example_train.py"]


def test_the_tree_is_libcsts_own_node_for_node() -> None:
    compared = 0
    for path in CORPUS:
        text = path.read_text(encoding="utf-8")
        try:
            expected = cst.parse_module(text)
        except cst.ParserSyntaxError:
            with pytest.raises(cst.ParserSyntaxError):
                parse_module(text)
            continue
        tree = parse_module(text)
        assert tree.deep_equals(expected), path
        assert tree.code == text
        compared += 1
    assert compared > 300


@pytest.mark.parametrize("text", [
    "def f(a=1, b): pass\n",
    "f(a=1, 2)\n",
    "f(**a, *b)\n",
    "x := 1\n",
    "z = 0or 1\n",
    "def f(*, **k): pass\n",
    "print 'hello'\n",
    "x = (1,\n",
    "if x:\npass\n",
])
def test_what_libcst_rejects_is_rejected_alike(text: str) -> None:
    with pytest.raises(Exception) as expected:
        cst.parse_module(text)
    with pytest.raises(type(expected.value)):
        parse_module(text)


def test_nodes_built_by_hand_are_validated_again_after_a_parse() -> None:
    parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")
    assert cst.Name("ok").value == "ok"


def test_validation_is_restored_when_the_parse_fails() -> None:
    with pytest.raises(cst.ParserSyntaxError):
        parse_module("x = (1,\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")


def test_a_tree_is_frozen_only_when_asked_and_the_collector_is_off() -> None:
    was_enabled = gc.isenabled()
    try:
        gc.enable()
        before = gc.get_freeze_count()
        parse_module("x = 1\n", freeze=True)
        assert gc.get_freeze_count() == before  # the collector is on: nothing to keep out of it
        gc.disable()
        tree = parse_module("x = 1\ny = 2\n")
        assert gc.get_freeze_count() == before
        tree = parse_module("x = 1\ny = 2\n", freeze=True)
        assert gc.get_freeze_count() > before
        assert tree.code == "x = 1\ny = 2\n"
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
