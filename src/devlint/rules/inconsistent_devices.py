"""DEV111 inconsistent-devices: values that meet were moved with device expressions that can
name different devices (`.cuda()` against a `device` that falls back to the CPU, `cuda:0`
against `cuda:1`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint.analysis import devices
from devlint.analysis.events import Move, Site, SiteKind
from devlint.analysis.values import Value
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_expr, line_of, value_name
from devlint.rules._portability import current_device
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program
    from devlint.analysis.values import Placement

rule = Rule(
    code="DEV111",
    name="inconsistent-devices",
    severity=Severity.WARNING,
    summary="Values that meet are moved with device expressions that can name different devices.",
    why="""
        Two tensors (or a model and its inputs) must be on the same device when they meet. When
        one is moved with `.to(device)`, where `device` falls back to the CPU without a GPU, and
        the other with a hard-coded `.cuda()`, the program only works on a machine where both
        happen to name the same GPU: without a GPU `.cuda()` fails, and a `device` changed
        to `cuda:1` leaves the other value on `cuda:0`. The same holds for `cuda:0` against
        `cuda:1`, for `.cuda()` (the current device, `cuda:0` unless `torch.cuda.set_device`
        changes it) against `f"cuda:{rank}"`, and for a helper such as `try_gpu(1)` against
        `device`. The crash (`Expected all tensors to be on the same device`) waits for the
        machine where they differ.
    """,
    bad="""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2).to(device)
        x = torch.randn(4, 8).cuda()
        out = model(x)
    """,
    good="""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2).to(device)
        x = torch.randn(4, 8).to(device)
        out = model(x)
    """,
    limits="""
        Device expressions the analysis cannot resolve (`args.device`, a parameter of a function
        no call reaches, a helper from another package) are assumed to agree with everything.
        `"cuda"` and `cuda:0` are the same device unless the program calls
        `torch.cuda.set_device`. A symbolic index (`cuda:{rank}`) is only compared with the
        current device, and only when nothing calls `torch.cuda.set_device`.
    """,
)


def _reason(a: str, b: str, current: str | None) -> str:
    ga, fa = devices.split(a)
    gb, fb = devices.split(b)
    if fa != fb:
        return ("on a machine without a GPU one of them falls back to the CPU while the other "
                "still asks for CUDA")
    ta, form_a, index_a = devices.parse(ga)
    tb, form_b, index_b = devices.parse(gb)
    if ta != tb:
        return f"`{ta}` and `{tb}` are different devices"
    if form_a == "index" and form_b == "index":
        return f"`{ga}` and `{gb}` are different GPUs"
    cur = current or "cuda:0"
    other = gb if form_a == "current" else ga
    _, other_form, other_index = devices.parse(other)
    if other_form == "symbol":
        return (f"the current device is `{cur}` (nothing calls `torch.cuda.set_device`), so every process "
                f"whose `{other_index[1:-1]}` is not 0 puts them on different GPUs")
    return f"the current CUDA device is `{cur}`, not `{other}`"


def _one_device_value(first: "Placement", second: "Placement") -> bool:
    """Both sides were moved to the device one expression made (`opt.device`, set at one line):
    at run time that is one device, however the paths that reach the two moves were joined
    (one side through a helper that saw the fallback, the other not)."""
    return first.node is not None and first.node is second.node and first.device == second.device


@rule.check
def inconsistent_devices(program: "Program") -> Iterator[Report]:
    current = current_device(program)
    moves: dict[int, Move] = {}
    order: dict[int, int] = {}  # placement node -> when it was made, in program order
    for index, event in enumerate(program.events):
        if isinstance(event, Move) and event.target.node is not None:
            moves.setdefault(id(event.target.node), event)
            order.setdefault(id(event.target.node), index)
        elif isinstance(event, Site) and event.kind is SiteKind.FACTORY and event.value.place.node is not None:
            order.setdefault(id(event.value.place.node), index)
    reported: set[int] = set()
    pairs: set[tuple[int, str, str]] = set()
    availability = program.availability_conditions
    for meet in program.device_meets:
        a = devices.effective(meet.first.place, availability)
        b = devices.effective(meet.second.place, availability)
        if not devices.may_disagree(a, b, current):
            continue
        if _one_device_value(meet.first.place, meet.second.place):
            continue
        sides = [(meet.first, a), (meet.second, b)]
        positioned = []
        for value, ident in sides:
            node = value.place.node
            line = program.line(node) if node is not None else 0
            positioned.append((line, value, ident, order.get(id(node)) if node is not None else None))
        if all(item[3] is not None for item in positioned):
            positioned.sort(key=lambda item: item[3] or 0)  # the move that runs later (each known here)
        else:
            positioned.sort(key=lambda item: item[0])
        (early_line, early, early_ident, _), (late_line, late, late_ident, _) = positioned
        pair = (id(early.place.node), early_ident, late_ident)
        if pair in pairs:
            continue  # the same two placements meeting again (the output of a call, a loss)
        pairs.add(pair)
        late_move: Move | None = moves.get(id(late.place.node)) if late.place.node is not None else None
        node = late_move.node if late_move is not None else late.place.node
        if node is None:
            node = meet.node
        if id(node) in reported:
            continue
        reported.add(id(node))
        meet_line = line_of(program, meet.node)
        fix = _fix(early, early_ident, late, late_ident, late_move)
        yield Report(
            node=node,
            message=(
                f"{_side(program, late, late_ident, late_line)} but {_side(program, early, early_ident, early_line)}, "
                f"and they meet in {meet.operation} at {meet_line}: {_reason(late_ident, early_ident, current)}. "
                f"{fix}"
            ),
            confidence=Confidence.LIKELY,
            ctx=late_move.ctx if late_move is not None else meet.ctx,
            evidence=evidence.device(early, "one value") + evidence.device(late, "the other value")
            + (evidence.at(meet.node, f"they meet here, in {meet.operation}"),),
        )


def _side(program: Program, value: Value, ident: str, line: int) -> str:
    name = value_name(value, "one value")
    where = f"`{value.place.device}`" if value.place.device else "a device"
    words = devices.describe(ident)
    details = [words] if words.strip("`") != value.place.device.strip("\"'") else []
    if line:
        details.append(f"moved at line {line}")
    return f"{name} is on {where}" + (f" ({', '.join(details)})" if details else "")


def _fix(early: Value, early_ident: str, late: Value, late_ident: str, late_move: Move | None) -> str:
    """The fix: one device expression for both (the one that falls back, when there is one)."""
    subject = late_move.subject_text if late_move is not None else ""
    simple = bool(subject) and subject.replace(".", "").replace("_", "").isalnum()
    early_fb, late_fb = devices.split(early_ident)[1], devices.split(late_ident)[1]
    if early_fb != late_fb:
        target = device_expr(early if early_fb else late)
        if early_fb and simple:
            return f"Use one device expression for both: `{subject} = {subject}.to({target})`."
        return f"Use one device expression for both: `.to({target})` everywhere."
    gpu_early, gpu_late = devices.split(early_ident)[0], devices.split(late_ident)[0]
    for gpu, value in ((gpu_early, early), (gpu_late, late)):
        form, index = devices.parse(gpu)[1:]
        if form == "symbol":
            return (f"Call `torch.cuda.set_device({index[1:-1]})` before the first `.cuda()`, or move both "
                    f"with `.to({value.place.device or 'device'})`.")
    return ("Put both on one device: move them with the same device expression, or move one to the "
            "other's device before they meet.")
