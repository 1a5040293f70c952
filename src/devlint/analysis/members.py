"""Attribute access (`x.attr`): what an attribute of a value is, and where it lives.

Like mypy's checkmember: imported names resolve to dotted names (or to what another project
file defines), tracked parts of objects and modules are read back, `x.device` names the device
`x` is on, and a registered part of a moved module is where the module is.
"""

from __future__ import annotations

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.names import canonical
from devlint.analysis.placement import alternatives, join
from devlint.analysis.shared import Analyzer, Frame
from devlint.analysis.syntax import code_of, dotted, is_setting_attribute
from devlint.analysis.values import (
    CALLER,
    HOST,
    NO_TENSORS,
    ORIGIN_BATCH,
    ORIGIN_OUTSIDE_TREE,
    SCALAR,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    Where,
    device_at,
    ref,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import libraries as lib
from devlint.knowledge import torch as tk

_DEVICE_HOLDERS = (Kind.TENSOR, Kind.MODULE, Kind.ACCELERATOR, Kind.ENCODING, Kind.BATCH)
_SHAPED = (Kind.TENSOR, Kind.NDARRAY, Kind.UNKNOWN, Kind.BATCH)
_SHAPE = Value(Kind.TUPLE, NO_TENSORS, elem=SCALAR)


def proven_tensor(owner: Value, node: cst.Attribute, frame: Frame, called: bool = False) -> Value:
    """Library mode: `x.unsqueeze(1)` (or `x.size(0)`: NumPy's `size` is no method) on a
    parameter of code no call reached shows that `x` is a tensor, so from here on it is one, on
    the caller's device (analysis/calls.py binds it)."""
    attr = node.attr.value
    if owner.kind is Kind.UNKNOWN and owner.has(Fact.LIBRARY_INPUT) and not owner.place.known \
            and type(node.value) is cst.Name \
            and (attr in tk.TENSOR_PROOF_ATTRIBUTES or called and attr in tk.TENSOR_PROOF_METHODS):
        owner = Value(Kind.TENSOR, CALLER, facts=owner.facts).named(node.value.value)
        frame.env[node.value.value] = owner
    return owner


def proven_argument(value: Value, expr: cst.BaseExpression, frame: Frame) -> Value:
    """Library mode: a parameter of code no call reached given as the tensor argument of a
    tensor function (`torch.matmul(adj, w)`, `to_dense_adj(edge_index)`) is a tensor, on the
    caller's device."""
    if value.kind is Kind.UNKNOWN and value.has(Fact.LIBRARY_INPUT) and not value.place.known \
            and type(expr) is cst.Name:
        value = Value(Kind.TENSOR, CALLER, facts=value.facts).named(expr.value)
        frame.env[expr.value] = value
    return value


def get_attribute(an: Analyzer, owner: Value, attr: str, node: cst.CSTNode, frame: Frame) -> Value:
    if owner.has(Fact.ONE_OF) and not owner.has(Fact.TENSOR_TYPE):  # `cls.from_pretrained` of one of several classes
        result: Value | None = None
        for _, candidate in owner.fields:
            found = get_attribute(an, candidate, attr, node, frame)
            result = found if result is None else join(result, found)
        return result if result is not None else UNKNOWN
    if owner.kind is Kind.REF:
        qualname = canonical(f"{owner.qualname}.{attr}")
        if qualname in tk.DTYPES:
            return Value(Kind.DTYPE, NO_TENSORS, qualname=qualname)
        if qualname in tk.CUDA_TENSOR_TYPES or qualname in tk.HOST_TENSOR_TYPES:
            return tensor_type(qualname, node)
        in_project = an.project_value(qualname, frame)
        if in_project is not None and (in_project.kind is Kind.DEVICE or in_project.has(Fact.DEVICE_STR)) \
                and not in_project.place.on_device:
            # `flair.device`, `pkg.device`: a package's device read live through the package, a
            # setting any code may have assigned since (`pkg.device = ...`); never proven the CPU
            return in_project.at(UNKNOWN_PLACE)
        return in_project or ref(qualname)
    field = owner.get_field(attr)
    if field is not None:
        if owner.kind is Kind.MODULE and field.has(Fact.REGISTERED) and owner.place.known \
                and field.place.where is Where.UNKNOWN:
            return field.at(owner.place)
        if owner.kind is Kind.OBJECT and field.origin is not None and field.origin.category == ORIGIN_BATCH \
                and not code_of(node).startswith(f"{frame.self_name or 'self'}."):
            return field.named(code_of(node))  # `batch.labels`, for messages
        return field
    if attr == "device" and owner.kind in _DEVICE_HOLDERS:
        if owner.place.on_device or owner.place.on_host or owner.place.where is Where.COND:
            # x.device names x's own device (and, where x is on the host, why it is)
            return Value(Kind.DEVICE, owner.place, owner.origin)
        return Value(Kind.DEVICE, UNKNOWN_PLACE)
    if attr == "device" and owner.kind is Kind.UNKNOWN and not is_setting_attribute(node):
        # `embeddings.device` of a value we cannot see: it follows that value, wherever it is
        return Value(Kind.DEVICE, UNKNOWN_PLACE)
    if attr == "dtype":
        return Value(Kind.DTYPE, NO_TENSORS)
    if attr in tk.SHAPE_ATTRIBUTES and owner.kind in _SHAPED:
        return _SHAPE  # a torch.Size / a NumPy shape: a tuple of ints
    if attr in tk.SIZE_ATTRIBUTES and owner.kind in _SHAPED:
        return SCALAR
    if attr == "is_cuda" and owner.kind in _DEVICE_HOLDERS + (Kind.UNKNOWN,):
        return _on_cuda(owner)
    if owner.kind is Kind.TENSOR:
        if attr in tk.TENSOR_VIEW_ATTRIBUTES:
            return owner
        if owner.origin is not None and owner.origin.description.startswith("the output of") \
                and attr not in tk.NON_TENSOR_ATTRIBUTES and attr not in lib.PIPELINE_OUTPUT_FIELDS:
            return Value(Kind.TENSOR, owner.place, owner.origin)  # a ModelOutput field
        return UNKNOWN
    if owner.kind in (Kind.BATCH, Kind.ENCODING):
        return an.item_of(owner, attr, attr)
    if owner.kind is Kind.MODULE:
        if attr in tk.MODULE_WEIGHT_ATTRIBUTES and owner.place.known:
            return Value(Kind.TENSOR, owner.place, owner.origin, facts=frozenset({Fact.PARAM, Fact.REGISTERED}))
        info = an.class_of(owner)
        if info is not None and attr in info.class_attrs:
            value = an.class_attribute(info, attr, frame) or UNKNOWN
            if value.kind is Kind.MODULE and value.place.on_host:
                return value.evolve(origin=Origin(ORIGIN_OUTSIDE_TREE, info.class_attrs[attr],
                                                  f"`{attr}`, a module stored on the class", attr))
            return value
        return UNKNOWN
    if owner.kind in (Kind.OBJECT, Kind.CLASS) and owner.node is not None and id(owner.node) in an.classes:
        class_value = an.class_attribute(an.classes[id(owner.node)], attr, frame)
        if class_value is not None:  # `CFG.device`, `cfg.device` of a config class
            return class_value
    if owner.kind is Kind.LOADER and attr == "dataset":
        return owner.get_field("dataset") or Value(Kind.DATASET, HOST)
    if owner.kind in (Kind.OBJECT, Kind.DATASET, Kind.CLASS) and owner.node is not None:
        return method_value(an, owner, attr)  # `collate_fn=train_set.collate`
    return UNKNOWN


def _on_cuda(owner: Value) -> Value:
    """`x.is_cuda`: True when `x` is on CUDA on every path, False when on the host on every
    path, and "whether a GPU is available" when `x` is on CUDA exactly when one is (moved with a
    device that falls back to the CPU)."""
    paths = alternatives(owner.place)
    if all(p.on_device and devices.is_cuda(p.ident) and not devices.split(p.ident)[1] for _, p in paths):
        return SCALAR.with_facts(Fact.TRUE)
    if all(p.on_host for _, p in paths):
        return SCALAR.with_facts(Fact.FALSE)
    gpu_paths = [p for c, p in paths if not conditions.on_cpu_machine(c)]
    by_availability = all(p.on_host for c, p in paths if conditions.on_cpu_machine(c))
    if gpu_paths and by_availability and all(p.on_device and devices.is_cuda(p.ident) for p in gpu_paths) \
            and (len(paths) > 1 or devices.falls_back_when_no_gpu(paths[0][1].ident)):
        return SCALAR.with_facts(Fact.CUDA_AVAILABLE)
    return SCALAR


def tensor_type(qualname: str, node: cst.CSTNode | None) -> Value:
    """`torch.cuda.FloatTensor`: a type whose tensors live on CUDA (`torch.FloatTensor`: on the
    host), so that a choice between the two (`Tensor = torch.cuda.FloatTensor if cuda else ...`)
    keeps where each path puts them."""
    place = device_at("cuda", node, "cuda") if qualname in tk.CUDA_TENSOR_TYPES else HOST
    return Value(Kind.REF, place, qualname=qualname, facts=frozenset({Fact.TENSOR_TYPE}))


def member_of(an: Analyzer, namespace: str, name: str | None, node: cst.CSTNode, frame: Frame) -> Value:
    """`getattr(torch, name)`, `models.__dict__[arch]`: the member `name` of an imported module,
    or, when the name is not known, one of its members (`torchvision.models.*` is a model
    constructor whichever it is)."""
    owner = ref(namespace)
    if name is not None:
        return get_attribute(an, owner, name, node, frame)
    return an.project_value(f"{namespace}.*", frame) or ref(f"{namespace}.*")


def method_value(an: Analyzer, owner: Value, attr: str) -> Value:
    """A method of a program class taken as a value: bound to the instance (a staticmethod
    is not bound); properties and classmethods stay unknown."""
    info = an.class_of(owner)
    method = an.find_method(info, attr) if info is not None else None
    if method is None:
        return UNKNOWN
    decorators = {(dotted(d.decorator) or "").rsplit(".", 1)[-1] for d in method[1].decorators}
    if decorators - {"staticmethod"}:
        return UNKNOWN
    bound = () if "staticmethod" in decorators or owner.kind is Kind.CLASS else ((0, owner),)
    return Value(Kind.FUNCTION, NO_TENSORS, qualname=f"{method[0].name}.{attr}", node=method[1], fields=bound)


def deep_field(an: Analyzer, node: cst.CSTNode, frame: Frame) -> Value | None:
    """What a deep assignment stored for `model.classifier[6]` on the root model
    (analysis/modules.py, `deep_module_assign`)."""
    root = node
    while type(root) is cst.Attribute or type(root) is cst.Subscript:
        root = root.value
    if type(root) is not cst.Name:
        return None
    owner = an.lookup(root.value, frame)
    if owner.kind is not Kind.MODULE or not any(isinstance(k, str) and k.startswith("<") for k, _ in owner.fields):
        return None
    return owner.get_field(f"<{code_of(node)}>")
