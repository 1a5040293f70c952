"""Methods of library objects, by the receiver's kind: tensors, dicts and batches, tokenizers,
accelerators, NumPy arrays, optimizers, lists, Hugging Face datasets, argparse parsers and
matplotlib axes. (Methods of modules are analysis/modules.py; of the program's own classes,
analysis/calls.py.)"""

from __future__ import annotations

import libcst as cst

from devlint.analysis import devices

from devlint.analysis.events import SiteKind
from devlint.analysis.library.environment import argparser_method
from devlint.analysis.library.frameworks import hand_to_framework, managed, tokenizer_output
from devlint.analysis.library.host import figure_method
from devlint.analysis.placement import is_tensor_operand, tensor_result, union
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of, string_value
from devlint.analysis.values import (
    HOST,
    NO_TENSORS,
    NONE_VALUE,
    ORIGIN_TOKENIZER,
    SCALAR,
    STR,
    UNKNOWN,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Value,
    array,
)
from devlint.analysis.vocabulary import Fact, bool_fact_of, known_str
from devlint.knowledge import libraries as lib
from devlint.knowledge import torch as tk

_MAPPINGS = (Kind.DICT, Kind.BATCH, Kind.ENCODING)


def receiver_method(an: Analyzer, receiver: Value, name: str, node: cst.Call, args: Args, kwargs: Kwargs,
                    frame: Frame) -> Value | None:
    """Objects recognised by a fact rather than a kind (an argparse parser, matplotlib axes);
    None for any other receiver."""
    if receiver.has(Fact.ARGPARSER):
        return argparser_method(an, receiver, name, node, kwargs, frame)
    if receiver.has(Fact.PLOT_AXES) and name in lib.AXES_PLOTTING:
        return an.host_consumer(node, list(args) + [v for k, v in kwargs.items() if not k.startswith("*")],
                                f"`{code_of(node.func)}`", frame)
    if receiver.has(Fact.PLOT_FIGURE):
        return figure_method(name)
    return None


def is_tensor_method(name: str) -> bool:
    """A method torch.Tensor has (what a value of unknown kind must call to be taken for one)."""
    return name in tk.TENSOR_METHODS or name in tk.MIXING_METHODS or name in tk.NEW_METHODS \
        or name in tk.HOST_VALUE_METHODS or name in tk.TO_PYTHON_METHODS or name == "numpy"


def tensor_method(an: Analyzer, receiver: Value, name: str, node: cst.Call, args: Args, kwargs: Kwargs,
                  frame: Frame) -> Value:
    if name in tk.TO_PYTHON_METHODS:
        return SCALAR
    if name == "numpy":
        if not kwargs.get("force", SCALAR).has(Fact.TRUE):  # `.numpy(force=True)` copies to the host
            an.host_consumer(node, [receiver], "`.numpy()`", frame)
        return array(node)
    if name in tk.HOST_VALUE_METHODS:
        return SCALAR if name not in tk.NOTHING_RETURNING_METHODS else NONE_VALUE
    if name == "pin_memory":  # page-locked: a non_blocking copy is asynchronous (DEV301)
        return receiver.with_facts(Fact.PINNED)
    if name in tk.NEW_METHODS:
        return Value(Kind.TENSOR, receiver.place, receiver.origin)
    if name == "type_as" and args:  # where `args[0]` is; not known when that is not known
        return receiver.at(args[0].place if args[0].place.known else UNKNOWN_PLACE)
    if name in tk.SIZE_METHODS:
        return SCALAR
    if name in tk.MIXING_METHODS:
        operands = [receiver] + [a for a in list(args) + list(kwargs.values()) if is_tensor_operand(a)]
        if len(operands) >= 2:
            an.meet(node, operands, f"`.{name}()`", frame)
            return tensor_result(operands)
    if name in tk.REDUCTIONS and not node.args:
        return receiver.with_facts(Fact.ZERO_DIM)
    if receiver.kind is Kind.UNKNOWN:
        return Value(Kind.UNKNOWN, receiver.place)
    return receiver.with_facts(remove=(Fact.ZERO_DIM,)) if name in tk.SHAPE_METHODS else receiver


_STR_TESTS = frozenset({"startswith", "endswith"})


def _str_test(receiver: Value, name: str, args: Args) -> Value:
    """`device.startswith("cuda")` of a known string: known; of a device string that is "cuda"
    when a GPU is available and "cpu" otherwise: the availability itself. A flag computed from
    the device string the inputs are moved to (`use_gpu=device.startswith("cuda")`) then
    decides the callee's `if use_gpu:` as the device does (if the string is edited, both change
    together)."""
    text = known_str(receiver)
    probe = args[0] if args else None
    if text is None and probe is not None and name == "startswith" \
            and (receiver.kind is Kind.DEVICE or receiver.has(Fact.DEVICE_STR)):
        # `"cuda" if torch.cuda.is_available() else "cpu"`: starting with "cuda" is that test
        gpu, falls_back = devices.split(receiver.place.ident)
        named = known_str(probe)
        if falls_back and devices.falls_back_when_no_gpu(receiver.place.ident) and named \
                and devices.is_cuda(gpu) and named in ("cuda", "cuda:"):
            return SCALAR.with_facts(Fact.CUDA_AVAILABLE)
    if text is None or probe is None:
        return SCALAR
    if probe.kind is Kind.TUPLE:
        options = [known_str(part) for _, part in probe.fields]
    else:
        options = [known_str(probe)]
    known = [option for option in options if option is not None]
    if not known or len(known) != len(options):
        return SCALAR
    test = text.startswith if name == "startswith" else text.endswith
    return SCALAR.with_facts(bool_fact_of(any(test(option) for option in known)))


def library_method(an: Analyzer, receiver: Value, name: str, node: cst.Call, args: Args, kwargs: Kwargs,
                   frame: Frame) -> Value:
    kind = receiver.kind
    if kind in (Kind.STR, Kind.DEVICE) and name in _STR_TESTS:
        return _str_test(receiver, name, args)
    if kind in _MAPPINGS:
        return _mapping_method(an, receiver, name, node)
    if kind is Kind.TOKENIZER:
        return _tokenizer_method(name, node, kwargs)
    if kind is Kind.ACCELERATOR:
        if name in lib.ACCELERATOR_PREPARE:
            prepared = [managed(an, a) for a in args]
            if len(prepared) == 1:
                return prepared[0]
            return Value(Kind.TUPLE, NO_TENSORS, fields=tuple(enumerate(prepared)))
        return UNKNOWN
    if kind is Kind.OBJECT and receiver.has(Fact.MANAGED):  # trainer.fit(model) / trainer.train()
        hand_to_framework(an, list(args) + list(kwargs.values()), frame)
        return UNKNOWN
    if kind is Kind.NDARRAY:
        return SCALAR if name in tk.TO_PYTHON_METHODS else array(node, receiver)
    if kind is Kind.OPTIMIZER and name == "load_state_dict":
        an.emit_site(node, frame, SiteKind.OPTIMIZER_LOAD, receiver.qualname, receiver)
        return UNKNOWN
    if kind is Kind.LIST and name in tk.LIST_GROWING_METHODS and args and type(node.func) is cst.Attribute:
        new_elem = args[-1] if name != "extend" else an.element_of(args[-1])
        held = receiver.elem
        for _, member in receiver.fields:
            held = union(held, member)
        merged = receiver.evolve(elem=union(held, new_elem), fields=()).with_facts(remove=(Fact.EMPTY,))
        an.assign(node.func.value, merged, frame, node)
        return NONE_VALUE
    if kind is Kind.UNKNOWN and receiver.has(Fact.HF_DATASET):  # .map / .filter / .with_format ...
        return receiver
    if kind is Kind.UNKNOWN and name in lib.HF_FORMAT_METHODS and "device" in kwargs:
        # a Hugging Face `datasets` object that yields tensors already on a device
        placed = receiver.with_facts(Fact.PLACED_ITEMS)
        if name == "set_format" and type(node.func) is cst.Attribute:
            an.assign(node.func.value, placed, frame, node)
            return NONE_VALUE
        return placed
    return UNKNOWN


def _mapping_method(an: Analyzer, receiver: Value, name: str, node: cst.Call) -> Value:
    if name == "items":
        return Value(Kind.LIST, NO_TENSORS, elem=Value(Kind.TUPLE, NO_TENSORS,
                                                       fields=((0, STR), (1, an.item_of(receiver, None, "")))))
    if name == "values":
        return Value(Kind.LIST, NO_TENSORS, elem=an.item_of(receiver, None, ""))
    if name == "keys":
        return Value(Kind.LIST, NO_TENSORS, elem=STR)
    if name in ("get", "pop") and node.args:
        key = string_value(node.args[0].value)
        return an.item_of(receiver, key, key or "")
    if name in ("update", "setdefault"):
        return NONE_VALUE
    return UNKNOWN


def _tokenizer_method(name: str, node: cst.Call, kwargs: Kwargs) -> Value:
    if name in lib.TOKENIZER_ENCODING_METHODS:
        return tokenizer_output(node)
    if name in lib.TOKENIZER_TENSOR_METHODS:
        requested = kwargs.get("return_tensors")
        if requested is not None and requested.kind is Kind.STR:
            return Value(Kind.TENSOR, HOST, Origin(ORIGIN_TOKENIZER, node, f"`{code_of(node.func)}(...)`"))
        return Value(Kind.LIST, NO_TENSORS, elem=SCALAR)
    if name in lib.TOKENIZER_TEXT_METHODS:
        return STR
    return UNKNOWN
