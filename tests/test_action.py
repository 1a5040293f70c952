"""The GitHub Action (`action.yml`): a composite action whose inputs are all declared, whose
shell steps run as written (here, with `devlint` on PATH being this checkout), annotate with
`--output-format github`, and write the SARIF file the upload step reads."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml  # pre-commit depends on PyYAML

from test_sarif import PROGRAM

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))


def test_the_action_is_a_composite_with_declared_inputs() -> None:
    assert ACTION["name"] == "devlint" and ACTION["description"]
    assert ACTION["runs"]["using"] == "composite"
    declared = set(ACTION["inputs"])
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    assert set(re.findall(r"inputs\.([a-z-]+)", text)) <= declared
    for step in ACTION["runs"]["steps"]:
        assert ("run" in step) != ("uses" in step)
        if "run" in step:
            assert step["shell"] == "bash"
            assert "${{" not in step["run"]  # inputs reach the script through env, never pasted in


def _step(name: str) -> dict:
    return next(step for step in ACTION["runs"]["steps"] if step.get("name") == name)


@pytest.fixture
def shim(tmp_path: Path) -> dict[str, str]:
    """An environment whose `devlint` is this checkout's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "devlint"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m devlint "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["GITHUB_OUTPUT"] = str(tmp_path / "github_output")
    return env


def _run(step: dict, env: dict[str, str], inputs: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    step_env = dict(env)
    for key, value in step.get("env", {}).items():
        match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", value)
        if match:
            step_env[key] = inputs.get(match.group(1), ACTION["inputs"][match.group(1)].get("default", ""))
    return subprocess.run(["bash", "-e", "-c", step["run"]], cwd=cwd, env=step_env, capture_output=True, text=True)


def test_the_check_step_annotates_and_fails_on_findings(project, shim) -> None:
    project.write("src/train.py", PROGRAM)
    project.write("other/ignored.py", PROGRAM)
    done = _run(_step("Check device placement"), shim, {"paths": "src", "args": "--fail-on error --no-cache"},
                project.root)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(line.startswith("::") for line in lines)
    assert all("file=src/train.py" in line for line in lines)
    clean = _run(_step("Check device placement"), shim, {"paths": "src", "args": "--exit-zero"}, project.root)
    assert clean.returncode == 0


def test_the_sarif_step_writes_what_the_upload_reads(project, shim) -> None:
    import json

    project.write("train.py", PROGRAM)
    done = _run(_step("SARIF report"), shim, {"sarif-file": "out/devlint.sarif"}, project.root)
    assert done.returncode == 0, done.stderr  # --exit-zero: the upload runs whatever is found
    document = json.loads((project.root / "out" / "devlint.sarif").read_text())
    assert document["version"] == "2.1.0" and document["runs"][0]["results"]
    assert Path(shim["GITHUB_OUTPUT"]).read_text() == "file=out/devlint.sarif\n"
    upload = next(step for step in ACTION["runs"]["steps"] if "upload-sarif" in step.get("uses", ""))
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}" and upload["if"] == "inputs.sarif == 'true'"
