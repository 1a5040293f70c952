"""`DeviceCheckMode` (a TorchDispatchMode): what makes CPU tensors behave as if some lived on a GPU.

The mode sees every aten op, forward and backward: it compares the logical devices of the
tensor arguments and raises what a CUDA build raises when they differ, in PyTorch's own words;
it runs the op on the CPU with any `device=cuda` rewritten, and tags the fresh outputs with the
device the op ran on. A factory op (no tensor argument) issued inside a torch call gets the
device that call's tensors are on, from the context `call_context.CallContextMode` records.
"""

from __future__ import annotations

from typing import Any, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from devlint.simulate import provenance, tags
from devlint.simulate.call_context import context, context_device
from devlint.simulate.errors import FORKED_CUDA, SimulatedDeviceError, rnn_message
from devlint.simulate.tags import CPU

aten = torch.ops.aten
_Tensor = torch.Tensor
_CPU_DEVICE = torch.device("cpu")
_dim = torch._C.TensorBase.dim
_dtype_of = torch._C.TensorBase.dtype.__get__


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
# errors, worded as PyTorch words them


def _mixed_error(func: Any, info: _OpInfo, first: tuple, other: tuple, involved: list) -> SimulatedDeviceError:
    name0, dev0, _ = first
    name1, dev1, _ = other
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
    return SimulatedDeviceError(msg, tensors=involved)


def _index_error(self_dev: str, involved: list) -> SimulatedDeviceError:
    return SimulatedDeviceError(
        f"indices should be either on cpu or on the same device as the indexed tensor ({self_dev})",
        tensors=involved,
    )


def _host_arg_error(name: str, t: torch.Tensor, dev: str) -> SimulatedDeviceError:
    kind = {torch.int64: "Long", torch.int32: "Int"}.get(_dtype_of(t), str(_dtype_of(t)))
    return SimulatedDeviceError(
        f"'{name}' argument should be a 1D CPU int64 tensor, but got {_dim(t)}D {dev} {kind} tensor",
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
            origin = provenance.origin_of(a)
            if origin is not None:
                break
    if origin is None:
        return
    if isinstance(out, _Tensor):
        provenance.set_origin(out, origin)
    elif isinstance(out, (list, tuple)):
        for t in out:
            if isinstance(t, _Tensor):
                provenance.set_origin(t, origin)


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
            raise SimulatedDeviceError(FORKED_CUDA)
        if common is None:  # no tensor argument: a factory
            if target is None or target == CPU:
                target = context_device(kwargs.get("dtype"))
            if target != CPU:
                _tag_outputs(out, info, target)
            return out
        if target is None:
            target = common
        elif target == CPU and common != CPU and context.value is not None:
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
                        raise _host_arg_error(name, t, dev)
                    continue
                if index_op:
                    if name == "self":
                        self_dev = dev
                    elif name == "indices":
                        if dev == CPU or dev == self_dev:
                            continue
                        raise _index_error(self_dev or CPU, involved)
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
        singles: list[tuple[str, str, torch.Tensor]] = []
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
            elif device is not None and src_dev == CPU and context.value is not None:
                # a kernel copying a host tensor "to some tensor's options()" inside a GPU call
                # (ctc_loss: at::tensor(lengths, res.options())): the options are unknown here,
                # so the call's tensors of the same dtype decide, as for factories
                target = context_device(kwargs.get("dtype") or _dtype_of(args[0]))
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

