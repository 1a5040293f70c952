"""DEV202 unguarded-cuda: the script asks for CUDA with no `torch.cuda.is_available()` check
anywhere, so it cannot start on a machine without a GPU."""

from __future__ import annotations

from devlint.analysis import devices
from devlint.analysis.events import Made, Move
from devlint.findings import Confidence, Severity
from devlint.knowledge import torch as tk
from devlint.rules.base import Report, Rule

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
        for a GPU first. A file with any availability check
        (`torch.cuda.is_available()`, `device_count()`), a device with a CPU fallback, or an
        `if` on a user's GPU switch (`if args.cuda:`) is not reported, nor is a program that
        starts an NCCL process group (it needs GPUs by design).
    """,
)


def _nccl(program) -> bool:
    return any("nccl" in made.text for made in program.made("process_group"))


def _use(event) -> tuple[object, str] | None:
    """(node, what) when the event requires CUDA to run."""
    if isinstance(event, Made):
        if event.what == "cuda" and event.qual == "Tensor.cuda":
            return event.node, "`.cuda()`"
        if event.what == "cuda" and event.qual == "Tensor.to":
            return event.node, "`.to(\"cuda\")`"
        if event.what == "cuda" and event.qual in tk.CUDA_REQUIRING:
            return event.node, f"`{event.qual}()`"
        if event.what == "factory" and event.value.place.on_device and devices.gpu_only(event.value.place.ident) \
                and devices.is_cuda(event.value.place.ident):
            return event.node, f"`device={event.value.place.device}`"
        return None
    if isinstance(event, Move) and event.target.on_device and devices.gpu_only(event.target.ident) \
            and devices.is_cuda(event.target.ident):
        return (event.call or event.node), f"the move to `{event.target.device}`"
    return None


@rule.check
def unguarded_cuda(program):
    for what in ("cuda_query", "cpu_fallback", "cuda_flag"):
        if any(True for _ in program.made(what)):
            return
    if _nccl(program):
        return
    for event in program.events:
        if isinstance(event, Made) and event.what == "entry":
            return  # only what runs when the file is executed: a library helper may be called
            # only by code that checked for a GPU first
        use = _use(event)
        if use is None or event.ctx.guarded:
            continue
        node, text = use
        yield Report(
            node=node,
            message=(
                f"{text} requires a CUDA GPU, and nothing in this file checks `torch.cuda.is_available()`: "
                f"on a machine without one the script fails here. Choose the device once with a fallback, "
                f"`device = torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")`, and move with "
                f"`.to(device)`."
            ),
            confidence=Confidence.DEFINITE,
            ctx=event.ctx,
        )
        return
