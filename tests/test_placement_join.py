"""Joins of placements and values (analysis/placement.py), tested directly as mypy tests its
joins and meets: the join is where "on the host on some paths" (evidence) and "unknown"
(doubt, silence) are decided, so each rule of it is pinned here."""

from __future__ import annotations

from typing import Any

from devlint.analysis import placement
from devlint.analysis.conditions import ALWAYS, AVAILABLE
from devlint.analysis.placement import (
    alternatives,
    combined_place,
    conditional,
    container_place,
    grown_list,
    join,
    join_places,
    on_a_gpu,
    tensor_result,
    union,
)
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Placement,
    Value,
    Where,
    device_at,
)
from devlint.analysis.vocabulary import Fact

CUDA = device_at("device", ident="cuda")
CUDA1 = device_at("cuda:1", ident="cuda:1")
FLAG = ("args.cuda", True)
NOT_FLAG = ("args.cuda", False)


def tensor(place: Placement, **kw: Any) -> Value:
    return Value(Kind.TENSOR, place, **kw)


# --- placements -------------------------------------------------------------------------------

def test_equal_placements_join_to_themselves() -> None:
    assert join_places(CUDA, CUDA, FLAG) is CUDA
    assert join_places(HOST, HOST, None) is HOST


def test_no_tensors_is_the_bottom() -> None:
    assert join_places(NO_TENSORS, CUDA, FLAG) is CUDA
    assert join_places(HOST, NO_TENSORS, None) is HOST


def test_a_branch_that_moves_gives_a_conditional_placement() -> None:
    joined = join_places(CUDA, HOST, FLAG)  # `if args.cuda: x = x.to(device)`
    assert joined.where is Where.COND
    assert joined.ident == "cuda" and joined.device == "device"
    assert joined.cond == "args.cuda"  # the condition under which it is on the device
    assert dict(joined.paths) == {frozenset({FLAG}): CUDA, frozenset({NOT_FLAG}): HOST}


def test_the_branch_condition_is_true_on_the_first_side() -> None:
    joined = join_places(HOST, CUDA, FLAG)  # `if args.cuda: pass else: x = x.cuda()`
    assert dict(joined.paths) == {frozenset({FLAG}): HOST, frozenset({NOT_FLAG}): CUDA}
    assert joined.cond == "not (args.cuda)"


def test_loops_and_handlers_make_a_difference_doubt() -> None:
    # no branch condition: a loop's second pass or an except handler
    assert join_places(CUDA, HOST, None) == UNKNOWN_PLACE
    assert join_places(HOST, UNKNOWN_PLACE, None) == UNKNOWN_PLACE
    # two devices stay a device (the first one's expression)
    assert join_places(CUDA, CUDA1, None) is CUDA


def test_devices_on_every_path_stay_a_device_with_their_paths() -> None:
    joined = join_places(CUDA, CUDA1, FLAG)
    assert joined.where is Where.DEVICE
    assert {p.ident for _, p in joined.paths} == {"cuda", "cuda:1"}


def test_unknown_on_every_path_is_unknown() -> None:
    assert join_places(UNKNOWN_PLACE, Placement(Where.UNKNOWN, "x"), FLAG) == UNKNOWN_PLACE


def test_nested_branches_conjoin_their_conditions() -> None:
    inner = join_places(CUDA, HOST, ("args.amp", True))
    outer = join_places(inner, HOST, FLAG)
    assert dict(outer.paths) == {
        frozenset({FLAG, ("args.amp", True)}): CUDA,
        frozenset({FLAG, ("args.amp", False)}): HOST,
        frozenset({NOT_FLAG}): HOST,
    }


def test_paths_that_cannot_hold_are_dropped() -> None:
    moved = join_places(CUDA, HOST, FLAG)  # `if args.cuda: x = x.cuda()`
    # then `if args.cuda: pass else: x = x.cuda()`: the host path of the first `if` is the
    # second's else path, so `x` is on the device on every path that can run
    assert join_places(moved, CUDA, FLAG) == CUDA
    # `if not args.cuda: pass else: x = x.cpu()`: the device path of the first `if` is the
    # second's else path, where it goes back: on the host on every path
    assert join_places(moved, HOST, NOT_FLAG) == HOST


def test_conditional_collapses_agreeing_paths_and_bounds_their_number() -> None:
    assert conditional([]) is NO_TENSORS
    assert conditional([(frozenset({FLAG}), HOST), (frozenset({NOT_FLAG}), HOST)]) is HOST
    many = [(frozenset({(f"f{i}", True)}), HOST if i % 2 else CUDA) for i in range(placement.MAX_ALTERNATIVES + 1)]
    assert conditional(many) == UNKNOWN_PLACE
    only_host_and_unknown = conditional([(frozenset({FLAG}), HOST), (frozenset({NOT_FLAG}), UNKNOWN_PLACE)])
    assert only_host_and_unknown.where is Where.COND and only_host_and_unknown.device == ""


def test_alternatives_and_on_a_gpu() -> None:
    assert alternatives(HOST) == ((ALWAYS, HOST),)
    available = (AVAILABLE["cuda"], True)
    fallback = join_places(CUDA, HOST, available)  # `"cuda" if torch.cuda.is_available() else "cpu"`
    assert on_a_gpu(fallback)  # the CPU only on the machine without a GPU
    assert not on_a_gpu(join_places(CUDA, HOST, FLAG))  # the CPU by a user's choice
    assert on_a_gpu(CUDA) and not on_a_gpu(HOST) and not on_a_gpu(UNKNOWN_PLACE)


# --- values -----------------------------------------------------------------------------------

def test_join_with_a_missing_side() -> None:
    value = tensor(CUDA)
    assert join(None, None) is UNKNOWN
    assert join(None, value) is value
    assert join(value, None) is value


def test_join_of_tensors_keeps_the_kind_and_joins_the_places() -> None:
    origin = Origin("factory", description="`torch.zeros(...)`")
    joined = join(tensor(CUDA), tensor(HOST, origin=origin), FLAG)
    assert joined.kind is Kind.TENSOR
    assert joined.place.where is Where.COND
    assert joined.origin == origin  # the host side names where the host value came from


def test_join_of_different_kinds() -> None:
    none = Value(Kind.NONE, NO_TENSORS)
    assert join(none, tensor(CUDA)) == tensor(CUDA)  # `x = None` before `x = ...`
    assert join(tensor(CUDA), none) == tensor(CUDA)
    mixed = join(tensor(CUDA), Value(Kind.MODULE, CUDA))
    assert mixed.kind is Kind.UNKNOWN and mixed.place == UNKNOWN_PLACE


def test_join_of_fields_keeps_only_what_both_paths_know() -> None:
    a = Value(Kind.BATCH, HOST, fields=(("x", tensor(CUDA)), ("y", tensor(HOST))))
    b = Value(Kind.BATCH, HOST, fields=(("x", tensor(HOST)),))
    joined = join(a, b, FLAG)
    assert [k for k, _ in joined.fields] == ["x"]
    assert joined.get_field("x") == join(tensor(CUDA), tensor(HOST), FLAG)


def test_an_attribute_set_on_one_path_of_the_same_object_is_that_path_s() -> None:
    a = Value(Kind.OBJECT, HOST, identity=7, fields=(("model", Value(Kind.MODULE, CUDA)),))
    b = Value(Kind.OBJECT, HOST, identity=7)
    assert join(a, b, FLAG).get_field("model") == Value(Kind.MODULE, CUDA)
    # different objects: not known
    assert join(a, b.evolve(identity=8), FLAG).get_field("model") is None


def test_facts_are_intersected_but_tolerance_is_kept() -> None:
    a = tensor(CUDA, facts=frozenset({Fact.REGISTERED, Fact.SCATTERS}))
    b = tensor(CUDA1, facts=frozenset({Fact.REGISTERED}))
    assert join(a, b, FLAG).facts == frozenset({Fact.REGISTERED, Fact.SCATTERS})
    assert join(tensor(CUDA, facts=frozenset({Fact.ZERO_DIM})), tensor(CUDA1), FLAG).facts == frozenset()


def test_the_elements_of_containers_are_joined() -> None:
    a = Value(Kind.LIST, HOST, elem=tensor(CUDA))
    b = Value(Kind.LIST, HOST, elem=tensor(HOST))
    assert join(a, b, FLAG).elem == join(tensor(CUDA), tensor(HOST), FLAG)
    # an empty list on one path: its element is the other path's
    empty = Value(Kind.LIST, NO_TENSORS, facts=frozenset({Fact.EMPTY}))
    assert join(empty, a, None).elem == tensor(CUDA)


def test_a_list_grown_by_appends() -> None:
    empty = Value(Kind.LIST, NO_TENSORS, facts=frozenset({Fact.EMPTY}))
    grown = Value(Kind.LIST, NO_TENSORS, elem=tensor(CUDA))
    assert grown_list(empty, grown)
    assert not grown_list(grown, empty)
    assert not grown_list(empty.with_facts(remove=(Fact.EMPTY,)), grown)


def test_devices_from_two_paths_fall_back_to_the_cpu() -> None:
    gpu = Value(Kind.DEVICE, device_at('"cuda"', ident="cuda"))
    cpu = Value(Kind.DEVICE, HOST)
    available = (AVAILABLE["cuda"], True)
    joined = join(gpu, cpu, available)
    assert joined.kind is Kind.DEVICE
    assert joined.has(Fact.CPU_FALLBACK)
    assert joined.place.ident == "cuda|cpu"
    chosen = join(gpu, cpu, FLAG)  # the user's flag chooses
    assert chosen.place.ident == "cuda|cpu@args.cuda"


def test_union_keeps_members_apart_and_bounds_them() -> None:
    a, b = tensor(CUDA), tensor(HOST)
    both = union(a, b)
    assert both.has(Fact.MAY_HOLD)
    assert [m for _, m in both.fields] == [a, b]
    assert union(both, a) == both  # a member once
    assert union(None, a) is a
    # a value that may hold several is joined member-wise, not as one value
    assert join(both, tensor(CUDA1)).has(Fact.MAY_HOLD)
    many = None
    for i in range(placement._MAX_MEMBERS + 1):
        many = union(many, tensor(device_at(f"cuda:{i}", ident=f"cuda:{i}")))
    assert many is not None and not many.has(Fact.MAY_HOLD)
    assert many.place.on_device


# --- where an operation's result is ------------------------------------------------------------

def test_the_device_wins_an_operation() -> None:
    assert tensor_result([tensor(HOST), tensor(CUDA)]).place is CUDA
    assert tensor_result([tensor(HOST), tensor(HOST)]).place is HOST
    assert tensor_result([tensor(HOST), tensor(UNKNOWN_PLACE)]).place == UNKNOWN_PLACE
    assert tensor_result([tensor(HOST)], zero_dim=True).has(Fact.ZERO_DIM)


def test_combined_place_goes_path_by_path() -> None:
    x = join_places(CUDA, HOST, FLAG)
    y = join_places(CUDA, HOST, FLAG)
    combined = combined_place([x, y])
    # the same test decides both: on the device when it holds, on the host when it fails
    assert dict(combined.paths) == {frozenset({FLAG}): CUDA, frozenset({NOT_FLAG}): HOST}
    z = join_places(CUDA, HOST, ("args.amp", True))
    mixed = combined_place([x, z])
    assert dict(mixed.paths)[frozenset({NOT_FLAG, ("args.amp", False)})] is HOST
    assert dict(mixed.paths)[frozenset({NOT_FLAG, ("args.amp", True)})] is CUDA


def test_container_place() -> None:
    assert container_place([]) is NO_TENSORS
    assert container_place([Value(Kind.SCALAR, NO_TENSORS), tensor(CUDA)]) is CUDA
    assert container_place([tensor(CUDA), tensor(HOST)]) == UNKNOWN_PLACE
