"""File-level `# devlint: noqa` and the unused-suppression check (DEV001)."""

from __future__ import annotations

from buggy_sources import DISCARDED

from devlint.config import CheckSettings
from devlint.runner import check_unit
from devlint.selection import Layer, resolve
from devlint.source import SourceUnit


def _codes(text: str, *extra: str) -> list[tuple[str, int]]:
    enabled = resolve([Layer(extend_select=extra)])
    unit = SourceUnit(display="train.py", path="train.py", text=text)
    return sorted((f.code, f.line) for f in check_unit(unit, CheckSettings(enabled=enabled)))


def test_file_level_noqa_silences_the_whole_file() -> None:
    assert _codes(DISCARDED) == [("DEV101", 10), ("DEV107", 9)]
    assert _codes("# devlint: noqa\n" + DISCARDED) == []


def test_file_level_noqa_with_codes_silences_only_those() -> None:
    assert _codes("# devlint: noqa: DEV107\n" + DISCARDED) == [("DEV101", 11)]
    # only on a line of its own: after code it is an ordinary (unknown) comment
    assert _codes("import os  # devlint: noqa: DEV107\n" + DISCARDED) == [("DEV101", 11), ("DEV107", 10)]


def test_unused_suppression_is_off_by_default() -> None:
    text = DISCARDED.replace("out = model(x)", "out = model(x)  # noqa: DEV107")
    assert ("DEV001", 10) not in _codes(text)


def test_unused_suppression_reports_a_code_that_silences_nothing() -> None:
    text = DISCARDED.replace("out = model(x)", "out = model(x)  # noqa: DEV107, E501")
    assert _codes(text, "DEV001") == [("DEV001", 10), ("DEV101", 10), ("DEV107", 9)]


def test_used_and_bare_suppressions_are_not_reported() -> None:
    text = DISCARDED.replace("x.to(device)", "x.to(device)  # noqa: DEV107").replace(
        "out = model(x)", "out = model(x)  # noqa")
    assert _codes(text, "DEV001") == []
    stale = DISCARDED.replace("loader = DataLoader", "y = 1  # devlint: ignore\nloader = DataLoader")
    assert ("DEV001", 7) in _codes(stale, "DEV001")


def test_codes_of_rules_that_did_not_run_are_not_judged() -> None:
    text = DISCARDED.replace("out = model(x)", "out = model(x)  # noqa: DEV301")
    assert ("DEV001", 10) not in _codes(text, "DEV001")
    assert ("DEV001", 10) in _codes(text, "DEV001", "DEV301")


def test_an_unknown_code_is_reported_whatever_ran() -> None:
    """`# noqa: DEV999` (a typo for DEV107?) can never silence anything: DEV001 says so."""
    text = DISCARDED.replace("x.to(device)", "x.to(device)  # noqa: DEV170")
    assert ("DEV001", 9) in _codes(text, "DEV001")
    unit = SourceUnit(display="train.py", path="train.py", text=text)
    enabled = resolve([Layer(select=("DEV001",))])  # DEV1 did not run: the unknown code is still judged
    (finding,) = [f for f in check_unit(unit, CheckSettings(enabled=enabled)) if f.code == "DEV001"]
    assert "DEV170 is not a devlint rule" in finding.message
    # a known code next to it is judged as before; another tool's code is not devlint's business
    assert ("DEV001", 9) not in _codes(DISCARDED.replace("x.to(device)", "x.to(device)  # noqa: DEV107, E999"),
                                       "DEV001")
