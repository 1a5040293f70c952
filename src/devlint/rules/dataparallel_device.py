"""DEV112 dataparallel-device: `nn.DataParallel` needs the module on `device_ids[0]`, but the
model is moved to another GPU."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from devlint.analysis import devices
from devlint.analysis.events import Argument, Move, Site, SiteKind
from devlint.analysis.values import Kind, Placement, Value, Where
from devlint.analysis.vocabulary import known_int
from devlint.findings import Confidence, Severity
from devlint.rules._describe import value_name
from devlint.rules._portability import current_device
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

_INTEGER = re.compile(r"0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|\d[\d_]*")


rule = Rule(
    code="DEV112",
    name="dataparallel-device",
    severity=Severity.WARNING,
    summary="nn.DataParallel's device_ids[0] is not the device the model was moved to.",
    why="""
        `nn.DataParallel` keeps the module's parameters on `device_ids[0]` (every visible GPU,
        starting at `cuda:0`, when `device_ids` is not given) and replicates them from there on
        each forward. If the model was moved to another GPU (`model.to("cuda:1")`, or `.cuda()`
        with `device_ids=[1, 2]`), the first forward raises `RuntimeError: module must have its
        parameters and buffers on device cuda:1 (device_ids[0]) but found one of them on device:
        cuda:0`. It works on the machine where the two happen to agree and fails when the GPU
        list is changed.
    """,
    bad="""
        import torch
        import torch.nn as nn

        if torch.cuda.device_count() < 3:
            raise SystemExit("trains on GPUs 1 and 2")
        model = nn.Linear(8, 2).cuda()
        model = nn.DataParallel(model, device_ids=[1, 2])
        out = model(torch.randn(4, 8))
    """,
    good="""
        import torch
        import torch.nn as nn

        if torch.cuda.device_count() < 3:
            raise SystemExit("trains on GPUs 1 and 2")
        model = nn.Linear(8, 2).to("cuda:1")
        model = nn.DataParallel(model, device_ids=[1, 2])
        out = model(torch.randn(4, 8))
    """,
    limits="""
        `device_ids` must be a literal list (or a variable bound to one) for its first element
        to be known; with `device_ids=args.gpus` only a move to the CPU is checked: a model
        moved to the CPU on a path the user chooses (`if args.force_cpu: device = "cpu"`) while
        DataParallel is given GPUs. The CPU fallback of a machine without a GPU is fine. Inputs need not be on
        `device_ids[0]` (DataParallel scatters them from anywhere); a target that meets the
        gathered output on another GPU is DEV111.
    """,
)


_UNKNOWN = object()  # `device_ids` is passed, but through `*args` / `**kwargs`


def _device_ids(site: Site) -> Argument | object | None:
    """The `device_ids` argument of a DataParallel(...) call (`_UNKNOWN` when a spread argument
    may hold it, None when it is not given)."""
    for arg in site.args:
        if arg.keyword == "device_ids":
            return arg
        if arg.keyword in ("*", "**"):
            return _UNKNOWN
    positional = site.positional
    return positional[1] if len(positional) > 1 else None


def _first_device(site: Site) -> tuple[str, str]:
    """(identity of device_ids[0], how the program writes it); ("", "") when not known."""
    given = _device_ids(site)
    if given is _UNKNOWN:
        return "", ""
    if not isinstance(given, Argument) or given.text == "None":  # (None: not given)
        return "cuda:0", "cuda:0 (the default `device_ids` is every visible GPU)"
    argument = given
    items = argument.items
    if items is not None:
        if not items or items[0].startswith("*"):
            return "", ""
        first = items[0]
        if _INTEGER.fullmatch(first):
            index = int(first, 0)
            return f"cuda:{index}", f"cuda:{index} (`device_ids[0]`)"
        return devices.indexed("cuda", None, first), f"cuda:{first} (`device_ids[0]`)"
    if argument.value.kind in (Kind.LIST, Kind.TUPLE):
        known = known_int(argument.value.get_field(0))
        if known is not None:
            return f"cuda:{known}", f"cuda:{known} (`{argument.text}[0]`)"
    return "", ""


@rule.check
def dataparallel_device(program: "Program") -> Iterator[Report]:
    current = current_device(program)
    events = program.events
    for position, site in enumerate(events):
        if not isinstance(site, Site) or site.kind is not SiteKind.DATAPARALLEL:
            continue
        expected, expected_text = _first_device(site)
        model = site.argument("module")
        if model is None or _device_ids(site) is _UNKNOWN:
            continue
        place, where_text, moved = model.value.place, "before it was wrapped", False
        for later in events[position + 1:]:
            if isinstance(later, Move) and site.value.identity and later.subject.identity == site.value.identity:
                place, where_text, moved = later.target, "after it was wrapped", True
        place = program.reachable(place, site.when)
        report = _on_the_cpu(program, site, model.value, place, where_text, moved)
        if report is not None:
            yield report
            continue
        if not expected or place.where not in (Where.DEVICE, Where.COND) or not place.ident:
            continue
        gpu, _ = devices.split(devices.effective(place, program.availability_conditions))
        if not devices.gpus_disagree(gpu, expected, current):
            continue
        line = program.line(place.node) if place.node is not None else 0
        at = f" at line {line}" if line else ""
        words = devices.describe(gpu)
        described = f" ({words})" if words != (place.device or "").strip("\"'") else ""
        yield Report(
            node=site.node,
            message=(
                f"`{site.text or 'DataParallel(...)'}` keeps the module on {expected_text}, but "
                f"{_name(model.value)} is moved to `{place.device or 'a GPU'}`{described}{at} {where_text}: "
                f"the first forward raises `RuntimeError: module must have its parameters and buffers on "
                f"device {expected.replace('{', '').replace('}', '')} (device_ids[0])`. Move the model to "
                f"`device_ids[0]` (or call `torch.cuda.set_device(device_ids[0])` before `.cuda()`)."
            ),
            confidence=Confidence.LIKELY,
            ctx=site.ctx,
            evidence=_story(site, model.value, place, f"`{place.device or 'a GPU'}`"),
        )


def _story(site: Site, model: Value, place: Placement, target: str, when: str = "") -> tuple:
    """Where the model is moved, then the wrapper that expects it on `device_ids[0]`."""
    moved = (evidence.at(place.node, f"{_name(model)} is moved to {target} here{when}"),) \
        if place.node is not None else ()
    return moved + (evidence.at(site.node, "DataParallel expects it on `device_ids[0]` here"),)


def _on_the_cpu(program: Program, site: Site, model: Value, place: Placement, where_text: str,
                moved: bool) -> Report | None:
    """The model is moved to the CPU on a path the user chooses (`--force_cpu`) while
    DataParallel is given GPUs: on a machine with CUDA, DataParallel keeps to its devices and
    the first forward finds the parameters on the CPU. A CPU that is only the fallback of a
    machine without a GPU is fine (DataParallel then runs the module as it is)."""
    if not (place.where is Where.COND or moved and place.where is Where.HOST):
        return None
    when = program.chosen_host_path(place, site.when)
    if when is None:
        return None
    given = _device_ids(site)
    first = "`device_ids[0]`" if given is not None else "`cuda:0` (the default `device_ids` is every visible GPU)"
    condition = f" when {when}" if when else ""
    line = program.line(place.node) if place.node is not None else 0
    at = f" at line {line}" if line else ""
    return Report(
        node=site.node,
        message=(
            f"`{site.text or 'DataParallel(...)'}` keeps the module on {first}, but {_name(model)} is moved "
            f"to the CPU{condition}{at} {where_text}: on a machine with CUDA the first forward raises "
            f"`RuntimeError: module must have its parameters and buffers on device cuda:0 (device_ids[0]) but "
            f"found one of them on device: cpu`. Wrap the model only when it runs on a GPU."
        ),
        confidence=Confidence.LIKELY,
        ctx=site.ctx,
        evidence=_story(site, model, _host_alternative(place), "the CPU", condition),
    )


def _host_alternative(place: Placement) -> Placement:
    """The path of `place` that is on the CPU, when its move is known (else `place` itself)."""
    return next((alternative for _, alternative in place.paths
                 if alternative.on_host and alternative.node is not None), place)


def _name(value: Value) -> str:
    return value_name(value, "the model")
