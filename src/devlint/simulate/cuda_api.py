"""torch.cuda, torch.accelerator, cuDNN and NVTX as a CUDA build with one GPU answers them.

`torch.cuda.is_available()` is True and `device_count()` is 1; the device properties describe
an A100-like GPU; streams and events are no-op stand-ins (the simulation runs everything in
order, so `Event.elapsed_time` measures wall-clock time); memory statistics are zero and RNG
state calls do nothing. A second GPU (`cuda:1`) is refused as `SimulationUnsupported`: a one-GPU
machine would raise "invalid device ordinal". `install` applies the stubs through a `Patcher`.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import time
import types
from dataclasses import dataclass
from typing import Any, Iterator, Literal

import torch

from devlint.simulate import tags
from devlint.simulate.errors import SimulationUnsupported
from devlint.simulate.patcher import Patcher


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

    def __exit__(self, *exc: Any) -> Literal[False]:
        return False


def _cuda_stubs() -> dict[str, Any]:
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
    def stream(s: Any = None) -> Iterator[None]:
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


def install(patcher: Patcher) -> None:
    """Patch torch.cuda (and its memory / random submodules), torch.accelerator, cuDNN and NVTX."""
    cuda_module = sys.modules["torch.cuda"]

    stubs = {name: _distinct(value, name) for name, value in _cuda_stubs().items()}
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

    nvtx = sys.modules.get("torch.cuda.nvtx")
    if nvtx is not None:
        for name in ("range_push", "range_pop", "range_start", "range_end", "mark"):
            if hasattr(nvtx, name):
                patcher.set(nvtx, name, _distinct(lambda *args, **kwargs: 0, name))
        if hasattr(nvtx, "range"):
            patcher.set(nvtx, "range", _distinct(contextlib.contextmanager(_nvtx_range), "range"))
