"""DEV203 late-visible-devices: CUDA_VISIBLE_DEVICES is set after CUDA started, so it is
silently ignored."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.events import Site, SiteKind
from devlint.findings import Confidence, Severity
from devlint.knowledge import torch as tk
from devlint.rules._portability import describe_init, is_cuda_init
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV203",
    name="late-visible-devices",
    severity=Severity.WARNING,
    summary="CUDA_VISIBLE_DEVICES is set after CUDA was initialised; the setting is ignored.",
    why="""
        CUDA reads `CUDA_VISIBLE_DEVICES` (and `CUDA_DEVICE_ORDER`) once, when the process first
        initialises it: the first `torch.cuda.is_available()`, `device_count()`, `.cuda()`,
        `.to("cuda")` or any other CUDA call. Setting the variable afterwards with
        `os.environ[...] = ...`, `os.environ.update(...)`, `os.environ.setdefault(...)` or
        `os.putenv(...)` changes nothing: the program keeps seeing every GPU and runs on GPU 0,
        possibly on top of someone else's job. (`import torch` alone does not initialise CUDA.)
    """,
    bad="""
        import os
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        x = torch.randn(4, 8).to(device)
    """,
    good="""
        import os

        os.environ["CUDA_VISIBLE_DEVICES"] = "1"

        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        x = torch.randn(4, 8).to(device)
    """,
    fix=FixSafety.SAFE,
    limits="""
        Order is the order the analysis runs the program in: module code, then the functions it
        calls. A function no call reaches is checked on its own, after the module code. Both
        branches of an `if` count as having run. CUDA initialised in another module before
        this one runs is not seen.
    """,
)


def _keys(site: Site) -> list[str]:
    keys = [name for name in site.names if name in tk.CUDA_INIT_ENV]
    return sorted(set(keys), key=lambda k: k != "CUDA_VISIBLE_DEVICES")


@rule.check
def late_visible_devices(program: "Program") -> Iterator[Report]:
    module_init = None
    entry_init = None
    in_entry = False
    for event in program.events:
        if isinstance(event, Site) and event.kind is SiteKind.ENTRY:
            in_entry, entry_init = True, None
            continue
        if is_cuda_init(event):
            if in_entry and entry_init is None:
                entry_init = event
            elif not in_entry and module_init is None:
                module_init = event
            continue
        if not (isinstance(event, Site) and event.kind is SiteKind.ENV):
            continue
        keys = _keys(event)
        init = entry_init or module_init
        if not keys or init is None:
            continue
        key = " and ".join(f"`{k}`" for k in keys)
        example = "CUDA_VISIBLE_DEVICES=1" if "CUDA_VISIBLE_DEVICES" in keys else "CUDA_DEVICE_ORDER=PCI_BUS_ID"
        yield Report(
            node=event.node,
            message=(
                f"{key} {'is' if len(keys) == 1 else 'are'} set here, after CUDA was initialised by "
                f"{describe_init(program, init)}: CUDA reads {'it' if len(keys) == 1 else 'them'} only once, at "
                f"initialisation, so this setting is silently ignored (the program still sees every GPU, in the "
                f"default order). Set it before the first CUDA call (at the top of the script, before anything "
                f"queries `torch.cuda`), or on the command line: `{example} python script.py`."
            ),
            confidence=Confidence.DEFINITE,
            ctx=event.ctx,
            fix=_fixes.env_before_cuda(program, event.ctx.statement, init.ctx.statement),
            evidence=(evidence.at(init.node, "CUDA is initialised here"),
                      evidence.at(event.node, f"{key} {'is' if len(keys) == 1 else 'are'} set here, too late")),
        )
