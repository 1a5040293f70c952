"""DEV110 cuda-in-worker: a collate_fn or Dataset.__getitem__ moves data to CUDA while its
DataLoader runs them in worker processes or pins their output."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from devlint.analysis.events import Site, SiteKind
from devlint.analysis.values import Kind, Value
from devlint.analysis.vocabulary import Fact, known_int
from devlint.findings import Confidence, Severity
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV110",
    name="cuda-in-worker",
    severity=Severity.WARNING,
    summary="A `collate_fn` or `Dataset.__getitem__` moves data to CUDA while its DataLoader uses worker processes or `pin_memory=True`.",
    why="""
        With `num_workers > 0` a DataLoader runs `__getitem__` and `collate_fn` in worker
        processes, forked from the training process on Linux. CUDA cannot be initialised again
        in a forked child, so the first `.to("cuda")` / `.cuda()` / `device="cuda"` factory there
        raises `RuntimeError: Cannot re-initialize CUDA in forked subprocess` (the same code
        works with `num_workers=0`, which is why it breaks only when someone speeds up the
        loader). With `pin_memory=True` the loader pins every tensor the collate function
        returns, and only CPU tensors can be pinned: `RuntimeError: cannot pin
        'torch.cuda.FloatTensor' only dense CPU tensors can be pinned`. Return CPU tensors from
        the dataset and the collate function, and move the batch in the training loop.
    """,
    bad="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(16, 2).to(device)
        dataset = TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,)))


        def collate(samples):
            features = torch.stack([f for f, _ in samples]).to(device)
            labels = torch.stack([y for _, y in samples]).to(device)
            return features, labels


        loader = DataLoader(dataset, batch_size=8, collate_fn=collate, num_workers=4)
        for features, labels in loader:
            loss = torch.nn.functional.cross_entropy(model(features), labels)
    """,
    good="""
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(16, 2).to(device)
        dataset = TensorDataset(torch.randn(64, 16), torch.randint(0, 2, (64,)))


        def collate(samples):
            features = torch.stack([f for f, _ in samples])
            labels = torch.stack([y for _, y in samples])
            return features, labels


        loader = DataLoader(dataset, batch_size=8, collate_fn=collate, num_workers=4, pin_memory=True)
        for features, labels in loader:
            features = features.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(features), labels)
    """,
    fix=FixSafety.NONE,
    limits="""
        `num_workers` must be a literal, a variable whose value the analysis knows, or an
        `argparse` option with an integer default (reported with that default); a value read
        from a config file or the environment is not reported. A DataLoader built with
        `multiprocessing_context=...`, or a program that calls `set_start_method(...)` with
        "spawn" or "forkserver", starts its workers fresh and is reported only for
        `pin_memory=True`. Tensors a dataset puts on the GPU in its `__init__` count when its
        `__getitem__` returns them (or parts of them); they are reported where they are placed.
    """,
)

_FRESH_START = re.compile(r"""["'](spawn|forkserver)["']""")


def _value(site: Site, name: str) -> Value | None:
    argument = site.argument(name)
    return argument.value if argument is not None else None


def _known_int(value: Value | None) -> int | None:
    if value is None or value.kind is not Kind.SCALAR:
        return None
    return known_int(value)


def _workers(site: Site, fresh_start: bool, loader: Site | None) -> str:
    """"`num_workers=4`" when the loader forks workers that would initialise CUDA again (or
    "`num_workers=args.workers` (4 by default)" for a command-line option's default)."""
    value = _value(site, "num_workers")
    count = _known_int(value)
    if count is None or count <= 0 or fresh_start:
        return ""
    context = _value(site, "multiprocessing_context")
    if context is not None and context.kind is not Kind.NONE:
        return ""
    if value is not None and value.has(Fact.OPTION_DEFAULT):
        given = loader.keyword("num_workers") if loader is not None else None
        if given is not None:
            return f"`num_workers={given.text}` ({count} by default)"
    return f"`num_workers={count}`"


def _pins(site: Site) -> bool:
    value = _value(site, "pin_memory")
    if value is None or value.kind is not Kind.SCALAR:
        return False
    if not (value.has(Fact.TRUE) or value.has(Fact.CUDA_AVAILABLE)):
        return False
    batch = site.value.elem
    # the pinning thread leaves objects without a `pin_memory` method as they are
    return batch is None or batch.kind is not Kind.OBJECT


def _where(site: Site) -> str:
    role = site.ctx.role
    function = site.ctx.function
    if function.endswith(".__init__"):  # state the dataset built, then hands out sample by sample
        owner = function.removesuffix(".__init__")
        return f"`{function}()`, and `{owner}.__getitem__()` hands it out for every sample the DataLoader builds"
    if role == "getitem" or function.endswith(".__getitem__"):
        return f"`{function}()`, which the DataLoader calls for every sample"
    if role == "collate":
        return f"`{function}()`, the DataLoader's `collate_fn`"
    chain = [name for name in site.ctx.callers if name != "<module>"]
    via = f" (called from `{chain[-1]}()`)" if chain else ""
    return f"`{function}()`{via}, which runs while the DataLoader builds a batch"


@rule.check
def cuda_work_in_loader_workers(program: "Program") -> Iterator[Report]:
    fresh_start = any(_FRESH_START.search(m.text or "") for m in program.sites(SiteKind.START_METHOD))
    loaders = {m.value.identity: m for m in program.sites(SiteKind.LOADER)}
    for site in program.sites(SiteKind.WORKER_MOVE):
        loader = loaders.get(site.value.identity)
        workers = _workers(site, fresh_start, loader)
        pins = _pins(site)
        if not workers and not pins:
            continue
        at = f" at line {program.line(loader.node)}" if loader is not None else ""
        name = site.value.origin.description.removeprefix("a batch from ") if site.value.origin else ""
        name = "" if name in ("`DataLoader`", "") else f" {name}"
        dataset_state = site.ctx.function.endswith(".__init__")  # built once, handed out per sample
        runs = "that happens" if dataset_state else "this runs"
        reasons = []
        if workers:
            reasons.append(
                f"the DataLoader{name}{at} has {workers}, so {runs} in forked worker processes, where "
                f"CUDA cannot be initialised again (`RuntimeError: Cannot re-initialize CUDA in forked subprocess`)"
            )
        if pins:
            reasons.append(
                f"{'it also' if workers else f'the DataLoader{name}{at}'} has `pin_memory=True`, and only CPU "
                f"tensors can be pinned (`RuntimeError: cannot pin 'torch.cuda.FloatTensor' only dense CPU "
                f"tensors can be pinned`)"
            )
        what = f"`{site.text}`" if len(site.text) <= 60 else "this move"
        yield Report(
            node=site.node,
            message=(
                f"{what} puts data on the GPU inside {_where(site)}; {'; '.join(reasons)}. "
                f"{'Keep the dataset on the CPU' if dataset_state else 'Return CPU tensors here'} "
                f"and move the batch in the training loop "
                f"(`batch = batch.to(device, non_blocking=True)`)."
            ),
            confidence=Confidence.DEFINITE,
            ctx=site.ctx,
            evidence=_story(site, workers, pins),
        )


def _story(site: Site, workers: str, pins: bool) -> tuple:
    """The loader that runs the code in workers (or pins its output), then the move there."""
    settings = " and ".join(([workers] if workers else []) + (["`pin_memory=True`"] if pins else []))
    made = site.value.origin  # the loader's: where it is built
    built = (evidence.at(made.node, f"the DataLoader is built here with {settings}"),) if made is not None else ()
    return built + (evidence.at(site.node, "this puts data on the GPU while the DataLoader builds a batch"),)
