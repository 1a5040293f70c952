"""Modules loaded on first use.

A run whose every file comes from the result cache reports without parsing anything; importing
libcst and the interpreter would be most of its time (about 0.4 s of 0.5 s). Rule modules are
imported on every run (their `rule` objects drive selection), so what they need only while
checking is bound through `lazy_import`, the recipe of the importlib documentation.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_import"]


def lazy_import(name: str) -> ModuleType:
    """`name`, executed on its first attribute access (the module itself when already loaded)."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
