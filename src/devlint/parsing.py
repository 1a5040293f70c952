"""libcst's parse as devlint runs it: the same tree, without the work nothing reads.

Parsing is the floor of a check (about half of its time), and two parts of libcst's
`parse_module` are spent on nothing devlint needs:

* Every node's `__post_init__` runs `_validate()`, which checks that a node built by hand is
  well formed (spaces around keywords, parentheses that balance, parameters in order). The
  native parser builds only nodes of a grammar that already enforces all of it; libcst's own
  comment on `CSTNode.__post_init__` says validation is not needed for trees it parses. Turned
  off for the parse alone, it saves a fifth of the parse and gives the same tree
  (tests/test_parsing.py checks both over the fixture corpus, and the rejected inputs too).
* Python's cyclic collector walks the young tree again and again while it grows. A check run
  (runner._Collector) switches the collector off, and the checked file's tree, parsed before
  its analysis starts, goes straight out of the collector's sight (`gc.freeze()`): a tree has
  no cycles, and reference counting frees it. (A file parsed during an analysis, because the
  checked file imports it, is not frozen there: that would freeze the analysis' own cycles.)

Everything is restored when the parse returns: code that builds nodes itself (the fixer) is
validated as before. devlint parses on one thread at a time (the language server runs its
checks on one worker thread), so the switch is not seen by anything else.
"""

from __future__ import annotations

import gc

import libcst as cst
from libcst._nodes.base import CSTNode

__all__ = ["parse_module"]

_VALIDATING = CSTNode.__post_init__


def _trusted(self: CSTNode) -> None:
    """`__post_init__` for nodes the parser builds: no validation (see the module docstring)."""


def parse_module(source: str | bytes, *, freeze: bool = False) -> cst.Module:
    """`libcst.parse_module(source)`: the same tree, or the same exception. `freeze`: when the
    cyclic collector is off (a check run), move everything alive now out of its sight."""
    CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
    try:
        module = cst.parse_module(source)
    finally:
        CSTNode.__post_init__ = _VALIDATING  # type: ignore[method-assign]
    if freeze and not gc.isenabled():
        gc.freeze()
    return module
