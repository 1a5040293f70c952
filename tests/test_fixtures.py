"""The fixture harness: every program under tests/fixtures/ carries its own expectations.

A fixture is a realistic PyTorch program. Each line where devlint must report a finding ends
with a comment naming the expected codes::

    loss = criterion(logits, labels)  # expect: DEV101
    d = D(fake.detach())  # expect: DEV102, DEV102   (two findings on one line)

A fixture with no ``# expect:`` comment must produce no finding at all (the false-alarm
traps). The harness runs ``devlint.engine.check_text`` on each file with *every* rule enabled
(info rules included, so a fixture must also be clean for the rules it is not about) and
compares the multiset of ``(line, code)`` pairs both ways: a missing finding and an
unexpected one both fail, with a readable diff.

Expectations are read from real comment tokens (``tokenize``), so ``"# expect: DEV101"`` inside
a string literal is not an expectation. A file that does not tokenize (a parse-error fixture)
falls back to a line-based scan. A comment that starts like an expectation but does not parse
(``# expect DEV101``, ``# expect: dev101``) is an error, so a typo cannot silently turn a
buggy fixture into a "clean" one.

Folders whose name ends with ``_project`` hold multi-file projects; they are analysed as a
whole by the project harness, so this harness does not collect the files inside them.

The first line ``# devlint-fixture: runnable`` marks a fixture that also runs, with synthetic
data and only torch / numpy / the standard library, in well under a second: the simulated-CUDA
ground-truth test executes those and checks that the crash lines agree with the expectations.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

import pytest

from devlint.findings import Finding, Severity

FIXTURES_ROOT = Path(__file__).parent / "fixtures"
RUNNABLE_MARKER = "# devlint-fixture: runnable"
PROJECT_SUFFIX = "_project"

_CODE = r"DEV\d{3}"
# Where an expectation starts inside a comment (it may follow another comment, e.g. a noqa).
_EXPECT_START = re.compile(r"#\s*expect(?:\s*:|\s+dev)", re.IGNORECASE)
# What must follow, exactly: codes separated by commas, up to the end of the comment.
_EXPECT = re.compile(rf"#\s*expect:\s*({_CODE}(?:\s*,\s*{_CODE})*)\s*$")

Expectation = tuple[int, str]


class ExpectationError(ValueError):
    """A comment that looks like an expectation but cannot be read as one."""


def _comment_expectations(comment: str, line: int) -> list[Expectation]:
    start = _EXPECT_START.search(comment)
    if start is None:
        return []
    claim = comment[start.start():].strip()
    match = _EXPECT.fullmatch(claim)
    if match is None:
        raise ExpectationError(
            f"line {line}: malformed expectation {claim!r}; write '# expect: DEV101[, DEV102]'"
        )
    return [(line, code.strip()) for code in match.group(1).split(",")]


def _comments(text: str) -> Iterable[tuple[int, str]]:
    """(line, comment text) for every comment; tokenize when possible, else scan lines."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        for number, line in enumerate(text.splitlines(), start=1):
            found = _EXPECT_START.search(line)
            if found:
                yield number, line[found.start():]
        return
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def parse_expectations(text: str) -> Counter[Expectation]:
    """The multiset of (line, code) pairs that the `# expect:` comments of `text` claim."""
    expected: Counter[Expectation] = Counter()
    for line, comment in _comments(text):
        expected.update(_comment_expectations(comment, line))
    return expected


def compare(
    expected: Counter[Expectation], findings: Sequence[Finding]
) -> tuple[list[Expectation], list[Finding]]:
    """(missing, unexpected): expectations with no finding, findings with no expectation.

    Both sides are multisets: two expected DEV102 on one line need two findings there.
    """
    remaining = Counter(expected)
    unexpected: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.line, f.code, f.column)):
        key = (finding.line, finding.code)
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            unexpected.append(finding)
    missing = sorted(remaining.elements())
    return missing, unexpected


def format_diff(
    name: str, missing: Sequence[Expectation], unexpected: Sequence[Finding]
) -> str:
    """A diff a person can act on: one line per missing or unexpected finding."""
    lines = [f"{name}: findings differ from the '# expect:' comments"]
    lines += [f"  missing: line {line} {code}" for line, code in missing]
    lines += [f"  unexpected: line {f.line} {f.code} {f.message}" for f in unexpected]
    return "\n".join(lines)


def collect_fixtures(root: Path = FIXTURES_ROOT) -> list[Path]:
    """Every fixture file under `root`, skipping files inside `*_project` folders."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if any(part.endswith(PROJECT_SUFFIX) for part in relative.parts[:-1]):
            continue
        found.append(path)
    return found


def _fixture_id(path: Path) -> str:
    return path.relative_to(FIXTURES_ROOT).as_posix()


FIXTURES = collect_fixtures()


def _all_codes() -> frozenset[str]:
    from devlint.rules import all_rules

    return frozenset(rule.code for rule in all_rules())


@pytest.mark.parametrize("path", FIXTURES, ids=[_fixture_id(p) for p in FIXTURES])
def test_fixture(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from devlint.analysis import positions
    from devlint.engine import check_text

    resolved: list[object] = []  # positions cost a codegen of the whole file: only for reports
    real_resolve = positions.resolve
    monkeypatch.setattr(positions, "resolve", lambda module: resolved.append(module) or real_resolve(module))
    text = path.read_text(encoding="utf-8")
    expected = parse_expectations(text)
    findings = check_text(text, str(path), enabled=_all_codes())
    missing, unexpected = compare(expected, findings)
    if missing or unexpected:
        pytest.fail(format_diff(_fixture_id(path), missing, unexpected), pytrace=False)
    assert findings or not resolved, "a rule resolved positions without reporting anything"


# --- the corpus itself -------------------------------------------------------------------


def test_corpus_is_collected() -> None:
    """An empty parametrization would pass silently; the foundation corpus must be there."""
    foundation = [p for p in FIXTURES if p.parent.name == "foundation"]
    assert len(foundation) >= 30
    clean = [p for p in foundation if not parse_expectations(p.read_text(encoding="utf-8"))]
    assert len(clean) >= 12


_ALLOWED_IN_RUNNABLE = {"torch", "numpy"} | set(sys.stdlib_module_names)


@pytest.mark.parametrize("path", FIXTURES, ids=[_fixture_id(p) for p in FIXTURES])
def test_fixture_is_well_formed(path: Path) -> None:
    """Fixtures parse on the oldest supported Python; runnable ones import nothing heavy."""
    text = path.read_text(encoding="utf-8")
    expected = parse_expectations(text)  # raises on a malformed expectation
    if any(code == "DEV000" for _, code in expected):
        return  # a parse-error fixture is meant not to parse
    tree = ast.parse(text, filename=str(path), feature_version=(3, 10))
    if RUNNABLE_MARKER in text and not text.startswith(RUNNABLE_MARKER):
        pytest.fail(f"{_fixture_id(path)}: the runnable marker must be the first line")
    if text.startswith(RUNNABLE_MARKER):
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top in _ALLOWED_IN_RUNNABLE, (
                    f"{_fixture_id(path)}: runnable fixture imports {name!r}; "
                    "use only torch, numpy and the standard library, or drop the marker"
                )


# --- the harness checks itself -----------------------------------------------------------


def _finding(line: int, code: str, message: str = "msg") -> Finding:
    return Finding(
        code=code,
        name="rule",
        severity=Severity.ERROR,
        path="f.py",
        line=line,
        column=1,
        end_line=line,
        end_column=2,
        message=message,
    )


def test_parse_expectations_reads_codes_lines_and_duplicates() -> None:
    text = (
        "x = 1\n"
        "y = model(x)  # expect: DEV101\n"
        "z = f(y)  #expect:DEV102 ,DEV107\n"
        "w = g(z)  # noqa: E501  # expect: DEV108\n"
        "d = D(a) + D(b)  # expect: DEV102, DEV102\n"
    )
    assert parse_expectations(text) == Counter(
        {(2, "DEV101"): 1, (3, "DEV102"): 1, (3, "DEV107"): 1, (4, "DEV108"): 1, (5, "DEV102"): 2}
    )


def test_parse_expectations_ignores_strings_and_other_comments() -> None:
    text = (
        's = "# expect: DEV101"\n'
        "# an ordinary comment: we expect the loss to go down\n"
        "# expected output: 0.93\n"
        "t = '''\n# expect: DEV102\n'''\n"
    )
    assert parse_expectations(text) == Counter()


@pytest.mark.parametrize(
    "comment",
    ["# expect DEV101", "# expect: dev101", "# expect: DEV1O1", "# expect:", "# expect: DEV101 DEV102"],
)
def test_malformed_expectation_is_an_error(comment: str) -> None:
    with pytest.raises(ExpectationError):
        parse_expectations(f"y = model(x)  {comment}\n")


def test_parse_expectations_falls_back_for_unparsable_source() -> None:
    text = "def broken(:\n    pass  # expect: DEV000\ns = '''unterminated\n"
    assert parse_expectations(text) == Counter({(2, "DEV000"): 1})


def test_compare_accepts_an_exact_match() -> None:
    expected = Counter({(5, "DEV101"): 1, (9, "DEV102"): 2})
    findings = [_finding(9, "DEV102"), _finding(5, "DEV101"), _finding(9, "DEV102")]
    assert compare(expected, findings) == ([], [])


def test_compare_reports_a_wrong_expectation_both_ways() -> None:
    """A fixture whose expectation names the wrong line must fail, not pass."""
    expected = parse_expectations("a = 1\nb = model(a)  # expect: DEV101\nc = 2\n")
    findings = [_finding(3, "DEV101", "`a` is still on the CPU")]
    missing, unexpected = compare(expected, findings)
    assert missing == [(2, "DEV101")]
    assert [(f.line, f.code) for f in unexpected] == [(3, "DEV101")]
    diff = format_diff("demo.py", missing, unexpected)
    assert "missing: line 2 DEV101" in diff
    assert "unexpected: line 3 DEV101 `a` is still on the CPU" in diff


def test_compare_counts_duplicates() -> None:
    expected = Counter({(4, "DEV102"): 2})
    missing, unexpected = compare(expected, [_finding(4, "DEV102")])
    assert missing == [(4, "DEV102")] and unexpected == []
    missing, unexpected = compare(Counter({(4, "DEV102"): 1}), [_finding(4, "DEV102")] * 2)
    assert missing == [] and [(f.line, f.code) for f in unexpected] == [(4, "DEV102")]


def test_compare_flags_findings_in_a_clean_fixture() -> None:
    missing, unexpected = compare(Counter(), [_finding(7, "DEV108")])
    assert missing == [] and len(unexpected) == 1


def test_collect_skips_project_folders(tmp_path: Path) -> None:
    (tmp_path / "dev101").mkdir()
    (tmp_path / "dev101" / "a.py").write_text("x = 1\n")
    (tmp_path / "cross_file_project" / "pkg").mkdir(parents=True)
    (tmp_path / "cross_file_project" / "train.py").write_text("x = 1\n")
    (tmp_path / "cross_file_project" / "pkg" / "models.py").write_text("x = 1\n")
    (tmp_path / "top.py").write_text("x = 1\n")
    found = [p.relative_to(tmp_path).as_posix() for p in collect_fixtures(tmp_path)]
    assert found == ["dev101/a.py", "top.py"]
