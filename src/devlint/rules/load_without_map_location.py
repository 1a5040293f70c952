"""DEV201 load-without-map-location: a program that runs without a GPU loads a checkpoint
without `map_location`, so a checkpoint saved from CUDA cannot be read there."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.events import Site, SiteKind
from devlint.analysis.values import holds_only_host
from devlint.analysis.vocabulary import Fact
from devlint.findings import Confidence, Severity
from devlint.knowledge import torch as tk
from devlint.knowledge.signatures import positional_parameters
from devlint.rules._portability import fallback_device_text, fallback_events, supports_cpu
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV201",
    name="load-without-map-location",
    severity=Severity.WARNING,
    summary="torch.load without map_location in a program that also runs on a machine without a GPU.",
    why="""
        `torch.load` puts every tensor back on the device it was saved from. A checkpoint saved
        during GPU training holds CUDA tensors; on a machine without CUDA (which this program
        supports: it falls back to the CPU) loading it raises `RuntimeError: Attempting to
        deserialize object on a CUDA device but torch.cuda.is_available() is False`. On a machine
        with fewer GPUs than the one that saved it, tensors saved from `cuda:1` fail the same way,
        and in multi-process runs every rank loads onto the saving GPU. The same holds for
        `torch.hub.load_state_dict_from_url` and `torch.utils.model_zoo.load_url`.
    """,
    bad="""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("model.pt"))
        model.to(device)
    """,
    good="""
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("model.pt", map_location=device))
        model.to(device)
    """,
    fix=FixSafety.SAFE,
    limits="""
        Only programs that choose the CPU when no GPU is available (a `device` with a CPU
        fallback, or a move under `if torch.cuda.is_available():`) are checked: a script that
        requires a GPU has nowhere else to load. A load under `if torch.cuda.is_available():`
        is not reported. `map_location` passed through `**kwargs` counts as given. Files named
        for state that holds no CUDA tensor (RNG states, LR schedulers, GradScaler: a path
        with `rng`, `random_state`, `sched` or `scaler` in it) are not reported, nor are the
        official weights of `download.pytorch.org` (saved from CPU tensors). A file the program
        itself saved earlier in the run (the same literal path or the same expression, also
        through `open(path, "wb")`) was written on the machine that reads it, and one it saves
        from host values only (a cache of `.cpu()` tensors or strings) holds no CUDA tensor:
        neither is reported. Nor is a load that follows an unconditional `.cuda()` in the same
        function, which fails first on a machine without a GPU.
    """,
)


@rule.check
def load_without_map_location(program: "Program") -> Iterator[Report]:
    if not supports_cpu(program):
        return
    saves: list[tuple[int, Site]] | None = None
    cpu: tuple | None = None  # the evidence step where the program supports the CPU
    for index, site in enumerate(program.events):
        if not isinstance(site, Site) or site.kind is not SiteKind.LOAD or site.ctx.guarded:
            continue
        if site.spreads or "map_location" not in positional_parameters(site.callee) \
                or site.argument("map_location") is not None or _host_state_file(site) or _cpu_weights(site):
            continue
        if saves is None:
            saves = [(i, e) for i, e in enumerate(program.events) if isinstance(e, Site) and e.kind is SiteKind.SAVE]
        if _written_here(program, site, index, saves) or _after_unconditional_cuda(program, site, index):
            continue
        where = _cpu_evidence(program, site)  # positions cost a codegen of the file: only when reporting
        # a device the loading code can read there (else "cpu"): the message says what the fix writes
        device = _fixes.map_location_device(program, site.node, fallback_device_text(program, site) or "\"cpu\"")
        if cpu is None:
            cpu = _supports_cpu_step(program, fallback_events(program), next(program.sites(SiteKind.CPU_OPTION), None))
        short = site.callee.replace("torch.utils.model_zoo.", "model_zoo.")
        yield Report(
            node=site.node,
            message=(
                f"`{short}(...)` has no `map_location`: a checkpoint saved from a GPU is restored onto that GPU, "
                f"so on a machine without CUDA, which this program supports{where}, it fails with "
                f"`Attempting to deserialize object on a CUDA device`. Pass `map_location={device}`."
            ),
            confidence=Confidence.LIKELY,
            ctx=site.ctx,
            fix=_fixes.map_location(program, site.node, device),
            evidence=cpu + (evidence.at(site.node, "the checkpoint is loaded here without `map_location`"),),
        )


def _supports_cpu_step(program: Program, fallback: list[Site], option: Site | None) -> tuple:
    """Where the program shows it runs without a GPU: a CPU fallback, a CPU option, a GPU
    switch, or a move made only when CUDA is available."""
    if fallback:
        return (evidence.at(fallback[0].node, "the program falls back to the CPU here"),)
    if option is not None:
        return (evidence.at(option.node, "the program offers the CPU here"),)
    flag = next(program.sites(SiteKind.CUDA_FLAG), None)
    if flag is not None:
        return (evidence.at(flag.node, "the program runs on the CPU when this switch is off"),)
    guarded = next((move for move in program.moves if move.ctx.guarded and move.target.on_device), None)
    if guarded is not None:
        return (evidence.at(guarded.node, "the program moves to the GPU only when CUDA is available"),)
    return ()


def _host_state_file(site: Site) -> bool:
    """A file named for state that holds no CUDA tensor (`rng_state.pth`, `scheduler.pt`)."""
    if not site.args or site.args[0].keyword is not None:
        return False
    text = site.args[0].text.lower()
    return any(word in text for word in tk.HOST_STATE_FILE_WORDS)


def _cpu_weights(site: Site) -> bool:
    """Officially published weights (`https://download.pytorch.org/models/...`) hold CPU tensors."""
    first = site.args[0] if site.args else None
    return first is not None and first.keyword in (None, "url", "f") and first.value.has(Fact.CPU_WEIGHTS)


def _written_here(program: Program, load: Site, index: int, saves: list[tuple[int, Site]]) -> bool:
    """The program itself writes the file it loads: earlier in the run (a checkpoint reloaded
    after training, even one saved only when the validation loss improved), on a path that can
    lead to the load; or, wherever, from host values only (a cache of CPU tensors or strings)."""
    if not load.names:
        return False
    for at, save in saves:
        if save.names != load.names:
            continue
        if holds_only_host(save.value):
            return True
        if at < index and (not _same_activation(save, load) or program.compatible(save.when, load.when)):
            return True
    return False


def _same_activation(a: Site, b: Site) -> bool:
    """Path conditions start afresh in every function: only those of one activation compare."""
    return (a.ctx.function, a.ctx.callers, a.ctx.path) == (b.ctx.function, b.ctx.callers, b.ctx.path)


def _after_unconditional_cuda(program: Program, load: Site, index: int) -> bool:
    """The code that loads moved something to CUDA unconditionally just before (`.cuda()` on
    every path to the load): on a machine without a GPU it fails there, before the load."""
    for event in program.events[:index]:
        if isinstance(event, Site) and event.kind is SiteKind.CUDA and event.callee in tk.TENSOR_CUDA_MOVES \
                and not event.ctx.guarded and _same_activation(event, load) and event.when <= load.when:
            return True
    return False


def _cpu_evidence(program: Program, load: Site) -> str:
    """Where the program supports the CPU, for the message (the file too when it is another)."""
    fallback = fallback_events(program)
    option = next(program.sites(SiteKind.CPU_OPTION), None)
    support = fallback[0] if fallback else option
    if support is None:
        return ""
    here = program.locate(load.node)[0]
    path, span = program.locate(support.node)
    line = f"line {span[0]}" if path == here else f"line {span[0]} of {os.path.relpath(path, os.path.dirname(here))}"
    return f" (it falls back to the CPU at {line})" if fallback else f" (it offers the CPU at {line})"
