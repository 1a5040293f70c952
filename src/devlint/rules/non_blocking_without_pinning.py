"""DEV301 non-blocking-without-pinning: `.to(device, non_blocking=True)` on batches from a
DataLoader that does not pin memory: the copy is synchronous anyway."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.events import Site, SiteKind
from devlint.analysis.values import ORIGIN_BATCH
from devlint.analysis.vocabulary import Fact, known_bool
from devlint.findings import Confidence, Severity
from devlint.rules._portability import literal_bool
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV301",
    name="non-blocking-without-pinning",
    severity=Severity.INFO,
    summary="non_blocking=True on batches from a DataLoader without pin_memory=True does nothing.",
    why="""
        A host-to-GPU copy can only overlap with computation when the source is in page-locked
        (pinned) memory. Batches from a `DataLoader` without `pin_memory=True` are in pageable
        memory, so `.to(device, non_blocking=True)` silently falls back to a synchronous copy:
        the flag promises an overlap that never happens. Pin the loader's memory (or drop the
        flag).
    """,
    bad="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16)
        for (x,) in loader:
            x = x.to(device, non_blocking=True)
    """,
    good="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=16, pin_memory=True)
        for (x,) in loader:
            x = x.to(device, non_blocking=True)
    """,
    default_enabled=False,
    limits="""
        Only batches traced to a `DataLoader` built in the same file are checked; a loader whose
        `pin_memory` is not a literal (`pin_memory=args.pin`, `**loader_kwargs`) counts as pinned,
        and so does a batch pinned by hand (`x.pin_memory()`).
    """,
)


def _pinned(loader: Site) -> bool:
    if any(a.keyword == "**" for a in loader.args):
        return True
    argument = loader.keyword("pin_memory")
    if argument is None:
        return False
    known = known_bool(argument.value)
    if known is None:
        known = literal_bool(argument)
    return known is not False


@rule.check
def non_blocking_without_pinning(program: "Program") -> Iterator[Report]:
    loaders = {id(site.node): site for site in program.sites(SiteKind.LOADER)}
    for move in program.moves:
        if not move.non_blocking or not move.target.on_device:
            continue
        subject = move.subject
        origin = subject.origin
        if subject.has(Fact.PINNED) or subject.has(Fact.MANAGED) or origin is None or origin.category != ORIGIN_BATCH:
            continue
        loader = loaders.get(id(origin.node))
        if loader is None or _pinned(loader):
            continue
        yield Report(
            node=move.node,
            message=(
                f"`non_blocking=True` has no effect here: `{move.subject_text}` comes from the DataLoader at line "
                f"{program.line(loader.node)}, which does not pin memory, so the copy to the device is synchronous. "
                f"Pass `pin_memory=True` to the DataLoader (or drop the flag)."
            ),
            confidence=Confidence.DEFINITE,
            ctx=move.ctx,
            evidence=(evidence.at(loader.node, "the DataLoader is built here without `pin_memory=True`"),
                      evidence.at(move.node, "the batch is copied here with `non_blocking=True`, synchronously")),
        )
