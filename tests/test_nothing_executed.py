"""devlint never imports or runs the code it checks, and its configuration cannot run code.

The checked project is booby-trapped: every file that Python would execute on import or on
start-up (module bodies, a package `__init__.py`, `conftest.py`, `sitecustomize.py`, a `.pth`
file, `setup.py`, `__main__.py`, a notebook cell) writes a marker file outside the project,
and modules named like devlint's own dependencies (`click.py`, `libcst.py`, `json.py`, ...)
do too, in case the project's folder ever reached devlint's import path. After `devlint check`
(and `--fix`, `--diff`) on the folder there must be no marker.

A second run installs an audit hook (PEP 578) in the devlint process, which sees every code
object executed, every process started and every module imported: none may come from the
project, and nothing may be written into it by a plain check. The configuration names
`os.system` and `builtins.exec` as helpers: they are names to match in the checked code,
never looked up, imported or called.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Python files that would run on import or start-up: name -> body (the marker line is added)
DEVICE_CODE = (
    "import torch\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "x = torch.zeros(3)\n"
    "x.to(device)\n"
)
TRAPS = {
    "train.py": "import helpers\nfrom pkg import mod\n" + DEVICE_CODE
                + "if __name__ == '__main__':\n    {marker}\n",
    "helpers.py": DEVICE_CODE + "def get_device():\n    {marker}\n    return device\n",
    "pkg/__init__.py": "VERSION = 1\n",
    "pkg/mod.py": DEVICE_CODE,
    "pkg/sub/__init__.py": DEVICE_CODE,
    "conftest.py": DEVICE_CODE,
    "sitecustomize.py": DEVICE_CODE,
    "usercustomize.py": DEVICE_CODE,
    "setup.py": DEVICE_CODE,
    "__main__.py": DEVICE_CODE,
    "tests/conftest.py": DEVICE_CODE,
}
# devlint's own imports, shadowed: must never be picked up from the checked folder
SHADOWS = ["click.py", "libcst.py", "rich.py", "pathspec.py", "json.py", "tomllib.py", "torch.py", "numpy.py",
           "typing_extensions.py", "yaml.py", "dataclasses.py"]
CONFIG = """
[tool.devlint]
select = ["ALL"]
device-helpers = ["helpers.get_device", "os.system", "builtins.exec", "subprocess.call"]
move-helpers = ["builtins.eval", "os.popen", "importlib.import_module"]
exclude = ["$(touch pwned)", "`touch pwned`", "__import__('os').system('touch pwned')"]
per-file-ignores = {"$(touch pwned)" = ["DEV101"], "'; import os; os.system('touch pwned') #" = ["DEV102"]}
"""
NOTEBOOK = {
    "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
               "source": ["import torch\n", "{marker}\n", "x = torch.zeros(1)\n", "x.to('cuda')\n"]}],
    "metadata": {"kernelspec": {"language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}


def _marker_line(markers: Path, name: str) -> str:
    target = markers / name.replace("/", "_")
    return f"__import__('pathlib').Path({str(target)!r}).touch()"


def _build(tmp_path: Path) -> tuple[Path, Path]:
    root, markers = tmp_path / "proj", tmp_path / "markers"
    markers.mkdir()
    for name, body in TRAPS.items():
        line = _marker_line(markers, name)
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        # the marker first of all at module level, and again where the body asks for it
        path.write_text(line + "\n" + body.replace("{marker}", line))
    for name in SHADOWS:
        (root / name).write_text(_marker_line(markers, name) + "\nraise SystemExit('the project shadowed a module')\n")
    # a .pth file runs its `import` lines when its folder is a site directory
    (root / "evil.pth").write_text(f"import os; {_marker_line(markers, 'evil.pth')}\n")
    notebook = json.loads(json.dumps(NOTEBOOK))
    notebook["cells"][0]["source"][1] = _marker_line(markers, "nb.ipynb") + "\n"
    (root / "nb.ipynb").write_text(json.dumps(notebook))
    (root / "pyproject.toml").write_text(CONFIG)
    return root, markers


def _devlint_command() -> list[str]:
    """The `devlint` console script users run; `python -m devlint` where it is not installed."""
    script = Path(sys.executable).with_name("devlint")
    found = str(script) if script.exists() else shutil.which("devlint")
    return [found] if found else [sys.executable, "-I", "-m", "devlint"]


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["NO_COLOR"] = "1"
    return env


@pytest.mark.parametrize("args", [
    ["check", "--no-cache", "--format", "json", "."],
    ["check", "--fix", "--unsafe-fixes", "--no-cache", "-j", "2", "."],
    ["check", "--diff", "--unsafe-fixes", "."],
])
def test_checking_a_booby_trapped_project_runs_none_of_it(tmp_path: Path, args: list[str]) -> None:
    root, markers = _build(tmp_path)
    proc = subprocess.run(_devlint_command() + args, cwd=root, capture_output=True, text=True,
                          env=_clean_env(), timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    assert sorted(p.name for p in markers.iterdir()) == []
    assert not (root / "pwned").exists()
    if "json" in args:
        found = {f["path"] for f in json.loads(proc.stdout)["findings"]}
        # the files were really analysed (not skipped), notebook included
        assert {"train.py", "nb.ipynb", os.path.join("pkg", "mod.py")} <= found


def test_python_dash_m_from_inside_the_project_imports_none_of_it(tmp_path: Path) -> None:
    """`python -m devlint` puts the current folder first on sys.path; a `click.py` there must
    not replace the real one (devlint/__main__.py takes the folder off the path)."""
    root, markers = _build(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "devlint", "check", "--no-cache", "--format", "json", "."],
                          cwd=root, capture_output=True, text=True, env=_clean_env(), timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert sorted(p.name for p in markers.iterdir()) == []
    assert "train.py" in {f["path"] for f in json.loads(proc.stdout)["findings"]}


AUDITED_RUN = textwrap.dedent("""
    import os, sys

    root, report = os.path.realpath(sys.argv[1]), sys.argv[2]
    SPAWN = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.startfile", "subprocess.Popen",
             "os.popen", "ctypes.dlopen", "ctypes.call_function")

    def inside(path):
        try:
            path = os.fsdecode(path)
            return not path.startswith("<") and os.path.realpath(path).startswith(root + os.sep)
        except (TypeError, ValueError):
            return False

    def note(*what):
        with open(report, "a") as handle:  # appended at once: forked workers report too
            handle.write(" ".join(map(str, what)) + "\\n")

    def hook(event, args):
        if event == "exec" and args and inside(getattr(args[0], "co_filename", "")):
            note("executed", args[0].co_filename)
        elif event in SPAWN:
            note("started", event, repr(args)[:300])
        elif event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)) and inside(args[0]):
            mode, flags = args[1], args[2]
            if (mode and any(c in mode for c in "wax+")) or (flags and flags & (os.O_WRONLY | os.O_RDWR)):
                note("wrote", args[0])

    sys.addaudithook(hook)
    from devlint.cli import cli

    code = cli.main(args=sys.argv[3:], prog_name="devlint", standalone_mode=False)
    for name, module in list(sys.modules.items()):
        if inside(getattr(module, "__file__", None) or ""):
            note("imported", name, module.__file__)
    sys.exit(code)
""")


def test_audit_hook_sees_no_code_of_the_project_run_and_nothing_started(tmp_path: Path) -> None:
    root, markers = _build(tmp_path)
    (root / "devlint.toml").write_text('device-helpers = ["os.system"]\nmove-helpers = ["builtins.exec"]\n')
    report = tmp_path / "audit.txt"
    report.write_text("")
    for config in ("pyproject.toml", "devlint.toml"):
        proc = subprocess.run(
            [sys.executable, "-I", "-c", AUDITED_RUN, str(root), str(report),
             "check", "--config", config, "--no-cache", "-j", "1", "--format", "json", "."],
            cwd=root, capture_output=True, text=True, env=_clean_env(), timeout=600)
        assert proc.returncode == 1, proc.stderr[-3000:]
        assert "train.py" in {f["path"] for f in json.loads(proc.stdout)["findings"]}
    assert report.read_text() == ""
    assert sorted(p.name for p in markers.iterdir()) == []


def test_the_audit_hook_would_see_an_import(tmp_path: Path) -> None:
    """The harness above can fail: importing a project module is reported."""
    root, _ = _build(tmp_path)
    (root / "pkg" / "plain.py").write_text("VALUE = 1\n")
    report = tmp_path / "audit.txt"
    report.write_text("")
    script = AUDITED_RUN.replace("sys.addaudithook(hook)",
                                 "sys.addaudithook(hook)\nsys.path.append(root)\n"
                                 "import importlib; importlib.import_module('pkg.plain')")
    subprocess.run([sys.executable, "-I", "-c", script, str(root), str(report), "--version"],
                   cwd=root, capture_output=True, text=True, env=_clean_env(), timeout=600)
    audit = report.read_text()
    assert "executed" in audit and "imported pkg.plain" in audit
