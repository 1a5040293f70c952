"""DEV102 unmoved-module: a module with weights that is never moved is called with device tensors."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.values import ORIGIN_MODULE, Kind
from devlint.analysis.vocabulary import Fact
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_expr, device_side, value_name, when_it_crashes, where_from
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV102",
    name="unmoved-module",
    severity=Severity.ERROR,
    summary="A module with weights that was never moved is called with tensors on a device.",
    why="""
        Every module that holds parameters or buffers must be moved, not only the main model:
        a teacher or EMA model, a second network, a sub-model loaded with `from_pretrained`, or
        a loss built with a `weight=` / `pos_weight=` tensor. Called with device inputs, its CPU
        weights raise `RuntimeError: Expected all tensors to be on the same device`.
    """,
    bad="""
        student = torchvision.models.resnet18(num_classes=10).to(device)
        teacher = torchvision.models.resnet50(num_classes=10)
        loader = DataLoader(train_set, batch_size=32)
        for x, y in loader:
            x = x.to(device)
            with torch.no_grad():
                soft = teacher(x)
    """,
    good="""
        student = torchvision.models.resnet18(num_classes=10).to(device)
        teacher = torchvision.models.resnet50(num_classes=10).to(device)
        loader = DataLoader(train_set, batch_size=32)
        for x, y in loader:
            x = x.to(device)
            with torch.no_grad():
                soft = teacher(x)
    """,
    fix=FixSafety.UNSAFE,
    limits="""
        Loss modules without weight tensors hold nothing and need no move; they are never
        reported. A module used inside another module's `forward` that the parent's move does
        not reach is DEV103.
    """,
)


@rule.check
def host_module_called_with_device_tensors(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        host = meet.host
        if host.kind is not Kind.MODULE or host.origin is None or host.origin.category != ORIGIN_MODULE:
            continue
        if meet.ctx.role == "forward":
            continue  # DEV103's business
        name = value_name(host, "this module")
        source = where_from(program, host)
        what = "holds a weight tensor on the CPU" if host.has(Fact.LOSS_WEIGHT) else "was never moved to a device"
        yield Report(
            node=meet.node,
            message=(
                f"{name} ({source}) {what}, but it is called with device tensors: "
                f"{device_side(program, meet.device)}; {when_it_crashes(program, meet.ctx, meet.device)}. "
                f"Move it once after building it: `{host.label or 'module'}.to({device_expr(meet.device)})`."
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            fix=_fixes.move_after_construction(program, meet),
            evidence=evidence.meet_story(program, meet, "this module"),
        )
