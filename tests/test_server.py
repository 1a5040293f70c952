"""`devlint server`: the real server over stdio, driven by a real LSP client (pygls').

Each test is one editor session (tests/lsp_editor.py): initialize, open and edit documents,
ask for code actions, hover and commands, and shut down, asserting on what the server
publishes. Waits are on events with generous timeouts; nothing here measures time (the latency
benchmark is bench/server_latency.py).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from lsprotocol import types

from lsp_editor import SRC, Editor, apply_edit, run
from test_projects import MODEL_WITH_MASK

TRAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,))), batch_size=4)
model = nn.Linear(4, 2).to(device)


def fit():
    for x, y in loader:
        x.to(device)
        loss = nn.functional.cross_entropy(model(x), y.to(device))
        loss.backward()


fit()
state = torch.load("ckpt.pt")
"""
# 0-based LSP lines of the findings above
DISCARDED_LINE, LOAD_LINE = 11, 17


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(str(d.code) for d in diagnostics)


def by_code(diagnostics: list[types.Diagnostic], code: str) -> types.Diagnostic:
    (found,) = [d for d in diagnostics if d.code == code]
    return found


def test_open_change_and_shutdown(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, evidence=True)
        uri = editor.open("train.py")
        diagnostics = await editor.diagnostics(uri, version=1)
        assert "DEV107" in codes(diagnostics) and "DEV201" in codes(diagnostics)

        discarded = by_code(diagnostics, "DEV107")
        assert discarded.source == "devlint"
        assert discarded.severity == types.DiagnosticSeverity.Error
        assert by_code(diagnostics, "DEV201").severity == types.DiagnosticSeverity.Warning
        assert discarded.code_description is not None
        assert discarded.code_description.href.endswith("/docs/rules/DEV107.md")
        assert discarded.range == types.Range(start=types.Position(DISCARDED_LINE, 8),
                                              end=types.Position(DISCARDED_LINE, 20))
        assert "returns a moved copy" in discarded.message
        assert discarded.data["fix"] == "safe"
        # the evidence steps, as related information
        related = discarded.related_information
        assert related is not None and [r.message for r in related] == [
            "DEV107: the story starts here", "and goes on here"]
        assert related[0].location.uri == uri
        assert related[0].location.range.start == types.Position(0, 0)
        assert related[1].location.range.start == types.Position(1, 4)

        # an incremental edit that assigns the moved tensor: diagnosed again, for that version
        version = editor.edit(uri, (DISCARDED_LINE, 8), (DISCARDED_LINE, 8), "x = ")
        diagnostics = await editor.diagnostics(uri, version=version)
        assert "DEV107" not in codes(diagnostics) and "DEV201" in codes(diagnostics)

        # a whole-text change back
        version = editor.change(uri, TRAIN + "\n")
        assert "DEV107" in codes(await editor.diagnostics(uri, version=version))

        # saving publishes again (from memory: nothing it depends on changed)
        mark = editor.mark()
        editor.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        assert "DEV107" in codes(await editor.diagnostics(uri, after=mark, version=version))

        mark = editor.mark()
        editor.close(uri)
        assert await editor.diagnostics(uri, lambda d: d == [], after=mark) == []
        assert await editor.stop() == 0

    run(scenario)


def test_code_actions_and_applying_them(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        uri = editor.open("train.py")
        diagnostics = await editor.diagnostics(uri, version=1)
        discarded = by_code(diagnostics, "DEV107")

        actions = await editor.code_actions(uri, discarded)
        titles = [a.title for a in actions]
        fix = next(a for a in actions if a.title.startswith("DEV107: "))
        assert "unsafe" not in fix.title and fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
        assert fix.diagnostics and fix.diagnostics[0].code == "DEV107"
        assert "Suppress DEV107 on this line (# noqa: DEV107)" in titles
        fix_all = next(a for a in actions if a.kind == "source.fixAll.devlint")
        assert fix_all.title == "devlint: fix all safe fixes in this file"

        # the quick fix's workspace edit repairs the line and nothing else
        assert fix.edit is not None and fix.edit.changes is not None
        (edit,) = fix.edit.changes[uri]
        fixed = apply_edit(TRAIN, edit)
        assert fixed.splitlines()[DISCARDED_LINE] == "        x = x.to(device)"
        assert fixed.replace("x = x.to(device)", "x.to(device)") == TRAIN

        # the suppression comment
        suppress = next(a for a in actions if a.title.startswith("Suppress"))
        (edit,) = suppress.edit.changes[uri]
        assert apply_edit(TRAIN, edit).splitlines()[DISCARDED_LINE] == "        x.to(device)  # noqa: DEV107"

        # fix all: both safe fixes (the discarded move and torch.load's map_location), checked
        (edit,) = fix_all.edit.changes[uri]
        fixed_all = apply_edit(TRAIN, edit)
        assert "        x = x.to(device)" in fixed_all and "map_location=" in fixed_all

        # an edited document is diagnosed again without the fixed findings
        version = editor.change(uri, fixed_all)
        remaining = await editor.diagnostics(uri, version=version)
        assert "DEV107" not in codes(remaining) and "DEV201" not in codes(remaining)

        # only: what a client asks for on save
        version = editor.change(uri, TRAIN)
        await editor.diagnostics(uri, version=version)
        only = await editor.code_actions(uri, line=0, only=["source.fixAll"])
        assert [a.kind for a in only] == ["source.fixAll.devlint"]
        assert await editor.stop() == 0

    run(scenario)


def test_unsafe_fixes_are_titled_as_such_and_fix_all_resolves_lazily(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": """\
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(4, 2).to(device)
        val_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
        for images, labels in val_loader:
            logits = model(images)
        state = torch.load("ckpt.pt")
    """})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, resolve_edits=True)
        uri = editor.open("train.py")
        diagnostics = await editor.diagnostics(uri, lambda d: "DEV101" in codes(d))
        unmoved = by_code(diagnostics, "DEV101")
        assert unmoved.data["fix"] == "unsafe"
        actions = await editor.code_actions(uri, unmoved)
        (fix,) = [a for a in actions if a.title.startswith("DEV101: ")]
        assert fix.title.endswith("(unsafe fix: changes behaviour)") and not fix.is_preferred
        (edit,) = fix.edit.changes[uri]
        assert "images = images.to(device)" in apply_edit(editor.texts[uri], edit)

        # with resolve support, fix all comes without its edit, which resolving computes
        (fix_all,) = [a for a in actions if a.kind == "source.fixAll.devlint"]
        assert fix_all.edit is None
        resolved = await editor.resolve(fix_all)
        (edit,) = resolved.edit.changes[uri]
        fixed = apply_edit(editor.texts[uri], edit)
        assert "map_location=" in fixed and "images = images.to(device)" not in fixed  # safe ones only
        assert await editor.stop() == 0

    run(scenario)


def test_execute_command_applies_the_same_edits(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        uri = editor.open("train.py")
        discarded = by_code(await editor.diagnostics(uri, version=1), "DEV107")

        assert await editor.execute("devlint.applyFix", uri, discarded.data) == {"applied": True}
        request = await editor.applied_edit(0)
        (edit,) = request.edit.changes[uri]
        assert apply_edit(TRAIN, edit).splitlines()[DISCARDED_LINE] == "        x = x.to(device)"

        assert await editor.execute("devlint.suppress", uri, discarded.data) == {"applied": True}
        (edit,) = (await editor.applied_edit(1)).edit.changes[uri]
        assert apply_edit(TRAIN, edit).splitlines()[DISCARDED_LINE].endswith("# noqa: DEV107")

        assert await editor.execute("devlint.fixAll", uri) == {"applied": True}
        (edit,) = (await editor.applied_edit(2)).edit.changes[uri]
        assert "map_location=" in apply_edit(TRAIN, edit)

        # a finding that is not there applies nothing
        gone = dict(discarded.data, line=1)
        assert await editor.execute("devlint.applyFix", uri, gone) == {"applied": False}

        # the suppression, typed into the buffer, silences the finding
        lines = TRAIN.splitlines(keepends=True)
        lines[DISCARDED_LINE] = "        x.to(device)  # noqa: DEV107\n"
        version = editor.change(uri, "".join(lines))
        assert "DEV107" not in codes(await editor.diagnostics(uri, version=version))
        assert await editor.stop() == 0

    run(scenario)


def test_hover_explains_the_rule(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        uri = editor.open("train.py")
        await editor.diagnostics(uri, version=1)
        hover = await editor.hover(uri, DISCARDED_LINE, 10)
        assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
        text = hover.contents.value
        assert text.startswith("# DEV107: discarded-to")
        assert "## Why it crashes" in text and "## Use instead" in text
        assert "DEV107.md" in text
        assert await editor.hover(uri, 0, 0) is None  # no finding there
        assert await editor.stop() == 0

    run(scenario)


def test_configuration_file_and_editor_settings(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "devlint.toml": 'ignore = ["DEV201"]\n'})

    async def scenario() -> None:
        # the nearest configuration of the file applies, as in `devlint check`
        editor = await Editor.start(tmp_path, configuration={"ignore": ["DEV107"]})
        uri = editor.open("train.py")
        # the editor's own setting (pulled with workspace/configuration) applies on top of it
        diagnostics = await editor.diagnostics(uri, lambda d: True, version=1)
        assert "DEV201" not in codes(diagnostics)
        assert "DEV107" not in codes(await editor.diagnostics(uri, lambda d: "DEV107" not in codes(d)))
        assert any(r.method == "workspace/didChangeWatchedFiles" for r in editor.registrations)

        # the configuration file changes: the open file is diagnosed again with it
        mark = editor.mark()
        (tmp_path / "devlint.toml").write_text("ignore = []\n", encoding="utf-8")
        editor.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=editor.uri("devlint.toml"), type=types.FileChangeType.Changed)]))
        assert "DEV201" in codes(await editor.diagnostics(uri, lambda d: "DEV201" in codes(d), after=mark))

        # settings pushed with didChangeConfiguration
        mark = editor.mark()
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"devlint": {"ignore": ["DEV201"]}}))
        diagnostics = await editor.diagnostics(uri, lambda d: "DEV201" not in codes(d), after=mark)
        assert "DEV107" in codes(diagnostics)

        # an invalid configuration is shown (window/showMessage), and the file is still checked,
        # with the defaults and the editor's own (valid) selection, instead of going blank
        mark = editor.mark()
        (tmp_path / "devlint.toml").write_text('ignore = ["DEV999"]\n', encoding="utf-8")
        editor.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=editor.uri("devlint.toml"), type=types.FileChangeType.Changed)]))
        shown = await editor.diagnostics(uri, after=mark)
        assert "DEV107" in codes(shown) and "DEV201" not in codes(shown)
        message = next(m for m in editor.messages if "DEV999" in m.message)
        assert message.type == types.MessageType.Error and "checking with the default settings" in message.message

        # an unknown code in the editor's own setting: said, and the file's configuration still applies
        (tmp_path / "devlint.toml").write_text('ignore = ["DEV201"]\n', encoding="utf-8")
        mark = editor.mark()
        editor.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"devlint": {"select": ["DEV1", "DEV1O7"]}}))
        shown = await editor.diagnostics(uri, after=mark)
        assert "DEV107" in codes(shown) and "DEV201" not in codes(shown)
        message = next(m for m in editor.messages if "DEV1O7" in m.message)
        assert "without the editor's rule selection" in message.message
        assert await editor.stop() == 0

    run(scenario)


def test_rule_links_follow_the_workspace_setting(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "devlint.toml": 'rule-url-base = "https://docs.example.org/rules/"\n'})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        uri = editor.open("train.py")
        discarded = by_code(await editor.diagnostics(uri, version=1), "DEV107")
        assert discarded.code_description.href == "https://docs.example.org/rules/DEV107.md"
        assert await editor.stop() == 0

    run(scenario)


def test_initialization_options_select_rules(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, initialization_options={"select": ["DEV2"]})
        uri = editor.open("train.py")
        assert codes(await editor.diagnostics(uri, version=1)) == ["DEV201"]
        assert await editor.stop() == 0

    run(scenario)


UTILS = """\
import torch


def get_device():
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def to_device(batch, device):
    return [t.to(device) for t in batch]
"""

PROJECT_TRAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import utils as U

device = U.get_device()
model = nn.Linear(4, 4).to(device)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 4)), batch_size=4)
for batch in loader:
    x, y = U.to_device(batch, device)
    loss = (model(x) - y).pow(2).mean()
"""

def test_a_project_edit_rechecks_the_open_files_that_import_it(tmp_path: Path) -> None:
    write(tmp_path, {"utils.py": UTILS, "train.py": PROJECT_TRAIN, "models.py": MODEL_WITH_MASK,
                     "eval.py": "import torch\nfrom models import Net\n\ndevice = torch.device('cuda')\n"
                                "model = Net().to(device)\nout = model(torch.randn(2, 4, device=device))\n"})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, evidence=True)
        train = editor.open("train.py")
        assert "DEV101" not in codes(await editor.diagnostics(train, version=1))  # utils moves the batch

        # an unsaved edit of utils.py (open in another tab) is what train.py's check reads
        utils = editor.open("utils.py")
        await editor.diagnostics(utils, version=1)
        mark = editor.mark()
        editor.change(utils, UTILS.replace("return [t.to(device) for t in batch]", "return list(batch)"))
        diagnostics = await editor.diagnostics(train, lambda d: "DEV101" in codes(d), after=mark)
        assert by_code(diagnostics, "DEV101").range.start.line == 10
        assert (tmp_path / "utils.py").read_text(encoding="utf-8") == UTILS  # nothing was written

        # closing utils.py unsaved: train.py reads the file on disk again
        mark = editor.mark()
        editor.close(utils)
        await editor.diagnostics(train, lambda d: "DEV101" not in codes(d), after=mark)

        # a finding that eval.py's check locates in models.py is shown in models.py
        models = editor.open("models.py")
        evaluation = editor.open("eval.py")
        await editor.diagnostics(evaluation, version=1)
        in_models = await editor.diagnostics(models, lambda d: "DEV104" in codes(d))
        assert by_code(in_models, "DEV104").range.start.line == 8
        # its evidence names the file each step is in
        assert by_code(in_models, "DEV104").related_information[1].location.uri == models
        assert await editor.stop() == 0

    run(scenario)


def test_a_notebook_document(tmp_path: Path) -> None:
    cells = [
        ("code", "import torch\nimport torch.nn as nn\n"),
        ("markup", "# Training\n"),
        ("code", "device = torch.device('cuda')\nmodel = nn.Linear(4, 2).to(device)\n"),
        ("code", "x = torch.randn(3, 4)\nx.to(device)\nout = model(x)"),
    ]

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, evidence=True)
        notebook, cell_uris = editor.open_notebook("explore.ipynb", cells)
        last = await editor.diagnostics(cell_uris[3], lambda d: "DEV107" in codes(d))
        discarded = by_code(last, "DEV107")
        assert discarded.range.start == types.Position(1, 0)  # line 2 of the cell, not of the program
        # evidence steps in the notebook point at their cells
        assert [r.location.uri for r in discarded.related_information] == [cell_uris[0], cell_uris[0]]
        first = [p for p in editor.published if p.uri == cell_uris[0]]
        assert first and list(first[-1].diagnostics) == []

        # the quick fix edits the cell
        actions = await editor.code_actions(cell_uris[3], discarded)
        fix = next(a for a in actions if a.title.startswith("DEV107: "))
        (edit,) = fix.edit.changes[cell_uris[3]]
        assert apply_edit(cells[3][1], edit) == "x = torch.randn(3, 4)\nx = x.to(device)\nout = model(x)"

        # editing the cell re-diagnoses it
        mark = editor.mark()
        editor.change_cell(notebook, cell_uris[3], "x = torch.randn(3, 4)\nx = x.to(device)\nout = model(x)")
        assert await editor.diagnostics(cell_uris[3], lambda d: "DEV107" not in codes(d), after=mark) is not None
        assert await editor.stop() == 0

    run(scenario)


def test_devlint_check_does_not_import_pygls(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN, encoding="utf-8")
    code = (
        "import sys\n"
        "from devlint.cli import cli\n"
        "cli.main(['check', '--no-cache', '-j', '1', 'train.py'], standalone_mode=False)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'cattrs'))\n"
        "print('LOADED', loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"}, timeout=300)
    assert "LOADED []" in out.stdout, out.stdout + out.stderr


def test_the_real_analysis_evidence_is_related_information(tmp_path: Path) -> None:
    """The real server (no synthetic steps): the DEV104 shown in models.py carries the analysis'
    steps as related information, each in the file it is in. Findings are reported only in the
    file whose check made them, so the one shown in models.py is models.py's own check, on its
    caller's device (library mode), not eval.py's."""
    write(tmp_path, {"models.py": MODEL_WITH_MASK,
                     "eval.py": "import torch\nfrom models import Net\n\ndevice = torch.device('cuda')\n"
                                "model = Net().to(device)\nout = model(torch.randn(2, 4, device=device))\n"})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        models = editor.open("models.py")
        evaluation = editor.open("eval.py")
        await editor.diagnostics(evaluation, version=1)
        attribute = by_code(await editor.diagnostics(models, lambda d: "DEV104" in codes(d)), "DEV104")
        related = attribute.related_information
        assert related is not None and len(related) >= 2
        where = [(r.location.uri, r.location.range.start.line) for r in related]
        # the plain attribute is set in models.py, and meets the caller's tensors in forward
        assert where[0] == (models, 8) and "plain tensor" in related[0].message
        assert where[-1] == (models, 11) and "meet" in related[-1].message
        assert all(uri == models for uri, _ in where)
        assert await editor.stop() == 0

    run(scenario)


def test_one_publication_per_version_when_another_document_places_findings(tmp_path: Path) -> None:
    """models.py alone has no finding (library mode off); eval.py's check places DEV104 in it.
    Opened together, models.py gets one list for its version, with DEV104, not an empty list
    first and the real one after (the marks flickered)."""
    write(tmp_path, {"models.py": MODEL_WITH_MASK, "devlint.toml": "library-mode = false\n",
                     "eval.py": "import torch\nfrom models import Net\n\ndevice = torch.device('cuda')\n"
                                "model = Net().to(device)\nout = model(torch.randn(2, 4, device=device))\n"})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path)
        models = editor.open("models.py")
        evaluation = editor.open("eval.py")
        await editor.diagnostics(evaluation, version=1)
        await editor.diagnostics(models, lambda d: "DEV104" in codes(d))
        sent = [codes(p.diagnostics) for p in editor.published if p.uri == models]
        assert sent and all(found == ["DEV104"] for found in sent), sent
        assert await editor.stop() == 0

    run(scenario)


def test_pull_workspace_diagnostics(tmp_path: Path) -> None:
    """workspace/diagnostic: a report for every open document, "unchanged" for one whose
    resultId the client already has, and the new version of one that was edited."""
    write(tmp_path, {"train.py": TRAIN, "utils.py": UTILS, "project_train.py": PROJECT_TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, pull=True)
        train, other = editor.open("train.py"), editor.open("project_train.py")
        report = await editor.pull_workspace()
        by_uri = {item.uri: item for item in report.items}
        assert set(by_uri) == {train, other} and all(item.kind == "full" for item in report.items)
        assert {"DEV107", "DEV201"} <= set(codes(by_uri[train].items))
        ids = {uri: item.result_id for uri, item in by_uri.items()}
        again = {item.uri: item for item in (await editor.pull_workspace(ids)).items}
        assert {uri: item.kind for uri, item in again.items()} == {train: "unchanged", other: "unchanged"}
        editor.edit(train, (DISCARDED_LINE, 8), (DISCARDED_LINE, 8), "x = ")
        edited = {item.uri: item for item in (await editor.pull_workspace(ids)).items}
        assert edited[train].kind == "full" and "DEV107" not in codes(edited[train].items)
        assert edited[other].kind == "unchanged"
        assert await editor.stop() == 0

    run(scenario)


def test_pull_diagnostics(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN, "utils.py": UTILS, "project_train.py": PROJECT_TRAIN})

    async def scenario() -> None:
        editor = await Editor.start(tmp_path, pull=True)
        uri = editor.open("train.py")
        report = await editor.pull(uri)
        assert report.kind == "full" and {"DEV107", "DEV201"} <= set(codes(report.items))
        assert by_code(report.items, "DEV107").range.start.line == DISCARDED_LINE
        # asked again for the same version: unchanged
        again = await editor.pull(uri, previous=report.result_id)
        assert again.kind == "unchanged" and again.result_id == report.result_id
        # an edit: the answer is for the new version, checked now
        editor.edit(uri, (DISCARDED_LINE, 8), (DISCARDED_LINE, 8), "x = ")
        edited = await editor.pull(uri, previous=report.result_id)
        assert edited.kind == "full" and "DEV107" not in codes(edited.items)

        # a change in a module another open document reads: the client is asked to pull again
        train = editor.open("project_train.py")
        assert "DEV101" not in codes((await editor.pull(train)).items)
        utils = editor.open("utils.py")
        await editor.pull(utils)
        before = editor.refreshes
        editor.change(utils, UTILS.replace("return [t.to(device) for t in batch]", "return list(batch)"))
        for _ in range(5):  # a refresh for the checks of utils.py's opening may still come first
            await editor.refreshed(before)
            before = editor.refreshes
            if "DEV101" in codes((await editor.pull(train)).items):
                break
        else:
            raise AssertionError("project_train.py's pulled diagnostics never showed the edit of utils.py")
        assert editor.published == [] or all(p.diagnostics == [] for p in editor.published)  # nothing pushed
        assert await editor.stop() == 0

    run(scenario)
