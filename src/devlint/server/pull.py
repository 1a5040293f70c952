"""Pull diagnostics (`textDocument/diagnostic` and `workspace/diagnostic`, LSP 3.17) for clients
that ask instead of waiting.

A client that declares the capability gets nothing pushed: it asks for a document (or a
notebook cell) when it wants to, and the answer is the result for the version it has, checked
now if need be. Each report carries a `resultId` (the version and a digest of the list), so a
client that asks again for an unchanged document gets an "unchanged" report. When a check
changes what another document shows (an edit in a module it imports, a settings change), the
server asks the client to pull again (`workspace/diagnostic/refresh`) if it supports that.
`workspace/diagnostic` answers the same for every open document (each cell of an open notebook
its own report): what devlint knows is what the editor has open, since the findings of a file
depend on the unsaved text of the others.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from typing import Any

from lsprotocol import types

# the server (devlint.server.lsp.DevlintServer, which imports this module to register the feature)
DevlintServer = Any

__all__ = ["register_pull", "refresh"]

logger = logging.getLogger("devlint.server")
PULL_TIMEOUT_S = 120.0
IDENTIFIER = "devlint"


def _result_id(version: int | None, diagnostics: list[types.Diagnostic]) -> str:
    text = "\n".join(f"{d.code}:{d.range.start.line}:{d.range.start.character}:{d.message}" for d in diagnostics)
    return f"{version}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]}"


def _settled(ls: DevlintServer, key: str) -> bool:
    """The published result of `key` is for the text the editor has, and no check of it is queued."""
    return ls.current(key) is not None and key not in ls._dirty and key not in ls._timers


async def diagnostics_for(ls: DevlintServer, uri: str) -> tuple[int | None, list[types.Diagnostic]] | None:
    """(version, diagnostics) of an open document or notebook cell, once checked; None when
    `uri` is not an open Python document."""
    where = ls.locate(uri)
    if where is None:
        notebook = ls.workspace.get_notebook_document(cell_uri=uri)
        if notebook is None or notebook.uri not in ls.notebooks:
            return None
        where = (notebook.uri, None)  # a cell of a notebook not checked yet
    key = where[0]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PULL_TIMEOUT_S
    while not _settled(ls, key):
        if key not in ls._dirty and key not in ls._timers:
            ls.schedule(key, 0)
        ls.changed.clear()
        remaining = deadline - loop.time()
        if remaining <= 0 or not ls.is_open(key):
            return None
        try:
            await asyncio.wait_for(ls.changed.wait(), remaining)
        except asyncio.TimeoutError:
            pass
    result = ls.published[key]
    if result.snapshot.is_notebook:
        located = ls.locate(uri)
        cell = located[1] if located is not None else None
        return result.snapshot.version, (ls.cell_diagnostics(result).get(cell, []) if cell else [])
    return result.snapshot.version, ls.text_diagnostics(key)


def refresh(ls: DevlintServer) -> None:
    """Ask the client to pull again (when it supports `workspace/diagnostic/refresh`)."""
    workspace = ls.client_capabilities.workspace
    support = workspace.diagnostics if workspace is not None else None
    if support is not None and support.refresh_support:
        ls.workspace_diagnostic_refresh(None)


def register_pull(server: DevlintServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier=IDENTIFIER, inter_file_dependencies=True, workspace_diagnostics=True))
    async def document_diagnostic(ls: DevlintServer, params: types.DocumentDiagnosticParams
                                  ) -> types.DocumentDiagnosticReport:
        found = await diagnostics_for(ls, params.text_document.uri)
        if found is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        version, diagnostics = found
        result_id = _result_id(version, diagnostics)
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=diagnostics, result_id=result_id)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(ls: DevlintServer, params: types.WorkspaceDiagnosticParams
                                   ) -> types.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids}
        items: list[types.WorkspaceFullDocumentDiagnosticReport | types.WorkspaceUnchangedDocumentDiagnosticReport] = []
        for uri in _open_uris(ls):
            found = await diagnostics_for(ls, uri)
            if found is None:
                continue
            version, diagnostics = found
            result_id = _result_id(version, diagnostics)
            if previous.get(uri) == result_id:
                items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(
                    uri=uri, result_id=result_id, version=version))
            else:
                items.append(types.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=diagnostics, result_id=result_id, version=version))
        return types.WorkspaceDiagnosticReport(items=items)


def _open_uris(ls: DevlintServer) -> list[str]:
    """Every open Python document, and every code cell of every open notebook."""
    uris = list(ls.documents)
    for key in ls.notebooks:
        notebook = ls.workspace.get_notebook_document(notebook_uri=key)
        if notebook is not None:
            uris += [cell.document for cell in notebook.cells if cell.kind == types.NotebookCellKind.Code]
    return uris
