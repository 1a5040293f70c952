"""Flow state: forking a frame for a branch, joining the environments of two paths, and loops.

Like mypy's binder: statements run over a frame's environment; an `if` runs each branch on a
copy and joins the copies (a difference is evidence: "on the host when ..."), a loop runs its
body twice over the join of the entry state and the first pass (a difference is doubt).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from devlint.analysis.placement import grown_list, join
from devlint.analysis.shared import Frame
from devlint.analysis.values import Value


def fork(frame: Frame, **ctx_changes: bool) -> Frame:
    """A copy of the frame for one branch (its environment copied, the context changed by the
    true `ctx_changes`)."""
    changes = {k: v for k, v in ctx_changes.items() if v}
    return frame.child(dict(frame.env), replace(frame.ctx, **changes) if changes else frame.ctx)


def join_envs(a: dict[str, Value], b: dict[str, Value], cond: str | None) -> dict[str, Value]:
    """The environment after two paths meet; `cond` is the branch condition (true on `a`'s
    path) when an `if` closes, None for loops and handlers."""
    out = {}
    for key in a.keys() | b.keys():
        va, vb = a.get(key), b.get(key)
        if va is vb:
            out[key] = va
        elif va is None or vb is None:
            out[key] = va if vb is None else vb
        elif grown_list(va, vb):  # `preds = []` before a loop that appends to it
            out[key] = vb
        elif grown_list(vb, va):
            out[key] = va
        else:
            out[key] = join(va, vb, cond)
    return out


def run_loop(frame: Frame, kind: str, run_body: Callable[[Frame], None], loop_node: object,
             after: Callable[[Frame], None] | None = None) -> None:
    """Run a loop body twice: once from the entry state, once from the join of the entry state
    and the first pass; the loop's exit state is the join of the entry and the second pass.
    `kind` (data | epoch | other) is recorded in the context of what runs inside."""
    entry = frame.env
    loop_ctx = replace(frame.ctx, loops=frame.ctx.loops + (kind,))
    body_frame = frame.child(dict(entry), loop_ctx)
    body_frame.loop = loop_node
    run_body(body_frame)
    second = frame.child(join_envs(entry, body_frame.env, None), loop_ctx)
    second.loop = loop_node
    run_body(second)
    frame.returns.extend(body_frame.returns + second.returns)
    frame.env = join_envs(entry, second.env, None)
    if after is not None:
        after(frame)
    frame.sync_module_env()
