"""The byte prefilter: which files cannot produce a finding, decided without parsing them.

Most files of a large tree (tokenizers, configuration, string utilities, tests of pure Python
code) never touch a device. Parsing them with libcst only to find nothing costs as much as
parsing the files that matter, so `engine.check_text` asks `needs_analysis` first and, for a
text with no device signal, only CPython's compile runs (devlint.validity: it runs on every
file, since DEV000 is the interpreter's verdict). Being part of the engine, every caller gets it (the CLI, the fixer, editors), and
every fixture with an expected finding proves that it does not skip what matters.

Why skipping is safe
--------------------
Library mode is the one exception: a layer (a text with `def forward(`) runs on its caller's
device, so a plain tensor attribute or a module kept in a plain list inside it crashes with no
device word in the file (`knowledge.signals.DEFINES_LAYER`). Such a text is always analysed
while library mode is on. For every other text, every event a rule can report on needs something
on a device or a CUDA-specific call *in the checked text itself*:

* a Meet / DeviceMeet / HostUse needs a value placed on a device: a move (`.to(`, `.cuda(`,
  `.cpu(`, a configured move helper), a `device=` / `device_map=` argument, `torch.device(...)`,
  `set_default_device`, a quantised `from_pretrained` (`load_in_8bit`, `quantization_config`),
  a device string in an f-string (`f"cuda:{rank}"`), an accelerator / Fabric / Trainer / a
  LightningModule that places what it is given, or a configured device helper;
* a Move is a `.to` / `.cuda` / `.cpu` call or a configured move helper;
* the CUDA-specific events (cuda, cuda_query, cuda_flag, cpu_fallback, empty_cache, env, the
  checkpoint loads whose rule needs a CPU fallback, DataParallel, DataLoader workers) all need
  `cuda`, `gpu`, `cpu`, `device`, `DataParallel`, `DataLoader` or `empty_cache` in the text.

Values from other project files cannot bring a device in either: the interpreter reads other
files only for a text that matches its own `places_devices` pattern (`knowledge.signals.PLACES_DEVICES`, which
the signals below include; tests/test_prefilter.py checks that they keep doing so, and a layer,
which is analysed anyway), except for `from x import *`, which is a signal here. So the
standalone check of a file without signals and without a layer reports nothing but a parse error.

A file without signals that is *imported* by a file with signals (a `models.py` with no device
code, used by `train.py`) is still analysed, as part of its importer: what goes wrong in
`models.py` because `train.py` moved the model is reported by `train.py`'s check, located in
`models.py`. Its own standalone check, the only thing skipped, could not report anything (see
above), so the skip does not depend on who imports the file and needs no import graph.

The signals are deliberately broad (any `device`, `cuda`, `cpu` or `gpu` in any case, comments
included): a false "has signals" costs one parse, a false "no signals" would hide a bug.
"""

from __future__ import annotations

import ast
import warnings
from typing import Iterable

from devlint.knowledge.signals import DEFINES_LAYER, SIGNALS

__all__ = ["SIGNALS", "has_device_signal", "needs_analysis", "compiles"]



def has_device_signal(text: str, helpers: Iterable[str] = ()) -> bool:
    """Whether `text` mentions anything that can put a value on a device or talk to CUDA.

    `helpers` are the configured move / device helpers (`myproject.utils.to_device`): a call to
    one moves its argument, so its last name counts as a signal too."""
    if SIGNALS.search(text) is not None:
        return True
    for helper in helpers:
        name = helper.rsplit(".", 1)[-1]
        if name and name in text:
            return True
    return False


def compiles(text: str, path: str = "<unknown>") -> bool:
    """Whether CPython's own parser accepts `text` (no code generation, no execution).

    The parse alone; the engine's DEV000 comes from devlint.validity, which compiles too."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences etc. are not our business
            compile(text, path, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


def needs_analysis(text: str, helpers: Iterable[str] = (), library_mode: bool = True) -> bool:
    """False when the file cannot produce a finding other than DEV000 (see the module docstring).

    With `library_mode` (the setting of that name), a layer is analysed whatever its words."""
    return has_device_signal(text, helpers) or (library_mode and DEFINES_LAYER.search(text) is not None)
