"""Positions come from libcst's own position generation, recording plain tuples
(analysis/positions.py); they must be the spans libcst's PositionProvider gives, node for node."""

from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.analysis.positions import resolve, span_of

ROOT = Path(__file__).parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _expected(module: cst.Module) -> dict:
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()}


def test_direct_positions_match_the_metadata_wrapper() -> None:
    assert EXAMPLES
    for path in EXAMPLES:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        direct = resolve(module)
        wrapped = _expected(module)
        assert len(direct) == len(wrapped) > 100
        assert all(direct[node] == wrapped[node] for node in wrapped), path.name


def test_spans_match_libcsts_position_provider_node_for_node() -> None:
    """Every node of the fixture corpus and of the large benchmark script: multi-line strings,
    continuation lines, decorators, comments and notebooks' joined cells included."""
    files = sorted((ROOT / "tests" / "fixtures").rglob("*.py")) + [ROOT / "bench" / "large_train.py"]
    compared = 0
    for path in files:
        try:
            module = cst.parse_module(path.read_text(encoding="utf-8"))
        except cst.ParserSyntaxError:
            continue
        expected = _expected(module)
        spans = resolve(module)
        assert len(spans) == len(expected), path
        assert all(spans[node] == span for node, span in expected.items()), path
        compared += len(expected)
    assert compared > 100_000


def test_span_of_is_one_based_with_an_exclusive_end() -> None:
    module = cst.parse_module("x = 1\nmodel = net.to(device)\n")
    call = module.body[1].body[0].value
    assert span_of(resolve(module), call) == (2, 9, 2, 23)
