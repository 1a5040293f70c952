"""Host-only libraries: NumPy, scikit-learn, matplotlib, pandas, SciPy, OpenCV read a tensor's
memory directly, so a device tensor handed to them is a crash (DEV109)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.values import NO_TENSORS, SCALAR, UNKNOWN, Kind, Value, array
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches


def host_call(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    given = list(args) + [v for k, v in kwargs.items() if not k.startswith("*")]
    if not matches(qualname, lib.HOST_ONLY_EXCEPTIONS):
        an.host_consumer(node, given, f"`{qualname}`", frame)
    if qualname in lib.AXES_MAKERS:
        return axes(qualname)
    if qualname in lib.FIGURE_MAKERS:
        return figure()
    if qualname in lib.NUMPY_ARRAY_MAKERS:
        return array(node)
    if not matches(qualname, lib.NUMPY):
        return UNKNOWN
    return _numpy_result(qualname, node, given)


def _numpy_result(qualname: str, node: cst.Call, given: list[Value]) -> Value:
    """What a NumPy function returns: a number for numbers (`np.log(k)`, `np.prod((3, 32))`,
    `np.random.beta(a, b)`), a CPU tensor for a ufunc of a CPU tensor, else an array."""
    if qualname in lib.NUMPY_RANDOM_DRAWS:
        sized = any(a.keyword is not None and a.keyword.value == "size" for a in node.args) \
            or qualname.rsplit(".", 1)[-1] in ("rand", "randn", "random", "random_sample") and bool(node.args)
        return array(node) if sized else SCALAR
    if (qualname in lib.NUMPY_UFUNCS or qualname in lib.NUMPY_REDUCTIONS) and given \
            and all(_number_like(v) for v in given):
        return SCALAR
    if qualname in lib.NUMPY_UFUNCS or qualname in lib.NUMPY_REDUCTIONS:
        tensor = next((v for v in given if v.kind is Kind.TENSOR and v.place.on_host), None)
        if tensor is not None and qualname in lib.NUMPY_UFUNCS:
            return Value(Kind.TENSOR, tensor.place, tensor.origin)
        if not any(v.kind in (Kind.NDARRAY, Kind.LIST, Kind.TUPLE) for v in given):
            return UNKNOWN  # of values it cannot see: an array or a number
        if qualname in lib.NUMPY_REDUCTIONS and not _along_an_axis(node):
            return array(node).with_facts(Fact.ZERO_DIM)  # a NumPy scalar, for the whole array
    return array(node)


def _along_an_axis(node: cst.Call) -> bool:
    """`np.mean(a, axis=0)` / `np.mean(a, 0)` reduce along an axis and give an array."""
    positional = [a for a in node.args if a.keyword is None and a.star == ""]
    return len(positional) > 1 or any(a.keyword is not None and a.keyword.value == "axis" or a.star
                                      for a in node.args)


def _number_like(value: Value, depth: int = 0) -> bool:
    """A Python number, a NumPy constant, or a list / tuple of them."""
    if value.kind is Kind.SCALAR or value.kind is Kind.REF and value.qualname in lib.NUMPY_CONSTANTS:
        return True
    if value.kind in (Kind.LIST, Kind.TUPLE) and depth < 2 and (value.fields or value.elem is not None):
        parts = [f for _, f in value.fields] + ([value.elem] if value.elem is not None else [])
        return all(_number_like(p, depth + 1) for p in parts)
    return False


def axes(qualname: str = "") -> Value:
    """Matplotlib axes: one (`plt.gca()`), or `(figure, axes)` from `plt.subplots()`, whose
    axes may be an array of axes (indexing it gives axes again)."""
    one = Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({Fact.PLOT_AXES}))
    one = one.evolve(elem=one)
    if qualname in lib.FIGURE_AND_AXES_MAKERS:
        return Value(Kind.TUPLE, NO_TENSORS, fields=((0, figure()), (1, one)))
    return one


def figure() -> Value:
    """A matplotlib figure, or an array of subfigures (indexing or iterating gives a figure)."""
    one = Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({Fact.PLOT_FIGURE}))
    return one.evolve(elem=one)


def figure_method(name: str) -> Value | None:
    """`fig.add_subplot(...)` / `fig.subplots(...)` give axes, `fig.subfigures(...)` figures."""
    if name in lib.FIGURE_AXES_METHODS:
        return axes()
    if name in lib.FIGURE_SUBFIGURE_METHODS:
        return figure()
    return None
