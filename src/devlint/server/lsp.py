"""The pygls language server behind `devlint server`: documents in, diagnostics and code actions out.

Protocol work (messages, documents, positions) happens on pygls' event loop; every check runs
on one worker thread (devlint.server.session), one at a time, so the event loop keeps answering
while a file is analysed. A change is checked after a short quiet period (`DEBOUNCE_S`, or the
client's `debounceMs`); changes that arrive while a check runs are checked once it ends, and a
result computed for a version the editor has already replaced is dropped, since the check of
the newer version is on its way. When a file's result changes, the open documents whose results
depended on it are checked again (from memory when nothing they read has changed). Diagnostics
are sent when no check is running or queued (`flush`): another document's check can place
findings in a document, so each version gets one complete list rather than a partial one first.
A client that pulls diagnostics (devlint.server.pull) is sent nothing and asked to pull again.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from devlint import __version__
from devlint.config import CONFIG_FILE, PYPROJECT
from devlint.findings import Finding
import devlint.server.convert as convert
from devlint.server.session import Change, CheckResult, EditorSettings, Session, Snapshot
from devlint.source import split_lines
from devlint.suppress import apply_suppressions

logger = logging.getLogger("devlint.server")

# quiet time before a change is checked: long enough to take the change events an editor sends
# together (a paste, a format, several cursors) as one; typing faster than a check takes is
# coalesced anyway, since changes that arrive during a check are checked once, after it
DEBOUNCE_S = 0.025
FIX_ALL_KIND = "source.fixAll.devlint"
COMMAND_FIX = "devlint.applyFix"
COMMAND_SUPPRESS = "devlint.suppress"
COMMAND_FIX_ALL = "devlint.fixAll"
FIX_ALL_TITLE = "devlint: fix all safe fixes in this file"
_CONFIG_NAMES = (CONFIG_FILE, PYPROJECT)


class DevlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "devlint", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    notebook="*", cells=[types.NotebookCellLanguage(language="python")])],
                save=True,
            ),
        )
        self.session = Session()
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devlint-check")
        self.debounce_s = DEBOUNCE_S
        self.documents: dict[str, None] = {}  # open Python text documents (URIs), in opening order
        self.notebooks: dict[str, None] = {}  # open notebook documents (URIs)
        self.published: dict[str, CheckResult] = {}  # the result each open document shows
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._dirty: dict[str, None] = {}
        self._busy = False
        self._stopped = False
        self._told: set[str] = set()  # configuration problems already shown to the user
        # documents whose diagnostics wait for the checks queued now (their result may place
        # findings in them), so each version's list is sent once, complete (devlint.server.pull)
        self._held: dict[str, CheckResult | None] = {}
        self.pull_mode = False  # the client asks (textDocument/diagnostic): nothing is pushed
        self.changed = asyncio.Event()  # set whenever a result is recorded or a check ends

    # --- scheduling ------------------------------------------------------------------------

    def schedule(self, key: str, delay: float | None = None) -> None:
        """Check `key` after `delay` seconds of quiet (the debounce by default; 0: at once)."""
        delay = self.debounce_s if delay is None else delay
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if delay <= 0:
            self._mark(key)
        else:
            self._timers[key] = asyncio.get_running_loop().call_later(delay, self._mark, key)

    def schedule_all(self) -> None:
        for key in [*self.documents, *self.notebooks]:
            self.schedule(key, 0)

    def _mark(self, key: str) -> None:
        self._timers.pop(key, None)
        self._dirty[key] = None
        self._kick()

    def _kick(self) -> None:
        while not self._busy and self._dirty and not self._stopped:
            key = next(iter(self._dirty))
            del self._dirty[key]
            snapshot = self.snapshot(key)
            if snapshot is None:
                continue  # closed since
            self._busy = True
            future = asyncio.get_running_loop().run_in_executor(
                self.worker, self.session.check, snapshot, self.buffers())
            future.add_done_callback(partial(self._checked, snapshot))

    def _checked(self, snapshot: Snapshot, future: "asyncio.Future[CheckResult]") -> None:
        self._busy = False
        try:
            result = future.result()
        except asyncio.CancelledError:
            return
        except Exception as exc:  # noqa: BLE001 - a bug in devlint: say so, keep serving
            logger.exception("checking %s failed", snapshot.key)
            self._tell(f"devlint: internal error while checking {snapshot.path or snapshot.key}: "
                       f"{type(exc).__name__}: {exc}. This is a bug in devlint; please report it.",
                       types.MessageType.Error)
        else:
            if self.version_of(snapshot.key) == snapshot.version and self.is_open(snapshot.key):
                self.publish(result)
        self._kick()
        self.flush()
        self.changed.set()

    def stop(self) -> None:
        self._stopped = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.worker.shutdown(wait=False, cancel_futures=True)

    # --- documents -------------------------------------------------------------------------

    def is_open(self, key: str) -> bool:
        return key in self.documents or key in self.notebooks

    def version_of(self, key: str) -> int | None:
        if key in self.notebooks:
            notebook = self.workspace.get_notebook_document(notebook_uri=key)
            return notebook.version if notebook is not None else None
        return self.workspace.get_text_document(key).version

    def snapshot(self, key: str) -> Snapshot | None:
        """What a check of `key` reads, taken now (pygls keeps the documents' current text)."""
        if key in self.documents:
            document = self.workspace.get_text_document(key)
            return Snapshot(key, _path_of(key), document.version, text=document.source)
        if key in self.notebooks:
            notebook = self.workspace.get_notebook_document(notebook_uri=key)
            if notebook is None:
                return None
            uris, sources = [], []
            for cell in notebook.cells:
                if cell.kind != types.NotebookCellKind.Code:
                    continue
                document = self.workspace.get_text_document(cell.document)
                if document.language_id not in (None, "python"):
                    continue
                uris.append(cell.document)
                sources.append(document.source)
            return Snapshot(key, _path_of(key), notebook.version, cells=tuple(sources), cell_keys=tuple(uris))
        return None

    def buffers(self) -> dict[Path, str]:
        """The open Python files' current text by real path: what the project index reads."""
        out = {}
        for key in self.documents:
            path = _path_of(key)
            if path is not None:
                out[Path(os.path.realpath(path))] = self.workspace.get_text_document(key).source
        return out

    def locate(self, uri: str) -> tuple[str, int | None] | None:
        """(document key, code cell or None) of a text document or notebook cell URI."""
        if uri in self.documents:
            return uri, None
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is None or notebook.uri not in self.published:
            return None
        cells = self.published[notebook.uri].snapshot.cell_keys or ()
        return (notebook.uri, cells.index(uri) + 1) if uri in cells else None

    def closed(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        self._dirty.pop(key, None)
        self.documents.pop(key, None)
        self.notebooks.pop(key, None)
        self.session.forget(key)
        result = self.published.pop(key, None)
        for uri in (result.snapshot.cell_keys or ()) if result is not None else ():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if result is None or result.snapshot.cell_keys is None:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=key, diagnostics=[]))
        path = _path_of(key)
        if path is not None:  # its dependants now read the file on disk
            self.check_dependants(os.path.realpath(path))
        if result is not None:
            self.republish(self.paths_of(result.elsewhere()))
        self._held.pop(key, None)
        self.flush()

    def check_dependants(self, real_path: str, but: str | None = None) -> None:
        """Check again the open documents whose last result read this file (but `but`)."""
        for key, result in self.published.items():
            if key != but and real_path in result.depends and self.is_open(key):
                self.schedule(key, 0)

    # --- diagnostics -----------------------------------------------------------------------

    def units(self, text: str) -> int:
        return self.workspace.position_codec.client_num_units(text)

    def publish(self, result: CheckResult) -> None:
        """Record `result`; its diagnostics are sent by `flush`, once the queued checks are done."""
        key = result.snapshot.key
        before = self.published.get(key)
        self.published[key] = result
        if result.problem is not None:
            self._tell(f"devlint: {result.problem}", types.MessageType.Error)
        if key not in self._held:
            self._held[key] = before
        # a file whose findings other documents' checks place in it shows them too
        moved = self.paths_of(result.elsewhere()) | (self.paths_of(before.elsewhere()) if before else set())
        self.republish(moved - {result.snapshot.path and os.path.realpath(result.snapshot.path)})
        if result.analysed and result.snapshot.path:
            self.check_dependants(os.path.realpath(result.snapshot.path), but=key)
        self.changed.set()

    def flush(self) -> None:
        """Send the held diagnostics when no check is running or queued: a document opened with
        another that places findings in it gets one list, not an empty one and then the real one."""
        if self._busy or self._dirty or not self._held:
            return
        held, self._held = self._held, {}
        if self.pull_mode:  # the client pulls: tell it that what it has is out of date
            from devlint.server.pull import refresh

            refresh(self)
            return
        for key, before in held.items():
            result = self.published.get(key)
            if result is None or not self.is_open(key):
                continue
            if result.snapshot.is_notebook:
                self._publish_notebook(result, before)
            else:
                self._publish_text(key)

    def paths_of(self, findings: Iterable[Finding]) -> set[str]:
        return {os.path.realpath(f.path) for f in findings}

    def republish(self, real_paths: set[str]) -> None:
        for key in self.documents:
            path = _path_of(key)
            if path is not None and os.path.realpath(path) in real_paths and key in self.published:
                self._held.setdefault(key, self.published[key])

    def findings_of(self, key: str) -> list[Finding]:
        """What an open file shows: its own check's findings, and those other open documents'
        checks located in it (less any its unsaved text suppresses), once each."""
        result = self.published[key]
        shown = list(result.own())
        path = result.snapshot.path
        if path is not None:
            real = os.path.realpath(path)
            seen = {(f.line, f.column, f.code) for f in shown}
            placed = []
            for other_key, other in self.published.items():
                if other_key == key:
                    continue
                for finding in other.elsewhere():
                    spot = (finding.line, finding.column, finding.code)
                    if os.path.realpath(finding.path) == real and spot not in seen:
                        seen.add(spot)
                        placed.append(finding)
            shown += apply_suppressions(placed, result.snapshot.text)
        return shown

    def text_diagnostics(self, key: str) -> list[types.Diagnostic]:
        result = self.published[key]
        lines = split_lines(result.snapshot.text or "")
        return [convert.diagnostic(f, lines, self.units, self.step_target(result)) for f in self.findings_of(key)]

    def cell_diagnostics(self, result: CheckResult) -> dict[int, list[types.Diagnostic]]:
        cells = result.snapshot.cell_keys or ()
        sources = result.snapshot.cells or ()
        by_cell: dict[int, list[types.Diagnostic]] = {index: [] for index in range(1, len(cells) + 1)}
        for finding in result.own():
            if finding.cell in by_cell:
                lines = split_lines(sources[finding.cell - 1])
                by_cell[finding.cell].append(convert.diagnostic(finding, lines, self.units, self.step_target(result)))
        return by_cell

    def _publish_text(self, key: str) -> None:
        result = self.published[key]
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=key, diagnostics=self.text_diagnostics(key), version=result.snapshot.version))

    def _publish_notebook(self, result: CheckResult, before: CheckResult | None) -> None:
        cells = result.snapshot.cell_keys or ()
        by_cell = self.cell_diagnostics(result)
        for index, uri in enumerate(cells, start=1):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=by_cell[index]))
        for uri in set(before.snapshot.cell_keys or ()) - set(cells) if before is not None else ():
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def step_target(self, result: CheckResult) -> Callable[[str, int | None], tuple[str, Sequence[str] | None] | None]:
        """The URI and lines an evidence step of `result` points into: a cell of this notebook,
        this file, another open document, or a file on disk (lines unknown: code points)."""
        snapshot = result.snapshot

        def target(path: str, cell: int | None) -> tuple[str, Sequence[str] | None] | None:
            same = os.path.abspath(path) == snapshot.display
            if same and snapshot.cell_keys is not None:
                if cell is None or not 1 <= cell <= len(snapshot.cell_keys):
                    return None
                return snapshot.cell_keys[cell - 1], split_lines((snapshot.cells or ())[cell - 1])
            if same:
                return snapshot.key, split_lines(snapshot.text or "")
            uri = from_fs_path(os.path.abspath(path))
            if uri is None:
                return None
            if uri in self.documents:
                return uri, split_lines(self.workspace.get_text_document(uri).source)
            return uri, None

        return target

    def _tell(self, message: str, kind: types.MessageType) -> None:
        if message in self._told:
            return
        self._told.add(message)
        logger.error("%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    # --- code actions ----------------------------------------------------------------------

    def current(self, key: str) -> CheckResult | None:
        """The published result of `key` when it still describes the text the editor has."""
        result = self.published.get(key)
        if result is None or self.version_of(key) != result.snapshot.version:
            return None
        return result

    def lines_of(self, result: CheckResult, cell: int | None) -> list[str]:
        if cell is not None:
            return split_lines((result.snapshot.cells or ())[cell - 1])
        return split_lines(result.snapshot.text or "")

    def findings_in(self, uri: str, first: int, last: int) -> tuple[CheckResult, int | None, list[Finding]] | None:
        """The own findings of the document (or cell) at `uri` on LSP lines first..last."""
        where = self.locate(uri)
        if where is None:
            return None
        key, cell = where
        result = self.current(key)
        if result is None:
            return None
        found = [f for f in result.own() if f.cell == cell and f.line - 1 <= last and first <= f.end_line - 1]
        return result, cell, found

    def workspace_edit(self, result: CheckResult, change: Change) -> types.WorkspaceEdit:
        edits: dict[str, list[types.TextEdit]] = {}
        for cell, new in change.items():
            if cell is None:
                uri, old = result.snapshot.key, result.snapshot.text or ""
            else:
                uri, old = (result.snapshot.cell_keys or ())[cell - 1], (result.snapshot.cells or ())[cell - 1]
            edits[uri] = [convert.text_edit(old, new, self.units)]
        return types.WorkspaceEdit(changes=edits)

    def actions_for(self, result: CheckResult, cell: int | None, finding: Finding,
                    wants: "Any") -> list[types.CodeAction]:
        lines = self.lines_of(result, cell)
        diagnostic = convert.diagnostic(finding, lines, self.units, self.step_target(result))
        actions = []
        if wants(types.CodeActionKind.QuickFix) and finding.fix is not None and finding.fix.edits:
            change = self.session.fix_change(result, finding)
            if change is not None:
                actions.append(types.CodeAction(
                    title=fix_title(finding), kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                    edit=self.workspace_edit(result, change), is_preferred=finding.fix.safe or None))
        if wants(types.CodeActionKind.QuickFix):
            change = self.session.suppress_change(result, finding)
            if change is not None:
                actions.append(types.CodeAction(
                    title=suppress_title(finding), kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                    edit=self.workspace_edit(result, change)))
        return actions

    async def fix_all_edit(self, result: CheckResult) -> types.WorkspaceEdit | None:
        change = await asyncio.get_running_loop().run_in_executor(self.worker, self.session.fix_all_change, result)
        if change is None or self.version_of(result.snapshot.key) != result.snapshot.version:
            return None
        return self.workspace_edit(result, change)

    def supports_resolving_edits(self) -> bool:
        document = self.client_capabilities.text_document
        action = document.code_action if document is not None else None
        support = action.resolve_support if action is not None else None
        return support is not None and "edit" in (support.properties or [])

    async def apply(self, edit: types.WorkspaceEdit | None, label: str) -> dict[str, Any]:
        if edit is None:
            return {"applied": False}
        response = await self.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=edit, label=label))
        return {"applied": bool(response and response.applied)}


def _warm_up() -> None:
    import devlint.engine  # noqa: F401 - libcst, the analysis and every rule
    import devlint.fix.apply  # noqa: F401


def fix_title(finding: Finding) -> str:
    assert finding.fix is not None
    title = f"{finding.code}: {finding.fix.description}"
    return title if finding.fix.safe else f"{title} (unsafe fix: changes behaviour)"


def suppress_title(finding: Finding) -> str:
    return f"Suppress {finding.code} on this line (# noqa: {finding.code})"


def _path_of(uri: str) -> str | None:
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri)


def _kind_filter(only: Sequence[str] | None) -> Callable[[str], bool]:
    def wants(kind: str) -> bool:
        return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)

    return wants


def _rule_links(root: str) -> None:
    """Diagnostics link their code under the workspace's `rule-url-base`, as `devlint check` does."""
    from devlint.config import ConfigError, load_config
    from devlint.docs import set_rule_url_base

    try:
        set_rule_url_base(load_config(None, start=root).rule_url_base)
    except ConfigError:
        pass  # shown when a document under it is checked


def _is_python(document: types.TextDocumentItem) -> bool:
    return document.language_id == "python" or document.uri.endswith(".py")


def build() -> DevlintServer:
    """The server with every feature registered."""
    server = DevlintServer()

    from devlint.server.pull import register_pull

    register_pull(server)

    @server.feature(types.INITIALIZE)
    def initialize(ls: DevlintServer, params: types.InitializeParams) -> None:
        text_caps = params.capabilities.text_document
        ls.pull_mode = text_caps is not None and text_caps.diagnostic is not None
        root = _path_of(params.root_uri) if params.root_uri else params.root_path
        if params.workspace_folders:
            root = _path_of(params.workspace_folders[0].uri) or root
        ls.session.root = root or os.getcwd()
        apply_client_settings(ls, params.initialization_options)
        _rule_links(ls.session.root)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: DevlintServer, params: types.InitializedParams) -> None:
        workspace = ls.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace is not None else None
        if watched is not None and watched.dynamic_registration:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="devlint-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                    types.FileSystemWatcher(glob_pattern=pattern)
                    for pattern in ("**/*.py", f"**/{CONFIG_FILE}", f"**/{PYPROJECT}")]),
            )]))
        # load the parser and the analysis now, not on the first document's check
        ls.worker.submit(_warm_up)
        if await pull_settings(ls):
            ls.schedule_all()

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DevlintServer, params: None) -> None:
        ls.stop()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: DevlintServer, params: types.DidOpenTextDocumentParams) -> None:
        if _is_python(params.text_document):
            ls.documents[params.text_document.uri] = None
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: DevlintServer, params: types.DidChangeTextDocumentParams) -> None:
        if params.text_document.uri in ls.documents:
            ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: DevlintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in ls.documents:
            ls.schedule(uri, 0)
        elif (_path_of(uri) or "").endswith(_CONFIG_NAMES):
            ls.schedule_all()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: DevlintServer, params: types.DidCloseTextDocumentParams) -> None:
        if params.text_document.uri in ls.documents:
            ls.closed(params.text_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_open(ls: DevlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.notebooks[params.notebook_document.uri] = None
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_change(ls: DevlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        if params.notebook_document.uri in ls.notebooks:
            ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_save(ls: DevlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        if params.notebook_document.uri in ls.notebooks:
            ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_close(ls: DevlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        if params.notebook_document.uri in ls.notebooks:
            ls.closed(params.notebook_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(ls: DevlintServer, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("devlint"), dict):
            apply_client_settings(ls, settings["devlint"])
        else:
            await pull_settings(ls)
        ls.schedule_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files_changed(ls: DevlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        everything = False
        for change in params.changes:
            path = _path_of(change.uri)
            if path is None:
                continue
            if os.path.basename(path) in _CONFIG_NAMES:
                everything = True  # the settings of every document below it may have changed
            elif change.type != types.FileChangeType.Changed:
                everything = True  # a module appeared or went away: imports may resolve elsewhere
            else:
                ls.check_dependants(os.path.realpath(path))
        if everything:
            _rule_links(ls.session.root)
            ls.session.forget()
            ls.schedule_all()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=True))
    async def code_action(ls: DevlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        wants = _kind_filter(params.context.only)
        found = ls.findings_in(params.text_document.uri, params.range.start.line, params.range.end.line)
        if found is None:
            return []
        result, cell, findings = found
        actions = [action for finding in findings for action in ls.actions_for(result, cell, finding, wants)]
        if wants(FIX_ALL_KIND) and any(f.fix is not None and f.fix.safe and f.fix.edits for f in result.own()):
            action = types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL_KIND,
                                      data={"fixAll": result.snapshot.key, "version": result.snapshot.version})
            if not ls.supports_resolving_edits():
                action.edit = await ls.fix_all_edit(result)
            if action.edit is not None or ls.supports_resolving_edits():
                actions.append(action)
        return actions

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def resolve_code_action(ls: DevlintServer, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        key = data.get("fixAll")
        result = ls.current(key) if isinstance(key, str) else None
        if action.edit is None and result is not None and result.snapshot.version == data.get("version"):
            action.edit = await ls.fix_all_edit(result)
        return action

    @server.command(COMMAND_FIX)
    async def command_fix(ls: DevlintServer, *args: Any) -> dict[str, Any]:
        return await run_finding_command(ls, args, suppress=False)

    @server.command(COMMAND_SUPPRESS)
    async def command_suppress(ls: DevlintServer, *args: Any) -> dict[str, Any]:
        return await run_finding_command(ls, args, suppress=True)

    @server.command(COMMAND_FIX_ALL)
    async def command_fix_all(ls: DevlintServer, *args: Any) -> dict[str, Any]:
        uri = args[0] if args and isinstance(args[0], str) else None
        where = ls.locate(uri) if uri else None
        result = ls.current(where[0]) if where else None
        if result is None:
            return {"applied": False}
        return await ls.apply(await ls.fix_all_edit(result), FIX_ALL_TITLE)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DevlintServer, params: types.HoverParams) -> types.Hover | None:
        line, character = params.position.line, params.position.character
        found = ls.findings_in(params.text_document.uri, line, line)
        if found is None:
            return None
        result, cell, findings = found
        lines = ls.lines_of(result, cell)
        under = []
        for finding in findings:
            where = convert.span(lines, finding.line, finding.column, finding.end_line, finding.end_column, ls.units)
            if (where.start.line, where.start.character) <= (line, character) <= (where.end.line, where.end.character):
                under.append((finding, where))
        if not under:
            return None
        document = ls.client_capabilities.text_document
        hover_caps = document.hover if document is not None else None
        formats = (hover_caps.content_format if hover_caps is not None else None) or [types.MarkupKind.Markdown]
        markdown = types.MarkupKind.Markdown in formats
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText,
                                         value=convert.hover_text([f for f, _ in under], markdown)),
            range=under[0][1])

    return server


def apply_client_settings(ls: DevlintServer, data: object) -> None:
    """The editor's `devlint` settings: rule selection (select, extendSelect, ignore) and the
    debounce (debounceMs)."""
    if not isinstance(data, dict):
        return
    ls.session.editor = EditorSettings.from_client(data)
    debounce = data.get("debounceMs")
    if isinstance(debounce, (int, float)) and not isinstance(debounce, bool) and debounce >= 0:
        ls.debounce_s = debounce / 1000


async def pull_settings(ls: DevlintServer) -> bool:
    """Ask a client that serves `workspace/configuration` for the `devlint` section."""
    workspace = ls.client_capabilities.workspace
    if workspace is None or not workspace.configuration:
        return False
    try:
        answer = await ls.workspace_configuration_async(types.ConfigurationParams(items=[
            types.ConfigurationItem(section="devlint")]))
    except Exception:  # noqa: BLE001 - a client that cannot answer keeps the settings it gave
        logger.warning("workspace/configuration failed", exc_info=True)
        return False
    if answer and isinstance(answer[0], dict):
        apply_client_settings(ls, answer[0])
        return True
    return False


async def run_finding_command(ls: DevlintServer, args: Sequence[Any], *, suppress: bool) -> dict[str, Any]:
    """`devlint.applyFix` / `devlint.suppress` with (uri, diagnostic data) as arguments."""
    if len(args) < 2 or not isinstance(args[0], str) or not isinstance(args[1], dict):
        return {"applied": False}
    uri, data = args[0], args[1]
    where = ls.locate(uri)
    result = ls.current(where[0]) if where else None
    if result is None or where is None:
        return {"applied": False}
    finding = result.find(str(data.get("code")), int(data.get("line", 0)), int(data.get("column", 0)), where[1])
    if finding is None:
        return {"applied": False}
    if suppress:
        change, label = ls.session.suppress_change(result, finding), suppress_title(finding)
    else:
        change = ls.session.fix_change(result, finding)
        label = fix_title(finding) if finding.fix is not None else ""
    return await ls.apply(ls.workspace_edit(result, change) if change is not None else None, label)
