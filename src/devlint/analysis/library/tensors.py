"""Tensors made and combined by torch: factories, `*_like`, `nn.Parameter`, checkpoint loads,
and the torch functions whose tensor arguments must share a device."""

from __future__ import annotations

import libcst as cst

from devlint.analysis import files
from devlint.analysis.events import Argument, SiteKind
from devlint.analysis.library.common import call_arguments
from devlint.analysis.members import proven_argument
from devlint.analysis.placement import is_tensor_operand, members, tensor_result
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import bound_names, code_of, constant_across_iterations, is_number_expression
from devlint.analysis.values import (
    HOST,
    NONE_VALUE,
    ORIGIN_DATA,
    ORIGIN_FACTORY,
    SCALAR,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Placement,
    Value,
    device_at,
)
from devlint.analysis.vocabulary import Fact, known_str
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches
from devlint.knowledge import torch as tk


def like_factory(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.zeros_like(x)`: placed where `x` is, unless `device=` says otherwise."""
    source = args[0] if args else UNKNOWN
    place = an.device_arg(node, [], kwargs, positional=None) or source.place
    return Value(Kind.TENSOR, place, source.origin)


def factory(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.zeros(...)`, `torch.tensor(data)`, `torch.from_numpy(a)`: on the host unless
    `device=` (or a default device) places them."""
    if qualname in tk.SAMPLING_FACTORIES:
        sampled = _sampled_from(qualname, node, args, kwargs)
        if sampled is Kind.TENSOR:
            return torch_function(an, qualname, node, args, kwargs, frame)
        if sampled is Kind.UNKNOWN:
            return Value(Kind.TENSOR, UNKNOWN_PLACE)
    out = kwargs.get("out")
    if out is not None:
        # `torch.arange(n, out=buffer)` writes into `buffer`: it is where that tensor is
        return Value(Kind.TENSOR, out.place if out.kind is Kind.TENSOR and out.place.known else UNKNOWN_PLACE,
                     out.origin if out.kind is Kind.TENSOR else None)
    place = an.device_arg(node, [], kwargs, positional=None)
    spread = kwargs.get("**")
    if place is None and spread is not None:
        # `torch.eye(n, **dd)` with `dd = dict(device=device, dtype=dtype)`: the device is in it,
        # and a spread the analysis cannot read may hold one
        given = spread.get_field("device") if spread.kind is Kind.DICT else None
        place = an.place_of_device_value(given, None) if given is not None else None
        if place is None and not (spread.kind is Kind.DICT and spread.fields and given is None):
            place = UNKNOWN_PLACE
    name = qualname.rsplit(".", 1)[-1]
    # torch.tensor(<a Python number>) is 0-dim, and PyTorch lets a 0-dim CPU tensor meet device
    # tensors; only data that is visibly a sequence (a list, a tuple, an array) has dimensions
    first = args[0] if args else None
    zero_dim = name in ("tensor", "as_tensor") and first is not None and bool(node.args) \
        and not node.args[0].star and (first.kind is Kind.SCALAR
                                       or first.kind is Kind.UNKNOWN and is_number_expression(node.args[0].value))
    given = kwargs.get("device")
    if place is not None and place.known and not place.on_device and given is not None \
            and given.kind is Kind.DEVICE and given.origin is not None:
        # `device=x.device` with `x` on the host on some path: the tensor is where `x` is, for
        # the reason `x` is there (the factory itself asked for the right device)
        value = Value(Kind.TENSOR, place, given.origin)
    elif place is not None and place.known:
        value = Value(Kind.TENSOR, place, Origin(ORIGIN_FACTORY, node, f"`{code_of(node)}`"))
    elif frame.ctx.default_device or an.default_device:
        # factories follow the default device; from_numpy & the legacy constructors: not known
        value = Value(Kind.TENSOR, device_at("the default device", node) if qualname not in tk.HOST_ONLY_FACTORIES
                      else UNKNOWN_PLACE)
    elif an.default_unknown and qualname != "torch.from_numpy":
        value = Value(Kind.TENSOR, UNKNOWN_PLACE)  # a default device we cannot tell
    elif place is None and name in ("tensor", "as_tensor") and args and args[0].kind is Kind.TENSOR:
        value = Value(Kind.TENSOR, args[0].place, args[0].origin)
    elif place is None and name in ("tensor", "as_tensor") and args and args[0].kind is Kind.UNKNOWN \
            and (args[0].has(Fact.LIBRARY_INPUT) or an.library_mode and an.in_entry_code):
        # library mode: what the caller gave may be a tensor already, wherever it is
        value = Value(Kind.TENSOR, UNKNOWN_PLACE)
    elif place is None:
        # `torch.tensor(rows)` wraps host data (DEV101 where it meets the device); made inside
        # forward it is a factory that forgot `device=` (DEV105), like torch.zeros anywhere
        category = ORIGIN_FACTORY
        if qualname in tk.DATA_FACTORIES and (frame.ctx.role != "forward" or qualname in tk.HOST_ONLY_FACTORIES) \
                and not _made_by_the_code(an, qualname, node, frame):
            category = ORIGIN_DATA
        value = Value(Kind.TENSOR, HOST, Origin(category, node, f"`{code_of(node.func)}(...)`"))
    else:
        value = Value(Kind.TENSOR, UNKNOWN_PLACE)
    if zero_dim or _empty(node):
        # 0-dim, or empty (`torch.empty([0])`, a placeholder argument): PyTorch lets it be
        value = value.with_facts(Fact.ZERO_DIM)
    an.emit_site(node, frame, SiteKind.FACTORY, qualname, value, call_arguments(node, args, kwargs), code_of(node),
                 constant_data=_constant_data(qualname, node, frame))
    return value


_DISPLAYS = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)


def _made_by_the_code(an: Analyzer, qualname: str, node: cst.Call, frame: Frame) -> bool:
    """Does a data constructor build its tensor from values the code itself writes, where a
    factory that forgot `device=` is the bug (DEV105 at the constructor, not DEV101 at the use)?

    Sizes given to a legacy typed constructor (`torch.FloatTensor(mu.shape)`) always are. A list
    display or comprehension is in forward itself; in a function forward calls only when its
    elements are computed there (`[table[int(v)] for v in labels]`; so is a method that library
    mode runs on its caller's device), not stored data wrapped in a
    list (`[self.state]`, which came in from outside: DEV101); in a loop elsewhere only when its
    elements are number literals (`[[0.0] if d else [1.0] for d in done]`)."""
    if qualname in tk.ZERO_COPY_FACTORIES or qualname not in tk.HOST_TENSOR_TYPES | {"torch.tensor"}:
        return False
    ctx = frame.ctx
    in_forward = ctx.role == "forward"
    called_by_forward = not in_forward and (any(c.endswith(".forward") for c in ctx.callers)
                                            or ctx.role == "method" and an.library_mode and an.in_entry_code)
    if not (in_forward or called_by_forward or ctx.loops):
        return False
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    if not positional or len(positional) != len(node.args) and qualname != "torch.tensor":
        return False
    first = positional[0]
    if qualname in tk.HOST_TENSOR_TYPES and (len(positional) > 1 or _sizes(first)):
        return True
    if type(first) is cst.BinaryOperation and type(first.operator) is cst.Multiply:
        first = first.left  # `[sos_id] * batch_size`
    if type(first) not in _DISPLAYS:
        return False
    leaves = _leaves(first)
    if in_forward:
        return True
    if called_by_forward and not all(type(n) in (cst.Name, cst.Attribute) for n in leaves):
        return True
    return all(type(n) in (cst.Integer, cst.Float) for n in leaves)


def _sizes(node: cst.BaseExpression) -> bool:
    """`x.shape`, `x.size()`, `x.size(0)`, an integer literal: sizes, not data."""
    if type(node) is cst.Integer:
        return True
    if type(node) is cst.Attribute:
        return node.attr.value == "shape"
    return type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "size"


def _leaves(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The element expressions of a (nested) display or comprehension, the branches of
    conditional elements taken apart; anything else is its own leaf."""
    if type(node) is cst.List or type(node) is cst.Tuple:
        return [leaf for element in node.elements for leaf in _leaves(element.value)]
    if type(node) is cst.ListComp or type(node) is cst.GeneratorExp:
        return _leaves(node.elt)
    if type(node) is cst.IfExp:
        return _leaves(node.body) + _leaves(node.orelse)
    if type(node) is cst.UnaryOperation:
        return _leaves(node.expression)
    return [node]


# the arguments of a sampler that give its result a device when they are tensors (the rest is a
# size, a count, a generator)
_SAMPLED_POSITIONS = {"torch.normal": 2}
_SAMPLED_KEYWORDS = frozenset({"input", "mean", "std"})


def _sampled_from(qualname: str, node: cst.Call, args: Args, kwargs: Kwargs) -> Kind | None:
    """What a sampler draws from: `Kind.TENSOR` when any of its parameters is a tensor
    (`torch.normal(0.0, std)` is on `std`'s device), `Kind.UNKNOWN` when one may be
    (an argument of unknown kind), None when all are numbers (a factory)."""
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    candidates = [(v, n) for v, n in zip(args, positional)][:_SAMPLED_POSITIONS.get(qualname, 1)]
    candidates += [(v, next(a.value for a in node.args if a.keyword is not None and a.keyword.value == k))
                   for k, v in kwargs.items() if k in _SAMPLED_KEYWORDS]
    if any(v.kind is Kind.TENSOR for v, _ in candidates):
        return Kind.TENSOR
    if any(v.kind is not Kind.SCALAR and not is_number_expression(n) for v, n in candidates) \
            or "*" in kwargs or "**" in kwargs:
        return Kind.UNKNOWN
    return None


def set_default_tensor_type(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                            frame: Frame) -> Value:
    """`torch.set_default_tensor_type("torch.cuda.FloatTensor")`: factories make CUDA tensors
    from here on; a type chosen at run time makes where they are unknown."""
    given = args[0] if args else kwargs.get("t")
    place = tensor_type_place(given) if given is not None else None
    if place is not None and place.on_host:
        an.default_device = an.default_unknown = False
    elif place is not None and place.on_device:
        an.default_device = True
    elif given is not None:
        an.default_unknown = True
    return NONE_VALUE


def _empty(node: cst.Call) -> bool:
    """`torch.empty(0)`, `torch.zeros([0])`: a tensor with no elements, as a placeholder."""
    first = node.args[0].value if node.args and node.args[0].keyword is None and not node.args[0].star else None
    if (type(first) is cst.List or type(first) is cst.Tuple) and len(first.elements) == 1:
        first = first.elements[0].value
    return type(first) is cst.Integer and first.value == "0" and all(a.keyword is not None for a in node.args[1:])


def _constant_data(qualname: str, node: cst.Call, frame: Frame) -> bool:
    """Is the data a data factory wraps the same on every iteration of the loop around it
    (DEV303)? Only loops of the checked file count."""
    if qualname not in tk.DATA_FACTORIES or not frame.ctx.in_data_loop:
        return False
    data = next((a.value for a in node.args if a.keyword is None and not a.star), None)
    if data is None:
        return False
    bound = bound_names(frame.loop) if frame.loop is not None and not frame.ctx.path else None
    return constant_across_iterations(data, bound)


def parameter(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    source = args[0] if args else kwargs.get("data", UNKNOWN)
    return Value(Kind.TENSOR, source.place, source.origin, facts=frozenset({Fact.PARAM}))


def checkpoint_load(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.load(path, map_location=...)`: what it returns is where `map_location` says."""
    place = an.device_arg(node, [], {"device": kwargs["map_location"]} if "map_location" in kwargs else {},
                          positional=None)
    arguments = call_arguments(node, args, kwargs)
    an.emit_site(node, frame, SiteKind.LOAD, qualname, UNKNOWN, arguments, code_of(node),
                 names=_file_names(arguments, ("f", "url"), frame))
    return Value(Kind.UNKNOWN, place or UNKNOWN_PLACE)


def checkpoint_save(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.save(obj, f)`: recorded with what it saves, so that DEV201 knows which files this
    program writes itself (analysis/files.py)."""
    saved = args[0] if args else kwargs.get("obj", UNKNOWN)
    arguments = call_arguments(node, args, kwargs)
    target = [a for a in arguments if a.keyword is None][1:2] or [a for a in arguments if a.keyword == "f"]
    an.emit_site(node, frame, SiteKind.SAVE, qualname, saved, arguments, names=_file_names(target, ("f",), frame))
    return NONE_VALUE


def checkpoint_directory(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                         frame: Frame) -> Value:
    """A checkpoint handler writing into a directory (`ModelCheckpoint("./models", ...)`): a SAVE
    whose file is every file under that directory (`files.directory_key`)."""
    arguments = call_arguments(node, args, kwargs)
    first = next((a for a in arguments if a.keyword in (None, "dirname", "dirpath")), None)
    key = files.directory_key(first.value, first.text) if first is not None else ""
    an.emit_site(node, frame, SiteKind.SAVE, qualname, UNKNOWN, arguments, names=(key,) if key else ())
    return UNKNOWN


def _file_names(arguments: tuple[Argument, ...] | list[Argument], keywords: tuple[str, ...],
                frame: Frame) -> tuple[str, ...]:
    """The file a load or save names, as analysis/files.py identifies it (first argument)."""
    first = arguments[0] if arguments else None
    if first is None or first.keyword is not None and first.keyword not in keywords:
        return ()
    return (files.path_key(first.value, first.text, frame.ctx),)


def torch_function(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`torch.cat([a, b])`, `torch.matmul(a, b)`: the tensor arguments meet. The first argument
    of a tensor library's function (`to_dense_adj(edge_index)`) is a tensor (library mode: a
    parameter given there becomes one; torch's own also take numbers: `torch.pow(2.0, x)`)."""
    if args and node.args and node.args[0].keyword is None and not node.args[0].star \
            and matches(qualname, lib.DEVICE_FOLLOWING_FUNCTIONS):
        args = [proven_argument(args[0], node.args[0].value, frame)] + list(args[1:])
    sizes = tk.SIZE_ARGUMENTS.get(qualname, ())
    if sizes:  # `F.pad(x, (left, right))`: amounts read as numbers, not operands
        skipped = {position for position, _ in sizes}
        args = [value for position, value in enumerate(args) if position not in skipped]
        kwargs = {key: value for key, value in kwargs.items() if key not in {name for _, name in sizes}}
    operands: list[Value] = []
    for value in list(args) + [v for k, v in kwargs.items() if not k.startswith("*") and k != "out"]:
        if value.kind in (Kind.LIST, Kind.TUPLE):
            operands.extend(v for _, v in value.fields if is_tensor_operand(v))
            if value.elem is not None:
                operands.extend(m for m in members(value.elem) if is_tensor_operand(m))
        elif is_tensor_operand(value):
            operands.append(value)
    if len(operands) >= 2:
        an.meet(node, operands, f"`{qualname}`", frame)
    if qualname in tk.HOST_VALUE_FUNCTIONS:
        return SCALAR
    if not operands:
        return Value(Kind.TENSOR, UNKNOWN_PLACE)
    return tensor_result(operands, zero_dim=qualname in tk.ELEMENTWISE_FUNCTIONS
                         and all(t.is_zero_dim for t in operands))


def tensor_type_place(value: Value) -> Placement | None:
    """Where tensors of a legacy type are (`torch.cuda.FloatTensor`, its name as a string, or a
    variable holding one of two types); None for anything else (a dtype conversion)."""
    if value.has(Fact.TENSOR_TYPE):
        return value.place
    text = known_str(value)
    if text is not None:
        if text in tk.CUDA_TENSOR_TYPES:
            return device_at("cuda", None, "cuda")
        if text in tk.HOST_TENSOR_TYPES:
            return HOST
    return None


def legacy_cuda_tensor(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                       frame: Frame) -> Value:
    """`torch.cuda.FloatTensor(n, m)`: a tensor made on the current CUDA device."""
    return _typed(an, qualname, device_at("cuda", node, "cuda"), node, args, kwargs, frame)


def typed_tensor(an: Analyzer, tensor_type: Value, node: cst.Call, args: Args, kwargs: Kwargs,
                 frame: Frame) -> Value:
    """A call of a legacy tensor type chosen at run time (`Tensor = torch.cuda.FloatTensor if
    cuda else torch.FloatTensor`): the tensor is where the chosen type puts it."""
    return _typed(an, tensor_type.qualname, tensor_type.place, node, args, kwargs, frame)


def _typed(an: Analyzer, qualname: str, place: Placement, node: cst.Call, args: Args, kwargs: Kwargs,
           frame: Frame) -> Value:
    origin = Origin(ORIGIN_FACTORY, node, f"`{code_of(node.func)}(...)`")
    value = Value(Kind.TENSOR, place, origin)
    an.emit_site(node, frame, SiteKind.FACTORY, qualname, value, call_arguments(node, args, kwargs), code_of(node))
    return value
