"""DEV108 to-on-non-tensor: `.to()` / `.cuda()` on an object that has no such method."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.analysis.values import Kind
from devlint.findings import Severity
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


rule = Rule(
    code="DEV108",
    name="to-on-non-tensor",
    severity=Severity.ERROR,
    summary="`.to()` or `.cuda()` is called on an object that has no such method (DataLoader, tokenizer, list, ...).",
    why="""
        Only tensors, modules and a few containers such as a Hugging Face `BatchEncoding`
        have `.to()`. A DataLoader, a Dataset, a tokenizer, an optimizer, a Python list, tuple
        or dict, or a NumPy array raises `AttributeError: '...' object has no attribute 'to'`.
        Move what they produce instead: each batch inside the loop, the tokenizer's output, the
        tensors in the list.
    """,
    bad="""
        loader = DataLoader(dataset, batch_size=32)
        loader.to(device)
    """,
    good="""
        loader = DataLoader(dataset, batch_size=32)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
    """,
    fix=FixSafety.SAFE,
)

_WHAT = {
    Kind.LOADER: ("a DataLoader", "move each batch inside the loop instead"),
    Kind.DATASET: ("a Dataset", "move each batch inside the loop instead"),
    Kind.TOKENIZER: ("a tokenizer", "move its output instead: `inputs = tokenizer(..., return_tensors=\"pt\").to(device)`"),
    Kind.OPTIMIZER: ("an optimizer", "move the model before building the optimizer"),
    Kind.LIST: ("a Python list", "move each tensor: `[t.to(device) for t in items]`"),
    Kind.TUPLE: ("a tuple", "move each tensor: `tuple(t.to(device) for t in items)`"),
    Kind.DICT: ("a dict", "move each value: `{k: v.to(device) for k, v in d.items()}`"),
    Kind.NDARRAY: ("a NumPy array", "make a tensor first: `torch.from_numpy(a).to(device)`"),
}


@rule.check
def to_on_objects_without_to(program: "Program") -> Iterator[Report]:
    for move in program.moves:
        what = _WHAT.get(move.subject.kind)
        if what is None:
            continue
        noun, advice = what
        yield Report(
            node=move.node,
            message=(
                f"`{move.subject_text}` is {noun}, which has no `.{move.method}()` method: this raises "
                f"AttributeError as soon as the line runs; {advice}."
            ),
            ctx=move.ctx,
            fix=_fixes.drop_move(program, move),
            evidence=evidence.subject(program, move, noun) + (
                evidence.at(move.node, f"`.{move.method}()` is called on {noun} here"),),
        )
