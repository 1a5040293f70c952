"""Flow state: forking a frame for a branch, joining the environments of two paths, and loops.

Like mypy's binder: statements run over a frame's environment; an `if` runs each branch on a
copy and joins the copies (a difference is evidence: "on the host when ..."), a loop runs its
body twice over the join of the entry state and the first pass (a difference is doubt).

Two passes per loop cost 2^depth passes of the innermost body: 20 nested loops (as deep as
CPython allows) took minutes. So only the `TWO_PASS_DEPTH` outermost loops of a function run
twice; a loop nested deeper runs once, from its entry state, and every name its pass changed
leaves it unknown (`_leave_after_one_pass`): what the one pass records happens on the first iteration, and
nothing after the loop relies on a state a second iteration could change. Unknown is silent,
so the cheaper loops can only make devlint quieter, never report more. Time is then linear in
the nesting below that depth.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from devlint.analysis import conditions
from devlint.analysis.conditions import Condition
from devlint.analysis.events import Context, LoopKind
from devlint.analysis.placement import grown_list, join
from devlint.analysis.shared import Frame, LoopJumps
from devlint.analysis.values import UNKNOWN, Value

# loops nested deeper than this in one function run once, widened (see the module docstring);
# real code seldom nests more than three (epochs, batches, an inner step)
TWO_PASS_DEPTH = 4

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst


def fork(frame: Frame, **ctx_changes: bool) -> Frame:
    """A copy of the frame for one branch (its environment copied, the context changed by the
    true `ctx_changes`)."""
    changes: dict[str, Any] = {k: v for k, v in ctx_changes.items() if v}
    return frame.child(dict(frame.env), replace(frame.ctx, **changes) if changes else frame.ctx)


def join_envs(a: dict[str, Value], b: dict[str, Value],
              cond: conditions.Literal | conditions.Split | None) -> dict[str, Value]:
    """The environment after two paths meet; `cond` is the branch condition (true on `a`'s
    path) when an `if` closes, None for loops and handlers."""
    out: dict[str, Value] = {}
    for key in a.keys() | b.keys():
        va, vb = a.get(key), b.get(key)
        if vb is None:  # bound on `a`'s path only
            out[key] = a[key]
        elif va is None or va is vb:
            out[key] = vb
        elif grown_list(va, vb):  # `preds = []` before a loop that appends to it
            out[key] = vb
        elif grown_list(vb, va):
            out[key] = va
        else:
            out[key] = join(va, vb, cond)
    return out


def run_loop(frame: Frame, kind: LoopKind, run_body: Callable[[Frame], None], loop_node: cst.CSTNode,
             after: Callable[[Frame], None] | None = None) -> None:
    """Run a loop body twice: once from the entry state, once from the join of the entry state
    and the first pass; the loop's exit state is the join of the entry and the second pass.
    `kind` (data | epoch | other) is recorded in the context of what runs inside.

    A `continue` takes its state back to the loop head and a `break` out of the loop: those
    states join in under the condition that led to them ("when `x` in an earlier iteration"
    for the head: the test is evaluated again in the next one), so a value left on the host
    on such a path is evidence, not doubt. The `else:` block runs only when no `break` left."""
    entry = frame.env
    loop_ctx = replace(frame.ctx, loops=frame.ctx.loops + (kind,))
    body_frame, first_jumps = _pass_frame(frame, dict(entry), loop_ctx, loop_node)
    run_body(body_frame)
    if len(frame.ctx.loops) >= TWO_PASS_DEPTH:
        _leave_after_one_pass(frame, entry, body_frame, first_jumps, after)
        return
    head = _with_jumps(join_envs(entry, body_frame.env, None), frame.path, first_jumps.continues, True)
    second, second_jumps = _pass_frame(frame, head, loop_ctx, loop_node)
    run_body(second)
    frame.returns.extend(body_frame.returns + second.returns)
    frame.env = _with_jumps(join_envs(entry, second.env, None), frame.path, second_jumps.continues, True)
    if after is not None:
        after(frame)
    frame.env = _with_jumps(frame.env, frame.path, first_jumps.breaks + second_jumps.breaks, False)
    frame.sync_module_env()


def _leave_after_one_pass(frame: Frame, entry: dict[str, Value], body_frame: Frame, jumps: LoopJumps,
                          after: Callable[[Frame], None] | None) -> None:
    """The exit of a loop run once (nested deeper than TWO_PASS_DEPTH): the entry state, with
    every name that the pass, a `continue` or a `break` left different unknown. Nothing is
    joined under a condition: a half-known state must not read as evidence."""
    frame.returns.extend(body_frame.returns)
    states = [body_frame.env] + [env for env, _ in jumps.continues + jumps.breaks]
    changed = {key for env in states for key, value in env.items()
               if not (entry.get(key) is value or entry.get(key) == value)}
    frame.env = {**entry, **dict.fromkeys(changed, UNKNOWN)}
    if after is not None:
        after(frame)
        frame.env = {**frame.env, **dict.fromkeys(changed, UNKNOWN)}
    frame.sync_module_env()


def _pass_frame(frame: Frame, env: dict[str, Value], ctx: Context,
                loop_node: cst.CSTNode) -> tuple[Frame, LoopJumps]:
    """A frame for one pass of a loop's body, and the jumps it collects."""
    child = frame.child(env, ctx)
    child.loop = loop_node
    child.jumps = jumps = LoopJumps()
    return child, jumps


def _with_jumps(env: dict[str, Value], path: Condition, jumps: list[tuple[dict[str, Value], Condition]],
                earlier: bool) -> dict[str, Value]:
    """`env` joined with the states of `continue`s / `break`s, each under the one test that led
    to it when there is one (else with doubt)."""
    for jump_env, jump_path in jumps:
        extra = jump_path - path
        lit = next(iter(extra)) if len(extra) == 1 else None
        if lit is not None and earlier:
            lit = conditions.in_earlier_iteration(lit)
        env = join_envs(jump_env, env, lit)
    return env
