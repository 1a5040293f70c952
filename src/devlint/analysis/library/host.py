"""Host-only libraries: NumPy, scikit-learn, matplotlib, pandas, SciPy, OpenCV read a tensor's
memory directly, so a device tensor handed to them is a crash (DEV109)."""

from __future__ import annotations

import libcst as cst

from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.values import HOST, NO_TENSORS, UNKNOWN, Kind, Value
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches


def host_call(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    is_array_maker = qualname in lib.NUMPY_ARRAY_MAKERS
    if not matches(qualname, lib.HOST_ONLY_EXCEPTIONS):
        an.host_consumer(node, list(args) + list(kwargs.values()), f"`{qualname}`", frame)
    if qualname in lib.AXES_MAKERS:
        return axes(qualname)
    return Value(Kind.NDARRAY, HOST) if is_array_maker or matches(qualname, lib.NUMPY) else UNKNOWN


def axes(qualname: str) -> Value:
    """Matplotlib axes: one (`plt.gca()`), or `(figure, axes)` from `plt.subplots()`, whose
    axes may be an array of axes (indexing it gives axes again)."""
    one = Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({Fact.PLOT_AXES}))
    one = one.evolve(elem=one)
    if qualname in lib.FIGURE_AND_AXES_MAKERS:
        return Value(Kind.TUPLE, NO_TENSORS, fields=((0, UNKNOWN), (1, one)))
    return one
