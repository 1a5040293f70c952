"""Expressions: what each evaluates to, and what indexing and iteration give.

Calls are `analysis/calls.py`, attribute access `analysis/members.py`, operations that make
values meet `analysis/operations.py`; this module holds the other expression forms and the
container semantics (`item_of`, `element_of`) that unpacking and loops use.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.events import SiteKind
from devlint.analysis.flow import fork
from devlint.analysis.narrowing import narrow, test_literal, type_test_decided
from devlint.analysis.library.environment import record_cpu_test
from devlint.analysis.members import proven_tensor
from devlint.analysis.placement import container_place, device_string_place, is_deviceish, join, union
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import code_of, constant_key, follows_a_tensor, fstring_prefix, string_value
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    SCALAR,
    STR,
    TENSORISH,
    UNKNOWN,
    UNKNOWN_PLACE,
    ORIGIN_AFTER_MOVE,
    ORIGIN_BATCH,
    Kind,
    Origin,
    Value,
    array,
    device_at,
)
from devlint.analysis.vocabulary import Fact, bool_fact_of, decided, int_fact_of, known_bool, known_int, known_str, str_fact_of
from devlint.knowledge import torch as tk

_INT_LITERALS: dict[str, Value] = {}  # "4" -> SCALAR with fact int=4 (values are immutable)
_STR_LITERALS: dict[str, Value] = {}  # "cpu" -> STR with fact str=cpu
_MAX_KNOWN_STRING = 40
_CPU_WEIGHTS_URL = STR.with_facts(Fact.CPU_WEIGHTS)  # "https://download.pytorch.org/models/..."
# tests that can say something about the names they test (analysis/narrowing.py)
_NARROWING_TESTS = (cst.Call, cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)
_INDEXED_FSTRING = re.compile(r"([a-z]+):\{\}")
_CONTAINERS = (Kind.LIST, Kind.TUPLE, Kind.DICT)
_GUARDED_OPERANDS = (cst.Call, cst.Subscript, cst.Comparison)  # what can record a site or meet


def eval_name(an: Analyzer, node: cst.Name, frame: Frame) -> Value:
    return an.lookup(node.value, frame)


def eval_attribute(an: Analyzer, node: cst.Attribute, frame: Frame) -> Value:
    owner = proven_tensor(an.eval(node.value, frame), node, frame)
    value = an.get_attribute(owner, node.attr.value, node, frame)
    if value.kind is Kind.UNKNOWN and owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
        return an.deep_field(node, frame) or value
    return value


def eval_subscript(an: Analyzer, node: cst.Subscript, frame: Frame) -> Value:
    owner = an.eval(node.value, frame)
    indices = [an.eval(el.slice.value, frame) for el in node.slice if type(el.slice) is cst.Index]
    key = constant_key(node)
    if key is None and len(node.slice) == 1 and len(indices) == 1:  # a key the analysis knows the value of
        key = known_str(indices[0]) if known_str(indices[0]) is not None else known_int(indices[0])
    if owner.kind is Kind.REF:
        namespace = owner.qualname.removesuffix(".__dict__")
        if namespace != owner.qualname:  # `models.__dict__[arch]`: a member of the module
            return an.member_of(namespace, key if isinstance(key, str) else None, node, frame)
        return UNKNOWN  # typing subscripts such as list[int]
    if key is not None and owner.identity == 0 and owner.kind in (Kind.MODULE, Kind.UNKNOWN):
        stored = an.deep_field(node, frame)
        if stored is not None:
            return stored
    by_number = isinstance(key, int) or key is None and len(indices) == 1 and indices[0].kind is Kind.SCALAR
    if by_number and owner.kind is Kind.TENSOR and owner.place.on_host and owner.origin is not None \
            and owner.origin.category == ORIGIN_BATCH and len(node.slice) == 1:
        # `sizes[0][0]`: an element of a collated field may be one sample's number, a 0-dim CPU
        # tensor, which PyTorch lets meet device tensors (nothing proves it has a dimension left)
        return owner.with_facts(Fact.ZERO_DIM)
    if key is not None:
        return item_of(an, owner, key, node)
    if len(node.slice) == 1 and type(node.slice[0].slice) is cst.Slice:
        if owner.kind in (Kind.TENSOR, Kind.LIST, Kind.TUPLE, Kind.NDARRAY, Kind.STR):
            return owner.evolve(fields=()) if owner.kind is not Kind.TENSOR else owner
    if owner.kind is Kind.TENSOR:
        return owner.with_facts(remove=(Fact.ZERO_DIM,))
    return item_of(an, owner, None, node)


# the kinds whose items item_of names (for messages): a batch's or an object's fields
_NAMED_ITEMS = frozenset({Kind.BATCH, Kind.ENCODING, Kind.OBJECT})


def item_of(an: Analyzer, value: Value, key: object, text: "str | cst.Subscript") -> Value:
    """`value[key]` / unpacking position `key` / attribute `key` of a batch. `text` names the
    item for messages; a subscript's own text is generated only where a batch item is named."""
    if value.has(Fact.HF_DATASET) or value.has(Fact.PLOT_AXES) or value.has(Fact.PLOT_FIGURE):
        return value  # `dataset["train"]`, `axes[0, 1]`, `subfigs[0]`
    if value.kind not in _NAMED_ITEMS:
        text = ""  # (no branch below names what it returns)
    elif not isinstance(text, str):
        text = code_of(text)
    if "(" in text:
        text = ""  # `tok(...)["input_ids"]` is no name to move: the variable it is bound to is
    if key is not None:
        field = value.get_field(key)
        if field is None and isinstance(key, int) and key < 0 and value.kind in (Kind.TUPLE, Kind.LIST, Kind.BATCH) \
                and value.elem is None and value.fields and all(isinstance(k, int) and k >= 0 for k, _ in value.fields):
            field = value.get_field(len(value.fields) + key)  # `t[-1]` of a tuple of known length
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
    if value.kind is Kind.NDARRAY:  # an element (a NumPy scalar) or a row: which is not known
        return array(None, value).with_facts(Fact.ZERO_DIM)
    if value.kind is Kind.MODULE and value.qualname in tk.REGISTERING_CONTAINERS and value.fields:
        return children(value)
    if value.kind is Kind.TENSOR:
        return value.with_facts(remove=(Fact.ZERO_DIM,))
    return UNKNOWN


def element_of(an: Analyzer, value: Value) -> Value:
    """What iterating over `value` yields."""
    if value.has(Fact.PLOT_AXES) or value.has(Fact.PLOT_FIGURE):
        return value  # an array of axes or subfigures yields axes or subfigures
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
        modules = bool(value.fields) and all(f.kind is Kind.MODULE for _, f in value.fields)
        for _, f in value.fields:
            # the modules of `[conv, norm, act]` stay apart: `add_module(str(i), layer)` in the
            # loop registers each of them (moves.py follows them)
            joined = union(joined, f) if modules else join(joined, f)
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
    kind = Kind.TUPLE if type(node) is cst.Tuple else Kind.LIST
    head: list[Value] = []  # the members before the first starred one of unknown length
    tail: list[Value] = []  # ... and after the last one
    spread: list[Value] = []  # what the starred members of unknown length hold
    for el in node.elements:
        value = an.eval(el.value, frame)
        members = [value]
        if type(el) is cst.StarredElement:
            if value.kind in (Kind.LIST, Kind.TUPLE) and value.elem is None and value.fields:
                members = [f for _, f in value.fields]  # `(*pair, z)` with `pair` of known length
            else:
                spread.append(an.element_of(value))
                tail = []
                continue
        (tail if spread else head).extend(members)
    if not head and not tail and not spread and kind is Kind.LIST:
        return Value(kind, NO_TENSORS, facts=frozenset({Fact.EMPTY}))
    fields = tuple(enumerate(head)) + tuple((index - len(tail), v) for index, v in enumerate(tail))
    elem = None
    for member in spread:
        elem = join(elem, member)
    if elem is not None:
        for member in head + tail:  # iterating visits every member
            elem = join(elem, member)
    return Value(kind, container_place(head + tail + spread), fields=fields, elem=elem)


def eval_dict(an: Analyzer, node: cst.Dict, frame: Frame) -> Value:
    fields = []
    for el in node.elements:
        if type(el) is cst.DictElement:
            key = string_value(el.key)
            value = an.eval(el.value, frame)
            if key is not None:
                fields.append((key, value))
        else:
            an.eval(el.value, frame)
    return Value(Kind.DICT, container_place(v for _, v in fields), fields=tuple(fields))


def eval_comprehension(an: Analyzer, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp,
                       frame: Frame) -> Value:
    inner = fork(frame)
    inner.module_level = False
    inner.env = dict(frame.env) if not frame.module_level else {}
    comp: cst.CompFor | None = node.for_in
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
    elt = an.eval(node.elt, inner)
    return Value(Kind.LIST, elt.place if elt.kind in (Kind.TENSOR, Kind.MODULE) else NO_TENSORS, elem=elt)


def eval_string(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> Value:
    text = string_value(node)
    if text is None:
        prefix = fstring_prefix(node)
        if prefix is not None and prefix.lower().startswith(("cuda", "mps", "xpu")):
            return Value(Kind.STR, device_at(code_of(node), node, _fstring_ident(an, node, frame)),
                         facts=frozenset({Fact.DEVICE_STR}))
        if type(node) is cst.FormattedString:
            for part in node.parts:
                if type(part) is cst.FormattedStringExpression:
                    an.eval(part.expression, frame)
        return STR
    return string_literal(text, node)


def _published_weights(url: str) -> bool:
    return url.startswith(tk.CPU_WEIGHT_URLS) \
        or any(url.startswith(host) and part in url for host, part in tk.RELEASE_WEIGHT_URLS)


def string_literal(text: str, node: cst.CSTNode | None = None) -> Value:
    """A string of known text: a device string ("cuda:1") is placed; short strings remember
    their text, so that comparisons of known constants decide `if` tests."""
    place = device_string_place(text, node)
    if place is not None:
        return Value(Kind.STR, place, facts=frozenset({Fact.DEVICE_STR, str_fact_of(text)}))
    if len(text) > _MAX_KNOWN_STRING:
        return _CPU_WEIGHTS_URL if _published_weights(text) else STR
    known = _STR_LITERALS.get(text)
    if known is None:
        known = STR.with_facts(str_fact_of(text))
        if len(_STR_LITERALS) < 10_000:
            _STR_LITERALS[text] = known
    return known


def _fstring_ident(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> str:
    """Identity of `f"cuda:{rank}"`: a literal index when the expression is a known int."""
    if type(node) is not cst.FormattedString:
        return ""
    text, exprs = "", []
    for part in node.parts:
        if type(part) is cst.FormattedStringText:
            text += part.value
        elif type(part) is cst.FormattedStringExpression:
            exprs.append((part.expression, an.eval(part.expression, frame)))
            text += "{}"
    m = _INDEXED_FSTRING.fullmatch(text.lower())
    if m is None or len(exprs) != 1 or m.group(1) not in devices.GPU_TYPES:
        return devices.from_string(text) if not exprs else devices.opaque(code_of(node))
    expr, value = exprs[0]
    return devices.indexed(m.group(1), known_int(value), code_of(expr))


def eval_number(an: Analyzer, node: cst.BaseExpression, frame: Frame) -> Value:
    if type(node) is cst.Integer:  # a known int (num_workers=4) for the rules that need it
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
    truth: bool | None = True  # the comparison of known constants, while every part is one
    for target in node.comparisons:
        right = an.eval(target.comparator, frame)
        folded = compare_constants(left, target.operator, right)
        truth = truth and folded if truth is not None and folded is not None else None
        if type(target.operator) in (cst.Is, cst.IsNot, cst.In, cst.NotIn):
            result = SCALAR
            continue
        result = an.binary(node, left, right, code_of(target.operator), frame)
        left = right
    if truth is not None and result.kind not in TENSORISH:  # numbers or strings (`key == "image"`)
        return SCALAR.with_facts(bool_fact_of(truth))
    return result


def eval_unary(an: Analyzer, node: cst.UnaryOperation, frame: Frame) -> Value:
    value = an.eval(node.expression, frame)
    if type(node.operator) is cst.Not:
        known = decided(value)
        return SCALAR.with_facts(bool_fact_of(not known)) if known is not None else SCALAR
    if value.kind is Kind.SCALAR and value.facts:
        return SCALAR  # -4 is not the int 4
    return value


def eval_boolean(an: Analyzer, node: cst.BooleanOperation, frame: Frame) -> Value:
    left = an.eval(node.left, frame)
    if isinstance(node.right, _GUARDED_OPERANDS) and isinstance(node.left, _NARROWING_TESTS):
        # `x.device.type != "cuda" or torch.cuda.get_device_capability(x.device)`: the right side
        # runs only where the left one let it (its sites carry that condition)
        conjunction = type(node.operator) is cst.And
        lit = test_literal(an, node.left, frame, None)
        right = _eval_narrowed(an, node.right, node.left, frame, lit, conjunction)
    else:
        right = an.eval(node.right, frame)
    if left.kind is Kind.SCALAR and right.kind is Kind.SCALAR:
        a, b = decided(left), decided(right)
        conjunction = type(node.operator) is cst.And
        both = a and b if conjunction else a or b
        if a is not None and both is not None:  # decided by the left, or by both
            return SCALAR.with_facts(bool_fact_of(both))
        return SCALAR
    if left.kind is Kind.NONE:
        return right
    return join(left, right)


def eval_ifexp(an: Analyzer, node: cst.IfExp, frame: Frame) -> Value:
    test_value = an.eval(node.test, frame)
    known = decided(test_value)
    if known is None:
        known = type_test_decided(an, node.test, frame)
    if known is not None:  # a constant test (or a type test the value answers): the other side never runs
        return an.eval(node.body if known else node.orelse, frame)
    available = "cuda" if test_value.has(Fact.CUDA_AVAILABLE) else "mps" if test_value.has(Fact.MPS_AVAILABLE) else None
    if available is not None:
        an.availability_conds.add(conditions.normalize(code_of(node.test)))
    lit = test_literal(an, node.test, frame, available)
    record_cpu_test(an, node.test, frame)
    body = _eval_narrowed(an, node.body, node.test, frame, lit, True)
    orelse = _eval_narrowed(an, node.orelse, node.test, frame, lit, False)
    if available is not None and known_bool(body) is True and known_bool(orelse) is False:
        return test_value  # `True if torch.cuda.is_available() else False` is the availability itself
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
                if not follows_a_tensor(node.test):
                    an.emit_site(node, frame, SiteKind.CPU_FALLBACK, "", Value(Kind.DEVICE, device), text=code_of(node))
            elif len({p.ident for p in places}) > 1:
                device = replace(device, ident="")  # one of two devices: which one is not known
            return Value(Kind.DEVICE, device, facts=frozenset({Fact.CPU_FALLBACK} if fallback else ()))
    return join(body, orelse, lit)


def _eval_narrowed(an: Analyzer, node: cst.BaseExpression, test: cst.BaseExpression, frame: Frame,
                   lit: conditions.Literal, holds: bool) -> Value:
    """One side of `a if test else b`, evaluated where the test holds (or fails)."""
    if not isinstance(test, _NARROWING_TESTS):
        return an.eval(node, frame)
    branch = fork(frame)
    path = conditions.with_literal(frame.path, lit if holds else conditions.negate(lit))
    if path is not None:
        branch.path = path
    narrow(an, test, branch, holds)
    return an.eval(node, branch)


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


# a handler takes the node of the type it is keyed by
EXPRESSIONS: dict[type[cst.CSTNode], Callable[[Analyzer, Any, Frame], Value]] = {
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


_ORDERED = {cst.LessThan: lambda a, b: a < b, cst.LessThanEqual: lambda a, b: a <= b,
            cst.GreaterThan: lambda a, b: a > b, cst.GreaterThanEqual: lambda a, b: a >= b}


def _constant(value: Value) -> tuple[bool, object]:
    """(known, the Python constant) for an int, string, bool or None of known value. A command
    line option's default, a module-level setting or an argument is not known: the user or the
    caller may pass another value."""
    if value.has(Fact.OPTION_DEFAULT) or value.has(Fact.CHOSEN):
        return False, None
    if value.kind is Kind.NONE:
        return True, None
    for reader in (known_bool, known_int, known_str):
        constant = reader(value)
        if constant is not None:
            return True, constant
    return False, None


def compare_constants(left: Value, operator: cst.BaseCompOp, right: Value) -> bool | None:
    """The truth of `left <op> right` when both sides are known constants, else None."""
    if type(operator) in (cst.In, cst.NotIn):
        if right.kind not in (Kind.LIST, Kind.TUPLE) or right.elem is not None or not right.fields:
            return None
        found, constant = _constant(left)
        members = [_constant(f) for _, f in right.fields]
        if not found or not all(known for known, _ in members):
            return None
        inside = any(constant == member for _, member in members)
        return inside if type(operator) is cst.In else not inside
    found_left, a = _constant(left)
    found_right, b = _constant(right)
    if not (found_left and found_right):
        return None
    if type(operator) in (cst.Is, cst.Equal):
        return a == b if type(operator) is cst.Equal or a is None or b is None else None
    if type(operator) in (cst.IsNot, cst.NotEqual):
        return a != b if type(operator) is cst.NotEqual or a is None or b is None else None
    compare = _ORDERED.get(type(operator))
    if compare is None or type(a) is not type(b) or a is None:
        return None
    try:
        return bool(compare(a, b))
    except TypeError:
        return None
