"""DEV302 empty-cache-in-loop: `torch.cuda.empty_cache()` on every step slows training and frees
nothing the caching allocator would not reuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.events import SiteKind
from devlint.findings import Confidence, Severity
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV302",
    name="empty-cache-in-loop",
    severity=Severity.INFO,
    summary="torch.cuda.empty_cache() is called on every step of a loop over batches.",
    why="""
        PyTorch's caching allocator keeps freed GPU blocks to reuse them on the next step.
        `torch.cuda.empty_cache()` hands them back to the driver, so the next step has to
        allocate them again with `cudaMalloc` and synchronise: every step gets slower, and the
        peak memory the loop needs does not shrink. It does not fix an out-of-memory error
        either. Call it, if at all, once after a phase (after evaluation, before a new model).
    """,
    bad="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 2).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16)
        for (x,) in loader:
            out = model(x.to(device))
            torch.cuda.empty_cache()
    """,
    good="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 2).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16)
        for (x,) in loader:
            out = model(x.to(device))
        torch.cuda.empty_cache()
    """,
    default_enabled=False,
    limits="""
        Only calls inside a loop over a DataLoader or Dataset (directly or through a called
        function) are reported; once per epoch is fine, and so is a call in an `except`
        handler (after an out-of-memory error) or in a branch that runs every N steps
        (`if step % args.validation_steps == 0:`, directly or in a function it calls), which
        do not run on every step.
    """,
)


@rule.check
def empty_cache_in_loop(program: "Program") -> Iterator[Report]:
    for made in program.sites(SiteKind.EMPTY_CACHE):
        if not made.ctx.in_data_loop or made.ctx.handler or made.ctx.periodic:
            continue  # an OOM handler runs after an OOM, `if step % N == 0:` every N steps: not every step
        yield Report(
            node=made.node,
            message=(
                "`torch.cuda.empty_cache()` runs on every batch: it returns the cached blocks to the driver, so the "
                "next step must allocate them again and every step gets slower, while the memory the loop needs "
                "stays the same. Remove it from the loop (call it once after a phase, if at all)."
            ),
            confidence=Confidence.DEFINITE,
            ctx=made.ctx,
        )
