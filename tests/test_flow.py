"""Flow state (analysis/flow.py), tested directly: forking a frame for a branch, joining the
environments of two paths, and loops, whose body runs exactly twice (once from the entry
state, once from its join with the first pass): not to a fixed point."""

from __future__ import annotations

import libcst as cst

from devlint.analysis import conditions
from devlint.analysis.driver import Analysis
from devlint.analysis.events import Context, LoopKind
from devlint.analysis.flow import fork, join_envs, run_loop
from devlint.analysis.names import collect_imports
from devlint.analysis.placement import join
from devlint.analysis.shared import Frame
from devlint.analysis.values import HOST, NO_TENSORS, UNKNOWN_PLACE, Kind, Placement, Value, Where, device_at
from devlint.analysis.vocabulary import Fact

CUDA = device_at("device", ident="cuda")
FLAG = ("args.cuda", True)
LOOP = cst.parse_statement("for batch in loader:\n    pass\n")


def tensor(place: Placement) -> Value:
    return Value(Kind.TENSOR, place)


def _frame(**env: Value) -> Frame:
    module = cst.parse_module("")
    scope = Analysis(module, collect_imports(module, "")).main_scope
    return Frame(dict(env), Context(function="train"), 1, False, scope)


# --- forks ------------------------------------------------------------------------------------

def test_a_fork_has_its_own_environment() -> None:
    frame = _frame(x=tensor(HOST))
    branch = fork(frame)
    branch.env["x"] = tensor(CUDA)
    branch.env["y"] = tensor(CUDA)
    assert frame.env == {"x": tensor(HOST)}
    assert branch.ctx is frame.ctx and branch.path == frame.path


def test_a_fork_changes_the_context_by_its_true_changes_only() -> None:
    frame = _frame()
    branch = fork(frame, guarded=True, no_grad=False)
    assert branch.ctx.guarded and not branch.ctx.no_grad
    assert not frame.ctx.guarded
    assert fork(frame, guarded=False).ctx is frame.ctx


# --- joins of environments -----------------------------------------------------------------------

def test_names_bound_on_one_path_only_keep_that_path_s_value() -> None:
    a, b = {"x": tensor(CUDA)}, {"y": tensor(HOST)}
    assert join_envs(a, b, FLAG) == {"x": tensor(CUDA), "y": tensor(HOST)}


def test_the_same_value_on_both_paths_is_kept_as_it_is() -> None:
    shared = tensor(CUDA)
    assert join_envs({"x": shared}, {"x": shared}, None)["x"] is shared


def test_different_values_are_joined_under_the_branch_condition() -> None:
    joined = join_envs({"x": tensor(CUDA)}, {"x": tensor(HOST)}, FLAG)["x"]
    assert joined == join(tensor(CUDA), tensor(HOST), FLAG)
    assert joined.place.where is Where.COND
    # with no condition (a loop, a handler) the difference is doubt
    assert join_envs({"x": tensor(CUDA)}, {"x": tensor(HOST)}, None)["x"].place == UNKNOWN_PLACE


def test_a_list_grown_on_one_path_is_the_grown_list() -> None:
    empty = Value(Kind.LIST, NO_TENSORS, facts=frozenset({Fact.EMPTY}))
    grown = Value(Kind.LIST, NO_TENSORS, elem=tensor(CUDA))
    assert join_envs({"preds": empty}, {"preds": grown}, None)["preds"] is grown
    assert join_envs({"preds": grown}, {"preds": empty}, None)["preds"] is grown


# --- loops --------------------------------------------------------------------------------------

class _Body:
    """A loop body that records the environment each pass starts from and moves `x`."""

    def __init__(self, then: Placement = CUDA) -> None:
        self.starts: list[dict[str, Value]] = []
        self.loops: list[tuple[LoopKind, ...]] = []
        self.then = then

    def __call__(self, frame: Frame) -> None:
        self.starts.append(dict(frame.env))
        self.loops.append(frame.ctx.loops)
        frame.env["x"] = tensor(self.then)


def test_a_loop_body_runs_twice_from_the_entry_and_from_the_join() -> None:
    frame = _frame(x=tensor(HOST))
    body = _Body()
    run_loop(frame, LoopKind.DATA, body, LOOP)
    assert len(body.starts) == 2  # twice, not to a fixed point
    assert body.starts[0]["x"] == tensor(HOST)
    # the second pass starts where the first one and the entry meet: maybe moved, maybe not
    assert body.starts[1]["x"].place == UNKNOWN_PLACE
    # after the loop: the entry (no iteration) joined with the second pass
    assert frame.env["x"].place == UNKNOWN_PLACE
    assert body.loops == [(LoopKind.DATA,), (LoopKind.DATA,)]
    assert frame.ctx.loops == ()


def test_a_loop_that_leaves_a_value_where_it_was_changes_nothing() -> None:
    frame = _frame(x=tensor(HOST))
    body = _Body(then=HOST)
    run_loop(frame, LoopKind.OTHER, body, LOOP)
    assert body.starts[1]["x"] == tensor(HOST)
    assert frame.env["x"] == tensor(HOST)


def test_a_loop_pass_knows_its_loop_and_collects_its_jumps() -> None:
    frame = _frame()
    seen: list[tuple[object, object]] = []

    def body(f: Frame) -> None:
        seen.append((f.loop, f.jumps))

    run_loop(frame, LoopKind.OTHER, body, LOOP)
    assert [loop for loop, _ in seen] == [LOOP, LOOP]
    first, second = (jumps for _, jumps in seen)
    assert first is not None and second is not None and first is not second
    assert frame.loop is None and frame.jumps is None


def test_a_continue_state_joins_the_loop_head_under_an_earlier_iteration() -> None:
    skip = ("batch is None", True)
    frame = _frame(x=tensor(HOST))
    starts: list[Value] = []

    def body(f: Frame) -> None:
        starts.append(f.env["x"])
        assert f.jumps is not None
        # `if batch is None: x = x.cuda(); continue`
        f.jumps.continues.append(({"x": tensor(CUDA)}, f.path | {skip}))
        # the path that goes on leaves x where it is

    run_loop(frame, LoopKind.DATA, body, LOOP)
    head = starts[1]
    assert head.place.where is Where.COND  # evidence, with the test that led there
    earlier = conditions.in_earlier_iteration(skip)
    assert dict(head.place.paths) == {frozenset({earlier}): CUDA, frozenset({conditions.negate(earlier)}): HOST}


def test_break_states_join_after_the_else_block() -> None:
    stop = ("done", True)
    frame = _frame(x=tensor(HOST))
    order: list[str] = []

    passes: list[Frame] = []

    def body(f: Frame) -> None:
        passes.append(f)
        assert f.jumps is not None
        if len(passes) == 1:  # `if done: x = x.cuda(); break`, taken on the first pass only
            f.jumps.breaks.append(({"x": tensor(CUDA)}, f.path | {stop}))

    def after(f: Frame) -> None:
        order.append("else")
        assert f.env["x"] == tensor(HOST)  # a `break` skips the else block: its state is not here yet

    run_loop(frame, LoopKind.OTHER, body, LOOP, after)
    assert order == ["else"]
    # the break's state (under the test that led to it, now) joins the state after the loop,
    # whichever pass took it
    assert dict(frame.env["x"].place.paths) == {frozenset({stop}): CUDA, frozenset({conditions.negate(stop)}): HOST}


def test_returns_of_both_passes_are_kept() -> None:
    frame = _frame()

    def body(f: Frame) -> None:
        f.returns.append((None, tensor(CUDA)))

    run_loop(frame, LoopKind.OTHER, body, LOOP)
    assert frame.returns == [(None, tensor(CUDA)), (None, tensor(CUDA))]
