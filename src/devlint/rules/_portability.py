"""What the portability rules (DEV111-112, DEV2xx, DEV3xx) read from a program, in one place:
the current CUDA device, whether the program supports a machine without a GPU, which events
initialise CUDA. None of these decides a finding; the rules do."""

from __future__ import annotations

from typing import TYPE_CHECKING

from devlint.analysis import devices
from devlint.analysis.events import Argument, Event, Move, Site, SiteKind
from devlint.analysis.vocabulary import Fact, known_int
from devlint.knowledge import matches
from devlint.knowledge import torch as tk

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program


def current_device(program: "Program") -> str | None:
    """Identity of the current CUDA device: cuda:0 unless `torch.cuda.set_device` changes it;
    cuda:k when every call sets the literal k; None when a call sets something unknown."""
    indices = set()
    for site in program.sites(SiteKind.CUDA):
        if site.callee not in tk.SET_DEVICE:
            continue
        argument = site.argument("device")
        value = argument.value if argument is not None else None
        index = known_int(value)
        if index is None or value is None or value.has(Fact.OPTION_DEFAULT):
            # `set_device(args.local_rank)`: the launcher gives each process its own rank; the
            # option's default is not the device the run uses
            return None
        indices.add(index)
    if not indices:
        return "cuda:0"
    return f"cuda:{indices.pop()}" if len(indices) == 1 else None


def fallback_events(program: "Program") -> list[Site]:
    return list(program.sites(SiteKind.CPU_FALLBACK))


def supports_cpu(program: "Program") -> bool:
    """The program runs without a GPU: it picks the CPU as a fallback somewhere, moves
    something only under `if torch.cuda.is_available():`, branches on a user's GPU switch
    (`if args.cuda:`), or its configuration offers the CPU (`--device` with default or choice
    "cpu", a `device.type == "cpu"` branch)."""
    if fallback_events(program) or program.has_site(SiteKind.CUDA_FLAG) or program.has_site(SiteKind.CPU_OPTION):
        return True
    return any(move.ctx.guarded and move.target.on_device for move in program.moves)


def fallback_device_text(program: "Program", at: "Site | None" = None) -> str:
    """The name the program gives its GPU-or-CPU device (`device`), for fix suggestions; with
    `at`, only a name that code can read (a move in its file, in its function or at module level)."""
    for move in program.moves:
        if at is not None and (move.ctx.path != at.ctx.path or move.ctx.function not in ("<module>", at.ctx.function)):
            continue
        if devices.split(devices.effective(move.target))[1] and move.device_name:
            return move.device_name
    return ""


def literal_bool(argument: Argument | None) -> bool | None:
    """True / False when the argument is written as that literal."""
    if argument is None:
        return None
    return {"True": True, "False": False}.get(argument.text)


def is_cuda_init(event: object) -> bool:
    if isinstance(event, Site):
        if event.kind is SiteKind.CUDA_QUERY:
            return matches(event.callee, tk.CUDA_CALLS)
        if event.kind is SiteKind.CUDA:
            if event.callee in tk.TENSOR_CUDA_MOVES:
                return True
            return matches(event.callee, tk.CUDA_CALLS) and not matches(event.callee, tk.CUDA_NOT_INITIALISING)
        if event.kind is SiteKind.FACTORY:
            return event.value.place.on_device and devices.is_cuda(event.value.place.ident)
        return False
    if isinstance(event, Move):
        return event.target.on_device and devices.is_cuda(event.target.ident)
    return False


def describe_init(program: "Program", event: Event) -> str:
    line = program.line(event.node)
    if isinstance(event, Site) and event.kind is SiteKind.CUDA_QUERY:
        return f"`{event.callee}()` at line {line}"
    if isinstance(event, Site) and event.kind is SiteKind.CUDA and event.callee not in tk.TENSOR_CUDA_MOVES:
        return f"`{event.callee}()` at line {line}"
    if isinstance(event, Move):
        return f"the move to `{event.target.device or 'cuda'}` at line {line}"
    if isinstance(event, Site) and event.callee == "Tensor.cuda":
        return f"`.cuda()` at line {line}"
    if isinstance(event, Site) and event.callee == "Tensor.to":
        return f"`.to(\"cuda\")` at line {line}"
    return f"the CUDA call at line {line}"
