"""The process around the program: environment variables (DEV203), torch.distributed and
multiprocessing start-up, command-line options whose defaults are known values, and the
configuration that lets the program run on a machine without a GPU."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from devlint.analysis import devices
from devlint.analysis.events import SiteKind
from devlint.analysis.library.common import call_arguments
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.syntax import code_of, option_dest, string_value, walk
from devlint.analysis.values import NO_TENSORS, NONE_VALUE, STR, UNKNOWN, UNKNOWN_PLACE, Kind, Value, new_identity
from devlint.analysis.vocabulary import Fact, holds_int
from devlint.knowledge import conventions
from devlint.knowledge import libraries as lib


def start_method(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """multiprocessing start method (DEV110 reads it: "spawn" workers start fresh)."""
    an.emit_site(node, frame, SiteKind.START_METHOD, qualname, args[0] if args else UNKNOWN,
                 call_arguments(node, args, kwargs), code_of(node))
    return NONE_VALUE


def env_writer(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    record_env_write(an, node, qualname, args, kwargs, frame)
    return STR if qualname in lib.ENV_WRITERS_RETURNING_VALUE else NONE_VALUE


def process_group(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    an.emit_site(node, frame, SiteKind.PROCESS_GROUP, qualname, UNKNOWN, call_arguments(node, args, kwargs),
                 code_of(node))
    return NONE_VALUE


def record_env_write(an: Analyzer, node: cst.CSTNode, qualname: str, args: Args, kwargs: Kwargs, frame: Frame,
                     key_node: cst.BaseExpression | None = None, value: Value = UNKNOWN) -> None:
    """Record an environment write (`os.environ[k] = v`, `.update`, `.setdefault`, `os.putenv`)
    as an ENV site naming the variables written ("" for a name that is not a literal)."""
    names: list[str] = []
    if key_node is not None:
        names.append(string_value(key_node) or "")
    elif qualname in lib.ENV_UPDATES:
        call_args = [a for a in node.args if a.keyword is None] if type(node) is cst.Call else []
        if call_args and type(call_args[0].value) is cst.Dict:
            for el in call_args[0].value.elements:
                if type(el) is cst.DictElement:
                    names.append(string_value(el.key) or "")
        elif call_args:
            names.append("")
        names.extend(k for k in kwargs if not k.startswith("*"))
    elif type(node) is cst.Call and node.args:
        names.append(string_value(node.args[0].value) or "")
    if names:
        an.emit_site(node, frame, SiteKind.ENV, qualname, value, text=code_of(node), names=tuple(names))


def argument_parser(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs,
                    frame: Frame) -> Value:
    return Value(Kind.OBJECT, NO_TENSORS, identity=new_identity(), facts=frozenset({Fact.ARGPARSER}))


def argparser_method(an: Analyzer, parser: Value, name: str, node: cst.Call, kwargs: Kwargs, frame: Frame) -> Value:
    """An `argparse` parser collects the integer defaults of its options; `parse_args()`
    gives an object holding them (other options stay unknown)."""
    if name in lib.ARGPARSE_GROUPS:
        return parser  # options added to a group belong to the parser
    if name == "add_argument":
        dest = option_dest(node)
        if dest is not None:
            default = kwargs.get("default")
            known = default.with_facts(Fact.OPTION_DEFAULT) if default is not None \
                and default.kind is Kind.SCALAR and holds_int(default) else _device_default(default, dest)
            an.rebind(frame, parser.identity, parser.set_field(dest, known))
            if conventions.DEVICE_OPTION.search(dest) and _offers_cpu(node):
                an.emit_site(node, frame, SiteKind.CPU_OPTION, "", UNKNOWN, text=code_of(node)[:80])
        return UNKNOWN
    if name == "set_defaults":
        updated = parser
        for key, value in kwargs.items():
            if not key.startswith("*"):
                updated = updated.set_field(key, value.with_facts(Fact.OPTION_DEFAULT) if value.kind is Kind.SCALAR
                                            else UNKNOWN)
        an.rebind(frame, parser.identity, updated)
        return UNKNOWN
    if name in lib.ARGPARSE_PARSERS:
        parsed = Value(Kind.OBJECT, NO_TENSORS, identity=new_identity(), fields=parser.fields,
                       facts=frozenset({Fact.PARSED_ARGS}))
        return parsed if name == "parse_args" else Value(Kind.TUPLE, NO_TENSORS, fields=((0, parsed), (1, UNKNOWN)))
    return UNKNOWN


def _device_default(default: Value | None, dest: str) -> Value:
    """A device option's string default (`default="cuda"`): a move to the option is a move to
    that accelerator on the path where the user keeps the default. A default of "cpu" says
    nothing of the paths where the user names another device, so it is a device string whose
    placement is not known (a move to it is no evidence of either side). The text itself is not
    kept: the command line may change it, so it must not decide `if args.device == "cpu":`; and
    its identity is the accelerator or the CPU, as the user chooses (not a GPU-only device)."""
    if default is None or not default.has(Fact.DEVICE_STR) or default.kind is not Kind.STR:
        return UNKNOWN
    place = UNKNOWN_PLACE
    if default.place.on_device:
        place = replace(default.place, ident=devices.with_fallback(default.place.ident, f"--{dest}"))
    return Value(Kind.STR, place, facts=frozenset({Fact.DEVICE_STR, Fact.OPTION_DEFAULT}))


def namespace(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """`SimpleNamespace(device="cpu", lr=0.1)`: an object holding its keyword arguments, as
    `parse_args()` gives (what a unit test builds in place of the command line)."""
    fields: list[tuple[object, Value]] = []
    for key, value in kwargs.items():
        if not key.startswith("*"):
            fields.append((key, value))
        elif value.kind is Kind.DICT:  # `SimpleNamespace(**DEFAULTS)`: the keys of a dict it can read
            fields.extend((k, v) for k, v in value.fields if isinstance(k, str))
    return Value(Kind.OBJECT, NO_TENSORS, identity=new_identity(), fields=tuple(fields),
                 facts=frozenset({Fact.PARSED_ARGS}))


def _offers_cpu(node: cst.Call) -> bool:
    """`add_argument("--device", default="cpu")` or `choices=["cuda", "cpu"]`: the user may
    run the program on the CPU."""
    for arg in node.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "default" and _is_cpu(arg.value):
            return True
        if arg.keyword.value == "choices" \
                and (type(arg.value) is cst.List or type(arg.value) is cst.Tuple or type(arg.value) is cst.Set) \
                and any(_is_cpu(el.value) for el in arg.value.elements):
            return True
    return False


def _is_cpu(node: cst.BaseExpression) -> bool:
    text = string_value(node)
    return isinstance(text, str) and text.strip().lower() == "cpu"


def record_cpu_test(an: Analyzer, test: cst.BaseExpression, frame: Frame) -> None:
    """A branch on `device.type == "cpu"` (an `if` or a conditional expression): the program
    has a path for a machine without a GPU."""
    if an.in_entry_code:
        return  # a library's own branches for CPU tensors say nothing about where a program runs
    text = code_of(test)
    if "cpu" in text and conventions.CPU_TEST.search(text):
        kind = SiteKind.DEVICE_DISPATCH if device_dispatch(an, test, frame) else SiteKind.CPU_OPTION
        an.emit_site(test, frame, kind, "", UNKNOWN, text=text[:80])


def device_dispatch(an: Analyzer, test: cst.BaseExpression, frame: Frame) -> bool:
    """Does the test ask where a tensor already is (`x.is_cuda`, `input.device.type != "cuda"`,
    `p.weight.device`) or read a GPU parameter of the function it is in (`if cuda:` in
    `def totensor(data, cuda=True)`)? Either way it serves both kinds of machine; the program's
    own choice of device is made elsewhere."""
    while type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        test = test.expression
    if type(test) is cst.Name:
        return test.value in _parameters(frame)
    for node in walk(test):
        if type(node) is not cst.Attribute or node.attr.value not in ("is_cuda", "device"):
            continue
        owner = node.value
        if node.attr.value == "is_cuda" or type(owner) is not cst.Name:
            return True  # `x.is_cuda`, `self.weight.device`: a tensor's placement
        value = an.lookup(owner.value, frame)
        if value.kind is Kind.TENSOR or value.kind is Kind.UNKNOWN and owner.value in _parameters(frame):
            return True
    return False


def _parameters(frame: Frame) -> frozenset[str]:
    fn = frame.fn
    if frame.module_level or not (type(fn) is cst.FunctionDef or type(fn) is cst.Lambda):
        return frozenset()
    params = fn.params
    every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
    return frozenset(p.name.value for p in every)
