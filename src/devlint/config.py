"""Project settings: `[tool.devlint]` in `pyproject.toml`, or the top-level table of `devlint.toml`.

The nearest file wins, searched upward from the first checked path (a `devlint.toml` before a
`pyproject.toml` in the same folder; a `pyproject.toml` without `[tool.devlint]` is passed
over). Every problem is a ConfigError whose message names the file and the key, because a
misspelt setting that is silently ignored is worse than a run that stops (exit 2).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devlint.selection import Layer, SelectionError, expand, parse_codes, validate

if TYPE_CHECKING:
    import pathspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Config", "ConfigError", "find_config", "load_config", "FAIL_ON_CHOICES"]

FAIL_ON_CHOICES = ("error", "warning", "info", "never")
CONFIG_FILE = "devlint.toml"
PYPROJECT = "pyproject.toml"

_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "device-helpers", "move-helpers",
              "library-mode-exclude")
_KNOWN_KEYS = frozenset(_LIST_KEYS + ("per-file-ignores", "fail-on", "library-mode"))


class ConfigError(Exception):
    """An unreadable or invalid configuration (exit 2); the message names file and key."""


@dataclass(frozen=True)
class Config:
    """Validated settings. `root` is the folder relative patterns are resolved against."""

    source: Path | None = None
    root: Path = field(default_factory=Path.cwd)
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fail_on: str | None = None
    device_helpers: tuple[str, ...] = ()
    move_helpers: tuple[str, ...] = ()
    # library mode: code no call reaches runs on its caller's device (analysis/calls.py);
    # `library_mode_exclude` turns it off for the files its globs match
    library_mode: bool = True
    library_mode_exclude: tuple[str, ...] = ()

    def layer(self) -> Layer:
        """These settings as one selection layer (validated already)."""
        return Layer(
            select=self.select,
            extend_select=self.extend_select,
            ignore=self.ignore,
            origin=_origin(Path(str(self.source).replace("{", "{{").replace("}", "}}")), "{key}")
            if self.source
            else "{key}",
        )

    def library_mode_for(self, path: str) -> bool:
        """Whether library mode is on for `path` (a display or absolute path)."""
        if not self.library_mode:
            return False
        return not any(_matches(pattern, path, self.root) for pattern in self.library_mode_exclude)

    def ignored_for(self, path: str) -> frozenset[str]:
        """Codes `per-file-ignores` turns off for `path` (a display or absolute path)."""
        if not self.per_file_ignores:
            return frozenset()
        codes: set[str] = set()
        for pattern, selectors in self.per_file_ignores:
            if _matches(pattern, path, self.root):
                codes |= expand(selectors)
        return frozenset(codes)


def _matches(pattern: str, path: str, root: Path) -> bool:
    """A gitignore-style glob of the configuration matches the file (a bare name anywhere)."""
    rel = _relative_posix(path, root)
    spec = _compiled(pattern)
    return spec.match_file(rel) or ("/" not in pattern.rstrip("/") and spec.match_file(rel.rsplit("/", 1)[-1]))


@lru_cache(maxsize=256)
def _compiled(pattern: str) -> pathspec.GitIgnoreSpec:
    import pathspec  # only for per-file-ignores: a plain run need not import it

    return pathspec.GitIgnoreSpec.from_lines([pattern])


def _relative_posix(path: str, root: Path) -> str:
    abs_path = os.path.abspath(path)
    rel = os.path.relpath(abs_path, os.path.abspath(root))
    if rel.startswith(".."):
        return Path(path).as_posix()
    return rel.replace(os.sep, "/")


def _origin(source: Path, key: str) -> str:
    if source.name == PYPROJECT:
        return f"{source}: [tool.devlint] {key}"
    return f"{source}: {key}"


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: nested too deeply") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _section(path: Path, document: dict[str, Any]) -> dict[str, Any] | None:
    """The devlint table of a parsed file, or None when a pyproject.toml has none."""
    if path.name != PYPROJECT:
        return document
    tool = document.get("tool")
    if not isinstance(tool, dict) or "devlint" not in tool:
        return None
    section = tool["devlint"]
    if not isinstance(section, dict):
        raise ConfigError(f"{path}: [tool.devlint] must be a table")
    return section


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest devlint.toml, or pyproject.toml with [tool.devlint], at or above `start`."""
    folder = Path(start if start is not None else os.getcwd()).resolve()
    if not folder.is_dir():
        folder = folder.parent
    for candidate_dir in (folder, *folder.parents):
        own = candidate_dir / CONFIG_FILE
        if _is_file(own):
            return own
        pyproject = candidate_dir / PYPROJECT
        if _is_file(pyproject) and _section(pyproject, _read_toml(pyproject)) is not None:
            return pyproject
    return None


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; False when its folder cannot be searched (a folder the user
    cannot enter: its files cannot be read either, and each is reported as DEV000 when checked,
    so the lookup goes on upwards instead of ending the run)."""
    try:
        return path.is_file()
    except OSError:
        return False


def load_config(
    config_file: str | os.PathLike[str] | None = None,
    *,
    start: str | os.PathLike[str] | None = None,
) -> Config:
    """Settings from `config_file`, else from the nearest config file above `start`, else defaults."""
    path = Path(config_file) if config_file is not None else find_config(start)
    if path is None:
        return Config(root=Path.cwd())
    section = _section(path, _read_toml(path))
    return parse_config(section or {}, path)


def parse_config(section: dict[str, Any], path: Path) -> Config:
    """Validate one devlint table; `path` is named in every error."""
    unknown = sorted(set(section) - _KNOWN_KEYS)
    if unknown:
        key = unknown[0]
        hint = ""
        if key.replace("_", "-") in _KNOWN_KEYS:
            hint = f" (did you mean `{key.replace('_', '-')}`?)"
        raise ConfigError(f"{_origin(path, key)}: unknown setting{hint}; known: {', '.join(sorted(_KNOWN_KEYS))}")

    def string_list(key: str) -> tuple[str, ...] | None:
        if key not in section:
            return None
        value = section[key]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{_origin(path, key)}: must be a list of strings, got {_describe(value)}")
        return tuple(value)

    def codes(key: str) -> tuple[str, ...] | None:
        value = string_list(key)
        if value is None:
            return None
        parsed = parse_codes(value)
        try:
            validate(parsed, _origin(path, key))
        except SelectionError as exc:
            raise ConfigError(str(exc)) from None
        return parsed

    select = codes("select")
    extend_select = codes("extend-select") or ()
    ignore = codes("ignore") or ()
    exclude = string_list("exclude") or ()

    per_file: list[tuple[str, tuple[str, ...]]] = []
    if "per-file-ignores" in section:
        table = section["per-file-ignores"]
        if not isinstance(table, dict):
            raise ConfigError(
                f"{_origin(path, 'per-file-ignores')}: must be a table of glob = [codes], got {_describe(table)}"
            )
        for pattern, value in table.items():
            key = f"per-file-ignores.{pattern!r}"
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise ConfigError(f"{_origin(path, key)}: must be a list of codes, got {_describe(value)}")
            parsed = parse_codes(value)
            try:
                validate(parsed, _origin(path, key))
            except SelectionError as exc:
                raise ConfigError(str(exc)) from None
            per_file.append((pattern, parsed))

    fail_on = None
    if "fail-on" in section:
        fail_on = section["fail-on"]
        if not isinstance(fail_on, str) or fail_on.lower() not in FAIL_ON_CHOICES:
            raise ConfigError(
                f"{_origin(path, 'fail-on')}: must be one of {', '.join(FAIL_ON_CHOICES)}, got {fail_on!r}"
            )
        fail_on = fail_on.lower()

    library_mode = True
    if "library-mode" in section:
        library_mode = section["library-mode"]
        if not isinstance(library_mode, bool):
            raise ConfigError(f"{_origin(path, 'library-mode')}: must be true or false, got {_describe(library_mode)}")
    library_mode_exclude = string_list("library-mode-exclude") or ()

    helpers: dict[str, tuple[str, ...]] = {}
    for key in ("device-helpers", "move-helpers"):
        names = string_list(key) or ()
        for name in names:
            if not name or not all(part.isidentifier() for part in name.split(".")):
                raise ConfigError(f"{_origin(path, key)}: {name!r} is not a dotted name such as `utils.get_device`")
        helpers[key] = names

    return Config(
        source=path,
        root=path.resolve().parent,
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        exclude=exclude,
        per_file_ignores=tuple(per_file),
        fail_on=fail_on,
        device_helpers=helpers["device-helpers"],
        move_helpers=helpers["move-helpers"],
        library_mode=library_mode,
        library_mode_exclude=library_mode_exclude,
    )


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class CheckSettings:
    """Everything a file check depends on besides the file (what a cache key would hash)."""

    enabled: frozenset[str]
    config: Config = field(default_factory=Config)
