"""Object identity and aliasing: in-place changes reach every name that holds the object.

Modules, instances and loaders are mutable objects with an identity (`Value.identity`).
`model.to(device)` moves the model in place, so every variable, attribute and container that
holds the same object must see the moved value: `rebind` replaces each alias. Memoised calls
speak of the first call's objects; `fresh_objects` renames them for a later call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from devlint.analysis.values import Value, new_identity

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.shared import Frame

# how deep `rebind` looks into a value for the object (its walk compares identities at depths
# 0-4 and enters parts at depths 0-3)
_REBIND_DEPTH = 3


class AliasIndex:
    """Which objects each long-lived module-level value holds, so that `rebind` can pass over
    values that cannot hold the rebound object without walking them (a big `default_cfgs = {...}`
    outlives many rebinds)."""

    def __init__(self) -> None:
        self._reach: dict[int, tuple[Value, set[int]]] = {}

    def may_hold(self, value: Value, identity: int) -> bool:
        known = self._reach.get(id(value))
        if known is None or known[0] is not value:
            if len(self._reach) > 4096:
                self._reach.clear()
            known = self._reach[id(value)] = (value, objects_within(value))
        return identity in known[1]


def rebind(frame: "Frame", identity: int, new: Value, aliases: AliasIndex) -> None:
    """Replace every alias of the mutable object `identity` (an in-place change) with `new`, in
    the frame's variables and the globals of its module."""
    # hot (every `self.x = ...` rebinds the instance in every visible variable): leaves that
    # are not the object are passed over without a call, and nothing is rebuilt unless a
    # part changed
    def swap(v: Value, depth: int = 0) -> Value:
        if v.identity == identity:
            return new
        if depth > _REBIND_DEPTH:
            return v
        fields = v.fields
        changed: list[tuple[object, Value]] | None = None
        for index, pair in enumerate(fields):
            f = pair[1]
            if f.identity != identity and not f.fields and f.elem is None:
                continue
            nf = swap(f, depth + 1)
            if nf is not f:
                if changed is None:
                    changed = list(fields)
                changed[index] = (pair[0], nf)
        elem = v.elem
        if elem is not None and (elem.identity == identity or elem.fields or elem.elem is not None):
            elem = swap(elem, depth + 1)
        if changed is None and elem is v.elem:
            return v
        return v.evolve(fields=tuple(changed) if changed is not None else fields, elem=elem)

    module_env = frame.scope.env
    for env in (frame.env, module_env) if not frame.module_level else (frame.env,):
        updates = []
        for key, v in env.items():
            if v.identity != identity and not v.fields and v.elem is None:
                continue
            if env is module_env and v.identity != identity and not aliases.may_hold(v, identity):
                continue
            nv = swap(v)
            if nv is not v:
                updates.append((key, nv))
        for key, nv in updates:
            env[key] = nv


def objects_within(value: Value, depth: int = 0, found: set[int] | None = None) -> set[int]:
    """The mutable objects `rebind` can reach in `value`: its own and its parts' down to the depth
    its walk goes."""
    if found is None:
        found = set()
    if value.identity:
        found.add(value.identity)
    if depth <= _REBIND_DEPTH:
        for _, part in value.fields:
            objects_within(part, depth + 1, found)
        if value.elem is not None:
            objects_within(value.elem, depth + 1, found)
    return found


# how deep a memoised call's result is renewed: a model built by a cached constructor holds its
# blocks' lists and registrations six levels down (model -> module -> decoder -> head -> list ->
# members), and both must get the same new identities
_RENEW_DEPTH = 7


def fresh_objects(value: Value, renamed: dict[int, int], first_new: int) -> Value:
    """A memoised call speaks of the first call's arguments and builds new objects each
    time: map its arguments to this call's, and give the objects it made new identities."""
    mapping: dict[int, int] = dict(renamed)

    def renew(v: Value, depth: int = 0) -> Value:
        identity = v.identity
        if identity in mapping:
            identity = mapping[identity]
        elif identity >= first_new:
            identity = mapping.setdefault(identity, new_identity())
        if depth > _RENEW_DEPTH:
            return v.evolve(identity=identity) if identity != v.identity else v
        fields = tuple((k, renew(f, depth + 1)) for k, f in v.fields)
        elem = renew(v.elem, depth + 1) if v.elem is not None else None
        if identity == v.identity and fields == v.fields and elem is v.elem:
            return v
        return v.evolve(identity=identity, fields=fields, elem=elem)

    return renew(value)


def shape(value: Value, depth: int = 0) -> Value:
    """A value without object identities, as a memo key: two instances of one class that hold
    the same abstract state behave the same in a call."""
    if depth > 2 or not (value.identity or value.fields or value.elem is not None):
        return value
    return value.evolve(identity=0, fields=tuple((k, shape(f, depth + 1)) for k, f in value.fields),
                        elem=shape(value.elem, depth + 1) if value.elem is not None else None)
