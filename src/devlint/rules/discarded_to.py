"""DEV107 discarded-to: `Tensor.to` returns a copy, so a bare `x.to(device)` moves nothing."""

from typing import TYPE_CHECKING, Iterator

from devlint.analysis.values import Kind
from devlint.findings import Fix, Severity
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Context, Move, Node
    from devlint.analysis.program import Program
    from devlint.analysis.values import Value

rule = Rule(
    code="DEV107",
    name="discarded-to",
    severity=Severity.ERROR,
    summary="The result of Tensor.to() / .cuda() / .cpu() is thrown away; the tensor stays where it was.",
    why="""
        `Module.to()` moves a model in place, but `Tensor.to()`, `.cuda()` and `.cpu()` return a
        new tensor and leave the original where it was. A bare `x.to(device)` statement does
        nothing; the next use of `x` meets the device model with a CPU tensor and raises
        `Expected all tensors to be on the same device`.
    """,
    bad="""
        model = nn.Linear(20, 2).to(device)
        loader = DataLoader(train_set, batch_size=32)
        for x, y in loader:
            x.to(device)
            out = model(x)
    """,
    good="""
        model = nn.Linear(20, 2).to(device)
        loader = DataLoader(train_set, batch_size=32)
        for x, y in loader:
            x = x.to(device)
            out = model(x)
    """,
    fix=FixSafety.SAFE,
    one_per_line=False,
    limits="Only values known to be tensors are reported: a bare `.to()` on a module is correct.",
)


def _discarded(move: "Move") -> bool:
    return bool(move.statement) and move.subject.kind is Kind.TENSOR


def discarded_before(program: "Program", value: "Value", node: "Node", ctx: "Context | None") -> bool:
    """Was `value` the subject of a discarded `.to()` earlier in the same function, before
    `node`? Then the DEV107 finding at that move explains the crash at `node` and its fix
    repairs it: DEV105 stays silent and DEV101 (which marks the crash line) offers no second
    repair, so one crash gets one fix."""
    origin = value.origin
    if origin is None or origin.node is None or not value.label or ctx is None:
        return False
    where = program.position(node)[:2]
    for move in program.moves:
        subject = move.subject.origin
        if _discarded(move) and subject is not None and subject.node is origin.node \
                and move.subject.label == value.label and move.ctx is not None \
                and move.ctx.function == ctx.function and program.position(move.node)[:2] < where:
            return True
    return False


@rule.check
def discarded_moves(program: "Program") -> Iterator[Report]:
    for move in program.moves:
        if not _discarded(move):
            continue
        text = move.subject_text
        simple = text.replace(".", "").replace("_", "").isalnum()
        fix = None
        if simple:
            line, col, _, _ = program.position(move.node)
            fix = Fix(description=f"assign the result: `{text} = {text}.{move.method}(...)`", safe=True,
                      edits=((line, col, line, col, f"{text} = "),))
        yield Report(
            node=move.node,
            message=(
                f"`{text}.{move.method}(...)` returns a moved copy that is thrown away, so `{text}` stays "
                f"where it was. Assign the result: `{text} = {text}.{move.method}(...)`."
            ),
            ctx=move.ctx,
            fix=fix,
            evidence=evidence.subject(program, move) + (
                evidence.at(move.node, f"its moved copy is thrown away here, so `{text}` stays where it was"),),
        )
