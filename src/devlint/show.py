"""`check --show-files` and `check --show-settings`: what a run would check, and with what.

When a file is not reported, or reported when it should not be, the first question is whether
devlint looked at it and which configuration it took: the nearest `pyproject.toml` /
`devlint.toml`, the files that one `extend`s, `--config` overrides. These print the answer and
check nothing (exit 0), as Ruff's options of the same names do.
"""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

import click

from devlint.errors import UsageProblem

__all__ = ["show_files", "show_settings"]


def show_files(files: Sequence[Any]) -> int:
    """Every file a check of the same paths would read, one a line, sorted."""
    for file in files:
        click.echo(file.display)
    return 0


def _value(value: Any) -> str:
    if isinstance(value, tuple):
        value = list(value)
    if value is None:
        return "(not set)"
    return json.dumps(value, default=str)


def show_settings(tree: Any, files: Sequence[Any], targets: Sequence[str]) -> int:
    """The settings of the first file a check would read (or of the one path named), each with
    the file that set it."""
    if not files:
        raise UsageProblem(f"no Python file or notebook to show the settings of under {', '.join(targets)}")
    file = files[0]
    settings = tree.settings_for(file.path)
    config = settings.config
    origins = dict(config.origins)
    lines = [f"Resolved settings for: {file.display}"]
    lines.append(f"Settings path: {config.source if config.source is not None else '(none: the defaults)'}")
    for base in config.extends:
        lines.append(f"Extends: {base}")
    lines.append("")
    lines.append(f"enabled rules = {_value(sorted(settings.enabled))}")
    layers = config.layers()
    for index, layer in enumerate(layers):  # the selections in the order they apply, each where written
        for key, value in (("select", layer.select), ("extend-select", layer.extend_select),
                           ("ignore", layer.ignore)):
            if value:
                own_override = index == len(layers) - 1 and origins.get(key) == "--config"
                where = "--config" if own_override else layer.origin.format(key=key)
                lines.append(f"{key} = {_value(value)}  # from {where}")
    rows = [
        ("exclude", config.exclude),
        ("extend-exclude", [patterns for _, patterns in config.extend_exclude] or None),
        ("include", config.include or None),
        ("per-file-ignores", {pattern: list(codes) for pattern, codes in config.per_file_ignores} or None),
        ("extend-per-file-ignores", {pattern: list(codes) for _, pattern, codes in config.extend_per_file_ignores}
         or None),
        ("fail-on", config.fail_on or "warning"),
        ("device-helpers", config.device_helpers), ("move-helpers", config.move_helpers),
        ("library-mode", config.library_mode_for(file.path)),
        ("library-mode-exclude", config.library_mode_exclude),
        ("target-version", f"py3{config.target_version[1]}" if config.target_version else None),
        ("fixable", config.fixable), ("unfixable", config.unfixable),
        ("extend-safe-fixes", config.extend_safe_fixes), ("extend-unsafe-fixes", config.extend_unsafe_fixes),
        ("respect-gitignore", config.respect_gitignore is not False),
        ("force-exclude", bool(config.force_exclude)),
        ("cache-dir", os.environ.get("DEVLINT_CACHE_DIR") or config.cache_dir),
        ("required-version", config.required_version),
        ("rule-url-base", config.rule_url_base),
        ("ignore-noqa", config.ignore_noqa),
    ]
    for key, value in rows:
        where = origins.get(key)
        if key == "cache-dir" and os.environ.get("DEVLINT_CACHE_DIR"):
            where = "DEVLINT_CACHE_DIR"
        lines.append(f"{key} = {_value(value)}" + (f"  # from {where}" if where else ""))
    click.echo("\n".join(lines))
    return 0
