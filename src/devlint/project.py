"""The ProjectIndex: module names of the analysed project mapped to files, parsed lazily.

A training script rarely holds its model: `from models import Net` must resolve to the class in
`models.py` beside it, so that `Net().to(device)` in `train.py` is analysed with the class's own
summary. Files are parsed once per process and summarised on first use; checking one file still
resolves its project imports from the files beside it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from devlint.limits import nesting_problem
from devlint.parsing import parse_module
from devlint.regular import digest, read_regular

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.shared import ClassInfo, ProjectFile, Scope

# Libraries devlint has knowledge of: their names always mean the library (its knowledge tables),
# never a project file, even when checking the library's own repository. Any other name resolves
# to a project file when one exists, as Python's own import does (the script's folder comes first
# on sys.path): a local `datasets/` package or `utils.py` shadows the library of that name.
_LIBRARY_ROOTS = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "torch_geometric", "transformers",
    "accelerate", "peft", "trl", "diffusers", "sentence_transformers", "bitsandbytes", "apex",
    "numpy", "sklearn", "matplotlib", "seaborn", "pandas", "scipy", "timm", "monai", "tiktoken",
    "lightning", "lightning_fabric", "pytorch_lightning", "tqdm", "rich", "builtins",
}) | frozenset(getattr(sys, "stdlib_module_names", ()))

MAX_PROJECT_FILE_BYTES = 2_000_000


@dataclass
class ModuleUnit:
    """One project file, parsed and (once asked for) interpreted at module level."""

    name: str  # dotted module name
    path: Path
    display: str  # path as shown in findings
    module: cst.Module
    package: str
    # what interpreting its module level gave (analysis/linkage.py): its scope (imports and
    # globals), its classes, and the files the analysis that loaded it had reached
    scope: "Scope | None" = None
    classes: dict[int, "ClassInfo"] = field(default_factory=dict)
    reached: dict[str, "ProjectFile"] | None = None
    loading: bool = False
    stamp: tuple[int, int] = (0, 0)  # (mtime_ns, size) when read, to notice an edited file
    digest: str | None = None  # of the bytes parsed (None: an editor buffer), for the result cache


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
        self.definitions: dict[int, "ProjectFile"] = {}  # id(FunctionDef/ClassDef) -> the unit defining it
        self._resolved: dict[str, tuple[ModuleUnit, str] | None] = {}

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
        if directory.name in ("tests", "test"):
            # a test suite beside the program (`tests/` next to `src/`): its imports name the
            # program's modules, as pytest's configured paths make them importable
            self.add_root(directory.parent)

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
                if candidate.is_file() or candidate in _OVERLAY:
                    return candidate
        return None

    def unit(self, dotted: str) -> ModuleUnit | None:
        if dotted in self._units:
            return self._units[dotted]
        path = self.find(dotted)
        unit = self._load(dotted, path) if path is not None else None
        self._units[dotted] = unit
        return unit

    def _load(self, dotted: str, path: Path) -> ModuleUnit | None:
        resolved = path.resolve()
        if resolved in self._by_path:
            return self._by_path[resolved]
        try:
            buffer = _OVERLAY.get(resolved)
            if buffer is not None:
                if len(buffer) > MAX_PROJECT_FILE_BYTES:
                    return None
                module, stamp = _overlay_parse(resolved, buffer), _overlay_stamp(buffer)
            else:
                stat = resolved.stat()
                if stat.st_size > MAX_PROJECT_FILE_BYTES:
                    return None
                module, stamp = parsed_module(resolved, stat), (stat.st_mtime_ns, stat.st_size)
        except Exception:
            return None  # unreadable or unparsable: its own check reports DEV000
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        read = _PARSED.get(resolved) if buffer is None else None
        unit = ModuleUnit(dotted, resolved, display_path(resolved), module, package, stamp=stamp,
                          digest=read[2] if read is not None and read[1] is module else None)
        self._by_path[resolved] = unit
        return unit

    def refresh(self) -> None:
        """Forget files that changed, appeared or went away since they were read (on disk, or in
        the editor buffers of `set_overlay`).

        An index lives for the whole process (an editor integration, a test session, `--watch`
        style callers), so a later check must not analyse a stale copy of `models.py` or miss a
        `utils.py` created since. Costs one `stat` per file read so far.
        """
        stale: set[Path] = set()
        for path, unit in self._by_path.items():
            try:
                if _current_stamp(path) != unit.stamp:
                    stale.add(path)
            except OSError:
                stale.add(path)
        self._resolved.clear()
        for unit in self._by_path.values():
            unit.display = display_path(unit.path)  # the current directory may have changed
        if stale:
            # other files' summaries may hold what the changed file defined: start over
            self._by_path.clear()
            self._units.clear()
            self.definitions.clear()
        else:
            self._units = {name: unit for name, unit in self._units.items() if unit is not None}

    def resolve(self, qual: str) -> tuple[ModuleUnit, str] | None:
        """Split `pkg.models.Net` into the project module `pkg.models` and the name `Net`."""
        if qual in self._resolved:
            return self._resolved[qual]
        parts = qual.split(".")
        found = None
        if parts[0] not in _LIBRARY_ROOTS:
            for cut in range(len(parts) - 1, 0, -1):
                unit = self.unit(".".join(parts[:cut]))
                if unit is not None:
                    found = (unit, ".".join(parts[cut:]))
                    break
        self._resolved[qual] = found
        return found


# Parsed files of this process, shared by the checks of a run and the project indexes, so a
# file is parsed once whether it is checked, imported, or both.
# path -> ((mtime, size) stamp, tree, digest of the bytes the tree was parsed from)
_PARSED: dict[Path, tuple[tuple[int, int], cst.Module, str]] = {}
_PARSED_LIMIT = 256


def parsed_module(path: Path, stat: os.stat_result | None = None) -> cst.Module:
    stat = stat or path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    cached = _PARSED.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    data = read_regular(path, MAX_PROJECT_FILE_BYTES)  # a FIFO named models.py is refused
    if nesting_problem(data.decode("utf-8", "replace")) is not None:
        # libcst's native parser would crash on it; its own check reports DEV000
        raise ValueError(f"{path} nests too deeply to parse")
    module = parse_module(data)
    _remember(path, stamp, module, digest(data))
    return module


def _stamp_if_holding(path: Path, text: str) -> tuple[tuple[int, int], str] | None:
    """The (mtime, size) stamp of the file at `path` and the digest of its bytes when it holds
    exactly `text`, else None."""
    try:
        stat = path.stat()
        encoded = text.encode("utf-8")
        if stat.st_size != len(encoded) or read_regular(path, MAX_PROJECT_FILE_BYTES) != encoded:
            return None
    except (OSError, UnicodeEncodeError, ValueError):
        return None
    return (stat.st_mtime_ns, stat.st_size), digest(encoded)


def earlier_parse(path: Path, text: str) -> cst.Module | None:
    """The parse of `path` made earlier in this process (another file imported it), when the
    file on disk (or its editor buffer) is still exactly `text`; None otherwise."""
    resolved = path.resolve()
    if _OVERLAY.get(resolved) == text:
        held = _OVERLAY_PARSED.get(resolved)
        return held[1] if held is not None and held[0] == text else None
    cached = _PARSED.get(resolved)
    if cached is None:
        return None
    holding = _stamp_if_holding(resolved, text)
    if holding is None or holding[0] != cached[0]:
        return None
    return cached[1]


def share_parse(path: Path, text: str, module: cst.Module) -> None:
    """Let the project index reuse a checked file's parse when another file imports it."""
    resolved = path.resolve()
    if _OVERLAY.get(resolved) == text:
        _OVERLAY_PARSED[resolved] = (text, module)
    else:
        holding = _stamp_if_holding(path, text)
        if holding is not None:
            _remember(resolved, holding[0], module, holding[1])


def _remember(path: Path, stamp: tuple[int, int], module: cst.Module, read: str) -> None:
    if len(_PARSED) >= _PARSED_LIMIT:
        _PARSED.pop(next(iter(_PARSED)))
    _PARSED[path] = (stamp, module, read)


# Unsaved editor buffers (the language server's open documents): real path -> text. The index
# reads a project file from here rather than from disk, so the `train.py` being checked sees the
# `models.py` being typed in another tab. Their parses are kept per path while the text holds.
_OVERLAY: dict[Path, str] = {}
_OVERLAY_PARSED: dict[Path, tuple[str, cst.Module]] = {}


def set_overlay(buffers: dict[Path, str]) -> None:
    """Make the project index read these texts (by real path) instead of the files on disk;
    an empty mapping reads everything from disk again. Indexes notice the change on refresh."""
    _OVERLAY.clear()
    _OVERLAY.update(buffers)
    for path in [p for p, (text, _) in _OVERLAY_PARSED.items() if _OVERLAY.get(p) != text]:
        del _OVERLAY_PARSED[path]


def _overlay_stamp(text: str) -> tuple[int, int]:
    return (-1, hash(text))  # never an (mtime, size) pair: a buffer and its file differ in stamp


def _current_stamp(path: Path) -> tuple[int, int]:
    buffer = _OVERLAY.get(path)
    if buffer is not None:
        return _overlay_stamp(buffer)
    stat = path.stat()
    return (stat.st_mtime_ns, stat.st_size)


def _overlay_parse(path: Path, text: str) -> cst.Module:
    cached = _OVERLAY_PARSED.get(path)
    if cached is not None and cached[0] == text:
        return cached[1]
    if nesting_problem(text) is not None:
        raise ValueError(f"{path} nests too deeply to parse")
    module = parse_module(text)
    _OVERLAY_PARSED[path] = (text, module)
    return module


_SHARED: dict[tuple[Path, ...], ProjectIndex] = {}


def index_for(path: str) -> ProjectIndex:
    """A per-process index for the project around `path` (shared by the files of one run)."""
    directory = Path(path).resolve().parent if path else Path.cwd()
    # the index also searches the folder devlint runs from: an index made from another folder
    # resolves other modules (a `src/` layout found from the project root), so it is not shared
    key = (_package_root(directory), directory, Path.cwd())
    index = _SHARED.get(key)
    if index is None:
        index = ProjectIndex()
        index.add_file(Path(path) if path else Path.cwd() / "x.py")
        index.add_root(Path.cwd())
        _SHARED[key] = index
    else:
        index.refresh()
    return index
