"""Kinds from annotations: `loader: DataLoader`, `model: nn.Module`, `x: torch.Tensor`.

A parameter that no visible caller supplies is unknown; its annotation still says what it is,
so that a loader yields host batches and a module called with device tensors meets them. Only
the kind is taken, never a placement (an annotated module is wherever its caller put it).
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis.names import canonical
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    ORIGIN_BATCH,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    new_identity,
)
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches
from devlint.knowledge import torch as tk

_WRAPPERS = frozenset({"Optional", "Union"})  # `Optional[DataLoader]`: the first named type


def annotated_value(an: Analyzer, annotation: cst.Annotation | None, name: str, node: cst.CSTNode,
                    frame: Frame) -> Value | None:
    """The value a parameter annotated with `annotation` holds when nothing else is known."""
    if annotation is None:
        return None
    expression = annotation.annotation
    if type(expression) is cst.Subscript and expression.slice \
            and (_last_name(expression.value) in _WRAPPERS) and type(expression.slice[0].slice) is cst.Index:
        expression = expression.slice[0].slice.value
    if type(expression) not in (cst.Name, cst.Attribute):
        return None
    typed = an.eval(expression, frame)
    if typed.kind is not Kind.REF:
        return None
    qualname = canonical(typed.qualname)
    if matches(qualname, tk.LOADERS):
        batch = Value(Kind.BATCH, HOST, Origin(ORIGIN_BATCH, node, f"a batch from `{name}`"))
        return Value(Kind.LOADER, HOST, batch.origin, identity=new_identity(), elem=batch)
    if matches(qualname, lib.MODULE_BASES) or matches(qualname, tk.NN_CLASSES):
        return Value(Kind.MODULE, UNKNOWN_PLACE, identity=new_identity(), qualname=qualname)
    if qualname in tk.TENSOR_TYPES:
        return Value(Kind.TENSOR, UNKNOWN_PLACE)
    if matches(qualname, tk.OPTIMIZERS):
        return Value(Kind.OPTIMIZER, NO_TENSORS, qualname=qualname, identity=new_identity())
    return None


def _last_name(node: cst.BaseExpression) -> str:
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        return node.attr.value
    return ""
