"""The two modes that make CPU tensors behave as if some of them lived on a GPU.

`DeviceCheckMode` (a TorchDispatchMode) sees every aten op, forward and backward: it compares
the logical devices of the tensor arguments and raises what a CUDA build raises when they
differ, in PyTorch's own words; it runs the op on the CPU with any `device=cuda` rewritten,
and tags the fresh outputs with the device the op ran on.

`CallContextMode` (a TorchFunctionMode) sees every Python-level torch call. Composite kernels
and backward formulas create tensors with `input.options()`; on the CPU those reach aten as an
explicit `device=cpu`, so without help they would come out as host tensors inside a GPU
computation. The mode records the devices of the outermost call's tensor arguments, and a
factory op issued while that call runs inherits them. It also turns `device="cuda"` arguments
into CPU ones (a CPU build rejects them before any dispatch) and tags the results.
"""

from __future__ import annotations

import threading
from typing import Any, Iterator

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import _device as _device_module
from torch.utils._device import _device_constructors
from torch.utils._python_dispatch import TorchDispatchMode

from devlint.simulate import tags
from devlint.simulate.tags import CPU

aten = torch.ops.aten
_Tensor = torch.Tensor
_CPU_DEVICE = torch.device("cpu")
_dim = torch._C.TensorBase.dim
_dtype_of = torch._C.TensorBase.dtype.__get__


class SimulatedDeviceError(RuntimeError):
    """A device mismatch a real CUDA run would raise (a RuntimeError, as PyTorch's own is).

    `tensors` lists (argument name, logical device, tensor) for the arguments involved, so the
    crash can be traced back to the value that was left behind.
    """

    def __init__(self, message: str, *, op: str = "", tensors: list | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.tensors = tensors or []
        # the grad mode when it was raised: evaluation code runs under no_grad
        self.grad_enabled = torch.is_grad_enabled()
        self.inference_mode = torch.is_inference_mode_enabled()


class SimulatedHostError(TypeError):
    """`.numpy()` (or `np.array`) on a simulated GPU tensor: the TypeError PyTorch raises."""

    def __init__(self, message: str, *, tensor: Any = None) -> None:
        super().__init__(message)
        self.tensor = tensor


class SimulationUnsupported(RuntimeError):
    """A CUDA feature the simulation does not model (streams, several GPUs...)."""


# ---------------------------------------------------------------------------------------------
# per-op facts, computed once per OpOverload

_COPY_OPS = {
    aten.copy_.default,
    aten.copy.default,
    aten._to_copy.default,
    aten.set_.source_Storage,
    aten.set_.source_Storage_storage_offset,
    aten.set_.source_Tensor,
    aten.set_.default,
    aten._foreach_copy_.default,
    aten._foreach_copy.default,
    aten.lift_fresh.default,
    aten.lift_fresh_copy.default,
    aten.detach.default,
    aten.alias.default,
    aten._to_cpu.default,
}
# ops that accept CPU index tensors for a GPU `self` (advanced indexing moves them)
_INDEX_OPS = {
    aten.index.Tensor,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
    aten._unsafe_index.Tensor,
    aten._unsafe_index_put.default,
}
# (op, argument names that must be CPU tensors, output positions that stay on the CPU)
_HOST_ARGS: dict[Any, tuple[frozenset[str], frozenset[int]]] = {
    aten._pack_padded_sequence.default: (frozenset({"lengths"}), frozenset({1})),
    aten._pad_packed_sequence.default: (frozenset({"batch_sizes"}), frozenset({1})),
    aten._pack_padded_sequence_backward.default: (frozenset({"batch_sizes"}), frozenset()),
}
for _name in ("lstm", "gru", "rnn_tanh", "rnn_relu"):
    _packet = getattr(aten, _name)
    _HOST_ARGS[_packet.data] = (frozenset({"batch_sizes"}), frozenset())
_RNN_OPS = {getattr(aten, n).input for n in ("lstm", "gru", "rnn_tanh", "rnn_relu")} | {
    getattr(aten, n).data for n in ("lstm", "gru", "rnn_tanh", "rnn_relu")
}
if hasattr(aten, "mkldnn_rnn_layer"):  # the CPU kernel an LSTM reaches on this machine
    _RNN_OPS.add(aten.mkldnn_rnn_layer.default)
_HIDDEN_NAMES = {"hx", "hx_", "cx_"}
_INPUT_NAMES = {"input", "data"}
# non-pointwise ops that, like TensorIterator, let a 0-dim CPU tensor meet GPU tensors
_SCALAR_OK = {
    aten.masked_fill.Tensor,
    aten.masked_fill_.Tensor,
    aten.fill_.Tensor,
    aten.fill.Tensor,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
    aten._unsafe_index_put.default,
}
_MASKED_FILL = {
    aten.masked_fill.Scalar,
    aten.masked_fill.Tensor,
    aten.masked_fill_.Scalar,
    aten.masked_fill_.Tensor,
}
# ops whose CUDA kernel is reached through another op, so the error names that op's arguments
_REPORTED_AS = {
    aten.embedding.default: ("wrapper_CUDA__index_select", {"weight": "self", "indices": "index"}),
}


class _OpInfo:
    """What the hot path needs to know about an op, computed once (one dict lookup per op)."""

    __slots__ = ("names", "fresh", "scalar_ok", "foreach", "method", "pointwise", "copy", "index", "host")

    def __init__(self, func: Any) -> None:
        self.copy = func in _COPY_OPS
        self.index = func in _INDEX_OPS
        self.host = _HOST_ARGS.get(func)
        schema = func._schema
        self.names = [a.name for a in schema.arguments]
        # an output that does not alias an input is new memory, to be tagged
        self.fresh = [r.alias_info is None for r in schema.returns]
        self.pointwise = torch.Tag.pointwise in func.tags
        name = schema.name.split("::")[-1]
        self.foreach = name.startswith("_foreach_") or name.startswith("_fused_") or name.startswith(
            "_amp_foreach_"
        )
        self.scalar_ok = self.pointwise or self.foreach or func in _SCALAR_OK
        overload = func._overloadname
        self.method = f"wrapper_CUDA_{name}" if overload == "default" else f"wrapper_CUDA_{name}_{overload}"


_INFO: dict[int, _OpInfo] = {}


def _info(func: Any) -> _OpInfo:
    # keyed by id: OpOverload hashes in Python, and these objects live as long as torch does
    info = _INFO.get(id(func))
    if info is None:
        info = _INFO[id(func)] = _OpInfo(func)
        _KEEP.append(func)
    return info


_KEEP: list[Any] = []  # the ops behind the ids above stay alive


# ---------------------------------------------------------------------------------------------
# the call context (set by CallContextMode, read by factory ops in DeviceCheckMode)

# (device, dtype) of each GPU-or-not tensor argument of the outermost torch call now running,
# when at least one of them is on a simulated GPU; None otherwise.
class _Context(threading.local):
    value: Any = None


_context = _Context()  # per thread, as the modes themselves are


def _context_device(dtype: Any) -> str:
    """The device a factory op issued inside the current call gets on a real GPU."""
    ctx = _context.value
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
# errors, worded as PyTorch words them


def _mixed_error(func: Any, info: _OpInfo, first: tuple, other: tuple, involved: list) -> SimulatedDeviceError:
    name0, dev0, _ = first
    name1, dev1, _ = other
    op = str(func)
    if func in _MASKED_FILL and {name0, name1} == {"self", "mask"}:
        mask_dev = dev0 if name0 == "mask" else dev1
        self_dev = dev1 if name0 == "mask" else dev0
        msg = (
            "expected self and mask to be on the same device, but got mask on "
            f"{mask_dev} and self on {self_dev}"
        )
    elif func in _RNN_OPS:
        kind = "hidden" if (name0 in _HIDDEN_NAMES or name1 in _HIDDEN_NAMES) else "parameter"
        input_dev = dev0 if name0 in _INPUT_NAMES else dev1
        other_dev = dev1 if name0 in _INPUT_NAMES else dev0
        msg = rnn_message(kind, input_dev, other_dev)
    elif info.pointwise or info.foreach:
        msg = f"Expected all tensors to be on the same device, but found at least two devices, {dev0} and {dev1}!"
    else:
        method = info.method
        arg = name1
        reported = _REPORTED_AS.get(func)
        if reported is not None:
            method, renames = reported
            arg = renames.get(name1, name1)
        msg = (
            f"Expected all tensors to be on the same device, but got {arg} is on {dev1}, "
            f"different from other tensors on {dev0} (when checking argument in method {method})"
        )
    return SimulatedDeviceError(msg, op=op, tensors=involved)


def rnn_message(kind: str, input_dev: str, other_dev: str) -> str:
    """cuDNN's wording, which a GPU run of nn.LSTM / nn.GRU / nn.RNN reaches."""
    return (
        f"Input and {kind} tensors are not at the same device, found input tensor at "
        f"{input_dev} and {kind} tensor at {other_dev}"
    )


def _index_error(self_dev: str, involved: list, op: str) -> SimulatedDeviceError:
    return SimulatedDeviceError(
        f"indices should be either on cpu or on the same device as the indexed tensor ({self_dev})",
        op=op,
        tensors=involved,
    )


def _host_arg_error(name: str, t: _Tensor, dev: str, op: str) -> SimulatedDeviceError:
    kind = {torch.int64: "Long", torch.int32: "Int"}.get(_dtype_of(t), str(_dtype_of(t)))
    return SimulatedDeviceError(
        f"'{name}' argument should be a 1D CPU int64 tensor, but got {_dim(t)}D {dev} {kind} tensor",
        op=op,
        tensors=[(name, dev, t)],
    )


# ---------------------------------------------------------------------------------------------


def _tensor_args(info: _OpInfo, args: tuple, kwargs: dict) -> Iterator[tuple[str, Any]]:
    """(argument name, value) for every tensor or tensor-list argument."""
    names = info.names
    for i, value in enumerate(args):
        if isinstance(value, _Tensor) or (isinstance(value, (list, tuple)) and value):
            yield (names[i] if i < len(names) else f"arg{i}"), value
    for key, value in kwargs.items():
        if isinstance(value, _Tensor) or (isinstance(value, (list, tuple)) and value):
            yield key, value


def _tag_outputs(out: Any, info: _OpInfo, dev: str, host_outputs: frozenset[int] = frozenset()) -> None:
    if isinstance(out, _Tensor):
        if info.fresh and info.fresh[0]:
            tags.set_device(out, dev)
        return
    if isinstance(out, (list, tuple)):
        if len(info.fresh) == 1:  # one Tensor[] return
            if info.fresh[0]:
                for t in out:
                    if isinstance(t, _Tensor):
                        tags.set_device(t, dev)
            return
        for i, t in enumerate(out):
            if i in host_outputs or i >= len(info.fresh) or not info.fresh[i]:
                continue
            if isinstance(t, _Tensor):
                tags.set_device(t, dev)
            elif isinstance(t, (list, tuple)):
                for u in t:
                    if isinstance(u, _Tensor):
                        tags.set_device(u, dev)


def _inherit_origin(out: Any, info: _OpInfo, args: tuple) -> None:
    """A host tensor computed from a loader batch or a factory result keeps that origin, so a
    crash on `mask = torch.triu(torch.ones(t, t)).bool()` is still traced to `torch.ones`."""
    if not info.fresh or not info.fresh[0]:
        return
    origin = None
    for a in args:
        if isinstance(a, _Tensor):
            origin = tags.origin_of(a)
            if origin is not None:
                break
    if origin is None:
        return
    if isinstance(out, _Tensor):
        tags.set_origin(out, origin)
    elif isinstance(out, (list, tuple)):
        for t in out:
            if isinstance(t, _Tensor):
                tags.set_origin(t, origin)


class DeviceCheckMode(TorchDispatchMode):
    """Checks every aten op for mixed logical devices, runs it on the CPU, tags its outputs."""

    def __init__(self, on_op: Any = None) -> None:
        super().__init__()
        self.on_op = on_op  # called every 1024 ops (the time limit); None: never

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        on_op = self.on_op
        if on_op is not None:
            on_op()
        info = _INFO.get(id(func))
        if info is None:
            info = _info(func)

        if info.copy:
            return self._copy_op(func, info, args, kwargs)

        # an explicit device argument: rewrite a simulated one to the CPU
        target = None
        device = kwargs.get("device")
        if device is not None:
            if device.type != "cpu" and device.type != "meta":
                target = tags.normalize(device)
                kwargs = dict(kwargs)
                kwargs["device"] = _CPU_DEVICE
            else:
                target = CPU if device.type == "cpu" else None
        if kwargs.get("pin_memory"):
            kwargs = dict(kwargs)
            kwargs["pin_memory"] = False

        common = self._check(func, info, args, kwargs)

        out = func(*args, **kwargs)

        if common == CPU and (target is None or target == CPU):
            _inherit_origin(out, info, args)
            return out
        if tags.cuda_initialized_in_parent() and (common is not None or (target is not None and target != CPU)):
            raise SimulatedDeviceError(FORKED_CUDA, op=str(func))
        if common is None:  # no tensor argument: a factory
            if target is None or target == CPU:
                target = _context_device(kwargs.get("dtype"))
            if target != CPU:
                _tag_outputs(out, info, target)
            return out
        if target is None:
            target = common
        elif target == CPU and common != CPU and _context.value is not None:
            # new_zeros(..., device=cpu) written by a kernel for a GPU input: options() of the input
            # (a user's explicit device="cpu" is honoured by CallContextMode, which untags)
            target = common
        if target != CPU:
            host = info.host
            _tag_outputs(out, info, target, host[1] if host else frozenset())
        return out

    # -----------------------------------------------------------------------------------------

    def _check(self, func: Any, info: _OpInfo, args: tuple, kwargs: dict) -> str | None:
        """Raise on mixed devices; return the device the op runs on (None: no tensor argument)."""
        host = info.host
        if info.foreach:
            return self._check_foreach(func, info, args, kwargs)
        first = None  # (name, device, tensor) of the first counted argument
        scalars = None  # a 0-dim CPU tensor seen, when no other device is known yet
        involved = []
        index_op = info.index
        self_dev = None
        for name, value in _tensor_args(info, args, kwargs):
            items = (value,) if isinstance(value, _Tensor) else value
            for t in items:
                if not isinstance(t, _Tensor):
                    continue
                dev = tags.device_of(t)
                involved.append((name, dev, t))
                if host is not None and name in host[0]:
                    if dev != CPU:
                        raise _host_arg_error(name, t, dev, str(func))
                    continue
                if index_op:
                    if name == "self":
                        self_dev = dev
                    elif name == "indices":
                        if dev == CPU or dev == self_dev:
                            continue
                        raise _index_error(self_dev or CPU, involved, str(func))
                if info.scalar_ok and dev == CPU and _dim(t) == 0:
                    if scalars is None:
                        scalars = (name, dev, t)
                    continue
                if first is None:
                    first = (name, dev, t)
                elif dev != first[1]:
                    raise _mixed_error(func, info, first, (name, dev, t), involved)
        if first is not None:
            return first[1]
        if scalars is not None:
            return CPU
        return None

    def _check_foreach(self, func: Any, info: _OpInfo, args: tuple, kwargs: dict) -> str | None:
        """`_foreach_*` ops are checked position by position across their list arguments."""
        lists: list[tuple[str, Any]] = []
        singles: list[tuple[str, str, _Tensor]] = []
        for name, value in _tensor_args(info, args, kwargs):
            if isinstance(value, _Tensor):
                singles.append((name, tags.device_of(value), value))
            else:
                lists.append((name, value))
        common = None
        length = max((len(v) for _, v in lists), default=0)
        for i in range(length):
            first = None
            involved = []
            for name, seq in lists:
                if i >= len(seq) or not isinstance(seq[i], _Tensor):
                    continue
                t = seq[i]
                dev = tags.device_of(t)
                involved.append((f"{name}[{i}]", dev, t))
                if dev == CPU and _dim(t) == 0:
                    continue  # optimizer `step` counters stay on the CPU by design
                if first is None:
                    first = (name, dev, t)
                elif dev != first[1]:
                    raise _mixed_error(func, info, first, (name, dev, t), involved)
            for name, dev, t in singles:
                if dev == CPU and _dim(t) == 0:
                    continue
                if first is not None and dev != first[1]:
                    raise _mixed_error(func, info, first, (name, dev, t), involved + [(name, dev, t)])
            if first is not None and common is None:
                common = first[1]
        if common is None and singles:
            common = singles[0][1]
        return common if common is not None else (CPU if lists else None)

    def _copy_op(self, func: Any, info: _OpInfo, args: tuple, kwargs: dict) -> Any:
        """Copies move data between devices by design: no check; the output keeps its place."""
        if func is aten._to_copy.default:
            device = kwargs.get("device")
            src_dev = tags.device_of(args[0])
            if device is not None and device.type != "cpu":
                kwargs = dict(kwargs)
                kwargs["device"] = _CPU_DEVICE
                target = tags.normalize(device)
            elif device is not None and src_dev == CPU and _context.value is not None:
                # a kernel copying a host tensor "to some tensor's options()" inside a GPU call
                # (ctc_loss: at::tensor(lengths, res.options())): the options are unknown here,
                # so the call's tensors of the same dtype decide, as for factories
                target = _context_device(kwargs.get("dtype") or _dtype_of(args[0]))
            else:
                # an explicit CPU device here comes from a kernel copying with some tensor's
                # options(): devlint's own moves never reach aten with a device, so keep it
                target = src_dev
            if kwargs.get("pin_memory"):
                kwargs = dict(kwargs)
                kwargs["pin_memory"] = False
            out = func(*args, **kwargs)
            if target != CPU:
                tags.set_device(out, target)
            elif src_dev == CPU:
                _inherit_origin(out, info, args)
            return out
        out = func(*args, **kwargs)
        if func is aten.copy.default or func is aten._foreach_copy.default:
            dev = tags.device_of(args[0][0] if isinstance(args[0], (list, tuple)) else args[0])
            if dev != CPU:
                _tag_outputs(out, info, dev)
        elif func is aten.lift_fresh_copy.default:
            dev = tags.device_of(args[0])
            if dev != CPU:
                tags.set_device(out, dev)
        return out


# ---------------------------------------------------------------------------------------------


class CallContextMode(TorchFunctionMode):
    """Records the devices of the outermost torch call; rewrites `device="cuda"` arguments."""

    def __init__(self, factories: Any = None) -> None:
        super().__init__()
        # called with (func, result) for Python-level factory calls, to record a host tensor's origin
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
            saved = _context.value
            _context.value = ctx
            try:
                return func(*args, **kwargs)
            finally:
                _context.value = saved
        out = func(*args, **kwargs)
        if self.factories is not None and func in self.factories and isinstance(out, _Tensor):
            self.factories[func](out)
        return out

    def _with_device(self, func: Any, args: tuple, kwargs: dict, gpu: bool) -> Any:
        """A call with an explicit `device=`: its new tensors are on that device, whatever the inputs."""
        target = tags.normalize(kwargs["device"])
        check_index(target)
        if func in _TENSOR_DATA_FUNCS and args and isinstance(args[0], _Tensor):
            # torch.tensor(t, device=...) / as_tensor(t, device=...): a move of `t`
            from devlint.simulate.patches import move

            copy = func is torch.tensor or kwargs.get("copy") is True
            return move(args[0], target, kwargs.get("dtype"), copy=copy)
        inputs = {tags.storage_key(a) for a in _flat_tensors(args)}
        saved = _context.value
        if gpu:
            kwargs = dict(kwargs)
            kwargs["device"] = "cpu"
            _context.value = [(target, kwargs.get("dtype") or torch.get_default_dtype())]
        else:
            _context.value = None
        try:
            out = func(*args, **kwargs)
        finally:
            _context.value = saved
        if gpu and func in _TENSOR_DATA_FUNCS and isinstance(out, _Tensor):
            # as_tensor(ndarray, device="cpu") may share the array's memory; a GPU copy never does
            with torch._C.DisableTorchFunction():
                out = out.clone()
        for t in _flat_tensors(out if isinstance(out, (list, tuple)) else (out,)):
            if tags.storage_key(t) not in inputs:
                tags.set_device(t, target)
        if not gpu and self.factories is not None and func in self.factories and isinstance(out, _Tensor):
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
                op="cudnn_rnn",
                tensors=[("input", input_dev, args[0]), ("hx", dev, h)],
            )
    for p in params if isinstance(params, (list, tuple)) else ():
        if isinstance(p, _Tensor):
            dev = tags.device_of(p)
            if dev != input_dev:
                raise SimulatedDeviceError(
                    rnn_message("parameter", input_dev, dev),
                    op="cudnn_rnn",
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
    from devlint.simulate.patches import move

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


def _flat_tensors(values: Any) -> Iterator[_Tensor]:
    for v in values:
        if isinstance(v, _Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            for u in v:
                if isinstance(u, _Tensor):
                    yield u


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
            raise SimulatedDeviceError(FORKED_CUDA, op="cuda_init")
