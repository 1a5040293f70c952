"""The repairs rules attach to their findings, built from what the analysis recorded.

Each builder returns a devlint.findings.Fix or None when it cannot be sure the repair is
well-formed. A repair writes only names bound where it writes them (devlint.fix.bindings: in that
scope, before that line runs), and a device only as a device: a device string, a
`torch.device(...)`, or a variable the program assigns one to. In a program that also runs
without a GPU a repair follows the program's own device choice (`.to(device)`), never an
unconditional `.cuda()`. The fixer re-parses, re-checks and re-checks the names of every result
as well, so what slips through here is refused there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from devlint.fix import bindings, edits
from devlint.analysis.values import Value
from devlint.findings import Fix

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Meet
    from devlint.analysis.program import Program

_TARGET = re.compile(r"^[A-Za-z_][\w.]*(\[(\"[^\"]*\"|'[^']*'|\d+)\])?$")
_NAME = re.compile(r"^[A-Za-z_][\w.]*$")


def move_call(place_device: str) -> str | None:
    """The method call that moves to the device a placement names: `.to(device)`, `.cuda()`."""
    text = place_device.strip()
    if not text:
        return None
    if text in ("cuda", "cuda:"):
        return ".cuda()"
    if text.startswith(("'", '"')):
        return f".to({text})"
    if _NAME.match(text) and text not in ("cpu", "mps", "device_map"):
        return f".to({text})"
    if re.fullmatch(r"cuda:\d+", text):
        return f'.to("{text}")'
    return None


def _pins_a_gpu_on_some_paths(meet: "Meet", call: str) -> bool:
    """The meet happens on some paths only (the other side is on the device under a condition:
    `if args.use_cuda:`, `if use_gpu:`), and the repair would name a GPU outright (`.cuda()`,
    `.to("cuda:0")`): it would move the value on the paths that run on the CPU too, and break
    them. A repair that names the program's device variable follows the paths; this one does not."""
    return meet.likely and (call == ".cuda()" or call.startswith(('.to("', ".to('")))


_DEVICE_STRING = re.compile(r"^(cpu|cuda|mps|xpu|meta|hpu|npu|xla|ipu)(:\d+)?$")


def _is_device_string(text: str) -> bool:
    return text[:1] in ("'", '"') and text[-1:] == text[:1] and bool(_DEVICE_STRING.match(text[1:-1]))


def _device_valued(value: object, text: str, depth: int = 0) -> bool:
    """An `ast` expression that evaluates to a device: a device string, `torch.device(...)`,
    `t.device` / `args.device`, a choice between those, or a name assigned one of those."""
    import ast

    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and bool(_DEVICE_STRING.match(value.value))
    if isinstance(value, ast.IfExp):
        return _device_valued(value.body, text, depth) and _device_valued(value.orelse, text, depth)
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name == "device"
    if isinstance(value, ast.Attribute):
        return value.attr == "device"
    if isinstance(value, ast.Name) and depth < 3:
        found = bindings.bindings(text, value.lineno, value.id)
        return bool(found) and all(_device_valued(v, text, depth + 1) for v in found)  # type: ignore[union-attr]
    return False


def device_name_at(program: "Program", node: cst.CSTNode, name: str, *, parameters: bool) -> bool:
    """`name` (a plain variable) holds a device where `node` runs: it is bound there, and every
    assignment to it in the scope that resolves it is a device (a parameter counts only when
    `parameters`: what a caller passes is not known here)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", name) or edits.file_of(program, node) is None:
        return False
    text = edits.source_of(program, node)
    found = bindings.bindings(text, program.position(node)[0], name)
    if not found:
        return False
    return all((parameters and v == bindings.PARAM) or _device_valued(v, text) for v in found)


def _readable(program: "Program", node: cst.CSTNode, expression: str) -> bool:
    """The names `expression` (`x`, `batch.x`, `args.device`) starts with are bound at `node`."""
    base = re.match(r"[A-Za-z_]\w*", expression)
    if base is None or edits.file_of(program, node) is None:
        return False
    return bindings.readable(edits.source_of(program, node), program.position(node)[0], base.group(0))


def _runs_without_gpu(program: "Program") -> bool:
    from devlint.rules._portability import supports_cpu

    return supports_cpu(program)


def device_move(program: "Program", device: Value, node: cst.CSTNode) -> str | None:
    """The move to write at `node` for a value on `device`: `.to(<the device variable>)` when
    that variable holds a device there; `.cuda()` / `.to("cuda:1")` only in a program that
    never runs without a GPU; else None (no fix)."""
    call = move_call(device.place.device)
    if call is None:
        return None
    text = device.place.device.strip()
    if call == ".cuda()" or (_is_device_string(call[4:-1]) and "cpu" not in call):
        if not _runs_without_gpu(program):
            return call
        for move in program.moves:  # the program's own device variable, where it is readable
            name = move.device_name
            if name and move.target.on_device and device_name_at(program, node, name, parameters=False):
                return f".to({name})"
        return None
    if "." in text:  # `args.device`, `self.device`: its owner must be bound here
        return call if text.rsplit(".", 1)[1].endswith("device") and _readable(program, node, text) else None
    return call if device_name_at(program, node, text, parameters=True) else None


def move_before_use(program: "Program", meet: "Meet") -> Fix | None:
    """DEV101: `labels = labels.to(device)` on the line before the statement that mixes them,
    when `labels` and the device are both bound there."""
    name = meet.host.label
    stmt = meet.ctx.statement
    if not name or stmt is None or not _TARGET.match(name) or not edits.same_file(program, stmt, meet.node) \
            or not _readable(program, stmt, name):
        return None
    if re.fullmatch(r"[A-Za-z_]\w*", name) and not bindings.reassignable(
            edits.source_of(program, stmt), program.position(stmt)[0], name):
        return None  # `x = x.to(d)` would make a global `x` local to the function: UnboundLocalError
    call = device_move(program, meet.device, stmt)
    if call is None or _pins_a_gpu_on_some_paths(meet, call):
        return None
    if isinstance(stmt, cst.SimpleStatementLine) or isinstance(stmt, cst.BaseCompoundStatement):
        return edits.insert_line_before(program, stmt, f"{name} = {name}{call}",
                                        f"move `{name}` to the device before it is used", safe=False)
    return None


def move_after_construction(program: "Program", meet: "Meet") -> Fix | None:
    """DEV102: `Teacher()` -> `Teacher().to(device)` where the module is built."""
    origin = meet.host.origin
    if origin is None or origin.node is None or not isinstance(origin.node, cst.Call) \
            or not edits.same_file(program, origin.node, meet.node):
        return None
    call = device_move(program, meet.device, origin.node)
    if call is None or _pins_a_gpu_on_some_paths(meet, call):
        return None
    line, col, end_line, end_col = program.position(origin.node)
    return Fix(f"move the module to the device where it is built: append `{call}`", False,
               ((end_line, end_col, end_line, end_col, call),))


def move_assigned_value(program: "Program", meet: "Meet") -> Fix | None:
    """DEV106: `model.fc = nn.Linear(...)` -> `model.fc = nn.Linear(...).to(device)`."""
    origin = meet.host.origin
    if origin is None:
        return None
    assign = _assignment(origin.node)
    if not isinstance(assign, cst.Assign) or edits.file_of(program, assign) is None:
        return None
    call = device_move(program, meet.device, assign)
    if call is None or _pins_a_gpu_on_some_paths(meet, call):
        return None
    line, col, end_line, end_col = program.position(assign.value)
    return Fix(f"move the new part to the device: append `{call}`", False,
               ((end_line, end_col, end_line, end_col, call),))


def register_buffer(program: "Program", meet: "Meet") -> Fix | None:
    """DEV104: `self.mask = t` -> `self.register_buffer("mask", t, persistent=False)`: a buffer
    moves with the module; not persistent, so `state_dict` gains no key and the checkpoints
    saved before the fix still load."""
    origin = meet.host.origin
    if origin is None:
        return None
    assign = _assignment(origin.node)
    if assign is None or assign.value is None:
        return None
    target = assign.targets[0].target if isinstance(assign, cst.Assign) else assign.target
    if isinstance(assign, cst.Assign) and len(assign.targets) != 1:
        return None
    if not (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)):
        return None
    owner, attr = target.value.value, target.attr.value
    value = edits.code(assign.value)
    return edits.replace_node(program, assign, f'{owner}.register_buffer("{attr}", {value}, persistent=False)',
                              f'register it: `{owner}.register_buffer("{attr}", ..., persistent=False)`',
                              safe=False)


def _assignment(node: cst.CSTNode | None) -> cst.Assign | cst.AnnAssign | None:
    if isinstance(node, (cst.Assign, cst.AnnAssign)):
        return node
    if isinstance(node, cst.SimpleStatementLine):
        return next((s for s in node.body if isinstance(s, (cst.Assign, cst.AnnAssign))), None)
    return None


def factory_device(program: "Program", meet: "Meet") -> Fix | None:
    """DEV105: add `device=<t>.device`, `t` a tensor the factory's own arguments already read."""
    call = meet.host.origin.node if meet.host.origin is not None else None
    if not isinstance(call, cst.Call) or any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        return None
    if _legacy_constructor(call):
        return None  # `torch.FloatTensor(n, device=...)` raises for any device but the CPU
    reference = factory_reference(meet)
    if reference is None:
        return None
    # `reference` is read by the factory's own arguments: it is bound where the keyword goes
    return edits.add_keyword(program, call, "device", f"{reference}.device",
                             f"create it on the device: `device={reference}.device`", safe=False)


def _legacy_constructor(call: cst.Call) -> bool:
    """`torch.Tensor(...)`, `torch.FloatTensor(...)`: typed constructors that take no `device=`."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name.endswith("Tensor")


def factory_reference(meet: "Meet") -> str | None:
    """The tensor whose device a DEV105 factory should take: one its own arguments already read
    (`x` in `torch.zeros(x.size(0), n)`); the message names the same one."""
    call = meet.host.origin.node if meet.host.origin is not None else None
    return _tensor_in_arguments(call) if isinstance(call, cst.Call) else None


def _tensor_in_arguments(call: cst.Call) -> str | None:
    """`x` in `torch.zeros(x.size(0), n)` / `torch.arange(x.shape[1])` / `len(x)`."""
    for arg in call.args:
        node = arg.value
        found = _size_receiver(node)
        if found:
            return found
    return None


def _size_receiver(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "size":
        return _name_of(node.func.value)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "shape":
        return _name_of(node.value.value)
    if isinstance(node, cst.Attribute) and node.attr.value == "shape":
        return _name_of(node.value)
    if isinstance(node, cst.BinaryOperation):
        return _size_receiver(node.left) or _size_receiver(node.right)
    if isinstance(node, (cst.Tuple, cst.List)):
        for element in node.elements:
            found = _size_receiver(element.value)
            if found:
                return found
    return None


def _name_of(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        inner = _name_of(node.value)
        return f"{inner}.{node.attr.value}" if inner else None
    return None


def to_host(program: "Program", node: cst.CSTNode, value: Value) -> Fix | None:
    """DEV109: `t.numpy()` -> `t.detach().cpu().numpy()`; `np.array(t)` -> `np.array(t.detach().cpu())`."""
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "numpy" and not node.args:
        receiver = node.func.value
        line, col, end_line, end_col = program.position(receiver)
        # `out.detach().numpy()` already detaches: add the copy only, not a second `.detach()`
        move = ".cpu()" if _detached(receiver) else ".detach().cpu()"
        return Fix(f"copy it to the host first: `{move}`", False,
                   ((end_line, end_col, end_line, end_col, move),))
    label = value.label
    for arg in node.args:
        if label and _name_of(arg.value) == label:
            line, col, end_line, end_col = program.position(arg.value)
            return Fix(f"copy `{label}` to the host first: `{label}.detach().cpu()`", False,
                       ((end_line, end_col, end_line, end_col, ".detach().cpu()"),))
    return None


def _detached(node: cst.CSTNode) -> bool:
    """`t.detach()` (or `t.data`): already cut from the graph."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "data"
    return (isinstance(node, cst.Call) and not node.args and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "detach")


def drop_move(program: "Program", move) -> Fix | None:
    """DEV108: delete `loader.to(device)` / `loader = loader.to(device)`, a statement that does
    nothing but crash, for objects that never live on a device (DataLoader, Dataset, tokenizer,
    optimizer). Lists, dicts and arrays are left alone: their intent is a real move."""
    from devlint.analysis.values import Kind

    if move.subject.kind not in (Kind.LOADER, Kind.DATASET, Kind.TOKENIZER, Kind.OPTIMIZER):
        return None
    stmt = move.ctx.statement
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and small.value is move.node:
        pass
    elif isinstance(small, cst.Assign) and small.value is move.node and len(small.targets) == 1 \
            and edits.code(small.targets[0].target).strip() == move.subject_text:
        pass
    else:
        return None
    return edits.delete_statement(program, stmt, f"remove `{move.subject_text}.{move.method}(...)`: "
                                  f"it has no such method", safe=True)


def map_location_device(program: "Program", call: cst.CSTNode, device: str) -> str:
    """What DEV201 passes as `map_location`: the program's device variable when it holds a
    device where the load runs (never a name bound only later, or one that holds something
    else, such as a tensor type), else `"cpu"`, which always loads."""
    if _is_device_string(device):
        return device
    if isinstance(call, cst.Call) and device_name_at(program, call, device, parameters=False):
        return device
    return '"cpu"'


def map_location(program: "Program", call: cst.CSTNode, device: str) -> Fix | None:
    """DEV201: `torch.load(p)` -> `torch.load(p, map_location=<map_location_device>)`."""
    if not isinstance(call, cst.Call):
        return None
    device = map_location_device(program, call, device)
    return edits.add_keyword(program, call, "map_location", device,
                             f"load onto {device} first: `map_location={device}`", safe=True)


def env_before_cuda(program: "Program", env_stmt: cst.CSTNode | None, init_stmt: cst.CSTNode | None) -> Fix | None:
    """DEV203: move a module-level `os.environ[...] = ...` line above the first CUDA call, when
    both are plain module-level statements and `os` is imported above that call."""
    body: list[cst.CSTNode] = list(program.module.body)
    if env_stmt not in body or init_stmt not in body or not isinstance(env_stmt, cst.SimpleStatementLine):
        return None
    init_line = program.position(init_stmt)[0]
    imports_os = False
    for stmt in body[: body.index(init_stmt)]:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import) and any((edits.code(a.name).strip() == "os") and a.asname is None
                                                          for a in small.names):
                    imports_os = True
    if not imports_os or body.index(env_stmt) < body.index(init_stmt):
        return None
    text = edits.code(env_stmt.with_changes(leading_lines=[]))
    first, _, last, _ = program.position(env_stmt)
    return Fix("set it before the first CUDA call", True,
               ((init_line, 1, init_line, 1, text), (first, 1, last + 1, 1, "")))
