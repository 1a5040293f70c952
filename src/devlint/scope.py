"""Which files a run reports in: the files the user asked to check, and test code on its own.

The analysis of a checked file reads the project files it imports (a model's class, a training
helper) and may locate a finding in one of them. Two kinds of such findings are not the user's
question, and are dropped here rather than in the analysis (which still needs those files' code
to decide the checked file's own findings):

- a finding in a file outside the run's checked files: `devlint check examples/` must not report
  in the library package the examples import; the user asked about the examples;
- a finding that a test file's check locates in another file: a unit test calls the program's
  functions with its own small objects on the CPU (`device="cpu"`, a fake model), which is not a
  calling context the program ever runs in. Tests are checked on their own; they lend nothing
  to the program's functions.
"""

from __future__ import annotations

import os
import re

# pytest's own collection rules (`test_*.py`, `*_test.py`), its `conftest.py`, and helpers in a
# `tests/` or `test/` folder (the file's own folder or the one above: `tests/unit/helpers.py`;
# deeper, a folder of programs that a test suite keeps as data, `tests/fixtures/project/train.py`,
# is a program)
_TEST_NAME = re.compile(r"^(test_.*|.*_test|conftest)\.(py|ipynb)$")
_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def is_test_code(path: str) -> bool:
    """Whether `path` is a unit test of the program rather than the program itself."""
    parts = re.split(r"[\\/]+", os.path.normpath(path))
    if _TEST_NAME.match(parts[-1]):
        return True
    return any(part in _TEST_FOLDERS for part in parts[-3:-1])


def reported_in(asked: "set[str] | frozenset[str]", path: str) -> bool:
    """Whether a finding located in `path` is reported by a run that checks `asked` (real
    absolute paths of the checked files)."""
    return os.path.realpath(path) in asked


def asked_files(paths: "list[str]") -> frozenset[str]:
    """The real absolute paths of the checked files, as `reported_in` compares them."""
    return frozenset(os.path.realpath(path) for path in paths)
