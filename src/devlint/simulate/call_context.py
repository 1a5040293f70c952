"""`CallContextMode` (a TorchFunctionMode): the Python-level torch calls a CPU build gets wrong.

Composite kernels and backward formulas create tensors with `input.options()`; on the CPU those
reach aten as an explicit `device=cpu`, so without help they would come out as host tensors
inside a GPU computation. The mode records the devices of the outermost call's tensor arguments
in a per-thread context, and a factory op issued while that call runs inherits them (the
dispatch mode reads the context through `context_device`). It also turns `device="cuda"`
arguments into CPU ones (a CPU build rejects them before any dispatch) and tags the results,
checks an RNN's input, hidden state and weights as cuDNN does, and moves a CTC loss's targets
as the CUDA kernel does.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _device as _device_module
from torch.utils._device import _device_constructors

from devlint.simulate import tags
from devlint.simulate.errors import SimulatedDeviceError, check_index, rnn_message
from devlint.simulate.moves import move
from devlint.simulate.tags import CPU

_Tensor = torch.Tensor
_dtype_of = torch._C.TensorBase.dtype.__get__


# ---------------------------------------------------------------------------------------------
# the call context (set by CallContextMode, read by factory ops in DeviceCheckMode)

# (device, dtype) of each GPU-or-not tensor argument of the outermost torch call now running,
# when at least one of them is on a simulated GPU; None otherwise.
class _Context(threading.local):
    value: Any = None


context = _Context()  # per thread, as the modes themselves are


def context_device(dtype: Any) -> str:
    """The device a factory op issued inside the current call gets on a real GPU."""
    ctx = context.value
    if ctx is None:
        return CPU
    if dtype is None:
        dtype = torch.get_default_dtype()
    same = {dev for dev, dt in ctx if dt == dtype}
    if len(same) == 1:
        return next(iter(same))
    devices = {dev for dev, _ in ctx}
    if len(devices) == 1:
        return next(iter(devices))
    gpus = sorted(d for d in devices if d != CPU)
    return gpus[0] if gpus else CPU


# ---------------------------------------------------------------------------------------------


class CallContextMode(TorchFunctionMode):
    """Records the devices of the outermost torch call; rewrites `device="cuda"` arguments."""

    def __init__(self, factories: dict[Any, Any]) -> None:
        super().__init__()
        # a callable per Python-level factory function, called with its result to record a host
        # tensor's origin
        self.factories = factories

    def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        default = _device_module.CURRENT_DEVICE
        if default is not None and default.type == "cuda" and kwargs.get("device") is None:
            # set_default_device / `with torch.device("cuda")`: their mode sits below this one and
            # would hand a CPU build device="cuda" where it cannot be rewritten (torch.tensor)
            if func in _device_constructors():
                kwargs = dict(kwargs)
                kwargs["device"] = default
        if func is _NEW_TENSOR and kwargs.get("device") is None and args and isinstance(args[0], _Tensor):
            # x.new_tensor(data) builds on x's real device (the CPU) below any dispatch
            dev = tags.device_of(args[0])
            if dev != CPU:
                kwargs = dict(kwargs)
                kwargs["device"] = dev
        if kwargs.get("device") is not None:
            kind = _device_kind(kwargs["device"])
            if kind == "gpu" or kind == "cpu":
                return self._with_device(func, args, kwargs, kind == "gpu")
        if func in _RNN_FUNCS:
            _check_rnn(args)
        elif func in _CTC_FUNCS:
            args, kwargs = _ctc_targets_to_device(args, kwargs)
        ctx = None
        for a in args:
            if isinstance(a, _Tensor):
                dev = tags.device_of(a)
                if ctx is None:
                    ctx = [(dev, _dtype_of(a))]
                else:
                    ctx.append((dev, _dtype_of(a)))
            elif isinstance(a, (list, tuple)) and a and isinstance(a[0], _Tensor):
                for t in a:
                    if isinstance(t, _Tensor):
                        if ctx is None:
                            ctx = []
                        ctx.append((tags.device_of(t), _dtype_of(t)))
        if ctx is not None and any(dev != CPU for dev, _ in ctx):
            saved = context.value
            context.value = ctx
            try:
                return func(*args, **kwargs)
            finally:
                context.value = saved
        out = func(*args, **kwargs)
        if func in self.factories and isinstance(out, _Tensor):
            self.factories[func](out)
        return out

    def _with_device(self, func: Any, args: tuple, kwargs: dict, gpu: bool) -> Any:
        """A call with an explicit `device=`: its new tensors are on that device, whatever the inputs."""
        target = tags.normalize(kwargs["device"])
        check_index(target)
        if func in _TENSOR_DATA_FUNCS and args and isinstance(args[0], _Tensor):
            # torch.tensor(t, device=...) / as_tensor(t, device=...): a move of `t`
            copy = func is torch.tensor or kwargs.get("copy") is True
            return move(args[0], target, kwargs.get("dtype"), copy=copy)
        inputs = {tags.storage_key(a) for a in _flat_tensors(args)}
        saved = context.value
        if gpu:
            kwargs = dict(kwargs)
            kwargs["device"] = "cpu"
            context.value = [(target, kwargs.get("dtype") or torch.get_default_dtype())]
        else:
            context.value = None
        try:
            out = func(*args, **kwargs)
        finally:
            context.value = saved
        if gpu and func in _TENSOR_DATA_FUNCS and isinstance(out, _Tensor):
            # as_tensor(ndarray, device="cpu") may share the array's memory; a GPU copy never does
            with torch._C.DisableTorchFunction():
                out = out.clone()
        for t in _flat_tensors(out if isinstance(out, (list, tuple)) else (out,)):
            if tags.storage_key(t) not in inputs:
                tags.set_device(t, target)
        if not gpu and func in self.factories and isinstance(out, _Tensor):
            self.factories[func](out)
        return out


def _device_kind(device: Any) -> str:
    """"gpu", "cpu" or "other" for a `device=` argument."""
    if isinstance(device, str):
        if device.startswith("cuda"):
            return "gpu"
        return "cpu" if device == "cpu" or device.startswith("cpu:") else "other"
    if isinstance(device, torch.device):
        return "gpu" if device.type == "cuda" else ("cpu" if device.type == "cpu" else "other")
    if isinstance(device, int):
        return "gpu"  # a bare index means a CUDA device in factories
    return "other"


_RNN_FUNCS = {
    getattr(torch._C._VariableFunctions, n) for n in ("lstm", "gru", "rnn_tanh", "rnn_relu")
}


def _check_rnn(args: tuple) -> None:
    """A GPU run of an RNN goes through cuDNN, which checks input, hidden state and weights first."""
    if not args or not isinstance(args[0], _Tensor):
        return
    rest = list(args[1:])
    if rest and isinstance(rest[0], _Tensor) and _dtype_of(rest[0]) == torch.int64:
        rest = rest[1:]  # packed input: (data, batch_sizes, hx, params, ...)
    if len(rest) < 2:
        return
    hx, params = rest[0], rest[1]
    input_dev = tags.device_of(args[0])
    hidden = [hx] if isinstance(hx, _Tensor) else [h for h in hx if isinstance(h, _Tensor)]
    for h in hidden:
        dev = tags.device_of(h)
        if dev != input_dev:
            raise SimulatedDeviceError(
                rnn_message("hidden", input_dev, dev),
                tensors=[("input", input_dev, args[0]), ("hx", dev, h)],
            )
    for p in params if isinstance(params, (list, tuple)) else ():
        if isinstance(p, _Tensor):
            dev = tags.device_of(p)
            if dev != input_dev:
                raise SimulatedDeviceError(
                    rnn_message("parameter", input_dev, dev),
                    tensors=[("input", input_dev, args[0]), ("weight", dev, p)],
                )


_CTC_FUNCS = {torch.nn.functional.ctc_loss, torch.ctc_loss}
_CTC_ARGS = ("targets", "input_lengths", "target_lengths")


def _ctc_targets_to_device(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """CTC loss on the GPU accepts targets and lengths on the CPU: cuDNN wants them there, and
    the native kernel moves them "as a service for the user". Inside the kernel that move is
    `.to(log_probs.device())`, invisible on a CPU build; do it here."""
    if not args or not isinstance(args[0], _Tensor):
        return args, kwargs
    dev = tags.device_of(args[0])
    if dev == CPU:
        return args, kwargs
    args = tuple(
        move(a, dev) if 1 <= i <= 3 and isinstance(a, _Tensor) and tags.device_of(a) == CPU else a
        for i, a in enumerate(args)
    )
    kwargs = {
        k: move(v, dev) if k in _CTC_ARGS and isinstance(v, _Tensor) and tags.device_of(v) == CPU else v
        for k, v in kwargs.items()
    }
    return args, kwargs


_NEW_TENSOR = torch.Tensor.new_tensor
_TENSOR_DATA_FUNCS = {torch.tensor, torch.as_tensor, torch.asarray}


def _flat_tensors(values: Any) -> Iterator[torch.Tensor]:
    for v in values:
        if isinstance(v, _Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for u in v:
                if isinstance(u, _Tensor):
                    yield u

