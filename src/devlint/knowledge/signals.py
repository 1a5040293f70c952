"""Byte-level signals: the words that tell, without parsing, whether a text can matter.

Read by the prefilter (devlint/prefilter.py: may this file produce a finding at all?) and by
the analysis (does this file put something on a device itself, so that other project files
must be read to follow it?). Every `PLACES_DEVICES` alternative is also a prefilter signal
(tests/test_prefilter.py checks it).
"""

from __future__ import annotations

import re

# Case-insensitive words: device / cuda / gpu / cpu cover `device=`, `device_map`, `torch.device`,
# `set_default_device`, `.device`, `.cuda(`, `torch.cuda.*`, CUDA_VISIBLE_DEVICES, `"cuda:0"`,
# `args.gpu`, `.cpu()`, `map_location="cpu"`; accelerat / lightning / fabric the frameworks that
# place models and batches themselves.
_WORDS = r"(?i:device|cuda|gpu|cpu|mps|xpu|accelerat|lightning|fabric)"
_LITERALS = (
    r"\.to\b",  # .to( and getattr-free references such as `tensor.to`
    r"DataLoader", r"Dataset", r"datasets", r"\.numpy\(",
    r"torch\.load", r"load_url", r"load_state_dict_from_url", r"map_location", r"\bhub\b",
    r"Adagrad", r"from_pretrained", r"load_in_\d+bit", r"quantization_config",
    r"empty_cache", r"DataParallel", r"Trainer", r"non_blocking", r"pin_memory",
    r"import\s*\*",
)
SIGNALS = re.compile("|".join((_WORDS,) + _LITERALS))

# a text that puts something on a device itself (or hands data to a loader, reads a checkpoint)
PLACES_DEVICES = re.compile(r"\.cuda\(|\.to\(|device_map|[\"']cuda|torch\.device\(|set_device|"
                            r"DataLoader|accelerator|\.numpy\(|torch\.load|map_location|CUDA_VISIBLE")

# a text that defines a layer (`def forward(`): library mode runs its forward on the caller's
# device, so it can report with no device word of its own, and the layers it is built from
# (other project files) must be read to follow it
DEFINES_LAYER = re.compile(r"\bdef\s+forward\s*\(")
