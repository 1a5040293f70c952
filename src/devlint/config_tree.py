"""The settings of each checked file: its nearest configuration, as Ruff does.

`devlint check pkg_a pkg_b` (and pre-commit, which passes files in any order) must give each
file the `pyproject.toml` / `devlint.toml` nearest above it, not the first path's: pkg_a's
ignores must not apply to pkg_b, and the result must not depend on the argument order. With
`--config FILE` every file takes that one file. Command-line selection and `--exclude` /
`--extend-exclude` sit on top of whichever file applies. Files are grouped by the settings
they take, so each group is checked (and cached) under one CheckSettings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from devlint.config import CheckSettings, Config, ConfigError, defaults, find_config, load_config
from devlint.selection import Layer, SelectionError, resolve

if TYPE_CHECKING:  # pragma: no cover
    import pathspec

    from devlint.discover import DiscoveredFile

__all__ = ["ConfigTree", "SettingsGroup"]


@dataclass(frozen=True)
class SettingsGroup:
    """Files that share one configuration, in discovery order."""

    settings: CheckSettings
    files: tuple["DiscoveredFile", ...]


class ConfigTree:
    """Nearest configuration per folder (read once per folder), and what it excludes."""

    def __init__(self, cli_layer: Layer, *, config_file: str | None = None,
                 exclude: Sequence[str] | None = None, extend_exclude: Sequence[str] = (),
                 overrides: dict[str, Any] | None = None, isolated: bool = False, ignore_noqa: bool = False) -> None:
        self._cli_layer = cli_layer
        # `--config KEY=VALUE` on top of every file; `--isolated`: no file at all, as Ruff's
        self._overrides = dict(overrides or {})
        self._ignore_noqa = ignore_noqa
        self._fixed: Config | None = None
        if isolated:
            self._fixed = self._finish(defaults(self._overrides))
        elif config_file is not None:
            self._fixed = self._finish(load_config(config_file, overrides=self._overrides))
        self._by_folder: dict[str, Config] = {}
        self._by_source: dict[Path | None, Config] = {}
        self._settings: dict[Path | None, CheckSettings] = {}
        self._cli_exclude = tuple(exclude) if exclude is not None else None
        self._extend_exclude = tuple(extend_exclude)
        self._cwd = os.getcwd()
        self._specs: dict[tuple[str, ...], "pathspec.GitIgnoreSpec"] = {}

    def config_for(self, path: str) -> Config:
        """The configuration of a file (or of the files in a folder, for a folder)."""
        if self._fixed is not None:
            return self._fixed
        folder = os.path.abspath(path)
        if not os.path.isdir(folder):
            folder = os.path.dirname(folder)
        config = self._by_folder.get(folder)
        if config is None:
            source = find_config(folder)
            config = self._by_source.get(source)
            if config is None:
                config = load_config(source, overrides=self._overrides) if source is not None \
                    else replace(defaults(self._overrides), root=Path(self._cwd))
                config = self._by_source[source] = self._finish(config)
            self._by_folder[folder] = config
        return config

    def _finish(self, config: Config) -> Config:
        return replace(config, ignore_noqa=True) if self._ignore_noqa else config

    def settings_for(self, path: str) -> CheckSettings:
        """The CheckSettings of a file: its configuration under the command line's selection."""
        config = self.config_for(path)
        settings = self._settings.get(config.source)
        if settings is None:
            try:
                enabled = resolve([*config.layers(), self._cli_layer])
            except SelectionError as exc:
                raise ConfigError(str(exc)) from None
            settings = self._settings[config.source] = CheckSettings(enabled=enabled, config=config)
        return settings

    def excluded(self, abs_path: str, is_dir: bool) -> bool:
        """`exclude` of the configuration that governs the path (patterns relative to that
        file's folder), or `--exclude`; `--extend-exclude` adds to it (relative to here)."""
        config = self.config_for(os.path.dirname(abs_path))
        groups = config.exclude_groups() if self._cli_exclude is None else config.extend_exclude
        for folder, patterns in groups:
            if self._matches(patterns, abs_path, folder, is_dir):
                return True
        if config.include and not is_dir and \
                not self._matches(config.include, abs_path, str(config.include_root or config.root), False):
            return True  # `include` names the files to check; anything else is left out
        extra = (self._cli_exclude or ()) + self._extend_exclude
        return bool(extra) and self._matches(extra, abs_path, self._cwd, is_dir)

    def project_config(self) -> Config:
        """The configuration of the folder devlint runs in (or --config): the settings of the run
        itself (respect-gitignore, force-exclude, cache-dir, rule-url-base) come from it. A broken
        file there that governs none of the checked files does not stop the run (the defaults
        apply); one that does is reported when those files' settings are read."""
        try:
            return self.config_for(self._cwd)
        except ConfigError:
            return Config(root=Path(self._cwd))

    def named_excluded(self, abs_path: str) -> bool:
        """For `--force-exclude`: is a path named on the command line, or a folder above it
        (up to the configuration's folder or here), excluded?"""
        current, is_dir = abs_path, os.path.isdir(abs_path)
        tops = {os.path.abspath(str(self.config_for(abs_path).root)), self._cwd}
        while True:
            if self.excluded(current, is_dir):
                return True
            parent = os.path.dirname(current)
            if parent == current or current in tops or not any(_inside(parent, top) for top in tops):
                return False
            current, is_dir = parent, True

    def _matches(self, patterns: tuple[str, ...], abs_path: str, base: str, is_dir: bool) -> bool:
        spec = self._specs.get(patterns)
        if spec is None:
            import pathspec

            spec = self._specs[patterns] = pathspec.GitIgnoreSpec.from_lines(list(patterns))
        rel = os.path.relpath(abs_path, os.path.abspath(base))
        if rel.startswith(".."):
            # outside that root: match the name only, with the patterns that name no folder
            # (`/legacy.py` of a file in base/ is base/legacy.py, never app/legacy.py)
            patterns = tuple(p for p in patterns if "/" not in p.rstrip("/"))
            if not patterns:
                return False
            return self._matches(patterns, os.path.join(base, os.path.basename(abs_path)), base, is_dir)
        return spec.match_file(rel.replace(os.sep, "/") + ("/" if is_dir else ""))

    def groups(self, files: Iterable["DiscoveredFile"]) -> list[SettingsGroup]:
        """The files split by the settings they take, groups in order of their first file."""
        order: list[Path | None] = []
        members: dict[Path | None, list["DiscoveredFile"]] = {}
        for file in files:
            source = self.config_for(file.path).source
            if source not in members:
                order.append(source)
                members[source] = []
            members[source].append(file)
        return [SettingsGroup(self.settings_for(members[s][0].path), tuple(members[s])) for s in order]


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
