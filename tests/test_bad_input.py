"""Hostile and odd input: every case ends with a clear message, the documented exit code, and
the other files of the same run checked as usual (never exit 3, never a crash).

Each case is checked twice: the odd file alone (its own exit code: 1 when it is a DEV000, since
DEV000 is a finding; 0 when it is merely unusual and clean), and beside a good file with a real
bug, whose finding must still be reported. Inputs that once crashed the parser process itself
(deep nesting: libcst's native parser overflows its stack) run in a subprocess, so that a
regression fails the test instead of taking the test session down.
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from devlint import limits
from devlint.engine import check_text

# a real bug with a known finding: `.to()` on a tensor returns a copy that is thrown away
GOOD = (
    "import torch\n"
    "\n"
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    "x = torch.zeros(3)\n"
    "x.to(device)\n"
)
GOOD_FINDING = ("good.py", "DEV107", 5)


def _findings(outcome) -> list[dict]:
    assert outcome.exit_code != 3, outcome.stderr
    assert "internal error" not in outcome.stderr
    return json.loads(outcome.stdout)["findings"]


def _of(findings: list[dict], path: str) -> list[tuple[str, int]]:
    return [(f["code"], f["line"]) for f in findings if f["path"] == path]


def _message(findings: list[dict], path: str) -> str:
    dev000 = [f["message"] for f in findings if f["path"] == path and f["code"] == "DEV000"]
    assert len(dev000) == 1, findings
    return dev000[0]


def check_alone_and_beside_good(project, invoke, name: str, content: bytes, *, dev000: str | None,
                                expect: list[tuple[str, int]] | None = None) -> None:
    """`name` alone: DEV000 naming `dev000` (exit 1), or `expect` findings; then with good.py."""
    project.write(name, content)
    alone = invoke("check", "--format", "json", "--no-cache", name)
    found = _findings(alone)
    if dev000 is not None:
        assert dev000.lower() in _message(found, name).lower()
        assert alone.exit_code == 1
    else:
        assert _of(found, name) == (expect or [])
        assert alone.exit_code == (1 if expect else 0)
    project.write("good.py", GOOD)
    both = invoke("check", "--format", "json", "--no-cache", ".")
    found = _findings(both)
    assert (GOOD_FINDING[1], GOOD_FINDING[2]) in _of(found, GOOD_FINDING[0])
    assert json.loads(both.stdout)["files_checked"] == 2
    assert both.exit_code == 1


def _bug_lines(newline: str) -> bytes:
    return GOOD.replace("\n", newline).encode()


CASES = {
    # name: (file name, bytes, DEV000 message part or None, findings expected when clean)
    "empty file": ("empty.py", b"", None, []),
    "comments only": ("comments.py", b"# nothing here\n#   but comments\n", None, []),
    "only a BOM": ("bom.py", b"\xef\xbb\xbf", None, []),
    "binary with NUL bytes": ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50, "binary", None),
    "binary without NUL bytes": ("jpeg.py", b"\xff\xd8\xff\xe0JFIF\xfe\xfd" * 50, "cannot decode", None),
    "UTF-16 with BOM": ("utf16.py", GOOD.encode("utf-16"), "UTF-16", None),
    "UTF-32 with BOM": ("utf32.py", GOOD.encode("utf-32"), "UTF-32", None),
    "Latin-1 with a coding cookie": (
        "latin1.py", ("# -*- coding: latin-1 -*-\n# café\n" + GOOD).encode("latin-1"), None, [("DEV107", 7)]),
    "CRLF newlines": ("crlf.py", _bug_lines("\r\n"), None, [("DEV107", 5)]),
    "old Mac CR newlines": ("cr.py", _bug_lines("\r"), None, [("DEV107", 5)]),
    "mixed newlines": (
        "mixed.py", b"import torch\r\n\n" + b'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\r'
        + b"x = torch.zeros(3)\nx.to(device)\r\n", None, [("DEV107", 5)]),
    "tabs": (
        "tabs.py", b"import torch\n\ndef step():\n\tdevice = torch.device('cuda' if torch.cuda.is_available() "
        b"else 'cpu')\n\tx = torch.zeros(3)\n\tif device:\n\t\tx.to(device)\n\treturn x\n", None, [("DEV107", 7)]),
    "tabs and spaces mixed inconsistently": ("mixtabs.py", b"def f():\n\tif True:\n        return 1\n", "tab", None),
    "Python 2 print statement": ("py2.py", b'import torch\nprint "x"\n', "Python 2", None),
    "Python 2 except clause": ("py2except.py", b"try:\n    pass\nexcept ValueError, e:\n    pass\n", "Python 2", None),
    # valid Python 3 syntax (a tuple whose first item shifts `print`): analysed, nothing to report
    "Python 2 print to a file": ("py2print.py", b"import sys\nprint >>sys.stderr, 'x'\n", None, []),
    "Python 2 exec statement": ("py2exec.py", b"exec 'x = 1'\n", "Python 2", None),
    "Python 2 backticks": ("py2backticks.py", b"x = `1`\n", "invalid syntax", None),
    "unterminated string": ("unterminated.py", b'x = """never closed\n', "unterminated", None),
    "notebook that is not JSON": ("bad.ipynb", b"{not json", "not valid JSON", None),
    "notebook that is empty": ("empty.ipynb", b"", "not valid JSON", None),
    "notebook without cells": ("nocells.ipynb", b'{"metadata": {}, "nbformat": 4}', "no `cells`", None),
    "notebook that is a JSON list": ("list.ipynb", b"[1, 2]", "no `cells`", None),
    "notebook of deeply nested JSON": ("nested.ipynb", b"[" * 100_000 + b"]" * 100_000, "nested too deeply", None),
    "notebook that is binary": ("binary.ipynb", b"\x89PNG\r\n\x1a\n\x00\x00\xff", "notebook", None),
    "notebook with an empty cell list": (
        "nocode.ipynb", b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', None, []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input(project, invoke, case: str) -> None:
    name, content, dev000, expect = CASES[case]
    check_alone_and_beside_good(project, invoke, name, content, dev000=dev000, expect=expect)


def test_a_20_mb_file_is_refused_quickly_with_a_clear_message(project, invoke) -> None:
    body = "".join(f"def f{i}(x):\n    return x.to('cuda') + {i}\n\n" for i in range(1000))
    data = (body * (20_000_000 // len(body) + 1)).encode()
    assert len(data) >= 20_000_000
    project.write("big.py", data)
    project.write("good.py", GOOD)
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    found = _findings(outcome)
    message = _message(found, "big.py")
    assert "too large" in message and "20." in message and "exclude" in message
    assert (GOOD_FINDING[1], GOOD_FINDING[2]) in _of(found, "good.py")
    assert outcome.exit_code == 1
    # the same limit, the same words, for text handed to the engine directly (stdin, editors)
    direct = check_text(data.decode(), "big.py")
    assert [f.code for f in direct] == ["DEV000"] and "too large" in direct[0].message
    assert check_text(data.decode(), "big.py", enabled=frozenset({"DEV107"})) == []


def test_a_file_over_the_size_limit_is_never_read(project, invoke) -> None:
    import tracemalloc

    project.write("big.py", b"# padding\n" * 2_000_000)  # 20 MB
    tracemalloc.start()
    try:
        found = _findings(invoke("check", "--format", "json", "--no-cache", "-j", "1", "big.py"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "too large" in _message(found, "big.py")
    assert peak < 5_000_000, f"{peak} bytes allocated: the 20 MB file was read"


def test_a_notebook_whose_code_is_too_large(project, invoke) -> None:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": "# padding\n" * (limits.MAX_SOURCE_BYTES // 10 + 10)}
    project.write("huge.ipynb", json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = _findings(invoke("check", "--format", "json", "--no-cache", "huge.ipynb"))
    assert "too large" in _message(found, "huge.ipynb")


DEEP = {
    "parens.py": "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "lists.py": "x = " + "[" * 5000 + "]" * 5000 + "\n",
    "calls.py": "x = " + "f(" * 5000 + ")" * 5000 + "\n",
    "dicts.py": "x = " + "{1: " * 3000 + "1" + "}" * 3000 + "\n",
    "unary.py": "import torch\nx = " + "-" * 20_000 + "torch.ones(1).cuda()\n",
    "nots.py": "x = " + "not " * 20_000 + "y\n",
    "attributes.py": "x = a" + ".b" * 20_000 + "\n",
    "sums.py": "x = " + " + ".join(["a"] * 20_000) + "\n",
    "subscripts.py": "x = a" + "[0]" * 5000 + "\n",
}


def _isolated_devlint() -> list[str]:
    """`devlint` in an isolated interpreter (-I), running the devlint under test (this session's
    import of it, not whatever -I alone would find)."""
    import devlint

    src = str(Path(devlint.__file__).resolve().parent.parent)
    return [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {src!r}); from devlint.cli import main; main()"]


def test_expressions_nested_deeper_than_the_recursion_limit(tmp_path: Path) -> None:
    """Once a segmentation fault of the whole run (libcst's parser overflowed its stack)."""
    for name, text in DEEP.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "good.py").write_text(GOOD)
    # also reached through an import: the project index parses imported files too
    (tmp_path / "train.py").write_text("import torch\nfrom unary import x\ny = torch.zeros(1).to('cuda') + x\n")
    proc = subprocess.run(
        [*_isolated_devlint(), "check", "--format", "json", "--no-cache", "-j", "1", "."],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    found = json.loads(proc.stdout)["findings"]
    for name in DEEP:
        message = _message(found, name)
        assert "nest" in message, message
    for name in ("parens.py", "lists.py", "calls.py", "dicts.py"):
        assert "too many nested parentheses" in _message(found, name)  # CPython's own words
    assert (GOOD_FINDING[1], GOOD_FINDING[2]) in _of(found, "good.py")
    assert _of(found, "train.py"), "the importer of a too-deep module is still checked"


def test_nesting_limit_never_flags_real_code() -> None:
    """Every fixture program (real-world shapes) is far below the limits."""
    fixtures = Path(__file__).parent / "fixtures"
    programs = sorted(fixtures.rglob("*.py"))
    assert len(programs) > 50
    for program in programs:
        assert limits.nesting_problem(program.read_text(encoding="utf-8")) is None, program


def test_nesting_limit_counts_tokens_not_characters_in_strings() -> None:
    assert limits.nesting_problem("x = '" + "(" * 5000 + "'\n") is None
    assert limits.nesting_problem('x = """\\\n' + "[" * 5000 + '"""\n') is None
    assert limits.nesting_problem("# " + "(" * 5000 + "\n") is None
    flat = "x = [" + ", ".join(f"a.b + {i}" for i in range(10_000)) + "]\n"  # long, but flat
    assert limits.nesting_problem(flat) is None
    many = "".join(f"y{i} = a.b.c + d * e - f\n" for i in range(5000))  # many statements
    assert limits.nesting_problem(many) is None
    why, line = limits.nesting_problem("x = 1\ny = 2\nz = " + "(" * 300 + ")" * 300 + "\n")
    assert line == 3 and "200" in why


@pytest.mark.parametrize("chain", [" - ", " and ", " or ", " if c else ", "."])
def test_nesting_limit_sees_operators_and_keywords_between_skipped_tokens(chain: str) -> None:
    deep = "x = a" + "".join(f"{chain}b{i}" for i in range(limits.MAX_EXPRESSION_DEPTH + 5)) + "\n"
    assert limits.nesting_problem("# a comment\ns = 'text'\n" + deep)[1] == 3
    # names that merely start with a keyword, strings and numbers do not count
    lookalikes = "x = " + " ".join(f"android{i} ore 'and' 1.5e3 yield_" for i in range(2000)) + "\n"
    assert limits.nesting_problem(lookalikes) is None
    assert limits.nesting_problem("x = 'unterminated\n" + "y = a < b > c : d\n" * 3000) is None


def test_symlink_loop_in_a_folder(project, invoke) -> None:
    """Links that lead nowhere are reported when their name is a Python file's, as when named
    on the command line (issue 31: skipped silently inside a folder)."""
    (project.root / "pkg").mkdir()
    os.symlink("..", project.root / "pkg" / "up")
    os.symlink("self", project.root / "pkg" / "self")  # a link to itself, not a Python name
    os.symlink("missing.py", project.root / "pkg" / "dangling.py")  # a link to nothing
    os.symlink("loop_b.py", project.root / "pkg" / "loop_a.py")  # a loop
    os.symlink("loop_a.py", project.root / "pkg" / "loop_b.py")
    project.write("pkg/inner.py", GOOD)
    project.write("good.py", GOOD)
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    found = _findings(outcome)
    assert _of(found, "good.py") == [("DEV107", 5)]
    assert _of(found, os.path.join("pkg", "inner.py")) == [("DEV107", 5)]
    assert "dangling" in _message(found, os.path.join("pkg", "dangling.py"))
    for loop in ("loop_a.py", "loop_b.py"):
        assert "symbolic links" in _message(found, os.path.join("pkg", loop))
    assert json.loads(outcome.stdout)["files_checked"] == 5
    assert outcome.exit_code == 1


def test_a_folder_that_cannot_be_searched(project, invoke, monkeypatch) -> None:
    """Its names can be listed but nothing in it examined (read permission without execute):
    the configuration lookup once ended the run with exit 3 (PermissionError on its
    devlint.toml); every file in it is a DEV000 naming why."""
    import pathlib

    project.write("locked/inner.py", GOOD)
    project.write("good.py", GOOD)
    locked = os.path.realpath(project.root / "locked")
    real_is_file, real_open = pathlib.Path.is_file, builtins.open

    def inside(path) -> bool:
        return os.path.dirname(os.path.realpath(os.fsdecode(path))) == locked

    def is_file(self):
        if inside(self):
            raise PermissionError(13, "Permission denied", str(self))
        return real_is_file(self)

    def guarded_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and inside(file):
            raise PermissionError(13, "Permission denied", os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "is_file", is_file)
    monkeypatch.setattr(builtins, "open", guarded_open)
    for target in (".", os.path.join("locked", "inner.py")):
        outcome = invoke("check", "--format", "json", "--no-cache", target)
        found = _findings(outcome)
        assert "permission denied" in _message(found, os.path.join("locked", "inner.py"))
        assert outcome.exit_code == 1


def test_folder_named_like_a_python_file(project, invoke) -> None:
    project.write("x.py/inner.py", GOOD)
    project.write("good.py", GOOD)
    for args in ([], ["x.py"]):  # walked, whether found in a folder or named on the command line
        outcome = invoke("check", "--format", "json", "--no-cache", *(args or ["."]))
        found = _findings(outcome)
        assert _of(found, os.path.join("x.py", "inner.py")) == [("DEV107", 5)]
        assert not [f for f in found if f["code"] == "DEV000"]
        assert outcome.exit_code == 1


def _deny_reading(monkeypatch, target: Path) -> None:
    real_open = builtins.open
    denied = os.path.realpath(target)

    def guarded_open(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(file)) == denied:
            raise PermissionError(13, "Permission denied", os.fsdecode(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded_open)


def test_unreadable_file(project, invoke, monkeypatch) -> None:
    """Meaningful as root too (CI runs as root, where chmod 000 files stay readable): every way
    devlint opens the file is denied."""
    locked = project.write("locked.py", GOOD)
    project.write("good.py", GOOD)
    _deny_reading(monkeypatch, locked)
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    found = _findings(outcome)
    assert "permission denied" in _message(found, "locked.py")
    assert _of(found, "good.py") == [("DEV107", 5)]
    assert outcome.exit_code == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads chmod 000 files; test_unreadable_file covers this case as root")
def test_unreadable_file_by_mode(project, invoke) -> None:
    locked = project.write("locked.py", GOOD)
    project.write("good.py", GOOD)
    locked.chmod(0)
    try:
        outcome = invoke("check", "--format", "json", "--no-cache", ".")
    finally:
        locked.chmod(0o644)
    found = _findings(outcome)
    assert "permission denied" in _message(found, "locked.py")
    assert _of(found, "good.py") == [("DEV107", 5)]


def _deny_listing(monkeypatch, name: str) -> None:
    real_scandir = os.scandir

    def guarded_scandir(path="."):
        if os.path.basename(os.path.normpath(os.fsdecode(path))) == name:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", guarded_scandir)


def test_unreadable_folder(project, invoke, monkeypatch) -> None:
    project.write("secret/inner.py", GOOD)
    project.write("good.py", GOOD)
    _deny_listing(monkeypatch, "secret")
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    assert _of(_findings(outcome), "good.py") == [("DEV107", 5)]
    assert outcome.exit_code == 1


def test_path_that_does_not_exist(project, invoke) -> None:
    project.write("good.py", GOOD)
    outcome = invoke("check", "--no-cache", "good.py", "no/such/file.py")
    assert outcome.exit_code == 2
    assert "path not found" in outcome.stderr and "no/such/file.py" in outcome.stderr


@pytest.mark.parametrize("body, named", [
    ("[tool.devlint\nselect = [", "pyproject.toml"),  # not TOML
    ("[tool.devlint]\nselectt = ['DEV1']\n", "selectt"),  # unknown key
    ("[tool.devlint]\nselect = ['DEV999']\n", "DEV999"),  # unknown code
    ("[tool.devlint]\nselect = 'DEV1'\n", "select"),  # wrong type
    ("[tool.devlint]\ndevice-helpers = ['os.system()']\n", "device-helpers"),  # not a dotted name
    ("[tool.devlint]\nfail-on = 3\n", "fail-on"),
    ("[tool]\ndevlint = 3\n", "tool.devlint"),
])
def test_invalid_config_exits_2_naming_the_problem(project, invoke, body: str, named: str) -> None:
    project.write("pyproject.toml", body)
    project.write("good.py", GOOD)
    outcome = invoke("check", "--no-cache", ".")
    assert outcome.exit_code == 2, outcome.stderr
    assert named in outcome.stderr
    assert "internal error" not in outcome.stderr


@pytest.mark.parametrize("data", [b"[tool.devlint]\nselect = ['\xff']\n",
                                  b"[tool.devlint]\nexclude = " + b"[" * 50_000 + b"]" * 50_000 + b"\n"])
def test_config_that_is_not_utf8_or_nested_too_deeply(project, invoke, data: bytes) -> None:
    """Both once ended in an internal error (exit 3)."""
    project.write("good.py", GOOD)
    project.write("pyproject.toml", data)
    outcome = invoke("check", "--no-cache", ".")
    assert outcome.exit_code == 2, outcome.stderr
    assert "pyproject.toml" in outcome.stderr and "invalid TOML" in outcome.stderr


def test_config_that_is_a_folder(project, invoke) -> None:
    project.write("good.py", GOOD)
    (project.root / "pyproject.toml").mkdir()
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    assert outcome.exit_code != 3 and "internal error" not in outcome.stderr
    assert outcome.exit_code == 1 and _of(_findings(outcome), "good.py") == [("DEV107", 5)]


def test_stdin_bad_input(project, invoke) -> None:
    for data, part in ((b"\x00\x01", "binary"), ('print "x"\n'.encode(), "Python 2"),
                       (b"def f():\n\tif True:\n        return 1\n", "tab")):
        outcome = invoke("check", "--format", "json", "--stdin-filename", "s.py", input=data)
        assert part in _message(_findings(outcome), "s.py")
        assert outcome.exit_code == 1


def test_symlink_loop_named_on_the_command_line(project, invoke) -> None:
    os.symlink("loop_b.py", project.root / "loop_a.py")
    os.symlink("loop_a.py", project.root / "loop_b.py")
    project.write("good.py", GOOD)
    outcome = invoke("check", "--format", "json", "--no-cache", "loop_a.py", "good.py")
    found = _findings(outcome)
    assert "symbolic links" in _message(found, "loop_a.py")
    assert _of(found, "good.py") == [("DEV107", 5)]
    assert outcome.exit_code == 1


def test_unreadable_file_named_on_the_command_line(project, invoke, monkeypatch) -> None:
    locked = project.write("locked.py", GOOD)
    _deny_reading(monkeypatch, locked)
    outcome = invoke("check", "--format", "json", "--no-cache", "locked.py")
    assert "permission denied" in _message(_findings(outcome), "locked.py")
    assert outcome.exit_code == 1


def test_unreadable_subfolder_is_reported(project, invoke, monkeypatch) -> None:
    project.write("secret/inner.py", GOOD)
    project.write("clean.py", "x = 1\n")
    _deny_listing(monkeypatch, "secret")
    outcome = invoke("check", "--format", "json", "--no-cache", ".")
    message = _message(_findings(outcome), "secret")
    assert "cannot read this folder" in message and "permission denied" in message.lower()
    assert outcome.exit_code == 1  # not a pass with nothing checked


@pytest.mark.parametrize("name", ["attributes.py", "subscripts.py", "sums.py"])
@pytest.mark.parametrize("cpython_compiles", [True, False])
def test_cpython_first_then_devlints_nesting_limits(monkeypatch, name: str, cpython_compiles: bool) -> None:
    """3.10 compiles 20,000 chained attributes and 3.13 5,000 subscripts, 3.11 neither: what
    the interpreter refuses is its DEV000, with its message; what it compiles still meets
    devlint's own limits, a DEV000 that says it is devlint's limit."""
    import devlint.engine
    from devlint.validity import SyntaxProblem

    refused = SyntaxProblem("too many nested somethings", 1, 7)
    monkeypatch.setattr(devlint.engine, "syntax_problem", lambda text, path="": None if cpython_compiles else refused)
    found = devlint.engine.check_text(DEEP[name], name)
    assert [f.code for f in found] == ["DEV000"]
    if cpython_compiles:
        assert "nests more than" in found[0].message and "devlint" in found[0].message
    else:
        assert "too many nested somethings" in found[0].message and (found[0].line, found[0].column) == (1, 7)
