"""Path conditions (analysis/conditions.py): the literals an `if` test states, and which
conjunctions of them can hold together. Two placements meet only on paths whose conditions are
compatible, so a wrong answer here is a finding on a path no run takes (or a missed one)."""

from __future__ import annotations

import pytest

from devlint.analysis import conditions
from devlint.analysis.conditions import ALWAYS, AVAILABLE

CUDA = AVAILABLE["cuda"]
MPS = AVAILABLE["mps"]


def cond(*literals: tuple[str, bool]) -> frozenset[tuple[str, bool]]:
    return frozenset(literals)


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("args.cuda", ("args.cuda", True)),
        ("not args.cuda", ("args.cuda", False)),
        ("not (args.cuda)", ("args.cuda", False)),
        ("not not args.cuda", ("args.cuda", True)),
        ("((args.cuda))", ("args.cuda", True)),
        ("args.gpu is not None", ("args.gpu is None", False)),
        ("args.gpu  is   None", ("args.gpu is None", True)),
        ("device != 'cpu'", ("device == 'cpu'", False)),
        ("'cpu' not in device", ("'cpu' in device", False)),
        ("not device != 'cpu'", ("device == 'cpu'", True)),
        # parentheses that do not enclose the whole test stay
        ("(a) and (b)", ("(a) and (b)", True)),
        # two negations in one test are not flipped (which one would it be?)
        ("a is not None and b is not None", ("a is not None and b is not None", True)),
    ],
)
def test_literal_normalises_a_test_and_its_negations(test: str, expected: tuple[str, bool]) -> None:
    assert conditions.literal(test) == expected


def test_availability_tests_are_one_literal_whatever_their_spelling() -> None:
    assert conditions.literal("use_cuda", available="cuda") == (CUDA, True)
    assert conditions.literal("torch.backends.mps.is_available()", available="mps") == (MPS, True)
    # an unknown device type keeps the test's own text
    assert conditions.literal("use_tpu", available="tpu") == ("use_tpu", True)


def test_negate_flips_only_the_truth() -> None:
    assert conditions.negate(("args.cuda", True)) == ("args.cuda", False)
    assert conditions.negate(conditions.negate(("x", False))) == ("x", False)


def test_a_literal_and_its_negation_cannot_hold_together() -> None:
    assert conditions.conjoin(cond(("args.cuda", True)), cond(("args.cuda", False))) is None
    assert not conditions.compatible(cond(("args.cuda", True)), cond(("args.cuda", False)))


def test_conjoin_of_independent_tests_keeps_both() -> None:
    joined = conditions.conjoin(cond(("args.cuda", True)), cond(("args.amp", False)))
    assert joined == cond(("args.cuda", True), ("args.amp", False))


def test_the_empty_condition_is_the_unit_of_conjoin() -> None:
    some = cond(("args.cuda", True))
    assert conditions.conjoin(ALWAYS, some) is some
    assert conditions.conjoin(some, ALWAYS) is some
    assert conditions.conjoin(ALWAYS, ALWAYS) == ALWAYS


def test_a_machine_has_one_kind_of_gpu() -> None:
    assert not conditions.compatible(cond((CUDA, True)), cond((MPS, True)))
    # CUDA there and MPS not: a machine with CUDA
    assert conditions.compatible(cond((CUDA, True)), cond((MPS, False)))
    # neither: the CPU-only machine
    assert conditions.compatible(cond((CUDA, False)), cond((MPS, False)))


@pytest.mark.parametrize(
    ("a", "b", "together"),
    [
        (("n_gpu > 1", True), ("n_gpu > 0", False), False),  # n >= 2 and n <= 0
        (("n_gpu > 1", True), ("n_gpu > 0", True), True),
        (("n_gpu > 1", False), ("n_gpu > 0", True), True),  # n == 1
        (("n_gpu >= 2", True), ("n_gpu < 2", True), False),
        (("n_gpu == 1", True), ("n_gpu > 1", True), False),
        (("n_gpu == 1", True), ("n_gpu <= 1", True), True),
        (("n_gpu == 1", False), ("n_gpu == 1", False), True),
        # `==` failing is no interval: nothing is concluded from it
        (("n_gpu == 1", False), ("n_gpu > 0", True), True),
        (("world_size > -1", True), ("world_size < 0", True), False),
        # different subjects do not constrain each other
        (("a > 1", True), ("b < 0", True), True),
    ],
)
def test_integer_comparisons_are_intervals(a: tuple[str, bool], b: tuple[str, bool], together: bool) -> None:
    assert conditions.compatible(cond(a), cond(b)) is together
    assert (conditions.conjoin(cond(a), cond(b)) is not None) is together


def test_a_conjunction_too_long_to_keep_is_dropped() -> None:
    six = cond(*((f"flag{i}", True) for i in range(6)))
    assert conditions.conjoin(six, cond(("other", True))) is None
    # extend and with_literal keep the path as it was instead: it is merely "some path"
    assert conditions.extend(six, cond(("other", True))) == six
    assert conditions.with_literal(six, ("other", True)) == six
    # but a contradiction is still no path
    assert conditions.with_literal(six, ("flag0", False)) is None


def test_extend_and_with_literal() -> None:
    path = cond(("args.cuda", True))
    assert conditions.extend(path, cond(("args.amp", True))) == cond(("args.cuda", True), ("args.amp", True))
    assert conditions.extend(path, cond(("args.cuda", False))) is None
    assert conditions.with_literal(path, ("args.cuda", True)) == path
    assert conditions.with_literal(ALWAYS, ("x", False)) == cond(("x", False))


def test_split_gives_the_two_paths_of_a_branch() -> None:
    assert conditions.split(("args.cuda", True)) == (cond(("args.cuda", True)), cond(("args.cuda", False)))
    both_failed = (cond(("a", False), ("b", False)), ALWAYS)
    assert conditions.split(both_failed) is both_failed


def test_an_earlier_iteration_is_another_literal() -> None:
    earlier = conditions.in_earlier_iteration(("x is None", True))
    assert earlier != ("x is None", True)
    assert earlier[1] is True
    assert conditions.in_earlier_iteration(earlier) == earlier  # not marked twice
    # so the test now and the test then may disagree
    assert conditions.compatible(cond(earlier), cond(("x is None", False)))
    assert conditions.describe(cond(earlier)) == "`x is None` in an earlier iteration"


def test_machine_predicates() -> None:
    assert conditions.asks_available(cond((CUDA, True)))
    assert not conditions.asks_available(cond((CUDA, False)))
    assert conditions.on_cpu_machine(cond((CUDA, False), ("args.amp", True)))
    assert not conditions.on_cpu_machine(cond(("args.cuda", False)))
    # a failed test that asks for a GPU among other things may be the CPU-only machine
    assert conditions.may_be_cpu_machine(cond(("device != 'cpu' and torch.cuda.device_count() > 0", False)))
    assert not conditions.may_be_cpu_machine(cond(("args.cuda", False)))
    assert conditions.is_premise(cond((CUDA, True)))
    assert conditions.is_premise(ALWAYS)
    assert not conditions.is_premise(cond((CUDA, True), ("args.cuda", True)))


@pytest.mark.parametrize(
    ("literal", "cpu"),
    [
        (("args.device == 'cpu'", True), True),
        (("args.device == 'cpu'", False), False),
        (("device in ['cpu']", True), True),
        (("device not in ('cpu')", False), True),  # as written: `not in` failing
        (("args.gpu == 'cpu'", True), True),
        (("mode == 'cpu'", True), False),  # not a device option
    ],
)
def test_says_cpu_reads_a_comparison_of_a_device_option(literal: tuple[str, bool], cpu: bool) -> None:
    assert conditions.says_cpu(cond(literal)) is cpu


def test_describe_and_text() -> None:
    path = cond(("args.gpu is None", True), ("use_amp", False), (CUDA, True))
    # availability is the premise of every finding: left out of messages
    assert conditions.describe(path) == "`args.gpu is None` and not `use_amp`"
    assert conditions.describe(cond(("args.gpu is None", False))) == "`args.gpu is not None`"
    assert conditions.text(cond(("b", True), ("a", False))) == "not (a) and b"
