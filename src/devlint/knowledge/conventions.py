"""Naming conventions of real PyTorch code: what a name or a test usually means.

The analysis cannot run the program, so a few facts come from how people name things: the
object that holds a program's settings (`args.device` is the chosen device, `x.device` follows
a tensor), a user's GPU switch in an `if` (`if args.cuda:`), and the words that tell which part
of a run a function belongs to (evaluation, inference, checkpoint reload). Data only.
"""

from __future__ import annotations

import re

# names of objects that hold a program's settings: `args.device` / `self.device` are the
# chosen device, not the device of a tensor the analysis cannot see
SETTING_HOLDERS = frozenset({"self", "args", "cfg", "config", "opt", "opts", "hparams", "hp", "params",
                             "settings", "conf", "flags", "FLAGS", "CFG", "options", "training_args",
                             "accelerator", "trainer", "fabric", "Config", "CONFIG"})

# a user's switch between GPU and CPU in an `if` test: `args.cuda`, `use_gpu`, `opt.gpu_ids`
GPU_SWITCH = re.compile(r"(?i)(cuda|gpu)")
# an `if` test that holds once every N iterations (`step % args.eval_steps == 0`, also within
# `and` / `or`): its body runs periodically, not on every step
PERIODIC_TEST = re.compile(r"%\s*[^=<>!%]+==\s*0\b")
# an `if` test or `a if test else b` that compares a device with the CPU (`device.type == "cpu"`,
# `args.device != 'cpu'`): the program has a path for a machine without a GPU
CPU_TEST = re.compile(r"""(==|!=|\bin)\s*[(\[{]?\s*(['"])cpu\2|(['"])cpu\3\s*(==|!=)""")
# parameter names that say a number or a shape, not a tensor (`window_size`, `num_tokens`,
# `seq_len`): library mode does not take such a forward input for a tensor
NUMBER_PARAMETER = re.compile(r"(?i)(^|_)(size|sizes|shape|dim|dims|len|length|num|count|n|idx|index|step|steps)($|_)")
# tests whose outcome a launcher or a caller's device choice decides (`world_size == 1`,
# `dist.is_initialized()`, `device_ids is not None`, `args.gpu`, `self.offloading`): CUDA code
# behind one runs only where GPUs were put (rules/unguarded_cuda.py)
LAUNCHER_TEST = re.compile(r"(?i)world_size|\brank\b|distributed|\bdist\.|device_ids|is_initialized|gpu|cuda|cpu|device|offload")
# a command-line option that chooses the device (`--device`, `--gpu`, `--use_cuda`)
DEVICE_OPTION = re.compile(r"(?i)(device|cuda|gpu)")
# `if` tests that ask whether a GPU is there
AVAILABILITY_TESTS = ("cuda.is_available", "device_count")

# --- when a function runs (the phase that ranks a finding; analysis/phases.py) -----------------
EVALUATION_NAMES = re.compile(
    r"(^|_|\.)(eval|evaluate|evaluation|valid|validate|validation|val|test|testing)(_|$|\.)|"
    r"(^|_|\.)(val|valid|eval|test)_?(step|epoch|loop|one_epoch)",
    re.I,
)
INFERENCE_NAMES = re.compile(r"(^|_|\.)(predict|prediction|infer|inference|generate|generation|serve|demo)(_|$|\.)",
                             re.I)
CHECKPOINT_NAMES = re.compile(
    r"(^|_|\.)(resume|restore)(_|$)|(load|restore|resume)_?(from_)?(checkpoint|ckpt|weights|state|pretrained)",
    re.I,
)
OPTIMIZER_NAMES = re.compile(r"optim|(^|_)opt($|_)", re.I)
TRAINER_NAMES = re.compile(r"trainer", re.I)
# hooks a framework calls once per batch: they are the training step
STEP_HOOKS = frozenset({"training_step"})
# methods and calls that reload state
RELOAD_METHODS = frozenset({"load_state_dict", "load_from_checkpoint"})

# --- the frame of a simulated crash (`devlint run`): which phase a function name suggests -------
# broader than the static ones above: a traceback names helpers (`compute_metric`, `decode`)
FRAME_PHASE_WORDS = (
    ("checkpoint", re.compile(r"save|load|checkpoint|ckpt|resume|restore", re.I)),
    ("evaluation", re.compile(r"eval|valid|test|score|metric|accuracy", re.I)),
    ("inference", re.compile(r"predict|infer|generate|sample|decode|serve|translate", re.I)),
    ("training", re.compile(r"train|fit|epoch|step|optimi[sz]e", re.I)),
)

# --- classes ----------------------------------------------------------------------------------
# modules whose classes are never an nn.Module (anything else the analysis cannot see might be one)
PLAIN_BASE_MODULES = ("builtins.", "typing.", "abc.", "enum.", "collections.", "dataclasses.", "argparse.",
                      "typing_extensions.", "json.", "threading.", "multiprocessing.", "unittest.")
# decorators that generate an __init__ binding the annotated fields in order
RECORD_DECORATORS = re.compile(r"(^|\.)(dataclass|define|frozen|mutable|attrs|s)$")
# bases whose subclasses are records (their fields are also their positions)
RECORD_BASES = frozenset({"NamedTuple"})
# a method body that reaches its object's fields by name at run time (a custom `to()` moving
# fields it finds through setattr, __dict__, dataclasses.fields, tree maps)
DYNAMIC_FIELD_ACCESS = re.compile(r"setattr\(|__dict__|\bvars\(|\bfields\(|\breplace\(|\btype\(self\)|__class__|"
                                  r"\*\*|getattr\(|_asdict|\bapply_to_collection|\bmap_structure|\btree_map")
# `dataclasses.field(default=...)` and its look-alikes: the default is the class attribute
FIELD_SPECIFIERS = frozenset({"field"})
