"""DEV112 dataparallel-device: `nn.DataParallel` needs the module on `device_ids[0]`, but the
model is moved to another GPU."""

from __future__ import annotations

from devlint._lazy import lazy_import
from devlint.analysis import devices
from devlint.analysis.events import Made, Move
from devlint.analysis.values import Kind, Value, Where
from devlint.findings import Confidence, Severity
from devlint.rules._describe import value_name
from devlint.rules._portability import current_device, int_fact
from devlint.rules.base import Report, Rule

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
cst = lazy_import("libcst")
interp = lazy_import("devlint.analysis.interp")


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
        to be known; `device_ids=args.gpus` is not checked. Inputs need not be on
        `device_ids[0]` (DataParallel scatters them from anywhere); a target that meets the
        gathered output on another GPU is DEV111.
    """,
)


def _device_ids_node(call: cst.CSTNode) -> tuple[bool, cst.BaseExpression | None]:
    """(device_ids given?, its expression) of a DataParallel(...) call."""
    if not isinstance(call, cst.Call):
        return False, None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device_ids":
            return True, arg.value
        if arg.star:
            return True, None  # **kwargs: not known
    positional = [a for a in call.args if a.keyword is None]
    if len(positional) > 1:
        return True, positional[1].value
    return False, None


def _first_device(made: Made) -> tuple[str, str]:
    """(identity of device_ids[0], how the program writes it); ("", "") when not known."""
    given, expr = _device_ids_node(made.node)
    if not given or (isinstance(expr, cst.Name) and expr.value == "None"):
        return "cuda:0", "cuda:0 (the default `device_ids` is every visible GPU)"
    if expr is None:
        return "", ""
    value = next((v for k, v in made.args if k == "device_ids"), None)
    if value is None:
        positional = [v for k, v in made.args if k is None]
        value = positional[1] if len(positional) > 1 else None
    if isinstance(expr, (cst.List, cst.Tuple)):
        if not expr.elements or isinstance(expr.elements[0], cst.StarredElement):
            return "", ""
        first = expr.elements[0].value
        if isinstance(first, cst.Integer):
            index = int(first.value, 0)
            return f"cuda:{index}", f"cuda:{index} (`device_ids[0]`)"
        text = interp.code_of(first)
        return devices.indexed("cuda", None, text), f"cuda:{text} (`device_ids[0]`)"
    if value is not None and value.kind in (Kind.LIST, Kind.TUPLE):
        first_value = value.get_field(0)
        index = int_fact(first_value)
        if index is not None:
            return f"cuda:{index}", f"cuda:{index} (`{interp.code_of(expr)}[0]`)"
    return "", ""


@rule.check
def dataparallel_device(program):
    current = current_device(program)
    events = program.events
    for position, made in enumerate(events):
        if not isinstance(made, Made) or made.what != "dataparallel" or not made.qual.endswith("DataParallel"):
            continue
        expected, expected_text = _first_device(made)
        if not expected:
            continue
        model = next((v for k, v in made.args if k is None), None) or next(
            (v for k, v in made.args if k == "module"), None)
        if model is None:
            continue
        place, where_text = model.place, "before it was wrapped"
        for later in events[position + 1:]:
            if isinstance(later, Move) and made.value.obj and later.subject.obj == made.value.obj:
                place, where_text = later.target, "after it was wrapped"
        if place.where not in (Where.DEVICE, Where.COND) or not place.ident:
            continue
        gpu, _ = devices.split(devices.effective(place, program.interpreter.availability_conds))
        if not devices.gpus_disagree(gpu, expected, current):
            continue
        line = program.position(place.node)[0] if place.node is not None else 0
        at = f" at line {line}" if line else ""
        words = devices.describe(gpu)
        described = f" ({words})" if words != (place.device or "").strip("\"'") else ""
        yield Report(
            node=made.node,
            message=(
                f"`{made.text or 'DataParallel(...)'}` keeps the module on {expected_text}, but "
                f"{_name(model)} is moved to `{place.device or 'a GPU'}`{described}{at} {where_text}: "
                f"the first forward raises `RuntimeError: module must have its parameters and buffers on "
                f"device {expected.replace('{', '').replace('}', '')} (device_ids[0])`. Move the model to "
                f"`device_ids[0]` (or call `torch.cuda.set_device(device_ids[0])` before `.cuda()`)."
            ),
            confidence=Confidence.LIKELY,
            ctx=made.ctx,
        )


def _name(value: Value) -> str:
    return value_name(value, "the model")
