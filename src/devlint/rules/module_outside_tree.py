"""DEV103 module-outside-tree: a module used in `forward` that `model.to(device)` does not reach."""

from devlint.analysis.values import ORIGIN_MODULE, ORIGIN_OUTSIDE_TREE, Kind
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, value_name, when_it_crashes, where_from
from devlint.rules.base import FixSafety, Report, Rule

rule = Rule(
    code="DEV103",
    name="module-outside-tree",
    severity=Severity.ERROR,
    summary="A module used in forward() is not registered, so model.to(device) leaves it on the CPU.",
    why="""
        `model.to(device)` moves the parameters and buffers of registered submodules only.
        A module kept as a module-level global, in a plain `list` / `dict` / `tuple` attribute
        (instead of `nn.ModuleList` / `nn.ModuleDict`), stored on the class instead of the
        instance, or constructed inside `forward` (fresh CPU weights on every call) is not
        registered: it stays on the CPU, is missing from `model.parameters()` (so it is never
        trained) and crashes with `Expected all tensors to be on the same device` when forward
        runs on device inputs.
    """,
    bad="""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = [nn.Linear(64, 64) for _ in range(4)]

            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return x
    """,
    good="""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList(nn.Linear(64, 64) for _ in range(4))

            def forward(self, x):
                for block in self.blocks:
                    x = block(x)
                return x
    """,
    limits="""
        Reported only when an instance of the class is moved to a device in the analysed code
        and the unregistered module meets device tensors in `forward`.
    """,
)


@rule.check
def unregistered_modules_in_forward(program):
    for meet in program.meets:
        host = meet.host
        if host.kind is not Kind.MODULE or host.origin is None:
            continue
        category = host.origin.category
        if category == ORIGIN_OUTSIDE_TREE:
            reason = host.origin.description
        elif category == ORIGIN_MODULE and meet.ctx.role == "forward":
            reason = f"{where_from(program, host)}, which is not a registered submodule"
        else:
            continue
        yield Report(
            node=meet.node,
            message=(
                f"{value_name(host, 'this module')} is {reason}: `model.to(device)` does not move it, "
                f"but here it meets device tensors ({device_side(program, meet.device)}); "
                f"{when_it_crashes(program, meet.ctx)}. Register it in `__init__` (an attribute, "
                f"`nn.ModuleList` or `nn.ModuleDict`)."
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
        )
