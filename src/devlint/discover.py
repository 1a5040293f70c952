"""Turning the paths on the command line into the sorted list of files to check.

Folders are walked for `*.py` and `*.ipynb`, skipping what is never the user's own code
(`.git`, virtualenvs, `__pycache__`, build output, `node_modules`), what `.gitignore` files
ignore (nested ones included, with git's precedence: a deeper file overrides a shallower one),
and the configuration's `exclude` patterns. A file named on the command line is checked even
when excluded (the user asked for it), except under `--force-exclude`. Symlinked folders are not followed (as git does not), so a symlink loop
cannot hang the walk. The result is sorted, so two runs on the same tree report the same thing.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from devlint.regular import read_regular
from devlint.source import is_source_path

if TYPE_CHECKING:  # pathspec is imported where a folder is walked: checking one file needs none of it
    import pathspec

__all__ = ["DiscoveredFile", "PathNotFoundError", "discover", "SKIPPED_DIR_NAMES"]

SKIPPED_DIR_NAMES = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        "build",
        "dist",
        "node_modules",
        ".devlint_cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".ipynb_checkpoints",
        ".eggs",
    }
)


class PathNotFoundError(Exception):
    """A path named on the command line does not exist (a usage error: exit 2)."""


@dataclass(frozen=True, order=True)
class DiscoveredFile:
    """A file to check: `display` as the user would name it, `path` usable to open it."""

    display: str
    path: str = field(compare=False)
    explicit: bool = field(default=False, compare=False)


@dataclass
class _IgnoreLayer:
    base: str  # absolute folder the patterns are relative to
    spec: pathspec.GitIgnoreSpec


MAX_GITIGNORE_BYTES = 10_000_000


def _read_gitignore(folder: str) -> _IgnoreLayer | None:
    gitignore = os.path.join(folder, ".gitignore")
    try:
        # a FIFO or a device named .gitignore is not waited on, nor read without end
        lines = read_regular(gitignore, MAX_GITIGNORE_BYTES).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return _IgnoreLayer(folder, spec) if spec.patterns else None


def _ignored(layers: Sequence[_IgnoreLayer], abs_path: str, is_dir: bool) -> bool:
    """Git's rule: the deepest .gitignore with a matching pattern decides."""
    for layer in reversed(layers):
        rel = os.path.relpath(abs_path, layer.base)
        if rel.startswith(".."):
            continue
        rel = rel.replace(os.sep, "/") + ("/" if is_dir else "")
        result = layer.spec.check_file(rel)
        if result.include is not None:
            return bool(result.include)
    return False


def _git_root(folder: str) -> str | None:
    current = folder
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _ancestor_layers(folder: str) -> list[_IgnoreLayer]:
    """.gitignore files of the folders above `folder`, up to its git repository's root."""
    root = _git_root(folder)
    if root is None or root == folder:
        return []
    chain = []
    current = os.path.dirname(folder)
    while True:
        chain.append(current)
        parent = os.path.dirname(current)
        if current == root or parent == current:
            break
        current = parent
    layers = []
    for ancestor in reversed(chain):
        layer = _read_gitignore(ancestor)
        if layer is not None:
            layers.append(layer)
    return layers


def _is_virtualenv(abs_dir: str) -> bool:
    return os.path.isfile(os.path.join(abs_dir, "pyvenv.cfg"))


def _is_folder(path: str) -> bool:
    """Whether `path` leads to a folder (False when it leads nowhere)."""
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _join_display(base: str, rel: str) -> str:
    return os.path.normpath(os.path.join(base, rel))


def discover(
    paths: Iterable[str],
    *,
    exclude: Sequence[str] = (),
    exclude_root: str | os.PathLike[str] | None = None,
    respect_gitignore: bool = True,
    is_excluded: Callable[[str, bool], bool] | None = None,
    force_exclude: Callable[[str], bool] | None = None,
    unreadable: Callable[[str, str], None] | None = None,
) -> list[DiscoveredFile]:
    """Every file to check under `paths`, sorted by display path, each file once.

    `exclude` holds gitignore-style patterns relative to `exclude_root` (the folder of the
    configuration file; the current directory when there is none); `is_excluded(abs_path,
    is_dir)`, when given, decides instead (each file's nearest configuration). A path named
    here is checked even when excluded, unless `force_exclude(abs_path)` says it is excluded
    (`--force-exclude`, for pre-commit, which names every staged file). A folder that cannot
    be listed is passed to `unreadable(display, reason)`, so that it is reported rather than
    silently skipped. Raises PathNotFoundError for a path that does not exist.
    """
    paths = list(paths)
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise PathNotFoundError(", ".join(missing))
    exclude_base = os.path.abspath(exclude_root if exclude_root is not None else os.getcwd())
    compiled: list[pathspec.GitIgnoreSpec] = []

    def excluded(abs_path: str, is_dir: bool) -> bool:
        if is_excluded is not None:
            return is_excluded(abs_path, is_dir)
        if not exclude:
            return False
        if not compiled:
            import pathspec

            compiled.append(pathspec.GitIgnoreSpec.from_lines(list(exclude)))
        exclude_spec = compiled[0]
        rel = os.path.relpath(abs_path, exclude_base)
        if rel.startswith(".."):
            # outside the project root: match the path's own name parts only
            rel = os.path.basename(abs_path)
        rel = rel.replace(os.sep, "/") + ("/" if is_dir else "")
        return exclude_spec.match_file(rel)

    found: dict[str, DiscoveredFile] = {}

    def add(display: str, abs_path: str, explicit: bool) -> None:
        key = os.path.realpath(abs_path)
        if key not in found or (explicit and not found[key].explicit):
            found[key] = DiscoveredFile(display, abs_path, explicit)

    for named in paths:
        abs_named = os.path.abspath(named)
        if force_exclude is not None and force_exclude(abs_named):
            continue
        if not os.path.isdir(named):
            add(named, abs_named, explicit=True)
            continue
        layers = _ancestor_layers(abs_named) if respect_gitignore else []
        _walk(named, abs_named, layers, respect_gitignore, excluded, add, unreadable)

    return sorted(found.values())


def _walk(display_root, abs_root, base_layers, respect_gitignore, excluded, add, unreadable=None) -> None:
    # an explicit stack instead of recursion: deep trees cannot overflow the interpreter stack
    stack: list[tuple[str, str, list[_IgnoreLayer]]] = [(display_root, abs_root, base_layers)]
    while stack:
        display_dir, abs_dir, layers = stack.pop()
        if respect_gitignore:
            own = _read_gitignore(abs_dir)
            if own is not None:
                layers = [*layers, own]
        try:
            with os.scandir(abs_dir) as entries:
                listing = sorted(entries, key=lambda e: e.name)
        except OSError as exc:  # nothing in it can be listed: say so, a silent pass would lie
            if unreadable is not None:
                unreadable(display_dir, (exc.strerror or str(exc)).lower())
            continue
        subdirs = []
        for entry in listing:
            abs_path = os.path.join(abs_dir, entry.name)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                # a link that leads nowhere (dangling, a loop), a FIFO or a device, a file that
                # cannot be examined: a *.py name is still checked, so that reading it reports
                # why (DEV000); only a folder (a linked one is not walked) is not a file
                is_file = entry.is_file(follow_symlinks=True) or (not is_dir and not _is_folder(abs_path))
            except OSError:
                is_dir, is_file = False, True
            if is_dir:
                if entry.name in SKIPPED_DIR_NAMES or _is_virtualenv(abs_path):
                    continue
                if respect_gitignore and _ignored(layers, abs_path, True):
                    continue
                if excluded(abs_path, True):
                    continue
                subdirs.append((_join_display(display_dir, entry.name), abs_path, layers))
            elif is_file and is_source_path(entry.name):
                if respect_gitignore and _ignored(layers, abs_path, False):
                    continue
                if excluded(abs_path, False):
                    continue
                add(_join_display(display_dir, entry.name), abs_path, False)
        stack.extend(reversed(subdirs))

