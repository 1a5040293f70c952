"""What the analysis observes, in program order: the facts rules read.

Each event carries the syntax node it is about and a `Context` that says where in the program
it happened (function, loops, no_grad, guards), which is all that ranking needs to tell when a
crash would happen. Rules read events, values and knowledge only: the texts and arguments they
need travel on the events (`Site.args`, `Argument.text`), so no rule re-reads the syntax.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from devlint.analysis.values import Kind, Placement, Value
from devlint.knowledge.signatures import positional_parameters

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    # the syntax node an event is about, as rules name it (they never import libcst)
    Node = cst.CSTNode


class LoopKind(str, enum.Enum):
    """What a loop iterates (analysis/statements.py decides it where the loop is run)."""

    # a member equals its text and hashes like it, so a test written with the text still holds
    __hash__ = str.__hash__

    DATA = "data"  # a DataLoader, a dataset, batches: the steps of training or evaluation
    EPOCH = "epoch"  # `for epoch in range(...)`
    OTHER = "other"


@dataclass(frozen=True)
class Context:
    function: str = "<module>"  # "train", "Net.forward", "<module>"
    role: str = "module"  # module | function | method | forward | getitem | collate | init
    class_name: str = ""
    loops: tuple[LoopKind, ...] = ()  # the enclosing loops, outermost first
    no_grad: bool = False
    guarded: bool = False  # inside `if torch.cuda.is_available():`
    default_device: bool = False  # under set_default_device / `with torch.device(...)`
    callers: tuple[str, ...] = ()  # the call chain that reached this function
    statement: "cst.CSTNode | None" = field(default=None, compare=False)
    path: str = ""  # the project file the code is in, when it is not the checked file
    handler: bool = False  # inside an `except` handler: it runs only after that exception
    periodic: bool = False  # inside `if step % N == 0:` in a loop (or what it calls): not every iteration

    @property
    def in_data_loop(self) -> bool:
        return LoopKind.DATA in self.loops


@dataclass(frozen=True)
class Event:
    node: "cst.CSTNode"
    ctx: Context


@dataclass(frozen=True)
class Meet(Event):
    """A value known to be on the host meets a value known to be on a device."""

    host: Value  # placed on the host (on the path the meet happens on)
    device: Value  # placed on a device (on that path)
    operation: str  # "call of `model`", "`+`", "torch.cat"
    likely: bool = False  # the meet happens on some paths only
    condition: str = ""  # those paths, described for messages ("`args.gpu` is None")
    # the tests that decide those paths: (path literal, the test that stated it), for the steps
    # of the finding's story
    tests: tuple = ()


@dataclass(frozen=True)
class DeviceMeet(Event):
    """Two values on devices named by different device identities meet (DEV111 decides
    whether the two identities can disagree; `Placement.ident`, analysis/devices.py)."""

    first: Value
    second: Value
    operation: str


@dataclass(frozen=True)
class Move(Event):
    """`.to(...)`, `.cuda()` or `.cpu()` on some value; `node` is the call."""

    subject: Value
    target: Placement
    method: str
    statement: bool  # the call is a whole expression statement: its result is discarded
    subject_text: str = ""
    non_blocking: bool = False  # the call passes `non_blocking=True`
    # the device argument as written when it is a plain name (`device`, `args.device`), for
    # fix suggestions that reuse the program's own device variable
    device_name: str = ""
    # the path condition where it happens (analysis/conditions.py: a conjunction of literals)
    when: frozenset = frozenset()


@dataclass(frozen=True)
class HostUse(Event):
    """A device tensor handed to host-only code (`.numpy()`, NumPy, sklearn, matplotlib)."""

    value: Value
    consumer: str


class SiteKind(enum.Enum):
    """What happens at a `Site`."""

    OPTIMIZER = "optimizer"  # an optimizer is built
    OPTIMIZER_LOAD = "optimizer_load"  # optimizer.load_state_dict(...)
    DATAPARALLEL = "dataparallel"  # nn.DataParallel / DDP with device_ids wraps a model
    LOADER = "loader"  # a DataLoader is built
    WORKER_MOVE = "worker_move"  # device work that runs where a DataLoader builds batches
    FACTORY = "factory"  # a tensor factory (torch.zeros, torch.tensor, ...)
    LOAD = "load"  # a checkpoint is loaded (torch.load & co.)
    SAVE = "save"  # torch.save(obj, f): `value` is what is saved
    ENV = "env"  # an environment variable is set
    CUDA = "cuda"  # a torch.cuda call, `.cuda()`, or `.to("cuda")`
    CUDA_QUERY = "cuda_query"  # torch.cuda.is_available() / device_count()
    EMPTY_CACHE = "empty_cache"  # torch.cuda.empty_cache()
    CPU_FALLBACK = "cpu_fallback"  # a device is chosen between a GPU and the CPU
    CUDA_FLAG = "cuda_flag"  # an `if` on a user's GPU switch (`if args.cuda:`)
    CPU_OPTION = "cpu_option"  # the configuration offers the CPU (`--device` default "cpu", `device.type == "cpu"`)
    # a branch on a tensor's own device (`x.is_cuda`, `x.device.type == "cpu"`) or on a function's
    # GPU parameter (`def to_tensor(data, cuda=True)`): code that serves both, not a choice of
    # where the program runs
    DEVICE_DISPATCH = "device_dispatch"
    PROCESS_GROUP = "process_group"  # torch.distributed is initialised
    ENTRY = "entry"  # the analysis starts a function no call reached: program order restarts
    START_METHOD = "start_method"  # multiprocessing.set_start_method(...)
    DEFAULT_DEVICE = "default_device"  # torch.set_default_device(<a device>)
    ACCELERATOR = "accelerator"  # torch.accelerator.current_accelerator(): a GPU of whatever type


@dataclass(frozen=True)
class Argument:
    """One argument of a call, in source order: `keyword` is None for a positional argument,
    "*" / "**" for a spread one."""

    keyword: str | None
    value: Value
    node: "cst.CSTNode | None" = field(default=None, compare=False)

    @property
    def text(self) -> str:
        """The argument as written (generated on demand: code generation is not cheap)."""
        if self.node is None:
            return ""
        from devlint.analysis.syntax import code_of

        return code_of(self.node)

    @property
    def items(self) -> tuple[str, ...] | None:
        """The elements of a list or tuple display as written (`[1, 2]` gives ("1", "2"); a
        starred element keeps its star); None when the argument is not such a display."""
        from devlint.analysis.syntax import display_items

        return display_items(self.node) if self.node is not None else None


@dataclass(frozen=True)
class Site(Event):
    """A place in the program where something of interest happens: a construction, a CUDA
    call, a checkpoint load, an environment write, a device choice (`kind` says which)."""

    kind: SiteKind
    callee: str  # the canonical name of what is called ("torch.optim.Adam"), when a call
    value: Value
    args: tuple[Argument, ...] = ()
    text: str = ""
    # ENV: the variable names written ("" when a name is not a literal); LOAD / SAVE: the
    # file, as analysis/files.py identifies it (empty when no argument names it)
    names: tuple[str, ...] = ()
    # FACTORY in a loop: its data is the same on every iteration (a literal, or names the loop
    # never rebinds; DEV303)
    constant_data: bool = False
    # the path condition where it happens (analysis/conditions.py: a conjunction of literals)
    when: frozenset = frozenset()

    def keyword(self, name: str) -> Argument | None:
        return next((a for a in self.args if a.keyword == name), None)

    @property
    def spreads(self) -> bool:
        """Some arguments are passed with `*` or `**`: which parameters they fill is not known."""
        return any(a.keyword in ("*", "**") for a in self.args)

    @property
    def positional(self) -> list[Argument]:
        return [a for a in self.args if a.keyword is None]

    def argument(self, name: str) -> Argument | None:
        """The argument bound to parameter `name`: given by keyword, inside a `**dict` whose
        keys are known, or by position (the callee's signature, knowledge/signatures.py)."""
        for arg in self.args:
            if arg.keyword == name:
                return arg
            if arg.keyword == "**" and arg.value.kind is Kind.DICT:
                inner = arg.value.get_field(name)
                if inner is not None:
                    return Argument(name, inner)
        parameters = positional_parameters(self.callee)
        if name in parameters:
            index = parameters.index(name)
            positional = self.positional
            if len(positional) > index:
                return positional[index]
        return None
