"""The repairs rules attach to their findings, built from what the analysis recorded.

Each builder returns a devlint.findings.Fix or None when it cannot be sure the repair is
well-formed (an expression it cannot name, a device that is not yet defined at that point).
The fixer re-parses and re-checks every result, so a None here is about staying useful, not
about safety.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from devlint.fix import edits
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


def _defined_before(program: "Program", value: Value, node: cst.CSTNode) -> bool:
    """Was the device value moved (so its expression evaluated) before `node`, in the same file?"""
    moved = value.place.node
    if moved is None:
        return False
    moved_path, moved_pos = program.locate(moved)
    node_path, node_pos = program.locate(node)
    return moved_path == node_path and moved_pos[0] < node_pos[0]


def move_before_use(program: "Program", meet: "Meet") -> Fix | None:
    """DEV101: `labels = labels.to(device)` on the line before the statement that mixes them."""
    name = meet.host.label
    call = move_call(meet.device.place.device)
    stmt = meet.ctx.statement
    if not name or call is None or stmt is None or not _TARGET.match(name):
        return None
    if isinstance(stmt, cst.SimpleStatementLine) or isinstance(stmt, cst.BaseCompoundStatement):
        return edits.insert_line_before(program, stmt, f"{name} = {name}{call}",
                                        f"move `{name}` to the device before it is used", safe=False)
    return None


def move_after_construction(program: "Program", meet: "Meet") -> Fix | None:
    """DEV102: `Teacher()` -> `Teacher().to(device)` where the module is built."""
    origin = meet.host.origin
    call = move_call(meet.device.place.device)
    if origin is None or origin.node is None or call is None or not isinstance(origin.node, cst.Call):
        return None
    device = meet.device.place.device
    if not (_defined_before(program, meet.device, origin.node) or device.startswith(("'", '"'))
            or call == ".cuda()" or (_NAME.match(device) and "." not in device
                                     and _global_defined_before(program, device, origin.node))):
        return None
    line, col, end_line, end_col = program.position(origin.node)
    return Fix(f"move the module to the device where it is built: append `{call}`", False,
               ((end_line, end_col, end_line, end_col, call),))


def move_assigned_value(program: "Program", meet: "Meet") -> Fix | None:
    """DEV106: `model.fc = nn.Linear(...)` -> `model.fc = nn.Linear(...).to(device)`."""
    origin = meet.host.origin
    call = move_call(meet.device.place.device)
    if origin is None or call is None:
        return None
    assign = _assignment(origin.node)
    if not isinstance(assign, cst.Assign):
        return None
    line, col, end_line, end_col = program.position(assign.value)
    return Fix(f"move the new part to the device: append `{call}`", False,
               ((end_line, end_col, end_line, end_col, call),))


def register_buffer(program: "Program", meet: "Meet") -> Fix | None:
    """DEV104: `self.mask = t` -> `self.register_buffer("mask", t)`."""
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
    return edits.replace_node(program, assign, f'{owner}.register_buffer("{attr}", {value})',
                              f'register it: `{owner}.register_buffer("{attr}", ...)`', safe=False)


def _assignment(node: cst.CSTNode | None) -> cst.Assign | cst.AnnAssign | None:
    if isinstance(node, (cst.Assign, cst.AnnAssign)):
        return node
    if isinstance(node, cst.SimpleStatementLine):
        return next((s for s in node.body if isinstance(s, (cst.Assign, cst.AnnAssign))), None)
    return None


def _global_defined_before(program: "Program", name: str, node: cst.CSTNode) -> bool:
    """`name` is assigned at module level above `node` (or `node` is inside a function, which
    runs after the module level has defined its globals)."""
    node_path, (line, col, _, _) = program.locate(node)
    if node_path != program.path:
        return False
    for stmt in program.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = small.targets if isinstance(small, cst.Assign) else ()
                for target in targets:
                    if isinstance(target.target, cst.Name) and target.target.value == name:
                        stmt_line = program.position(stmt)[0]
                        return stmt_line < line or col > 1
    return False


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


def map_location(program: "Program", call: cst.CSTNode, device: str) -> Fix | None:
    """DEV201: `torch.load(p)` -> `torch.load(p, map_location=<fallback device or "cpu">)`."""
    if not isinstance(call, cst.Call):
        return None
    if not (device.startswith(("'", '"')) or (_NAME.match(device) and "." not in device
                                              and _global_defined_before(program, device, call))):
        device = '"cpu"'
    return edits.add_keyword(program, call, "map_location", device,
                             f"load onto {device} first: `map_location={device}`", safe=True)


def env_before_cuda(program: "Program", env_stmt: cst.CSTNode | None, init_stmt: cst.CSTNode | None) -> Fix | None:
    """DEV203: move a module-level `os.environ[...] = ...` line above the first CUDA call, when
    both are plain module-level statements and `os` is imported above that call."""
    body = list(program.module.body)
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
