"""Fixes never break a program, and a `--fix` run ends cleanly whatever happens to its files.

One test per defect seen on real code: a name written where it is not bound (a device variable
bound only later, a caller's local), a tensor type written as a device, an unconditional
`.cuda()` in code that runs on the CPU, tab indentation, a run that stops before its fixed
point, one refused fix dropping the others, files written that were not asked for, edits made
while devlint runs, read-only files and folders, full disks, links, owners, notebooks
re-serialised, and `--stdin-filename --fix` saying nothing of what is left.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import subprocess
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from devlint.cli import cli
from devlint.engine import check_text
from devlint.findings import Fix
from devlint.fix.apply import fix_source
from devlint.fix.bindings import unbound_reads
from devlint.rules import all_rules

ALL = frozenset(r.code for r in all_rules())
FIX = ["check", "--fix", "--unsafe-fixes", "--select", "ALL", "--no-cache"]

HEADER = 'import torch\nimport torch.nn as nn\n'
DEVICE = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def _map_locations(text: str) -> list[str]:
    return [ast.unparse(k.value) for k in ast.walk(ast.parse(text))
            if isinstance(k, ast.keyword) and k.arg == "map_location"]


def _fix_twice(path: Path) -> str:
    _run(*FIX, str(path))
    once = path.read_text()
    _run(*FIX, str(path))
    assert path.read_text() == once, "a second run changed the file again"
    return once


# --- DEV201: map_location names a device bound where the load runs ---------------------------

def test_map_location_is_cpu_when_the_device_is_bound_only_later(tmp_path: Path) -> None:
    script = _write(tmp_path / "train.py", """
        import torch
        import torch.nn as nn

        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("checkpoint.pt"))
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device)
    """)
    fixed = _fix_twice(script)
    assert _map_locations(fixed) == ["'cpu'"]


def test_map_location_never_names_a_tensor_type(tmp_path: Path) -> None:
    script = _write(tmp_path / "legacy.py", """
        import torch

        import torch.nn as nn

        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
        generator = nn.Linear(8, 8)
        if cuda:
            generator.cuda()
        z = torch.randn(4, 8).type(Tensor)
        generator.load_state_dict(torch.load("generator.pth"))
        print(generator(z))
    """)
    fixed = _fix_twice(script)
    assert "Tensor" not in _map_locations(fixed)
    assert _map_locations(fixed) == ["'cpu'"]


def test_map_location_uses_the_device_variable_where_it_is_bound(tmp_path: Path) -> None:
    """The correct twin: a global device read inside a function (which runs later) is used."""
    script = _write(tmp_path / "infer.py", """
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        def restore(path):
            model = nn.Linear(8, 2)
            model.load_state_dict(torch.load(path))
            return model.to(device)


        restore("best.pt")
    """)
    fixed = _fix_twice(script)
    assert _map_locations(fixed) == ["device"]


def test_ten_loads_are_fixed_in_one_run(tmp_path: Path) -> None:
    loads = "".join(f'    nets[{i}].load_state_dict(torch.load("part{i}.pt"))\n' for i in range(10))
    script = tmp_path / "ensemble.py"
    script.write_text(HEADER + DEVICE + "nets = [nn.Linear(4, 4) for _ in range(10)]\n\n\ndef load_all():\n"
                      + loads + "    return [n.to(device) for n in nets]\n\n\nload_all()\n")
    _run(*FIX, str(script))
    once = script.read_text()
    assert _map_locations(once) == ["device"] * 10
    _run(*FIX, str(script))
    assert script.read_text() == once


# --- names an unsafe fix writes ----------------------------------------------------------------

def test_no_move_inserted_where_the_device_is_a_callers_local(tmp_path: Path) -> None:
    """A library-style helper: `device` is a local of the caller, not a name the helper has."""
    script = _write(tmp_path / "engine.py", """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def evaluate(model, loader, criterion):
            total = 0.0
            for images, labels in loader:
                total += criterion(model(images.cuda() if torch.cuda.is_available() else images), labels).item()
            return total


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(8, 3).to(device)
            loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 3, (32,))), batch_size=8)
            print(evaluate(model, loader, nn.CrossEntropyLoss()))


        main()
    """)
    _write(tmp_path / "metrics.py", """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def accuracy(model, loader):
            correct = 0
            for images, labels in loader:
                logits = model(images)
                correct += (logits.argmax(1) == labels).sum().item()
            return correct


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(8, 3).to(device)
            loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randint(0, 3, (32,))), batch_size=8)
            print(accuracy(model, loader))


        main()
    """)
    original = script.read_text()
    metrics = (tmp_path / "metrics.py").read_text()
    _run(*FIX, str(tmp_path))
    assert (tmp_path / "metrics.py").read_text() == metrics  # `device = ...` is main's, not accuracy's
    fixed = script.read_text()
    before, after = unbound_reads(original), unbound_reads(fixed)
    assert after is not None and all(after[key] <= before.get(key, 0) for key in after)
    for line in set(fixed.splitlines()) - set(original.splitlines()):
        assert "device" not in line or "def " in line, f"inserted a name the helper does not have: {line!r}"


def test_a_fix_that_makes_a_global_local_is_refused(tmp_path: Path) -> None:
    """`labels = labels.to(device)` inside a function that reads a global `labels` would make it
    a local read before it is bound (UnboundLocalError)."""
    text = HEADER + DEVICE + "labels = torch.randint(0, 3, (8,))\n\n\ndef score(logits):\n    return logits == labels\n"
    finding = check_text("import torch\nx = torch.zeros(2)\nx.cuda()\n", "t.py", enabled=ALL)[0]
    line = text.splitlines().index("    return logits == labels") + 1
    bad = finding.with_(fix=Fix("move labels", False, ((line, 1, line, 1, "    labels = labels.to(device)\n"),)))
    result = fix_source("t.py", text, [bad], lambda t: [], unsafe=True)
    assert not result.changed
    assert result.refused and "`labels`" in result.refused and "not bound" in result.refused


def test_no_unconditional_cuda_in_code_that_runs_on_the_cpu(tmp_path: Path) -> None:
    """The teacher meets `.cuda()` tensors on the GPU path only: appending `.cuda()` where it is
    built would crash the CPU path the program supports."""
    script = _write(tmp_path / "distill.py", """
        import torch
        import torch.nn as nn

        use_cuda = torch.cuda.is_available()
        device = torch.device("cuda" if use_cuda else "cpu")
        head = nn.Linear(2, 2).to(device)
        student = nn.Linear(8, 2)
        teacher = nn.Linear(8, 2)
        if use_cuda:
            student = student.cuda()
            x = torch.randn(4, 8).cuda()
            print(student(x), teacher(x))
    """)
    original = script.read_text()
    _run(*FIX, str(script))
    fixed = script.read_text()
    assert fixed.count(".cuda()") == original.count(".cuda()")
    assert "teacher = nn.Linear(8, 2)\n" in fixed or "teacher = nn.Linear(8, 2).to(device)\n" in fixed


def test_the_device_variable_replaces_cuda_where_it_is_bound(tmp_path: Path) -> None:
    """The twin: the GPU switch decides everything, the fix moves with the program's variable."""
    script = _write(tmp_path / "finetune.py", """
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        backbone = nn.Linear(8, 4).to(device)
        head = nn.Linear(4, 2)
        features = backbone(torch.randn(2, 8, device=device))
        print(head(features))
    """)
    fixed = _fix_twice(script)
    assert "head = nn.Linear(4, 2).to(device)" in fixed and ".cuda()" not in fixed


def test_register_buffer_fix_keeps_checkpoints_loading(tmp_path: Path) -> None:
    before = Path(__file__).parent / "fix_golden" / "dev104_mask_attribute.unsafe.before.py"
    script = tmp_path / "mixer.py"
    script.write_text(before.read_text())
    fixed = _fix_twice(script)
    assert "persistent=False" in fixed


def test_inserted_line_uses_the_files_tab_indentation(tmp_path: Path) -> None:
    golden = (Path(__file__).parent / "fix_golden" / "dev101_labels_in_eval.unsafe.before.py").read_text()
    script = tmp_path / "tabs.py"
    script.write_text(golden.replace("    ", "\t"))
    fixed = _fix_twice(script)
    assert "\t\t\tlabels = labels.to(device)\n" in fixed
    compile(fixed, "tabs.py", "exec")


def test_cr_only_file_keeps_its_line_endings(tmp_path: Path) -> None:
    golden = (Path(__file__).parent / "fix_golden" / "dev101_labels_in_eval.unsafe.before.py").read_text()
    script = tmp_path / "mac.py"
    script.write_bytes(golden.replace("\n", "\r").encode())
    _run(*FIX, str(script))
    data = script.read_bytes()
    assert b"labels = labels.to(device)\r" in data and b"\n" not in data


def test_a_refused_fix_refuses_only_itself() -> None:
    text = HEADER + DEVICE + 'model = nn.Linear(8, 2)\nmodel.load_state_dict(torch.load("a.pt"))\nmodel.to(device)\n'
    findings = check_text(text, "t.py", enabled=ALL)
    good = [f for f in findings if f.fix is not None and f.fix.safe]
    assert good
    broken = good[0].with_(fix=Fix("break it", True, ((1, 1, 1, 1, "def ("),)))
    result = fix_source("t.py", text, [broken, *good], lambda t: check_text(t, "t.py", enabled=ALL), unsafe=False)
    assert "map_location=device" in result.fixed
    assert result.refused and "parse" in result.refused


# --- only what was asked for, only as it was read -----------------------------------------------

def test_an_excluded_file_is_neither_written_nor_reported(tmp_path: Path) -> None:
    """A library layer excluded by the configuration, imported by the script the user names:
    its finding (reached through the import) is not reported, and `--fix` does not write it."""
    project = tmp_path / "proj"
    _write(project / "pyproject.toml", """
        [tool.devlint]
        exclude = ["models.py"]
    """)
    models = _write(project / "models.py", """
        import torch
        import torch.nn as nn


        class Mixer(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.proj = nn.Linear(n, n)
                self.mask = torch.tril(torch.ones(n, n))

            def forward(self, x):
                return self.proj(x) @ self.mask
    """)
    _write(project / "use_models.py", """
        import torch

        from models import Mixer

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = Mixer(8).to(device)
        print(model(torch.randn(4, 8, device=device)))
    """)
    original = models.read_text()
    old = os.getcwd()
    os.chdir(project)
    try:
        checked = _run("check", "--select", "ALL", "--no-cache", "--force-exclude", "use_models.py")
        fixed = _run(*FIX, "--force-exclude", "use_models.py")
        included = _run("check", "--select", "ALL", "--no-cache", "models.py", "use_models.py")
    finally:
        os.chdir(old)
    assert models.read_text() == original
    assert checked[0] == 0 and "models.py:" not in checked[1]
    assert fixed[0] == 0
    assert included[0] == 1 and "models.py:9" in included[1]  # named, it is checked and reported


def test_a_file_edited_after_the_check_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    """A real edit on disk between the check and the write: the user's line stays."""
    import devlint.fix.run as fix_run

    script = tmp_path / "ckpt.py"
    script.write_text((Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text())
    real = fix_run.fix_files

    def edit_then_fix(*args, **kwargs):
        with open(script, "a") as handle:
            handle.write("print('added while devlint ran')\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(fix_run, "fix_files", edit_then_fix)
    code, _, err = _run(*FIX, str(script))
    assert "added while devlint ran" in script.read_text()
    assert "map_location" not in script.read_text()
    assert "changed since devlint read it" in err and "ckpt.py" in err
    assert code == 1


def test_a_file_edited_while_it_is_fixed_is_left_alone(tmp_path: Path, monkeypatch) -> None:
    import devlint.fix.run as fix_run

    script = tmp_path / "ckpt.py"
    script.write_text((Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text())
    real = fix_run.fix_unit

    def fix_while_editing(*args, **kwargs):
        result = real(*args, **kwargs)
        with open(script, "a") as handle:
            handle.write("# the user saved meanwhile\n")
        return result

    monkeypatch.setattr(fix_run, "fix_unit", fix_while_editing)
    code, _, err = _run(*FIX, str(script))
    assert script.read_text().endswith("# the user saved meanwhile\n")
    assert "map_location" not in script.read_text()
    assert "changed while devlint was fixing it" in err


def _two_files(folder: Path) -> tuple[Path, Path]:
    golden = (Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text()
    a = folder / "a_ckpt.py"
    b = folder / "b_ckpt.py"
    a.write_text(golden)
    b.write_text(golden)
    return a, b


def test_a_read_only_file_is_named_and_the_others_still_fixed(tmp_path: Path) -> None:
    a, b = _two_files(tmp_path)
    original = a.read_text()
    a.chmod(0o444)
    code, out, err = _run(*FIX, str(tmp_path))
    assert a.read_text() == original
    assert "map_location=device" in b.read_text()
    assert "a_ckpt.py" in err and "read-only" in err
    assert "internal error" not in err and code == 1
    assert "a_ckpt.py" in out  # its finding is still reported


def test_a_full_disk_is_named_and_the_others_still_fixed(tmp_path: Path, monkeypatch) -> None:
    import devlint.atomic as atomic

    a, b = _two_files(tmp_path)
    original = a.read_text()
    real = atomic.write_atomically

    def full_for_a(path, data, **kwargs):
        if os.path.basename(path) == "a_ckpt.py":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data, **kwargs)

    monkeypatch.setattr(atomic, "write_atomically", full_for_a)
    code, out, err = _run(*FIX, str(tmp_path))
    assert a.read_text() == original and "map_location=device" in b.read_text()
    assert "a_ckpt.py: cannot write it: No space left on device" in err
    assert code == 1 and "internal error" not in err


def _read_only_folder(folder: Path, on: bool) -> bool:
    """Make `folder` read-only for real: root ignores permission bits, so as root the folder is
    made immutable (chattr +i: no file can be created or renamed in it)."""
    if os.geteuid() != 0:
        folder.chmod(0o555 if on else 0o755)
        return True
    done = subprocess.run(["chattr", "+i" if on else "-i", str(folder)], capture_output=True)
    return done.returncode == 0


def test_a_read_only_folder_is_named_not_a_crash(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    a, b = _two_files(folder)
    original = a.read_text()
    (tmp_path / "fine.py").write_text(original)
    if not _read_only_folder(folder, True):
        pytest.skip("this file system cannot make a folder read-only for root")
    try:
        code, out, err = _run(*FIX, str(tmp_path))
    finally:
        _read_only_folder(folder, False)
    assert "internal error" not in err and code == 1
    assert "a_ckpt.py: cannot write it" in err and "b_ckpt.py: cannot write it" in err
    assert a.read_text() == original and b.read_text() == original
    assert "map_location=device" in (tmp_path / "fine.py").read_text()
    assert "a_ckpt.py" in out  # the findings are still reported


def test_a_symlink_stays_a_link_and_its_target_is_fixed(tmp_path: Path) -> None:
    target = tmp_path / "real" / "ckpt.py"
    target.parent.mkdir()
    target.write_text((Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text())
    link = tmp_path / "link.py"
    link.symlink_to(target)
    _run(*FIX, str(link))
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert "map_location=device" in target.read_text()


def test_hard_links_owner_and_mode_are_kept(tmp_path: Path) -> None:
    script = tmp_path / "ckpt.py"
    script.write_text((Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text())
    other = tmp_path / "same_file.py"
    os.link(script, other)
    script.chmod(0o750)
    if os.geteuid() == 0:
        os.chown(script, 65534, 65534)
    before = script.stat()
    _run(*FIX, str(script))
    after = script.stat()
    assert "map_location=device" in other.read_text()
    assert after.st_ino == before.st_ino and after.st_nlink == 2
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)


def test_owner_is_kept_by_an_atomic_rename(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root can give a file another owner to keep")
    script = tmp_path / "ckpt.py"
    script.write_text((Path(__file__).parent / "fix_golden" / "dev201_checkpoint.before.py").read_text())
    os.chown(script, 65534, 65534)
    _run(*FIX, str(script))
    assert "map_location=device" in script.read_text()
    assert (script.stat().st_uid, script.stat().st_gid) == (65534, 65534)


# --- notebooks ---------------------------------------------------------------------------------

NOTEBOOK = (
    '\ufeff{\r\n'
    ' "cells": [\r\n'
    '  {\r\n'
    '   "cell_type": "markdown",\r\n'
    '   "metadata": {},\r\n'
    '   "source": ["# Caf\\u00e9 \\ud800 notes\\n", "and a \\/ slash"]\r\n'
    '  },\r\n'
    '  {\r\n'
    '   "cell_type": "code",\r\n'
    '   "execution_count": 1.0e0,\r\n'
    '   "metadata": {"scrolled": true},\r\n'
    '   "outputs": [{"name": "stdout", "output_type": "stream", "text": ["1.50\\n"]}],\r\n'
    '   "source": [\r\n'
    '    "import torch\\n",\r\n'
    '    "import torch.nn as nn\\n",\r\n'
    '    "device = torch.device(\\"cuda\\" if torch.cuda.is_available() else \\"cpu\\")"\r\n'
    '   ]\r\n'
    '  },\r\n'
    '  {\r\n'
    '   "cell_type": "code",\r\n'
    '   "execution_count": null,\r\n'
    '   "metadata": {},\r\n'
    '   "outputs": [],\r\n'
    '   "source": [\r\n'
    '    "model = nn.Linear(8, 2)\\n",\r\n'
    '    "model.load_state_dict(torch.load(\\"checkpoint.pt\\"))\\n",\r\n'
    '    "model.to(device)"\r\n'
    '   ]\r\n'
    '  }\r\n'
    ' ],\r\n'
    ' "metadata": {"kernelspec": {"language": "python", "name": "python3"}},\r\n'
    ' "nbformat": 4,\r\n'
    ' "nbformat_minor": 5\r\n'
    '}\r\n'
)


def test_notebook_keeps_every_byte_outside_the_fixed_cell(tmp_path: Path) -> None:
    notebook = tmp_path / "train.ipynb"
    notebook.write_bytes(NOTEBOOK.encode("utf-8"))
    code, _, err = _run(*FIX, str(notebook))
    assert "internal error" not in err
    expected = NOTEBOOK.replace('torch.load(\\"checkpoint.pt\\")',
                                'torch.load(\\"checkpoint.pt\\", map_location=device)')
    assert expected != NOTEBOOK
    assert notebook.read_bytes() == expected.encode("utf-8")
    _run(*FIX, str(notebook))
    assert notebook.read_bytes() == expected.encode("utf-8")


# --- standard input ----------------------------------------------------------------------------

def test_stdin_fix_prints_what_is_left(tmp_path: Path) -> None:
    source = HEADER + DEVICE + ("model = nn.Linear(2, 2).to(device)\nx = torch.zeros(2)\ny = model(x)\n"
                                'sd = torch.load("a.pt")\n')
    code, out, err = _run("check", "--stdin-filename", "t.py", "--fix", stdin=source)
    assert 'torch.load("a.pt", map_location=device)' in out
    assert "DEV105" in err and "DEV201" not in err
    assert code == 1


# --- every fixture: the fixed point, and nothing broken -----------------------------------------

FIXTURES = sorted(p for p in (Path(__file__).parent / "fixtures").rglob("*.py"))


def test_every_fixture_fixes_to_a_fixed_point_that_parses_and_binds_its_names() -> None:
    """Fix each fixture (unsafe fixes included), then fix the result again: the second pass
    changes nothing, the result compiles and reads no name where it is not bound."""
    from devlint.fix.run import fix_unit
    from devlint.runner import CheckSettings, check_unit
    from devlint.source import read_source

    settings = CheckSettings(enabled=ALL)
    fixed_files = 0
    for path in FIXTURES:
        unit = read_source(path)
        if not unit.ok or unit.text is None:
            continue
        findings = check_unit(unit, settings)
        own = [f for f in findings if f.path == unit.display]
        if not any(f.fix is not None for f in own):
            continue
        first = fix_unit(unit, own, settings, unsafe=True)
        if not first.changed:
            continue
        fixed_files += 1
        compile(first.fixed, str(path), "exec")
        before, after = unbound_reads(unit.text), unbound_reads(first.fixed)
        assert after is not None
        gained = {key for key, count in after.items() if count > (before or {}).get(key, 0)}
        assert not gained, f"{path}: {gained}"
        again_unit = replace(unit, text=first.fixed)
        again = [f for f in check_unit(again_unit, settings) if f.path == unit.display]
        second = fix_unit(again_unit, again, settings, unsafe=True)
        assert second.fixed == first.fixed, f"{path}: a second run changed it again"
    assert fixed_files >= 20
