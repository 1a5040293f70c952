"""A scripted editor for the language-server tests: pygls' real LSP client driving a real
`devlint server` process over stdio, and recording everything the server publishes.

Every wait is on an event (a publication, a response) with a generous timeout, never on a
sleep, so the tests hold on a loaded machine.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, Callable

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

TIMEOUT_S = 120.0
SRC = str(Path(__file__).resolve().parents[1] / "src")
EVIDENCE_SERVER = str(Path(__file__).resolve().parent / "evidence_server.py")


class Editor:
    """One editor session: `await Editor.start(root)`, then open, change, ask, `await stop()`."""

    def __init__(self, root: Path, initialization_options: Any = None,
                 configuration: Any = None, resolve_edits: bool = False, evidence: bool = False,
                 pull: bool = False) -> None:
        self.root = root
        # the real server, or the same with synthetic evidence on every finding (evidence_server.py)
        self.command = [sys.executable, EVIDENCE_SERVER] if evidence else [sys.executable, "-m", "devlint", "server"]
        self.initialization_options = initialization_options
        self.configuration = configuration  # what `workspace/configuration` answers (None: not offered)
        self.resolve_edits = resolve_edits
        self.pull_diagnostics = pull  # declare textDocument/diagnostic: the client asks, nothing is pushed
        self.refreshes = 0  # workspace/diagnostic/refresh requests received
        self.client = LanguageClient("devlint-test-editor", "1")
        self.published: list[types.PublishDiagnosticsParams] = []
        self.messages: list[types.ShowMessageParams] = []
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.registrations: list[types.Registration] = []
        self.versions: dict[str, int] = {}
        self.texts: dict[str, str] = {}
        self._event = asyncio.Event()
        self._stderr: list[bytes] = []
        self.returncode: int | None = None

    @classmethod
    async def start(cls, root: Path, **options: Any) -> "Editor":
        editor = cls(root, **options)
        await editor._launch()
        return editor

    async def _launch(self) -> None:
        client = self.client

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)
            self._event.set()

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params)
            self._event.set()

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.applied.append(params)
            self._event.set()
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            self.registrations.extend(params.registrations)

        @client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
        def on_refresh(params: None) -> None:
            self.refreshes += 1
            self._event.set()

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params: types.ConfigurationParams) -> list[Any]:
            return [self.configuration for _ in params.items]

        env = dict(os.environ)
        env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
        await client.start_io(*self.command, cwd=str(self.root), env=env)
        process = client._server
        assert process is not None and process.stderr is not None
        self._drain = asyncio.create_task(self._read_stderr(process.stderr))
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                configuration=self.configuration is not None,
                did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
                apply_edit=True,
                diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
                if self.pull_diagnostics else None,
            ),
            text_document=types.TextDocumentClientCapabilities(
                code_action=types.CodeActionClientCapabilities(
                    resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])
                    if self.resolve_edits else None),
                hover=types.HoverClientCapabilities(content_format=[types.MarkupKind.Markdown]),
                publish_diagnostics=types.PublishDiagnosticsClientCapabilities(related_information=True),
                diagnostic=types.DiagnosticClientCapabilities(related_document_support=True)
                if self.pull_diagnostics else None,
            ),
            notebook_document=types.NotebookDocumentClientCapabilities(
                synchronization=types.NotebookDocumentSyncClientCapabilities()),
        )
        await asyncio.wait_for(client.initialize_async(types.InitializeParams(
            capabilities=capabilities, root_uri=from_fs_path(str(self.root)), process_id=os.getpid(),
            initialization_options=self.initialization_options)), TIMEOUT_S)
        client.initialized(types.InitializedParams())

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            self._stderr.append(chunk)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    async def stop(self) -> int:
        """shutdown, exit, and the server's exit status."""
        await asyncio.wait_for(self.client.shutdown_async(None), TIMEOUT_S)
        self.client.exit(None)
        process = self.client._server
        assert process is not None
        self.returncode = await asyncio.wait_for(process.wait(), TIMEOUT_S)
        await self.client.stop()
        await self._drain
        return self.returncode

    # --- documents ------------------------------------------------------------------------

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.root / rel))

    def open(self, rel: str, text: str | None = None) -> str:
        uri = self.uri(rel)
        text = (self.root / rel).read_text(encoding="utf-8") if text is None else text
        self.versions[uri] = 1
        self.texts[uri] = text
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri

    def change(self, uri: str, text: str) -> int:
        """Replace the whole text (an unsaved edit); returns the new version."""
        self.versions[uri] += 1
        self.texts[uri] = text
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return self.versions[uri]

    def edit(self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> int:
        """An incremental edit of a range (0-based line, character), as editors send them."""
        self.versions[uri] += 1
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=new_text)]))
        return self.versions[uri]

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def open_notebook(self, rel: str, cells: list[tuple[str, str]]) -> tuple[str, list[str]]:
        """Open a notebook of (kind, source) cells; returns its URI and its cells' URIs."""
        uri = self.uri(rel)
        cell_uris = [f"vscode-notebook-cell:{(self.root / rel).as_posix()}#cell{index}" for index in range(len(cells))]
        self.versions[uri] = 1
        self.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(
                uri=uri, notebook_type="jupyter-notebook", version=1,
                cells=[types.NotebookCell(kind=types.NotebookCellKind.Code if kind == "code"
                                          else types.NotebookCellKind.Markup, document=cell_uri)
                       for (kind, _), cell_uri in zip(cells, cell_uris)]),
            cell_text_documents=[types.TextDocumentItem(uri=cell_uri, language_id="python" if kind == "code"
                                                        else "markdown", version=1, text=source)
                                 for (kind, source), cell_uri in zip(cells, cell_uris)]))
        return uri, cell_uris

    def change_cell(self, notebook_uri: str, cell_uri: str, text: str) -> None:
        self.versions[notebook_uri] += 1
        self.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(
                uri=notebook_uri, version=self.versions[notebook_uri]),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cell_uri, version=self.versions[notebook_uri]),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=text)])]))))

    # --- waiting for the server -------------------------------------------------------------

    def mark(self) -> int:
        """A point in the stream of publications: wait for ones after it."""
        return len(self.published)

    async def diagnostics(self, uri: str, predicate: Callable[[list[types.Diagnostic]], bool] = lambda d: True,
                          *, after: int = 0, version: int | None = None) -> list[types.Diagnostic]:
        """The first diagnostics published for `uri` after mark `after` (and for `version`,
        when given) that satisfy `predicate`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        seen = after
        while True:
            for params in self.published[seen:]:
                if params.uri == uri and (version is None or params.version == version) \
                        and predicate(list(params.diagnostics)):
                    return list(params.diagnostics)
            seen = len(self.published)
            self._event.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                got = [(p.uri, p.version, [d.code for d in p.diagnostics]) for p in self.published]
                raise AssertionError(f"no matching diagnostics for {uri}; published: {got}\n"
                                     f"server stderr:\n{self.stderr}")
            try:
                await asyncio.wait_for(self._event.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    async def applied_edit(self, after: int = 0) -> types.ApplyWorkspaceEditParams:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        while len(self.applied) <= after:
            self._event.clear()
            await asyncio.wait_for(self._event.wait(), max(deadline - loop.time(), 0.01))
        return self.applied[after]

    async def code_actions(self, uri: str, diagnostic: types.Diagnostic | None = None,
                           line: int | None = None, only: list[str] | None = None) -> list[types.CodeAction]:
        if diagnostic is not None:
            where = diagnostic.range
        else:
            assert line is not None
            where = types.Range(start=types.Position(line, 0), end=types.Position(line, 0))
        answer = await asyncio.wait_for(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=where,
            context=types.CodeActionContext(diagnostics=[diagnostic] if diagnostic else [], only=only))), TIMEOUT_S)
        return [a for a in answer or [] if isinstance(a, types.CodeAction)]

    async def pull(self, uri: str, previous: str | None = None) -> types.DocumentDiagnosticReport:
        """textDocument/diagnostic for `uri` (with the resultId of the last answer, if any)."""
        return await asyncio.wait_for(self.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri), previous_result_id=previous)), TIMEOUT_S)

    async def pull_workspace(self, previous: dict[str, str] | None = None) -> types.WorkspaceDiagnosticReport:
        """workspace/diagnostic (with the resultIds of the last answer, by URI)."""
        return await asyncio.wait_for(self.client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(
            previous_result_ids=[types.PreviousResultId(uri=u, value=v) for u, v in (previous or {}).items()])),
            TIMEOUT_S)

    async def refreshed(self, after: int) -> None:
        """Wait for a workspace/diagnostic/refresh beyond the first `after`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT_S
        while self.refreshes <= after:
            self._event.clear()
            await asyncio.wait_for(self._event.wait(), max(deadline - loop.time(), 0.01))

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), TIMEOUT_S)

    async def hover(self, uri: str, line: int, character: int) -> types.Hover | None:
        return await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, character))),
            TIMEOUT_S)

    async def execute(self, command: str, *arguments: Any) -> Any:
        return await asyncio.wait_for(self.client.workspace_execute_command_async(types.ExecuteCommandParams(
            command=command, arguments=list(arguments))), TIMEOUT_S)


def apply_edit(text: str, edit: types.TextEdit) -> str:
    """What an editor does with one TextEdit (positions in UTF-16 units, as negotiated by default)."""
    lines = text.splitlines(keepends=True)

    def offset(position: types.Position) -> int:
        before = sum(len(line) for line in lines[:position.line])
        line = lines[position.line] if position.line < len(lines) else ""
        units, chars = 0, 0
        while units < position.character and chars < len(line):
            units += 2 if ord(line[chars]) > 0xFFFF else 1
            chars += 1
        return before + chars

    return text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]


def run(scenario: Callable[..., Any], *args: Any) -> Any:
    """Run one async scenario to completion (the tests are plain functions)."""
    return asyncio.run(scenario(*args))
