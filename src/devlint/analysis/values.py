"""Abstract values: what an expression is (its kind) and where its tensors live (its placement).

The analysis never needs concrete data, only these two facts and where they came from, so a
value is small, immutable and cheap to copy between the branches of a flow-sensitive walk.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst


class Kind(enum.Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"
    MODULE = "module"
    BATCH = "batch"  # an element of a DataLoader / Dataset whose structure is not known
    LOADER = "loader"
    DATASET = "dataset"
    TOKENIZER = "tokenizer"
    ENCODING = "encoding"  # BatchEncoding: a dict of tensors with its own `.to`
    OPTIMIZER = "optimizer"
    DEVICE = "device"
    DTYPE = "dtype"
    NDARRAY = "ndarray"
    LIST = "list"
    TUPLE = "tuple"
    DICT = "dict"
    SCALAR = "scalar"  # a Python number (or a 0-dim tensor's .item())
    STR = "str"
    NONE = "none"
    FUNCTION = "function"  # a function or lambda of the analysed program
    CLASS = "class"  # a class of the analysed program
    OBJECT = "object"  # an instance of a plain class of the analysed program
    REF = "ref"  # an imported name, e.g. `torch.nn.Linear`
    ACCELERATOR = "accelerator"


# kinds whose values hold tensors that can meet others in an operation
TENSORISH = frozenset({Kind.TENSOR, Kind.BATCH, Kind.ENCODING})
CONTAINERS = frozenset({Kind.LIST, Kind.TUPLE, Kind.DICT})


class Where(enum.Enum):
    HOST = "host"
    DEVICE = "device"
    COND = "cond"  # on the host on some paths, on a device on the others
    UNKNOWN = "unknown"
    NONE = "none"  # holds no tensors at all (a loss without weights, ReLU)


@dataclass(frozen=True)
class Placement:
    where: Where
    device: str = ""  # the device expression as written, e.g. "device", "cuda:1"
    node: "cst.CSTNode | None" = field(default=None, compare=False)  # where it was moved
    cond: str = ""  # for COND: the condition under which the value is on the device
    # which device the expression names, normalised (analysis/devices.py): "cuda", "cuda:1",
    # "cuda:{rank}", "cuda|cpu" (with a CPU fallback), "=args.device" (opaque), "" (not known)
    ident: str = ""

    @property
    def on_host(self) -> bool:
        return self.where is Where.HOST

    @property
    def on_device(self) -> bool:
        return self.where is Where.DEVICE

    @property
    def known(self) -> bool:
        return self.where in (Where.HOST, Where.DEVICE, Where.COND)


HOST = Placement(Where.HOST)
UNKNOWN_PLACE = Placement(Where.UNKNOWN)
NO_TENSORS = Placement(Where.NONE)


def device_at(expr: str, node: "cst.CSTNode | None" = None, ident: str = "") -> Placement:
    return Placement(Where.DEVICE, expr, node, ident=ident)


@dataclass(frozen=True)
class Origin:
    """Why a value is where it is: what rules need to name the bug and point at it."""

    category: str  # see ORIGIN_* below
    node: "cst.CSTNode | None" = field(default=None, compare=False)
    description: str = ""
    name: str = ""  # the variable the value was first bound to, for messages


# Origin categories (the vocabulary shared by the analysis and the rules).
ORIGIN_BATCH = "batch"  # a DataLoader / Dataset element or one of its fields
ORIGIN_DATA = "data"  # torch.tensor / from_numpy / as_tensor of host data
ORIGIN_TOKENIZER = "tokenizer"  # tokenizer output with return_tensors="pt"
ORIGIN_FACTORY = "factory"  # torch.zeros & co. without device=
ORIGIN_MODULE = "module"  # a module constructed (or loaded) and never moved
ORIGIN_ATTRIBUTE = "attribute"  # a plain tensor attribute of a module
ORIGIN_OUTSIDE_TREE = "outside-tree"  # a module that a parent's .to() does not reach
ORIGIN_AFTER_MOVE = "after-move"  # a submodule / parameter assigned after the parent moved
ORIGIN_OPTIMIZER_STATE = "optimizer-state"
ORIGIN_OTHER = "other"


_obj_ids = itertools.count(1)


def new_obj_id() -> int:
    return next(_obj_ids)


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    place: Placement = UNKNOWN_PLACE
    origin: Origin | None = None
    # containers, batches, objects and modules: named / indexed parts
    fields: tuple[tuple[object, "Value"], ...] = ()
    # the element when iterating or indexing with an unknown key
    elem: "Value | None" = None
    # identity of a mutable object (module, object), to follow in-place changes to aliases
    obj: int = 0
    # canonical dotted name for REF values, class / function name for locals
    qual: str = ""
    # free-form facts: zero_dim, registered, weights, dispatched, managed, ...
    facts: frozenset[str] = frozenset()
    # the syntax node for FUNCTION / CLASS values
    node: "cst.CSTNode | None" = field(default=None, compare=False)

    # The analysis memoises calls by their arguments' values, so a Value is hashed over and
    # over, and the generated __hash__ walks every part each time. Values never change, so the
    # hash is kept on the instance (copies made by `_copy_value` drop it; pickles leave it out).
    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.kind, self.place, self.origin, self.fields, self.elem, self.obj, self.qual,
                           self.facts))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state

    def evolve(self, **changes: object) -> "Value":
        """`dataclasses.replace` without its per-call field introspection, on the analysis' hot
        paths (Value has no __post_init__ to run, so a copy of its attributes is the same object)."""
        copy = object.__new__(Value)
        attributes = copy.__dict__
        attributes.update(self.__dict__)
        attributes.update(changes)
        attributes.pop("_hash", None)  # the copy differs: its hash is computed anew
        return copy

    # --- small helpers -------------------------------------------------------------
    def has(self, fact: str) -> bool:
        return fact in self.facts

    def with_facts(self, *add: str, remove: Iterable[str] = ()) -> "Value":
        return self.evolve(facts=(self.facts - frozenset(remove)) | frozenset(add))

    def at(self, place: Placement) -> "Value":
        return self.evolve(place=place)

    def get_field(self, key: object) -> "Value | None":
        for k, v in self.fields:
            if k == key:
                return v
        return None

    def set_field(self, key: object, value: "Value") -> "Value":
        fields = [(k, v) for k, v in self.fields if k != key]
        fields.append((key, value))
        return self.evolve(fields=tuple(fields))

    def named(self, name: str) -> "Value":
        """Remember the variable a value was first bound to (for messages)."""
        if self.origin is not None and not self.origin.name and name:
            return self.evolve(origin=replace(self.origin, name=name))
        return self

    @property
    def is_zero_dim(self) -> bool:
        return "zero_dim" in self.facts

    @property
    def label(self) -> str:
        if self.origin is not None and self.origin.name:
            return self.origin.name
        return ""


UNKNOWN = Value()
NONE_VALUE = Value(Kind.NONE, NO_TENSORS)
SCALAR = Value(Kind.SCALAR, NO_TENSORS)
STR = Value(Kind.STR, NO_TENSORS)


def join_places(a: Placement, b: Placement, cond: str | None) -> Placement:
    """Join two placements from two paths.

    `cond` is the branch condition (true on the path of `a`) when the join closes an `if`;
    None for loops and exception handlers, where a difference is doubt, not evidence.
    """
    if a == b:
        return a
    if a.where is Where.NONE:
        return b
    if b.where is Where.NONE:
        return a
    if cond is not None:
        pair = {a.where, b.where}
        if pair == {Where.HOST, Where.DEVICE}:
            dev = a if a.on_device else b
            condition = cond if a.on_device else f"not ({cond})"
            return Placement(Where.COND, dev.device, dev.node, condition, ident=dev.ident)
        if pair == {Where.DEVICE} and a.where is Where.DEVICE:
            return a  # both on a device (expressions may differ; DEV111's business)
        if Where.COND in pair and pair <= {Where.COND, Where.DEVICE, Where.HOST}:
            return a if a.where is Where.COND else b
    if a.where is Where.DEVICE and b.where is Where.DEVICE:
        return a
    return UNKNOWN_PLACE


def join(a: "Value | None", b: "Value | None", cond: str | None = None) -> Value:
    """Join two values that reach the same point on different paths."""
    if a is None:
        return b if b is not None else UNKNOWN
    if b is None:
        return a
    if a == b:
        return a
    place = join_places(a.place, b.place, cond)
    if _deviceish(a) and _deviceish(b):
        return _join_devices(a, b, place)
    if a.kind is not b.kind:
        if a.kind is Kind.NONE:
            return b
        if b.kind is Kind.NONE:
            return a
        return Value(Kind.UNKNOWN, UNKNOWN_PLACE)
    fields: tuple = ()
    if a.fields or b.fields:
        keys = [k for k, _ in a.fields] + [k for k, _ in b.fields if a.get_field(k) is None]
        merged = []
        for k in keys:
            fa, fb = a.get_field(k), b.get_field(k)
            if (fa is None or fb is None) and a.kind in (Kind.OBJECT, Kind.MODULE) and a.obj and a.obj == b.obj:
                # an attribute the object gets on one path only (`if/elif` choosing how to build
                # `self.model`): on the other path reading it raises, so the value is the one path's
                merged.append((k, fa if fa is not None else fb))
                continue
            if fa is None or fb is None:
                continue  # a field known on one path only is not known
            merged.append((k, join(fa, fb, cond)))
        fields = tuple(merged)
    elem = None
    if a.elem is not None and b.elem is not None:
        elem = join(a.elem, b.elem, cond)
    elif a.kind in (Kind.LIST, Kind.DICT) and (a.elem is None and not a.fields or b.elem is None and not b.fields):
        # an empty container on one path (`self.layers = []` before a loop that appends):
        # whatever it holds came from the other path
        elem = a.elem if a.elem is not None else b.elem
    origin = a.origin if (a.place.where is not Where.DEVICE or a.origin) else b.origin
    if b.place.where in (Where.HOST,) and a.place.where is Where.DEVICE:
        origin = b.origin
    return Value(
        kind=a.kind,
        place=place,
        origin=origin,
        fields=fields,
        elem=elem,
        obj=a.obj if a.obj == b.obj else 0,
        qual=a.qual if a.qual == b.qual else "",
        facts=a.facts & b.facts,
        node=a.node if a.node is b.node else None,
    )


def _deviceish(value: Value) -> bool:
    return value.kind is Kind.DEVICE or "device_str" in value.facts


def _join_devices(a: Value, b: Value, place: Placement) -> Value:
    """Two device values (`torch.device` or a device string) from two paths.

    A GPU on one path and the CPU on the other is a run-time choice with a CPU fallback
    (`if torch.cuda.is_available(): device = "cuda" else: device = "cpu"`): the joined
    placement keeps the GPU side's identity, marked as falling back to the CPU.
    """
    from devlint.analysis import devices

    facts = a.facts & b.facts
    if place.where is Where.COND or (a.has("cpu_fallback") or b.has("cpu_fallback")) and place.known:
        place = replace(place, ident=devices.with_fallback(place.ident, place.cond or None))
        facts = facts | {"cpu_fallback"}
    kind = a.kind if a.kind is b.kind else Kind.DEVICE
    return Value(kind, place, a.origin or b.origin, facts=facts)
