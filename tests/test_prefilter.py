"""The byte prefilter (devlint.prefilter): files without a device signal are not parsed with
libcst, and that never changes what is reported.

What it must not break: DEV000 for a file that does not parse, findings located in a file
without signals that its importer's check reaches, and every rule's trigger (each rule's `bad`
example and every fixture with an expected finding has a signal).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

import devlint.engine
from devlint.knowledge.signals import PLACES_DEVICES
from devlint.engine import check_text
from devlint.prefilter import SIGNALS, compiles, has_device_signal, needs_analysis
from devlint.rules import all_rules

FIXTURES = Path(__file__).parent / "fixtures"
EXPECT = re.compile(r"#\s*expect:\s*DEV\d")

PLAIN = '''\
"""String helpers for file names."""
import re


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
'''


@pytest.fixture
def no_libcst_parse(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every libcst parse the engine makes."""
    calls: list[str] = []
    real = devlint.engine.parse

    def parse(text: str, path: str):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(text, path)

    monkeypatch.setattr(devlint.engine, "parse", parse)
    return calls


def test_a_file_without_signals_is_not_parsed(no_libcst_parse: list[str]) -> None:
    assert not needs_analysis(PLAIN)
    assert check_text(PLAIN, "helpers.py") == []
    assert "helpers.py" not in no_libcst_parse


def test_a_file_with_signals_is_parsed(no_libcst_parse: list[str]) -> None:
    text = PLAIN + "\n\ndef move(x, device):\n    return x.to(device)\n"
    assert needs_analysis(text)
    check_text(text, "helpers.py")
    assert no_libcst_parse == ["helpers.py"]


def test_a_file_without_signals_that_does_not_parse_still_gets_dev000() -> None:
    broken = PLAIN + "\n\ndef oops(:\n    pass\n"
    assert not needs_analysis(broken)
    findings = check_text(broken, "helpers.py")
    assert [f.code for f in findings] == ["DEV000"]
    assert findings[0].line == 9
    # the same message as for a file the prefilter lets through (libcst's, not CPython's)
    with_signal = check_text(broken + "# cuda\n", "helpers.py")
    assert [(f.line, f.message) for f in with_signal] == [(f.line, f.message) for f in findings]


def test_dev000_deselected_skips_even_the_compile_check(no_libcst_parse: list[str]) -> None:
    broken = "def oops(:\n"
    assert check_text(broken, "x.py", enabled=frozenset({"DEV101"})) == []
    assert no_libcst_parse == []


def test_the_running_interpreter_decides_newer_syntax() -> None:
    # PEP 701 f-string: CPython before 3.12 rejects it, libcst parses it. The interpreter that
    # runs devlint decides (devlint.validity): DEV000 at its position before 3.12, none after
    text = 'names = {"a": 1}\nprint(f"{names["a"]}")\n'
    assert not needs_analysis(text)
    found = check_text(text, "fmt.py")
    if sys.version_info < (3, 12):
        error = compile_error(text)
        assert [(f.code, f.line, f.column) for f in found] == [("DEV000", error.lineno, error.offset)]
    else:
        assert found == []


def compile_error(text: str) -> SyntaxError:
    try:
        compile(text, "x.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    raise AssertionError("compiles")


def test_compiles_is_cpythons_parser() -> None:
    assert compiles(PLAIN)
    assert not compiles("def f(:\n")
    assert not compiles("x = (\n")
    assert compiles("def f():\n    return\n")
    assert compiles("x = '\\d'\n")  # an invalid escape is a warning, not an error
    if sys.version_info < (3, 12):
        assert not compiles('print(f"{x["a"]}")\n')


def test_cli_reports_dev000_for_a_skipped_file(project, invoke) -> None:  # type: ignore[no-untyped-def]
    project.write("util.py", "def oops(:\n    pass\n")
    project.write("ok.py", PLAIN)
    out = invoke("check", "--format", "json", "--no-cache")
    found = json.loads(out.stdout)["findings"]
    assert [(f["path"], f["code"], f["line"]) for f in found] == [("util.py", "DEV000", 1)]
    assert out.exit_code == 1


HEAD = '''\
    import torch
    import torch.nn as nn


    class Head(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            self.scale = torch.ones(dim)

        def forward(self, x):
            return self.fc(x) * self.scale
    '''


def test_a_file_without_signals_imported_by_a_buggy_script_keeps_its_finding(project, invoke) -> None:  # type: ignore[no-untyped-def]
    # with library mode off, models.py alone has nothing a device could touch: its own check is
    # skipped. train.py moves the model, so its check reaches models.py and reports the plain
    # tensor attribute there.
    project.write("pyproject.toml", "[tool.devlint]\nlibrary-mode = false\n")
    models = project.write("models.py", HEAD)
    project.write("train.py", '''\
        import torch

        from models import Head

        device = "cuda" if torch.cuda.is_available() else "cpu"
        model = Head(8).to(device)
        x = torch.randn(4, 8, device=device)
        print(model(x))
        ''')
    assert not needs_analysis(models.read_text(), library_mode=False)
    out = invoke("check", "--format", "json", "--no-cache", "--select", "ALL")
    found = {(f["path"], f["line"], f["code"]) for f in json.loads(out.stdout)["findings"]}
    assert ("models.py", 9, "DEV104") in found
    # checked on its own, models.py reports nothing (and is not parsed)
    alone = invoke("check", "models.py", "--format", "json", "--no-cache", "--select", "ALL")
    assert json.loads(alone.stdout)["findings"] == []


def test_a_layer_without_device_words_is_checked_alone(project, invoke, no_libcst_parse: list[str]) -> None:  # type: ignore[no-untyped-def]
    # library mode runs a layer's forward on its caller's device: the plain tensor attribute
    # crashes whoever moves the layer, so the file is analysed though no device word is in it
    models = project.write("models.py", HEAD)
    assert needs_analysis(models.read_text())
    alone = invoke("check", "models.py", "--format", "json", "--no-cache", "--select", "ALL")
    found = [(f["path"], f["line"], f["code"]) for f in json.loads(alone.stdout)["findings"]]
    assert found == [("models.py", 9, "DEV104")]
    # a file that defines no layer and has no signal is still skipped
    assert check_text(PLAIN, "helpers.py") == []
    assert "helpers.py" not in no_libcst_parse


def test_configured_helpers_are_signals() -> None:
    text = "from myproj.utils import ship\n\nbatch = ship(batch)\n"
    assert not has_device_signal(text)
    assert has_device_signal(text, ["myproj.utils.ship"])


@pytest.mark.parametrize("text", [
    "x.to(d)", "x.cuda()", "y = x.cpu()", "torch.device('mps')", "device_map='auto'",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '1'", "if args.gpu:", "DataLoader(ds)", "class D(Dataset):",
    "a.numpy()", "torch.load(p)", "load_state_dict_from_url(u)", "model_zoo.load_url(u)",
    "optim.Adagrad(ps)", "AutoModel.from_pretrained(n, load_in_8bit=True)", "torch.cuda.empty_cache()",
    "nn.DataParallel(m)", "accelerator.prepare(m)", "import lightning as L", "Trainer(model=m)",
    "from utils import *", "x.to", "f'cuda:{rank}'", "FABRIC.setup(m)",
])
def test_signals(text: str) -> None:
    assert has_device_signal(text), text


def test_signals_cover_the_analysis_own_gate() -> None:
    # PLACES_DEVICES decides whether a check reads other project files; a text it matches must
    # never be skipped, so every one of its alternatives has to be a signal here too
    alternatives = PLACES_DEVICES.pattern.split("|")
    assert len(alternatives) > 5
    for alternative in alternatives:
        sample = re.sub(r"\\(.)", r"\1", alternative)  # unescape
        sample = re.sub(r"\[([^\]])[^\]]*\]", r"\1", sample)  # a class: its first member
        assert PLACES_DEVICES.search(sample), (alternative, sample)
        assert SIGNALS.search(sample), f"PLACES_DEVICES alternative {alternative!r} is not a prefilter signal"


@pytest.mark.parametrize("rule", [r for r in all_rules() if r.checks], ids=lambda r: r.code)
def test_every_rule_example_has_a_signal(rule) -> None:  # type: ignore[no-untyped-def]
    assert needs_analysis(rule.bad), f"{rule.code}'s bad example would be skipped by the prefilter"


def test_every_fixture_with_an_expected_finding_has_a_signal_or_an_importer() -> None:
    skipped = []
    for path in sorted(FIXTURES.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if EXPECT.search(text) and not needs_analysis(text):
            skipped.append(path)
    # only project files reached from a script that has signals may lack them (their findings
    # come from that script's check: test_projects.py proves it)
    assert all("_project" in str(path.relative_to(FIXTURES)) for path in skipped), skipped
