"""What a tensor and its storage answer on a CUDA build, patched onto a CPU build.

Tensors report their logical device (`.device`, `.is_cuda`, `.get_device()`); `Tensor.to`,
`.cuda()`, `.cpu()` and `.type()` end in `moves.move`, so they keep real aliasing and copy
semantics; `.numpy()` refuses a GPU tensor as PyTorch does; `torch.Generator(device="cuda")`
says it is on the GPU. Storages carry the tag through `clone`, `deepcopy`, `torch.save` and
`torch.load` (serialization's `location_tag`), and the optimizers' foreach grouping groups by
logical device. `install` applies all of it through a `Patcher`.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from devlint.simulate import provenance, tags
from devlint.simulate.errors import SimulatedDeviceError, SimulatedHostError, SimulationUnsupported, check_index
from devlint.simulate.moves import move
from devlint.simulate.patcher import Patcher, plain
from devlint.simulate.tags import CPU

_TensorBase = torch._C.TensorBase
_orig_type = _TensorBase.type
_orig_numpy = _TensorBase.numpy
_device_cache: dict[str, torch.device] = {}


def _device_obj(dev: str) -> torch.device:
    obj = _device_cache.get(dev)
    if obj is None:
        obj = _device_cache[dev] = torch.device(dev)
    return obj


# ---------------------------------------------------------------------------------------------
# tensors


@plain
def _tensor_to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
    copy = bool(kwargs.pop("copy", False))
    if args and isinstance(args[0], torch.Tensor):
        other = args[0]
        device: Any = tags.device_of(other)
        dtype = other.dtype
        memory_format = kwargs.get("memory_format")
        if len(args) > 3:
            copy = bool(args[3])
    else:
        if len(args) >= 4 and isinstance(args[0], torch.dtype):  # to(dtype, non_blocking, copy)
            copy = bool(args[2])
            args = args[:2]
        elif len(args) >= 4:  # to(device, dtype, non_blocking, copy)
            copy = bool(args[3])
            args = args[:3]
        device, dtype, _non_blocking, memory_format = _parse_to(*args, **kwargs)
    dst = tags.device_of(self) if device is None else tags.normalize(device)
    return move(self, dst, dtype, memory_format, copy=copy)


_orig_parse_to = torch._C._nn._parse_to


def _parse_to(*args: Any, **kwargs: Any) -> Any:
    """torch._C._nn._parse_to, with a bare int meaning a CUDA device (a CPU build asks the
    missing accelerator which device type an int is)."""
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        args = (torch.device("cuda", args[0]), *args[1:])
    device = kwargs.get("device")
    if isinstance(device, int) and not isinstance(device, bool):
        kwargs = dict(kwargs, device=torch.device("cuda", device))
    return _orig_parse_to(*args, **kwargs)


_OrigGenerator: Any = torch.Generator  # (a class: Any because the type check does not follow torch)


class _GeneratorMeta(type(_OrigGenerator)):  # type: ignore[misc]
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _OrigGenerator)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, _OrigGenerator)


class SimulatedGenerator(_OrigGenerator, metaclass=_GeneratorMeta):
    """torch.Generator(device="cuda"): a CPU generator that says it is on the GPU."""

    def __new__(cls, device: Any = "cpu") -> "SimulatedGenerator":
        return _OrigGenerator.__new__(cls, "cpu")

    def __init__(self, device: Any = "cpu") -> None:
        self._devlint_device = tags.normalize(device) if device is not None else tags.CPU

    @property
    def device(self) -> torch.device:
        return _device_obj(self._devlint_device)


@plain
def _tensor_cuda(
    self: torch.Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = None
) -> torch.Tensor:
    dst = tags.normalize(device) if device is not None else tags.normalize("cuda")
    if memory_format is torch.preserve_format:
        memory_format = None
    return move(self, dst, None, memory_format)


@plain
def _tensor_cpu(self: torch.Tensor, memory_format: Any = None) -> torch.Tensor:
    if memory_format is torch.preserve_format:
        memory_format = None
    return move(self, CPU, None, memory_format)


_TYPE_NAMES = {
    "FloatTensor": torch.float32,
    "DoubleTensor": torch.float64,
    "HalfTensor": torch.float16,
    "BFloat16Tensor": torch.bfloat16,
    "LongTensor": torch.int64,
    "IntTensor": torch.int32,
    "ShortTensor": torch.int16,
    "CharTensor": torch.int8,
    "ByteTensor": torch.uint8,
    "BoolTensor": torch.bool,
}


@plain
def _tensor_type(self: torch.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    if dtype is None:
        name = _orig_type(self)
        if tags.is_simulated(self) and name.startswith("torch.") and ".cuda." not in name:
            name = "torch.cuda." + name[len("torch.") :]
        return name
    if isinstance(dtype, str):
        short = dtype.rsplit(".", 1)[-1]
        target_dtype = _TYPE_NAMES.get(short)
        if target_dtype is None:
            return _orig_type(self, dtype, non_blocking, **kwargs)
        dst = tags.normalize("cuda") if ".cuda." in dtype else CPU
        return move(self, dst, target_dtype)
    return _orig_type(self, dtype, non_blocking, **kwargs)


@plain
def _tensor_type_as(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return move(self, tags.device_of(other), other.dtype)


@plain
def _tensor_numpy(self: torch.Tensor, *, force: bool = False) -> Any:
    dev = tags.device_of(self)
    if dev != CPU and dev != "meta":
        if force:
            return _orig_numpy(move(self.detach(), CPU), force=True)
        raise SimulatedHostError(
            f"can't convert {dev} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
            "to host memory first."
        )
    return _orig_numpy(self, force=force)


@plain
def _device_prop(self: torch.Tensor) -> torch.device:
    return _device_obj(tags.device_of(self))


@plain
def _is_cuda_prop(self: torch.Tensor) -> bool:
    return tags.device_of(self).startswith("cuda")


@plain
def _is_cpu_prop(self: torch.Tensor) -> bool:
    return tags.device_of(self) == CPU


@plain
def _get_device(self: torch.Tensor) -> int:
    dev = tags.device_of(self)
    if dev.startswith("cuda:"):
        return int(dev[5:])
    return -1


@plain
def _pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    if tags.is_simulated(self):
        raise SimulatedDeviceError(
            f"cannot pin '{_tensor_type(self)}' only dense CPU tensors can be pinned",
            tensors=[("self", tags.device_of(self), self)],
        )
    return self


def _is_pinned(self: torch.Tensor, device: Any = None) -> bool:
    return False


def _record_stream(self: torch.Tensor, stream: Any) -> None:
    return None


# ---------------------------------------------------------------------------------------------
# storages and serialization

_US = torch.UntypedStorage
_orig_storage_clone = _US.clone


def _storage_tag(storage: Any) -> str | None:
    untyped = getattr(storage, "_untyped_storage", storage)
    return getattr(untyped, tags.ATTR, None)


@plain
def _storage_clone(self: Any) -> Any:
    out = _orig_storage_clone(self)
    dev = getattr(self, tags.ATTR, None)
    if dev is not None:
        tags.set_storage_device(out, dev)
    return out


@plain
def _storage_to(self: Any, *, device: Any, non_blocking: bool = False) -> Any:
    dst = tags.normalize(device)
    src = getattr(self, tags.ATTR, None) or CPU
    if dst == src:
        return self
    if dst != CPU and not dst.startswith("cuda"):
        raise SimulationUnsupported(f"devlint run does not simulate the {dst} device")
    check_index(dst)
    out = _orig_storage_clone(self)
    tags.set_storage_device(out, dst)
    return out


@plain
def _storage_cpu(self: Any) -> Any:
    if getattr(self, tags.ATTR, None) is None:
        return self
    return _orig_storage_clone(self)


def _storage_cuda(self: Any, device: Any = None, non_blocking: bool = False) -> Any:
    return _storage_to(self, device=tags.normalize(device if device is not None else "cuda"))


def _storage_is_cuda(self: Any) -> bool:
    return (getattr(self, tags.ATTR, None) or "").startswith("cuda")


def _make_location_tag(orig: Callable) -> Callable:
    def location_tag(storage: Any) -> str:
        dev = _storage_tag(storage)
        if dev is not None:
            return dev
        return orig(storage)

    return location_tag


# ---------------------------------------------------------------------------------------------
# foreach grouping


_STEP_DTYPES = (torch.float32, torch.float64)


@plain
def _group_tensors_by_device_and_dtype(tensorlistlist: list, with_indices: bool = False) -> dict:
    """torch._C._group_tensors_by_device_and_dtype, keyed by logical devices."""
    groups: dict[tuple, tuple[list, list]] = {}
    first = tensorlistlist[0]
    for i, t in enumerate(first):
        dev = tags.device_of(t)
        for lst in tensorlistlist[1:]:
            if i >= len(lst):
                continue
            other = lst[i]
            if other is None:
                continue
            if tags.device_of(other) != dev or other.dtype != t.dtype:
                step_like = tags.device_of(other) == CPU and other.dim() == 0 and other.dtype in _STEP_DTYPES
                if not step_like:
                    raise SimulatedDeviceError(
                        "Tensors of the same index must be on the same device and the same dtype except "
                        "`step` tensors that can be CPU and float32/64 notwithstanding",
                        tensors=[("tensorlistlist[0]", dev, t), ("tensorlistlist[k]", tags.device_of(other), other)],
                    )
        key = (_device_obj(dev), t.dtype)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([[] for _ in tensorlistlist], [])
        for k, lst in enumerate(tensorlistlist):
            if lst:  # an empty list (amsgrad off: max_exp_avg_sqs) stays empty
                group[0][k].append(lst[i] if i < len(lst) else None)
        if with_indices:
            group[1].append(i)
    return groups


def install(patcher: Patcher) -> None:
    """Patch `torch.Tensor`, `torch.UntypedStorage`, serialization and the tensor-building calls."""
    T = torch.Tensor
    patcher.set(T, "device", property(_device_prop))
    patcher.set(T, "is_cuda", property(_is_cuda_prop))
    patcher.set(T, "is_cpu", property(_is_cpu_prop))
    patcher.set(T, "get_device", _get_device)
    patcher.set(T, "to", _tensor_to)
    patcher.set(T, "cuda", _tensor_cuda)
    patcher.set(T, "cpu", _tensor_cpu)
    patcher.set(T, "type", _tensor_type)
    patcher.set(T, "type_as", _tensor_type_as)
    patcher.set(T, "numpy", _tensor_numpy)
    patcher.set(T, "pin_memory", _pin_memory)
    patcher.set(T, "is_pinned", _is_pinned)
    patcher.set(T, "record_stream", _record_stream)

    patcher.set(_US, "clone", _storage_clone)
    patcher.set(_US, "to", _storage_to)
    patcher.set(_US, "cpu", _storage_cpu)
    patcher.set(_US, "cuda", _storage_cuda)
    patcher.set(_US, "is_cuda", property(_storage_is_cuda))
    patcher.set(_US, "pin_memory", lambda self, device=None: self)
    patcher.set(_US, "is_pinned", lambda self, device=None: False)

    import torch.serialization as serialization

    patcher.set(serialization, "location_tag", _make_location_tag(serialization.location_tag))

    patcher.set(torch._C, "_group_tensors_by_device_and_dtype", _group_tensors_by_device_and_dtype)

    orig_from_numpy = torch.from_numpy

    @functools.wraps(orig_from_numpy)
    def from_numpy(array: Any) -> torch.Tensor:
        out = orig_from_numpy(array)
        provenance.set_origin(out, ("data", "torch.from_numpy"))
        return out

    patcher.set(torch, "from_numpy", from_numpy)

    orig_set_default_tensor_type = torch.set_default_tensor_type

    @functools.wraps(orig_set_default_tensor_type)
    def set_default_tensor_type(t: Any) -> None:
        name = t if isinstance(t, str) else f"{getattr(t, '__module__', '')}.{getattr(t, '__name__', '')}"
        if ".cuda." in name:
            # the legacy CUDA tensor types do not exist in a CPU build: the same effect, in today's API
            dtype = _TYPE_NAMES.get(name.rsplit(".", 1)[-1], torch.float32)
            if dtype.is_floating_point:
                torch.set_default_dtype(dtype)
            torch.set_default_device("cuda")
            return
        orig_set_default_tensor_type(t)

    patcher.set(torch, "set_default_tensor_type", set_default_tensor_type)
    patcher.set(torch, "Generator", SimulatedGenerator)
    patcher.set(torch._C._nn, "_parse_to", _parse_to)
