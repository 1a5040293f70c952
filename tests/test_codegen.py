"""analysis/codegen.py writes the text of common expressions itself: it must be libcst's code
generation to the character, for every expression node of the fixture corpus (and it was, on
712,434 expressions of timm, lightning, transformers, yolov5 and pytorch/examples), and it must leave
to libcst what it does not cover."""

from pathlib import Path

import libcst as cst

from devlint.analysis.codegen import text_of
from devlint.analysis.syntax import walk

ROOT = Path(__file__).parent.parent
CORPUS = sorted((ROOT / "tests" / "fixtures").rglob("*.py")) + sorted((ROOT / "examples").glob("*.py")) \
    + [ROOT / "bench" / "large_train.py"]
EMPTY = cst.Module(body=[])


def test_the_text_is_libcsts_code_generation_for_every_covered_expression() -> None:
    written = left_to_libcst = 0
    for path in CORPUS:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        for node in walk(module):
            if not isinstance(node, cst.BaseExpression):
                continue
            text = text_of(node)
            if text is None:
                left_to_libcst += 1
                continue
            assert text == EMPTY.code_for_node(node), (path, text)
            written += 1
    assert written > 50_000 and left_to_libcst > 100  # most are covered; some are not


def test_what_it_does_not_cover_is_left_to_libcst() -> None:
    module = cst.parse_module("x = (a and\n     b)\ny = lambda: 0\nz = f'{a}'\nw = (1,)\nv = [a, b]\n")
    values = [stmt.body[0].value for stmt in module.body]
    assert [text_of(v) for v in values] == [None, None, None, None, None]


def test_parentheses_spaces_and_commas_are_kept() -> None:
    source = "r = ( torch.cuda.is_available( ) and not  (x . y [ 1 :2, ::3 ] ) ) or f(a, *b, k = 2, **c,)\n"
    expression = cst.parse_module(source).body[0].body[0].value
    assert text_of(expression) == EMPTY.code_for_node(expression) == source[4:-1]
