"""`target-version`: code written for a newer Python than the one running devlint.

The running interpreter's compiler decides what is a syntax error (devlint.validity); a project
that names a newer target gets no DEV000 where libcst's grammar accepts the text, and the file
is analysed. A target no newer than the interpreter changes nothing."""

from __future__ import annotations

import json
import sys

import pytest

from devlint.config import parse_target_version

# a bare `except*` block needs 3.11; a PEP 695 type alias needs 3.12
NEWER = {(3, 11): "try:\n    pass\nexcept* ValueError:\n    pass\n",
         (3, 12): "type Pair = tuple[int, int]\n"}
BODY = ("import torch\n\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "x = torch.zeros(3)\nx.to(device)\n")


def _newer_than_running() -> tuple[tuple[int, int], str] | None:
    for version, text in sorted(NEWER.items()):
        if version > sys.version_info[:2]:
            return version, text
    return None


def test_the_spellings_ruff_users_write() -> None:
    assert parse_target_version("py312") == (3, 12)
    assert parse_target_version("3.10") == (3, 10)
    assert parse_target_version("py27") is None and parse_target_version("python") is None


@pytest.mark.skipif(_newer_than_running() is None, reason="no syntax here is newer than this interpreter")
def test_a_newer_target_turns_the_interpreters_syntax_error_into_an_analysed_file(project, invoke) -> None:
    found = _newer_than_running()
    assert found is not None
    version, newer = found
    project.write("new.py", newer + BODY)
    plain = json.loads(invoke("check", "--format", "json", "--no-cache", "new.py").stdout)["findings"]
    assert [f["code"] for f in plain] == ["DEV000"]
    project.write("pyproject.toml", f'[tool.devlint]\ntarget-version = "py3{version[1]}"\n')
    targeted = json.loads(invoke("check", "--format", "json", "--no-cache", "new.py").stdout)["findings"]
    assert [(f["code"], f["line"]) for f in targeted] == [("DEV107", newer.count("\n") + 5)]


def test_a_target_no_newer_than_the_interpreter_changes_nothing(project, invoke) -> None:
    project.write("pyproject.toml", '[tool.devlint]\ntarget-version = "py310"\n')
    project.write("bad.py", "def f(:\n    pass\n" + BODY)
    found = json.loads(invoke("check", "--format", "json", "--no-cache", "bad.py").stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("DEV000", 1)]


def test_a_target_libcst_cannot_read_either_is_still_dev000(project, invoke) -> None:
    project.write("pyproject.toml", '[tool.devlint]\ntarget-version = "py399"\n')
    project.write("bad.py", "def f(:\n    pass\n")
    found = json.loads(invoke("check", "--format", "json", "--no-cache", "bad.py").stdout)["findings"]
    assert [f["code"] for f in found] == ["DEV000"]


def test_an_invalid_target_is_a_configuration_error(project, invoke) -> None:
    project.write("pyproject.toml", '[tool.devlint]\ntarget-version = "python3"\n')
    project.write("ok.py", "x = 1\n")
    outcome = invoke("check", "ok.py")
    assert outcome.exit_code == 2 and "target-version" in outcome.stderr
