"""The Python-level half of the simulation: what a CUDA build answers that a CPU build does not.

`torch.cuda` reports one available GPU; tensors report their logical device; `Tensor.to`,
`.cuda()` and `.cpu()` keep real aliasing and copy semantics (a CPU tensor is never tagged in
place: that is what makes a discarded `x.to(device)` visible); `.numpy()` refuses a GPU tensor
as PyTorch does; storages and serialization carry the tag through `deepcopy`, `torch.save` and
`torch.load`; `DataParallel` scatters to the one simulated GPU.

Every patch is recorded by `Patcher` and undone when the simulation ends, so an in-process run
(the tests) leaves torch as it found it.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

import torch

from devlint.simulate import tags
from devlint.simulate.dispatch import (
    SimulatedDeviceError,
    SimulatedHostError,
    SimulationUnsupported,
    check_index,
)
from devlint.simulate.tags import CPU

_TensorBase = torch._C.TensorBase
_orig_to = _TensorBase.to
_orig_type = _TensorBase.type
_orig_numpy = _TensorBase.numpy
_device_cache: dict[str, torch.device] = {}
_NoTorchFunction = torch._C.DisableTorchFunction


def _plain(fn: Callable) -> Callable:
    """Run a patch with torch-function handling off.

    The patches are entered from user code, where the simulation's own TorchFunctionMode is
    active: without this, each C call they make (reading a storage, the original `to`) would
    go through that mode again, costing microseconds and handing the mode our own functions
    (torch looks `Tensor.to` up by name when it dispatches a torch function).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _NoTorchFunction():
            return fn(*args, **kwargs)

    return wrapper


def _device_obj(dev: str) -> torch.device:
    obj = _device_cache.get(dev)
    if obj is None:
        obj = _device_cache[dev] = torch.device(dev)
    return obj


# ---------------------------------------------------------------------------------------------
# moving tensors


class _Move(torch.autograd.Function):
    """A copy to another logical device whose backward copies the gradient back."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, src: str, dst: str, dtype: Any, memory_format: Any) -> torch.Tensor:
        ctx.src = src
        ctx.src_dtype = x.dtype
        out = _raw_copy(x, dtype, memory_format)
        tags.set_device(out, dst)
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        out = _raw_copy(grad, ctx.src_dtype, None)
        tags.set_device(out, ctx.src)
        return out, None, None, None, None


def _raw_copy(x: torch.Tensor, dtype: Any, memory_format: Any) -> torch.Tensor:
    if memory_format is None:
        memory_format = torch.preserve_format
    return _orig_to(x, dtype=dtype if dtype is not None else x.dtype, copy=True, memory_format=memory_format)


def move(
    t: torch.Tensor,
    dst: str,
    dtype: Any = None,
    memory_format: Any = None,
    *,
    copy: bool = False,
) -> torch.Tensor:
    """`t` on logical device `dst`: `t` itself when nothing changes, else a fresh copy."""
    src = tags.device_of(t)
    check_index(dst)
    if src == dst:
        if dtype is None and memory_format is None and not copy:
            return t
        return _orig_to(
            t,
            dtype=dtype if dtype is not None else t.dtype,
            copy=copy,
            memory_format=memory_format if memory_format is not None else torch.preserve_format,
        )
    if src == "meta" or dst == "meta":
        return _orig_to(t, device=dst, dtype=dtype)
    target_dtype = dtype if dtype is not None else t.dtype
    if (
        t.requires_grad
        and torch.is_grad_enabled()
        and (target_dtype.is_floating_point or target_dtype.is_complex)
    ):
        out = _Move.apply(t, src, dst, dtype, memory_format)
    else:
        out = _raw_copy(t, dtype, memory_format)
        tags.set_device(out, dst)
    if dst != CPU:
        tags.set_moved_at(out, tags.creator_frame())
    return out


@_plain
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


_OrigGenerator = torch.Generator


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
    def device(self) -> torch.device:  # type: ignore[override]
        return _device_obj(self._devlint_device)


@_plain
def _tensor_cuda(
    self: torch.Tensor, device: Any = None, non_blocking: bool = False, memory_format: Any = None
) -> torch.Tensor:
    dst = tags.normalize(device) if device is not None else tags.normalize("cuda")
    if memory_format is torch.preserve_format:
        memory_format = None
    return move(self, dst, None, memory_format)


@_plain
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


@_plain
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
    if isinstance(dtype, torch.dtype):
        return _orig_type(self, dtype, non_blocking, **kwargs)
    return _orig_type(self, dtype, non_blocking, **kwargs)


@_plain
def _tensor_type_as(self: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    return move(self, tags.device_of(other), other.dtype)


@_plain
def _tensor_numpy(self: torch.Tensor, *, force: bool = False) -> Any:
    dev = tags.device_of(self)
    if dev != CPU and dev != "meta":
        if force:
            return _orig_numpy(move(self.detach(), CPU), force=True)
        raise SimulatedHostError(
            f"can't convert {dev} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
            "to host memory first.",
            tensor=self,
        )
    return _orig_numpy(self, force=force)


@_plain
def _device_prop(self: torch.Tensor) -> torch.device:
    return _device_obj(tags.device_of(self))


@_plain
def _is_cuda_prop(self: torch.Tensor) -> bool:
    return tags.device_of(self).startswith("cuda")


@_plain
def _is_cpu_prop(self: torch.Tensor) -> bool:
    return tags.device_of(self) == CPU


@_plain
def _get_device(self: torch.Tensor) -> int:
    dev = tags.device_of(self)
    if dev.startswith("cuda:"):
        return int(dev[5:])
    return -1


@_plain
def _pin_memory(self: torch.Tensor, device: Any = None) -> torch.Tensor:
    if tags.is_simulated(self):
        raise SimulatedDeviceError(
            f"cannot pin '{_tensor_type(self)}' only dense CPU tensors can be pinned",
            op="pin_memory",
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


@_plain
def _storage_clone(self: Any) -> Any:
    out = _orig_storage_clone(self)
    dev = getattr(self, tags.ATTR, None)
    if dev is not None:
        tags.set_storage_device(out, dev)
    return out


@_plain
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


@_plain
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
# torch.cuda / torch.accelerator


@dataclass(frozen=True)
class SimulatedDeviceProperties:
    """What `torch.cuda.get_device_properties` returns on the simulated GPU."""

    name: str = "NVIDIA GPU (simulated by devlint)"
    major: int = 8
    minor: int = 0
    total_memory: int = 80 * 1024**3
    multi_processor_count: int = 108
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    L2_cache_size: int = 40 * 1024**2
    max_threads_per_multi_processor: int = 2048
    warp_size: int = 32
    gcnArchName: str = ""
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"


def _index_of(device: Any = None) -> int:
    if device is None:
        return tags.current_index()
    if isinstance(device, int):
        index = device
    else:
        dev = tags.normalize(device)
        if not dev.startswith("cuda:"):
            raise ValueError(f"Expected a cuda device, but got: {device}")
        index = int(dev[5:])
    if index != 0:
        raise SimulationUnsupported(
            f"devlint run simulates one GPU (cuda:0); the script asked for cuda:{index}."
        )
    return index


class _SimEvent:
    """torch.cuda.Event: records a wall-clock time; enough for the timing code in scripts."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, **_: Any):
        self._time: float | None = None

    def record(self, stream: Any = None) -> None:
        import time

        self._time = time.perf_counter()

    def wait(self, stream: Any = None) -> None:
        return None

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end_event: "_SimEvent") -> float:
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0


class _SimStream:
    """torch.cuda.Stream: a no-op stand-in; the simulation runs everything in order."""

    def __init__(self, device: Any = None, priority: int = 0, **_: Any) -> None:
        self.device = torch.device("cuda", 0)
        self.priority = priority

    def wait_stream(self, stream: Any) -> None:
        return None

    def wait_event(self, event: Any) -> None:
        return None

    def record_event(self, event: Any = None) -> Any:
        event = event or _SimEvent()
        event.record()
        return event

    def synchronize(self) -> None:
        return None

    def query(self) -> bool:
        return True

    def is_capturing(self) -> bool:
        return False

    def __enter__(self) -> "_SimStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        return None


_DEFAULT_STREAM = _SimStream()


class _SimDevice:
    """torch.cuda.device(i): a context manager that only accepts the simulated GPU."""

    def __init__(self, device: Any) -> None:
        self.idx = -1 if device is None or device == -1 else _index_of(device)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> bool:
        return False


def _cuda_stubs(state: "SimState") -> dict[str, Any]:
    def set_device(device: Any) -> None:
        tags.set_current_index(_index_of(device))

    def get_device_properties(device: Any = None) -> SimulatedDeviceProperties:
        _index_of(device)
        return SimulatedDeviceProperties()

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        total = SimulatedDeviceProperties().total_memory
        return total, total

    def zero(*_: Any, **__: Any) -> int:
        return 0

    def nothing(*_: Any, **__: Any) -> None:
        return None

    def manual_seed(seed: int) -> None:
        return None

    def rng_state(device: Any = "cuda") -> torch.Tensor:
        return torch.zeros(16, dtype=torch.uint8)

    @contextlib.contextmanager
    def stream(s: Any = None):  # type: ignore[no-untyped-def]
        yield

    return {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "is_initialized": lambda: True,
        "init": nothing,
        "_lazy_init": nothing,
        "current_device": lambda: tags.current_index(),
        "set_device": set_device,
        "get_device_name": lambda device=None: (_index_of(device), SimulatedDeviceProperties().name)[1],
        "get_device_capability": lambda device=None: (_index_of(device), (8, 0))[1],
        "get_device_properties": get_device_properties,
        "get_arch_list": lambda: ["sm_80"],
        "is_bf16_supported": lambda including_emulation=True: True,
        "is_tf32_supported": lambda: True,
        "synchronize": nothing,
        "ipc_collect": nothing,
        "empty_cache": nothing,
        "memory_allocated": zero,
        "max_memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_reserved": zero,
        "memory_cached": zero,
        "max_memory_cached": zero,
        "reset_peak_memory_stats": nothing,
        "reset_max_memory_allocated": nothing,
        "reset_max_memory_cached": nothing,
        "reset_accumulated_memory_stats": nothing,
        "set_per_process_memory_fraction": nothing,
        "memory_stats": lambda device=None: collections.OrderedDict(),
        "memory_summary": lambda device=None, abbreviated=False: "(devlint run: simulated GPU, no memory statistics)",
        "mem_get_info": mem_get_info,
        "utilization": zero,
        "manual_seed": manual_seed,
        "manual_seed_all": manual_seed,
        "seed": nothing,
        "seed_all": nothing,
        "initial_seed": lambda: 0,
        "get_rng_state": rng_state,
        "get_rng_state_all": lambda: [rng_state()],
        "set_rng_state": nothing,
        "set_rng_state_all": nothing,
        "Event": _SimEvent,
        "Stream": _SimStream,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
        "default_stream": lambda device=None: _DEFAULT_STREAM,
        "stream": stream,
        "set_stream": nothing,
        "device": _SimDevice,
        "device_of": lambda obj: _SimDevice(obj.get_device() if obj.is_cuda else -1),
        "is_current_stream_capturing": lambda: False,
    }


def _accelerator_stubs() -> dict[str, Any]:
    def current_accelerator(check_available: bool = False) -> torch.device:
        return torch.device("cuda")

    return {
        "is_available": lambda: True,
        "device_count": lambda: 1,
        "current_accelerator": current_accelerator,
        "current_device_index": lambda: tags.current_index(),
        "current_device_idx": lambda: tags.current_index(),
        "set_device_index": lambda device: tags.set_current_index(_index_of(device)),
        "set_device_idx": lambda device: tags.set_current_index(_index_of(device)),
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: _DEFAULT_STREAM,
    }


# ---------------------------------------------------------------------------------------------
# foreach grouping, DataParallel


_STEP_DTYPES = (torch.float32, torch.float64)


@_plain
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
                        op="_group_tensors_by_device_and_dtype",
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


def _map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map_tensors(v, fn) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map_tensors(v, fn) for v in obj)
    if isinstance(obj, dict):
        try:
            return type(obj)((k, _map_tensors(v, fn)) for k, v in obj.items())
        except TypeError:
            return {k: _map_tensors(v, fn) for k, v in obj.items()}
    return obj


@_plain
def _dp_scatter(self: Any, inputs: Any, kwargs: Any, device_ids: Any) -> tuple:
    """DataParallel on one GPU: scattering is a move of every input to device_ids[0]."""
    ids = list(device_ids) if device_ids else [0]
    if len(ids) > 1:
        raise SimulationUnsupported("devlint run simulates one GPU; DataParallel over several is not modelled")
    dev = tags.normalize(ids[0])
    moved_inputs = _map_tensors(tuple(inputs), lambda t: t.to(dev))
    moved_kwargs = _map_tensors(dict(kwargs or {}), lambda t: t.to(dev))
    return (tuple(moved_inputs),), (moved_kwargs,)


# ---------------------------------------------------------------------------------------------


@dataclass
class SimState:
    """Counters the classifier and the phase detector read after a crash."""

    batches: int = 0
    backward_calls: int = 0
    optimizer_steps: int = 0
    saves: int = 0
    loads: int = 0
    in_checkpoint: int = 0


class Patcher:
    """Sets attributes and remembers the originals, to restore them in reverse order."""

    _MISSING = object()

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        old = owner.__dict__.get(name, self._MISSING) if hasattr(owner, "__dict__") else self._MISSING
        if old is self._MISSING and not isinstance(owner, type):
            old = getattr(owner, name, self._MISSING)
        self._undo.append((owner, name, old))
        setattr(owner, name, value)

    def restore(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            try:
                if old is self._MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, old)
            except (AttributeError, TypeError):
                pass


def install(patcher: Patcher, state: SimState, loader_hooks: "LoaderHooks") -> None:
    """Apply every Python-level patch; `loader_hooks` limits and marks DataLoader batches."""
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

    cuda_module = sys.modules["torch.cuda"]

    stubs = {name: _distinct(value, name) for name, value in _cuda_stubs(state).items()}
    for name, value in stubs.items():
        patcher.set(cuda_module, name, value)
    for module_name, names in (
        ("torch.cuda.memory", ("empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
                               "max_memory_reserved", "reset_peak_memory_stats", "memory_stats",
                               "memory_summary", "mem_get_info", "set_per_process_memory_fraction")),
        ("torch.cuda.random", ("manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
                               "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all")),
    ):
        module = sys.modules.get(module_name)
        if module is not None:
            for name in names:
                if hasattr(module, name):
                    patcher.set(module, name, stubs[name])
    if hasattr(torch, "accelerator"):
        for name, value in _accelerator_stubs().items():
            value = _distinct(value, name)
            if hasattr(torch.accelerator, name):
                patcher.set(torch.accelerator, name, value)
    import torch.backends.cudnn as cudnn

    patcher.set(cudnn, "is_acceptable", lambda tensor: False)

    patcher.set(torch._C, "_group_tensors_by_device_and_dtype", _group_tensors_by_device_and_dtype)

    from torch.nn.parallel import DataParallel

    patcher.set(DataParallel, "scatter", _dp_scatter)

    orig_from_numpy = torch.from_numpy

    @functools.wraps(orig_from_numpy)
    def from_numpy(array: Any) -> torch.Tensor:
        out = orig_from_numpy(array)
        tags.set_origin(out, ("data", "torch.from_numpy"))
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

    def compile(model: Any = None, **kwargs: Any) -> Any:
        """torch.compile runs the model eagerly: devices behave as in eager mode, and tracing the
        simulation's own modes would only be slow (or abort inside dynamo)."""
        if model is None:
            return lambda fn: fn
        return model

    patcher.set(torch, "compile", compile)
    patcher.set(torch, "Generator", SimulatedGenerator)
    patcher.set(torch._C._nn, "_parse_to", _parse_to)

    nvtx = sys.modules.get("torch.cuda.nvtx")
    if nvtx is not None:
        for name in ("range_push", "range_pop", "range_start", "range_end", "mark"):
            if hasattr(nvtx, name):
                patcher.set(nvtx, name, _distinct(lambda *args, **kwargs: 0, name))
        if hasattr(nvtx, "range"):
            patcher.set(nvtx, "range", _distinct(contextlib.contextmanager(_nvtx_range), "range"))
    patcher.set(torch.nn.Module, "compile", lambda self, *args, **kwargs: None)

    _install_loader_patches(patcher, loader_hooks)
    _install_counters(patcher, state)
    _install_assignment_tracking(patcher)


def _install_assignment_tracking(patcher: Patcher) -> None:
    """Remember where each submodule / parameter is assigned, to report DEV106 at the assignment."""
    from devlint.simulate.classify import record_assignment
    from devlint.simulate.session import creator_frame

    orig_setattr = torch.nn.Module.__setattr__

    def __setattr__(self: torch.nn.Module, name: str, value: Any) -> None:
        if isinstance(value, (torch.nn.Module, torch.nn.Parameter)):
            where = creator_frame()
            if where is not None:
                record_assignment(value, (where[0], where[1]))
        orig_setattr(self, name, value)

    patcher.set(torch.nn.Module, "__setattr__", __setattr__)


def _nvtx_range(*args: Any, **kwargs: Any) -> Any:
    yield


def _distinct(value: Any, name: str) -> Any:
    """A separate function object per stub name: torch._dynamo's trace rules reject one object
    registered under two names."""
    if isinstance(value, types.FunctionType):
        fn = types.FunctionType(value.__code__, value.__globals__, name, value.__defaults__, value.__closure__)
        fn.__qualname__ = f"devlint_simulated_cuda.{name}"
        fn.__kwdefaults__ = value.__kwdefaults__
        return fn
    return value


class LoaderHooks:
    """What the DataLoader patches ask: may this iterator yield another batch; mark this batch."""

    def allow(self, count: int) -> bool:  # pragma: no cover - overridden
        return True

    def limit_len(self, length: int) -> int:  # pragma: no cover - overridden
        return length

    def batch(self, batch: Any) -> None:  # pragma: no cover - overridden
        return None


def _install_loader_patches(patcher: Patcher, hooks: LoaderHooks) -> None:
    from torch.utils.data import DataLoader
    from torch.utils.data.dataloader import _BaseDataLoaderIter

    orig_next = _BaseDataLoaderIter.__next__
    orig_iter = DataLoader.__iter__
    orig_len = DataLoader.__len__

    def __next__(self: Any) -> Any:
        count = self.__dict__.get("_devlint_count", 0)
        if not hooks.allow(count):
            raise StopIteration
        batch = orig_next(self)
        self._devlint_count = count + 1
        hooks.batch(batch)
        return batch

    def __iter__(self: Any) -> Any:
        it = orig_iter(self)
        try:
            it._devlint_count = 0
        except AttributeError:
            pass
        return it

    def __len__(self: Any) -> int:
        return hooks.limit_len(orig_len(self))

    patcher.set(_BaseDataLoaderIter, "__next__", __next__)
    patcher.set(DataLoader, "__iter__", __iter__)
    patcher.set(DataLoader, "__len__", __len__)


def _install_counters(patcher: Patcher, state: SimState) -> None:
    import torch.serialization as serialization

    orig_save = torch.save
    orig_load = torch.load

    @functools.wraps(orig_save)
    def save(*args: Any, **kwargs: Any) -> Any:
        state.saves += 1
        state.in_checkpoint += 1
        try:
            return orig_save(*args, **kwargs)
        finally:
            state.in_checkpoint -= 1

    @functools.wraps(orig_load)
    def load(*args: Any, **kwargs: Any) -> Any:
        state.loads += 1
        state.in_checkpoint += 1
        try:
            return orig_load(*args, **kwargs)
        finally:
            state.in_checkpoint -= 1

    patcher.set(torch, "save", save)
    patcher.set(torch, "load", load)
    patcher.set(serialization, "save", save)
    patcher.set(serialization, "load", load)

    orig_backward = torch.Tensor.backward
    entered = [False]

    @functools.wraps(orig_backward)
    def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        # Tensor.backward hands itself (looked up by name: this wrapper) to the torch-function
        # mode, which calls it again: count the outer call only
        if entered[0]:
            return orig_backward(self, *args, **kwargs)
        entered[0] = True
        state.backward_calls += 1
        try:
            return orig_backward(self, *args, **kwargs)
        finally:
            entered[0] = False

    patcher.set(torch.Tensor, "backward", backward)

    from torch.optim.optimizer import register_optimizer_step_post_hook

    def _count_step(optimizer: Any, args: Any, kwargs: Any) -> None:
        state.optimizer_steps += 1

    handle = register_optimizer_step_post_hook(_count_step)
    patcher._undo.append((_HandleRemover(handle), "remove", Patcher._MISSING))


class _HandleRemover:
    """Lets Patcher.restore() remove a hook: deleting `remove` calls it."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __delattr__(self, name: str) -> None:
        self._handle.remove()
