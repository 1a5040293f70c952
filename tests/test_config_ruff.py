"""The configuration a Ruff user reaches for: `extend`, the exclusion and inclusion keys in the
file, `cache-dir`, `required-version`, the environment, `--config KEY=VALUE`, `--isolated`,
`--ignore-noqa`, and `--show-files` / `--show-settings` to see what a run would do."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("fake_engine")


def codes(out) -> list[tuple[str, str]]:
    """(path, code) of each concise line."""
    return [(line.split(":")[0], line.split()[1]) for line in out.stdout.splitlines()]


def test_extend_inherits_and_overrides(project, invoke) -> None:
    project.write("pyproject.toml", """
        [tool.devlint]
        select = ["DEV1"]
        exclude = ["generated/"]
        fail-on = "error"
    """)
    # the sub-project extends the root file: DEV1 from there, DEV201 added here
    project.write("sub/devlint.toml", 'extend = "../pyproject.toml"\nextend-select = ["load-without-map-location"]\n')
    project.write("sub/train.py", "boom101()\nboom201()\n")
    project.write("sub/generated/model.py", "boom101()\n")  # `generated/` of the root file applies
    out = invoke("check", "--format", "concise", "sub")
    assert codes(out) == [("sub/train.py", "DEV101"), ("sub/train.py", "DEV201")]
    # fail-on = "error" inherited: the warning alone would not fail
    project.write("sub/train.py", "boom201()\n")
    assert invoke("check", "sub").exit_code == 0


def test_extend_keeps_patterns_relative_to_the_file_that_wrote_them(project, invoke) -> None:
    project.write("base/devlint.toml", 'exclude = ["/legacy.py"]\n')  # anchored at base/
    project.write("app/devlint.toml", 'extend = "../base/devlint.toml"\n')
    project.write("app/legacy.py", "boom101()\n")  # app/legacy.py is not base/legacy.py
    assert codes(invoke("check", "--format", "concise", "app")) == [("app/legacy.py", "DEV101")]


def test_extend_errors_name_the_file(project, invoke) -> None:
    project.write("devlint.toml", 'extend = "missing.toml"\n')
    project.write("a.py", "x = 1\n")
    out = invoke("check")
    assert out.exit_code == 2 and "devlint.toml: extend: 'missing.toml' is not a file" in out.stderr
    project.write("devlint.toml", 'extend = "other/devlint.toml"\n')
    project.write("other/devlint.toml", 'extend = "../devlint.toml"\n')
    out = invoke("check")
    assert out.exit_code == 2 and "extend each other in a circle" in out.stderr


def test_exclusion_keys_in_the_file(project, invoke) -> None:
    project.write("pyproject.toml", """
        [tool.devlint]
        extend-exclude = ["vendor/"]
        include = ["src/**/*.py"]
        force-exclude = true

        [tool.devlint.extend-per-file-ignores]
        "src/tests/*.py" = ["DEV107"]
    """)
    project.write("src/pkg/a.py", "boom107()\n")
    project.write("src/tests/t.py", "boom107()\nboom101()\n")
    project.write("scripts/s.py", "boom107()\n")  # outside `include`
    project.write("src/vendor/v.py", "boom107()\n")
    assert codes(invoke("check", "--format", "concise")) == [("src/pkg/a.py", "DEV107"), ("src/tests/t.py", "DEV101")]
    # force-exclude from the file: a named excluded file stays out (pre-commit names every file)
    assert invoke("check", "--format", "concise", "src/vendor/v.py").stdout == ""


def test_respect_gitignore_false(project, invoke) -> None:
    project.write(".gitignore", "notes/\n")
    project.write("notes/scratch.py", "boom107()\n")
    assert invoke("check").exit_code == 0
    project.write("devlint.toml", "respect-gitignore = false\n")
    assert codes(invoke("check", "--format", "concise")) == [("notes/scratch.py", "DEV107")]


def test_cache_dir_from_the_file_and_the_environment(project, invoke, monkeypatch) -> None:
    project.write("devlint.toml", 'cache-dir = "build/lint-cache"\n')
    project.write("a.py", "boom107()\n")
    invoke("check")
    assert (project.root / "build" / "lint-cache").is_dir()
    assert not (project.root / ".devlint_cache").exists()
    monkeypatch.setenv("DEVLINT_CACHE_DIR", str(project.root / "elsewhere"))
    second = invoke("check", "--format", "concise")
    assert (project.root / "elsewhere").is_dir() and codes(second) == [("a.py", "DEV107")]


def test_required_version(project, invoke) -> None:
    project.write("a.py", "x = 1\n")
    project.write("devlint.toml", 'required-version = ">=0.1, <99"\n')
    assert invoke("check").exit_code == 0
    project.write("devlint.toml", 'required-version = ">=99.0"\n')
    out = invoke("check")
    assert out.exit_code == 2 and "requires devlint >=99.0, but devlint 0.1.0 is running" in out.stderr
    project.write("devlint.toml", 'required-version = "latest"\n')
    assert "is not a version requirement" in invoke("check").stderr


def test_config_overrides_isolated_and_ignore_noqa(project, invoke) -> None:
    project.write("devlint.toml", 'ignore = ["DEV107"]\n')
    project.write("a.py", "boom107()\nboom101()  # noqa: DEV101\nboom201()\n")
    assert codes(invoke("check", "--format", "concise")) == [("a.py", "DEV201")]
    override = invoke("check", "--format", "concise", "--config", 'ignore = ["DEV201"]',
                      "--config", 'fail-on = "never"')
    assert codes(override) == [("a.py", "DEV107")] and override.exit_code == 0
    isolated = invoke("check", "--format", "concise", "--isolated")
    assert codes(isolated) == [("a.py", "DEV107"), ("a.py", "DEV201")]
    loud = invoke("check", "--format", "concise", "--ignore-noqa", "--no-cache")
    assert codes(loud) == [("a.py", "DEV101"), ("a.py", "DEV201")]
    bad = invoke("check", "--config", "fail-on = error")
    assert bad.exit_code == 2 and "a string value needs quotes" in bad.stderr
    assert invoke("check", "--config", "nothing-here").exit_code == 2
    assert invoke("check", "--isolated", "--config", "devlint.toml").exit_code == 2


def test_show_files_and_settings(project, invoke) -> None:
    project.write("pyproject.toml", '[tool.devlint]\nselect = ["DEV1"]\nexclude = ["skip/"]\n')
    project.write("sub/devlint.toml", 'extend = "../pyproject.toml"\nfail-on = "error"\n')
    project.write("sub/a.py", "boom107()\n")
    project.write("skip/b.py", "boom107()\n")
    project.write("c.ipynb", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    files = invoke("check", "--show-files")
    assert files.exit_code == 0 and files.stdout.splitlines() == ["c.ipynb", "sub/a.py"]
    shown = invoke("check", "--show-settings", "sub/a.py", "--config", 'ignore = ["DEV101"]')
    assert shown.exit_code == 0
    lines = shown.stdout.splitlines()
    assert lines[0] == "Resolved settings for: sub/a.py"
    assert lines[1] == f"Settings path: {project.root / 'sub' / 'devlint.toml'}"
    assert lines[2] == f"Extends: {project.root / 'pyproject.toml'}"
    assert 'enabled rules = ["DEV000", "DEV107"]' in lines
    assert f'select = ["DEV1"]  # from {project.root / "pyproject.toml"}: [tool.devlint] select' in lines
    assert 'ignore = ["DEV101"]  # from --config' in lines
    assert f'fail-on = "error"  # from {project.root / "sub" / "devlint.toml"}' in lines
    none = invoke("check", "--show-settings", "skip")
    assert none.exit_code == 2
