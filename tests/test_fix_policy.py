"""`fixable` / `unfixable` and `extend-safe-fixes` / `extend-unsafe-fixes` on the real engine:
what `--fix` applies, what the report marks `[*]`, and the fix the JSON report carries."""

from __future__ import annotations

import json

from buggy_sources import BUGGY


def fixes(invoke, *args: str) -> dict[str, object]:
    document = json.loads(invoke("check", "--no-cache", "--format", "json", *args).stdout)
    return {f["code"]: f["fix"] and f["fix"]["applicability"] for f in document["findings"]}


def test_defaults_then_unfixable(project, invoke) -> None:
    project.write("train.py", BUGGY)
    assert fixes(invoke) == {"DEV107": "safe", "DEV109": "unsafe", "DEV101": None}
    project.write("devlint.toml", 'unfixable = ["discarded-to"]\n')
    assert fixes(invoke)["DEV107"] is None  # still reported, without a fix
    out = invoke("check", "--no-cache", "--fix", "train.py")
    assert (project.root / "train.py").read_text() == BUGGY and "DEV107" in out.stdout
    assert "[*]" not in invoke("check", "--no-cache", "--format", "concise").stdout


def test_fixable_names_the_only_codes_fixed(project, invoke) -> None:
    project.write("train.py", BUGGY)
    project.write("devlint.toml", 'fixable = ["DEV1"]\nunfixable = ["DEV109"]\n')
    found = fixes(invoke, "--unsafe-fixes")
    assert found["DEV107"] == "safe" and found["DEV109"] is None
    project.write("devlint.toml", 'fixable = ["DEV2"]\n')
    assert fixes(invoke)["DEV107"] is None


def test_extend_safe_fixes_lets_fix_apply_an_unsafe_fix(project, invoke) -> None:
    project.write("train.py", BUGGY)
    project.write("devlint.toml", 'extend-safe-fixes = ["DEV109"]\n')
    assert fixes(invoke)["DEV109"] == "safe"
    invoke("check", "--no-cache", "--fix", "train.py")
    fixed = (project.root / "train.py").read_text()
    assert ".cpu()" in fixed and "x = x.to(device)" in fixed


def test_extend_unsafe_fixes_holds_a_safe_fix_back(project, invoke) -> None:
    project.write("train.py", BUGGY)
    project.write("devlint.toml", 'extend-unsafe-fixes = ["DEV107"]\nextend-safe-fixes = ["DEV107"]\n')
    assert fixes(invoke)["DEV107"] == "unsafe"  # in both: the cautious reading wins
    invoke("check", "--no-cache", "--fix", "train.py")
    assert "x = x.to(device)" not in (project.root / "train.py").read_text()
    invoke("check", "--no-cache", "--fix", "--unsafe-fixes", "train.py")
    assert "x = x.to(device)" in (project.root / "train.py").read_text()


def test_an_unknown_code_in_the_policy_is_a_configuration_error(project, invoke) -> None:
    project.write("train.py", BUGGY)
    project.write("devlint.toml", 'unfixable = ["DEV1O7"]\n')
    out = invoke("check")
    assert out.exit_code == 2 and "unfixable: unknown rule code or prefix 'DEV1O7'" in out.stderr
