"""The result cache (devlint.cache): an unchanged file is not checked again, and nothing that
changes its findings is missed.

Covered: an edit to a file the check read (models.py for train.py) re-checks the script,
configuration changes, corrupt and foreign entries are ignored, two runs at once on one tree,
`--no-cache` neither reads nor writes, entries are JSON, and the folder ignores itself in git.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import devlint.engine
from devlint.cache import CACHE_DIR_NAME, ResultCache, default_cache_root, finding_from_json, finding_to_json
from devlint.config import Config
from devlint.findings import Confidence, Finding, Fix, Phase, Severity
from devlint.runner import CheckSettings

MODELS_CPU = '''\
import torch


def pick():
    return torch.device("cpu")
'''
TRAIN = '''\
import torch
from torch import nn

from models import pick

device = pick()
model = nn.Linear(4, 2).to(device)
x = torch.randn(3, 4)
print(model(x))
'''


def _findings(out) -> list[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    return [(f["path"], f["line"], f["code"]) for f in json.loads(out.stdout)["findings"]]


def _entries(root: Path) -> list[Path]:
    return sorted((root / CACHE_DIR_NAME).rglob("*.json"))


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the real engine is asked to check (a cache hit asks nothing)."""
    calls: list[str] = []
    real = devlint.engine.check_text

    def check_text(text: str, path: str, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(text, path, **kwargs)

    monkeypatch.setattr(devlint.engine, "check_text", check_text)
    return calls


def test_warm_run_reuses_results(project, invoke, engine_calls) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    first = invoke("check", "--format", "json", "-j", "1")
    assert sorted(engine_calls) == ["models.py", "train.py"]
    assert ("train.py", 8, "DEV105") in _findings(first)
    engine_calls.clear()
    second = invoke("check", "--format", "json", "-j", "1")
    assert engine_calls == []
    assert second.stdout == first.stdout and second.exit_code == first.exit_code


def test_editing_a_dependency_rechecks_its_importer(project, invoke, engine_calls) -> None:  # type: ignore[no-untyped-def]
    models = project.write("models.py", MODELS_CPU)
    project.write("train.py", TRAIN)
    assert _findings(invoke("check", "--format", "json", "-j", "1")) == []
    # train.py is unchanged, but the device it gets from models.py is now a GPU
    models.write_text(MODELS_CPU.replace('"cpu"', '"cuda"'), encoding="utf-8")
    engine_calls.clear()
    after = invoke("check", "--format", "json", "-j", "1")
    assert sorted(engine_calls) == ["models.py", "train.py"]
    assert ("train.py", 8, "DEV105") in _findings(after)
    assert _findings(after) == _findings(invoke("check", "--format", "json", "--no-cache"))
    # and back: the stale GPU result must not come back from the cache either
    models.write_text(MODELS_CPU, encoding="utf-8")
    assert _findings(invoke("check", "--format", "json", "-j", "1")) == []


def test_configuration_is_part_of_the_key(project, invoke) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    everything = _findings(invoke("check", "--format", "json"))
    assert ("train.py", 8, "DEV105") in everything
    assert ("train.py", 8, "DEV105") not in _findings(invoke("check", "--format", "json", "--ignore", "DEV105"))
    project.write("pyproject.toml", '[tool.devlint]\nper-file-ignores = {"train.py" = ["DEV105"]}\n')
    assert ("train.py", 8, "DEV105") not in _findings(invoke("check", "--format", "json"))
    (project.root / "pyproject.toml").unlink()
    assert _findings(invoke("check", "--format", "json")) == everything


def test_corrupt_entries_are_ignored(project, invoke, engine_calls) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    project.write("util.py", "def oops(:\n")
    first = invoke("check", "--format", "json", "-j", "1")
    entries = _entries(project.root)
    assert len(entries) == 3
    garbage = [b"", b"{\"format\": 1, \"digest\": ", b"\x00\xff not json", b"[1, 2, 3]",
               json.dumps({"format": 1, "digest": "x", "depends": {}, "findings": []}).encode()]
    for entry, junk in zip(entries, garbage):
        entry.write_bytes(junk)
    assert json.loads(first.stdout)["findings"]
    engine_calls.clear()
    second = invoke("check", "--format", "json", "-j", "1")
    assert second.stdout == first.stdout and second.exit_code == first.exit_code
    assert sorted(engine_calls) == ["models.py", "train.py", "util.py"]
    # the broken entries were replaced by good ones
    engine_calls.clear()
    assert invoke("check", "--format", "json", "-j", "1").stdout == first.stdout
    assert engine_calls == []


def test_an_entry_with_a_bad_finding_is_a_miss(project, invoke, engine_calls) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    first = invoke("check", "--format", "json", "-j", "1")
    for entry in _entries(project.root):
        data = json.loads(entry.read_text())
        if data["findings"]:
            data["findings"][0]["severity"] = "catastrophic"
            entry.write_text(json.dumps(data))
    engine_calls.clear()
    assert invoke("check", "--format", "json", "-j", "1").stdout == first.stdout
    assert "train.py" in engine_calls


def test_no_cache_neither_reads_nor_writes(project, invoke, engine_calls) -> None:  # type: ignore[no-untyped-def]
    project.write("train.py", TRAIN)
    project.write("models.py", MODELS_CPU)
    invoke("check", "--format", "json", "--no-cache")
    assert not (project.root / CACHE_DIR_NAME).exists()
    invoke("check", "--format", "json")  # fills the cache
    assert _entries(project.root)
    engine_calls.clear()
    invoke("check", "--format", "json", "--no-cache")
    assert sorted(engine_calls) == ["models.py", "train.py"]


def test_cache_folder_ignores_itself(project, invoke) -> None:  # type: ignore[no-untyped-def]
    project.write("train.py", TRAIN)
    invoke("check", "--format", "json")
    folder = project.root / CACHE_DIR_NAME
    assert folder.is_dir()
    assert "*" in (folder / ".gitignore").read_text().splitlines()
    # and discovery never checks what is in it
    out = invoke("check", "--format", "json", "-v")
    assert CACHE_DIR_NAME not in out.stderr


def test_an_unwritable_cache_is_skipped(project, invoke, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    project.write("train.py", TRAIN)
    project.write("models.py", MODELS_CPU)
    (project.root / CACHE_DIR_NAME).write_text("a file where the folder should be")
    out = invoke("check", "--format", "json")
    assert out.exit_code == 0
    assert json.loads(out.stdout)["files_checked"] == 2


def test_concurrent_runs_on_one_tree(project) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    for n in range(6):
        project.write(f"train_{n}.py", TRAIN)
    project.write("broken.py", "def oops(:\n")
    command = [sys.executable, "-m", "devlint", "check", ".", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [subprocess.Popen(command + ["-j", jobs], cwd=project.root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for jobs in ("1", "2")]
    results = [run.communicate(timeout=600) + (run.returncode,) for run in runs]
    for stdout, stderr, code in results:
        assert code == 1, stderr
        assert "internal error" not in stderr
    assert results[0][0] == results[1][0]
    assert len(json.loads(results[0][0])["findings"]) >= 7
    # what they left behind is a valid cache: a third run reads it and agrees
    third = subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True, timeout=600)
    assert third.stdout == results[0][0]
    assert not list((project.root / CACHE_DIR_NAME).rglob(".tmp-*"))


def test_a_run_served_from_the_cache_never_loads_the_parser(project) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    command = [sys.executable, "-X", "importtime", "-m", "devlint", "check", ".", "--format", "json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cold = subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True, timeout=600)
    warm = subprocess.run(command, cwd=project.root, env=env, capture_output=True, text=True, timeout=600)
    assert "| libcst" in cold.stderr  # -X importtime names every module a process executes
    assert warm.stdout == cold.stdout and json.loads(warm.stdout)["findings"]
    loaded = [line for line in warm.stderr.splitlines() if "libcst" in line or "devlint.analysis.driver" in line]
    assert loaded == [], loaded[:3]


def test_findings_round_trip_through_json() -> None:
    finding = Finding(
        code="DEV101", name="unmoved-input", severity=Severity.ERROR, path="train.py", line=3, column=5,
        end_line=3, end_column=9, message="`x` is on the CPU", confidence=Confidence.LIKELY,
        phase=Phase.EVALUATION, cell=2, statement_lines=(3, 4), context="train", snippet="y = model(x)",
        fix=Fix("move it", safe=False, edits=((3, 5, 3, 6, "x.to(device)"),)), extra={"hint": "h"},
    )
    data = json.loads(json.dumps(finding_to_json(finding)))
    back = finding_from_json(data)
    assert back == finding
    assert back.extra == finding.extra
    assert isinstance(back.fix.edits[0], tuple) and isinstance(back.statement_lines, tuple)


def test_cache_api_rejects_what_it_cannot_validate(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    dep = tmp_path / "dep.py"
    dep.write_text("y = 2\n")
    settings = CheckSettings(enabled=frozenset({"DEV101"}), config=Config(root=tmp_path))
    cache = ResultCache(tmp_path, settings)
    cache.put(str(source), "a.py", "digest-1", [], [str(dep)])
    assert cache.get(str(source), "a.py", "digest-1") == []
    assert cache.get(str(source), "a.py", "digest-2") is None  # the file changed
    other = CheckSettings(enabled=frozenset({"DEV102"}), config=Config(root=tmp_path))
    assert ResultCache(tmp_path, other).get(str(source), "a.py", "digest-1") is None  # other settings
    dep.write_text("y = 3\n")
    assert ResultCache(tmp_path, settings).get(str(source), "a.py", "digest-1") is None  # a dependency changed
    dep.unlink()
    assert ResultCache(tmp_path, settings).get(str(source), "a.py", "digest-1") is None  # ... or is gone


def test_default_cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.chdir(tmp_path)
    assert default_cache_root(Config(), [str(repo / "src" / "pkg")]) == repo
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / CACHE_DIR_NAME).mkdir()  # an old cache is no project root
    found = default_cache_root(Config(), [str(loose / "x.py")])
    assert found == Path.cwd() or any((found / marker).exists() for marker in (".git", "pyproject.toml", "setup.py"))
    configured = Config(source=repo / "pyproject.toml", root=repo / "src")
    assert default_cache_root(configured, [str(loose)]) == repo / "src"


def test_a_dependency_edited_during_the_run_is_not_cached_as_current(project, invoke, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """models.py is edited after the check of train.py read it and before the entry is written:
    the entry records the digest of what was read, so the next run checks train.py again
    (issue 31: it recorded the new file's digest with the old text's findings, for good)."""
    project.write("models.py", MODELS_CPU)
    project.write("train.py", TRAIN)
    real = devlint.engine.check_text

    def check_then_edit(text: str, path: str, **kwargs):  # type: ignore[no-untyped-def]
        found = real(text, path, **kwargs)
        if path == "train.py":  # the analysis has read models.py by now
            project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
        return found

    monkeypatch.setattr(devlint.engine, "check_text", check_then_edit)
    invoke("check", "--format", "json", "-j", "1", "train.py")
    monkeypatch.setattr(devlint.engine, "check_text", real)
    fresh = invoke("check", "--format", "json", "--no-cache", "train.py")
    cached = invoke("check", "--format", "json", "-j", "1", "train.py")
    assert _findings(fresh), "the edited model moves to the GPU: train.py has a finding now"
    assert _findings(cached) == _findings(fresh)


def _damage(entry: Path, how: str) -> None:
    data = json.loads(entry.read_text())
    finding = data["findings"][0] if data["findings"] else None
    if how == "deep JSON":
        entry.write_text("[" * 100_000 + "]" * 100_000)
        return
    if how == "a FIFO":
        entry.unlink()
        os.mkfifo(entry)
        return
    assert finding is not None
    if how == "line is text":
        finding["line"] = "5"
    elif how == "line is true":
        finding["line"] = True
    elif how == "message is a list":
        finding["message"] = ["x"]
    elif how == "path is a number":
        finding["path"] = 3
    elif how == "evidence is an object":
        finding["evidence"] = {"a": 1}
    elif how == "an unknown field":
        finding["colour"] = "red"
    elif how == "extra holds an object":
        finding["extra"] = {"a": {"b": 1}}
    elif how == "findings is an object":
        data["findings"] = {"x": finding}
    elif how == "depends holds a number":
        data["depends"] = {"/x": 3}
    entry.write_text(json.dumps(data))


@pytest.mark.parametrize("how", ["deep JSON", "a FIFO", "line is text", "line is true", "message is a list",
                                 "path is a number", "evidence is an object", "an unknown field",
                                 "extra holds an object", "findings is an object", "depends holds a number"])
def test_a_damaged_entry_is_a_miss(project, invoke, engine_calls, how: str) -> None:  # type: ignore[no-untyped-def]
    project.write("models.py", MODELS_CPU.replace('"cpu"', '"cuda"'))
    project.write("train.py", TRAIN)
    first = invoke("check", "--format", "json", "-j", "1")
    assert _findings(first)
    for entry in _entries(project.root):
        if json.loads(entry.read_text())["findings"] or how in ("deep JSON", "a FIFO"):
            _damage(entry, how)
    engine_calls.clear()
    for fmt in ("json", "text"):
        again = invoke("check", "--format", fmt, "-j", "1")
        assert again.exit_code == first.exit_code, again.stderr
        assert "internal error" not in again.stderr
    assert "train.py" in engine_calls
    assert invoke("check", "--format", "json", "-j", "1").stdout == first.stdout
