"""Libraries and frameworks around PyTorch: pretrained models (transformers, torchvision, timm)
and where `device_map=` / quantisation puts them, tokenizers, Hugging Face `datasets`, and the
frameworks that place models and batches themselves (accelerate, Lightning, HF Trainer)."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import conditions, devices
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.placement import device_string_place
from devlint.analysis.syntax import code_of, string_value
from devlint.analysis.values import (
    CONTAINERS,
    HOST,
    NO_TENSORS,
    ORIGIN_MADE,
    ORIGIN_TOKENIZER,
    TENSORISH,
    UNKNOWN_PLACE,
    Kind,
    Origin,
    Placement,
    Value,
    Where,
    device_at,
    new_identity,
)
from devlint.analysis.vocabulary import Fact, holds_int, known_bool, known_int, known_str
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches


def hf_dataset(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """Its rows may be formatted onto a device anywhere (`with_format("torch", device=...)`)."""
    return Value(Kind.UNKNOWN, UNKNOWN_PLACE, facts=frozenset({Fact.HF_DATASET}))


def accelerator(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    return Value(Kind.ACCELERATOR, device_at("accelerator.device", node, "=accelerator.device"),
                 identity=new_identity())


def managing_trainer(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                     frame: Frame) -> Value:
    hand_to_framework(an, list(args) + list(kwargs.values()), frame)
    return Value(Kind.OBJECT, NO_TENSORS, facts=frozenset({Fact.MANAGED}))


def tokenizer(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    return Value(Kind.TOKENIZER, NO_TENSORS, Origin(ORIGIN_MADE, node), identity=new_identity())


def model_constructor(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                      frame: Frame) -> Value:
    """`AutoModel.from_pretrained(...)`, `torchvision.models.resnet18()`, `timm.create_model(...)`:
    on the host unless `device_map=` / quantisation / `device=` places it."""
    origin = an.module_origin(node, frame, f"`{code_of(node.func)}(...)`")
    if matches(qualname, lib.MODEL_WRAPPERS):  # adapters are built where the base model's weights are
        if args and args[0].kind is Kind.MODULE:
            base = args[0]
            return base.evolve(qualname=qualname, origin=replace(base.origin, name="") if base.origin else None)
        return Value(Kind.MODULE, UNKNOWN_PLACE, origin, identity=new_identity(), qualname=qualname)
    if "**" in kwargs:
        spread = _spread_placement(kwargs)
        if spread is None:  # `**model_kwargs` the analysis cannot read may hold `device_map=`
            return Value(Kind.MODULE, UNKNOWN_PLACE, origin, identity=new_identity(), qualname=qualname)
        kwargs = spread
    dispatched = _dispatched_place(an, node, kwargs)
    if dispatched is not None:
        place, facts = dispatched
        model = Value(Kind.MODULE, place, origin, identity=new_identity(), qualname=qualname, facts=facts)
        flag = _quantize_flag(node, kwargs)
        if flag is not None:
            an.dispatch_flags[model.identity] = flag
        return model
    if "device" in kwargs:
        chosen = an.device_arg(node, [], kwargs, positional=None)
        return Value(Kind.MODULE, chosen or UNKNOWN_PLACE, origin, identity=new_identity(), qualname=qualname)
    if frame.ctx.default_device or an.default_device or an.default_unknown:
        return Value(Kind.MODULE, UNKNOWN_PLACE, origin, identity=new_identity(), qualname=qualname)
    return Value(Kind.MODULE, HOST, origin, identity=new_identity(), qualname=qualname)


def _spread_placement(kwargs: Kwargs) -> Kwargs | None:
    """The keywords of `from_pretrained(name, **model_kwargs)` when the spread dict visibly holds
    the placing ones (`{"device_map": "auto"}`, then `model_kwargs["quantization_config"] = q`);
    None when it may hold them unseen (a helper's `**kwargs`, a dict built elsewhere)."""
    spread = kwargs["**"]
    named = {k: v for k, v in spread.fields if isinstance(k, str)} if spread.kind is Kind.DICT else {}
    placing = ("device_map",) + tuple(lib.QUANTIZE_KWARGS)
    if not any(k in named for k in placing):
        return kwargs if any(k in kwargs for k in placing) else None
    if "device_map" in named and named["device_map"].kind is Kind.UNKNOWN:
        return None  # `param["device_map"] = device_map` under `if device_map is not None:`: maybe
    return {**named, **{k: v for k, v in kwargs.items() if k != "**"}}


def _keyword_node(node: cst.Call, key: str) -> cst.BaseExpression:
    """The argument that gives `key`: the keyword itself, else the `**` dict it came in."""
    return next((a.value for a in node.args if a.keyword is not None and a.keyword.value == key),
                None) or next(a.value for a in node.args if a.star == "**")


def placing_constructor(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                        frame: Frame) -> Value:
    """`SentenceTransformer(name, device=...)`, `pipeline(..., device=...)`: built in place."""
    place = an.device_arg(node, [], kwargs, positional=None)
    return Value(Kind.MODULE, place or UNKNOWN_PLACE, identity=new_identity())


def _quantize_flag(node: cst.Call, kwargs: Kwargs) -> conditions.Literal | None:
    """`load_in_8bit=load_in_8bit`: a model quantised only when the program's flag holds (the
    path literal of that flag), when no other argument dispatches it for sure."""
    if kwargs.get("device_map") is not None and kwargs["device_map"].kind is not Kind.NONE:
        return None
    flags = [a.value for a in node.args if a.keyword is not None and a.keyword.value in lib.QUANTIZE_KWARGS
             and known_bool(kwargs.get(a.keyword.value)) is None
             and type(a.value) in (cst.Name, cst.Attribute)]
    if len(flags) != 1 or any(known_bool(kwargs.get(k)) is True for k in lib.QUANTIZE_KWARGS if k in kwargs):
        return None
    return conditions.literal(code_of(flags[0]))


def _dispatched_place(an: Analyzer, node: cst.Call, kwargs: Kwargs) -> tuple[Placement, frozenset[str]] | None:
    """Where `from_pretrained(..., device_map=..., load_in_8bit=...)` puts the model.

    accelerate attaches hooks that move each block's inputs to its device when the map spans
    several devices, and always for bitsandbytes-quantised models ("dispatched": CPU inputs are
    fine, moving the model again is not); a map naming one device is a plain `.to(device)`."""
    def given(key: str) -> bool:
        value = kwargs.get(key)
        return value is not None and value.kind is not Kind.NONE and not value.has(Fact.FALSE)
    quantized = any(given(k) for k in lib.QUANTIZE_KWARGS)
    eight_bit = {Fact.QUANTIZED8} if any(given(k) for k in lib.EIGHT_BIT_KWARGS) else set()
    device_map = kwargs.get("device_map")
    if device_map is None or device_map.kind is Kind.NONE:
        if not quantized:
            return None
        return device_at("cuda", node), frozenset({Fact.DISPATCHED, Fact.QUANTIZED} | eight_bit)
    arg_node = _keyword_node(node, "device_map")
    text = string_value(arg_node) if known_str(device_map) is None else known_str(device_map)
    single: Placement | None = None
    if text is not None and text not in lib.DEVICE_MAP_STRATEGIES:
        single = device_string_place(text, arg_node)
    elif device_map.kind is Kind.SCALAR and holds_int(device_map):
        single = _gpu_index(device_map, arg_node)
    elif device_map.kind is Kind.DEVICE and device_map.place.known:
        single = replace(device_map.place, device=code_of(arg_node), node=arg_node)
    elif device_map.kind is Kind.DICT and len(device_map.fields) == 1 and device_map.fields[0][0] == "":
        only = device_map.fields[0][1]
        if only.kind is Kind.SCALAR:
            single = _gpu_index(only, arg_node)
        elif only.has(Fact.DEVICE_STR) or only.kind is Kind.DEVICE:
            single = only.place if only.place.known else None
    if single is not None and single.on_host and not quantized:
        return HOST, frozenset()
    if single is not None and single.on_device and not quantized:
        return single, frozenset()  # one device: the same as `.to(device)`, no hooks
    facts = {Fact.DISPATCHED} | ({Fact.QUANTIZED} if quantized else set()) | eight_bit
    if single is not None:  # one device (a quantised model, not split): it keeps that device's identity
        return device_at(single.device, arg_node, single.ident), frozenset(facts)
    shown = f'"{text}"' if text is not None else code_of(arg_node)
    return device_at(f"device_map={shown}", arg_node), frozenset(facts)


def _gpu_index(value: Value, node: cst.CSTNode) -> Placement:
    """`device_map=0`, `device_map={"": 0}`: the whole model on that GPU."""
    index = known_int(value)
    text = f"cuda:{index}" if index is not None else f"cuda:{code_of(node)}"
    return device_at(text, node, devices.from_string(text))


def returns_tensors(node: cst.Call) -> bool:
    """`return_tensors="pt"` among the call's arguments."""
    return any(a.keyword is not None and a.keyword.value == "return_tensors" and string_value(a.value) == "pt"
               for a in node.args)


def tokenizer_output(node: cst.Call) -> Value:
    """What calling a tokenizer gives: a BatchEncoding, of host tensors with `return_tensors="pt"`."""
    if not returns_tensors(node):
        return Value(Kind.ENCODING, NO_TENSORS)
    return Value(Kind.ENCODING, HOST, Origin(ORIGIN_TOKENIZER, node, f"`{code_of(node.func)}(...)`"),
                 identity=new_identity())


def placed_by_framework(value: Value, place: Placement, depth: int = 0) -> Value:
    """A batch and every field of it, placed by a framework (accelerate, Lightning)."""
    if depth > 4:
        return value
    fields = tuple((k, placed_by_framework(v, place, depth + 1)) for k, v in value.fields)
    elem = placed_by_framework(value.elem, place, depth + 1) if value.elem is not None else None
    moved = value.evolve(fields=fields, elem=elem)
    if value.kind in TENSORISH or value.kind in CONTAINERS or value.kind is Kind.OBJECT or value.place.known:
        moved = moved.at(place) if value.place.where is not Where.NONE else moved
    return moved.with_facts(Fact.MANAGED)


def hand_to_framework(an: Analyzer, values: list[Value], frame: Frame) -> None:
    """A trainer (HF `Trainer`, Lightning `Trainer.fit`) places the modules it is given, in
    place, on a device of its choosing: from then on their placement is the framework's."""
    for value in values:
        if value.kind is Kind.MODULE and value.identity:
            an.rebind(frame, value.identity, value.evolve(place=UNKNOWN_PLACE).with_facts(Fact.MANAGED))


def managed(an: Analyzer, value: Value) -> Value:
    """What accelerate's prepare() returns: placed by the framework."""
    facts = value.facts | {Fact.MANAGED}
    if value.kind is Kind.LOADER:
        elem = placed_by_framework(value.elem, device_at("accelerator.device")) if value.elem else None
        return value.evolve(facts=facts, elem=elem, fields=())
    if value.kind is Kind.MODULE:
        return an.move_module(value, device_at("accelerator.device")).evolve(facts=facts)
    return value.evolve(facts=facts)
