"""The server's protocol-free parts: `# noqa` insertion, minimal text edits, per-file settings
and results remembered until what they depend on changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from devlint.findings import Finding, Severity
from devlint.server.convert import text_edit
from devlint.server.session import Session, Snapshot, _with_noqa
from devlint.suppress import parse_suppressions

from lsp_editor import apply_edit


@pytest.mark.parametrize(("line", "expected"), [
    ("x.to(device)\n", "x.to(device)  # noqa: DEV107\n"),
    ("x.to(device)   \n", "x.to(device)  # noqa: DEV107\n"),
    ("x.to(device)  # noqa: DEV101\n", "x.to(device)  # noqa: DEV101, DEV107\n"),
    ("x.to(device)  # noqa: E501 (long)\n", "x.to(device)  # noqa: E501, DEV107 (long)\n"),
    ("x.to(device)  # devlint: ignore[DEV101]\n", "x.to(device)  # devlint: ignore[DEV101, DEV107]\n"),
    ("x.to(device)  # a note\n", "x.to(device)  # a note  # noqa: DEV107\n"),
    ("s = '# noqa: DEV101'; x.to(device)\n", "s = '# noqa: DEV101'; x.to(device)  # noqa: DEV107\n"),
    ("x.to(device)\r\n", "x.to(device)  # noqa: DEV107\r\n"),
])
def test_noqa_is_added_where_suppress_reads_it(line: str, expected: str) -> None:
    text = "import torch\n" + line + "y = 1\n"
    new = _with_noqa(text, 2, "DEV107")
    assert new == "import torch\n" + expected + "y = 1\n"
    finding = Finding("DEV107", "discarded-to", Severity.ERROR, "a.py", 2, 1, 2, 5, "m")
    assert parse_suppressions(new).silences(finding)


def test_no_comment_after_a_line_continuation() -> None:
    assert _with_noqa("x = 1 + \\\n    2\n", 1, "DEV107") is None


@pytest.mark.parametrize(("old", "new"), [
    ("a\nb\nc\n", "a\nB\nc\n"),
    ("x.to(d)\n", "x = x.to(d)\n"),
    ("é😀x\n", "é😀y\n"),  # UTF-16 columns after a character outside the BMP
    ("a\r\nb\r\n", "a\r\nb = 1\r\n"),
    ("same\n", "same\n"),
    ("", "new\n"),
])
def test_text_edit_is_minimal_and_exact(old: str, new: str) -> None:
    def utf16(text: str) -> int:
        return len(text.encode("utf-16-le")) // 2

    edit = text_edit(old, new, utf16)
    assert apply_edit(old, edit) == new
    assert len(edit.new_text) <= len(new)


def test_results_are_remembered_until_a_dependency_changes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "utils.py").write_text("def to_device(batch, device):\n    return [t.to(device) for t in batch]\n")
    train = (
        "import torch\nimport torch.nn as nn\nimport utils\n"
        "device = torch.device('cuda')\nmodel = nn.Linear(4, 4).to(device)\n"
        "for batch in loader:\n    x, y = utils.to_device(batch, device)\n    out = model(x)\n"
        "loader = torch.utils.data.DataLoader(torch.randn(8, 4))\n"
    )
    (tmp_path / "train.py").write_text(train)
    session = Session(str(tmp_path))
    snapshot = Snapshot("file:///train.py", str(tmp_path / "train.py"), 1, text=train)
    first = session.check(snapshot, {})
    assert first.analysed and str((tmp_path / "utils.py").resolve()) in first.depends
    assert not session.check(snapshot, {}).analysed  # nothing changed: from memory
    buffers = {(tmp_path / "utils.py").resolve(): "def to_device(batch, device):\n    return batch\n"}
    assert session.check(snapshot, buffers).analysed  # an unsaved edit of utils.py
    assert not session.check(snapshot, buffers).analysed
    (tmp_path / "devlint.toml").write_text('ignore = ["DEV1"]\n')
    assert session.check(snapshot, buffers).settings.enabled.isdisjoint({"DEV101", "DEV107"})
