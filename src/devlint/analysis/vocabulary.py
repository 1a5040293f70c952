"""The named facts an abstract value can carry, and the one reader of integer and boolean facts.

A fact is a short string in `Value.facts` (a frozenset, so values stay cheap to copy and hash).
The analysis writes them and the rules read them; both spell them through these constants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.values import Value


class Fact:
    """Fact names. Grouped by what they describe."""

    # tensors
    ZERO_DIM = "zero_dim"  # a 0-dim tensor: PyTorch lets a CPU one meet device tensors; on a NumPy value: it
    # may be a NumPy scalar (an element, a reduction), which a tensor operation takes as a number
    PINNED = "pinned"  # page-locked memory (`.pin_memory()`): non_blocking copies overlap
    # module state and registration
    REGISTERED = "registered"  # a submodule, parameter or buffer that Module.to() moves
    BUFFER = "buffer"  # registered with register_buffer
    PARAM = "param"  # an nn.Parameter (or a module's weight)
    PARAMS = "params"  # model.parameters(), named_parameters(), state_dict() ...
    PARAM_ITER = "param_iter"  # an iterator of parameters: next() gives one parameter
    LOSS_WEIGHT = "loss_weight"  # a loss module holding a weight tensor
    LOCAL = "local"  # an instance of a module class of the analysed program
    FRAMEWORK = "framework"  # a module whose base class is a framework's (LightningModule)
    # placement done by someone else
    MANAGED = "managed"  # placed by a framework (accelerate, Lightning, HF Trainer)
    SCATTERS = "scatters"  # DataParallel / DDP with device_ids: moves its inputs itself
    DISPATCHED = "dispatched"  # placed by accelerate's device_map hooks
    QUANTIZED = "quantized"  # bitsandbytes-quantised weights
    QUANTIZED8 = "quantized8"  # ... to 8 bits (transformers refuses to move those)
    # dispatched on some paths only (one branch loads with `device_map=` or quantised, another
    # plainly): it may be dispatched (inputs need not follow), but a move is not proven to meet one
    PARTLY_DISPATCHED = "partly_dispatched"
    PLACED_ITEMS = "placed_items"  # a HF `datasets` object formatted onto a device
    HF_DATASET = "hf_dataset"  # a HF `datasets` object: its rows' placement is not known
    # devices
    CUDA_AVAILABLE = "cuda_available"  # the result of torch.cuda.is_available()
    MPS_AVAILABLE = "mps_available"  # the result of torch.backends.mps.is_available()
    CPU_FALLBACK = "cpu_fallback"  # a device chosen between a GPU and the CPU
    DEVICE_STR = "device_str"  # a string naming a device ("cuda:1")
    CPU_WEIGHTS = "cpu_weights"  # the URL of officially published weights, saved from CPU tensors
    # containers and iteration
    EMPTY = "empty"  # an empty list literal
    DATA_ITER = "data_iter"  # iterating it yields batches (enumerate(loader), zip(loader, ...))
    # objects of outside libraries
    MAY_HOLD = "may_hold"  # a member of a list that holds several kinds of values (its fields are those)
    ONE_OF = "one_of"  # one of several callables (its fields are the candidates), chosen at run time
    TENSOR_TYPE = "tensor_type"  # a legacy typed tensor class (torch.cuda.FloatTensor), placed where it makes tensors
    PLOT_AXES = "plot_axes"  # matplotlib axes
    PLOT_FIGURE = "plot_figure"  # a matplotlib figure (or subfigure)
    ARGPARSER = "argparser"  # an argparse.ArgumentParser
    PARSED_ARGS = "parsed_args"  # what parse_args() returned
    OPTION_DEFAULT = "option_default"  # a number that is a command-line option's default
    # a constant whoever runs or calls the code chooses (a module-level setting, an argument):
    # known for messages and counts, never for deciding which branch of an `if` runs
    CHOSEN = "chosen"
    # library mode: a parameter of code no call reached; the first tensor-only use of it
    # (`x.unsqueeze(1)`, `x.dim()`) makes it a tensor on the caller's device
    LIBRARY_INPUT = "library_input"
    # ... given the default None (`def forward(self, inputs=None)`): `inputs is None` tells the
    # path where the caller gave none (analysis/narrowing.py)
    OPTIONAL = "optional"

    TRUE = "bool=True"
    FALSE = "bool=False"


def int_fact_of(number: int) -> str:
    """The fact that says a value is the literal int `number` (num_workers=4)."""
    return f"int={number}"


def bool_fact_of(truth: bool) -> str:
    return Fact.TRUE if truth else Fact.FALSE


def known_int(value: "Value | None") -> int | None:
    """The literal int a value is known to hold, if any."""
    if value is None:
        return None
    for fact in value.facts:
        if fact.startswith("int="):
            try:
                return int(fact[4:])
            except ValueError:
                return None
    return None


def str_fact_of(text: str) -> str:
    """The fact that says a value is the literal string `text` (`device="cpu"`)."""
    return f"str={text}"


def default_str_fact_of(text: str) -> str:
    """The fact that says a parameter of unknown value defaults to the literal `text`
    (`window="hann_window"`): what it names usually, not what it is (analysis/calls.py)."""
    return f"default_str={text}"


def default_str(value: "Value | None") -> str | None:
    """The literal a parameter of unknown value defaults to, if any."""
    return _fact_text(value, "default_str=")


def known_str(value: "Value | None") -> str | None:
    """The literal string a value is known to hold, if any."""
    return _fact_text(value, "str=")


def _fact_text(value: "Value | None", prefix: str) -> str | None:
    if value is None:
        return None
    for fact in value.facts:
        if fact.startswith(prefix):
            return fact[len(prefix):]
    return None


def holds_int(value: "Value") -> bool:
    return any(fact.startswith("int=") for fact in value.facts)


def decided(value: "Value") -> bool | None:
    """True / False when a test's value is a constant of the code itself (not a setting, an
    option's default or an argument: see Fact.CHOSEN), so one branch never runs; else None."""
    if Fact.CHOSEN in value.facts or Fact.OPTION_DEFAULT in value.facts:
        return None
    return known_bool(value)


def known_bool(value: "Value | None") -> bool | None:
    """True / False when the value is known to be that literal, else None."""
    if value is None:
        return None
    if Fact.TRUE in value.facts:
        return True
    if Fact.FALSE in value.facts:
        return False
    return None
