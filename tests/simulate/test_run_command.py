"""`devlint run`: exit codes, output formats, the user's line and the phase, torch missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from devlint.simulate.cli import run_command  # noqa: E402

MIXED = "Expected all tensors to be on the same device"

BUGGY_EVAL = '''\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(40, 4), torch.randint(0, 2, (40,))), batch_size=4)


def evaluate():
    model.eval()
    hits = 0
    with torch.no_grad():
        for x, y in loader:
            logits = model(x.to(device))
            hits += (logits.argmax(1) == y).sum().item()
    return hits


for epoch in range(2):
    model.train()
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("epoch", epoch, evaluate())
'''

CLEAN = '''\
import sys
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
loader = DataLoader(TensorDataset(torch.randn(40, 4), torch.randint(0, 2, (40,))), batch_size=4)
seen = 0
for epoch in range(3):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        seen += 1
print("args", sys.argv[1:], "batches", seen, "len", len(loader), "cuda", torch.cuda.is_available())
'''


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def invoke(*args: str):
    return CliRunner().invoke(run_command, list(args), catch_exceptions=False)


def test_clean_script_exits_0_and_passes_its_arguments(workdir):
    write(workdir, "clean.py", CLEAN)
    result = invoke("--max-batches", "3", "clean.py", "--lr", "0.1")
    assert result.exit_code == 0, result.output
    # sys.argv reaches the script; every loader is cut to 3 batches (len included); CUDA is "there"
    assert "args ['--lr', '0.1'] batches 9 len 3 cuda True" in result.output
    assert "ran clean" in result.output


def test_max_batches_zero_means_no_limit(workdir):
    write(workdir, "clean.py", CLEAN)
    result = invoke("--max-batches", "0", "clean.py")
    assert result.exit_code == 0, result.output
    assert "batches 30 len 10" in result.output


def test_device_error_exits_1_at_the_users_line_with_pytorchs_message(workdir):
    write(workdir, "train.py", BUGGY_EVAL)
    result = invoke("train.py")
    assert result.exit_code == 1, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("train.py:17:")
    assert "DEV101" in first and MIXED in first
    assert "hits += (logits.argmax(1) == y).sum().item()" in result.output
    assert "`y`" in result.output  # the cause names the user's variable
    assert "evaluation" in result.output
    assert "devlint" + os.sep + "simulate" not in result.output  # devlint's frames are removed
    assert 'File "train.py", line 17, in evaluate' in result.output


def test_json_output(workdir):
    write(workdir, "train.py", BUGGY_EVAL)
    result = invoke("--format", "json", "train.py")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    (finding,) = document["findings"]
    assert finding["code"] == "DEV101"
    assert finding["name"] == "unmoved-input"
    assert finding["severity"] == "error"
    assert (finding["path"], finding["line"]) == ("train.py", 17)
    assert finding["message"].startswith(MIXED)
    assert finding["phase"] == "evaluation"
    assert finding["exception"] == "RuntimeError"
    assert 'File "train.py", line 17, in evaluate' in finding["traceback"]
    assert "devlint" + os.sep + "simulate" not in finding["traceback"]
    run = document["run"]
    assert run["status"] == "device-error" and run["exit_code"] == 1
    assert run["location"]["function"] == "evaluate"


def test_json_output_keeps_the_scripts_prints_off_stdout(workdir):
    write(workdir, "clean.py", CLEAN)
    result = invoke("--format", "json", "clean.py")
    assert result.exit_code == 0
    document = json.loads(result.stdout)  # nothing but the report on stdout
    assert document["findings"] == [] and document["run"]["status"] == "clean"
    assert "batches" in result.stderr


def test_concise_output(workdir):
    write(workdir, "train.py", BUGGY_EVAL)
    result = invoke("--format", "concise", "train.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:17:") and " DEV101 " + MIXED in result.stdout


def test_phase_training_and_module_level(workdir):
    write(workdir, "step.py", """\
        import torch
        model = torch.nn.Linear(3, 1).cuda()
        for step in range(2):
            loss = model(torch.randn(2, 3)).sum()
            loss.backward()
    """)
    result = invoke("--format", "json", "step.py")
    finding = json.loads(result.stdout)["findings"][0]
    assert (finding["line"], finding["phase"]) == (4, "training")

    write(workdir, "top.py", """\
        import torch
        scale = torch.ones(3).cuda()
        print(scale * torch.ones(3))
    """)
    finding = json.loads(invoke("--format", "json", "top.py").stdout)["findings"][0]
    assert (finding["line"], finding["phase"], finding["code"]) == (3, "module", "DEV105")


def test_phase_checkpoint(workdir):
    write(workdir, "resume.py", """\
        import torch

        def load_checkpoint(model):
            extra = torch.zeros(2, 3)
            model.weight.data.add_(extra)

        model = torch.nn.Linear(3, 2).cuda()
        load_checkpoint(model)
    """)
    finding = json.loads(invoke("--format", "json", "resume.py").stdout)["findings"][0]
    assert (finding["line"], finding["phase"]) == (5, "checkpoint")


def test_numpy_on_gpu_tensor_is_dev109(workdir):
    write(workdir, "np.py", """\
        import torch
        preds = torch.randn(4, device="cuda").argmax()
        print(preds.numpy())
    """)
    result = invoke("--format", "json", "np.py")
    assert result.exit_code == 1
    finding = json.loads(result.stdout)["findings"][0]
    assert (finding["code"], finding["line"], finding["exception"]) == ("DEV109", 3, "TypeError")
    assert finding["message"].startswith("can't convert cuda:0 device type tensor to numpy")


def test_to_on_a_loader_is_dev108(workdir):
    write(workdir, "loader.py", """\
        import torch
        from torch.utils.data import DataLoader
        loader = DataLoader(list(range(4)), batch_size=2)
        loader = loader.to("cuda")
    """)
    finding = json.loads(invoke("--format", "json", "loader.py").stdout)["findings"][0]
    assert (finding["code"], finding["line"]) == ("DEV108", 4)


def test_other_failure_exits_4_and_is_not_a_device_error(workdir):
    write(workdir, "broken.py", """\
        import torch
        x = torch.randn(3).cuda()
        raise ValueError("bad config: " + str(x.shape))
    """)
    result = invoke("--format", "json", "broken.py")
    assert result.exit_code == 4
    document = json.loads(result.stdout)
    assert document["findings"] == []
    run = document["run"]
    assert run["status"] == "script-error" and run["exception"] == "ValueError"
    assert run["location"]["line"] == 3
    text = invoke("broken.py")
    assert text.exit_code == 4 and "for a reason other than device placement" in text.output


def test_a_script_that_cannot_be_compiled_exits_4_not_3(workdir):
    write(workdir, "typo.py", "import torch\nx = (\n")
    write(workdir, "imports_typo.py", "import torch\nimport typo\n")
    for script in ("typo.py", "imports_typo.py"):
        result = invoke("--format", "json", script)
        assert result.exit_code == 4, result.output
        run = json.loads(result.stdout)["run"]
        assert run["status"] == "script-error" and run["exception"] == "SyntaxError"
    text = invoke("typo.py")
    assert "for a reason other than device placement" in text.output and "bug in devlint" not in text.output


def test_sys_exit_codes(workdir):
    write(workdir, "ok.py", "import sys\nsys.exit(0)\n")
    write(workdir, "fail.py", "import sys\nsys.exit(3)\n")
    assert invoke("ok.py").exit_code == 0
    assert invoke("fail.py").exit_code == 4


def test_max_seconds_stops_an_endless_loop_with_exit_0(workdir):
    write(workdir, "forever.py", """\
        import torch
        x = torch.zeros(2, device="cuda")
        while True:
            x = x + 1
    """)
    result = invoke("--max-seconds", "0.5", "forever.py")
    assert result.exit_code == 0, result.output
    assert "--max-seconds" in result.output


def test_max_seconds_stops_a_loop_that_never_calls_torch(workdir):
    write(workdir, "spin.py", "import torch\nn = 0\nwhile True:\n    n += 1\n")
    result = invoke("--max-seconds", "0.3", "spin.py")
    assert result.exit_code == 0, result.output


def test_usage_errors_exit_2(workdir):
    assert invoke("missing.py").exit_code == 2
    assert invoke().exit_code == 2
    assert CliRunner().invoke(run_command, ["--max-batches", "-1", "x.py"]).exit_code == 2
    assert CliRunner().invoke(run_command, ["--format", "xml", "x.py"]).exit_code == 2


def test_module_mode(workdir):
    package = workdir / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "train.py").write_text(
        "import sys, torch\n"
        "print('argv', sys.argv[1:])\n"
        "w = torch.ones(2, device='cuda')\n"
        "w + torch.ones(2)\n",
        encoding="utf-8",
    )
    result = invoke("--format", "json", "-m", "pkg.train", "--epochs", "3")
    assert result.exit_code == 1, result.output
    finding = json.loads(result.stdout)["findings"][0]
    assert finding["line"] == 4 and finding["path"].endswith(os.path.join("pkg", "train.py"))
    assert "argv ['--epochs', '3']" in result.stderr


def _run_python(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )


def test_importing_the_command_does_not_import_torch(tmp_path):
    probe = _run_python("import sys, devlint.simulate.cli, devlint.simulate; print('torch' in sys.modules)", tmp_path)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.strip() == "False"


def test_without_torch_run_exits_2_with_a_clear_message(tmp_path):
    (tmp_path / "s.py").write_text("print('never runs')\n")
    probe = _run_python(
        "import sys\n"
        "sys.modules['torch'] = None  # as if torch were not installed\n"
        "from devlint.simulate.cli import run_command\n"
        "run_command(['s.py'])\n",
        tmp_path,
    )
    assert probe.returncode == 2, probe.stderr
    assert "PyTorch" in probe.stderr and 'pip install ".[run]"' in probe.stderr
    assert "never runs" not in probe.stdout


def test_devlint_run_through_the_main_command(tmp_path):
    (tmp_path / "bug.py").write_text(
        "import torch\nm = torch.nn.Linear(2, 2).cuda()\nm(torch.randn(1, 2))\n", encoding="utf-8"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    probe = subprocess.run(
        [sys.executable, "-m", "devlint", "run", "--format", "json", "bug.py"],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )
    assert probe.returncode == 1, probe.stderr
    finding = json.loads(probe.stdout)["findings"][0]
    assert (finding["code"], finding["line"]) == ("DEV105", 3)  # torch.randn(...) without device=


def test_version_warning():
    from devlint.simulate import torch_version_warning

    assert torch_version_warning("2.13.0") is None
    assert torch_version_warning("2.13.1+cu121") is None
    warning = torch_version_warning("2.4.1")
    assert warning is not None and "2.13.x" in warning and "2.4.1" in warning


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_unmodelled_cuda_feature_exits_3(workdir):
    write(workdir, "ddp.py", """\
        import torch.distributed as dist
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29511", rank=0, world_size=1)
    """)
    result = invoke("--format", "json", "ddp.py")
    assert result.exit_code == 3, result.output
    assert json.loads(result.stdout)["run"]["status"] == "unsupported"


def test_worker_error_points_into_the_collate_function(workdir):
    write(workdir, "workers.py", """\
        import torch
        from torch.utils.data import DataLoader, TensorDataset

        def collate(samples):
            xs = torch.stack([x for x, in samples])
            return xs.cuda()

        model = torch.nn.Linear(4, 2).cuda()
        for xs in DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4, collate_fn=collate, num_workers=1):
            model(xs)
    """)
    result = invoke("--format", "json", "workers.py")
    assert result.exit_code == 1, result.output
    finding = json.loads(result.stdout)["findings"][0]
    assert (finding["code"], finding["line"]) == ("DEV110", 6)


def test_sarif_and_github_formats_when_devlint_provides_them(workdir):
    from devlint.simulate.cli import _available_formats

    write(workdir, "train.py", BUGGY_EVAL)
    if "sarif" in _available_formats():
        result = invoke("--format", "sarif", "train.py")
        assert result.exit_code == 1
        (sarif_result,) = json.loads(result.stdout)["runs"][0]["results"]
        assert sarif_result["ruleId"] == "DEV101"
        assert sarif_result["locations"][0]["physicalLocation"]["region"]["startLine"] == 17
    else:
        assert invoke("--format", "sarif", "train.py").exit_code == 2
    if "github" in _available_formats():
        result = invoke("--format", "github", "train.py")
        assert result.exit_code == 1
        assert result.stdout.startswith("::error file=train.py,line=17,")
    else:
        assert invoke("--format", "github", "train.py").exit_code == 2
