"""What the interpreter observes, in program order: the facts rules read.

Each event carries the syntax node it is about and a `Context` that says where in the program
it happened (function, loops, no_grad, guards), which is all that ranking needs to tell when a
crash would happen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from devlint.analysis.values import Placement, Value

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst


@dataclass(frozen=True)
class Context:
    function: str = "<module>"  # "train", "Net.forward", "<module>"
    role: str = "module"  # module | function | method | forward | getitem | collate | init
    class_name: str = ""
    loops: tuple[str, ...] = ()  # enclosing loop kinds, outermost first: data | epoch | other
    no_grad: bool = False
    guarded: bool = False  # inside `if torch.cuda.is_available():`
    default_device: bool = False  # under set_default_device / `with torch.device(...)`
    callers: tuple[str, ...] = ()  # the call chain that reached this function
    statement: "cst.CSTNode | None" = field(default=None, compare=False)
    path: str = ""  # the project file the code is in, when it is not the checked file

    @property
    def in_loop(self) -> bool:
        return bool(self.loops)

    @property
    def in_data_loop(self) -> bool:
        return "data" in self.loops


@dataclass(frozen=True)
class Event:
    node: "cst.CSTNode"
    ctx: Context


@dataclass(frozen=True)
class Meet(Event):
    """A value known to be on the host meets a value known to be on a device."""

    host: Value
    device: Value
    operation: str  # "call of `model`", "`+`", "torch.cat"
    likely: bool = False  # the host side is on the host on some paths only


@dataclass(frozen=True)
class DeviceMeet(Event):
    """Two values on devices named by different device identities meet (DEV111 decides
    whether the two identities can disagree; `Placement.ident`, analysis/devices.py)."""

    first: Value
    second: Value
    operation: str


@dataclass(frozen=True)
class Move(Event):
    """`.to(...)`, `.cuda()` or `.cpu()` on some value."""

    subject: Value
    target: Placement
    method: str
    statement: bool  # the call is a whole expression statement: its result is discarded
    subject_text: str = ""
    non_blocking: bool = False
    # the `.to(...)` call node, for fixes
    call: "cst.CSTNode | None" = None


@dataclass(frozen=True)
class HostUse(Event):
    """A device tensor handed to host-only code (`.numpy()`, NumPy, sklearn, matplotlib)."""

    value: Value
    consumer: str


@dataclass(frozen=True)
class Made(Event):
    """A value of interest was constructed: optimizer, DataParallel, loader, factory, load."""

    what: str  # optimizer | dataparallel | loader | factory | load | env | cuda | empty_cache
    # portability (DEV2xx): cpu_fallback (a device chosen between a GPU and the CPU), cuda_flag
    # (an `if` on a user's GPU switch), process_group (torch.distributed init), entry (the
    # analysis starts a function no call reached: program order restarts there)
    qual: str
    value: Value
    args: tuple[tuple[str | None, Value], ...] = ()
    text: str = ""
