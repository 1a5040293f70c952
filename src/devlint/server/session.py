"""The language server's analysis state, free of any protocol: open documents in, findings out.

A `Snapshot` is what one check reads of an open document (its text, or a notebook's code
cells), taken on the protocol's thread; `Session.check` runs devlint's own pipeline on it
(`runner.check_unit`: rule selection, per-file-ignores, suppression comments, notebook cell
mapping), with the settings `check` would use for that file, and the project index reading the
other open documents' unsaved text (`project.set_overlay`). A result is kept in memory with
what it depended on (its text, its settings, and the digest of each project file the analysis
read), so asking again after an unrelated change costs nothing, while an edit to `models.py`
re-analyses the open `train.py` that imports it.

Fixes come from `Finding.fix` through devlint.fix (the edits `check --fix` applies, the same
re-checked rounds for "fix all"), suppressions are `# noqa: CODE` comments that
devlint.suppress must then honour. Everything here runs on one worker thread: the project index
and the parse caches are per process and not shared between threads.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field, replace
from pathlib import Path

from devlint.cache import FileDigests, digest
from devlint.config import CONFIG_FILE, PYPROJECT, CheckSettings, Config, ConfigError, load_config
from devlint.findings import Finding
from devlint.rank import rank_findings
from devlint.selection import Layer, SelectionError, parse_codes, resolve
from devlint.source import SourceUnit, join_cells
from devlint.suppress import parse_suppressions

__all__ = ["Snapshot", "CheckResult", "Session", "EditorSettings", "Change"]

# a text change to an open document: {None: new text} for a file, {cell: new cell text} for a notebook
Change = dict[int | None, str]


@dataclass(frozen=True)
class Snapshot:
    """One open document as a check reads it. `key` is its URI (a notebook's own URI for a
    notebook); `path` the file it is, or None for an unsaved, unnamed buffer."""

    key: str
    path: str | None
    version: int | None
    text: str | None = None  # a Python file
    cells: tuple[str, ...] | None = None  # a notebook: the sources of its Python code cells
    cell_keys: tuple[str, ...] | None = None  # and their own URIs, in the same order

    @property
    def display(self) -> str:
        """The path findings carry: absolute, so every file a result names is unambiguous."""
        return os.path.abspath(self.path) if self.path else f"<{self.key}>"

    @property
    def is_notebook(self) -> bool:
        return self.cells is not None

    def unit(self) -> SourceUnit:
        real = self.path or self.display
        if self.cells is not None:
            return join_cells(self.cells, self.display, real)
        return SourceUnit(self.display, real, text=self.text or "")  # already text: nothing to decode


@dataclass(frozen=True)
class EditorSettings:
    """Rule selection the editor passes (initializationOptions or workspace settings), applied
    after the configuration file, like the command line's options."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    @classmethod
    def from_client(cls, data: object) -> "EditorSettings":
        if not isinstance(data, dict):
            return cls()

        def codes(*keys: str) -> tuple[str, ...] | None:
            for key in keys:
                value = data.get(key)
                if isinstance(value, str):
                    value = [value]
                if isinstance(value, list):
                    return parse_codes([item for item in value if isinstance(item, str)])
            return None

        return cls(select=codes("select"), extend_select=codes("extendSelect", "extend-select") or (),
                   ignore=codes("ignore") or ())

    def layer(self) -> Layer:
        return Layer(select=self.select, extend_select=self.extend_select, ignore=self.ignore,
                     origin="editor setting devlint.{key}")


class SettingsProblem(Exception):
    """The configuration a document would be checked with is invalid (the message names it)."""


@dataclass
class CheckResult:
    """Findings of one snapshot, ranked, and what they depend on."""

    snapshot: Snapshot
    unit: SourceUnit
    settings: CheckSettings | None
    findings: list[Finding]
    # real path of each project file the analysis read -> its digest then (None: missing)
    depends: dict[str, str | None] = field(default_factory=dict)
    analysed: bool = True  # False: served from memory, nothing it depends on had changed
    problem: str | None = None  # an invalid configuration: no findings, this says why

    def own(self) -> list[Finding]:
        """The findings located in this document (not in other project files it reached)."""
        return [f for f in self.findings if f.path == self.unit.display]

    def elsewhere(self) -> list[Finding]:
        return [f for f in self.findings if f.path != self.unit.display]

    def find(self, code: str, line: int, column: int, cell: int | None = None) -> Finding | None:
        for finding in self.own():
            if (finding.code, finding.line, finding.column, finding.cell) == (code, line, column, cell):
                return finding
        return None


class Session:
    """Checks of open documents, remembered until something they depend on changes."""

    def __init__(self, root: str | None = None) -> None:
        self.root = root or os.getcwd()
        self.editor = EditorSettings()
        self._results: dict[str, CheckResult] = {}
        self._configs: dict[str, tuple[tuple, Config | ConfigError]] = {}
        self._files = FileDigests()
        self.analyses = 0  # how many checks were analysed rather than served from memory

    # --- settings ------------------------------------------------------------------------

    def settings_for(self, path: str | None) -> CheckSettings:
        """The settings `devlint check` uses for this file: the nearest configuration above
        it, then the editor's selection on top. Raises SettingsProblem for an invalid one.

        The one place that decides a document's settings (per-file configuration slots in here)."""
        start = os.path.dirname(os.path.abspath(path)) if path else self.root
        config = self._config_near(start)
        try:
            enabled = resolve([*config.layers(), self.editor.layer()])
        except SelectionError as exc:
            raise SettingsProblem(str(exc)) from None
        return CheckSettings(enabled=enabled, config=config)

    def fallback_settings(self, path: str | None) -> tuple[CheckSettings, str]:
        """The settings to check with when `settings_for` is invalid, and what they are: the
        configuration file without the editor's selection when only the latter is wrong, else
        the defaults (with the editor's selection when that one is valid)."""
        start = os.path.dirname(os.path.abspath(path)) if path else self.root
        try:
            config = self._config_near(start)
            return CheckSettings(enabled=resolve(list(config.layers())), config=config), \
                "checking without the editor's rule selection"
        except (SettingsProblem, SelectionError):
            pass
        defaults = Config(root=Path(start))
        try:
            return CheckSettings(enabled=resolve([self.editor.layer()]), config=defaults), \
                "checking with the default settings"
        except SelectionError:
            return CheckSettings(enabled=resolve([]), config=defaults), "checking with the default settings"

    def _config_near(self, start: str) -> Config:
        stamp = _config_stamp(start)
        known = self._configs.get(start)
        if known is None or known[0] != stamp:
            try:
                loaded: Config | ConfigError = load_config(None, start=start)
            except ConfigError as exc:
                loaded = exc
            known = self._configs[start] = (stamp, loaded)
        if isinstance(known[1], ConfigError):
            raise SettingsProblem(str(known[1]))
        return known[1]

    def forget(self, key: str | None = None) -> None:
        """Drop remembered results (one document's, or all), so the next check analyses."""
        if key is None:
            self._results.clear()
        else:
            self._results.pop(key, None)

    # --- checking ------------------------------------------------------------------------

    def check(self, snapshot: Snapshot, buffers: dict[Path, str]) -> CheckResult:
        """Findings of `snapshot`, with the project seeing `buffers` (real path -> unsaved
        text of the other open files) instead of their files on disk."""
        from devlint.project import set_overlay
        from devlint.runner import check_unit

        set_overlay(buffers)
        unit = snapshot.unit()
        problem = None
        try:
            settings = self.settings_for(snapshot.path)
        except SettingsProblem as exc:
            # said to the user (window/showMessage), and the document is still checked with
            # what is valid: an unknown code in one setting must not blank every diagnostic
            settings, fallback = self.fallback_settings(snapshot.path)
            problem = f"{exc} ({fallback} until it is corrected)"
        previous = self._results.get(snapshot.key)
        if previous is not None and previous.settings == settings and previous.unit.text == unit.text \
                and previous.unit.display == unit.display \
                and all(self._digest(dep, buffers) == known for dep, known in previous.depends.items()):
            result = replace(previous, snapshot=snapshot, unit=unit, analysed=False, problem=problem)
            self._results[snapshot.key] = result
            return result
        depends: set[str] = set()
        findings = check_unit(unit, settings, depends=depends)
        own_path = os.path.realpath(unit.path)
        paths = {dep.partition("\0")[0] for dep in depends}  # "path\0digest of what was read"
        stamps = {dep: self._digest(dep, buffers) for dep in sorted(paths) if dep != own_path}
        result = CheckResult(snapshot, unit, settings, rank_findings(findings), stamps, problem=problem)
        self.analyses += 1
        self._results[snapshot.key] = result
        return result

    def _digest(self, path: str, buffers: dict[Path, str]) -> str | None:
        """What a project file holds now: its editor buffer's text, else its bytes on disk."""
        text = buffers.get(Path(path))
        if text is not None:
            return digest(text.encode("utf-8", "surrogatepass"))
        return self._files(path)

    # --- fixes and suppressions ----------------------------------------------------------

    def fix_change(self, result: CheckResult, finding: Finding) -> Change | None:
        """The change one finding's fix makes (safe or not), without re-checking."""
        from devlint.fix.apply import apply_edits

        if finding.fix is None or not finding.fix.edits or result.unit.text is None:
            return None
        return _change(result.unit, apply_edits(result.unit.text, finding.fix.edits))

    def fix_all_change(self, result: CheckResult) -> Change | None:
        """Every safe fix of the document, applied as `check --fix` applies them: to the fixed
        point, each result re-parsed and re-checked, a fix that would break the file or bring a
        new finding refused alone. None when nothing changes."""
        from devlint.fix.apply import wanted
        from devlint.fix.run import fix_unit

        own = result.own()
        if not any(wanted(f, unsafe=False) for f in own) or result.settings is None or result.unit.text is None:
            return None
        # all of the file's findings, as `check --stdin-filename --fix` passes them: the fixer
        # applies the wanted ones and compares what the re-check finds against all of them
        fixed = fix_unit(result.unit, own, result.settings, unsafe=False)
        if not fixed.changed:
            return None
        return _change(result.unit, fixed.fixed)

    def suppress_change(self, result: CheckResult, finding: Finding) -> Change | None:
        """`# noqa: CODE` for this finding on a line of its statement (added to a `# noqa:` list
        already there), checked with devlint.suppress to silence it. None when no line can take it."""
        cell = finding.cell
        text = _cell_text(result.unit, cell) if cell is not None else result.unit.text
        if text is None:
            return None
        candidates = [finding.line]
        if finding.statement_lines is not None:
            candidates.insert(0, finding.statement_lines[1])
        for line in dict.fromkeys(candidates):
            new_text = _with_noqa(text, line, finding.code)
            if new_text is not None and parse_suppressions(new_text).silences(finding):
                return {cell: new_text}
        return None


def _cell_text(unit: SourceUnit, cell: int) -> str | None:
    if unit.cells is None or not 1 <= cell <= len(unit.cells):
        return None
    return unit.cells[cell - 1]


def _change(unit: SourceUnit, fixed: str) -> Change | None:
    """A fixed text as a change: the file's new text, or the new text of each changed cell."""
    if not unit.is_notebook:
        return {None: fixed} if fixed != unit.text else None
    from devlint.fix.apply import notebook_cells_after

    cells = notebook_cells_after(unit, fixed)
    if cells is None:  # a fix that crosses cells or touches a magic line: not offered
        return None
    assert unit.cells is not None
    changed: dict[int | None, str] = {index: new for index, (old, new) in enumerate(zip(unit.cells, cells), start=1)
                                      if old != new}
    return changed or None


_NOQA_LIST = re.compile(r"#\s*noqa\s*:\s*[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*", re.IGNORECASE)
_IGNORE_LIST = re.compile(r"#\s*devlint\s*:\s*ignore\s*\[[^\]]*", re.IGNORECASE)


def _with_noqa(text: str, line: int, code: str) -> str | None:
    """`text` with `code` suppressed on `line` (1-based); None when the line cannot take a comment."""
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        return None
    raw = lines[line - 1]
    body = raw.rstrip("\r\n")
    ending = raw[len(body):]
    column = _comment_column(text, line)
    if column is None:
        if body.rstrip().endswith("\\"):
            return None  # a comment after a line continuation would end the statement
        new_body = f"{body.rstrip()}  # noqa: {code}"
    else:
        comment = body[column:]
        listed = _NOQA_LIST.search(comment) or _IGNORE_LIST.search(comment)
        if listed is not None:  # one list of codes: add to it
            separator = "" if comment[:listed.end()].endswith("[") else ", "
            new_body = body[:column] + comment[:listed.end()] + separator + code + comment[listed.end():]
        else:
            new_body = f"{body.rstrip()}  # noqa: {code}"
    lines[line - 1] = new_body + ending
    return "".join(lines)


def _comment_column(text: str, line: int) -> int | None:
    """0-based column where the real comment on `line` starts (a `#` in a string is none)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > line:
                break
            if token.type == tokenize.COMMENT and token.start[0] == line:
                return token.start[1]
    except (tokenize.TokenError, SyntaxError, ValueError, UnicodeError):
        pass
    return None


def _config_stamp(start: str) -> tuple:
    """(name, mtime, size) of every configuration file that could apply at `start` and above:
    a new, edited or removed devlint.toml / pyproject.toml changes it."""
    rows = []
    folder = Path(start)
    for candidate in (folder, *folder.parents):
        for name in (CONFIG_FILE, PYPROJECT):
            try:
                st = os.stat(candidate / name)
            except OSError:
                continue
            rows.append((str(candidate / name), st.st_mtime_ns, st.st_size))
    return tuple(rows)
