"""The result cache: findings of unchanged files are not computed again.

An entry holds one checked file's findings (after per-file-ignores and suppression comments,
exactly what `runner.check_unit` returned) and is valid while all of these stay the same:

* the file's bytes (a BLAKE2 digest of them);
* the bytes of every other project file the check read (`models.py` for `train.py`: an edit to
  the model re-checks the script that uses it), recorded with their digests at check time;
* the configuration a check depends on (enabled codes, move / device helpers, per-file-ignores
  and the folder they are relative to), the devlint version and a fingerprint of devlint's own
  source files (so that a developer's edit to a rule is never hidden by the cache), libcst's
  version, and how the file is named and resolved (display path, real path, working folder,
  package root).

Entries live in `.devlint_cache/` at the project root, which holds a `.gitignore` of `*` so
that it is never committed. Each entry is a JSON file (never pickle: reading a cache must not
be able to run code) written to a temporary file and moved into place with `os.replace`, so
concurrent runs never see half an entry; anything unreadable, truncated or of another shape is
treated as a miss. A cache that cannot be written (a read-only tree) is silently skipped.

Known limit: a project file that did not exist when an entry was written and appears later
(a new `helpers.py` that an unchanged `train.py` already imported, or that shadows a library)
does not invalidate the entry; `--no-cache` re-checks everything.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from devlint import __version__
from devlint.atomic import write_atomically
from devlint.findings import Confidence, Evidence, Finding, Fix, Phase, Severity
from devlint.regular import digest, read_regular

if TYPE_CHECKING:  # pragma: no cover
    from devlint.config import CheckSettings, Config

__all__ = ["CACHE_DIR_NAME", "CacheDir", "ResultCache", "digest", "finding_to_json", "finding_from_json",
           "default_cache_root"]

CACHE_DIR_NAME = ".devlint_cache"
FORMAT = 2  # 2: findings carry evidence steps
_ENTRIES = f"v{FORMAT}"
# what marks a project root (a stray .devlint_cache in /tmp or ~ must not: it is not one)
_ROOT_MARKERS = (".git", ".hg", "pyproject.toml", "setup.py", "setup.cfg", "devlint.toml")




# --- findings <-> JSON ----------------------------------------------------------------------


def finding_to_json(finding: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for f in fields(finding):
        value = getattr(finding, f.name)
        if isinstance(value, (Severity, Confidence, Phase)):
            value = value.value
        elif isinstance(value, Fix):
            value = {"description": value.description, "safe": value.safe,
                     "edits": [list(edit) for edit in value.edits]}
        elif f.name == "evidence":
            value = [{"path": e.path, "line": e.line, "column": e.column, "message": e.message, "cell": e.cell}
                     for e in value]
        elif isinstance(value, tuple):
            value = list(value)
        data[f.name] = value
    return data


def finding_from_json(data: dict[str, Any]) -> Finding:
    """The Finding `finding_to_json` wrote; raises (KeyError, TypeError, ValueError) on any other
    shape: every field is checked for its type, so a hand-made or damaged entry is a miss, never
    a finding that crashes a reporter."""
    if not isinstance(data, dict) or set(data) - _FINDING_FIELDS:
        raise TypeError("a finding is an object of known fields")
    values = dict(data)
    for name in ("code", "name", "path", "message", "context", "snippet"):
        _expect(values, name, str, optional=name in ("context", "snippet"))
    for name in ("line", "column", "end_line", "end_column", "rank"):
        _expect(values, name, int, optional=name == "rank")
    _expect(values, "cell", int, optional=True, none=True)
    values["severity"] = Severity(values["severity"])
    values["confidence"] = Confidence(values["confidence"])
    values["phase"] = Phase(values["phase"])
    fix = values.get("fix")
    if fix is not None:
        values["fix"] = Fix(description=_plain(fix["description"], str), safe=_plain(fix["safe"], bool),
                            edits=tuple((_plain(a, int), _plain(b, int), _plain(c, int), _plain(d, int), _plain(e, str))
                                        for a, b, c, d, e in _plain(fix["edits"], list)))
    values["evidence"] = tuple(Evidence(_plain(e["path"], str), _plain(e["line"], int), _plain(e["column"], int),
                                        _plain(e["message"], str),
                                        None if e.get("cell") is None else _plain(e["cell"], int))
                               for e in _plain(values.get("evidence", []), list))
    lines = values.get("statement_lines")
    if lines is not None:
        first, last = _plain(lines, list)
        values["statement_lines"] = (_plain(first, int), _plain(last, int))
    extra = values.get("extra", {})
    if not isinstance(extra, dict) or any(not isinstance(v, (str, int, float, bool)) or v is None
                                          for v in extra.values()):
        raise TypeError("extra must be an object of plain values")
    return Finding(**values)


_FINDING_FIELDS = frozenset(f.name for f in fields(Finding))


def _plain(value: Any, kind: type) -> Any:
    """`value` when it is of `kind` (a bool is not an int here), else TypeError."""
    if type(value) is not kind:
        raise TypeError(f"expected {kind.__name__}")
    return value


def _expect(values: dict[str, Any], name: str, kind: type, *, optional: bool = False, none: bool = False) -> None:
    if name not in values:
        if optional:
            return
        raise KeyError(name)
    if none and values[name] is None:
        return
    _plain(values[name], kind)


# --- fingerprints -----------------------------------------------------------------------------

_FINGERPRINT: str | None = None


def _code_fingerprint() -> str:
    """devlint's version, its own source files (name, size, mtime) and libcst's version."""
    global _FINGERPRINT
    if _FINGERPRINT is not None:
        return _FINGERPRINT
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__}|{FORMAT}|{sys.version_info[0]}.{sys.version_info[1]}".encode())
    package = Path(__file__).resolve().parent
    stack = [package]
    rows = []
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    stack.append(Path(entry.path))
            elif entry.name.endswith(".py"):
                try:
                    st = entry.stat()
                except OSError:
                    continue
                rows.append(f"{os.path.relpath(entry.path, package)}:{st.st_size}:{st.st_mtime_ns}")
    for row in sorted(rows):
        h.update(row.encode())
    h.update(_libcst_version().encode())
    _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def _libcst_version() -> str:
    """libcst's version without importing libcst (the warm path must stay cheap)."""
    import importlib.machinery

    try:  # the path finder, not importlib.util.find_spec: that reads a lazily bound module's spec
        spec = importlib.machinery.PathFinder.find_spec("libcst")
    except (ImportError, ValueError):
        return "?"
    if spec is None or not spec.origin:
        return "?"
    folder = os.path.dirname(spec.origin)
    for name in ("_version.py", "__init__.py"):
        try:
            with open(os.path.join(folder, name), "rb") as handle:
                return digest(handle.read())
        except OSError:
            continue
    return "?"


def settings_fingerprint(settings: "CheckSettings") -> str:
    config = settings.config
    payload = {
        "code": _code_fingerprint(),
        "enabled": sorted(settings.enabled),
        "move_helpers": sorted(config.move_helpers),
        "device_helpers": sorted(config.device_helpers),
        "library_mode": [config.library_mode, sorted(config.library_mode_exclude)],
        "target_version": list(config.target_version) if config.target_version else None,
        "per_file_ignores": [[pattern, list(codes)] for pattern, codes in config.per_file_ignores],
        "per_file_root": str(config.per_file_root or ""),
        "extend_per_file_ignores": [[folder, pattern, list(codes)]
                                    for folder, pattern, codes in config.extend_per_file_ignores],
        "ignore_noqa": config.ignore_noqa,
        "fix_policy": [None if config.fixable is None else list(config.fixable), list(config.unfixable),
                       list(config.extend_safe_fixes), list(config.extend_unsafe_fixes)],
        "root": os.path.abspath(config.root),
    }
    return digest(json.dumps(payload, sort_keys=True).encode())


_PACKAGE_ROOTS: dict[str, str] = {}


def _package_root(directory: str) -> str:
    """The folder above the top-most package holding `directory` (how imports resolve)."""
    cached = _PACKAGE_ROOTS.get(directory)
    if cached is None:
        root = directory
        while os.path.isfile(os.path.join(root, "__init__.py")):
            parent = os.path.dirname(root)
            if parent == root:
                break
            root = parent
        cached = _PACKAGE_ROOTS[directory] = root
    return cached


def default_cache_root(config: "Config", targets: Sequence[str]) -> Path:
    """Where `.devlint_cache/` goes: the configuration's folder, else the nearest folder above
    the first checked path that looks like a project root (.git, pyproject.toml, setup.py),
    else the current folder (as ruff and pytest do)."""
    if config.source is not None:
        return Path(config.root)
    first = os.path.abspath(targets[0] if targets else ".")
    folder = first if os.path.isdir(first) else os.path.dirname(first)
    while True:
        if any(os.path.exists(os.path.join(folder, marker)) for marker in _ROOT_MARKERS):
            return Path(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return Path.cwd()
        folder = parent


MAX_ENTRY_BYTES = 64_000_000  # an entry holds one file's findings: far below this


# --- the cache --------------------------------------------------------------------------------


class FileDigests:
    """The digest of a file as it is now (None when it cannot be read), read again only when
    its (mtime, size) changes: what validates a result against the files it depended on."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, int], str | None]] = {}

    def __call__(self, path: str) -> str | None:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        known = self._known.get(real)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            value: str | None = digest(read_regular(real, MAX_ENTRY_BYTES))
        except OSError:
            value = None
        self._known[real] = (stamp, value)
        return value


class CacheDir(str):
    """The cache folder itself (`cache-dir`, DEVLINT_CACHE_DIR), where a plain root names the
    folder that holds `.devlint_cache/`."""


class ResultCache:
    """Findings per checked file, under `<root>/.devlint_cache/`."""

    def __init__(self, root: str | os.PathLike[str], settings: "CheckSettings") -> None:
        self.folder = Path(root) if isinstance(root, CacheDir) else Path(root) / CACHE_DIR_NAME
        self.entries = self.folder / _ENTRIES
        self._settings = settings_fingerprint(settings)
        self._cwd = os.getcwd()
        self._digests = FileDigests()
        self._writable = True
        self._prepared: set[Path] = set()

    # identity of one checked file: which entry holds it
    def _key(self, path: str, display: str) -> str:
        real = os.path.realpath(path)
        ident = "\0".join((self._settings, self._cwd, display, real, _package_root(os.path.dirname(real))))
        return digest(ident.encode())

    def _entry_path(self, key: str) -> Path:
        return self.entries / key[:2] / f"{key}.json"

    def file_digest(self, path: str) -> str | None:
        """Digest of a file as it is now (None when it cannot be read); memoised per (mtime, size)."""
        return self._digests(path)

    def get(self, path: str, display: str, content: str) -> list[Finding] | None:
        """The cached findings of this file with this content digest, or None (a miss)."""
        try:
            # a regular file of bounded size (a FIFO planted there is refused, not waited on)
            data = read_regular(self._entry_path(self._key(path, display)), MAX_ENTRY_BYTES)
            entry = json.loads(data)  # nested too deeply: RecursionError, a miss
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("digest") != content:
                return None
            depends = entry["depends"]
            found = entry["findings"]
            if not isinstance(depends, dict) or not isinstance(found, list):
                return None
            for dep, expected in depends.items():
                if not isinstance(expected, str) or self.file_digest(dep) != expected:
                    return None
            return [finding_from_json(item) for item in found]
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, MemoryError):
            return None  # missing, unreadable, truncated or foreign: check the file again

    def put(self, path: str, display: str, content: str, findings: Iterable[Finding],
            depends: Iterable[str]) -> None:
        """Record findings; `depends` are the other files (real paths) the check read, each
        followed by a NUL and the digest of the bytes read when the reader knew it."""
        if not self._writable:
            return
        own = os.path.realpath(path)
        deps: dict[str, str] = {}
        for dep in depends:
            dep, _, read = dep.partition("\0")  # "path\0digest": the digest of the bytes analysed
            if dep == own:
                continue
            value = read or self.file_digest(dep)
            if not value or deps.get(dep, value) != value:
                return  # gone already, or read twice with different contents: cannot be validated
            deps[dep] = value
        try:
            text = json.dumps({"format": FORMAT, "digest": content, "depends": deps,
                               "findings": [finding_to_json(f) for f in findings]})
        except (TypeError, ValueError):
            return  # something in a finding is not plain data: do not cache it
        target = self._entry_path(self._key(path, display))
        try:
            self._prepare(target.parent)
            write_atomically(target, text.encode("utf-8"))
        except OSError:
            self._writable = False  # read-only tree, full disk: run without writing

    def _prepare(self, folder: Path) -> None:
        if folder in self._prepared:
            return
        if not self.folder.is_dir():
            self.folder.mkdir(parents=True, exist_ok=True)
        ignore = self.folder / ".gitignore"
        if not ignore.exists():
            write_atomically(ignore, b"# written by devlint: its result cache is never committed\n*\n")
            write_atomically(self.folder / "CACHEDIR.TAG",
                             b"Signature: 8a477f597d28d172789f06886806bc55\n"
                             b"# This folder is devlint's result cache (https://bford.info/cachedir/).\n")
        folder.mkdir(parents=True, exist_ok=True)
        self._prepared.add(folder)

