"""What the portability rules (DEV111-112, DEV2xx, DEV3xx) read from a program, in one place:
the current CUDA device, whether the program supports a machine without a GPU, and the small
syntactic facts about one event's own call (a literal argument) that the analysis does not
keep. None of these decides a finding; the rules do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis import devices
from devlint.analysis.events import Made, Move
from devlint.analysis.values import Value
from devlint.knowledge import matches
from devlint.knowledge import torch as tk

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
cst = lazy_import("libcst")
interp = lazy_import("devlint.analysis.interp")


if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program


def int_fact(value: Value | None) -> int | None:
    """The literal int a value is known to hold (the analysis records `int=N`)."""
    if value is None:
        return None
    for fact in value.facts:
        if fact.startswith("int="):
            try:
                return int(fact[4:])
            except ValueError:
                return None
    return None


def bool_fact(value: Value | None) -> bool | None:
    if value is None:
        return None
    if "bool=True" in value.facts:
        return True
    if "bool=False" in value.facts:
        return False
    return None


def current_device(program: "Program") -> str | None:
    """Identity of the current CUDA device: cuda:0 unless `torch.cuda.set_device` changes it;
    cuda:k when every call sets the literal k; None when a call sets something unknown."""
    indices = set()
    for made in program.made("cuda"):
        if made.qual != "torch.cuda.set_device":
            continue
        value = next((v for k, v in made.args if k in (None, "device")), None)
        index = int_fact(value)
        if index is None:
            return None
        indices.add(index)
    if not indices:
        return "cuda:0"
    return f"cuda:{indices.pop()}" if len(indices) == 1 else None


def fallback_events(program: "Program") -> list[Made]:
    return list(program.made("cpu_fallback"))


def supports_cpu(program: "Program") -> bool:
    """The program runs without a GPU: it picks the CPU as a fallback somewhere, moves
    something only under `if torch.cuda.is_available():`, or branches on a user's GPU switch
    (`if args.cuda:`)."""
    if fallback_events(program) or any(True for _ in program.made("cuda_flag")):
        return True
    return any(move.ctx.guarded and move.target.on_device for move in program.moves)


def fallback_device_text(program: "Program") -> str:
    """The name the program gives its GPU-or-CPU device (`device`), for fix suggestions."""
    for move in program.moves:
        if not devices.split(devices.effective(move.target))[1] or not isinstance(move.call, cst.Call):
            continue
        arg = next((a.value for a in move.call.args if a.keyword is None or a.keyword.value == "device"), None)
        if isinstance(arg, (cst.Name, cst.Attribute)):
            return interp.code_of(arg)
    return ""


def keyword_node(call: cst.CSTNode | None, name: str) -> cst.BaseExpression | None:
    if not isinstance(call, cst.Call):
        return None
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def literal_bool(node: cst.BaseExpression | None) -> bool | None:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def cuda_init_events(program: "Program") -> Iterator[object]:
    """Events that initialise CUDA when they run (the first one fixes the visible devices)."""
    for event in program.events:
        if is_cuda_init(event):
            yield event


def is_cuda_init(event: object) -> bool:
    if isinstance(event, Made):
        if event.what == "cuda_query":
            return event.qual.startswith("torch.cuda.")
        if event.what == "cuda":
            if event.qual in ("Tensor.cuda", "Tensor.to"):
                return True
            return event.qual.startswith("torch.cuda.") and not matches(event.qual, tk.CUDA_NOT_INITIALISING)
        if event.what == "factory":
            return event.value.place.on_device and devices.is_cuda(event.value.place.ident)
        return False
    if isinstance(event, Move):
        return event.target.on_device and devices.is_cuda(event.target.ident)
    return False


def describe_init(program: "Program", event: object) -> str:
    line = program.position(event.node)[0]  # type: ignore[attr-defined]
    if isinstance(event, Made) and event.what == "cuda_query":
        return f"`{event.qual}()` at line {line}"
    if isinstance(event, Made) and event.what == "cuda" and event.qual.startswith("torch.cuda."):
        return f"`{event.qual}()` at line {line}"
    if isinstance(event, Move):
        return f"the move to `{event.target.device or 'cuda'}` at line {line}"
    if isinstance(event, Made) and event.qual == "Tensor.cuda":
        return f"`.cuda()` at line {line}"
    if isinstance(event, Made) and event.qual == "Tensor.to":
        return f"`.to(\"cuda\")` at line {line}"
    return f"the CUDA call at line {line}"
