"""Execute a script (or `-m module`) under the simulation and turn what happened into an outcome.

The program runs in this process, as `python script.py args...` would run it: `runpy` with
`sys.argv` set and the script's folder first on `sys.path`. Whatever ends the run is caught
here and sorted into: ran clean, stopped at a limit, crashed on a device error (a finding),
failed for another reason, or hit something the simulation does not model.
"""

from __future__ import annotations

import enum
import os
import re
import runpy
import sys
import sysconfig
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from devlint.findings import Confidence, Finding, Phase, Severity

_DEVLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Status(str, enum.Enum):
    CLEAN = "clean"
    LIMIT = "stopped-at-limit"
    DEVICE_ERROR = "device-error"
    SCRIPT_ERROR = "script-error"
    UNSUPPORTED = "unsupported"
    INTERNAL_ERROR = "internal-error"

    @property
    def exit_code(self) -> int:
        return {
            "clean": 0,
            "stopped-at-limit": 0,
            "device-error": 1,
            "unsupported": 3,
            "internal-error": 3,
            "script-error": 4,
        }[self.value]


@dataclass
class Location:
    path: str  # as shown to the user (relative to the working directory when inside it)
    line: int
    column: int  # 1-based
    end_line: int
    end_column: int  # 1-based, exclusive
    function: str
    source: str


@dataclass
class RunOutcome:
    status: Status
    target: str
    finding: Finding | None = None
    exception_type: str | None = None  # the builtin type a user sees: RuntimeError, TypeError...
    message: str | None = None
    traceback: str | None = None  # the user's traceback, devlint's frames removed
    location: Location | None = None  # the innermost frame of the user's code
    stop_reason: str | None = None  # "time" when --max-seconds ended the run
    phase: Phase = Phase.UNKNOWN
    batches: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return self.status.exit_code


def _skip_roots() -> list[str]:
    import torch

    roots = {os.path.dirname(os.path.abspath(torch.__file__)), _DEVLINT_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(os.path.abspath(path))
    for path in sys.path:
        if path.endswith("site-packages") or path.endswith("dist-packages"):
            roots.add(os.path.abspath(path))
    return sorted(roots)


class _UserFiles:
    """Which frames are the user's: anything outside torch, devlint, the stdlib and installed
    packages, plus anything under the folder of the script (or package) being run."""

    def __init__(self, user_roots: list[str]) -> None:
        self.user_roots = [os.path.abspath(r) + os.sep for r in user_roots]
        self.skip = [r + os.sep for r in _skip_roots()]

    def __call__(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = os.path.abspath(filename)
        if path.startswith(_DEVLINT_DIR + os.sep):
            return False
        if any(path.startswith(root) for root in self.user_roots):
            return True
        return not any(path.startswith(root) for root in self.skip)


def _display_path(filename: str, script: str | None, script_as_given: str | None) -> str:
    path = os.path.abspath(filename)
    if script is not None and path == script and script_as_given is not None:
        return script_as_given
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _builtin_type_name(exc: BaseException) -> str:
    for klass in type(exc).__mro__:
        if klass.__module__ == "builtins":
            return klass.__name__
    return type(exc).__name__


# torch's own machinery between an op and the simulation's modes: a GPU run raises from C++
# below the user's call and never shows these frames
_MACHINERY = (
    os.path.join("torch", "_compile.py"),
    os.path.join("torch", "_dynamo", "eval_frame.py"),
    os.path.join("torch", "utils", "_python_dispatch.py"),
    os.path.join("torch", "overrides.py"),
    os.path.join("torch", "_ops.py"),
)


def _is_devlint_frame(filename: str) -> bool:
    """Frames a traceback from a real GPU run would not have: devlint's, runpy's, and torch's
    mode machinery."""
    if not filename:
        return False
    if filename.startswith("<frozen runpy>") or os.path.basename(filename) == "runpy.py":
        return True
    if filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return path.startswith(_DEVLINT_DIR + os.sep) or path.endswith(_MACHINERY)


def format_user_traceback(exc: BaseException) -> str:
    """The traceback a user would see from `python script.py`, devlint's own frames removed."""
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__)
    pending = [te]
    seen = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = traceback.StackSummary.from_list(
            [f for f in current.stack if not _is_devlint_frame(f.filename)]
        )
        exc_type = getattr(current, "exc_type", None)
        if exc_type is not None and exc_type.__module__.startswith("devlint."):
            builtin = next((k for k in exc_type.__mro__ if k.__module__ == "builtins"), exc_type)
            try:
                current.exc_type = builtin
            except AttributeError:
                pass
            if hasattr(current, "exc_type_str"):
                current.exc_type_str = builtin.__name__
        for chained in (current.__cause__, current.__context__):
            if chained is not None:
                pending.append(chained)
    return "".join(te.format())


def _user_frames(exc: BaseException, is_user: _UserFiles) -> list[traceback.FrameSummary]:
    """FrameSummary of each user frame in the traceback, innermost last."""
    summary = traceback.extract_tb(exc.__traceback__)
    return [f for f in summary if is_user(f.filename)]


def _location(frame: traceback.FrameSummary, script: str | None, script_as_given: str | None) -> Location:
    colno = getattr(frame, "colno", None)
    end_colno = getattr(frame, "end_colno", None)
    line = frame.lineno or 0
    end_lineno = getattr(frame, "end_lineno", None) or line
    source = frame.line or ""
    if colno is None:
        stripped = len(source) - len(source.lstrip()) if source else 0
        colno = stripped
        end_colno = colno + len(source.strip())
        end_lineno = line
    return Location(
        path=_display_path(frame.filename, script, script_as_given),
        line=line,
        column=colno + 1,
        end_line=end_lineno,
        end_column=(end_colno if end_colno is not None else colno) + 1,
        function=frame.name,
        source=source.strip(),
    )


def _line_location(where: tuple[str, int], script: str | None, script_as_given: str | None) -> Location:
    import linecache

    filename, line = where
    source = linecache.getline(filename, line)
    stripped = source.strip()
    start = len(source) - len(source.lstrip())
    return Location(
        path=_display_path(filename, script, script_as_given),
        line=line,
        column=start + 1,
        end_line=line,
        end_column=start + len(stripped) + 1,
        function="",
        source=stripped,
    )


def run(
    target: str,
    args: list[str] | tuple[str, ...] = (),
    *,
    module: bool = False,
    max_batches: int | None = 2,
    max_seconds: float | None = None,
) -> RunOutcome:
    """Run `target` (a script path, or a module name with `module=True`) under simulated CUDA."""
    import torch

    from devlint.simulate import torch_version_warning
    from devlint.simulate.budget import Limits, StopSimulation
    from devlint.simulate.classify import classify, detect_phase, device_error_in_chain, frames_of, reported_frame
    from devlint.simulate.errors import SimulationUnsupported
    from devlint.simulate.session import Simulation

    outcome = RunOutcome(status=Status.CLEAN, target=target)
    warning = torch_version_warning(torch.__version__)
    if warning:
        outcome.warnings.append(warning)

    script_abs: str | None = None
    if module:
        import importlib.util

        spec = importlib.util.find_spec(target.split(".")[0])
        root = None
        if spec is not None and spec.origin:
            root = os.path.dirname(spec.origin)
            if spec.submodule_search_locations:
                root = os.path.dirname(root)
        user_roots = [root or os.getcwd()]
    else:
        script_abs = os.path.abspath(target)
        user_roots = [os.path.dirname(script_abs)]
    is_user = _UserFiles(user_roots)

    saved_argv = sys.argv[:]
    saved_path = sys.path[:]
    limits = Limits(max_batches=max_batches if max_batches else None, max_seconds=max_seconds)
    started = time.perf_counter()
    error: BaseException | None = None
    simulation = Simulation(limits)
    try:
        with simulation:
            try:
                if module:
                    sys.argv = [target, *args]
                    sys.path.insert(0, os.getcwd())
                    runpy.run_module(target, run_name="__main__", alter_sys=True)
                else:
                    sys.argv = [target, *args]
                    sys.path.insert(0, user_roots[0])  # the script's folder
                    runpy.run_path(target, run_name="__main__")
            except StopSimulation as stop:
                outcome.status = Status.LIMIT
                outcome.stop_reason = stop.reason
            except SystemExit as exit_:
                if exit_.code not in (None, 0):
                    error = exit_
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - everything the script raises is reported
                error = exc
    except StopSimulation as stop:  # the alarm fired while the simulation was being torn down
        outcome.status = Status.LIMIT
        outcome.stop_reason = stop.reason
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    outcome.seconds = time.perf_counter() - started
    outcome.batches = simulation.state.batches

    if error is None:
        return outcome

    if isinstance(error, SystemExit):
        outcome.status = Status.SCRIPT_ERROR
        outcome.exception_type = "SystemExit"
        outcome.message = f"the script exited with status {error.code!r}"
        return outcome

    outcome.exception_type = _builtin_type_name(error)
    outcome.message = str(error)
    outcome.traceback = format_user_traceback(error)
    frames = _user_frames(error, is_user)
    if frames:
        outcome.location = _location(frames[-1], script_abs, target if not module else None)

    device_error = device_error_in_chain(error)
    if device_error is not None:
        if device_error is not error:
            frames = _user_frames(device_error, is_user) or frames
            if frames:
                outcome.location = _location(frames[-1], script_abs, target if not module else None)
            outcome.exception_type = _builtin_type_name(device_error)
            outcome.message = str(device_error)
        outcome.status = Status.DEVICE_ERROR
        live = frames_of(device_error.__traceback__)
        summaries = traceback.extract_tb(device_error.__traceback__)
        user_locals = [f.f_locals for f in live if is_user(f.f_code.co_filename)]
        cause = classify(device_error, user_locals)
        index = reported_frame(cause, live, is_user)
        if index is not None and index < len(summaries):
            outcome.location = _location(summaries[index], script_abs, target if not module else None)
        worker_frame = _worker_frame(outcome.message or "", is_user)
        if worker_frame is not None:
            # raised in a DataLoader worker: the line that matters is in the worker's traceback
            cause.written_at = worker_frame
        if cause.written_at is not None and is_user(cause.written_at[0]):
            crash = outcome.location
            outcome.location = _line_location(cause.written_at, script_abs, target if not module else None)
            if crash is not None:
                cause.hint += f"; the crash itself is at {crash.path}:{crash.line}"
        outcome.phase = detect_phase(device_error, simulation.state, frames)
        outcome.finding = _finding(cause, outcome)
        return outcome

    innermost = traceback.extract_tb(error.__traceback__)
    if isinstance(error, SimulationUnsupported) or _cuda_not_modelled(error):
        outcome.status = Status.UNSUPPORTED
    elif isinstance(error, SyntaxError) and not _is_devlint_frame(error.filename or ""):
        # the script (or a module it imports) cannot be compiled: it failed for a reason of its
        # own, not devlint's, whichever frame compiled it (runpy's, importlib's)
        outcome.status = Status.SCRIPT_ERROR
    elif innermost and _is_devlint_frame(innermost[-1].filename) and not _raised_on_purpose(error):
        outcome.status = Status.INTERNAL_ERROR
    else:
        outcome.status = Status.SCRIPT_ERROR
    return outcome


_WORKER_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in ')


def _worker_frame(message: str, is_user: _UserFiles) -> tuple[str, int] | None:
    """The innermost user frame of a traceback a DataLoader worker sent back in its message."""
    if "Original Traceback (most recent call last):" not in message:
        return None
    frames = [(m.group("file"), int(m.group("line"))) for m in _WORKER_FRAME.finditer(message)]
    users = [f for f in frames if is_user(f[0])]
    return users[-1] if users else None


def _cuda_not_modelled(exc: BaseException) -> bool:
    """torch's CPU build refusing a CUDA feature the simulation has no stand-in for."""
    text = str(exc)
    return (
        "not compiled with CUDA" in text
        or "Torch not compiled with CUDA enabled" in text
        or "Cannot access accelerator device when none is available" in text
        or "No CUDA GPUs are available" in text
        or "NCCL" in text
        or ("_cuda_" in text and isinstance(exc, AttributeError))
    )


def _raised_on_purpose(exc: BaseException) -> bool:
    """Errors devlint's patches raise as torch would (a lazy module's `ValueError`, ...)."""
    return type(exc).__module__ == "builtins" and isinstance(exc, (TypeError, ValueError, AssertionError))


def _finding(cause: Any, outcome: RunOutcome) -> Finding:
    loc = outcome.location
    extra = {
        "hint": cause.hint,
        "exception": outcome.exception_type,
        "traceback": outcome.traceback,
        "simulated": True,
    }
    return Finding(
        code=cause.code,
        name=cause.name,
        severity=Severity.ERROR,
        path=loc.path if loc else outcome.target,
        line=loc.line if loc else 1,
        column=loc.column if loc else 1,
        end_line=loc.end_line if loc else 1,
        end_column=loc.end_column if loc else 1,
        message=outcome.message or "",
        confidence=Confidence.DEFINITE,
        phase=outcome.phase,
        statement_lines=(loc.line, loc.end_line) if loc else None,
        context=loc.function if loc else "",
        snippet=loc.source if loc else "",
        rank=1,
        extra=extra,
    )
