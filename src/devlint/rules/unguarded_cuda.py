"""DEV202 unguarded-cuda: the script asks for CUDA with no `torch.cuda.is_available()` check
anywhere, so it cannot start on a machine without a GPU."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint.analysis import devices
from devlint.analysis.events import Move, Site, SiteKind
from devlint.analysis.values import ORIGIN_DATA, ORIGIN_FACTORY, ORIGIN_MODULE
from devlint.findings import Confidence, Severity
from devlint.knowledge import conventions
from devlint.knowledge import torch as tk
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Event, Node
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV202",
    name="unguarded-cuda",
    severity=Severity.WARNING,
    summary="CUDA is required (`.cuda()`, device=\"cuda\", torch.cuda queries) with no availability check.",
    why="""
        `.cuda()`, `.to("cuda")`, `device="cuda"` and `torch.cuda.set_device` /
        `get_device_name` / `get_device_properties` fail on a machine without a usable GPU
        (`AssertionError: Torch not compiled with CUDA enabled`, or `RuntimeError: No CUDA GPUs
        are available`). A script with no `torch.cuda.is_available()` check anywhere cannot be
        run, tested or debugged on a laptop or a CPU-only CI runner. Choose the device once,
        with a fallback, and use it everywhere.
    """,
    bad="""
        import torch
        import torch.nn as nn

        model = nn.Linear(8, 2).cuda()
        x = torch.randn(4, 8).cuda()
        print(model(x))
    """,
    good="""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2).to(device)
        x = torch.randn(4, 8).to(device)
        print(model(x))
    """,
    limits="""
        Only the first use in a file is reported, and only code that runs when the file is
        executed (module code and the functions it calls, `if __name__ == "__main__":`
        included): a helper no call in the file reaches may be called only by code that checked
        for a GPU first, unless the helper itself makes something on CUDA or calls a CUDA-only
        function such as `torch.cuda.set_device` (library code included: this holds with
        `library-mode` on or off), outside a test that a launcher or the caller's device choice
        decides (`if world_size == 1: return`, `if x.device.type != "cuda"`). A check in a helper
        file covers that file's own CUDA uses, not the checked file's. A file with any availability check
        (`torch.cuda.is_available()`, `device_count()`), a device with a CPU fallback, or an
        `if` on a user's GPU switch (`if args.cuda:`) is not reported, nor is a use in a
        project file the checked one calls when that file has such a check itself, nor a program
        that starts an NCCL process group (it needs GPUs by design).
    """,
)


_MADE = frozenset({ORIGIN_FACTORY, ORIGIN_DATA, ORIGIN_MODULE})


def _nccl(program: "Program") -> bool:
    return any("nccl" in site.text for site in program.sites(SiteKind.PROCESS_GROUP))


def _use(event: "Event") -> "tuple[Node, str] | None":
    """(node, what) when the event requires CUDA to run."""
    if isinstance(event, Site):
        if event.kind is SiteKind.CUDA and event.callee == "Tensor.cuda":
            return event.node, "`.cuda()`"
        if event.kind is SiteKind.CUDA and event.callee == "Tensor.to":
            return event.node, "`.to(\"cuda\")`"
        if event.kind is SiteKind.CUDA and event.callee in tk.CUDA_REQUIRING:
            return event.node, f"`{event.callee}()`"
        if event.kind is SiteKind.FACTORY and event.value.place.on_device \
                and devices.gpu_only(event.value.place.ident) and devices.is_cuda(event.value.place.ident):
            return event.node, f"`device={event.value.place.device}`"
        return None
    if isinstance(event, Move) and event.target.on_device and devices.gpu_only(event.target.ident) \
            and devices.is_cuda(event.target.ident):
        return event.node, f"the move to `{event.target.device}`"
    return None


def _any_accelerator(program: "Program", move: Move) -> bool:
    """The move's device is a name, in a file that asks for the current accelerator: the device
    is that accelerator, with CUDA as the fallback for a torch without `torch.accelerator`."""
    return bool(move.device_name) and any((site.ctx.path or program.path) == (move.ctx.path or program.path)
                                          for site in program.sites(SiteKind.ACCELERATOR))


def _made_here(event: "Event") -> bool:
    """CUDA asked for what the code builds itself (`torch.zeros(n).cuda()`, `device="cuda"`,
    `nn.Linear(...).cuda()`) or a CUDA-only call (`torch.cuda.set_device(k)`, whatever k the
    caller gives): no caller's check can make that work without a GPU. Unless it runs only on
    a path whose test the launcher or the caller's device choice decides (after
    `if world_size == 1: return`, `Stream() if device_ids else ...`): such helpers run only
    where GPUs were put. An ordinary branch (`if kernel == "rbf":`) still needs the GPU."""
    if isinstance(event, Site):
        return not _behind_launcher(event.when) and (event.kind is SiteKind.FACTORY
                                   or event.kind is SiteKind.CUDA and event.callee in tk.CUDA_REQUIRING)
    if isinstance(event, Move):
        origin = event.subject.origin
        return not _behind_launcher(event.when) and origin is not None and origin.category in _MADE
    return False


_CHECKS = (SiteKind.CUDA_QUERY, SiteKind.CPU_FALLBACK, SiteKind.CUDA_FLAG, SiteKind.CPU_OPTION,
           SiteKind.DEVICE_DISPATCH)


def _behind_launcher(when: frozenset) -> bool:
    return any(conventions.LAUNCHER_TEST.search(text) for text, _ in when)


@rule.check
def unguarded_cuda(program: "Program") -> Iterator[Report]:
    # the files that check for a GPU (or offer the CPU): a check in this file covers it all, one
    # in a helper file covers only the helper's own CUDA uses
    checking = {site.ctx.path or program.path for kind in _CHECKS for site in program.sites(kind)}
    if program.path in checking:
        return
    if _nccl(program):
        return
    in_entry = False
    for event in program.events:
        if isinstance(event, Site) and event.kind is SiteKind.ENTRY:
            in_entry = True  # code no call in the file reaches: a library's
            continue
        if in_entry and not _made_here(event):
            continue  # a helper moving what its caller gives may be called only after a check
        use = _use(event)
        if use is None or event.ctx.guarded or (event.ctx.path or program.path) in checking \
                or _behind_launcher(getattr(event, "when", frozenset())):
            continue
        node, text = use
        needs, fallback = "a CUDA GPU", "torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")"
        if isinstance(event, Move) and _any_accelerator(program, event):
            # `device = torch.accelerator.current_accelerator().type if ... else "cuda"`
            needs = "an accelerator (CUDA, MPS, XPU; CUDA where torch has no `torch.accelerator`)"
            fallback = ("torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
                        "else torch.device(\"cpu\")")
        yield Report(
            node=program.method_name(node) if not isinstance(event, Site) or event.kind is SiteKind.CUDA else node,
            message=(
                f"{text} requires {needs}, and nothing in this file checks `torch.cuda.is_available()`: "
                f"on a machine without one the script fails here. Choose the device once with a fallback, "
                f"`device = {fallback}`, and move with `.to(device)`."
            ),
            confidence=Confidence.DEFINITE,
            ctx=event.ctx,
            evidence=(evidence.at(program.module, "nothing in this file checks `torch.cuda.is_available()` "
                                                  "or falls back to the CPU"),)
            + (evidence.subject(program, event) if isinstance(event, Move) else ())
            + (evidence.at(node, f"{text} requires {needs} here"),),
        )
        return
