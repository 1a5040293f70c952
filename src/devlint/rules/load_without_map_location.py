"""DEV201 load-without-map-location: a program that runs without a GPU loads a checkpoint
without `map_location`, so a checkpoint saved from CUDA cannot be read there."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.events import Move, Site, SiteKind
from devlint.analysis.values import holds_only_host
from devlint.analysis.vocabulary import Fact
from devlint.findings import Confidence, Severity
from devlint.knowledge import torch as tk
from devlint.knowledge.signatures import positional_parameters
from devlint.rules._portability import fallback_device_text, supports_cpu
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
        official weights of `download.pytorch.org` or a package's release asset
        (`github.com/.../releases/download/...`), published for every machine. A file the
        program itself saved earlier in the run (the same literal path or the same expression,
        also through `open(path, "wb")`, or a path in the directory a checkpoint handler such as
        ignite's or Lightning's `ModelCheckpoint` writes into) was written on the machine that
        reads it, and one it saves from host values only (a cache of `.cpu()` tensors or
        strings) holds no CUDA tensor: neither is reported. Nor is a load whose path needs a
        GPU first: an unconditional `.cuda()` in the same function, or an NCCL process group or
        CUDA-only call (`torch.cuda.set_device`) that the loading code or its callers ran before.
        The CPU support must be on the way to the load (the same run, the loading function and
        its callers, or the loading module's top level); a branch on where a tensor already is
        (`x.is_cuda`, `input.device.type == "cpu"`) or on a helper's `cuda=True` parameter is
        a dispatch, not support.
    """,
)


@rule.check
def load_without_map_location(program: "Program") -> Iterator[Report]:
    if not supports_cpu(program):
        return
    saves: list[tuple[int, Site]] | None = None
    supports: list[tuple[int, Site | Move]] = []
    entry = next((i for i, e in enumerate(program.events) if isinstance(e, Site) and e.kind is SiteKind.ENTRY),
                 len(program.events))
    for index, site in enumerate(program.events):
        if not isinstance(site, Site) or site.kind is not SiteKind.LOAD or site.ctx.guarded:
            continue
        if site.spreads or "map_location" not in positional_parameters(site.callee) \
                or site.argument("map_location") is not None or _host_state_file(site) or _cpu_weights(site):
            continue
        if saves is None:
            saves = [(i, e) for i, e in enumerate(program.events) if isinstance(e, Site) and e.kind is SiteKind.SAVE]
            supports = _cpu_supports(program)
        if _written_here(program, site, index, saves) or _after_unconditional_cuda(program, site, index, entry):
            continue
        support = next((event for at, event in supports if _on_the_way(event, at, site, index, entry)), None)
        if support is None:
            continue  # what offers the CPU is not on the way to this load (another program's, a helper's)
        where = _cpu_evidence(program, site, support)  # positions cost a codegen of the file: only when reporting
        # a device the loading code can read there (else "cpu"): the message says what the fix writes
        device = _fixes.map_location_device(program, site.node, fallback_device_text(program, site) or "\"cpu\"")
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
            evidence=(_supports_cpu_step(support),)
            + (evidence.at(site.node, "the checkpoint is loaded here without `map_location`"),),
        )


def _cpu_supports(program: Program) -> list[tuple[int, Site | Move]]:
    """Where the program shows it runs without a GPU, with each event's index, in the order the
    evidence prefers: a CPU fallback, a CPU option, a GPU switch, a move made only when CUDA is
    available."""
    found: dict[SiteKind, list[tuple[int, Site | Move]]] = {SiteKind.CPU_FALLBACK: [], SiteKind.CPU_OPTION: [], SiteKind.CUDA_FLAG: []}
    guarded: list[tuple[int, Site | Move]] = []
    for index, event in enumerate(program.events):
        if isinstance(event, Site) and event.kind in found:
            found[event.kind].append((index, event))
        elif isinstance(event, Move) and event.ctx.guarded and event.target.on_device:
            guarded.append((index, event))
    return found[SiteKind.CPU_FALLBACK] + found[SiteKind.CPU_OPTION] + found[SiteKind.CUDA_FLAG] + guarded


def _on_the_way(support: Site | Move, at: int, load: Site, index: int, entry: int) -> bool:
    """Is the CPU support on the way to the load? A device chosen between a GPU and the CPU is
    the program's choice wherever it is made; a weaker sign (a CPU option, a GPU switch, a move
    under an availability test) counts when both are in the program's own run, in the loading
    function, one that called it or one it called, in a function one of those called, or at the
    top level of the loading module (which runs when it is imported). A switch in a helper
    nobody calls from here, or in another script, says nothing about this load."""
    if isinstance(support, Site) and support.kind is SiteKind.CPU_FALLBACK or at < entry and index < entry:
        return True
    load_chain = load.ctx.callers + (load.ctx.function,)
    chain = support.ctx.callers + (support.ctx.function,)
    if load_chain[:len(chain)] == chain or chain[:len(load_chain)] == load_chain:
        return support.ctx.path == load.ctx.path or support.ctx.function != "<module>"
    callers = support.ctx.callers
    if callers and load_chain[:len(callers)] == callers:
        return True
    return support.ctx.function == "<module>" and at < entry and support.ctx.path == load.ctx.path


def _supports_cpu_step(support: Site | Move) -> evidence.Step:
    """The evidence step that shows the program runs without a GPU."""
    if isinstance(support, Move):
        return evidence.at(support.node, "the program moves to the GPU only when CUDA is available")
    text = {SiteKind.CPU_FALLBACK: "the program falls back to the CPU here",
            SiteKind.CPU_OPTION: "the program offers the CPU here"}.get(
        support.kind, "the program runs on the CPU when this switch is off")
    return evidence.at(support.node, text)


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
        if at < index and save.names and save.names[0].startswith(_DIRECTORY) and _names_directory(load, save):
            return True  # a checkpoint handler of this run writes into the directory it reads
        if save.names != load.names:
            continue
        if holds_only_host(save.value):
            return True
        if at < index and (not _same_activation(save, load) or program.compatible(save.when, load.when)):
            return True
    return False


_DIRECTORY = "dir="  # the key of a directory a checkpoint handler writes into (analysis/files.py)


def _names_directory(load: Site, save: Site) -> bool:
    """Does the load's path expression name the directory the handler writes into?"""
    first = next((a for a in load.args if a.keyword in (None, "f", "url")), None)
    return first is not None and save.names[0][len(_DIRECTORY):] in "".join(first.text.split())


def _same_activation(a: Site, b: Site) -> bool:
    """Path conditions start afresh in every function: only those of one activation compare."""
    return (a.ctx.function, a.ctx.callers, a.ctx.path) == (b.ctx.function, b.ctx.callers, b.ctx.path)


def _after_unconditional_cuda(program: Program, load: Site, index: int, entry: int) -> bool:
    """The path to the load needs a GPU before it gets there: the code that loads moved something
    to CUDA unconditionally just before (`.cuda()` on every path to the load), or it, or a function
    called earlier on the way to it (`init_distributed_mode(args)`), starts an NCCL process group
    or calls CUDA-only API unconditionally. On a machine without a GPU the run fails there."""
    chain = load.ctx.callers + (load.ctx.function,)
    for event in program.events[:index]:
        if not isinstance(event, Site) or event.ctx.guarded or not _needs_gpu(event):
            continue
        if _same_activation(event, load):
            if event.when <= load.when:
                return True
        elif _ran_on_the_way(event, chain, index < entry):
            return True
    return False


def _ran_on_the_way(event: Site, chain: tuple[str, ...], main_run: bool) -> bool:
    """Did a function that the loading code, or one of its callers, called before the load
    (`utils.init_distributed_mode(args)`) start an NCCL group or call CUDA-only API on every
    path through it? From the script's own top level, only in the program's run (not in code
    no call reached, which the analysis starts afresh)."""
    if event.when or event.kind is SiteKind.CUDA and event.callee in tk.TENSOR_CUDA_MOVES:
        return False
    callers = event.ctx.callers
    return chain[:len(callers)] == callers and (bool(callers) or main_run)


def _needs_gpu(site: Site) -> bool:
    if site.kind is SiteKind.CUDA:
        return site.callee in tk.TENSOR_CUDA_MOVES or site.callee in tk.CUDA_REQUIRING
    return site.kind is SiteKind.PROCESS_GROUP and "nccl" in site.text and "gloo" not in site.text


def _cpu_evidence(program: Program, load: Site, support: Site | Move) -> str:
    """Where the program supports the CPU, for the message (the file too when it is another)."""
    if not isinstance(support, Site) or support.kind not in (SiteKind.CPU_FALLBACK, SiteKind.CPU_OPTION):
        return ""
    here = program.locate(load.node)[0]
    path, span = program.locate(support.node)
    line = f"line {span[0]}" if path == here else f"line {span[0]} of {os.path.relpath(path, os.path.dirname(here))}"
    if support.kind is SiteKind.CPU_FALLBACK:
        return f" (it falls back to the CPU at {line})"
    return f" (it offers the CPU at {line})"
