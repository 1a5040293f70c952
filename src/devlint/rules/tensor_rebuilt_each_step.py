"""DEV303 tensor-rebuilt-each-step: a constant tensor is built and copied to the device on
every step of a loop over batches instead of once before it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.events import Move, SiteKind
from devlint.knowledge import torch as tk
from devlint.findings import Confidence, Severity
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV303",
    name="tensor-rebuilt-each-step",
    severity=Severity.INFO,
    summary="A constant tensor is created and moved to the device inside the loop body.",
    why="""
        `torch.tensor(class_weights).to(device)` inside the training loop builds the same tensor
        from Python data and copies it to the GPU on every step: a host-to-device copy (and a
        synchronisation) per step for a value that never changes. Build it once, on the device,
        before the loop.
    """,
    bad="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 3).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=16)
        for x, y in loader:
            weights = torch.tensor([0.2, 0.3, 0.5]).to(device)
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device), weight=weights)
    """,
    good="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(8, 3).to(device)
        loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,))), batch_size=16)
        weights = torch.tensor([0.2, 0.3, 0.5]).to(device)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device), weight=weights)
    """,
    default_enabled=False,
    limits="""
        Only `torch.tensor` / `torch.as_tensor` / `torch.Tensor`-style constructors inside a loop
        over batches are checked, when their data is a literal list or a name the loop never
        rebinds. A number literal (`torch.tensor(0.0, device=device)`, usually an accumulator
        reset each step) is not reported.
    """,
)


@rule.check
def tensor_rebuilt_each_step(program: "Program") -> Iterator[Report]:
    moved_later: dict[int, Move] = {}
    for move in program.moves:
        origin = move.subject.origin
        if origin is not None and origin.node is not None and move.target.on_device and move.ctx.in_data_loop:
            moved_later.setdefault(id(origin.node), move)
    for site in program.sites(SiteKind.FACTORY):
        # the analysis says whether the data is the same on every iteration of the loop
        if not site.constant_data or site.callee in tk.ZERO_COPY_FACTORIES:
            continue
        later = moved_later.get(id(site.node))
        if not site.value.place.on_device and later is None:
            continue
        how = ("built on the device" if later is None or site.value.place.on_device
               else f"moved with `.{later.method}(...)`")
        yield Report(
            node=site.node,
            message=(
                f"`{site.text}` is the same tensor on every batch, yet it is rebuilt from Python data and "
                f"{how} on every step: a host-to-device copy per step. Build it once, on the device, "
                f"before the loop."
            ),
            confidence=Confidence.DEFINITE,
            ctx=site.ctx,
            evidence=(evidence.at(site.node, "the same tensor is built here on every step"),)
            + ((evidence.at(later.node, "and copied to the device here on every step"),) if later is not None else ()),
        )
