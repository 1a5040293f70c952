"""DEV109 host-op-on-device-tensor: a device tensor handed to code that reads host memory."""

from typing import TYPE_CHECKING, Iterator

from devlint._lazy import lazy_import
from devlint.findings import Confidence, Severity
from devlint.rules._describe import device_side, when_it_crashes
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

# bound lazily: a run served from the result cache never loads them (devlint/_lazy.py)
_fixes = lazy_import("devlint.fix.repairs")


if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV109",
    name="host-op-on-device-tensor",
    severity=Severity.ERROR,
    summary="A tensor on a device is handed to NumPy, scikit-learn, matplotlib or `.numpy()` without `.cpu()`.",
    why="""
        NumPy, scikit-learn, pandas and matplotlib read a tensor's memory directly, through
        `Tensor.__array__` / `Tensor.numpy()`, and that memory must be on the host. A tensor on
        a GPU raises `TypeError: can't convert cuda:0 device type tensor to numpy. Use
        Tensor.cpu() to copy the tensor to host memory first.`, whether it is `.numpy()` called
        explicitly or an implicit conversion such as `np.argsort(t)`, `np.array(preds)`,
        `accuracy_score(labels, preds)` or `plt.plot(t)`. The crash usually comes at the end of
        an epoch, when metrics are computed, after the whole epoch of training has run.
        `.item()` and `.tolist()` copy to the host themselves and are fine.
    """,
    bad="""
        import numpy as np
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        inputs = torch.randn(8, 4).to(device)
        with torch.no_grad():
            scores = model(inputs)
        print(np.argsort(scores, axis=1))
    """,
    good="""
        import numpy as np
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 3).to(device)
        inputs = torch.randn(8, 4).to(device)
        with torch.no_grad():
            scores = model(inputs)
        print(np.argsort(scores.cpu().numpy(), axis=1))
    """,
    fix=FixSafety.UNSAFE,
    limits="""
        Only tensors the analysis knows to be on a device are reported; host-only functions that
        never read tensor data (`np.random.seed`, `plt.figure`, `plt.savefig`, ...) are not.
        Matplotlib axes (from `plt.subplots()`, `plt.subplot()`, `plt.gca()`) are followed for
        their plotting methods (`ax.plot(t)`, `axes[0].hist(t)`); methods of other objects those
        libraries return (a `pandas.DataFrame`'s) are not.
    """,
)


@rule.check
def device_tensor_to_host_only_code(program: "Program") -> Iterator[Report]:
    for use in program.host_uses:
        value = use.value
        yield Report(
            node=use.node,
            message=(
                f"{device_side(program, value, 'the argument')}, but here it is handed to {use.consumer}, which reads "
                f"host memory: {when_it_crashes(program, use.ctx)} with "
                f"`TypeError: can't convert cuda:0 device type tensor to numpy`. Copy it to the host "
                f"first: `{value.label or 'tensor'}.detach().cpu()` (or use `.item()` / `.tolist()` for "
                f"Python numbers)."
            ),
            confidence=Confidence.DEFINITE,
            ctx=use.ctx,
            fix=_fixes.to_host(program, use.node, value),
            evidence=evidence.device(value, "the tensor") + (
                evidence.at(use.node, f"it is handed to {use.consumer} here"),),
        )
