"""DEV114 optimizer-before-move: an optimizer with eager state is built before the model moves."""

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.events import Move, Site, SiteKind
from devlint.analysis.values import Kind, Value, identities_of
from devlint.analysis.vocabulary import Fact
from devlint.findings import Severity
from devlint.knowledge import matches
from devlint.knowledge import torch as tk
from devlint.rules import _evidence as evidence
from devlint.rules.base import Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV114",
    name="optimizer-before-move",
    severity=Severity.ERROR,
    summary="An optimizer whose state exists before the first step is built before model.to(device).",
    why="""
        `Module.to()` swaps each parameter's data in place, so most optimizers built before
        the move still see the right parameters and create their state lazily, on the device,
        at the first `step()`. Optimizers that create state in `__init__` (`Adagrad`), and any
        optimizer whose state was loaded with `load_state_dict` before the move, keep that
        state on the CPU; the first `step()` then mixes CPU state with device parameters.
    """,
    bad="""
        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
        optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
        model.to(device)
    """,
    good="""
        model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
        model.to(device)
        optimizer = torch.optim.Adagrad(model.parameters(), lr=0.01)
    """,
    limits="`SGD`, `Adam` and the other lazily initialised optimizers built before the move are fine and not reported.",
)


def _param_objects(value: Value, depth: int = 0) -> set[int]:
    if depth > 3:
        return set()
    found = {value.identity} if value.has(Fact.PARAMS) and value.identity else set()
    for _, field in value.fields:
        found |= _param_objects(field, depth + 1)
    if value.elem is not None:
        found |= _param_objects(value.elem, depth + 1)
    return found


@rule.check
def optimizer_state_before_move(program: "Program") -> Iterator[Report]:
    events = program.events
    for index, made in enumerate(events):
        if not (isinstance(made, Site) and made.kind is SiteKind.OPTIMIZER):
            continue
        owners: set[int] = set()
        for arg in made.args:
            # parameters on the host on every path: on the host on some paths only (moved
            # under a test before), the later move may be the one of a path that moved them
            # already (and unknown ones may have been moved by a helper)
            if arg.value.place.on_host:
                owners |= _param_objects(arg.value)
        if not owners:
            continue
        eager = matches(made.callee, tk.EAGER_STATE_OPTIMIZERS)
        loaded = False
        for later in events[index + 1:]:
            if isinstance(later, Site) and later.kind is SiteKind.OPTIMIZER_LOAD \
                    and made.value.identity in identities_of(later.value.identity):
                loaded = True
                continue
            if isinstance(later, Move) and owners & identities_of(later.subject.identity) and later.target.on_device \
                    and later.subject.kind is Kind.MODULE:
                if eager or loaded:
                    short = made.callee.rsplit(".", 1)[-1]
                    why = (f"`{short}` creates its state when it is built" if eager
                           else "its state was loaded with `load_state_dict`")
                    yield Report(
                        node=made.node,
                        message=(
                            f"the optimizer is built on the model's parameters before the model is moved "
                            f"(line {program.line(later.node)}), and {why}: that state stays on the "
                            f"CPU and the first `optimizer.step()` meets device parameters. Build the "
                            f"optimizer (and load its state) after `model.to(device)`."
                        ),
                        ctx=made.ctx,
                        evidence=(evidence.at(made.node, f"the optimizer is built here, and {why}"),
                                  evidence.at(later.node, "the model is moved here, after it")),
                    )
                break
