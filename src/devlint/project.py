"""The ProjectIndex: module names of the analysed project mapped to files, parsed lazily.

A training script rarely holds its model: `from models import Net` must resolve to the class in
`models.py` beside it, so that `Net().to(device)` in `train.py` is analysed with the class's own
summary. Files are parsed once per process and summarised on first use; checking one file still
resolves its project imports from the files beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.interp import Interpreter
    from devlint.analysis.values import Value

# modules that are libraries, never project files, even if a file of that name exists
_LIBRARY_ROOTS = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "transformers", "accelerate", "numpy",
    "sklearn", "matplotlib", "timm", "lightning", "pytorch_lightning", "datasets", "tqdm",
    "os", "sys", "math", "json", "typing", "collections", "functools", "itertools", "random",
    "argparse", "logging", "pathlib", "time", "copy", "re", "dataclasses", "pandas", "scipy",
    "PIL", "cv2", "einops", "wandb", "tensorboard", "yaml", "abc", "enum", "warnings",
})

MAX_PROJECT_FILE_BYTES = 2_000_000


@dataclass
class ModuleUnit:
    """One project file, parsed and (once asked for) interpreted at module level."""

    name: str  # dotted module name
    path: Path
    display: str  # path as shown in findings
    module: cst.Module
    package: str
    interpreter: "Interpreter | None" = None
    env: dict[str, "Value"] = field(default_factory=dict)
    loading: bool = False


def _package_root(directory: Path) -> Path:
    """The folder above the top-most package that holds `directory`."""
    root = directory
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    return root


def display_path(path: Path) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith("..") else rel


class ProjectIndex:
    """Module name -> file for the project around the checked files."""

    def __init__(self, roots: list[Path] | None = None) -> None:
        self.roots: list[Path] = []
        for root in roots or []:
            self.add_root(root)
        self._units: dict[str, ModuleUnit | None] = {}
        self._by_path: dict[Path, ModuleUnit] = {}
        self.home: dict[int, ModuleUnit] = {}  # id(FunctionDef/ClassDef) -> its unit

    def add_root(self, root: Path) -> None:
        root = root.resolve()
        for candidate in (root, root / "src"):
            if candidate.is_dir() and candidate not in self.roots:
                self.roots.append(candidate)

    def add_file(self, path: Path) -> None:
        """Make the project around a checked file searchable (its folder and package root)."""
        directory = path.resolve().parent
        self.add_root(_package_root(directory))
        self.add_root(directory)

    def module_name(self, path: Path) -> tuple[str, str]:
        """(dotted module name, package) of a file under one of the roots."""
        resolved = path.resolve()
        root = _package_root(resolved.parent)
        rel = resolved.relative_to(root).with_suffix("")
        parts = list(rel.parts)
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
            return ".".join(parts), ".".join(parts)
        return ".".join(parts), ".".join(parts[:-1])

    def find(self, dotted: str) -> Path | None:
        parts = dotted.split(".")
        if not parts or parts[0] in _LIBRARY_ROOTS:
            return None
        for root in self.roots:
            base = root.joinpath(*parts)
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    return candidate
        return None

    def unit(self, dotted: str) -> ModuleUnit | None:
        if dotted in self._units:
            return self._units[dotted]
        path = self.find(dotted)
        unit = self._load(dotted, path) if path is not None else None
        self._units[dotted] = unit
        return unit

    def unit_for_path(self, path: Path) -> ModuleUnit | None:
        return self._by_path.get(path.resolve())

    def _load(self, dotted: str, path: Path) -> ModuleUnit | None:
        resolved = path.resolve()
        if resolved in self._by_path:
            return self._by_path[resolved]
        try:
            if resolved.stat().st_size > MAX_PROJECT_FILE_BYTES:
                return None
            data = resolved.read_bytes()
            module = cst.parse_module(data)
        except Exception:
            return None  # unreadable or unparsable: its own check reports DEV000
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        unit = ModuleUnit(dotted, resolved, display_path(resolved), module, package)
        self._by_path[resolved] = unit
        return unit

    def resolve(self, qual: str) -> tuple[ModuleUnit, str] | None:
        """Split `pkg.models.Net` into the project module `pkg.models` and the name `Net`."""
        parts = qual.split(".")
        if parts[0] in _LIBRARY_ROOTS:
            return None
        for cut in range(len(parts) - 1, 0, -1):
            unit = self.unit(".".join(parts[:cut]))
            if unit is not None:
                return unit, ".".join(parts[cut:])
        return None


_SHARED: dict[tuple[Path, ...], ProjectIndex] = {}


def index_for(path: str) -> ProjectIndex:
    """A per-process index for the project around `path` (shared by the files of one run)."""
    directory = Path(path).resolve().parent if path else Path.cwd()
    key = (_package_root(directory), directory)
    index = _SHARED.get(key)
    if index is None:
        index = ProjectIndex()
        index.add_file(Path(path) if path else Path.cwd() / "x.py")
        index.add_root(Path.cwd())
        _SHARED[key] = index
    return index
