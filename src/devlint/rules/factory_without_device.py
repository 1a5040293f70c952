"""DEV105 factory-without-device: a tensor made with no `device=` meets device tensors."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.events import SiteKind
from devlint.analysis.values import ORIGIN_FACTORY, Kind
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, value_name, when_it_crashes
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule
from devlint.rules.discarded_to import discarded_before

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Meet
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV105",
    name="factory-without-device",
    severity=Severity.ERROR,
    summary="A tensor made by a factory (torch.zeros, torch.arange, ...) without device= meets device tensors.",
    why="""
        Factories such as `torch.zeros`, `torch.ones`, `torch.arange`, `torch.randn` and
        `torch.tensor` create tensors on the CPU unless they are given `device=`. Made inside
        `forward` or a training loop and combined with the device inputs (an LSTM's initial
        hidden state, a mask, a one-hot target), they crash with `Expected all tensors to be
        on the same device`. Use `device=x.device`, a `*_like(x)` factory or `x.new_zeros(...)`.
        The legacy typed constructors (`torch.FloatTensor(mu.shape)`, `torch.LongTensor([sos])`)
        are factories too when the code builds them from sizes or its own values; they accept no
        `device=` for a GPU, so build such tensors with `torch.empty` / `torch.tensor` instead.
    """,
    bad="""
        class Tagger(nn.Module):
            def __init__(self, dim=32, layers=2):
                super().__init__()
                self.layers, self.dim = layers, dim
                self.gru = nn.GRU(dim, dim, layers, batch_first=True)

            def forward(self, x):
                h0 = torch.zeros(self.layers, x.size(0), self.dim)
                out, _ = self.gru(x, h0)
                return out


        model = Tagger().to(device)
        out = model(torch.randn(4, 10, 32, device=device))
    """,
    good="""
        class Tagger(nn.Module):
            def __init__(self, dim=32, layers=2):
                super().__init__()
                self.layers, self.dim = layers, dim
                self.gru = nn.GRU(dim, dim, layers, batch_first=True)

            def forward(self, x):
                h0 = torch.zeros(self.layers, x.size(0), self.dim, device=x.device)
                out, _ = self.gru(x, h0)
                return out


        model = Tagger().to(device)
        out = model(torch.randn(4, 10, 32, device=device))
    """,
    fix=FixSafety.UNSAFE,
    limits="""
        Zero-dimensional tensors (`torch.tensor(2.0)`) and empty placeholders (`torch.empty(0)`)
        may meet device tensors and are never reported; factories under
        `torch.set_default_device` or `with torch.device(...)` are on that device. Library mode (on by default; `library-mode = false` turns it off): in a module's `forward`
        and in functions that take tensors, code no call in the analysed files reaches runs on
        its caller's device; the module's registered state is there too. A
        factory there that meets the caller's tensors is reported as likely ("when it runs on a
        GPU"); `*_like`, `x.new_*`, `device=x.device`, `.to(x)` and `.type_as(x)` follow the input.
    """,
)


@rule.check
def host_factories_meet_device(program: "Program") -> Iterator[Report]:
    for meet in program.meets:
        origin = meet.host.origin
        if origin is None or origin.category != ORIGIN_FACTORY or origin.node is None:
            continue
        if discarded_before(program, meet.host, meet.node, meet.ctx):
            continue  # DEV107 reports the thrown-away move that leaves it there
        name = value_name(meet.host, "the tensor")
        hint = _device_hint(meet)
        why = "its `device=` is the CPU here" if _given_device(program, origin.node) else "no `device=`"
        if origin.description.endswith("Tensor(...)`"):  # a legacy typed constructor takes no device=
            hint = f"build it with `torch.tensor(...)` / `torch.empty(...)` and {hint.replace('add ', '', 1)}"
        yield Report(
            node=origin.node,
            message=(
                f"{origin.description} makes {name} on the CPU ({why}), and at line "
                f"{program.position(meet.node)[0]} it meets device tensors "
                f"({device_side(program, meet.device)}); {when_it_crashes(program, meet.ctx, meet.device)}. "
                f"Create it on the device: {hint} (or use a `*_like` factory / `x.new_*`)."
            ),
            confidence=Confidence.LIKELY if meet.likely else Confidence.DEFINITE,
            ctx=meet.ctx,
            fix=_fixes.factory_device(program, meet),
            evidence=evidence.meet_story(program, meet, "the tensor"),
        )


def _given_device(program: "Program", node: object) -> bool:
    """Does the factory call pass `device=` (one that is the CPU on this path)?"""
    return any(site.node is node and site.keyword("device") is not None for site in program.sites(SiteKind.FACTORY))


def _device_hint(meet: "Meet") -> str:
    """Advice that runs: the tensor the fix itself would use, else the tensor it meets by name;
    a plain `nn.Module` has no `.device`, so a module is asked for its parameters' device."""
    reference = _fixes.factory_reference(meet)
    if reference:
        return f"add `device={reference}.device`"
    other = meet.device
    if other.label.isidentifier():
        if other.kind is Kind.MODULE:
            return f"add `device=next({other.label}.parameters()).device`"
        return f"add `device={other.label}.device`"
    return "pass `device=` the device of the tensors it meets"

