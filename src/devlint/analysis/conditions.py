"""Path conditions: on which branches of the program a placement holds.

A condition is a conjunction of literals, each an `if` test (normalised text) and whether it
holds. Two placements meet only on paths whose conditions can hold together: after
`if args.cuda: model.cuda()`, a later `if args.cuda: x = x.cuda()` puts `x` where the model is
on both paths, because `args.cuda` and `not args.cuda` cannot hold together.

Tests that ask whether a GPU is there are one literal per device type, whatever their
spelling (`torch.cuda.is_available()`, a `use_cuda` computed from it): a machine has CUDA or
MPS, not both, and the paths where none is available are the CPU-only machine's.
"""

from __future__ import annotations

import re
from functools import lru_cache

from devlint.knowledge import conventions

Literal = tuple[str, bool]  # (the normalised test, whether it holds)
Condition = frozenset  # of Literal: a conjunction; the empty one holds on every path
ALWAYS: Condition = frozenset()

# the canonical text of "a GPU of this type is available" (devices.with_fallback reads these
# as availability tests too)
AVAILABLE = {"cuda": "torch.cuda.is_available()", "mps": "torch.backends.mps.is_available()",
             "xpu": "torch.xpu.is_available()"}
_AVAILABLE_TYPES = {text: kind for kind, text in AVAILABLE.items()}
_SPACES = re.compile(r"\s+")
_ASKS_FOR_GPU = re.compile(r"is_available\(|device_count\(")
_NEGATIONS = ((" is not ", " is "), (" != ", " == "), (" not in ", " in "))
_MAX_LITERALS = 6  # a condition longer than this is not kept (the path is merely "some path")


def normalize(text: str) -> str:
    return _SPACES.sub(" ", text.strip())


def literal(test: str, available: str | None = None) -> Literal:
    """The literal an `if` test states. `available` is the device type when the test's value is
    known to ask whether a GPU of that type is there."""
    if available is not None and available in AVAILABLE:
        return AVAILABLE[available], True
    text = normalize(test)
    truth = True
    while not _compound(text):  # `not a or b` is no negation of `a or b`
        if text.startswith("not ") or text.startswith("not("):
            text, truth = _strip_parens(text[3:].strip()), not truth
            continue
        stripped = _strip_parens(text)
        if stripped != text:
            text = stripped
            continue
        break
    for negative, positive in _NEGATIONS:
        if negative in text and text.count(negative) == 1 and not _compound(text):
            text, truth = text.replace(negative, positive), not truth
            break
    return text, truth


_BOOLEAN = re.compile(r"\s(and|or)\s")


def _compound(text: str) -> bool:
    """`a and b`, `a or b` at the top level (outside brackets and strings)."""
    if not _BOOLEAN.search(text):
        return False
    depth, quote = 0, ""
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif depth == 0 and char == " " and _BOOLEAN.match(text, index):
            return True
    return False


def _strip_parens(text: str) -> str:
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for index, char in enumerate(text):
            depth += char == "("
            depth -= char == ")"
            if depth == 0 and index < len(text) - 1:
                return text  # `(a) and (b)`: the parentheses do not enclose the whole test
        return text[1:-1].strip()
    return text


def is_the_cpu(ident: str) -> str:
    """The literal text of "the device `ident` names is the CPU" (`device.type == "cpu"`,
    `str(device) != "cpu"`, `args.device == "cpu"` all state it about one device identity)."""
    return f"<{ident}> is the CPU"


_EARLIER = " @earlier"


def in_earlier_iteration(lit: Literal) -> Literal:
    """The literal as it held in an earlier iteration of a loop (a `continue` taken then): a
    different literal from the same test evaluated now."""
    return (lit[0] if lit[0].endswith(_EARLIER) else lit[0] + _EARLIER), lit[1]


def negate(lit: Literal) -> Literal:
    return lit[0], not lit[1]


def conjoin(a: Condition, b: Condition) -> Condition | None:
    """Both conditions at once, or None when they cannot hold together (or the conjunction is
    too long to keep)."""
    if not a:
        return b
    if not b:
        return a
    joined = a | b
    if len(joined) > _MAX_LITERALS or not compatible(a, b):
        return None
    return frozenset(joined)


def compatible(a: Condition, b: Condition) -> bool:
    """The two conditions can hold together: no test both holds and fails, no machine with
    two kinds of GPU, and no integer compared both ways (`n_gpu > 1` with `not n_gpu > 0`)."""
    joined = a | b
    available = set()
    bounds: dict[str, tuple[float, float]] = {}
    states: dict[str, tuple] = {}
    for text, truth in joined:
        if truth and (text, False) in joined:
            return False
        state = _state(text, truth)
        if state is not None:
            merged = _meet_states(states.get(state[0]), state[1:])
            if merged is None:
                return False
            states[state[0]] = merged
        if truth and text in _AVAILABLE_TYPES:
            available.add(_AVAILABLE_TYPES[text])
        interval = _interval(text, truth)
        if interval is not None:
            subject, low, high = interval
            old_low, old_high = bounds.get(subject, (float("-inf"), float("inf")))
            low, high = max(low, old_low), min(high, old_high)
            if low > high:
                return False
            bounds[subject] = (low, high)
    return len(available) <= 1


_NAME = r"[A-Za-z_][\w.]*"
_EQUALITY = re.compile(rf"^({_NAME}) (==|is) (None|True|False|-?\d+|'[^'\\]*'|\"[^\"\\]*\")$")
_BARE = re.compile(rf"^({_NAME})$")
_NOTHING = object()


@lru_cache(maxsize=4096)
def _state(text: str, truth: bool) -> tuple | None:
    """What a literal says about one variable, as (subject, truthiness, equal to, not equal
    to): `x` holding says it is truthy, `x is None` that it is None, `allGPU == -1` failing that
    it is not -1. A flag compared with `== False` is read as a flag (`not x`). None for other
    tests."""
    m = _BARE.match(text)
    if m is not None:
        return text, truth, _NOTHING, frozenset()
    m = _EQUALITY.match(text)
    if m is None:
        return None
    subject, constant = m.group(1), _constant_of(m.group(3))
    if constant is True or constant is False:
        return subject, truth == constant, _NOTHING, frozenset()
    if truth:
        return subject, bool(constant), constant, frozenset()
    return subject, None, _NOTHING, frozenset({constant})


def _constant_of(text: str) -> object:
    if text in ("None", "True", "False"):
        return {"None": None, "True": True, "False": False}[text]
    if text[0] in "'\"":
        return text[1:-1]
    return int(text)


def _meet_states(old: tuple | None, new: tuple) -> tuple | None:
    """Both statements about one variable at once (truthiness, equal to, not equal to), or
    None when they cannot hold together."""
    if old is None:
        return new
    truthy = old[0] if new[0] is None else new[0]
    if old[0] is not None and new[0] is not None and old[0] != new[0]:
        return None
    equal = old[1] if new[1] is _NOTHING else new[1]
    if old[1] is not _NOTHING and new[1] is not _NOTHING and old[1] != new[1]:
        return None
    excluded = old[2] | new[2]
    if equal is not _NOTHING and (equal in excluded or truthy is not None and bool(equal) != truthy):
        return None
    return truthy, equal, excluded


_COMPARISON = re.compile(r"^([\w.\[\]()]+) (>=|<=|==|>|<) (-?\d+)$")
_FLIPPED = {">": "<=", ">=": "<", "<": ">=", "<=": ">"}


@lru_cache(maxsize=4096)
def _interval(text: str, truth: bool) -> tuple[str, float, float] | None:
    """`n > 1` holding: n in [2, inf); failing: n in (-inf, 1]. None for other tests (and for
    `==` failing, which is no interval)."""
    m = _COMPARISON.match(text)
    if m is None:
        return None
    subject, operator, number = m.group(1), m.group(2), int(m.group(3))
    if not truth:
        if operator == "==":
            return None
        operator = _FLIPPED[operator]
    low, high = {">": (number + 1, float("inf")), ">=": (number, float("inf")), "<": (float("-inf"), number - 1),
                 "<=": (float("-inf"), number), "==": (number, number)}[operator]
    return subject, low, high


# what holds on each of two joined paths: (the `if` body's, the else path's)
Split = tuple[Condition, Condition]


def split(cond: "Literal | Split") -> Split:
    """A branch literal as the two paths it separates; a Split as it is."""
    if isinstance(cond[0], str):
        return frozenset({cond}), frozenset({negate(cond)})
    return cond


def extend(condition: Condition, more: Condition) -> Condition | None:
    """The path `condition` continued where all of `more` holds; None when it cannot (a path
    already too long to keep stays as it is)."""
    if not compatible(condition, more):
        return None
    return conjoin(condition, more) or condition


def with_literal(condition: Condition, lit: Literal) -> Condition | None:
    """The path `condition` continued where `lit` holds; None when it cannot. A path already
    too long to keep stays as it is (it is merely "some path")."""
    if not compatible(condition, frozenset({lit})):
        return None
    return conjoin(condition, frozenset({lit})) or condition


_CPU_COMPARISON = re.compile(r"""^\s*(?P<subject>[\w.]+)\s*(?P<op>==|!=|not\s+in|in)\s*[(\[{]?\s*(['"])cpu\3\s*[)\]}]?\s*$""")


def says_cpu(condition: Condition) -> bool:
    """The condition states that a device the code was handed is the CPU (`device == "cpu"`,
    `device not in ["cpu"]` failing): library code on such a path runs where its caller is, on
    the CPU."""
    for text, truth in condition:
        match = _CPU_COMPARISON.match(text)
        if match and conventions.DEVICE_OPTION.search(match.group("subject")) \
                and (match.group("op") in ("==", "in")) == truth:
            return True
    return False


def asks_available(condition: "Condition | frozenset") -> bool:
    """The condition says a GPU is available (`torch.cuda.is_available()` holds)."""
    return any(truth and text in _AVAILABLE_TYPES for text, truth in condition)


def on_cpu_machine(condition: Condition) -> bool:
    """The condition says no GPU is available (a path of the CPU-only machine)."""
    return any(not truth and text in _AVAILABLE_TYPES for text, truth in condition)


def may_be_cpu_machine(condition: Condition) -> bool:
    """The condition may hold because no GPU is there: it says so, or a test that asks for one
    (with something else: `device != "cpu" and torch.cuda.is_available()`) failed."""
    return on_cpu_machine(condition) or any(not truth and _ASKS_FOR_GPU.search(text) for text, truth in condition)


def is_premise(condition: Condition) -> bool:
    """The condition only says that a GPU is there: the premise of every error-level finding
    (a crash on a machine with a GPU), so a meet on such a path is definite."""
    return all(truth and text in _AVAILABLE_TYPES for text, truth in condition)


def describe(condition: Condition) -> str:
    """`args.gpu` is None, `use_cuda`, ... for messages (availability literals left out)."""
    parts = []
    for text, truth in sorted(condition, key=lambda lit: lit[0]):
        if text in _AVAILABLE_TYPES and truth:
            continue
        parts.append(_phrase(text, truth))
    return " and ".join(parts)


def _phrase(text: str, truth: bool) -> str:
    if text.endswith(_EARLIER):
        return _phrase(text[:-len(_EARLIER)], truth) + " in an earlier iteration"
    if truth:
        return f"`{text}`"
    for negative, positive in _NEGATIONS:
        if positive in text and text.count(positive) == 1:
            return f"`{text.replace(positive, negative)}`"
    return f"not `{text}`"


def text(condition: Condition) -> str:
    """The condition as one test, for device identities (`devices.with_fallback`)."""
    return " and ".join(t if truth else f"not ({t})" for t, truth in sorted(condition))
