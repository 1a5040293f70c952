"""Expressions: what each evaluates to, and what indexing and iteration give.

Calls are `analysis/calls.py`, attribute access `analysis/members.py`, operations that make
values meet `analysis/operations.py`; this module holds the other expression forms and the
container semantics (`item_of`, `element_of`) that unpacking and loops use.
"""

from __future__ import annotations

import re
from dataclasses import replace

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import SiteKind
from devlint.analysis.flow import fork
from devlint.analysis.placement import container_place, device_string_place, is_deviceish, join
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import code_of, constant_key, fstring_prefix, string_value
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    SCALAR,
    STR,
    UNKNOWN,
    UNKNOWN_PLACE,
    ORIGIN_AFTER_MOVE,
    ORIGIN_BATCH,
    Kind,
    Origin,
    Value,
    device_at,
)
from devlint.analysis.vocabulary import Fact, int_fact_of, known_int
from devlint.knowledge import torch as tk

_INT_LITERALS: dict[str, Value] = {}  # "4" -> SCALAR with fact int=4 (values are immutable)
_INDEXED_FSTRING = re.compile(r"([a-z]+):\{\}")
_CONTAINERS = (Kind.LIST, Kind.TUPLE, Kind.DICT)


def eval_name(an: Analyzer, node: cst.Name, frame: Frame) -> Value:
    return an.lookup(node.value, frame)


def eval_attribute(an: Analyzer, node: cst.Attribute, frame: Frame) -> Value:
    owner = an.eval(node.value, frame)
    value = an.get_attribute(owner, node.attr.value, node, frame)
    if value.kind is Kind.UNKNOWN and owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
        return an.deep_field(node, frame) or value
    return value


def eval_subscript(an: Analyzer, node: cst.Subscript, frame: Frame) -> Value:
    owner = an.eval(node.value, frame)
    for el in node.slice:
        if isinstance(el.slice, cst.Index):
            an.eval(el.slice.value, frame)
    if owner.kind is Kind.REF:
        return UNKNOWN  # typing subscripts such as list[int]
    key = constant_key(node)
    if key is not None and owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
        stored = an.deep_field(node, frame)
        if stored is not None:
            return stored
    if key is not None:
        return item_of(an, owner, key, code_of(node))
    if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Slice):
        if owner.kind in (Kind.TENSOR, Kind.LIST, Kind.TUPLE, Kind.NDARRAY, Kind.STR):
            return owner.evolve(fields=()) if owner.kind is not Kind.TENSOR else owner
    if owner.kind is Kind.TENSOR:
        return owner.with_facts(remove=(Fact.ZERO_DIM,))
    return item_of(an, owner, None, code_of(node))


def item_of(an: Analyzer, value: Value, key: object, text: str) -> Value:
    """`value[key]` / unpacking position `key` / attribute `key` of a batch."""
    if value.has(Fact.HF_DATASET) or value.has(Fact.PLOT_AXES):  # `dataset["train"]`, `axes[0, 1]`
        return value
    if key is not None:
        field = value.get_field(key)
        if field is not None:
            if text and value.kind in (Kind.BATCH, Kind.ENCODING, Kind.OBJECT):
                return field.named(text)  # `labels` / `batch["labels"]`, for messages
            return field
    if value.kind in (Kind.BATCH, Kind.ENCODING):
        if value.elem is not None:
            return value.elem.named(text) if key is not None else value.elem
        origin = value.origin
        if origin is not None and text:
            origin = replace(origin, name=text if isinstance(key, str) and not text.startswith(("batch", "data")) else text)
        return Value(Kind.TENSOR, value.place, origin, facts=value.facts & {Fact.MANAGED})
    if value.kind in _CONTAINERS and value.elem is not None:
        return value.elem
    if value.kind in _CONTAINERS and key is None and value.fields:
        joined = None  # `d.values()`, `d[name]`, `lst[i]`: one of the known items
        for _, f in value.fields:
            joined = join(joined, f)
        return joined if joined is not None else UNKNOWN
    if value.kind is Kind.NDARRAY:
        return Value(Kind.NDARRAY, HOST)
    if value.kind is Kind.MODULE and value.qualname in tk.REGISTERING_CONTAINERS and value.fields:
        return children(value)
    if value.kind is Kind.TENSOR:
        return value.with_facts(remove=(Fact.ZERO_DIM,))
    return UNKNOWN


def element_of(an: Analyzer, value: Value) -> Value:
    """What iterating over `value` yields."""
    if value.kind in (Kind.LOADER, Kind.DATASET):
        if value.elem is not None:
            return value.elem
        if value.kind is Kind.DATASET and value.node is not None:
            return Value(Kind.BATCH, UNKNOWN_PLACE)  # the program's own __getitem__ decides
        return Value(Kind.BATCH, HOST, Origin(ORIGIN_BATCH, None, "a batch"))
    if value.kind in (Kind.LIST, Kind.TUPLE):
        if value.elem is not None:
            return value.elem
        joined = None
        for _, f in value.fields:
            joined = join(joined, f)
        return joined if joined is not None else UNKNOWN
    if value.kind is Kind.DICT:
        return STR
    if value.kind is Kind.TENSOR:
        return value.with_facts(remove=(Fact.ZERO_DIM,))
    if value.kind is Kind.BATCH:
        return item_of(an, value, None, "")
    if value.kind is Kind.MODULE and value.qualname in tk.REGISTERING_CONTAINERS and value.fields:
        late = next((c for _, c in value.fields if c.place.on_host and c.origin is not None
                     and c.origin.category == ORIGIN_AFTER_MOVE), None)
        if late is not None and value.place.on_device:
            return late  # iterating visits every child, the one put in after the move too
        return children(value)
    return UNKNOWN


def children(container: Value) -> Value:
    """One child of an nn.ModuleList / Sequential, placed where the container is."""
    joined = None
    for _, child in container.fields:
        joined = join(joined, child)
    if joined is None:
        return UNKNOWN
    if joined.kind is Kind.UNKNOWN and container.place.known:
        return Value(Kind.MODULE, container.place)
    return joined


def is_data_iter(value: Value) -> bool:
    """Iterating it yields batches."""
    return value.kind in (Kind.LOADER, Kind.DATASET) or value.has(Fact.DATA_ITER)


def eval_tuple(an: Analyzer, node: cst.Tuple | cst.List, frame: Frame) -> Value:
    kind = Kind.TUPLE if isinstance(node, cst.Tuple) else Kind.LIST
    fields = []
    for index, el in enumerate(node.elements):
        value = an.eval(el.value, frame)
        if isinstance(el, cst.StarredElement):
            return Value(kind, NO_TENSORS)
        fields.append((index, value))
    if not fields and kind is Kind.LIST:
        return Value(kind, NO_TENSORS, facts=frozenset({Fact.EMPTY}))
    return Value(kind, container_place(v for _, v in fields), fields=tuple(fields))


def eval_dict(an: Analyzer, node: cst.Dict, frame: Frame) -> Value:
    fields = []
    for el in node.elements:
        if isinstance(el, cst.DictElement):
            key = string_value(el.key)
            value = an.eval(el.value, frame)
            if key is not None:
                fields.append((key, value))
        else:
            an.eval(el.value, frame)
    return Value(Kind.DICT, container_place(v for _, v in fields), fields=tuple(fields))


def eval_comprehension(an: Analyzer, node: cst.BaseComp, frame: Frame) -> Value:
    inner = fork(frame)
    inner.module_level = False
    inner.env = dict(frame.env) if not frame.module_level else {}
    comp = node.for_in
    while comp is not None:
        iterable = an.eval(comp.iter, inner)
        an.assign(comp.target, element_of(an, iterable), inner, node)
        for cond in comp.ifs:
            an.eval(cond.test, inner)
        comp = comp.inner_for_in
    if isinstance(node, cst.DictComp):
        value = an.eval(node.value, inner)
        return Value(Kind.DICT, value.place if value.kind in (Kind.TENSOR, Kind.UNKNOWN) else NO_TENSORS,
                     elem=value)
    elt = an.eval(node.elt, inner)  # type: ignore[attr-defined]
    return Value(Kind.LIST, elt.place if elt.kind in (Kind.TENSOR, Kind.MODULE) else NO_TENSORS, elem=elt)


def eval_string(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> Value:
    text = string_value(node)
    if text is None:
        prefix = fstring_prefix(node)
        if prefix is not None and prefix.lower().startswith(("cuda", "mps", "xpu")):
            return Value(Kind.STR, device_at(code_of(node), node, _fstring_ident(an, node, frame)),
                         facts=frozenset({Fact.DEVICE_STR}))
        if isinstance(node, cst.FormattedString):
            for part in node.parts:
                if isinstance(part, cst.FormattedStringExpression):
                    an.eval(part.expression, frame)
        return STR
    place = device_string_place(text, node)
    if place is not None:
        return Value(Kind.STR, place, facts=frozenset({Fact.DEVICE_STR}))
    return STR


def _fstring_ident(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> str:
    """Identity of `f"cuda:{rank}"`: a literal index when the expression is a known int."""
    if not isinstance(node, cst.FormattedString):
        return ""
    text, exprs = "", []
    for part in node.parts:
        if isinstance(part, cst.FormattedStringText):
            text += part.value
        elif isinstance(part, cst.FormattedStringExpression):
            exprs.append((part.expression, an.eval(part.expression, frame)))
            text += "{}"
    m = _INDEXED_FSTRING.fullmatch(text.lower())
    if m is None or len(exprs) != 1 or m.group(1) not in devices.GPU_TYPES:
        return devices.from_string(text) if not exprs else devices.opaque(code_of(node))
    expr, value = exprs[0]
    return devices.indexed(m.group(1), known_int(value), code_of(expr))


def eval_number(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> Value:
    if isinstance(node, cst.Integer):  # a known int (num_workers=4) for the rules that need it
        known = _INT_LITERALS.get(node.value)
        if known is None:
            try:
                known = SCALAR.with_facts(int_fact_of(int(node.value, 0)))
            except ValueError:
                known = SCALAR
            if len(_INT_LITERALS) < 10_000:
                _INT_LITERALS[node.value] = known
        return known
    return SCALAR


def eval_binary(an: Analyzer, node: cst.BinaryOperation, frame: Frame) -> Value:
    left = an.eval(node.left, frame)
    right = an.eval(node.right, frame)
    return an.binary(node, left, right, code_of(node.operator), frame)


def eval_comparison(an: Analyzer, node: cst.Comparison, frame: Frame) -> Value:
    left = an.eval(node.left, frame)
    result = left
    for target in node.comparisons:
        right = an.eval(target.comparator, frame)
        if isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
            result = SCALAR
            continue
        result = an.binary(node, left, right, code_of(target.operator), frame)
        left = right
    return result


def eval_unary(an: Analyzer, node: cst.UnaryOperation, frame: Frame) -> Value:
    value = an.eval(node.expression, frame)
    if isinstance(node.operator, cst.Not):
        return SCALAR
    if value.kind is Kind.SCALAR and value.facts:
        return SCALAR  # -4 is not the int 4
    return value


def eval_boolean(an: Analyzer, node: cst.BooleanOperation, frame: Frame) -> Value:
    left = an.eval(node.left, frame)
    right = an.eval(node.right, frame)
    if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
        return SCALAR
    if left.kind is Kind.NONE:
        return right
    return join(left, right)


def eval_ifexp(an: Analyzer, node: cst.IfExp, frame: Frame) -> Value:
    test_value = an.eval(node.test, frame)
    if test_value.has(Fact.CUDA_AVAILABLE):
        an.availability_conds.add(devices.norm(code_of(node.test)))
    body = an.eval(node.body, frame)
    orelse = an.eval(node.orelse, frame)
    if is_deviceish(body) or is_deviceish(orelse):
        places = [v.place for v in (body, orelse) if is_deviceish(v)]
        device = next((p for p in places if p.on_device), None)
        if device is not None:
            fallback = any(p.on_host for p in places) or orelse.kind is Kind.NONE
            if fallback or body.has(Fact.CPU_FALLBACK) or orelse.has(Fact.CPU_FALLBACK):
                # "cuda" if ... else "mps" if ... else "cpu": a GPU of some kind, or the CPU
                inner = {devices.split(p.ident)[0] for p in places if p.on_device}
                if len(inner) > 1:
                    device = replace(device, ident="")
                fallback = True
            if fallback:
                test = "torch.cuda.is_available()" if test_value.has(Fact.CUDA_AVAILABLE) else code_of(node.test)
                if not (is_deviceish(body) and body.place.on_device):
                    test = f"not ({test})"
                device = replace(device, ident=devices.with_fallback(device.ident, test))
                an.emit_site(node, frame, SiteKind.CPU_FALLBACK, "", Value(Kind.DEVICE, device), text=code_of(node))
            elif len({p.ident for p in places}) > 1:
                device = replace(device, ident="")  # one of two devices: which one is not known
            return Value(Kind.DEVICE, device, facts=frozenset({Fact.CPU_FALLBACK} if fallback else ()))
    return join(body, orelse)


def eval_lambda(an: Analyzer, node: cst.Lambda, frame: Frame) -> Value:
    return Value(Kind.FUNCTION, NO_TENSORS, qualname="<lambda>", node=node)


def eval_await(an: Analyzer, node: cst.Await, frame: Frame) -> Value:
    an.eval(node.expression, frame)
    return UNKNOWN


def eval_walrus(an: Analyzer, node: cst.NamedExpr, frame: Frame) -> Value:
    value = an.eval(node.value, frame)
    an.assign(node.target, value, frame, node)
    return value


def eval_starred(an: Analyzer, node: cst.StarredElement, frame: Frame) -> Value:
    return an.eval(node.value, frame)


EXPRESSIONS = {
    cst.Name: eval_name,
    cst.Attribute: eval_attribute,
    cst.Subscript: eval_subscript,
    cst.Tuple: eval_tuple,
    cst.List: eval_tuple,
    cst.Dict: eval_dict,
    cst.ListComp: eval_comprehension,
    cst.SetComp: eval_comprehension,
    cst.GeneratorExp: eval_comprehension,
    cst.DictComp: eval_comprehension,
    cst.SimpleString: eval_string,
    cst.ConcatenatedString: eval_string,
    cst.FormattedString: eval_string,
    cst.Integer: eval_number,
    cst.Float: eval_number,
    cst.Imaginary: eval_number,
    cst.BinaryOperation: eval_binary,
    cst.Comparison: eval_comparison,
    cst.UnaryOperation: eval_unary,
    cst.BooleanOperation: eval_boolean,
    cst.IfExp: eval_ifexp,
    cst.Lambda: eval_lambda,
    cst.Await: eval_await,
    cst.NamedExpr: eval_walrus,
    cst.StarredElement: eval_starred,
}
