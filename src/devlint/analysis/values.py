"""Abstract values: what an expression is (its kind) and where its tensors live (its placement).

The analysis never needs concrete data, only these two facts and where they came from, so a
value is small, immutable and cheap to copy between the branches of a flow-sensitive walk.
How two values from two paths combine is `analysis/placement.py`; the named facts a value can
carry are `analysis/vocabulary.py`.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst


class Kind(enum.Enum):
    # members are singletons compared by identity: hash them so too (Enum's own __hash__ is a
    # Python function, and `value.kind in KINDS` runs it half a million times on timm)
    __hash__ = object.__hash__

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
# kinds that are never a tensor (what `hasattr(x, "cpu")` or `isinstance(x, torch.Tensor)` rules out)
NOT_TENSORS = frozenset({Kind.NDARRAY, Kind.LIST, Kind.TUPLE, Kind.DICT, Kind.SCALAR, Kind.STR, Kind.NONE})


class Where(enum.Enum):
    __hash__ = object.__hash__  # as Kind's

    HOST = "host"
    DEVICE = "device"
    COND = "cond"  # where it is depends on the path (`Placement.paths`)
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
    # where the value is on each path, when that depends on the path: (condition, placement)
    # pairs (analysis/conditions.py, analysis/placement.py `conditional`); `device`, `node`,
    # `cond` and `ident` then describe the first device alternative
    paths: tuple = ()

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
# library mode: the one device a library's caller puts its inputs and the module on (a GPU
# when the library runs on one; nothing in the library itself says which)
CALLER_IDENT = "=caller"
CALLER = Placement(Where.DEVICE, "the caller's device", ident=CALLER_IDENT)


def device_at(expr: str, node: "cst.CSTNode | None" = None, ident: str = "") -> Placement:
    return Placement(Where.DEVICE, expr, node, ident=ident)


@dataclass(frozen=True)
class Origin:
    """Why a value is where it is: what rules need to name the bug and point at it."""

    category: str  # see ORIGIN_* below
    node: "cst.CSTNode | None" = field(default=None, compare=False)
    description: str = ""
    name: str = ""  # the variable the value was first bound to, for messages
    # for a value computed by an unmoved module: where that module was built
    cause: "cst.CSTNode | None" = field(default=None, compare=False)


# Origin categories (the vocabulary shared by the analysis and the rules).
ORIGIN_BATCH = "batch"  # a DataLoader / Dataset element or one of its fields
ORIGIN_DATA = "data"  # torch.tensor / from_numpy / as_tensor of host data
ORIGIN_TOKENIZER = "tokenizer"  # tokenizer output with return_tensors="pt"
ORIGIN_FACTORY = "factory"  # torch.zeros & co. without device=
ORIGIN_MODULE = "module"  # a module constructed (or loaded) and never moved
ORIGIN_ATTRIBUTE = "attribute"  # a plain tensor attribute of a module
ORIGIN_OUTSIDE_TREE = "outside-tree"  # a module that a parent's .to() does not reach
ORIGIN_AFTER_MOVE = "after-move"  # a submodule / parameter assigned after the parent moved
ORIGIN_COMPUTED = "computed"  # the output of a module that runs on the CPU (it was never moved)
ORIGIN_OTHER = "other"
# a value that holds no tensor of its own (a NumPy array, a tokenizer), built here: no rule
# decides anything on it, the evidence of a finding about the value points at it
ORIGIN_MADE = "made"


_identities = itertools.count(1)


def new_identity() -> int:
    """A fresh identity for a mutable object (a module, an instance, a loader)."""
    return next(_identities)


# joint identities: "one of these objects", for a name that holds a different object on each
# path (`if resume: model = Net() ... else: model = Net()`). An in-place change of the joint
# object (a move, a head replacement, a state load) is a change of the one object the path
# holds; rules that match objects read both sides through `identities_of`. The same members
# always give the same joint identity, so joins inside loops still reach their fixed point.
_JOINT_BY_MEMBERS: dict[frozenset[int], int] = {}
_JOINT_MEMBERS: dict[int, frozenset[int]] = {}
_MAX_JOINT_MEMBERS = 8


def identities_of(identity: int) -> frozenset[int]:
    """The objects `identity` may be: its members for a joint identity, else itself (none for 0)."""
    if not identity:
        return frozenset()
    return _JOINT_MEMBERS.get(identity) or frozenset((identity,))


def joint_identity(a: int, b: int) -> int:
    """The identity of "the object `a` or the object `b`" (0 when either is unknown, or for a
    join of too many objects)."""
    if not a or not b:
        return 0
    members = identities_of(a) | identities_of(b)
    if len(members) > _MAX_JOINT_MEMBERS:
        return 0
    joint = _JOINT_BY_MEMBERS.get(members)
    if joint is None:
        joint = _JOINT_BY_MEMBERS[members] = new_identity()
        _JOINT_MEMBERS[joint] = members
    return joint


@dataclass(frozen=True)
class Value:
    kind: Kind = Kind.UNKNOWN
    place: Placement = UNKNOWN_PLACE
    origin: Origin | None = None
    # containers, batches, objects and modules: named / indexed parts
    fields: tuple[tuple[object, "Value"], ...] = ()
    # the element when iterating or indexing with an unknown key
    elem: "Value | None" = None
    # identity of a mutable object (module, object), to follow in-place changes to aliases;
    # 0 for values that are not one object (a tensor, a number)
    identity: int = 0
    # canonical dotted name for REF values, class / function name for locals
    qualname: str = ""
    # named facts (analysis/vocabulary.py): zero_dim, registered, weights, dispatched, managed, ...
    facts: frozenset[str] = frozenset()
    # the syntax node for FUNCTION / CLASS values
    node: "cst.CSTNode | None" = field(default=None, compare=False)

    # The analysis memoises calls by their arguments' values, so a Value is hashed over and
    # over, and the generated __hash__ walks every part each time. Values never change, so the
    # hash is kept on the instance (copies made by `evolve` drop it; pickles leave it out).
    def __hash__(self) -> int:
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash((self.kind, self.place, self.origin, self.fields, self.elem, self.identity,
                           self.qualname, self.facts))
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


def array(node: "cst.CSTNode | None", like: Value | None = None) -> Value:
    """A NumPy array made at `node`, or computed from the array `like` (where it was made is
    kept for the evidence of findings: one reference, nothing computed)."""
    if like is not None and like.origin is not None:
        return Value(Kind.NDARRAY, HOST, like.origin)
    return Value(Kind.NDARRAY, HOST, Origin(ORIGIN_MADE, node) if node is not None else None)

def holds_only_host(value: Value) -> bool:
    """The value holds tensors on the host only, or none at all (strings, numbers, containers
    of those): saved, it loads on any machine (DEV201)."""
    if value.place.on_host or value.kind in (Kind.STR, Kind.SCALAR, Kind.NONE):
        return True
    if value.kind in CONTAINERS:
        parts = [part for _, part in value.fields] + ([value.elem] if value.elem is not None else [])
        return bool(parts) and all(holds_only_host(part) for part in parts)
    return False


@lru_cache(maxsize=1 << 16)  # values never change, and every use of a name asks for it again
def ref(qualname: str) -> Value:
    """An imported name (`torch.nn.Linear`), as the import table resolves it: one value per name."""
    return Value(Kind.REF, NO_TENSORS, qualname=qualname)
