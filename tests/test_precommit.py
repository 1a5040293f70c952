"""The pre-commit hook, run by the real `pre-commit` package.

`pre-commit try-repo REPO` installs the hook from a git repository at a commit: it clones REPO
and, when the working tree has uncommitted changes, adds a temporary commit of the *tracked*
files only (`git add -u` plus whatever is staged). A checkout where `.pre-commit-hooks.yaml` or
a new module is not yet tracked would therefore test something other than what is on disk, so
the tests copy this checkout's hook manifest and package (pyproject.toml, README.md, src/) into
a scratch repository, commit them there, and point pre-commit at that: the hook that is tested
is exactly the one in this working tree, committed or not.

Each `try-repo` builds a fresh virtual environment for the hook and pip-installs devlint into
it, so these tests need the package index the rest of the test extra came from, and take a
minute or two.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "devlint tests",
    "GIT_AUTHOR_EMAIL": "tests@devlint.invalid",
    "GIT_COMMITTER_NAME": "devlint tests",
    "GIT_COMMITTER_EMAIL": "tests@devlint.invalid",
}
INSTALL_TIMEOUT = 1200  # seconds: a cold hook environment is a pip install of devlint and its deps

BUGGY = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
for epoch in range(2):
    x = torch.randn(8, 4)
    x.to(device)
    loss = model(x).sum()
    loss.backward()
"""

CLEAN = """\
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
for epoch in range(2):
    x = torch.randn(8, 4).to(device)
    loss = model(x).sum()
    loss.backward()
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.update(GIT_IDENTITY)
    env["PRE_COMMIT_HOME"] = str(home)
    env.pop("NO_COLOR", None)
    return env


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", *args],
        cwd=cwd, check=True, capture_output=True, env=_env(cwd),
    )


def _pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=cwd, capture_output=True, text=True, env=_env(home), timeout=INSTALL_TIMEOUT,
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """This checkout's hook manifest and package, committed in a scratch repository."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in (".pre-commit-hooks.yaml", "pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(
        ROOT / "src", repo / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "devlint hook under test")
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                         text=True).stdout.strip()
    return repo, rev


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A user's project: a git repository with a buggy and a clean script staged."""
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "buggy.py").write_text(BUGGY, encoding="utf-8")
    (repo / "clean.py").write_text(CLEAN, encoding="utf-8")
    (repo / "notes.txt").write_text("not python\n", encoding="utf-8")
    _git(repo, "add", "buggy.py", "clean.py", "notes.txt")
    return repo


def test_manifest_matches_the_cli_contract() -> None:
    """The hook file says what cli.md specifies (id, entry, language, types, serial), with
    `--force-exclude` added to the entry: pre-commit names every staged file, and the user's
    `exclude` setting must still keep generated or vendored files out."""
    import yaml  # pre-commit depends on PyYAML

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = hooks
    assert hook["id"] == "devlint"
    assert hook["entry"] == "devlint check --force-exclude"
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "jupyter"]
    assert hook["require_serial"] is True


def test_try_repo_fails_on_the_buggy_file_and_shows_the_finding(hook_repo, user_repo, tmp_path) -> None:
    repo, _ = hook_repo
    run = _pre_commit(user_repo, tmp_path / "home", "try-repo", str(repo), "devlint",
                      "--color=never", "--files", "buggy.py", "clean.py", "notes.txt")
    output = run.stdout + run.stderr
    assert run.returncode == 1, output
    assert "devlint" in output and "Failed" in output
    assert "buggy.py:8:5 DEV107 [error]" in output
    assert "clean.py" not in output.split("Failed", 1)[1]  # only the buggy file has findings


def test_hook_from_a_config_passes_clean_files_and_skips_non_python(hook_repo, user_repo, tmp_path) -> None:
    """The way users run it: `.pre-commit-config.yaml` naming the hook, then `pre-commit run`."""
    repo, rev = hook_repo
    home = tmp_path / "home"
    (user_repo / ".pre-commit-config.yaml").write_text(
        textwrap.dedent(
            f"""\
            repos:
              - repo: {repo.as_posix()}
                rev: {rev}
                hooks:
                  - id: devlint
            """
        ),
        encoding="utf-8",
    )
    _git(user_repo, "add", ".pre-commit-config.yaml")

    clean = _pre_commit(user_repo, home, "run", "devlint", "--color=never", "--files", "clean.py")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout

    # nothing Python staged: the hook is skipped, and it does not fall back to checking the whole
    # repository (which holds buggy.py and would fail)
    _git(user_repo, "rm", "-q", "--cached", "buggy.py", "clean.py")
    skipped = _pre_commit(user_repo, home, "run", "devlint", "--color=never")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert "(no files to check)Skipped" in skipped.stdout
    assert "DEV" not in skipped.stdout

    # the staged buggy file is what a commit would check
    _git(user_repo, "add", "buggy.py")
    staged = _pre_commit(user_repo, home, "run", "devlint", "--color=never")
    assert staged.returncode == 1, staged.stdout + staged.stderr
    assert "buggy.py:8:5 DEV107 [error]" in staged.stdout


def test_documented_install_lines_name_no_missing_tag() -> None:
    """The README's and docs/ci.md's `rev:` and `git+...@ref` must name something that exists:
    `rev: v0.1.0` named a tag this repository does not have, so the snippet failed."""
    import re

    proc = subprocess.run(["git", "-C", str(ROOT), "tag"], capture_output=True, text=True)
    tags = set(proc.stdout.split()) if proc.returncode == 0 else set()
    for name in ("README.md", "docs/ci.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        refs = re.findall(r"rev:\s*(\S+)", text) + re.findall(r"git\+[^\s\"@]+@([^\s\"]+)", text)
        for ref in refs:
            assert not re.fullmatch(r"v?\d+(\.\d+)+", ref) or ref in tags, f"{name}: {ref} is not a tag here"


def test_documented_config_snippets_are_valid_as_written() -> None:
    """The `.pre-commit-config.yaml` snippets of the README and docs/ci.md, with the placeholders
    filled in, pass pre-commit's own schema (the README's once lacked `repos:`)."""
    import re

    import cfgv
    import yaml
    from pre_commit.clientlib import CONFIG_SCHEMA

    checked = 0
    for name in ("README.md", "docs/ci.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
            if "- id: devlint" not in block or not block.lstrip().startswith(("# .pre-commit-config.yaml", "repos:")):
                continue
            filled = block.replace("<this repository>", "https://example.org/devlint.git").replace(
                "<commit>", "0123456789abcdef0123456789abcdef01234567")
            cfgv.validate(yaml.safe_load(filled), CONFIG_SCHEMA)
            checked += 1
    assert checked >= 2
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "```yaml\n# .pre-commit-config.yaml\nrepos:\n" in readme
