"""Where values are when paths join, and where the result of an operation lives.

The join is the heart of the analysis' precision: a value moved on one branch only is "on the
host when ..." (evidence, `Where.COND`), while two paths of a loop or an exception handler that
disagree make it unknown (doubt, silence).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Iterable

from devlint.analysis import conditions, devices
from devlint.analysis.conditions import ALWAYS, Condition, Literal, Split
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    NO_TENSORS,
    TENSORISH,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Placement,
    Value,
    Where,
    device_at,
    joint_identity,
)
from devlint.analysis.vocabulary import Fact

_INDEXED_DEVICE = re.compile(r"(cuda|xpu|npu|mps|hpu):\d+")
_DEVICE_TYPES = frozenset({"cuda", "mps", "xpu", "npu", "hpu", "xla", "meta"})


MAX_ALTERNATIVES = 8  # a placement with more paths than this is not kept (unknown)


def alternatives(place: Placement) -> tuple[tuple[Condition, Placement], ...]:
    """Where the value is on each path: (condition, placement) pairs, none of them COND."""
    if place.paths:
        return place.paths
    return ((ALWAYS, place),)


def conditional(paths: Iterable[tuple[Condition, Placement]]) -> Placement:
    """The placement of a value that is where `paths` says on each path. Paths that agree
    collapse: a value on the same device on every path is simply there."""
    kept = [(c, p) for c, p in paths if p.where is not Where.NONE]
    if not kept:
        return NO_TENSORS
    if len(kept) > MAX_ALTERNATIVES:
        return UNKNOWN_PLACE
    first = kept[0][1]
    if all(p.where is first.where and p.ident == first.ident and p.device == first.device for _, p in kept):
        return first
    if all(p.where is Where.DEVICE for _, p in kept):
        # on a device on every path, by different device expressions (DEV111 compares them)
        return replace(first, paths=tuple(kept))
    if all(p.where is Where.UNKNOWN for _, p in kept):
        return UNKNOWN_PLACE
    device = next(((c, p) for c, p in kept if p.where is Where.DEVICE), None)
    if device is None:
        return Placement(Where.COND, paths=tuple(kept))
    condition, place = device
    return Placement(Where.COND, place.device, place.node, conditions.text(condition), place.ident, tuple(kept))


def specialize(value: Value, given: Condition, depth: int = 0) -> Value:
    """`value` as one call of the function that made it returns it: the paths whose tests
    cannot hold for the arguments of this call (`if gpu_id != -1:` in `load(0)`) are gone."""
    place = value.place
    if place.paths:
        kept = [(c, p) for c, p in place.paths if conditions.compatible(c, given)]
        if len(kept) < len(place.paths):
            value = value.at(conditional(kept) if kept else UNKNOWN_PLACE)
    if depth < 3 and (value.fields or value.elem is not None):
        fields = tuple((k, specialize(f, given, depth + 1)) for k, f in value.fields)
        elem = specialize(value.elem, given, depth + 1) if value.elem is not None else None
        if elem is not value.elem or any(f is not old for (_, f), (_, old) in zip(fields, value.fields)):
            value = value.evolve(fields=fields, elem=elem)
    return value


def on_a_gpu(place: Placement) -> bool:
    """On a device on every path of a machine that has a GPU (the CPU only as the fallback)."""
    paths = [p for c, p in alternatives(place) if not conditions.on_cpu_machine(c)]
    return bool(paths) and all(p.on_device for p in paths)


def join_places(a: Placement, b: Placement, cond: Literal | Split | None) -> Placement:
    """Join two placements from two paths.

    `cond` is the literal of the branch condition (true on the path of `a`) when the join
    closes an `if`, or what holds on each path (`conditions.Split`: `a or b` failing says that
    both failed); None for loops and exception handlers, where a difference is doubt, not
    evidence."""
    if a == b:
        return a
    if a.where is Where.NONE:
        return b
    if b.where is Where.NONE:
        return a
    if cond is not None:
        paths = []
        for holds, place in zip(conditions.split(cond), (a, b)):
            for condition, alternative in alternatives(place):
                joined = conditions.extend(condition, holds)
                if joined is not None:
                    paths.append((joined, alternative))
        return conditional(paths)
    if a.where is Where.DEVICE and b.where is Where.DEVICE:
        return a
    return UNKNOWN_PLACE


def join(a: "Value | None", b: "Value | None", cond: Literal | Split | None = None) -> Value:
    """Join two values that reach the same point on different paths."""
    if a is None:
        return b if b is not None else UNKNOWN
    if b is None:
        return a
    if a == b:
        return a
    if a.has(Fact.MAY_HOLD) or b.has(Fact.MAY_HOLD):
        return union(a, b)
    place = join_places(a.place, b.place, cond)
    if is_deviceish(a) and is_deviceish(b):
        return _join_devices(a, b, place)
    if a.kind in _CALLABLES and b.kind in _CALLABLES:
        return _choice(a, b, place)
    if a.kind is not b.kind:
        if a.kind is Kind.NONE:
            return b
        if b.kind is Kind.NONE:
            return a
        return Value(Kind.UNKNOWN, UNKNOWN_PLACE)
    fields: tuple = ()
    if a.fields or b.fields:
        # each side's fields by key, the first of a key as get_field finds it (a module's fields
        # are many, and looking each key up in both tuples made a join quadratic in them)
        field_of_a: Callable[[object], Value | None]
        field_of_b: Callable[[object], Value | None]
        try:
            field_of_a, field_of_b = _by_key(a.fields).get, _by_key(b.fields).get
        except TypeError:  # a key that cannot be hashed
            field_of_a, field_of_b = a.get_field, b.get_field
        keys = [k for k, _ in a.fields] + [k for k, _ in b.fields if field_of_a(k) is None]
        merged = []
        for k in keys:
            fa, fb = field_of_a(k), field_of_b(k)
            if (fa is None or fb is None) and a.kind in (Kind.OBJECT, Kind.MODULE) and a.identity \
                    and a.identity == b.identity:
                # an attribute the object gets on one path only (`if/elif` choosing how to build
                # `self.model`): on the other path reading it raises, so the value is the one path's
                merged.append((k, fa if fa is not None else fb))
                continue
            if (fa is None or fb is None) and a.kind is Kind.DICT and isinstance(k, str):
                # `criterion["mel"] = MelLoss()` under `if config["use_mel"]:`: reading the key
                # on the other path raises KeyError, so wherever it is read it is the one path's
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
    elif a.kind is Kind.LIST and (a.elem is not None or b.elem is not None):
        # `[h]` on one path, grown by appends on another: it may hold any of their members
        for side in (a, b):
            for _, member in side.fields:
                elem = union(elem, member)
            if side.elem is not None:
                elem = union(elem, side.elem)
    origin = a.origin if (a.place.where is not Where.DEVICE or a.origin) else b.origin
    if b.place.where in (Where.HOST,) and a.place.where is Where.DEVICE:
        origin = b.origin
    return Value(
        kind=a.kind,
        place=place,
        origin=origin,
        fields=fields,
        elem=elem,
        identity=a.identity if a.identity == b.identity else _wrapper_identity(a, b) or _joint(a, b),
        qualname=a.qualname if a.qualname == b.qualname else "",
        facts=_joined_facts(a, b),
        node=a.node if a.node is b.node else None,
    )


def _joined_facts(a: Value, b: Value) -> frozenset[str]:
    """Facts both paths share, and those one path is enough for (a framework or hooks may place
    the inputs); a model dispatched on one path only is marked so."""
    facts = (a.facts & b.facts) | ((a.facts | b.facts) & _TOLERANT)
    if (Fact.DISPATCHED in a.facts) != (Fact.DISPATCHED in b.facts):
        facts = facts | {Fact.PARTLY_DISPATCHED}
    return facts


def _by_key(fields: tuple) -> dict:
    found: dict = {}
    for key, value in fields:
        found.setdefault(key, value)
    return found


def _wrapper_identity(a: Value, b: Value) -> int:
    """`if ...: model = nn.DataParallel(model)`: the name holds the wrapper or the model it
    wraps. The join keeps the wrapper's identity, so a later `model.to(...)` is known to move
    the model that may be wrapped (rules/dataparallel_device.py)."""
    for outer, inner in ((a, b), (b, a)):
        wrapped = outer.get_field("module") if outer.has(Fact.SCATTERS) else None
        if wrapped is not None and (wrapped.identity == inner.identity if inner.identity else wrapped == inner):
            return outer.identity
    return 0


def _joint(a: Value, b: Value) -> int:
    """Two modules or two optimizers built on two paths (`if resume: ... else: ...`): the name
    holds one of them, and a later move or state load changes the one it holds."""
    if a.kind in _JOINT_KINDS and a.kind is b.kind:
        return joint_identity(a.identity, b.identity)
    return 0


_JOINT_KINDS = frozenset({Kind.MODULE, Kind.OPTIMIZER})
_CALLABLES = frozenset({Kind.REF, Kind.FUNCTION, Kind.CLASS})
# facts that say someone else places a value's inputs or the value itself (DataParallel,
# accelerate's hooks, a framework): kept when one path has them, since a meet must not be
# claimed on a path where the value tolerates it
_TOLERANT = frozenset({Fact.SCATTERS, Fact.MANAGED, Fact.DISPATCHED, Fact.PARTLY_DISPATCHED})
_MAX_CANDIDATES = 8


def _choice(a: Value, b: Value, place: Placement) -> Value:
    """One of several callables (`model_class = T5...from_pretrained` on one branch,
    `Bart...from_pretrained` on another; a registry `MODELS[name]`): calling it calls one of
    them (analysis/calls.py), so what the candidates share is kept."""
    candidates: list[Value] = []
    for side in (a, b):
        for candidate in ([f for _, f in side.fields] if side.has(Fact.ONE_OF) else [side]):
            if candidate not in candidates:
                candidates.append(candidate)
    if len(candidates) > _MAX_CANDIDATES:
        return Value(Kind.UNKNOWN, UNKNOWN_PLACE)
    kind = a.kind if a.kind is b.kind else Kind.UNKNOWN
    return Value(kind, place, fields=tuple(("one of", c) for c in candidates),
                 facts=(a.facts & b.facts) | {Fact.ONE_OF})


_MAX_MEMBERS = 6


def members(value: Value) -> list[Value]:
    """The values a list member may be (analysis/placement.py `union`)."""
    return [m for _, m in value.fields] if value.has(Fact.MAY_HOLD) else [value]


def union(a: "Value | None", b: Value) -> Value:
    """A member of a list that may hold `a` or `b` (`rows.append(x)` in a loop, `out[i] = y`):
    members stay apart, so that a host-only sink or a combiner sees each of them."""
    found: list[Value] = []
    for member in (members(a) if a is not None else []) + members(b):
        if member not in found:
            found.append(member)
    if len(found) == 1:
        return found[0]
    if len(found) > _MAX_MEMBERS:
        joined = found[0]
        for member in found[1:]:
            joined = join(joined.with_facts(remove=(Fact.MAY_HOLD,)), member)
        return joined
    kind = found[0].kind if all(m.kind is found[0].kind for m in found) else Kind.UNKNOWN
    place = found[0].place
    for member in found[1:]:
        place = join_places(place, member.place, None)
    return Value(kind, place, fields=tuple(("member", m) for m in found), facts=frozenset({Fact.MAY_HOLD}))


def is_deviceish(value: Value) -> bool:
    """A `torch.device` or a device string."""
    return value.kind is Kind.DEVICE or Fact.DEVICE_STR in value.facts


def _join_devices(a: Value, b: Value, place: Placement) -> Value:
    """Two device values (`torch.device` or a device string) from two paths.

    A GPU on one path and the CPU on the other is a run-time choice with a CPU fallback
    (`if torch.cuda.is_available(): device = "cuda" else: device = "cpu"`): the joined
    placement keeps the GPU side's identity, marked as falling back to the CPU.
    """
    facts = a.facts & b.facts
    if place.where is Where.COND or (a.has(Fact.CPU_FALLBACK) or b.has(Fact.CPU_FALLBACK)) and place.known:
        place = replace(place, ident=devices.with_fallback(place.ident, place.cond or None))
        facts = facts | {Fact.CPU_FALLBACK}
    kind = a.kind if a.kind is b.kind else Kind.DEVICE
    return Value(kind, place, a.origin or b.origin, facts=facts)


def grown_list(empty: Value, grown: Value) -> bool:
    """`empty` is an empty list literal and `grown` the same list after appends on another path."""
    return (empty.kind is Kind.LIST and empty.has(Fact.EMPTY) and empty.elem is None and not empty.fields
            and grown.kind is Kind.LIST and grown.elem is not None and not grown.fields)


def device_string_place(text: str, node: object = None) -> Placement | None:
    """Placement named by a device string such as "cuda:1" or "cpu"; None for other strings."""
    t = text.strip().lower()
    if t == "cpu" or t.startswith("cpu:"):
        return HOST
    if t in _DEVICE_TYPES or (":" in t and _INDEXED_DEVICE.fullmatch(t)):
        return device_at(text.strip(), node, devices.from_string(t))  # type: ignore[arg-type]
    return None


def container_place(values: Iterable[Value]) -> Placement:
    """Where a list / tuple / dict display's tensors and modules are, together."""
    place = NO_TENSORS
    for v in values:
        if v.kind in (Kind.TENSOR, Kind.MODULE) or v.kind in CONTAINERS:
            place = v.place if place.where is Where.NONE else join(Value(Kind.TENSOR, place),
                                                                   Value(Kind.TENSOR, v.place)).place
    return place


def tensor_result(operands: list[Value], zero_dim: bool = False) -> Value:
    """The placement of an operation's result: the device wins (the op ran there)."""
    device = next((v for v in operands if v.place.on_device), None)
    if device is not None:
        return Value(Kind.TENSOR, device.place, device.origin)
    known = [v for v in operands if v.place.known]
    if len(known) == len(operands) and operands:
        cond = next((v for v in operands if v.place.where is Where.COND), None)
        if cond is not None and sum(v.place.where is Where.COND for v in operands) > 1:
            return Value(Kind.TENSOR, combined_place([v.place for v in operands]), cond.origin)
        base = cond if cond is not None else next((v for v in operands if not v.is_zero_dim), operands[0])
        value = Value(Kind.TENSOR, base.place, base.origin)
        return value.with_facts(Fact.ZERO_DIM) if zero_dim else value
    return Value(Kind.TENSOR, UNKNOWN_PLACE)


def combined_place(places: list[Placement]) -> Placement:
    """Where the result of an operation on values placed by `places` is, path by path: on a
    device where any operand is, on the host where all are."""
    combinations: list[tuple[Condition, list[Placement]]] = [(ALWAYS, [])]
    for place in places:
        grown = []
        for condition, chosen in combinations:
            for alt_condition, alternative in alternatives(place):
                joined = conditions.conjoin(condition, alt_condition)
                if joined is not None:
                    grown.append((joined, chosen + [alternative]))
        combinations = grown
        if len(combinations) > MAX_ALTERNATIVES:
            return UNKNOWN_PLACE
    paths = []
    for condition, chosen in combinations:
        device = next((p for p in chosen if p.where is Where.DEVICE), None)
        if device is not None:
            paths.append((condition, device))
        elif all(p.where is Where.HOST for p in chosen):
            paths.append((condition, chosen[0]))
        else:
            paths.append((condition, UNKNOWN_PLACE))
    return conditional(paths)


def is_tensor_operand(value: Value) -> bool:
    """A value that takes part in a tensor operation: a tensor, a batch, or a value of unknown
    kind known to be somewhere."""
    if value.kind in TENSORISH:
        return True
    return value.kind is Kind.UNKNOWN and value.place.where in (Where.DEVICE, Where.HOST, Where.COND)

