"""Knowledge tables about the outside world's APIs, and the one matcher that reads them."""

from __future__ import annotations

import fnmatch
from functools import lru_cache
from typing import Iterable


@lru_cache(maxsize=None)
def _compile(table: frozenset[str]) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    exact = frozenset(p for p in table if "*" not in p)
    prefixes = tuple(p[:-1] for p in table if p.endswith(".*") and p.count("*") == 1)
    globs = tuple(p for p in table if "*" in p and not (p.endswith(".*") and p.count("*") == 1))
    return exact, prefixes, globs


def matches(qual: str, table: Iterable[str]) -> bool:
    """True when the dotted name `qual` is named by the table (exact, `a.b.*` or glob)."""
    if not qual:
        return False
    return _matches(qual, table if isinstance(table, frozenset) else frozenset(table))


@lru_cache(maxsize=1 << 16)  # the analysis asks the same few hundred names of each table over and over
def _matches(qual: str, table: frozenset[str]) -> bool:
    exact, prefixes, globs = _compile(table)
    if qual in exact:
        return True
    for prefix in prefixes:
        if qual.startswith(prefix):
            return True
    return any(fnmatch.fnmatchcase(qual, g) for g in globs)
