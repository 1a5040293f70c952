"""Each file takes its nearest configuration (as Ruff does), and exclusions on the command line."""

from __future__ import annotations

import json

from buggy_sources import DISCARDED



def _codes(out) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for finding in json.loads(out.stdout)["findings"]:
        found.setdefault(finding["path"].replace("\\", "/"), set()).add(finding["code"])
    return found


def _two_packages(project) -> None:
    project.write("pkg_a/pyproject.toml", "[tool.devlint]\nignore = ['DEV107']\n")
    project.write("pkg_a/train.py", DISCARDED)
    project.write("pkg_b/train.py", DISCARDED)


def test_each_file_takes_its_nearest_configuration(project, invoke) -> None:
    _two_packages(project)
    out = invoke("check", "--no-cache", "--format", "json", "pkg_a", "pkg_b")
    found = _codes(out)
    assert "DEV107" not in found["pkg_a/train.py"]
    assert "DEV107" in found["pkg_b/train.py"]


def test_the_order_of_the_paths_changes_nothing(project, invoke) -> None:
    _two_packages(project)
    forward = invoke("check", "--no-cache", "--format", "json", "pkg_a/train.py", "pkg_b/train.py")
    backward = invoke("check", "--no-cache", "--format", "json", "pkg_b/train.py", "pkg_a/train.py")
    assert _codes(forward) == _codes(backward)
    assert forward.exit_code == backward.exit_code == 1


def test_fail_on_follows_each_files_configuration(project, invoke) -> None:
    project.write("pkg_a/devlint.toml", "fail-on = 'never'\n")
    project.write("pkg_a/train.py", DISCARDED)
    project.write("pkg_b/ok.py", "x = 1\n")
    assert invoke("check", "--no-cache", "pkg_b", "pkg_a").exit_code == 0
    project.write("pkg_b/train.py", DISCARDED)
    assert invoke("check", "--no-cache", "pkg_a", "pkg_b").exit_code == 1


def test_config_option_applies_to_every_file(project, invoke) -> None:
    _two_packages(project)
    project.write("strict.toml", "select = ['DEV1']\nignore = ['DEV107']\n")
    out = invoke("check", "--no-cache", "--format", "json", "--config", "strict.toml", "pkg_a", "pkg_b")
    assert all("DEV107" not in codes for codes in _codes(out).values())


def test_a_named_excluded_file_is_checked_unless_force_exclude(project, invoke) -> None:
    project.write("devlint.toml", "exclude = ['generated/']\n")
    project.write("generated/train.py", DISCARDED)
    assert invoke("check", "--no-cache", "generated/train.py").exit_code == 1
    out = invoke("check", "--no-cache", "--force-exclude", "generated/train.py")
    assert out.exit_code == 0
    assert "No Python files" in out.stderr


def test_force_exclude_applies_to_stdin_filename(project, invoke) -> None:
    project.write("devlint.toml", "exclude = ['generated/']\n")
    out = invoke("check", "--force-exclude", "--stdin-filename", "generated/train.py", input=DISCARDED)
    assert out.exit_code == 0 and out.stdout == ""
    out = invoke("check", "--stdin-filename", "generated/train.py", input=DISCARDED)
    assert out.exit_code == 1


def test_exclude_and_extend_exclude_on_the_command_line(project, invoke) -> None:
    project.write("devlint.toml", "exclude = ['old/']\n")
    project.write("old/train.py", DISCARDED)
    project.write("new/train.py", DISCARDED)
    # --extend-exclude adds to the setting
    out = invoke("check", "--no-cache", "--format", "json", "--extend-exclude", "new/", ".")
    assert _codes(out) == {}
    # --exclude replaces it
    out = invoke("check", "--no-cache", "--format", "json", "--exclude", "new/", ".")
    assert set(_codes(out)) == {"old/train.py"}


def test_nested_configuration_excludes_below_its_folder(project, invoke) -> None:
    project.write("pkg/pyproject.toml", "[tool.devlint]\nexclude = ['vendored/']\n")
    project.write("pkg/vendored/train.py", DISCARDED)
    project.write("vendored/train.py", DISCARDED)
    out = invoke("check", "--no-cache", "--format", "json", ".")
    assert set(_codes(out)) == {"vendored/train.py"}



def test_diff_covers_every_configuration(project, invoke) -> None:
    project.write("pkg_a/pyproject.toml", "[tool.devlint]\nignore = ['DEV101']\n")
    project.write("pkg_a/train.py", DISCARDED)
    project.write("pkg_b/train.py", DISCARDED)
    out = invoke("check", "--no-cache", "--diff", "pkg_a", "pkg_b")
    assert out.exit_code == 1
    assert "a/pkg_a/train.py" in out.stdout and "a/pkg_b/train.py" in out.stdout
    assert "2 fixes available in 2 files." in out.stderr
