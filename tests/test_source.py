"""Reading files: decoding like the interpreter, clear errors for what cannot be read, notebooks."""

from __future__ import annotations

import json

import pytest

import devlint.regular
import devlint.source
from devlint.source import decode_notebook, decode_source, read_source, split_lines


def test_plain_utf8(project):
    path = project.write("a.py", "x = 'héllo'\n")
    unit = read_source(str(path), display="a.py")
    assert unit.ok and unit.text == "x = 'héllo'\n"
    assert unit.display == "a.py"
    assert unit.encoding == "utf-8" and not unit.bom and unit.newline == "\n"


def test_bom_is_stripped_and_remembered():
    unit = decode_source(b"\xef\xbb\xbfx = 1\r\ny = 2\r\n", "a.py")
    assert unit.ok
    assert unit.text == "x = 1\r\ny = 2\r\n"
    assert unit.bom and unit.encoding == "utf-8"
    assert unit.newline == "\r\n"


def test_coding_cookie_is_honoured():
    data = "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    unit = decode_source(data, "a.py")
    assert unit.ok, unit.error
    assert "café" in unit.text
    assert unit.encoding == "iso-8859-1"


def test_undecodable_bytes_name_the_line():
    unit = decode_source(b"x = 1\ny = '\xff\xfe'\n", "bad.py")
    assert not unit.ok
    assert unit.text is None
    assert "utf-8" in unit.error and "line 2" in unit.error
    assert unit.error_line == 2


def test_undecodable_bytes_in_the_first_two_lines():
    unit = decode_source(b"# comment\nname = 'caf\xe9'\n", "a.py")
    assert not unit.ok and unit.error_line == 2 and "utf-8" in unit.error


def test_unknown_encoding_in_cookie():
    unit = decode_source(b"# coding: no-such-codec\nx = 1\n", "a.py")
    assert not unit.ok
    assert "no-such-codec" in unit.error


def test_binary_file_is_an_error():
    unit = decode_source(b"\x7fELF\x00\x00\x01", "weird.py")
    assert not unit.ok and "binary" in unit.error


def test_directory_named_like_a_module(project):
    (project.root / "x.py").mkdir()
    unit = read_source("x.py")
    assert not unit.ok and "directory" in unit.error


def test_missing_and_unreadable_files(project, monkeypatch):
    assert "not found" in read_source("gone.py").error
    project.write("locked.py", "x = 1\n")

    def deny(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(devlint.regular, "open", deny, raising=False)
    unit = read_source("locked.py")
    assert not unit.ok and "permission denied" in unit.error


def test_old_mac_newlines_are_detected():
    unit = decode_source(b"x = 1\ry = 2\r", "a.py")
    assert unit.newline == "\r"
    assert split_lines(unit.text) == ["x = 1", "y = 2"]


def test_split_lines_only_breaks_where_python_does():
    assert split_lines("a\x0cb\nc\u2028d\r\ne\n") == ["a\x0cb", "c\u2028d", "e"]
    assert split_lines("") == []
    assert split_lines("no newline") == ["no newline"]


def _notebook(*cells: tuple[str, str]) -> bytes:
    return json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True)}
                for kind, source in cells
            ],
        }
    ).encode()


def test_notebook_joins_code_cells_with_a_line_map():
    data = _notebook(
        ("markdown", "# Title\n"),
        ("code", "import torch\nx = torch.zeros(3)\n"),
        ("markdown", "text"),
        ("code", "y = x + 1"),
    )
    unit = decode_notebook(data, "nb.ipynb")
    assert unit.ok and unit.is_notebook
    assert unit.text == "import torch\nx = torch.zeros(3)\ny = x + 1\n"
    # cells are counted among code cells only
    assert unit.to_cell(1) == (1, 1)
    assert unit.to_cell(2) == (1, 2)
    assert unit.to_cell(3) == (2, 1)
    assert unit.lines(2) == ["y = x + 1"]


def test_notebook_magics_are_commented_out_and_the_text_parses():
    import ast

    data = _notebook(
        ("code", "%matplotlib inline\n!pip install torch\nfiles = !ls\nimport torch\ntorch.zeros?\n"),
        ("code", "for i in range(3):\n    %time f(i)\n    print(i)\n"),
        ("code", "%%bash\necho hi\nls -la\n"),
        ("code", "%%time\nx = 1\n"),
    )
    unit = decode_notebook(data, "nb.ipynb")
    assert unit.ok
    ast.parse(unit.text)  # IPython syntax no longer breaks parsing
    lines = unit.text.splitlines()
    assert lines[3] == "import torch"
    assert "x = 1" in lines
    # line count per cell is unchanged, so the map stays exact
    assert unit.to_cell(len(lines)) == (4, 2)


def test_notebook_from_disk_and_invalid_notebooks(project):
    project.write("nb.ipynb", _notebook(("code", "a = 1\n")))
    assert read_source("nb.ipynb").is_notebook
    assert "JSON" in decode_notebook(b"{not json", "bad.ipynb").error
    assert "cells" in decode_notebook(b'{"nbformat": 4}', "bad.ipynb").error


@pytest.mark.parametrize("data", [b"", b"\n", b"x = 1"])
def test_small_inputs(data):
    assert decode_source(data, "a.py").ok


def test_non_python_notebook_has_nothing_to_check():
    document = json.loads(_notebook(("code", "library(ggplot2)\nx <- 1\n")))
    document["metadata"] = {"kernelspec": {"name": "ir", "language": "R"}}
    unit = decode_notebook(json.dumps(document).encode(), "r.ipynb")
    assert unit.ok and unit.text == ""
