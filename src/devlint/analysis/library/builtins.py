"""Python's builtins and the standard library calls that carry values through: `enumerate`,
`zip`, `next`, `list`, `getattr` / `setattr`, `copy.deepcopy`, `functools.partial`, and the
iterables that yield what they wrap (`tqdm`, `itertools.islice`)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis import files
from devlint.analysis.library.common import NEXT, bound_arguments
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of, string_value
from devlint.analysis.values import NO_TENSORS, NONE_VALUE, SCALAR, STR, UNKNOWN, Kind, Value, new_identity
from devlint.analysis.vocabulary import Fact, default_str, known_str

_NUMBERS = frozenset({"len", "int", "float", "bool", "abs", "round", "isinstance", "hasattr", "callable", "id",
                      "hash"})
_TEXTS = frozenset({"str", "repr", "format", "input"})
_PASS_THROUGH = frozenset({"iter", "reversed", "sorted"})
_ARITHMETIC = frozenset({"sum", "max", "min"})


def builtin(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    name = qualname.rsplit(".", 1)[-1]
    if name == "enumerate" and args:
        elem = an.element_of(args[0])
        facts = frozenset({Fact.DATA_ITER}) if an.is_data_iter(args[0]) else frozenset()
        return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS, fields=((0, SCALAR), (1, elem))),
                     facts=facts)
    if name == "zip" and args:
        fields = tuple((i, an.element_of(a)) for i, a in enumerate(args))
        facts = frozenset({Fact.DATA_ITER}) if any(an.is_data_iter(a) for a in args) else frozenset()
        return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS, fields=fields), facts=facts)
    if name in _PASS_THROUGH and args:
        return args[0]
    if name == "open" and args and node.args and node.args[0].keyword is None and not node.args[0].star:
        return files.opened(args[0], code_of(node.args[0].value), frame.ctx)  # `torch.save(obj, f)` names the file
    if name == "next" and args:
        if args[0].has(Fact.PARAM_ITER) and args[0].place.known:  # next(model.parameters())
            return Value(Kind.TENSOR, args[0].place, facts=frozenset({Fact.PARAM}))
        return an.element_of(args[0])
    if name in ("list", "tuple") and args:
        source = args[0]
        if source.kind in (Kind.LIST, Kind.TUPLE) and source.kind.name.lower() == name:
            return source
        return Value(Kind.LIST if name == "list" else Kind.TUPLE, NO_TENSORS, elem=an.element_of(source))
    if name == "dict":
        if args and args[0].kind is Kind.DICT:
            return args[0]
        return Value(Kind.DICT, NO_TENSORS, fields=tuple((k, v) for k, v in kwargs.items() if not k.startswith("*")))
    if name in _NUMBERS:
        return SCALAR
    if name in _TEXTS:
        return STR
    if name == "range":
        return Value(Kind.LIST, NO_TENSORS, elem=SCALAR)
    if name == "print":
        return NONE_VALUE
    if name == "getattr" and len(args) >= 2:
        attr = known_str(args[1])
        if attr is None and args[0].kind is Kind.REF:
            attr = default_str(args[1])  # `getattr(torch, window)(n)`, window="hann_window": a window
        if attr:
            return an.get_attribute(args[0], attr, node, frame)
        if args[0].kind is Kind.REF and len(args) == 2:  # `getattr(torch, window)`: one of its members
            return an.member_of(args[0].qualname, None, node, frame)
    if name == "setattr" and len(args) >= 3 \
            and type(node.args[1].value) in (cst.SimpleString, cst.FormattedString, cst.Name):
        attr = string_value(node.args[1].value) or "<dynamic>"
        an.set_attribute(args[0], attr, args[2], frame, frame.stmt or node)
        return NONE_VALUE
    if name in _ARITHMETIC and args:
        # max(a, b) of Python numbers is a number; of a list or tensors it is not known here
        return SCALAR if len(args) > 1 and all(a.kind is Kind.SCALAR for a in args) else UNKNOWN
    return UNKNOWN


def pass_through(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`tqdm(loader)`, `itertools.islice(loader, n)`: iterating it yields what it wraps."""
    return args[0] if args else UNKNOWN


def deep_copy(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """A copy: the same placement, a new object (`copy.deepcopy(model)` for an EMA model)."""
    if not args:
        return NEXT
    return args[0].evolve(identity=new_identity() if args[0].identity else 0)


def partial(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`functools.partial(fn, a, k=v)`: a function value with bound arguments."""
    if not args:
        return NEXT
    fn = args[0]
    if fn.kind is Kind.FUNCTION:
        bound, bound_kw = bound_arguments(fn)
        positional = tuple(enumerate(bound + list(args[1:])))
        keywords = {**bound_kw, **{k: v for k, v in kwargs.items() if not k.startswith("*")}}
        return fn.evolve(fields=positional + tuple((f"kw:{k}", v) for k, v in keywords.items()))
    return UNKNOWN
