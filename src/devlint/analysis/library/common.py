"""What every handler of the library table shares: the fall-through marker and the call's
arguments as the events carry them."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.events import Argument
from devlint.analysis.shared import Args, Kwargs
from devlint.analysis.values import UNKNOWN, Value


class _Next:
    """Returned by a handler whose row matched the name but not the call (`copy.deepcopy()`
    without arguments): the table tries the next row."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NEXT"


NEXT: Value = _Next()  # type: ignore[assignment]


def call_arguments(node: cst.CSTNode, args: Args, kwargs: Kwargs) -> tuple[Argument, ...]:
    """The evaluated arguments of a call, in source order, with the nodes they came from."""
    if type(node) is not cst.Call:
        return ()
    positional = iter(args)
    out = []
    for arg in node.args:
        if arg.keyword is not None:
            key: str | None = arg.keyword.value
            value = kwargs.get(arg.keyword.value, UNKNOWN)
        elif arg.star in ("*", "**"):
            key = arg.star
            value = kwargs.get(arg.star, UNKNOWN)
        else:
            key = None
            value = next(positional, UNKNOWN)
        out.append(Argument(key, value, arg.value))
    return tuple(out)


def bound_arguments(fn: Value) -> tuple[Args, Kwargs]:
    """The arguments a `functools.partial` (or a bound method) bound: positional (int keys),
    keyword ("kw:" keys)."""
    positional = [v for k, v in fn.fields if isinstance(k, int)]
    keywords = {k[3:]: v for k, v in fn.fields if isinstance(k, str) and k.startswith("kw:")}
    return positional, keywords
