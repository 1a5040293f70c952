"""torch.utils.data: DataLoaders, datasets, and what a batch is made of.

A DataLoader's batch is what the program's own `__getitem__` returns, collated (PyTorch's
default collate turns numbers, lists and arrays into host tensors), or what its `collate_fn`
returns. Device work done there runs where the loader builds batches, in worker processes when
it has any (DEV110), so it is captured for the loader.
"""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import Event, Move, Site, SiteKind
from devlint.analysis.library.common import bound_arguments, call_arguments
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    ORIGIN_BATCH,
    SCALAR,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    Where,
    new_identity,
)
from devlint.analysis.vocabulary import Fact
from devlint.knowledge import torch as tk


def loader(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    dataset = args[0] if args else kwargs.get("dataset", UNKNOWN)
    collate = kwargs.get("collate_fn")
    stmt = frame.stmt
    name = code_of(stmt.body[0].targets[0].target) if type(stmt) is cst.SimpleStatementLine \
        and stmt.body and type(stmt.body[0]) is cst.Assign else code_of(node.func)
    origin = Origin(ORIGIN_BATCH, node, f"a batch from `{name}`")
    with an.capture_worker_work() as worker_work:
        if collate is not None and collate.kind is not Kind.NONE:
            batch = _collate_batch(an, collate, dataset, node, frame, origin)
        elif dataset.kind is Kind.DATASET:
            item = dataset_item(an, dataset, node, frame, origin)
            worker_work.extend(_placements_of_device_state(an, item, worker_work))
            batch = as_batch(item, origin, default_collate=True)
        elif dataset.has(Fact.PLACED_ITEMS) or dataset.has(Fact.HF_DATASET):  # `datasets`: may be on a device
            batch = Value(Kind.BATCH, UNKNOWN_PLACE, origin)
        else:
            batch = Value(Kind.BATCH, HOST, origin)
    value = Value(Kind.LOADER, HOST, origin, identity=new_identity(), elem=batch, fields=(("dataset", dataset),))
    arguments = call_arguments(node, args, kwargs)
    an.emit_site(node, frame, SiteKind.LOADER, qualname, value, arguments, code_of(node))
    for event in worker_work:
        # device work that runs where the loader runs collate_fn / __getitem__ (DEV110); not
        # deduplicated by node: the same collate_fn may serve loaders with different settings
        an.record_unchecked(Site(event.node, event.ctx, SiteKind.WORKER_MOVE, qualname, value, arguments,
                                 code_of(event.node)))
    return value


def _placements_of_device_state(an: Analyzer, item: Value, seen: list[Event]) -> list[Event]:
    """CUDA tensors a dataset's `__init__` made and its `__getitem__` hands out: every worker
    process touches them (row 29 of real-device-bugs.md), so the moves or factories that
    put them there count as device work of the loader (DEV110)."""
    wanted: set[int] = set()

    def walk(value: Value, depth: int) -> None:
        if value.kind is Kind.TENSOR and value.place.on_device and devices.is_cuda(value.place.ident):
            wanted.update(id(n) for n in (value.place.node, value.origin.node if value.origin else None) if n)
        if depth < 3:
            for _, part in value.fields:
                walk(part, depth + 1)

    walk(item, 0)
    if not wanted:
        return []
    known = {id(e.node) for e in seen}
    found: list[Event] = []
    for event in an.events:
        if isinstance(event, Move):
            placed = event.target.on_device and id(event.node) in wanted
        elif isinstance(event, Site) and event.kind is SiteKind.FACTORY:
            placed = event.value.place.on_device and id(event.node) in wanted
        else:
            continue
        if placed and id(event.node) not in known and event.ctx.function.endswith(".__init__"):
            known.add(id(event.node))
            found.append(event)
    return found


def _collate_batch(an: Analyzer, collate: Value, dataset: Value, node: cst.Call, frame: Frame,
                   origin: Origin) -> Value:
    if collate.kind is Kind.OBJECT and collate.node is not None:  # a collator class with __call__
        info = an.class_of(collate)
        method = an.find_method(info, "__call__") if info is not None else None
        if method is None:
            return Value(Kind.BATCH, UNKNOWN_PLACE, origin)
        item = dataset_item(an, dataset, node, frame, origin)
        samples = Value(Kind.LIST, NO_TENSORS, elem=item)
        result = an.call_function(method[1], [collate, samples], {}, node, frame, class_info=method[0],
                                  is_method=True, role="collate")
        return as_batch(result, origin)
    if collate.kind is not Kind.FUNCTION or collate.node is None:
        return Value(Kind.BATCH, UNKNOWN_PLACE, origin)
    item = dataset_item(an, dataset, node, frame, origin)
    samples = Value(Kind.LIST, NO_TENSORS, elem=item)
    bound, bound_kw = bound_arguments(collate)
    function = cast("cst.FunctionDef | cst.Lambda", collate.node)  # what a FUNCTION value holds
    result = an.call_function(function, bound + [samples], bound_kw, node, frame, role="collate")
    return as_batch(result, origin)


def dataset_item(an: Analyzer, dataset: Value, node: cst.CSTNode, frame: Frame, origin: Origin) -> Value:
    """One sample of a dataset: what the program's own `__getitem__` returns."""
    info = an.class_of(dataset)
    getitem = an.find_method(info, "__getitem__") if info is not None else None
    if getitem is not None:
        result = an.call_function(getitem[1], [dataset, SCALAR], {}, node, frame,
                                  class_info=getitem[0], is_method=True, role="getitem")
        return as_batch(result, origin)
    if info is not None and an.find_method(info, "__iter__") is not None:
        return Value(Kind.BATCH, UNKNOWN_PLACE, origin)  # an IterableDataset: its generator is not followed
    if dataset.elem is not None:
        return dataset.elem
    return Value(Kind.BATCH, HOST, origin)


def as_batch(value: Value, origin: Origin, default_collate: bool = False) -> Value:
    """Re-label a returned structure as a batch whose host fields came from the loader.

    Only PyTorch's default collate turns numbers, lists and arrays into (host) tensors; what a
    `__getitem__` or a custom `collate_fn` returns keeps its Python numbers as numbers."""
    def relabel(v: Value, key: object, depth: int = 0) -> Value:
        if v.kind in (Kind.TUPLE, Kind.DICT, Kind.BATCH) and v.fields and depth < 3:  # nested structure
            return Value(Kind.BATCH, v.place if v.place.known else HOST, origin,
                         fields=tuple((k, relabel(f, k, depth + 1)) for k, f in v.fields))
        if v.kind in (Kind.SCALAR, Kind.NDARRAY, Kind.LIST) and not default_collate:
            return v
        if v.kind in (Kind.TENSOR, Kind.SCALAR, Kind.NDARRAY, Kind.LIST) and not v.place.on_device:
            if v.kind in (Kind.SCALAR, Kind.NDARRAY, Kind.LIST):
                v = Value(Kind.TENSOR, HOST)
            if v.place.on_host or v.place.where is Where.NONE:
                return Value(Kind.TENSOR, HOST, replace(origin, name=""))
        return v
    if value.kind is Kind.OBJECT and value.node is not None:  # a batch class (dataclass, own `to`)
        return value.evolve(origin=origin, fields=tuple((k, relabel(v, k)) for k, v in value.fields))
    if value.kind in (Kind.TUPLE, Kind.LIST, Kind.DICT) and value.fields:
        return Value(Kind.BATCH, value.place if value.place.known else HOST, origin,
                     fields=tuple((k, relabel(v, k)) for k, v in value.fields))
    if value.kind in (Kind.DICT,) and value.elem is not None:
        return Value(Kind.BATCH, value.place, origin, elem=relabel(value.elem, None))
    if value.kind is Kind.TENSOR:
        return relabel(value, None) if not value.place.on_device else value
    if value.kind in (Kind.BATCH, Kind.ENCODING):
        # a `collate_fn` returning `tokenizer.pad(...)` yields a BatchEncoding: it keeps its kind,
        # whose `.to(device)` moves it in place
        return value.evolve(origin=origin if value.place.on_host else value.origin,
                            fields=tuple((k, relabel(v, k)) for k, v in value.fields),
                            elem=relabel(value.elem, None) if value.elem is not None else None)
    return Value(Kind.BATCH, UNKNOWN_PLACE, origin)


def library_dataset(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                    frame: Frame) -> Value:
    """TensorDataset keeps each tensor's placement per position; Subset / random_split /
    ConcatDataset of a dataset yield what that dataset yields (its own `__getitem__`)."""
    name = qualname.rsplit(".", 1)[-1]
    origin = Origin(ORIGIN_BATCH, node, f"an item of `{code_of(node.func)}`")
    source = args[0] if args else kwargs.get("dataset", UNKNOWN)
    if name in tk.DATASET_VIEWS and source.kind is Kind.DATASET:
        part = source.evolve(identity=new_identity())
        return part if name == "Subset" else Value(Kind.LIST, NO_TENSORS, elem=part)
    if name in tk.DATASET_CONCATENATIONS and source.kind in (Kind.LIST, Kind.TUPLE):
        parts = [v for _, v in source.fields] + ([source.elem] if source.elem is not None else [])
        if parts and all(p.kind is Kind.DATASET and p.node is not None and p.node is parts[0].node
                         for p in parts):
            return parts[0].evolve(identity=new_identity())
    elem = Value(Kind.BATCH, HOST, origin)
    if name in tk.TENSOR_DATASETS and args and not kwargs:
        fields = []
        for index, tensor in enumerate(args):
            if tensor.place.on_device or tensor.place.where is Where.COND:
                fields.append((index, Value(Kind.TENSOR, tensor.place, tensor.origin)))
            else:
                fields.append((index, Value(Kind.TENSOR, HOST, origin)))
        elem = Value(Kind.BATCH, HOST, origin, fields=tuple(fields))
    return Value(Kind.DATASET, HOST, identity=new_identity(), elem=elem)
