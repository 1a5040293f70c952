"""DEV000 is Python's own verdict: exactly where CPython's compiler refuses a file, at its line
and column, and nowhere else; no suppression comment hides it (devlint.validity, issue 31)."""

from __future__ import annotations

import json

import libcst as cst
import pytest

from devlint.engine import check_text

DEVICE = "import torch\nx = torch.zeros(1).cuda()\n"  # a device signal: the analysis would run


def _compile_error(text: str) -> SyntaxError:
    try:
        compile(text, "x.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    raise AssertionError("CPython compiles it")


def _libcst_accepts(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any refusal
        return False
    return True


# libcst parses these, CPython refuses them
REFUSED_BY_PYTHON = {
    "truncated unicode escape": '"\\u12"\n',
    "non-ASCII bytes literal": 'b"\u00e9"\n',
    "unpacking in a comprehension": "[*a for a in b]\n",
    "starred assignment target": "(*a) = b\n",
    "starred f-string expression": 'f"{*x}"\n',
    "return outside a function": "return 1\n",
    "nonlocal at module level": "nonlocal x\n",
}


@pytest.mark.parametrize("case", sorted(REFUSED_BY_PYTHON))
@pytest.mark.parametrize("signal", [True, False])
def test_what_python_refuses_is_dev000_at_pythons_position(case: str, signal: bool) -> None:
    text = (DEVICE if signal else "y = 1\n") + REFUSED_BY_PYTHON[case]
    assert _libcst_accepts(text), "the case is meant to be one libcst accepts"
    error = _compile_error(text)
    found = check_text(text, "x.py")
    assert [(f.code, f.line, f.column) for f in found] == [("DEV000", error.lineno, error.offset)]
    assert error.msg in found[0].message


# CPython runs these, libcst cannot parse them: valid Python, so no DEV000 (and nothing else)
ACCEPTED_BY_PYTHON = {
    "parenthesised annotated target": DEVICE + "(y): int = 1\n",
    "3,200 adjacent strings": DEVICE + "s = (" + " ".join(['"a"'] * 3200) + ")\n",
    "CRLF file ending in a backslash": (DEVICE + "y = 1 \\\n").replace("\n", "\r\n"),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED_BY_PYTHON))
def test_what_python_runs_is_never_dev000(case: str) -> None:
    text = ACCEPTED_BY_PYTHON[case]
    assert not _libcst_accepts(text), "the case is meant to be one libcst refuses"
    try:
        compile(text, "x.py", "exec", dont_inherit=True)
    except SyntaxError as exc:  # this interpreter refuses it (3.13 the CRLF one): then it is DEV000 there
        assert [(f.code, f.line) for f in check_text(text, "x.py")] == [("DEV000", exc.lineno)]
        return
    assert check_text(text, "x.py") == []


def test_a_syntax_error_before_a_too_deep_expression_is_reported_where_python_puts_it() -> None:
    text = "def f(:\n    pass\nx = " + "-" * 2000 + "1\n"
    found = check_text(text, "x.py")
    assert [(f.code, f.line) for f in found] == [("DEV000", 1)]
    assert "invalid syntax" in found[0].message


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: DEV000", "# devlint: ignore", "# devlint: ignore[DEV000]"])
def test_no_line_comment_silences_a_syntax_error(project, invoke, comment: str) -> None:
    project.write("broken.py", f"import torch\ndef f(:  {comment}\n    pass\n")
    outcome = invoke("check", "--format", "json", "--no-cache", "broken.py")
    assert outcome.exit_code == 1, outcome.stdout
    found = json.loads(outcome.stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("DEV000", 2)]


@pytest.mark.parametrize("comment", ["# devlint: noqa", "# devlint: noqa: DEV000"])
def test_no_file_comment_silences_a_syntax_error(project, invoke, comment: str) -> None:
    project.write("broken.py", f"{comment}\nimport torch\ndef f(:\n    pass\n")
    outcome = invoke("check", "--format", "json", "--no-cache", "--extend-select", "DEV001", "broken.py")
    assert outcome.exit_code == 1, outcome.stdout
    found = json.loads(outcome.stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("DEV000", 3)]


def test_a_bom_file_names_the_undecodable_byte_and_its_line(project, invoke) -> None:
    project.write("bom.py", b"\xef\xbb\xbfimport torch\nx = 1\ny = '\xff'\n")
    outcome = invoke("check", "--format", "json", "--no-cache", "bom.py")
    found = json.loads(outcome.stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("DEV000", 3)]
    assert "b'\\xff'" in found[0]["message"] and "line 3" in found[0]["message"]


@pytest.mark.parametrize("data", [
    b'"""a docstring with a bad byte \xef\nover two lines"""\nimport torch\n',  # CPython: the string's last line
    b"import torch\ndef f(:\n    pass\nx = '\xff'\n",  # a syntax error before the bad byte comes first
])
def test_an_undecodable_file_is_reported_where_python_reports_it(project, invoke, data: bytes) -> None:
    project.write("bad.py", data)
    error = _compile_error(data)
    outcome = invoke("check", "--format", "json", "--no-cache", "bad.py")
    found = json.loads(outcome.stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("DEV000", error.lineno)]


def test_a_bad_byte_where_python_does_not_decode_is_no_dev000(project, invoke) -> None:
    """CPython 3.11 does not decode comments: a file with a stray byte in one runs, so it is
    analysed (the byte read as U+FFFD) and, since its text is not its bytes, never fixed."""
    data = b"import torch\n# caf\xe9\ndevice = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n" \
           b"x = torch.zeros(3)\nx.to(device)\n"
    project.write("stray.py", data)
    outcome = invoke("check", "--format", "json", "--no-cache", "stray.py")
    found = [(f["code"], f["line"]) for f in json.loads(outcome.stdout)["findings"]]
    try:
        compile(data, "stray.py", "exec", dont_inherit=True)
    except SyntaxError as exc:  # an interpreter that does decode comments
        assert found == [("DEV000", exc.lineno)]
        return
    assert found == [("DEV107", 5)]
    invoke("check", "--fix", "--no-cache", "stray.py")
    assert (project.root / "stray.py").read_bytes() == data
