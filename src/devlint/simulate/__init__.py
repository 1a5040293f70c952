"""`devlint run`: execute a PyTorch program on a CPU-only machine as if CUDA were present.

The device crash a GPU run would hit (after hours of training, on a machine the author may not
have) shows up in seconds, with PyTorch's own message and the user's line. The design notes
(spec/simulate.md) say why it is logical-device tags on real CPU tensors checked by a
TorchDispatchMode, and not FakeTensor or the meta device.

This package's `__init__` and `cli` never import torch: `devlint check` must work without it,
and `devlint run` without torch must fail with a clear message (exit 2), not an ImportError.
"""

from __future__ import annotations

# torch release series the simulation is tested on (the patches touch torch internals:
# serialization.location_tag, storage .to, _parse_to, the DataLoader iterator)
TESTED_TORCH_SERIES: tuple[str, ...] = ("2.13",)


def torch_version_warning(version: str) -> str | None:
    """A warning for a torch version outside the tested series, or None when it is tested."""
    base = version.split("+", 1)[0]
    parts = base.split(".")
    series = ".".join(parts[:2])
    if series in TESTED_TORCH_SERIES:
        return None
    tested = ", ".join(f"{s}.x" for s in TESTED_TORCH_SERIES)
    return (
        f"devlint run is tested with torch {tested}; torch {version} is untested, so the simulation "
        "may miss a crash or report one a GPU would not raise."
    )
