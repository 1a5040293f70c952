"""The library table: which handler a call of an imported name goes to.

Rows are tried in order; the first whose matcher accepts the (canonical) name and whose handler
does not fall through (`NEXT`) decides. The rows a name matches are computed once per name and
run, so a hot call such as `torch.cat` costs a dictionary look-up, not a walk of the table.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from devlint.analysis.library import builtins, cuda, data, environment, frameworks, host, nn, tensors
from devlint.analysis.library.common import NEXT
from devlint.analysis.names import canonical
from devlint.analysis.shared import Analyzer, Args, Frame, Kwargs
from devlint.analysis.values import UNKNOWN, Value
from devlint.knowledge import libraries as lib
from devlint.knowledge import matches
from devlint.knowledge import torch as tk

Handler = Callable[[Analyzer, str, cst.Call, Args, Kwargs, Frame], Value]
# (qualname, move helpers, device helpers) -> does the row apply
Matcher = Callable[[str, frozenset, frozenset], bool]


def _table(*tables: frozenset[str]) -> Matcher:
    return lambda qualname, move_helpers, device_helpers: any(matches(qualname, t) for t in tables)


def _moving(qualname: str, move_helpers: frozenset, device_helpers: frozenset) -> bool:
    return qualname in move_helpers


def _placing(qualname: str, move_helpers: frozenset, device_helpers: frozenset) -> bool:
    return qualname in device_helpers


def _tensor_function(qualname: str, move_helpers: frozenset, device_helpers: frozenset) -> bool:
    return matches(qualname, tk.TORCH_FUNCTIONS) and not matches(qualname, tk.NON_MIXING_FUNCTIONS)


ROWS: tuple[tuple[Matcher, Handler], ...] = (
    (_table(lib.BUILTINS), builtins.builtin),
    (_table(lib.HF_DATASETS), frameworks.hf_dataset),
    (_moving, cuda.move_helper),
    (_placing, cuda.device_helper),
    (_table(tk.CUDA_AVAILABLE), cuda.availability_query),
    (_table(tk.ANY_ACCELERATOR), cuda.any_accelerator),
    (_table(lib.START_METHOD_SETTERS), environment.start_method),
    (_table(lib.ENV_WRITERS), environment.env_writer),
    (_table(tk.PROCESS_GROUP_INIT), environment.process_group),
    (_table(tk.CUDA_TENSOR_TYPES), tensors.legacy_cuda_tensor),
    (_table(tk.CUDA_CALLS), cuda.cuda_call),
    (_table(tk.DEVICE_CONSTRUCTORS), cuda.device_constructor),
    (_table(tk.SET_DEFAULT_DEVICE), cuda.set_default_device),
    (_table(tk.SET_DEFAULT_TENSOR_TYPE), tensors.set_default_tensor_type),
    (_table(tk.LIKE_FACTORIES), tensors.like_factory),
    (_table(tk.FACTORIES, tk.HOST_ONLY_FACTORIES), tensors.factory),
    (_table(tk.PARAMETER), tensors.parameter),
    (_table(tk.CHECKPOINT_LOADERS), tensors.checkpoint_load),
    (_table(tk.CHECKPOINT_SAVERS), tensors.checkpoint_save),
    (_table(tk.CHECKPOINT_DIRECTORY_WRITERS), tensors.checkpoint_directory),
    (_table(lib.ARGUMENT_PARSERS), environment.argument_parser),
    (_table(lib.NAMESPACES), environment.namespace),
    (_table(lib.ACCELERATORS), frameworks.accelerator),
    (_table(lib.MANAGING_TRAINERS), frameworks.managing_trainer),
    (_table(tk.LOADERS), data.loader),
    (_table(tk.DATASETS), data.library_dataset),
    (_table(lib.TOKENIZERS), frameworks.tokenizer),
    (_table(tk.OPTIMIZERS), nn.optimizer),
    (_table(lib.MODEL_CONSTRUCTORS), frameworks.model_constructor),
    (_table(lib.PLACING_CONSTRUCTORS), frameworks.placing_constructor),
    (_table(tk.PASS_THROUGH_ITERABLES), builtins.pass_through),
    (_table(tk.SCATTERING_WRAPPERS, tk.DDP_WRAPPERS), nn.scattering_wrapper),
    (_table(tk.WRAPPERS), nn.wrapper),
    (_table(tk.NN_CLASSES), nn.nn_module),
    (_table(lib.COPIES), builtins.deep_copy),
    (_table(lib.PARTIALS), builtins.partial),
    (_table(lib.NUMPY_ARRAY_MAKERS, lib.HOST_ONLY_CALLS), host.host_call),
    (_tensor_function, tensors.torch_function),
    (_table(lib.DEVICE_FOLLOWING_FUNCTIONS), tensors.torch_function),
)


class LibraryTable:
    """The rows each name matches, computed once per name and helper settings in a process (the
    answer depends on nothing else, and every file of a run asks for `torch.zeros` again)."""

    def __init__(self, move_helpers: frozenset[str], device_helpers: frozenset[str]) -> None:
        self._move_helpers = move_helpers
        self._device_helpers = device_helpers
        self._rows = _ROWS_BY_SETTINGS.setdefault((move_helpers, device_helpers), {})

    def handlers(self, qualname: str) -> tuple[Handler, ...]:
        found = self._rows.get(qualname)
        if found is None:
            found = self._rows[qualname] = tuple(
                handler for matcher, handler in ROWS if matcher(qualname, self._move_helpers, self._device_helpers))
        return found


_ROWS_BY_SETTINGS: dict[tuple[frozenset[str], frozenset[str]], dict[str, tuple[Handler, ...]]] = {}


def call_library(an: Analyzer, qualname: str, node: cst.Call, args: Args, kwargs: Kwargs, frame: Frame) -> Value:
    """What a call of the imported name `qualname` returns (and records)."""
    qualname = canonical(qualname)
    for handler in an.library.handlers(qualname):
        result = handler(an, qualname, node, args, kwargs, frame)
        if result is not NEXT:
            return result
    return UNKNOWN
