"""DEV104 unregistered-tensor: a plain tensor attribute is not moved with its module."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.values import ORIGIN_ATTRIBUTE
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, when_it_crashes
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV104",
    name="unregistered-tensor",
    severity=Severity.ERROR,
    summary="A tensor stored as a plain attribute in __init__ stays on the CPU when the model is moved.",
    why="""
        `model.to(device)` moves parameters (`nn.Parameter`) and buffers (`register_buffer`),
        not plain tensor attributes. A mask, a positional-encoding table or a class-weight
        tensor assigned as `self.mask = torch.ones(...)` stays on the CPU, and `forward`
        crashes when it meets the device inputs. It is also missing from `state_dict()`.
    """,
    bad="""
        class Encoder(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.proj = nn.Linear(n, n)
                self.mask = torch.tril(torch.ones(n, n))

            def forward(self, x):
                return self.proj(x) * self.mask


        encoder = Encoder(16).to(device)
        out = encoder(torch.randn(4, 16, 16, device=device))
    """,
    good="""
        class Encoder(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.proj = nn.Linear(n, n)
                self.register_buffer("mask", torch.tril(torch.ones(n, n)))

            def forward(self, x):
                return self.proj(x) * self.mask


        encoder = Encoder(16).to(device)
        out = encoder(torch.randn(4, 16, 16, device=device))
    """,
    fix=FixSafety.UNSAFE,
    limits="""
        Library mode (on by default; `library-mode = false` turns it off): in a module's `forward`
        and in functions that take tensors, code no call in the analysed files reaches runs on
        its caller's device; the module's registered state is there too. A plain tensor attribute
        that meets the module's inputs there is reported as likely, even when nothing in the
        project moves the module: its users will.
    """,
)


@rule.check
def plain_tensor_attributes(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        origin = meet.host.origin
        if origin is None or origin.category != ORIGIN_ATTRIBUTE or origin.node is None:
            continue
        attr = origin.name or "this attribute"
        short = attr.removeprefix("self.")
        meets = (f"at line {program.position(meet.node)[0]} it meets device tensors "
                 f"({device_side(program, meet.device)}); {when_it_crashes(program, meet.ctx, meet.device)}")
        if "plain container" in origin.description:
            message = (
                f"`{attr}` is a plain container of tensors: `model.to(device)` does not move what it holds "
                f"(a buffer registered from the same tensor is replaced by a moved copy, the container keeps "
                f"the CPU one), and {meets}. Register each tensor with `self.register_buffer(...)` and read "
                f"the buffers (or use `nn.ParameterList` / `nn.ParameterDict` if they are trained)."
            )
        else:
            message = (
                f"`{attr}` is a plain tensor attribute, not a buffer: `model.to(device)` leaves it on the CPU, "
                f"and {meets}. Register it: `self.register_buffer('{short}', ...)` "
                f"(or wrap it in `nn.Parameter` if it is trained)."
            )
        yield Report(
            node=origin.node,
            message=message,
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            fix=_fixes.register_buffer(program, meet),
            evidence=evidence.meet_story(program, meet, f"`{attr}`"),
        )
