"""DEV106 changed-after-move: a submodule or parameter assigned after the model was moved."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.values import ORIGIN_AFTER_MOVE
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, when_it_crashes
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV106",
    name="changed-after-move",
    severity=Severity.ERROR,
    summary="A submodule or parameter assigned after model.to(device) stays on the CPU.",
    why="""
        `model.to(device)` moves what the model holds at that moment. A classifier head
        replaced afterwards (`model.fc = nn.Linear(...)`, the usual fine-tuning step) or any
        other submodule or parameter assigned later is created on the CPU and is not moved,
        so the next forward pass crashes with `Expected all tensors to be on the same device`.
        Replace the head before moving the model, or move the model again.
    """,
    bad="""
        model = torchvision.models.resnet18(weights="DEFAULT").to(device)
        model.fc = nn.Linear(model.fc.in_features, 10)
        out = model(images.to(device))
    """,
    good="""
        model = torchvision.models.resnet18(weights="DEFAULT")
        model.fc = nn.Linear(model.fc.in_features, 10)
        model = model.to(device)
        out = model(images.to(device))
    """,
    fix=FixSafety.UNSAFE,
)


@rule.check
def assigned_after_move(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        origin = meet.host.origin
        if origin is None or origin.category != ORIGIN_AFTER_MOVE or origin.node is None:
            continue
        moved_at = f" at line {program.position(origin.cause)[0]}" if origin.cause is not None else ""
        yield Report(
            node=origin.node,
            message=(
                f"{origin.description}{moved_at}: the new `{origin.name}` is on the CPU and is never moved, "
                f"and at line {program.position(meet.node)[0]} the model runs on device tensors "
                f"({device_side(program, meet.device)}); {when_it_crashes(program, meet.ctx, meet.device)}. "
                f"Assign it before the model is moved, or move the model again after the assignment."
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            fix=_fixes.move_assigned_value(program, meet),
            evidence=evidence.meet_story(program, meet),
        )
