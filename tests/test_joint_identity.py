"""Joint identities: a name that holds a different module (or optimizer) on each path holds
"one of them", so an in-place change after the join reaches the object each path holds."""

from __future__ import annotations

from devlint.analysis.placement import join
from devlint.analysis.values import HOST, Kind, Value, identities_of, new_identity


def _module() -> Value:
    return Value(Kind.MODULE, HOST, identity=new_identity())


def test_two_modules_join_to_one_of_them() -> None:
    a, b = _module(), _module()
    joined = join(a, b)
    assert joined.identity not in (0, a.identity, b.identity)
    assert identities_of(joined.identity) == {a.identity, b.identity}
    assert identities_of(a.identity) == {a.identity}
    assert identities_of(0) == frozenset()


def test_the_same_members_give_the_same_joint_identity() -> None:
    # a loop joins its entry with each pass: the fixed point needs a stable identity
    a, b, c = _module(), _module(), _module()
    joined = join(a, b)
    assert join(b, a).identity == joined.identity
    assert join(joined, a).identity == joined.identity
    wider = join(joined, c)
    assert identities_of(wider.identity) == {a.identity, b.identity, c.identity}


def test_objects_of_other_kinds_or_unknown_identity_are_not_joined() -> None:
    a = _module()
    assert join(a, Value(Kind.MODULE, HOST)).identity == 0
    one, other = Value(Kind.OBJECT, HOST, identity=new_identity()), Value(Kind.OBJECT, HOST, identity=new_identity())
    assert join(one, other).identity == 0
