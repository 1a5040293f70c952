"""What the simulated machine raises, in PyTorch's words.

The error classes subclass the builtin types PyTorch raises (RuntimeError, TypeError), so a
script's own `except RuntimeError:` behaves as on a GPU; `classify` and `execute` recognise them
by class. Both modes, the tensor patches and the CUDA stubs raise them, so they live here, below
all of those, with the two checks every path that reaches the GPU makes (one GPU only; no CUDA
in a process forked after it started).
"""

from __future__ import annotations

import torch

from devlint.simulate import tags


class SimulatedDeviceError(RuntimeError):
    """A device mismatch a real CUDA run would raise (a RuntimeError, as PyTorch's own is).

    `tensors` lists (argument name, logical device, tensor) for the arguments involved, so the
    crash can be traced back to the value that was left behind.
    """

    def __init__(self, message: str, *, tensors: list | None = None) -> None:
        super().__init__(message)
        self.tensors = tensors or []
        # the grad mode when it was raised: evaluation code runs under no_grad
        self.grad_enabled = torch.is_grad_enabled()
        self.inference_mode = torch.is_inference_mode_enabled()


class SimulatedHostError(TypeError):
    """`.numpy()` (or `np.array`) on a simulated GPU tensor: the TypeError PyTorch raises."""


class SimulationUnsupported(RuntimeError):
    """A CUDA feature the simulation does not model (streams, several GPUs...)."""


def rnn_message(kind: str, input_dev: str, other_dev: str) -> str:
    """cuDNN's wording, which a GPU run of nn.LSTM / nn.GRU / nn.RNN reaches."""
    return (
        f"Input and {kind} tensors are not at the same device, found input tensor at "
        f"{input_dev} and {kind} tensor at {other_dev}"
    )


FORKED_CUDA = (
    "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use "
    "the 'spawn' start method"
)


def check_index(dev: str) -> None:
    """Only `cuda:0` exists on the simulated machine, as on a one-GPU machine; and a process
    forked after CUDA started (a DataLoader worker) cannot use it."""
    if dev.startswith("cuda"):
        if dev != "cuda:0":
            raise SimulationUnsupported(
                f"devlint run simulates one GPU (cuda:0); the script asked for {dev}. "
                "On a machine with one GPU this raises 'CUDA error: invalid device ordinal'."
            )
        if tags.cuda_initialized_in_parent():
            raise SimulatedDeviceError(FORKED_CUDA)
