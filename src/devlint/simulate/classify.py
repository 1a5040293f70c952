"""From a crash to a rule: which value was left behind, and when in the run it happened.

The dispatch mode attaches the tensors an op was given to the error it raises. Here each host
tensor among them is traced to where it lives: a parameter or buffer of a module on the call
stack (DEV102 / DEV103 / DEV106), a plain tensor attribute of such a module (DEV104), an
optimizer's state (DEV114), a DataLoader batch or tensor data (DEV101), a factory call (DEV105).
When nothing says which, the crash is DEV100 simulated-device-crash: the error is real, only its
cause is not named.
"""

from __future__ import annotations

import re
import types
from dataclasses import dataclass
from typing import Any

import torch

from devlint.findings import Phase
from devlint.knowledge.conventions import FRAME_PHASE_WORDS
from devlint.simulate import provenance, tags
from devlint.simulate.errors import SimulatedDeviceError, SimulatedHostError
from devlint.simulate.hooks import SimState

RULE_NAMES = {
    "DEV100": "simulated-device-crash",
    "DEV101": "unmoved-input",
    "DEV102": "unmoved-module",
    "DEV103": "module-outside-tree",
    "DEV104": "unregistered-tensor",
    "DEV105": "factory-without-device",
    "DEV106": "changed-after-move",
    "DEV108": "to-on-non-tensor",
    "DEV109": "host-op-on-device-tensor",
    "DEV110": "cuda-in-worker",
    "DEV114": "optimizer-before-move",
}

# device errors raised by torch's own Python code (it reads the patched devices) or by CUDA
_DEVICE_MESSAGES = re.compile(
    r"Expected all tensors to be on the same device"
    r"|module must have its parameters and buffers on device"
    r"|are not at the same device"
    r"|Expected a '\w+' device type for generator"
    r"|Cannot re-initialize CUDA in forked subprocess"
    r"|indices should be either on cpu or on the same device"
    r"|expected self and mask to be on the same device"
    r"|can't convert cuda:\d+ device type tensor to numpy"
    r"|Tensors of the same index must be on the same device"
    r"|only dense CPU tensors can be pinned"
)
_NO_TO = re.compile(r"'(?P<type>[\w.]+)' object has no attribute '(?P<attr>to|cuda|cpu)'")

# words in a function's name that say which part of a run it is, first match wins (the naming
# conventions are data, kept with the others in knowledge/conventions.py)
_PHASE_WORDS = tuple((Phase(value), pattern) for value, pattern in FRAME_PHASE_WORDS)


@dataclass
class Cause:
    code: str
    hint: str
    # the outermost module on the stack whose weights were never moved (DEV102 / DEV103)
    module: Any = None
    # (file, line) where the cause was written, when the run saw it (DEV106: the assignment)
    written_at: tuple[str, int] | None = None

    @property
    def name(self) -> str:
        return RULE_NAMES[self.code]


def is_device_error(exc: BaseException) -> bool:
    """A crash a GPU run would have too, caused by where the program put its data."""
    if isinstance(exc, (SimulatedDeviceError, SimulatedHostError)):
        return True
    if isinstance(exc, AttributeError) and _NO_TO.search(str(exc)):
        return True
    if isinstance(exc, (RuntimeError, TypeError, ValueError)) and _DEVICE_MESSAGES.search(str(exc)):
        return True
    return False


def device_error_in_chain(exc: BaseException) -> BaseException | None:
    """The device error itself, when the script wrapped it in another exception."""
    seen = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if is_device_error(current):
            return current
        current = current.__cause__ or current.__context__
    return None


def frames_of(tb: types.TracebackType | None) -> list[types.FrameType]:
    """The frames of a traceback, outermost first."""
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def _tensors_of(obj: Any, depth: int = 0) -> list[tuple[str, torch.Tensor]]:
    """(path, tensor) for tensors held directly or in plain containers by `obj`."""
    if depth > 2:
        return []
    if isinstance(obj, torch.Tensor):
        return [("", obj)]
    out: list[tuple[str, torch.Tensor]] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out += [(f"[{key!r}]{p}", t) for p, t in _tensors_of(value, depth + 1)]
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            out += [(f"[{i}]{p}", t) for p, t in _tensors_of(value, depth + 1)]
    return out


def _quoted(name: str) -> str:
    return name if name.startswith("the ") else f"`{name}`"


def _user_name(keys: dict[int, str], user_locals: list[dict]) -> dict[int, str]:
    """The names the user's innermost frame gives the host tensors (`labels`, `batch['x']`)."""
    names: dict[int, str] = {}
    for scope in user_locals[-1:]:
        for var, value in scope.items():
            if var.startswith("__"):
                continue
            for path, t in _tensors_of(value):
                key = tags.storage_key(t)
                if key in keys and key not in names:
                    names[key] = f"{var}{path}"
    return names


def classify(exc: BaseException, user_locals: list[dict] | None = None) -> Cause:
    """Name the cause of a device error.

    `user_locals`: the local variables of the user's frames, innermost last (to name the value
    left behind as the user named it).
    """
    text = str(exc)
    if "Cannot re-initialize CUDA in forked subprocess" in text or "only dense CPU tensors can be pinned" in text:
        moved = None
        for _name, _dev, t in getattr(exc, "tensors", None) or []:
            moved = moved or provenance.moved_at(t)
        return Cause(
            "DEV110",
            "a DataLoader worker process (or the pin-memory step) meets CUDA: move batches to the device "
            "in the training loop, not in the Dataset or collate_fn",
            written_at=(moved[0], moved[1]) if moved else None,
        )
    if isinstance(exc, SimulatedHostError) or "to numpy" in text:
        return Cause("DEV109", "a GPU tensor is handed to host-only code (NumPy) without `.cpu()` first")
    if isinstance(exc, AttributeError):
        match = _NO_TO.search(str(exc))
        what = match.group("type") if match else "the object"
        attr = match.group("attr") if match else "to"
        return Cause("DEV108", f"`.{attr}()` is called on a `{what}`, which has no such method: move the tensors it holds instead")
    if not isinstance(exc, SimulatedDeviceError) or not exc.tensors:
        return Cause("DEV100", "the device error is real; devlint could not tell which value was left behind")

    frames = frames_of(exc.__traceback__)
    host = [(name, t) for name, dev, t in exc.tensors if dev == tags.CPU]
    gpu = [(name, t) for name, dev, t in exc.tensors if dev != tags.CPU]
    keys: dict[int, str] = {}
    for name, t in host:
        key = tags.storage_key(t)
        if key is not None:
            keys.setdefault(key, name)

    user_names = _user_name(keys, user_locals or [])

    # optimizer state built before the move
    for frame in reversed(frames):
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.optim.Optimizer):
            for param_state in owner.state.values():
                for _path, t in _tensors_of(param_state):
                    if tags.storage_key(t) in keys and t.dim() > 0:
                        return Cause(
                            "DEV114",
                            f"the state of `{type(owner).__name__}` was created on the CPU before the model "
                            "was moved; build the optimizer after `model.to(device)`",
                        )

    modules: list[tuple[int, Any]] = []  # (frame index, module) innermost last
    for i, frame in enumerate(frames):
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module) and (not modules or modules[-1][1] is not owner):
            modules.append((i, owner))

    for index in range(len(modules) - 1, -1, -1):
        _, module = modules[index]
        for pname, value in list(module.named_parameters(recurse=False)) + list(module.named_buffers(recurse=False)):
            if tags.storage_key(value) in keys:
                return _module_cause(module, pname, modules[:index])
        for attr, value in vars(module).items():
            if attr.startswith("_"):
                continue
            for path, t in _tensors_of(value):
                if tags.storage_key(t) in keys:
                    return Cause(
                        "DEV104",
                        f"`self.{attr}{path}` of `{type(module).__name__}` is a plain tensor attribute: "
                        "`model.to(device)` moves only parameters and buffers; register it with "
                        "`register_buffer` (or wrap it in `nn.Parameter`)",
                    )

    for name, t in host:
        origin = provenance.origin_of(t)
        if origin is None:
            continue
        key = tags.storage_key(t)
        name = (user_names.get(key) if key is not None else None) or f"the CPU tensor (argument `{name}`)"
        kind = origin[0]
        creator = origin[2] if len(origin) > 2 else None
        if kind == "batch":
            return Cause(
                "DEV101",
                f"{_quoted(name)} is (part of) a DataLoader batch that is still on the CPU; move it to the "
                "device where the loop binds it" + (f" (`{name} = {name}.to(device)`)" if name.isidentifier() else ""),
            )
        if kind == "data":
            where = f" (created at line {creator[1]})" if creator else ""
            if creator and creator[2] == "forward":
                return Cause("DEV105", f"a tensor built with `{origin[1]}` inside `forward`{where} has no `device=`")
            return Cause("DEV101", f"{_quoted(name)}, built with `{origin[1]}`{where}, is still on the CPU; move it to the device")
        if kind == "factory":
            where = f" at line {creator[1]}" if creator else ""
            return Cause(
                "DEV105",
                f"{_quoted(name)} comes from `{origin[1]}(...)`{where}, which creates its tensor on the CPU: "
                "pass `device=` (for example `device=x.device`)",
            )
    if gpu and host:
        named = [user_names[k] for k in (tags.storage_key(t) for _, t in host) if k in user_names]
        what = f"`{named[0]}` is on the CPU and meets" if named else "a value on the CPU meets"
        return Cause(
            "DEV100",
            f"{what} a value on the GPU; devlint could not tell which rule's pattern put it there",
        )
    return Cause("DEV100", "the device error is real; devlint could not tell which value was left behind")


def _module_cause(module: torch.nn.Module, pname: str, outer: list) -> Cause:
    """The weights of `module` are on the CPU: was it never moved, outside the tree, or added late?"""
    kind = type(module).__name__
    root = module
    for _, parent in reversed(outer):
        if any(tags.is_simulated(p) for p in parent.parameters()):
            break
        root = parent
    own = dict(module.named_parameters(recurse=False))
    if pname in own and any(tags.is_simulated(p) for p in module.parameters()):
        # the module itself was moved: this parameter was attached afterwards
        return Cause(
            "DEV106",
            f"the parameter `{pname}` of `{kind}` was assigned after `model.to(device)` (the rest of the "
            "model is on the GPU); move it too, or assign it before the move",
            module=root,
            written_at=provenance.assigned_at(own[pname]),
        )
    for _, parent in reversed(outer):
        registered = any(child is module for child in parent.modules())
        parent_on_gpu = any(tags.is_simulated(p) for p in parent.parameters())
        if registered and parent_on_gpu:
            return Cause(
                "DEV106",
                f"`{kind}` is registered in `{type(parent).__name__}`, whose other weights are on the GPU: "
                "it was assigned after `model.to(device)`; move it too (or assign it before the move)",
                module=root,
                written_at=_deepest_assignment(parent, module),
            )
        if not registered and parent_on_gpu:
            return Cause(
                "DEV103",
                f"`{kind}` is used inside `{type(parent).__name__}` but is not registered in it "
                "(a global, a plain list/dict, or built in `forward`), so `model.to(device)` does not reach "
                "it; use `nn.ModuleList` / `nn.ModuleDict` or assign it as an attribute",
                module=root,
            )
    holds = "its weight" if pname else "its tensors"
    return Cause(
        "DEV102",
        f"`{type(root).__name__}` was never moved to the device: {holds} (`{pname}`) is still on the CPU; "
        "call `.to(device)` on it",
        module=root,
    )


def _deepest_assignment(parent: torch.nn.Module, module: torch.nn.Module) -> tuple[str, int] | None:
    """Where the submodule holding `module` was assigned (the deepest one the run recorded)."""
    path = next((name for name, m in parent.named_modules() if m is module), None)
    if path is None:
        return None
    parts = path.split(".") if path else []
    for depth in range(len(parts), 0, -1):
        sub = parent.get_submodule(".".join(parts[:depth]))
        where = provenance.assigned_at(sub)
        if where is not None:
            return where
    return None


def detect_phase(exc: BaseException, state: SimState, user_frames: list[Any]) -> Phase:
    """When in the run the crash happens, from the functions on the stack and the run so far."""
    if state.in_checkpoint:
        return Phase.CHECKPOINT
    for frame in reversed(user_frames):
        for phase, pattern in _PHASE_WORDS:
            if frame.name != "<module>" and pattern.search(frame.name):
                return phase
    frames = frames_of(exc.__traceback__)
    trained = bool(state.optimizer_steps or state.backward_calls)
    selves = [f.f_locals.get("self") for f in frames]
    modules = [m for m in selves if isinstance(m, torch.nn.Module)]
    if any(not m.training for m in modules):
        return Phase.EVALUATION if trained else Phase.INFERENCE
    grad_enabled = getattr(exc, "grad_enabled", True)
    in_backward = any("torch/autograd" in f.f_code.co_filename.replace("\\", "/") for f in frames)
    if in_backward:
        return Phase.TRAINING
    if not grad_enabled or getattr(exc, "inference_mode", False):
        return Phase.EVALUATION if trained else Phase.INFERENCE
    if modules or state.batches or trained:
        # a model in training mode, with gradients on: the first training step
        return Phase.TRAINING
    # no model call, no batch, no step yet: set-up code before training
    return Phase.MODULE if user_frames else Phase.UNKNOWN


def reported_frame(cause: Cause, frames: list[types.FrameType], is_user: Any) -> int | None:
    """Index (into `frames`, outermost first) of the user frame a finding points at.

    A value left behind (DEV101) is the bug of the call that hands it over: the user's call into
    the outermost module on the stack (`model(inputs)`), not the layer deep inside `forward`
    where the kernel finally fails. A module that was never moved (DEV102, DEV103) is reported
    where the user calls it (`teacher(x)`, `self.metrics["acc"](preds, y)`). Every other cause is
    reported where the crash happens: the innermost user frame.
    """
    user = [i for i, frame in enumerate(frames) if is_user(frame.f_code.co_filename)]
    if not user:
        return None
    target: Any = None
    if cause.code == "DEV101":
        target = "any"
    elif cause.code in ("DEV102", "DEV103") and cause.module is not None:
        target = cause.module
    if target is not None:
        for i, frame in enumerate(frames):
            owner = frame.f_locals.get("self")
            if isinstance(owner, torch.nn.Module) and (target == "any" or owner is target):
                callers = [j for j in user if j < i]
                if callers:
                    return callers[-1]
                break
    return user[-1]
