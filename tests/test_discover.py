"""Finding the files to check: what is walked, what is skipped, and in which order."""

from __future__ import annotations

import os

import pytest

from devlint.discover import PathNotFoundError, discover


def names(found) -> list[str]:
    return [f.display for f in found]


def test_walks_python_files_and_notebooks_sorted(project):
    for rel in ["b.py", "a.py", "pkg/z.py", "pkg/sub/m.py", "nb.ipynb", "notes.txt", "setup.cfg", "pkg/x.pyc"]:
        project.write(rel, "")
    assert names(discover(["."])) == ["a.py", "b.py", "nb.ipynb", "pkg/sub/m.py", "pkg/z.py"]


def test_display_paths_keep_the_named_folder(project):
    project.write("src/app/train.py", "")
    assert names(discover(["src"])) == ["src/app/train.py"]
    assert names(discover(["src/"])) == ["src/app/train.py"]
    absolute = str(project.root / "src")
    assert names(discover([absolute])) == [os.path.join(absolute, "app", "train.py")]


def test_skips_tool_and_environment_folders(project):
    for folder in [".git", "venv", ".venv", "env", "__pycache__", "build", "dist", "node_modules", ".devlint_cache"]:
        project.write(f"{folder}/inside.py", "")
    project.write("myenv/pyvenv.cfg", "home = /usr/bin\n")
    project.write("myenv/lib/site.py", "")
    project.write("keep/ok.py", "")
    assert names(discover(["."])) == ["keep/ok.py"]


def test_gitignore_is_honoured_including_nested_files_and_negation(project):
    project.write(".gitignore", "generated/\n*_pb2.py\n")
    project.write("generated/model.py", "")
    project.write("proto/msg_pb2.py", "")
    project.write("proto/.gitignore", "!keep_pb2.py\nlocal.py\n")
    project.write("proto/keep_pb2.py", "")
    project.write("proto/local.py", "")
    project.write("proto/real.py", "")
    project.write("other/local.py", "")  # the nested rule applies below proto/ only
    assert names(discover(["."])) == ["other/local.py", "proto/keep_pb2.py", "proto/real.py"]


def test_gitignore_above_the_named_folder_counts_inside_a_repository(project):
    (project.root / ".git").mkdir()
    project.write(".gitignore", "src/vendored/\n")
    project.write("src/vendored/lib.py", "")
    project.write("src/app.py", "")
    assert names(discover(["src"])) == ["src/app.py"]


def test_exclude_patterns_are_relative_to_the_config_root(project):
    project.write("tests/fixtures/broken.py", "")
    project.write("tests/test_a.py", "")
    project.write("scripts/old_thing.py", "")
    project.write("app.py", "")
    found = discover(["."], exclude=["tests/fixtures/", "old_*.py"], exclude_root=project.root)
    assert names(found) == ["app.py", "tests/test_a.py"]


def test_explicitly_named_files_are_always_checked(project):
    project.write(".gitignore", "ignored.py\n")
    project.write("ignored.py", "")
    project.write("script", "")  # no .py suffix, but named
    assert names(discover(["."])) == []
    found = discover(["ignored.py", "script"], exclude=["ignored.py"], exclude_root=project.root)
    assert names(found) == ["ignored.py", "script"]
    assert all(f.explicit for f in found)


def test_each_file_once_even_when_named_twice(project):
    project.write("a.py", "")
    found = discover(["a.py", ".", "./a.py"])
    assert names(found) == ["a.py"]


def test_missing_path_raises(project):
    project.write("a.py", "")
    with pytest.raises(PathNotFoundError, match="nope.py"):
        discover(["a.py", "nope.py"])


def test_symlink_loops_do_not_hang(project):
    project.write("pkg/a.py", "")
    os.symlink(project.root / "pkg", project.root / "pkg" / "loop")
    os.symlink(project.root, project.root / "pkg" / "up")
    assert names(discover(["."])) == ["pkg/a.py"]


def test_symlinked_files_are_checked_once(project):
    project.write("real.py", "")
    os.symlink(project.root / "real.py", project.root / "alias.py")
    assert names(discover(["."])) == ["alias.py"]


def test_empty_folder(project):
    (project.root / "empty").mkdir()
    assert discover(["empty"]) == []
