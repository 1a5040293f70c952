"""Which rules run: `select` / `ignore` / `extend-select` with code prefixes, layered.

Selectors are full codes (`DEV101`), prefixes (`DEV1`, `DEV10`), `ALL`, or a rule's name
(`unmoved-input`, as `devlint rules` lists them), which stands for its code. A selector that
matches no rule is an error rather than a silent no-op: a typo in `--ignore DEV1O1` must not
leave a CI job believing a rule is off (or on). Settings come in layers (defaults, then the
configuration file, then the command line); a layer with `select` starts over from exactly what
it selects, `extend-select` adds, `ignore` removes. Within one layer the more specific selector
wins, so `select = ["DEV1"]` with `ignore = ["DEV101"]` runs DEV1xx without DEV101, and
`select = ["DEV101"]` with `ignore = ["DEV1"]` runs DEV101 alone.

DEV000 (a file that cannot be read or parsed) stays on unless ignored by its exact code:
a broken file must never make a CI job pass by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from devlint import rules as _rules

__all__ = ["SelectionError", "Layer", "resolve", "expand", "parse_codes", "PARSE_ERROR_CODE"]

PARSE_ERROR_CODE = "DEV000"
ALL = "ALL"


class SelectionError(ValueError):
    """A selector that names no rule; `.selector` is the offending text."""

    def __init__(self, selector: str, origin: str = "") -> None:
        self.selector = selector
        self.origin = origin
        where = f"{origin}: " if origin else ""
        super().__init__(f"{where}unknown rule code or prefix {selector!r} (a code such as DEV101, a prefix such "
                         "as DEV1, ALL, or a rule name such as unmoved-input; see `devlint rules`)")


def all_codes() -> tuple[str, ...]:
    return tuple(rule.code for rule in _rules.all_rules())


def parse_codes(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """`"DEV101, dev2, discarded-to"` or a list of such strings -> `("DEV101", "DEV2", "DEV107")`.
    A rule name becomes its code; an unknown name stays as written (lower case), so that the
    error names what the user wrote."""
    if text is None:
        return ()
    parts = [text] if isinstance(text, str) else list(text)
    out: list[str] = []
    for part in parts:
        for piece in part.replace(",", " ").split():
            out.append(_selector(piece.strip()))
    return tuple(out)


def _selector(piece: str) -> str:
    if "-" not in piece:  # every rule name has a hyphen; codes and prefixes never do
        return piece.upper()
    name = piece.lower()
    return next((rule.code for rule in _rules.all_rules() if rule.name == name), name)


def _matches(selector: str, code: str) -> bool:
    return selector == ALL or code.startswith(selector)


def _specificity(selector: str) -> int:
    return 0 if selector == ALL else len(selector)


def validate(selectors: Iterable[str], origin: str = "") -> None:
    """Raise SelectionError for the first selector that matches no rule."""
    codes = all_codes()
    for selector in selectors:
        if not any(_matches(selector, code) for code in codes):
            raise SelectionError(selector, origin)


def expand(selectors: Iterable[str]) -> frozenset[str]:
    """The rule codes matched by `selectors` (which must already be valid)."""
    selectors = tuple(selectors)
    return frozenset(code for code in all_codes() if any(_matches(s, code) for s in selectors))


@dataclass(frozen=True)
class Layer:
    """One source of settings; `select=None` means "keep what the layers before chose"."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    # how error messages name a setting: "{key}" is replaced by select / extend-select / ignore,
    # e.g. "--{key}" on the command line, "pyproject.toml: [tool.devlint] {key}" in a file
    origin: str = "{key}"

    def validate(self) -> None:
        validate(self.select or (), self.origin.format(key="select"))
        validate(self.extend_select, self.origin.format(key="extend-select"))
        validate(self.ignore, self.origin.format(key="ignore"))


def default_codes() -> frozenset[str]:
    return frozenset(rule.code for rule in _rules.all_rules() if rule.default_enabled)


def resolve(layers: Sequence[Layer]) -> frozenset[str]:
    """The codes enabled after applying `layers` in order over the default set."""
    enabled = set(default_codes())
    for layer in layers:
        layer.validate()
        chosen = list(layer.extend_select)
        if layer.select is not None:
            chosen = list(layer.select) + chosen
            enabled = set()
        for code in all_codes():
            best_on = max((_specificity(s) for s in chosen if _matches(s, code)), default=-1)
            best_off = max((_specificity(s) for s in layer.ignore if _matches(s, code)), default=-1)
            if best_off >= 0 and best_off >= best_on:
                enabled.discard(code)
            elif best_on >= 0:
                enabled.add(code)
    explicitly_ignored = any(PARSE_ERROR_CODE in layer.ignore for layer in layers)
    if not explicitly_ignored and PARSE_ERROR_CODE in all_codes():
        enabled.add(PARSE_ERROR_CODE)
    return frozenset(enabled)
