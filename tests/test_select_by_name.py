"""Rules chosen by name as well as by code, wherever codes are accepted, and `devlint rules`
narrowed by the same selectors."""

from __future__ import annotations

import json

import pytest

from devlint.selection import SelectionError, parse_codes, validate

pytestmark = pytest.mark.usefixtures("fake_engine")


def test_a_name_stands_for_its_code() -> None:
    assert parse_codes("discarded-to, DEV2,all") == ("DEV107", "DEV2", "ALL")
    assert parse_codes(["Unmoved-Input"]) == ("DEV101",)
    with pytest.raises(SelectionError, match="unknown rule code or prefix 'discarded-too'"):
        validate(parse_codes("discarded-too"), "--select")


def test_select_and_ignore_by_name_on_the_command_line(project, invoke) -> None:
    project.write("train.py", "boom107()\nboom101()\n")
    only = invoke("check", "--format", "concise", "--select", "unmoved-input")
    assert [line.split()[1] for line in only.stdout.splitlines()] == ["DEV101"]
    without = invoke("check", "--format", "concise", "--ignore", "unmoved-input,discarded-to")
    assert without.exit_code == 0 and without.stdout == ""
    typo = invoke("check", "--select", "unmoved-inptu")
    assert typo.exit_code == 2 and "--select: unknown rule code or prefix 'unmoved-inptu'" in typo.stderr


def test_names_in_the_configuration(project, invoke) -> None:
    project.write("pyproject.toml", """
        [tool.devlint]
        select = ["discarded-to"]
        extend-select = ["non-blocking-without-pinning"]

        [tool.devlint.per-file-ignores]
        "scripts/*.py" = ["discarded-to"]
    """)
    project.write("train.py", "boom107()\nboom101()\nboom301()\n")
    project.write("scripts/run.py", "boom107()\n")
    out = invoke("check", "--format", "concise")
    assert [line.split()[0:2] for line in out.stdout.splitlines()] == [["train.py:1:1:", "DEV107"],
                                                                       ["train.py:3:1:", "DEV301"]]
    project.write("pyproject.toml", "[tool.devlint]\nignore = ['discarded-too']\n")
    bad = invoke("check")
    assert bad.exit_code == 2 and "[tool.devlint] ignore: unknown rule code or prefix 'discarded-too'" in bad.stderr


def test_rules_narrowed_by_prefix_code_or_name(invoke) -> None:
    out = invoke("rules", "DEV1")
    assert [line.split()[0] for line in out.stdout.splitlines()[1:]] == ["DEV101", "DEV107"]
    named = invoke("rules", "--format", "json", "DEV000,load-without-map-location")
    assert [rule["code"] for rule in json.loads(named.stdout)] == ["DEV000", "DEV201"]
    assert len(invoke("rules").stdout.splitlines()) == 6  # the header and every rule
    unknown = invoke("rules", "DEV9")
    assert unknown.exit_code == 2 and "unknown rule code or prefix 'DEV9'" in unknown.stderr
