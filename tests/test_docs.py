"""Rule documentation is generated from the rule objects and must not drift from them."""

from __future__ import annotations

from pathlib import Path

from devlint import docs
from devlint.findings import Severity
from devlint.rules import all_rules
from devlint.rules.base import FixSafety, Rule

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("What it does", "Why it crashes", "Example", "Use instead", "Fix safety", "Known limits")


def test_generated_docs_and_readme_table_are_current() -> None:
    stale = docs.stale_files(ROOT)
    assert not stale, (
        "out of date: " + ", ".join(str(p.relative_to(ROOT)) for p in stale)
        + "; run `python -m devlint.docs` to regenerate"
    )


def test_every_rule_has_a_page_and_a_table_row() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("<!-- rules-table:start", 1)[1].split(docs.TABLE_END, 1)[0]
    for rule in all_rules():
        page = (ROOT / "docs" / "rules" / f"{rule.code}.md").read_text(encoding="utf-8")
        assert page.startswith(f"# {rule.code}: {rule.name}\n")
        assert [line[3:] for line in page.splitlines() if line.startswith("## ")] == list(SECTIONS)
        assert f"| [{rule.code}](docs/rules/{rule.code}.md) | `{rule.name}` |" in table


def _extra_rule() -> Rule:
    return Rule(
        code="DEV399",
        name="made-up-rule",
        severity=Severity.INFO,
        summary="A summary with a | pipe and __init__ in it.",
        why="Why, in two\nlines.\n\nAnd a second paragraph.",
        bad="x = 1",
        good="x = 2",
        fix=FixSafety.SAFE,
        default_enabled=False,
        limits="",
    )


def test_the_generator_covers_whatever_the_registry_returns(tmp_path: Path) -> None:
    """A rule added later gets a page and a row, and the check notices until it is written."""
    (tmp_path / "README.md").write_text(
        "intro\n<!-- rules-table:start (generated) -->\nold\n<!-- rules-table:end -->\noutro\n", encoding="utf-8"
    )
    (tmp_path / "docs" / "rules").mkdir(parents=True)
    (tmp_path / "docs" / "rules" / "DEV998.md").write_text("a rule that no longer exists\n", encoding="utf-8")
    rules = [*all_rules(), _extra_rule()]
    stale = docs.stale_files(tmp_path, rules)
    assert tmp_path / "docs" / "rules" / "DEV399.md" in stale
    assert tmp_path / "docs" / "rules" / "DEV998.md" in stale
    assert tmp_path / "README.md" in stale

    docs.write_files(tmp_path, rules)
    assert docs.stale_files(tmp_path, rules) == []
    assert not (tmp_path / "docs" / "rules" / "DEV998.md").exists()
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("intro\n<!-- rules-table:start (generated) -->\n| Code |")
    assert readme.endswith("<!-- rules-table:end -->\noutro\n")
    assert "A summary with a \\| pipe and \\_\\_init\\_\\_ in it." in readme
    page = (tmp_path / "docs" / "rules" / "DEV399.md").read_text(encoding="utf-8")
    assert "Why, in two lines.\n\nAnd a second paragraph." in page
    assert "```python\nx = 1\n```" in page
    assert "## Known limits\n\nNone known." in page


def test_check_mode_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("<!-- rules-table:start -->\n<!-- rules-table:end -->\n", encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0


def test_explain_shows_the_same_sections_as_the_page(invoke) -> None:
    for rule in all_rules():
        out = invoke("explain", rule.code.lower())
        assert out.exit_code == 0
        lines = out.stdout.splitlines()
        assert lines[0].startswith(f"{rule.code} {rule.name} ({rule.severity.value}")
        assert [line for line in lines if line in SECTIONS] == list(SECTIONS)
        assert " ".join(rule.summary.split()) in " ".join(out.stdout.split())  # wrapped to the terminal
        for line in rule.bad.splitlines():
            assert f"    {line}".rstrip() in out.stdout.splitlines()
