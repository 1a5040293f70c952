"""Whole programs across files: each folder under tests/fixtures/projects/ is a small project.

A project's expectations are `# expect: CODE` comments on the lines where findings must be
located, in whichever of its files that is (a plain tensor attribute is reported in models.py
even though only train.py, which moves the model, shows the bug). Two checks per project:

* the whole folder, as `devlint check <folder>` runs it: every expectation of every file is
  found, at its file and line, and nothing else;
* each entry file named in the project's `entry.txt`, checked ALONE (an editor, a pre-commit
  hook on one changed file): its own expectations are found and nothing else. The other files'
  findings that `entry.txt` lists under it as `models.py:13:DEV104` are ones its analysis
  reaches (the whole-folder check reports them), but a run reports only in the files it was
  asked to check: imported files are read, not reported (devlint/scope.py).

Besides the fixtures, tests below pin the mechanics: import forms, cycles, a checked file that
another project file imports back, edited files in a long-lived process, suppression comments
and per-file-ignores in the file where a finding is located, and the command line's paths.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from devlint.config import Config
from devlint.discover import discover
from devlint.engine import check_text
from devlint.project import ProjectIndex, index_for
from devlint.rules import all_rules
from devlint.runner import CheckSettings, run_check

PROJECTS_DIR = Path(__file__).parent / "fixtures" / "projects"
PROJECTS = sorted(p for p in PROJECTS_DIR.iterdir() if p.is_dir() and p.name.endswith("_project"))
EVERY_RULE = frozenset(rule.code for rule in all_rules())

_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)")
_LISTED = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<code>[A-Z]+\d+)$")

Located = tuple[Path, int, str]  # (resolved file, line, code)


def _expectations_in(path: Path) -> set[Located]:
    found: set[Located] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found |= {(path.resolve(), number, code) for code in re.split(r"[,\s]+", match.group(1)) if code}
    return found


def project_expectations(root: Path) -> set[Located]:
    found: set[Located] = set()
    for path in sorted(root.rglob("*.py")):
        found |= _expectations_in(path)
    return found


def entry_files(root: Path) -> dict[str, set[Located]]:
    """entry.txt: an entry file per line, each followed by the other files' findings it reaches."""
    entries: dict[str, set[Located]] = {}
    current: str | None = None
    for raw in (root / "entry.txt").read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        listed = _LISTED.match(line)
        if listed is None:
            current = line
            entries[current] = set()
            continue
        assert current is not None, f"{root.name}/entry.txt lists {line!r} before any entry file"
        entries[current].add(((root / listed["path"]).resolve(), int(listed["line"]), listed["code"]))
    return entries


def _located(findings, base: Path) -> set[Located]:
    return {((base / f.path).resolve(), f.line, f.code) for f in findings}


def _describe(items: set[Located], root: Path) -> list[str]:
    return sorted(f"{os.path.relpath(path, root)}:{line}:{code}" for path, line, code in items)


def _run(paths: list[str]) -> list:
    files = discover(paths)
    return run_check(files, CheckSettings(enabled=EVERY_RULE, config=Config())).findings


def test_there_are_enough_projects() -> None:
    assert len(PROJECTS) >= 15
    for root in PROJECTS:
        assert (root / "entry.txt").is_file(), f"{root.name} has no entry.txt"


@pytest.mark.parametrize("root", PROJECTS, ids=[p.name for p in PROJECTS])
def test_whole_folder(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    findings = _run(["."])
    got = _located(findings, root)
    expected = project_expectations(root)
    assert len(findings) == len(got), "a finding is reported twice"
    assert _describe(expected - got, root) == [], "missing"
    assert _describe(got - expected, root) == [], "unexpected"


@pytest.mark.parametrize(
    ("root", "entry"),
    [(root, entry) for root in PROJECTS for entry in entry_files(root)],
    ids=[f"{root.name}:{entry}" for root in PROJECTS for entry in entry_files(root)],
)
def test_entry_file_alone(root: Path, entry: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(root)
    listed = entry_files(root)[entry]
    assert listed <= project_expectations(root), "entry.txt lists a line that carries no `# expect:`"
    expected = _expectations_in(root / entry)
    got = _located(_run([entry]), root)
    assert _describe(expected - got, root) == [], "missing"
    assert _describe(got - expected, root) == [], "unexpected"


@pytest.mark.parametrize("root", PROJECTS, ids=[p.name for p in PROJECTS])
def test_from_another_folder(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository root, naming the project's folder: the same findings, and the
    paths of other files are shown relative to where devlint runs, like the checked ones."""
    monkeypatch.chdir(PROJECTS_DIR.parent.parent.parent)
    findings = _run([os.path.relpath(root)])
    for finding in findings:
        assert not os.path.isabs(finding.path) and Path(finding.path).is_file(), finding.path
    assert _located(findings, Path.cwd()) == project_expectations(root)


# --- mechanics, on small projects written for each test ------------------------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def _check_file(root: Path, rel: str) -> set[tuple[str, int, str]]:
    path = root / rel
    findings = check_text(path.read_text(encoding="utf-8"), str(path), enabled=EVERY_RULE,
                          project=ProjectIndex([root]))
    return {(os.path.relpath(Path(f.path).resolve(), root.resolve()), f.line, f.code) for f in findings}


MODEL_WITH_MASK = """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.mask = torch.ones(4)

        def forward(self, x):
            return self.fc(x) * self.mask
"""

MOVES_NET = """\
    import torch
    {imports}

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = {make}.to(device)
    out = model(torch.randn(2, 4, device=device))
"""


@pytest.mark.parametrize(
    ("imports", "make"),
    [
        ("from pkg.models import Net", "Net()"),
        ("import pkg.models as m", "m.Net()"),
        ("import pkg.models", "pkg.models.Net()"),
        ("from pkg import models", "models.Net()"),
        ("from pkg import Net", "Net()"),  # re-exported by pkg/__init__.py
        ("import pkg", "pkg.Net()"),
        ("from pkg.factory import make_net", "make_net()"),  # a function that returns the class's instance
    ],
)
def test_import_forms(tmp_path: Path, imports: str, make: str) -> None:
    _write(tmp_path, {
        "pkg/__init__.py": "from .models import Net\n",
        "pkg/models.py": MODEL_WITH_MASK,
        "pkg/factory.py": "from .models import Net\n\n\ndef make_net():\n    return Net()\n",
        "train.py": MOVES_NET.format(imports=imports, make=make),
    })
    assert _check_file(tmp_path, "train.py") == {("pkg/models.py", 9, "DEV104")}


def test_the_same_name_in_a_library_and_the_project_means_the_project(tmp_path: Path) -> None:
    """Python puts the script's folder first on sys.path: a local `datasets` package wins."""
    _write(tmp_path, {
        "datasets/__init__.py": "from .models import Net\n",
        "datasets/models.py": MODEL_WITH_MASK,
        "train.py": MOVES_NET.format(imports="from datasets import Net", make="Net()"),
    })
    assert _check_file(tmp_path, "train.py") == {("datasets/models.py", 9, "DEV104")}


def test_torch_is_never_a_project_module(tmp_path: Path) -> None:
    """Checking a checkout of a library devlint knows must not swap its knowledge for the source."""
    _write(tmp_path, {
        "torch/__init__.py": "def device(name):\n    return name\n",
        "train.py": MOVES_NET.format(imports="import torch.nn as nn", make="nn.Linear(4, 4)"),
    })
    assert _check_file(tmp_path, "train.py") == set()
    assert ProjectIndex([tmp_path]).find("torch") is None


def test_an_import_cycle_terminates(tmp_path: Path) -> None:
    """a imports b, b imports a, both use each other at module level and in functions."""
    _write(tmp_path, {
        "a.py": """
            import torch
            import torch.nn as nn
            from b import make, SIZE

            WIDTH = SIZE * 2


            class Net(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fc = nn.Linear(4, 4)
                    self.mask = torch.ones(4)

                def forward(self, x):
                    return make(self.fc(x)) * self.mask
        """,
        "b.py": """
            from a import Net, WIDTH

            SIZE = 2


            def make(x):
                return x * WIDTH


            def build():
                return Net()
        """,
        "train.py": MOVES_NET.format(imports="from b import build", make="build()"),
    })
    assert _check_file(tmp_path, "train.py") == {("a.py", 12, "DEV104")}
    # a.py alone is a layer in library mode: its plain tensor attribute crashes on any GPU caller
    assert _check_file(tmp_path, "a.py") == {("a.py", 12, "DEV104")}
    assert _check_file(tmp_path, "b.py") == set()


def test_a_project_file_that_imports_the_checked_file_back(tmp_path: Path) -> None:
    _write(tmp_path, {
        "models.py": textwrap.dedent(MODEL_WITH_MASK) + "\n\nfrom train import DEVICE_NAME\n",
        "train.py": """
            import torch
            from models import Net

            DEVICE_NAME = "cuda" if torch.cuda.is_available() else "cpu"
            model = Net().to(DEVICE_NAME)
            out = model(torch.randn(2, 4).to(DEVICE_NAME))
        """,
    })
    assert _check_file(tmp_path, "train.py") == {("models.py", 9, "DEV104")}


def test_a_base_class_in_another_file(tmp_path: Path) -> None:
    """The plain tensor attribute is set by the base class's __init__ (through super())."""
    _write(tmp_path, {
        "base.py": """
            import torch
            import torch.nn as nn


            class Base(nn.Module):
                def __init__(self, n):
                    super().__init__()
                    self.scale = torch.full((n,), 0.5)

                def rescale(self, x):
                    return x * self.scale
        """,
        "models.py": """
            import torch.nn as nn

            from base import Base


            class Net(Base):
                def __init__(self):
                    super(Net, self).__init__(4)
                    self.fc = nn.Linear(4, 4)

                def forward(self, x):
                    return self.rescale(self.fc(x))
        """,
        "train.py": MOVES_NET.format(imports="from models import Net", make="Net()"),
    })
    assert _check_file(tmp_path, "train.py") == {("base.py", 8, "DEV104")}


def test_helpers_that_move_or_return_a_moved_model(tmp_path: Path) -> None:
    _write(tmp_path, {
        "models.py": MODEL_WITH_MASK.replace("self.mask = torch.ones(4)", "self.register_buffer('mask', torch.ones(4))"),
        "utils.py": """
            import torch
            from models import Net


            def get_device():
                return torch.device("cuda" if torch.cuda.is_available() else "cpu")


            def to_device(batch, device):
                return [t.to(device) for t in batch]


            def build(device):
                return Net().to(device)
        """,
        "train.py": """
            import torch
            from torch.utils.data import DataLoader, TensorDataset
            import utils as U

            device = U.get_device()
            model = U.build(device)
            loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 4)), batch_size=4)
            for batch in loader:
                x, y = U.to_device(batch, device)
                loss = (model(x) - y).pow(2).mean()
            for x, y in loader:
                loss = (model(x.to(device)) - y).pow(2).mean()
        """,
    })
    assert _check_file(tmp_path, "train.py") == {("train.py", 12, "DEV101")}


def test_a_config_class_in_another_file_decides_the_device(tmp_path: Path) -> None:
    """Defaults are evaluated in the file that defines the class (its globals, not the caller's)."""
    files = {
        "config.py": """
            from dataclasses import dataclass, field

            import torch

            DEVICE = {device!r}


            @dataclass
            class Config:
                device: str = DEVICE
                steps: int = 2


            class CFG:
                device = DEVICE
        """,
        "train.py": """
            import torch
            import torch.nn as nn
            from config import CFG, Config

            cfg = Config()
            model = nn.Linear(4, 4).to(cfg.device)
            head = nn.Linear(4, 4).to(CFG.device)
            noise = torch.randn(2, 4)
            out = head(model(noise))
        """,
    }
    _write(tmp_path, {**files, "config.py": files["config.py"].format(device="cpu")})
    assert _check_file(tmp_path, "train.py") == set()
    _write(tmp_path, {**files, "config.py": files["config.py"].format(device="cuda")})
    assert ("train.py", 8, "DEV105") in _check_file(tmp_path, "train.py")


def test_an_edited_project_file_is_read_again(tmp_path: Path) -> None:
    """The per-process index notices a changed or new file (editors, long-lived processes)."""
    _write(tmp_path, {"train.py": MOVES_NET.format(imports="from models import Net", make="Net()")})
    train = tmp_path / "train.py"

    def check() -> set[tuple[str, int, str]]:
        findings = check_text(train.read_text(), str(train), enabled=EVERY_RULE)
        return {(Path(f.path).resolve().name, f.line, f.code) for f in findings}

    assert check() == set()  # models.py does not exist yet
    _write(tmp_path, {"models.py": MODEL_WITH_MASK})
    assert check() == {("models.py", 9, "DEV104")}
    fixed = MODEL_WITH_MASK.replace("self.mask = torch.ones(4)", "self.register_buffer('mask', torch.ones(4))")
    _write(tmp_path, {"models.py": fixed + "\n# edited\n"})
    assert check() == set()
    assert index_for(str(train)) is index_for(str(train))


def test_cli_reports_other_files_under_their_own_path(project, invoke) -> None:
    project.write("models.py", MODEL_WITH_MASK)
    project.write("train.py", MOVES_NET.format(imports="from models import Net", make="Net()"))
    project.write("eval.py", MOVES_NET.format(imports="from models import Net", make="Net()"))
    outcome = invoke("check", "train.py", "models.py", "--format", "json")
    assert outcome.exit_code == 1
    findings = json.loads(outcome.stdout)["findings"]
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("models.py", 9, "DEV104")]
    # two scripts reach the same bug: reported once
    outcome = invoke("check", ".", "--format", "json")
    findings = json.loads(outcome.stdout)["findings"]
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("models.py", 9, "DEV104")]
    # the text report quotes the line of the file the finding is in
    outcome = invoke("check", "train.py", "models.py")
    assert "models.py:9:" in outcome.stdout
    assert "self.mask = torch.ones(4)" in outcome.stdout


def test_cli_reports_only_in_the_files_it_was_asked_to_check(project, invoke) -> None:
    """train.py's analysis reads models.py and reaches its bug, but the user asked about
    train.py: imported project files are read, not reported."""
    project.write("models.py", MODEL_WITH_MASK)
    project.write("train.py", MOVES_NET.format(imports="from models import Net", make="Net()"))
    outcome = invoke("check", "train.py", "--format", "json")
    assert outcome.exit_code == 0
    assert json.loads(outcome.stdout)["findings"] == []
    # a folder of scripts that import a package beside it: the package is not reported either
    project.write("lib/__init__.py", "")
    project.write("lib/models.py", MODEL_WITH_MASK)
    project.write("examples/train.py", MOVES_NET.format(imports="from lib.models import Net", make="Net()"))
    assert json.loads(invoke("check", "examples", "--format", "json").stdout)["findings"] == []
    findings = json.loads(invoke("check", "examples", "lib", "--format", "json").stdout)["findings"]
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("lib/models.py", 9, "DEV104")]


def test_a_unit_test_lends_no_calling_context_to_the_program(project, invoke) -> None:
    """A test calls the program's evaluation function with a CPU module of its own and a device
    the analysis cannot read: what that would say about the program's code is the test's
    context, not the program's. The test is checked on its own."""
    project.write("evalkit/__init__.py", "")
    project.write("evalkit/loop.py", """\
        import torch


        def evaluate(model, loader, args):
            device = torch.device(args.device)
            total = 0.0
            for x, y in loader:
                x, y = x.to(device), y.to(device)
                total += (model(x).argmax(-1) == y).float().sum().item()
            return total
    """)
    project.write("tests/test_loop.py", """\
        from types import SimpleNamespace

        import torch

        from evalkit.loop import evaluate
        from tests.settings import load_defaults


        def test_evaluate():
            args = SimpleNamespace(**load_defaults())
            batch = (torch.randn(4, 3), torch.zeros(4, dtype=torch.long))
            assert evaluate(torch.nn.Linear(3, 2), [batch], args) >= 0
            assert torch.device(args.device).type in ("cpu", "cuda")
    """)
    assert json.loads(invoke("check", ".", "--format", "json").stdout)["findings"] == []
    # the same calls in a script of the program: its context, reported in the program's file, at
    # the call that hands the unmoved module to the other file's helper (rules.md: DEV102)
    project.write("evalkit/run.py", (project.root / "tests/test_loop.py").read_text().replace(
        "def test_evaluate():", "def main():").replace("tests.settings", "evalkit.settings") + "\n\nmain()\n")
    findings = json.loads(invoke("check", ".", "--format", "json").stdout)["findings"]
    assert [(f["path"], f["code"]) for f in findings] == [("evalkit/run.py", "DEV102")]


def test_cli_absolute_paths_stay_absolute(project, invoke) -> None:
    project.write("models.py", MODEL_WITH_MASK)
    project.write("train.py", MOVES_NET.format(imports="from models import Net", make="Net()"))
    outcome = invoke("check", str(project.root / "train.py"), str(project.root / "models.py"), "--format", "json")
    findings = json.loads(outcome.stdout)["findings"]
    assert [(f["path"], f["line"]) for f in findings] == [(str(project.root / "models.py"), 9)]


def test_suppression_and_ignores_apply_in_the_file_of_the_finding(project, invoke) -> None:
    project.write("models.py", MODEL_WITH_MASK.replace("torch.ones(4)", "torch.ones(4)  # noqa: DEV104"))
    project.write("train.py", MOVES_NET.format(imports="from models import Net", make="Net()"))
    assert json.loads(invoke("check", "train.py", "models.py", "--format", "json").stdout)["findings"] == []
    project.write("models.py", MODEL_WITH_MASK)
    assert len(json.loads(invoke("check", "train.py", "models.py", "--format", "json").stdout)["findings"]) == 1
    project.write("pyproject.toml", '[tool.devlint]\nper-file-ignores = {"models.py" = ["DEV104"]}\n')
    assert json.loads(invoke("check", "train.py", "models.py", "--format", "json").stdout)["findings"] == []


def test_stdin_resolves_imports_beside_the_named_file(project, invoke) -> None:
    """The module beside the named file is read: `Net()` is a module, so the CPU input that
    meets it is reported (in the checked text; models.py itself was not asked about), and a Net
    that moves its input itself is not."""
    project.write("models.py", MODEL_WITH_MASK)
    source = textwrap.dedent(MOVES_NET.format(imports="from models import Net", make="Net()")).replace(
        "torch.randn(2, 4, device=device)", "torch.randn(2, 4)")
    outcome = invoke("check", "--stdin-filename", "train.py", "--format", "json", input=source)
    findings = json.loads(outcome.stdout)["findings"]
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("train.py", 6, "DEV105")]
    # a Net that moves its input to its own weights: no crash, which only its code tells
    project.write("models.py", MODEL_WITH_MASK.replace("torch.ones(4)", "nn.Parameter(torch.ones(4))").replace(
        "self.fc(x)", "self.fc(x.to(self.fc.weight.device))"))
    outcome = invoke("check", "--stdin-filename", "train.py", "--format", "json", input=source)
    assert json.loads(outcome.stdout)["findings"] == []


def test_a_file_imported_earlier_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import libcst

    models = tmp_path / "models.py"
    models.write_text("import torch\n\n\ndef build(device='cpu'):\n    return torch.nn.Linear(4, 2).to(device)\n")
    train = tmp_path / "train.py"
    train.write_text("import torch\nfrom models import build\n\nmodel = build().to('cuda')\n"
                     "print(model(torch.randn(3, 4)))\n")
    parsed: list[str] = []
    real = libcst.parse_module
    monkeypatch.setattr(libcst, "parse_module", lambda source, *a, **k: parsed.append(
        source if isinstance(source, str) else source.decode()) or real(source, *a, **k))
    monkeypatch.chdir(tmp_path)
    assert "DEV105" in [f.code for f in check_text(train.read_text(), str(train))]
    assert check_text(models.read_text(), str(models)) == []
    assert parsed.count(models.read_text()) == 1  # parsed for train.py's import, reused for its own check
    changed = models.read_text() + "# edited\n"
    assert check_text(changed, str(models)) == []  # the text differs from the file: parsed anew
    assert parsed.count(changed) == 1
