"""Suppression comments: which comments silence which findings, and robustness on odd text."""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from devlint.findings import Finding, Severity
from devlint.suppress import apply_suppressions, parse_suppressions


def finding(line: int, code: str = "DEV107", statement: tuple[int, int] | None = None) -> Finding:
    return Finding(code, "name", Severity.ERROR, "a.py", line, 1, line, 2, "msg", statement_lines=statement)


def kept(text: str, *findings: Finding) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in apply_suppressions(findings, textwrap.dedent(text))]


def test_noqa_with_a_code_silences_that_code_only():
    text = """
    x.to(device)  # noqa: DEV107
    """
    assert kept(text, finding(2, "DEV107"), finding(2, "DEV101")) == [(2, "DEV101")]


def test_codes_are_case_insensitive_and_comma_or_space_separated():
    text = """
    a  # noqa: dev101,DEV107
    b  # NOQA:DEV101 DEV107
    c  # noqa: DEV101, DEV107 -- moved later on purpose
    """
    findings = [finding(line, code) for line in (2, 3, 4) for code in ("DEV101", "DEV107", "DEV201")]
    assert kept(text, *findings) == [(2, "DEV201"), (3, "DEV201"), (4, "DEV201")]


def test_bare_noqa_silences_everything_on_its_line():
    text = """
    x.to(device)  # noqa
    y.to(device)
    """
    assert kept(text, finding(2), finding(2, "DEV101"), finding(3)) == [(3, "DEV107")]


def test_devlint_ignore_comment():
    text = """
    a  # devlint: ignore[DEV107, DEV101]
    b  # devlint:ignore[dev201]
    c  # devlint: ignore
    """
    findings = [finding(2, "DEV107"), finding(2, "DEV201"), finding(3, "DEV201"), finding(4, "DEV101")]
    assert kept(text, *findings) == [(2, "DEV201")]


def test_other_tools_codes_do_not_silence_devlint():
    text = """
    x.to(device)  # noqa: E501
    y.to(device)  # type: ignore  # noqa: DEV107
    """
    assert kept(text, finding(2), finding(3)) == [(2, "DEV107")]


def test_noqa_inside_a_string_is_not_a_comment():
    text = '''
    s = "# noqa"; x.to(device)
    doc = """
    # noqa: DEV107
    """; y.to(device)
    '''
    assert kept(text, finding(2), finding(5)) == [(2, "DEV107"), (5, "DEV107")]


def test_comment_anywhere_in_a_multiline_statement():
    text = """
    loss = criterion(
        model(inputs),
        labels,
    )  # noqa: DEV101
    other(
        labels,
    )
    """
    assert kept(text, finding(3, "DEV101", statement=(2, 5))) == []
    # without the statement span only the reported line counts
    assert kept(text, finding(3, "DEV101")) == [(3, "DEV101")]
    assert kept(text, finding(7, "DEV101", statement=(6, 8))) == [(7, "DEV101")]


def test_comment_on_another_line_does_not_count():
    text = """
    # noqa: DEV107
    x.to(device)
    """
    assert kept(text, finding(3)) == [(3, "DEV107")]


def test_odd_text_does_not_crash():
    for text in [
        "s = '''never closed\n# noqa\n",
        "def f(:\n    x.to(d)  # noqa\n",
        "if x:\n        a\n    b  # noqa\n",
        "\x00\x01\ufeff# noqa",
        "x = (1,\n# noqa: DEV107\n",
        "",
    ]:
        parse_suppressions(text)


def test_comments_before_a_tokenize_error_still_count():
    text = "x.to(d)  # noqa: DEV107\ns = (\n"
    assert parse_suppressions(text).by_line == {1: frozenset({"DEV107"})}


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("#noqa: DEV107[]()'\"\\\n\t x=f") + ["\r", "\x0c"]), max_size=80))
def test_never_raises_on_arbitrary_text(text):
    parse_suppressions(text)
    apply_suppressions([finding(1)], text)
