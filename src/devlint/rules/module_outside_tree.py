"""DEV103 module-outside-tree: a module used in `forward` that `model.to(device)` does not reach."""

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.values import ORIGIN_MODULE, ORIGIN_OUTSIDE_TREE, Kind
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, value_name, when_it_crashes, where_from
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program
    from devlint.analysis.values import Origin, Value

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


        model = Net().to(device)
        out = model(torch.randn(8, 64, device=device))
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


        model = Net().to(device)
        out = model(torch.randn(8, 64, device=device))
    """,
    limits="""
        Reported only when an instance of the class is moved to a device in the analysed code
        and the unregistered module meets device tensors in `forward`.
    """,
)


def _subject_and_fix(program: "Program", host: "Value", origin: "Origin") -> tuple[str, str]:
    """Name the module (`origin` is where it came from), say why `.to()` misses it, and the fix
    that fits that reason."""
    description = origin.description
    name = value_name(host, "this module")
    if origin.category == ORIGIN_OUTSIDE_TREE and "plain container" in description:
        container = f"`{origin.name}`" if origin.name else "a plain container"
        return (f"a module kept in the plain container {container}",
                "Hold the modules in `nn.ModuleList` / `nn.ModuleDict` (or register each with `add_module`).")
    if origin.category == ORIGIN_OUTSIDE_TREE and "stored on the class" in description:
        return (f"{name}, a module stored on the class instead of the instance,",
                f"Create it in `__init__` as `self.{origin.name or 'name'} = ...`.")
    if origin.category == ORIGIN_OUTSIDE_TREE and "inside `forward`" in description:
        made = description.split(", built inside")[0]
        return (f"{name}, built inside `forward` by {made} (fresh CPU weights on every call),",
                "Build it once in `__init__` as an attribute and use that in `forward`.")
    if origin.category == ORIGIN_OUTSIDE_TREE:
        return f"{name} ({description})", "Register it in `__init__` (an attribute, `nn.ModuleList` or `nn.ModuleDict`)."
    source = where_from(program, host)
    return (f"{name} ({source}), held outside the model,",
            f"Make it a submodule: pass it to `__init__` and keep it as `self.{host.label or 'encoder'} = ...`, "
            f"or move it with the model.")


@rule.check
def unregistered_modules_in_forward(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        host = meet.host
        if host.kind is not Kind.MODULE or host.origin is None:
            continue
        category = host.origin.category
        if category == ORIGIN_MODULE and meet.ctx.role != "forward":
            continue  # an unmoved module used outside a module is DEV102's
        if category not in (ORIGIN_OUTSIDE_TREE, ORIGIN_MODULE):
            continue
        subject, fix = _subject_and_fix(program, host, host.origin)
        yield Report(
            node=meet.node,
            message=(
                f"{subject} is not a registered submodule: `model.to(device)` leaves it on the CPU, "
                f"and here it meets device tensors ({device_side(program, meet.device)}); "
                f"{when_it_crashes(program, meet.ctx, meet.device)}. {fix}"
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            evidence=evidence.meet_story(program, meet, "this module"),
        )
