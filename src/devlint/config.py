"""Project settings: `[tool.devlint]` in `pyproject.toml`, or the top-level table of `devlint.toml`.

The nearest file wins, searched upward from the first checked path (a `devlint.toml` before a
`pyproject.toml` in the same folder; a `pyproject.toml` without `[tool.devlint]` is passed
over). Every problem is a ConfigError whose message names the file and the key, because a
misspelt setting that is silently ignored is worse than a run that stops (exit 2).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from devlint.selection import Layer, SelectionError, expand, parse_codes, validate

if TYPE_CHECKING:
    import pathspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

__all__ = ["Config", "ConfigError", "find_config", "load_config", "defaults", "parse_overrides", "FAIL_ON_CHOICES"]

FAIL_ON_CHOICES = ("error", "warning", "info", "never")
CONFIG_FILE = "devlint.toml"
PYPROJECT = "pyproject.toml"

_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "device-helpers", "move-helpers",
              "library-mode-exclude", "extend-exclude", "include", "fixable", "unfixable", "extend-safe-fixes",
              "extend-unsafe-fixes")
_KNOWN_KEYS = frozenset(_LIST_KEYS + ("per-file-ignores", "fail-on", "library-mode", "extend", "target-version",
                                      "extend-per-file-ignores", "respect-gitignore", "force-exclude", "cache-dir",
                                      "required-version", "rule-url-base"))
# a run's own behaviour rather than a file's: read from the configuration of the folder devlint
# runs in (or --config), as Ruff reads them from its root configuration
PROJECT_KEYS = ("respect-gitignore", "force-exclude", "cache-dir", "rule-url-base")


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
    # `target-version = "py312"`: the Python the code is written for, when newer than the one
    # that runs devlint (whose compiler otherwise decides what is a syntax error)
    target_version: tuple[int, int] | None = None
    # `extend`: the files this one extends, nearest first, and their selections (applied first)
    extends: tuple[Path, ...] = ()
    inherited_layers: tuple[Layer, ...] = ()
    # patterns inherited through `extend` stay relative to the file that wrote them
    exclude_root: Path | None = None
    per_file_root: Path | None = None
    extend_exclude: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (folder, patterns)
    extend_per_file_ignores: tuple[tuple[str, str, tuple[str, ...]], ...] = ()  # (folder, glob, codes)
    include: tuple[str, ...] = ()
    include_root: Path | None = None
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None
    cache_dir: Path | None = None
    required_version: str | None = None
    rule_url_base: str | None = None
    # fix policy (devlint.fix_policy): which codes' fixes are offered, and as which safety
    fixable: tuple[str, ...] | None = None
    unfixable: tuple[str, ...] = ()
    extend_safe_fixes: tuple[str, ...] = ()
    extend_unsafe_fixes: tuple[str, ...] = ()
    ignore_noqa: bool = False  # --ignore-noqa: suppression comments silence nothing
    # which file set each key (for --show-settings): key -> file, or "--config" for an override
    origins: tuple[tuple[str, str], ...] = ()

    def layers(self) -> tuple[Layer, ...]:
        """The selections of the files this one extends, then its own."""
        return (*self.inherited_layers, self.layer())

    def exclude_groups(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(folder, patterns) of `exclude` and every `extend-exclude`, each relative to its folder."""
        own = ((str(self.exclude_root or self.root), self.exclude),) if self.exclude else ()
        return own + self.extend_exclude

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
        if not self.per_file_ignores and not self.extend_per_file_ignores:
            return frozenset()
        codes: set[str] = set()
        for pattern, selectors in self.per_file_ignores:
            if _matches(pattern, path, self.per_file_root or self.root):
                codes |= expand(selectors)
        for folder, pattern, selectors in self.extend_per_file_ignores:
            if _matches(pattern, path, Path(folder)):
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
    overrides: dict[str, Any] | None = None,
) -> Config:
    """Settings from `config_file`, else from the nearest config file above `start`, else
    defaults; `overrides` (`--config KEY=VALUE`) replace the file's keys."""
    path = Path(config_file) if config_file is not None else find_config(start)
    if path is None:
        return defaults(overrides)
    return _load(path, overrides or {}, ())


def defaults(overrides: dict[str, Any] | None = None) -> Config:
    """The settings without a configuration file (`--isolated`, or none found): the defaults,
    under `--config KEY=VALUE` overrides when given."""
    if overrides:
        return replace(parse_config(overrides, Path(OVERRIDE_ORIGIN)), source=None, root=Path.cwd())
    return Config(root=Path.cwd())


OVERRIDE_ORIGIN = "--config"


def _load(path: Path, overrides: dict[str, Any], chain: tuple[Path, ...]) -> Config:
    """One file's settings over those of the file it extends (each read once per chain)."""
    real = path.resolve()
    if real in chain:
        cycle = " -> ".join(str(p) for p in (*chain, real))
        raise ConfigError(f"{chain[-1]}: extend: the files extend each other in a circle ({cycle})")
    section = dict(_section(path, _read_toml(path)) or {})
    base: Config | None = None
    if "extend" in section:
        target = section["extend"]
        if not isinstance(target, str) or not target:
            raise ConfigError(f"{_origin(path, 'extend')}: must be the path of a configuration file, got "
                              f"{_describe(target)}")
        base_path = Path(os.path.expanduser(target))
        if not base_path.is_absolute():
            base_path = Path(os.path.normpath(real.parent / base_path))
        if not base_path.is_file():
            raise ConfigError(f"{_origin(path, 'extend')}: {target!r} is not a file (looked for {base_path})")
        base = _load(base_path, {}, (*chain, real))
    if not overrides:
        return parse_config(section, path, base=base)
    # an override replaces the file's value of its key, as Ruff's `--config KEY=VALUE`; checked
    # alone first, so that an error in it names --config rather than the file
    parse_config(overrides, Path(OVERRIDE_ORIGIN))
    config = parse_config({**section, **overrides}, path, base=base)
    origins = dict(config.origins)
    origins.update((key, OVERRIDE_ORIGIN) for key in overrides)
    return replace(config, origins=tuple(origins.items()))


def parse_config(section: dict[str, Any], path: Path, base: Config | None = None) -> Config:
    """Validate one devlint table; `path` is named in every error. Keys the table does not set
    come from `base` (the file it extends), whose selection is applied before this one's."""
    unknown = sorted(set(section) - _KNOWN_KEYS)
    if unknown:
        key = unknown[0]
        hint = ""
        if key.replace("_", "-") in _KNOWN_KEYS:
            hint = f" (did you mean `{key.replace('_', '-')}`?)"
        raise ConfigError(f"{_origin(path, key)}: unknown setting{hint}; known: {', '.join(sorted(_KNOWN_KEYS))}")
    if path.name == OVERRIDE_ORIGIN and "extend" in section:
        raise ConfigError(f"{OVERRIDE_ORIGIN}: extend: name the file with `--config FILE` instead")

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

    def flag(key: str) -> bool | None:
        if key not in section:
            return None
        value = section[key]
        if not isinstance(value, bool):
            raise ConfigError(f"{_origin(path, key)}: must be true or false, got {_describe(value)}")
        return value

    def text(key: str) -> str | None:
        if key not in section:
            return None
        value = section[key]
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{_origin(path, key)}: must be a string, got {_describe(value)}")
        return value

    def per_file_table(name: str) -> list[tuple[str, tuple[str, ...]]]:
        found: list[tuple[str, tuple[str, ...]]] = []
        if name not in section:
            return found
        table = section[name]
        if not isinstance(table, dict):
            raise ConfigError(f"{_origin(path, name)}: must be a table of glob = [codes], got {_describe(table)}")
        for pattern, value in table.items():
            key = f"{name}.{pattern!r}"
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise ConfigError(f"{_origin(path, key)}: must be a list of codes, got {_describe(value)}")
            parsed = parse_codes(value)
            try:
                validate(parsed, _origin(path, key))
            except SelectionError as exc:
                raise ConfigError(str(exc)) from None
            found.append((pattern, parsed))
        return found

    required = text("required-version")
    if required is not None:
        check_required_version(required, _origin(path, "required-version"))
    folder = path.resolve().parent if path.name != OVERRIDE_ORIGIN else Path.cwd()
    base = base or Config(root=folder)
    select = codes("select")
    extend_select = codes("extend-select") or ()
    ignore = codes("ignore") or ()
    exclude = string_list("exclude")
    per_file = per_file_table("per-file-ignores") if "per-file-ignores" in section else None
    extend_per_file = tuple((str(folder), pattern, found) for pattern, found in
                            per_file_table("extend-per-file-ignores"))
    extend_exclude = string_list("extend-exclude")
    include = string_list("include")
    cache_dir = text("cache-dir")
    fixable = codes("fixable")

    fail_on = base.fail_on
    if "fail-on" in section:
        fail_on = section["fail-on"]
        if not isinstance(fail_on, str) or fail_on.lower() not in FAIL_ON_CHOICES:
            raise ConfigError(
                f"{_origin(path, 'fail-on')}: must be one of {', '.join(FAIL_ON_CHOICES)}, got {fail_on!r}"
            )
        fail_on = fail_on.lower()

    library_mode = flag("library-mode")
    library_mode_exclude = string_list("library-mode-exclude")
    target = text("target-version")
    target_version = None
    if target is not None:
        target_version = parse_target_version(target)
        if target_version is None:
            raise ConfigError(f"{_origin(path, 'target-version')}: must name a Python 3 version such as "
                              f"\"py311\", got {target!r}")

    helpers: dict[str, tuple[str, ...] | None] = {}
    for key in ("device-helpers", "move-helpers"):
        names = string_list(key)
        for name in names or ():
            if not name or not all(part.isidentifier() for part in name.split(".")):
                raise ConfigError(f"{_origin(path, key)}: {name!r} is not a dotted name such as `utils.get_device`")
        helpers[key] = names

    inherited = base.layers() if base.source is not None or base.origins else ()
    origin_name = str(path)
    return Config(
        source=path,
        root=folder,
        select=select,
        extend_select=extend_select,
        ignore=ignore,
        exclude=exclude if exclude is not None else base.exclude,
        exclude_root=None if exclude is not None else (base.exclude_root or base.root),
        per_file_ignores=tuple(per_file) if per_file is not None else base.per_file_ignores,
        per_file_root=None if per_file is not None else (base.per_file_root or base.root),
        extend_per_file_ignores=base.extend_per_file_ignores + extend_per_file,
        extend_exclude=base.extend_exclude + (((str(folder), extend_exclude),) if extend_exclude else ()),
        include=include if include is not None else base.include,
        include_root=None if include is not None else (base.include_root or base.root),
        fail_on=fail_on,
        device_helpers=_pick(helpers["device-helpers"], base.device_helpers),
        move_helpers=_pick(helpers["move-helpers"], base.move_helpers),
        library_mode=_pick(library_mode, base.library_mode),
        library_mode_exclude=_pick(library_mode_exclude, base.library_mode_exclude),
        target_version=_pick(target_version, base.target_version),
        extends=((base.source, *base.extends) if base.source is not None else base.extends),
        inherited_layers=inherited,
        respect_gitignore=_pick(flag("respect-gitignore"), base.respect_gitignore),
        force_exclude=_pick(flag("force-exclude"), base.force_exclude),
        cache_dir=(folder / os.path.expanduser(cache_dir)) if cache_dir is not None else base.cache_dir,
        required_version=_pick(required, base.required_version),
        rule_url_base=_pick(text("rule-url-base"), base.rule_url_base),
        fixable=_pick(fixable, base.fixable),
        unfixable=base.unfixable + (codes("unfixable") or ()),
        extend_safe_fixes=base.extend_safe_fixes + (codes("extend-safe-fixes") or ()),
        extend_unsafe_fixes=base.extend_unsafe_fixes + (codes("extend-unsafe-fixes") or ()),
        ignore_noqa=base.ignore_noqa,
        origins=tuple(dict([*base.origins, *((key, origin_name) for key in section if key != "extend")]).items()),
    )


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """`--config KEY=VALUE` options as a devlint table: each VALUE is TOML (`select = ["DEV1"]`,
    `fail-on = "error"`, `library-mode = false`), as Ruff reads its `--config` overrides."""
    table: dict[str, Any] = {}
    for item in items:
        try:
            parsed = tomllib.loads(item)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"--config {item!r}: not a KEY = VALUE pair in TOML ({exc}); a string value needs "
                              "quotes: --config 'fail-on = \"error\"'") from None
        table.update(parsed)
    return table


def _pick(value: Any, inherited: Any) -> Any:
    return inherited if value is None else value


_OPERATORS = ("==", ">=", "<=", "!=", "~=", ">", "<")


def _version(text: str) -> tuple[int, ...]:
    parts = text.strip().split(".")
    if not parts or not all(part.isdigit() for part in parts):
        raise ValueError(text)
    return tuple(int(part) for part in parts)


def check_required_version(spec: str, origin: str) -> None:
    """`required-version = ">=0.1"` (or `"0.1.0"`, or several clauses joined by commas): a
    ConfigError naming both versions when the running devlint does not satisfy it, so a team's
    CI and its laptops cannot disagree on which devlint checks the code."""
    from devlint import __version__

    running = _version(__version__)
    for clause in spec.split(","):
        clause = clause.strip()
        operator = next((op for op in _OPERATORS if clause.startswith(op)), "==")
        try:
            wanted = _version(clause[len(operator):] if clause.startswith(operator) else clause)
        except ValueError:
            raise ConfigError(f"{origin}: {spec!r} is not a version requirement such as \">=0.1\"") from None
        width = max(len(running), len(wanted))
        have, need = running + (0,) * (width - len(running)), wanted + (0,) * (width - len(wanted))
        ok = {"==": have == need, ">=": have >= need, "<=": have <= need, "!=": have != need, ">": have > need,
              "<": have < need, "~=": have >= need and have[: len(wanted) - 1] == wanted[:-1]}[operator]
        if not ok:
            raise ConfigError(f"{origin}: this project requires devlint {spec}, but devlint {__version__} is running")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


@dataclass(frozen=True)
class CheckSettings:
    """Everything a file check depends on besides the file (what a cache key would hash)."""

    enabled: frozenset[str]
    config: Config = field(default_factory=Config)


def parse_target_version(text: str) -> tuple[int, int] | None:
    """`"py312"` (Ruff's spelling) or `"3.12"` as (3, 12); None for anything else."""
    import re

    found = re.fullmatch(r"py3(\d{1,2})|3\.(\d{1,2})", text.strip().lower())
    if found is None:
        return None
    return 3, int(found.group(1) or found.group(2))
