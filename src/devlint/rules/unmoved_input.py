"""DEV101 unmoved-input: host data meets a model or tensor that was moved to a device."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.values import ORIGIN_BATCH, ORIGIN_COMPUTED, ORIGIN_DATA, ORIGIN_TOKENIZER
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_expr, device_side, on_path, value_name, when_it_crashes, where_from
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule
from devlint.rules.discarded_to import discarded_before

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV101",
    name="unmoved-input",
    severity=Severity.ERROR,
    summary="A tensor still on the CPU meets a model or tensor that was moved to a device.",
    why="""
        `model.to(device)` moves the model's weights, not the data you feed it. A batch from a
        DataLoader, one of its fields (inputs, labels, masks), tokenizer output with
        `return_tensors="pt"`, or a tensor made with `torch.tensor` / `torch.from_numpy` is
        on the CPU until you move it. When it meets a device value in a call or an operation,
        PyTorch raises `RuntimeError: Expected all tensors to be on the same device`. In an
        evaluation loop that only runs after the first epoch, the crash costs the whole epoch.
    """,
    bad="""
        model = torchvision.models.resnet18(num_classes=10).to(device)
        criterion = nn.CrossEntropyLoss()
        val_loader = DataLoader(val_set, batch_size=64)
        for images, labels in val_loader:
            logits = model(images.to(device))
            loss = criterion(logits, labels)
    """,
    good="""
        model = torchvision.models.resnet18(num_classes=10).to(device)
        criterion = nn.CrossEntropyLoss()
        val_loader = DataLoader(val_set, batch_size=64)
        for images, labels in val_loader:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            loss = criterion(logits, labels)
    """,
    fix=FixSafety.UNSAFE,
    limits="""
        Data from helpers or libraries the analysis cannot see is treated as unknown and never
        reported. Frameworks that place batches themselves (accelerate, Lightning, the Hugging
        Face Trainer) and `nn.DataParallel`, which scatters its inputs, are not reported.
    """,
)

_DATA = {ORIGIN_BATCH, ORIGIN_DATA, ORIGIN_TOKENIZER, ORIGIN_COMPUTED}


@rule.check
def host_data_meets_device(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        host = meet.host
        origin = host.origin
        if origin is None or origin.category not in _DATA:
            continue
        name = value_name(host, "this tensor")
        condition = on_path(meet)
        device = device_expr(meet.device)
        if origin.category == ORIGIN_COMPUTED:
            model = origin.description.removeprefix("the output of ")
            built = f", built at line {program.line(origin.cause)}" if origin.cause is not None else ""
            source = f" ({origin.description}, a model that was never moved{built})"
            advice = f"Move the model to the device when you build it: `{model.strip('`')}.to({device})`."
        else:
            source = where_from(program, host)
            source = f" ({source})" if source else ""
            advice = (f"Move it to the device first: `{host.label} = {host.label}.to({device})`."
                      if host.label and "(" not in host.label  # a call's result is not assignable
                      else f"Move it to the device first, with `.to({device})`.")
        yield Report(
            node=meet.node,
            message=(
                f"{name} is still on the CPU here{condition}{source}, but "
                f"{device_side(program, meet.device)}: {when_it_crashes(program, meet.ctx, meet.device)}. {advice}"
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            # after a thrown-away `x.to(device)` the DEV107 fix (assign it) is the one repair
            fix=None if origin.category == ORIGIN_COMPUTED or discarded_before(program, host, meet.node, meet.ctx)
            else _fixes.move_before_use(program, meet),
            evidence=evidence.meet_story(program, meet, "this tensor"),
        )
